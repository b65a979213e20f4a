//! Pass 3 of the conversion: how each union's members are told apart (JSON type, a literal
//! tag, several tags, key sets), and the names of the variants.

use super::*;

impl<'a> Converter<'_, 'a> {
    /// Classifies every union (pass 3).
    pub(super) fn classify_all(&mut self) -> Result<()> {
        let mut memo = Memo { types: vec![None; self.types.len()], literals: vec![None; self.types.len()] };
        for index in 0..self.types.len() {
            if let Some(PendingKind::Union(members, None)) = &self.types[index].kind {
                let union = self.classify(index, members, &mut memo)?;
                if let Some(PendingKind::Union(_, slot)) = &mut self.types[index].kind {
                    *slot = Some(union);
                }
            }
        }
        Ok(())
    }

    /// Decides how union `index` is told apart and names its variants.
    pub(super) fn classify(&self, index: usize, members: &[UnionMember], memo: &mut Memo) -> Result<Union> {
        let pointer = self.types[index].node.path().to_string();
        let types: Vec<JsonTypes> = members
            .iter()
            .map(|m| match &m.kind {
                VariantKind::Literal(value) => literal_json_type(value),
                VariantKind::Value(shape) => self.shape_types(shape, memo),
            })
            .collect();
        // Literals: distinct values, and no other member of their JSON type.
        for (a, ma) in members.iter().enumerate() {
            for (b, mb) in members.iter().enumerate().take(a) {
                let overlap = types[a].intersection(types[b]);
                if overlap.is_empty() {
                    continue;
                }
                match (&ma.kind, &mb.kind) {
                    (VariantKind::Literal(x), VariantKind::Literal(y)) if x == y => {
                        return Err(GenError::schema(ma.pointer.clone(), format!("the value {x} is listed twice")));
                    }
                    (VariantKind::Literal(_), VariantKind::Literal(_)) => {}
                    (VariantKind::Value(_), VariantKind::Value(_))
                        if overlap == JsonTypes::OBJECT
                            && types[a] == JsonTypes::OBJECT
                            && types[b] == JsonTypes::OBJECT => {}
                    _ => {
                        return Err(GenError::schema(
                            pointer.clone(),
                            format!(
                                "members {b} and {a} can both hold a {}: a decoder could not tell them apart",
                                overlap.describe()
                            ),
                        ))
                    }
                }
            }
        }
        let objects: Vec<usize> = (0..members.len()).filter(|&i| types[i] == JsonTypes::OBJECT).collect();
        let (dispatch, tags) = if objects.len() < 2 {
            (Dispatch::ByType, vec![Vec::new(); members.len()])
        } else {
            self.object_dispatch(members, &objects, &pointer, memo)?
        };
        let union_name = &self.types[index].rust_name;
        let mut variants: Vec<Variant> = Vec::with_capacity(members.len());
        let mut used: HashSet<String> = HashSet::new();
        for (i, member) in members.iter().enumerate() {
            let base = match (&member.rust_variant, &member.kind) {
                (Some(name), _) => name.clone(),
                (None, VariantKind::Literal(value)) => literal_variant_name(value),
                (None, VariantKind::Value(shape)) => {
                    let from_tags: String = tags[i]
                        .iter()
                        .filter_map(|(key, v)| match v {
                            LiteralValue::String(s) => x_rust::to_upper_camel(s),
                            other => x_rust::to_upper_camel(key).map(|k| format!("{k}{}", literal_variant_name(other))),
                        })
                        .collect();
                    if !from_tags.is_empty() && x_rust::check_ident(&from_tags, String::new()).is_ok() {
                        from_tags
                    } else {
                        self.shape_variant_name(shape, union_name)
                    }
                }
            };
            if member.rust_variant.is_some() && used.contains(&base) {
                return Err(GenError::schema(
                    member.pointer.clone(),
                    format!("the variant name {base} is used twice; set x-rust-variant"),
                ));
            }
            let mut name = base.clone();
            let mut n = 2;
            while used.contains(&name) {
                name = format!("{base}{n}");
                n += 1;
            }
            used.insert(name.clone());
            variants.push(Variant {
                rust_name: name,
                doc: member.doc.clone(),
                kind: member.kind.clone(),
                tags: tags[i].clone(),
                pointer: member.pointer.clone(),
            });
        }
        Ok(Union { dispatch, variants })
    }

    /// How the object members of a union are told apart, and each member's tag values.
    ///
    /// Every step is bounded by the members' literals and keys, never by pairs of members times
    /// all their keys: literals are looked up by key, tag keys are tried at most
    /// [`MAX_TAG_KEYS`] times, and key sets are compared rarest key first.
    pub(super) fn object_dispatch(
        &self,
        members: &[UnionMember],
        objects: &[usize],
        pointer: &str,
        memo: &mut Memo,
    ) -> Result<(Dispatch, Vec<Tags>)> {
        let mut literal_sets: Vec<Tags> = vec![Vec::new(); members.len()];
        for &i in objects {
            let VariantKind::Value(shape) = &members[i].kind else { unreachable!("objects are values") };
            literal_sets[i] = self.shape_literals(shape, memo);
        }
        let by_key: Vec<HashMap<&str, &LiteralValue>> =
            literal_sets.iter().map(|set| set.iter().map(|(k, v)| (k.as_str(), v)).collect()).collect();
        let value_at = |i: usize, key: &str| by_key[i].get(key).copied();
        // Candidate keys in order of first appearance.
        let mut candidates: Vec<&str> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for &i in objects {
            for (key, _) in &literal_sets[i] {
                if seen.insert(key) {
                    candidates.push(key);
                }
            }
        }
        let separates = |key: &str, a: usize, b: usize| matches!((value_at(a, key), value_at(b, key)), (Some(x), Some(y)) if x != y);
        let tag_values = |keys: &[&str]| -> Vec<Vec<(String, LiteralValue)>> {
            (0..members.len())
                .map(|i| keys.iter().filter_map(|k| value_at(i, k).map(|v| (k.to_string(), v.clone()))).collect())
                .collect()
        };
        // One key with a literal in every object member, a different value in each.
        let distinct_everywhere = |key: &str| {
            let mut values = Vec::with_capacity(objects.len());
            for &a in objects {
                match value_at(a, key) {
                    Some(value) => values.push(value),
                    None => return false,
                }
            }
            values.sort_unstable();
            values.windows(2).all(|pair| pair[0] != pair[1])
        };
        if let Some(key) = candidates.iter().find(|key| distinct_everywhere(key)) {
            return Ok((Dispatch::Tag(key.to_string()), tag_values(&[key])));
        }
        // Several keys: every two members told apart by one of them (at most MAX_TAG_KEYS).
        let mut chosen: Vec<&str> = Vec::new();
        let mut all_separated = true;
        'pairs: for (x, &a) in objects.iter().enumerate() {
            for &b in &objects[..x] {
                if chosen.iter().any(|k| separates(k, a, b)) {
                    continue;
                }
                match candidates.iter().find(|k| separates(k, a, b)) {
                    Some(k) if chosen.len() < MAX_TAG_KEYS => chosen.push(k),
                    _ => {
                        all_separated = false;
                        break 'pairs;
                    }
                }
            }
        }
        if all_separated {
            let ordered: Vec<&str> = candidates.iter().copied().filter(|k| chosen.contains(k)).collect();
            return Ok((Dispatch::Tags(ordered.iter().map(|k| k.to_string()).collect()), tag_values(&ordered)));
        }
        // Key sets: every member a struct, no map fitting two of them.
        let mut structs = Vec::with_capacity(objects.len());
        for &i in objects {
            match &members[i].kind {
                VariantKind::Value(Shape { ty: TypeExpr::Named { name, .. }, .. }) => {
                    match self.kind_of(name) {
                        Some(PendingKind::Struct(s)) => structs.push((i, s)),
                        _ => return Err(GenError::schema(
                            members[i].pointer.clone(),
                            "no const property tells this member apart from the others, and it is not a plain object \
                             whose keys could",
                        )),
                    }
                }
                _ => {
                    return Err(GenError::schema(
                        members[i].pointer.clone(),
                        "a record cannot share a union with other objects: no key tells them apart",
                    ))
                }
            }
        }
        let key_sets = KeySets::new(structs.iter().map(|(_, s)| *s));
        for x in 0..structs.len() {
            for y in 0..x {
                if key_sets.overlap(x, y) {
                    let (a, b) = (structs[x].0, structs[y].0);
                    return Err(GenError::schema(
                        pointer,
                        format!(
                            "members {b} and {a} can match the same map: no const property tells them apart and their \
                             key sets overlap"
                        ),
                    ));
                }
            }
        }
        Ok((Dispatch::KeySet, vec![Vec::new(); members.len()]))
    }

    /// A reference to named type `index`.
    pub(super) fn reference(&self, index: usize) -> Shape {
        Shape::plain(TypeExpr::Named { name: self.types[index].rust_name.clone(), boxed: false })
    }

    pub(super) fn kind_of(&self, rust_name: &str) -> Option<&PendingKind> {
        self.by_name.get(rust_name).and_then(|&i| self.types[i].kind.as_ref())
    }

    pub(super) fn index_of(&self, rust_name: &str) -> usize {
        self.by_name.get(rust_name).copied().expect("named types exist")
    }

    /// The JSON types a value of `shape` can have, each named type's computed once (`memo`);
    /// the types hold no cycle without a container ([`check_chains`](Self::check_chains)).
    pub(super) fn shape_types(&self, shape: &Shape, memo: &mut Memo) -> JsonTypes {
        match &shape.ty {
            TypeExpr::Named { name, .. } => {
                let index = self.index_of(name);
                if let Some(types) = memo.types[index] {
                    return types;
                }
                let types = match &self.types[index].kind {
                    Some(PendingKind::Struct(_)) => JsonTypes::OBJECT,
                    Some(PendingKind::Newtype(inner)) => self.shape_types(inner, memo),
                    Some(PendingKind::Union(members, _)) => members.iter().fold(JsonTypes::NONE, |all, member| {
                        all.union(match &member.kind {
                            VariantKind::Literal(value) => literal_json_type(value),
                            VariantKind::Value(shape) => self.shape_types(shape, memo),
                        })
                    }),
                    None => JsonTypes::ANY,
                };
                memo.types[index] = Some(types);
                types
            }
            TypeExpr::String => JsonTypes::STRING,
            TypeExpr::Integer | TypeExpr::Number => JsonTypes::NUMBER,
            TypeExpr::Boolean => JsonTypes::BOOLEAN,
            TypeExpr::Null => JsonTypes::NULL,
            TypeExpr::Payload => JsonTypes::ANY,
            TypeExpr::Array(_) => JsonTypes::ARRAY,
            TypeExpr::Record(_) => JsonTypes::OBJECT,
            TypeExpr::Nullable(inner) => self.shape_types(inner, memo).union(JsonTypes::NULL),
        }
    }

    /// The literals every map of `shape` carries: a struct's own, or those every variant of a
    /// union shares (same key, same value), in the order of the first variant; each named
    /// type's computed once (`memo`).
    pub(super) fn shape_literals(&self, shape: &Shape, memo: &mut Memo) -> Tags {
        let TypeExpr::Named { name, .. } = &shape.ty else { return Vec::new() };
        let index = self.index_of(name);
        if let Some(known) = &memo.literals[index] {
            return known.clone();
        }
        let literals = match &self.types[index].kind {
            Some(PendingKind::Struct(s)) => s.literals().map(|l| (l.key.clone(), l.value.clone())).collect(),
            Some(PendingKind::Union(members, _)) => {
                let mut shared: Option<Tags> = None;
                for member in members {
                    let set = match &member.kind {
                        VariantKind::Value(shape) => self.shape_literals(shape, memo),
                        VariantKind::Literal(_) => Vec::new(),
                    };
                    shared = Some(match shared {
                        None => set,
                        Some(prev) => prev.into_iter().filter(|entry| set.contains(entry)).collect(),
                    });
                }
                shared.unwrap_or_default()
            }
            _ => Vec::new(),
        };
        memo.literals[index] = Some(literals.clone());
        literals
    }

    /// A variant name for a member that has no tag: the type's name (without the union's name
    /// in front), or the JSON type of an unnamed shape.
    pub(super) fn shape_variant_name(&self, shape: &Shape, union_name: &str) -> String {
        match &shape.ty {
            TypeExpr::Named { name, .. } => name
                .strip_prefix(union_name)
                .filter(|rest| x_rust::check_ident(rest, String::new()).is_ok() && rest.starts_with(char::is_uppercase))
                .unwrap_or(name)
                .to_string(),
            TypeExpr::String => "String".to_string(),
            TypeExpr::Integer => "Integer".to_string(),
            TypeExpr::Number => "Number".to_string(),
            TypeExpr::Boolean => "Boolean".to_string(),
            TypeExpr::Null => "Null".to_string(),
            TypeExpr::Payload => "Value".to_string(),
            TypeExpr::Array(_) => "Array".to_string(),
            TypeExpr::Record(_) => "Record".to_string(),
            TypeExpr::Nullable(inner) => self.shape_variant_name(inner, union_name),
        }
    }
}

/// The JSON type of a literal.
pub(super) fn literal_json_type(value: &LiteralValue) -> JsonTypes {
    match value {
        LiteralValue::String(_) => JsonTypes::STRING,
        LiteralValue::Bool(_) => JsonTypes::BOOLEAN,
        LiteralValue::Number(_) => JsonTypes::NUMBER,
        LiteralValue::Null => JsonTypes::NULL,
    }
}

/// The variant name of a literal: `item_started` -> `ItemStarted`, `true` -> `True`, `8` ->
/// `N8`, `-1.5` -> `Neg1_5`, `null` -> `Null`.
pub(super) fn literal_variant_name(value: &LiteralValue) -> String {
    match value {
        LiteralValue::String(s) => x_rust::to_upper_camel(s).unwrap_or_else(|| "Value".to_string()),
        LiteralValue::Bool(true) => "True".to_string(),
        LiteralValue::Bool(false) => "False".to_string(),
        LiteralValue::Null => "Null".to_string(),
        LiteralValue::Number(n) => {
            let text = LiteralValue::Number(n.abs()).to_string().replace(['.', '+'], "_").replace('-', "m");
            format!("{}{text}", if *n < 0.0 { "Neg" } else { "N" })
        }
    }
}
