//! Passes 2 and 4 of the conversion: named types and the shapes written in place (structs,
//! union members, records, nullable values, literals), read from schema nodes, and the
//! newtypes of union members whose shapes carry constraints.

use super::*;

impl<'a> Converter<'_, 'a> {
    /// The kind of the named type made from `node`.
    pub(super) fn convert_type(&mut self, node: &Node<'a>, name: &str) -> Result<PendingKind> {
        if is_union(node) {
            return Ok(PendingKind::Union(self.union_members(node, name)?, None));
        }
        if is_struct(node) {
            return self.convert_struct(node, name).map(PendingKind::Struct);
        }
        self.shape(node, &Hint::below(name, ""), Location::Definition).map(PendingKind::Newtype)
    }

    /// The shape of a value schema; objects, unions and enumerations found here become named
    /// types called `hint`. Each call is one level of [`MAX_NESTING`].
    pub(super) fn shape(&mut self, node: &Node<'a>, hint: &Hint, location: Location) -> Result<Shape> {
        if self.nesting == MAX_NESTING {
            return Err(GenError::schema(
                node.path(),
                format!(
                    "the value is nested more than {MAX_NESTING} levels deep in place (arrays, records, nullable values \
                     and references inside one type); define an inner schema in $defs"
                ),
            ));
        }
        self.nesting += 1;
        let shape = self.shape_in_place(node, hint, location);
        self.nesting -= 1;
        shape
    }

    pub(super) fn shape_in_place(&mut self, node: &Node<'a>, hint: &Hint, location: Location) -> Result<Shape> {
        if is_reference(node) {
            node.allow(&["$ref"], location, "a reference")?;
            let target = self.follow(node.clone())?;
            if let Some(&index) = self.by_pointer.get(target.path()) {
                return Ok(self.reference(index));
            }
            // A definition nested next to its use (as TypeBox writes cyclic types) is named by
            // its key.
            let defined = target.path().rsplit_once('/').and_then(|(parent, key)| {
                (parent.ends_with("/$defs") || parent.ends_with("/definitions"))
                    .then(|| key.replace("~1", "/").replace("~0", "~"))
            });
            let hint = match defined.and_then(|key| x_rust::check_ident(&key, String::new()).ok()) {
                Some(key) => Hint { short: key.clone(), long: key },
                None => hint.clone(),
            };
            // A schema reached again through its own references (an array or record written in
            // place that holds itself) becomes a named type: the recursion goes through a name.
            if self.expanding.iter().any(|pointer| pointer == target.path()) {
                let index = self.named(target, &hint, false)?;
                return Ok(self.reference(index));
            }
            self.expanding.push(target.path().to_string());
            let shape = self.shape(&target, &hint, Location::Other);
            self.expanding.pop();
            return shape;
        }
        if node.is_unconstrained() {
            node.allow(&[], location, "an opaque value")?;
            return Ok(Shape::plain(TypeExpr::Payload));
        }
        for keyword in ["anyOf", "oneOf"] {
            if node.has(keyword) {
                let members = node.children(keyword)?;
                if let [a, b] = members.as_slice() {
                    node.allow(&[keyword], location, "a union")?;
                    match (is_null(&self.follow(a.clone())?), is_null(&self.follow(b.clone())?)) {
                        (false, true) => return self.nullable(a, hint),
                        (true, false) => return self.nullable(b, hint),
                        _ => {}
                    }
                }
            }
        }
        if let Some(Value::Array(types)) = node.get("type") {
            let non_null: Vec<&str> = types.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect();
            if types.len() == 2 && non_null.len() == 1 {
                let inner = self.typed_shape(node, non_null[0], hint, location, true)?;
                return Ok(Shape::plain(TypeExpr::Nullable(Box::new(inner))));
            }
        }
        let own_name = location != Location::Property;
        if is_union(node) || is_struct(node) {
            let index = self.named(node.clone(), hint, own_name)?;
            return Ok(self.reference(index));
        }
        match node.get("type") {
            Some(Value::String(ty)) => self.typed_shape(node, ty, hint, location, false),
            Some(Value::Array(types)) if types.len() == 1 && types[0].is_string() => {
                self.typed_shape(node, types[0].as_str().unwrap_or_default(), hint, location, false)
            }
            Some(_) => Err(GenError::schema(node.at("type"), "must be a type name or an array of type names")),
            None => {
                node.allow(crate::schema::TYPED, location, "a schema")?;
                Err(GenError::schema(
                    node.path(),
                    "a schema with constraints needs a type (or $ref, anyOf, oneOf, enum, const; {} for any value)",
                ))
            }
        }
    }

    /// `anyOf [<member>, {"type": "null"}]`: the member's shape, nullable.
    pub(super) fn nullable(&mut self, member: &Node<'a>, hint: &Hint) -> Result<Shape> {
        let inner = self.shape(member, hint, Location::UnionMember)?;
        if matches!(inner.ty, TypeExpr::Nullable(_)) {
            return Ok(inner);
        }
        Ok(Shape::plain(TypeExpr::Nullable(Box::new(inner))))
    }

    /// The shape of `node` read as a value of JSON type `ty` (one of the names in its `type`).
    /// With `lenient`, keywords of other types are ignored (they apply to the other types of a
    /// `type` list).
    pub(super) fn typed_shape(
        &mut self,
        node: &Node<'a>,
        ty: &str,
        hint: &Hint,
        location: Location,
        lenient: bool,
    ) -> Result<Shape> {
        let allowed: &[&str] = match ty {
            "string" => &["type", "minLength", "maxLength", "pattern"],
            "integer" | "number" => &["type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"],
            "boolean" | "null" => &["type"],
            "array" => &["type", "items", "minItems", "maxItems"],
            "object" => &["type", "additionalProperties", "patternProperties", "properties", "required"],
            _ => return Err(GenError::schema(node.at("type"), format!("unknown type {ty:?}"))),
        };
        if !lenient {
            node.allow(allowed, location, &format!("a schema of type {ty}"))?;
        }
        let mut checks = Checks::default();
        let ty = match ty {
            "string" => {
                checks.min_length = length(node, "minLength")?;
                checks.max_length = length(node, "maxLength")?;
                if let Some(pattern) = node.str("pattern")? {
                    self.pattern(pattern, &node.at("pattern"))?;
                    checks.pattern = Some(pattern.to_string());
                }
                TypeExpr::String
            }
            "integer" | "number" => {
                checks.minimum = bound(node, "minimum")?;
                checks.maximum = bound(node, "maximum")?;
                checks.exclusive_minimum = bound(node, "exclusiveMinimum")?;
                checks.exclusive_maximum = bound(node, "exclusiveMaximum")?;
                if ty == "integer" {
                    TypeExpr::Integer
                } else {
                    TypeExpr::Number
                }
            }
            "boolean" => TypeExpr::Boolean,
            "null" => TypeExpr::Null,
            "array" => {
                checks.min_items = length(node, "minItems")?;
                checks.max_items = length(node, "maxItems")?;
                let items = match node.child("items")? {
                    Some(items) => self.shape(&items, &hint.then("Item"), Location::Other)?,
                    None => Shape::plain(TypeExpr::Payload),
                };
                TypeExpr::Array(Box::new(items))
            }
            _ => TypeExpr::Record(Box::new(self.record(node, hint)?)),
        };
        Ok(Shape { ty, checks })
    }

    /// An object with free keys: `additionalProperties` holding a schema, or one
    /// `patternProperties` pattern (with `additionalProperties` false or absent).
    ///
    /// The pattern constrains the keys only with `additionalProperties: false`; without it a key
    /// outside the pattern is allowed (JSON Schema, and the reference's validator), and the model
    /// checks every value against the pattern's schema, which JSON Schema asks only of the keys
    /// the pattern matches (exact for TypeBox's records, `^.*$` of any JSON value).
    pub(super) fn record(&mut self, node: &Node<'a>, hint: &Hint) -> Result<Record> {
        if let Some(Value::Object(props)) = node.get("properties") {
            if !props.is_empty() {
                return Err(GenError::schema(
                    node.at("properties"),
                    "an object with properties must set additionalProperties to false",
                ));
            }
        }
        if let Some(Value::Array(required)) = node.get("required") {
            if !required.is_empty() {
                return Err(GenError::schema(
                    node.at("required"),
                    "a record cannot require keys; use an object with properties",
                ));
            }
        }
        let value_hint = hint.then("Value");
        match (node.get("patternProperties"), node.get("additionalProperties")) {
            (Some(Value::Object(patterns)), extra) => {
                let path = node.at("patternProperties");
                let mut entries = patterns.iter();
                let (Some((pattern, schema)), None) = (entries.next(), entries.next()) else {
                    return Err(GenError::schema(path, "a record takes exactly one key pattern"));
                };
                if !matches!(extra, None | Some(Value::Bool(false))) {
                    return Err(GenError::schema(
                        node.at("additionalProperties"),
                        "with patternProperties, additionalProperties must be false or absent",
                    ));
                }
                let at = format!("{path}/{}", escape_pointer(pattern));
                self.pattern(pattern, &at)?;
                let values = self.shape(&Node::new(schema, at)?, &value_hint, Location::Other)?;
                let keys = match extra {
                    Some(Value::Bool(false)) => Checks { pattern: Some(pattern.clone()), ..Checks::default() },
                    _ => Checks::default(),
                };
                Ok(Record { values, keys })
            }
            (Some(_), _) => {
                Err(GenError::schema(node.at("patternProperties"), "must be an object of pattern -> schema"))
            }
            (None, None) | (None, Some(Value::Bool(true))) => {
                Ok(Record { values: Shape::plain(TypeExpr::Payload), keys: Checks::default() })
            }
            (None, Some(Value::Bool(false))) => unreachable!("an object with additionalProperties false is a struct"),
            (None, Some(schema)) => {
                let values =
                    self.shape(&Node::new(schema, node.at("additionalProperties"))?, &value_hint, Location::Other)?;
                Ok(Record { values, keys: Checks::default() })
            }
        }
    }

    /// An object with properties: literals placed, `required` checked, fields typed.
    pub(super) fn convert_struct(&mut self, node: &Node<'a>, name: &str) -> Result<Struct> {
        node.allow(&["type", "properties", "required", "additionalProperties"], Location::Definition, "an object")?;
        match node.get("type") {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(_) => return Err(GenError::schema(node.at("type"), "an object with properties has type object")),
        }
        static NO_PROPERTIES: std::sync::OnceLock<serde_json::Map<String, Value>> = std::sync::OnceLock::new();
        let properties: &'a serde_json::Map<String, Value> = match node.get("properties") {
            None => NO_PROPERTIES.get_or_init(serde_json::Map::new),
            Some(Value::Object(map)) if map.len() > MAX_MEMBERS => {
                return Err(too_many(node.at("properties"), "properties"))
            }
            Some(Value::Object(map)) => map,
            Some(_) => return Err(GenError::schema(node.at("properties"), "must be an object")),
        };
        match node.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            None => {
                return Err(GenError::schema(
                    node.at("additionalProperties"),
                    "missing: every object with properties must set additionalProperties to false (the protocol \
                     rejects unknown keys)",
                ))
            }
            Some(_) => {
                return Err(GenError::schema(
                    node.at("additionalProperties"),
                    "must be false: an object has either properties or free keys (a record), not both",
                ))
            }
        }
        let required = required_keys(node, properties)?;
        let props_path = node.at("properties");
        let mut members: Vec<Member> = Vec::with_capacity(properties.len());
        let mut rust_names: HashMap<String, String> = HashMap::new();
        for (key, value) in properties {
            let path = format!("{props_path}/{}", escape_pointer(key));
            let prop = Node::new(value, path)?;
            let is_required = required.contains(&key.as_str());
            let target = self.follow(prop.clone())?;
            if let Some(value) = literal_of(&target)? {
                if !is_required {
                    return Err(GenError::schema(prop.path(), "a const property must be listed in required"));
                }
                let value = match value {
                    LiteralValue::Null => None,
                    other => Some(other),
                };
                if let Some(value) = value {
                    let after = match members.iter().any(|m| matches!(m, Member::Field(_))) {
                        true => members.last().map(|m| m.key().to_string()),
                        false => None,
                    };
                    members.push(Member::Literal(Literal { key: key.clone(), value, after }));
                    continue;
                }
            }
            let rust_name = x_rust::field_name(&prop, key)?;
            if let Some(other) = rust_names.insert(rust_name.clone(), key.clone()) {
                return Err(GenError::schema(
                    prop.path(),
                    format!("the Rust field name {rust_name} is already used by property {other:?}; set x-rust-name"),
                ));
            }
            let hint = Hint::below(name, &x_rust::to_upper_camel(key).unwrap_or_else(|| "Field".to_string()));
            let shape = self.shape(&prop, &hint, Location::Property)?;
            members.push(Member::Field(Field {
                key: key.clone(),
                rust_name,
                doc: prop.description()?,
                shape,
                optional: !is_required,
                pointer: prop.path().to_string(),
            }));
        }
        Ok(Struct { members })
    }

    /// The members of a union: `anyOf`/`oneOf` members, `enum` values, a `const`, or the types
    /// of a `type` list.
    pub(super) fn union_members(&mut self, node: &Node<'a>, name: &str) -> Result<Vec<UnionMember>> {
        if matches!(node.get("type"), Some(Value::Array(_))) {
            let Some(Value::Array(types)) = node.get("type") else { unreachable!("a type list") };
            if types.len() > MAX_MEMBERS {
                return Err(too_many(node.at("type"), "types"));
            }
            let mut all = Vec::new();
            for t in types {
                let t = t.as_str().ok_or_else(|| GenError::schema(node.at("type"), "must list type names"))?;
                if t == "null" {
                    let kind = VariantKind::Literal(LiteralValue::Null);
                    all.push(UnionMember { pointer: node.path().to_string(), doc: None, rust_variant: None, kind });
                    continue;
                }
                let hint = Hint::below(name, &x_rust::to_upper_camel(t).unwrap_or_default());
                let shape = self.typed_shape(node, t, &hint, Location::Definition, true)?;
                let kind = VariantKind::Value(self.variant_shape(shape, node, &hint)?);
                all.push(UnionMember { pointer: node.path().to_string(), doc: None, rust_variant: None, kind });
            }
            let mut known: Vec<&str> = vec!["type"];
            for t in types.iter().filter_map(Value::as_str) {
                known.extend(match t {
                    "string" => &["minLength", "maxLength", "pattern"][..],
                    "integer" | "number" => &["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"][..],
                    "array" => &["items", "minItems", "maxItems"][..],
                    "object" => &["additionalProperties", "patternProperties", "properties", "required"][..],
                    _ => &[][..],
                });
            }
            node.allow(&known, Location::Definition, "a schema with a type list")?;
            return Ok(all);
        }
        if let Some(value) = literal_of(node)? {
            node.allow(&["type", "const", "enum"], Location::Definition, "a literal")?;
            return Ok(vec![UnionMember {
                pointer: node.path().to_string(),
                doc: None,
                rust_variant: None,
                kind: VariantKind::Literal(value),
            }]);
        }
        if node.has("enum") {
            node.allow(&["type", "enum"], Location::Definition, "an enumeration")?;
            return enum_values(node)?
                .into_iter()
                .map(|(pointer, value)| {
                    Ok(UnionMember { pointer, doc: None, rust_variant: None, kind: VariantKind::Literal(value) })
                })
                .collect();
        }
        let keyword = if node.has("anyOf") { "anyOf" } else { "oneOf" };
        node.allow(&[keyword], Location::Definition, "a union")?;
        let members = node.children(keyword)?;
        let hints = member_hints(self, name, &members)?;
        let mut out = Vec::with_capacity(members.len());
        for (member, hint) in members.iter().zip(hints) {
            let rust_variant = x_rust::variant_name(member)?;
            let doc = member.description()?;
            let target = self.follow(member.clone())?;
            let literal = if is_null(&target) { Some(LiteralValue::Null) } else { literal_of(&target)? };
            if let Some(value) = literal {
                out.push(UnionMember {
                    pointer: member.path().to_string(),
                    doc,
                    rust_variant,
                    kind: VariantKind::Literal(value),
                });
                continue;
            }
            if target.has("enum") && !target.has("anyOf") {
                for (pointer, value) in enum_values(&target)? {
                    out.push(UnionMember {
                        pointer,
                        doc: doc.clone(),
                        rust_variant: None,
                        kind: VariantKind::Literal(value),
                    });
                }
                continue;
            }
            let shape = self.shape(member, &hint, Location::UnionMember)?;
            let shape = self.variant_shape(shape, member, &hint)?;
            out.push(UnionMember {
                pointer: member.path().to_string(),
                doc,
                rust_variant,
                kind: VariantKind::Value(shape),
            });
        }
        Ok(out)
    }

    /// The shape a union variant holds: `shape` itself, or, when it carries constraints (which a
    /// variant cannot hold), a newtype named `hint` that does.
    pub(super) fn variant_shape(&mut self, shape: Shape, node: &Node<'a>, hint: &Hint) -> Result<Shape> {
        if !has_checks(&shape) {
            return Ok(shape);
        }
        let name = self.unique_name(&hint.then(""));
        self.names.remove(&name);
        let index = self.create(node.clone(), name, None, true)?;
        // Made for this place only: an identical schema elsewhere is not this newtype.
        self.by_canonical.retain(|_, i| *i != index);
        self.types[index].kind = Some(PendingKind::Newtype(shape));
        Ok(self.reference(index))
    }
}

/// Whether `node` is only a reference (with annotations, `$defs`, `$id` and `x-` keywords).
pub(super) fn is_reference(node: &Node<'_>) -> bool {
    node.has("$ref")
}

/// Whether `node` is an object with a fixed set of keys (a struct): it has properties, or it is
/// an object refusing every key.
pub(super) fn is_struct(node: &Node<'_>) -> bool {
    let object_type = match node.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(_) => false,
    };
    let has_properties = matches!(node.get("properties"), Some(Value::Object(p)) if !p.is_empty());
    let closed = node.get("additionalProperties") == Some(&Value::Bool(false)) && node.get("type").is_some();
    object_type && !node.has("patternProperties") && (has_properties || closed)
}

/// Whether `node` is a union that becomes a named enum: `anyOf`/`oneOf` (other than a value
/// or `null`), `enum`/`const`, or a `type` list (other than `[T, "null"]`).
pub(super) fn is_union(node: &Node<'_>) -> bool {
    let pair_with_null = |items: &[Value]| {
        items.len() == 2
            && items.iter().any(|m| {
                m.get("type") == Some(&Value::String("null".into())) && m.as_object().is_some_and(|o| o.len() == 1)
            })
    };
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(items)) = node.get(keyword) {
            return !pair_with_null(items);
        }
    }
    if let Some(Value::Array(types)) = node.get("type") {
        let nulls = types.iter().filter(|t| t.as_str() == Some("null")).count();
        return types.len() > 2 || (types.len() == 2 && nulls != 1);
    }
    node.has("enum") || node.has("const")
}

/// Whether `node` is exactly `{"type": "null"}` (or `{"const": null}`), annotations aside.
pub(super) fn is_null(node: &Node<'_>) -> bool {
    let only = |keys: &[&str]| node.keys().all(|k| keys.contains(&k) || crate::schema::ANNOTATIONS.contains(&k));
    (node.get("type").and_then(Value::as_str) == Some("null") && only(&["type"]))
        || (node.get("const") == Some(&Value::Null) && only(&["const", "type"]))
}

/// The literal a schema stands for: a `const` (with a `type` that agrees, if any), or an
/// `enum` of one value.
pub(super) fn literal_of(node: &Node<'_>) -> Result<Option<LiteralValue>> {
    let value = match (node.get("const"), node.get("enum")) {
        (Some(value), _) => (value, node.at("const")),
        (None, Some(Value::Array(values))) if values.len() == 1 => (&values[0], format!("{}/0", node.at("enum"))),
        _ => return Ok(None),
    };
    let literal = literal_value(value.0, &value.1)?;
    if let Some(ty) = node.get("type") {
        let fits = match (ty.as_str(), &literal) {
            (Some("string"), LiteralValue::String(_))
            | (Some("boolean"), LiteralValue::Bool(_))
            | (Some("null"), LiteralValue::Null) => true,
            (Some("number"), LiteralValue::Number(_)) => true,
            (Some("integer"), LiteralValue::Number(n)) => n.fract() == 0.0,
            _ => false,
        };
        if !fits {
            return Err(GenError::schema(value.1, format!("the value does not have type {ty}")));
        }
    }
    Ok(Some(literal))
}

/// A JSON scalar as a literal.
pub(super) fn literal_value(value: &Value, path: &str) -> Result<LiteralValue> {
    Ok(match value {
        Value::String(s) => LiteralValue::String(s.clone()),
        Value::Bool(b) => LiteralValue::Bool(*b),
        Value::Null => LiteralValue::Null,
        Value::Number(n) => {
            let f = n.as_f64().filter(|f| pi_protocol_runtime::Number::new(*f).is_some()).ok_or_else(|| {
                GenError::schema(path, "a number literal must be finite and, when integral, within +-(2^53 - 1)")
            })?;
            LiteralValue::Number(if f == 0.0 { 0.0 } else { f })
        }
        _ => return Err(GenError::schema(path, "a literal must be a string, boolean, number or null")),
    })
}

/// The values of an `enum`, with their pointers.
pub(super) fn enum_values(node: &Node<'_>) -> Result<Vec<(String, LiteralValue)>> {
    let path = node.at("enum");
    let Some(Value::Array(values)) = node.get("enum") else {
        return Err(GenError::schema(path, "must be a non-empty array of values"));
    };
    if values.is_empty() {
        return Err(GenError::schema(path, "must be a non-empty array of values"));
    }
    if values.len() > MAX_MEMBERS {
        return Err(too_many(path, "values"));
    }
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let at = format!("{path}/{i}");
            literal_value(v, &at).map(|value| (at, value))
        })
        .collect()
}

/// Names for the types inline union members may become: the literals that differ between the
/// members (`item_started` -> `ItemStarted`; `ok: true` -> `OkTrue`), after the union's name in
/// the long form, or the member's position.
pub(super) fn member_hints<'a>(cx: &mut Converter<'_, 'a>, name: &str, members: &[Node<'a>]) -> Result<Vec<Hint>> {
    let mut literal_sets: Vec<Vec<(String, Value)>> = Vec::with_capacity(members.len());
    for member in members {
        literal_sets.push(member_literals(cx, member, 0)?);
    }
    Ok(literal_sets
        .iter()
        .enumerate()
        .map(|(i, set)| {
            let varying: String = set
                .iter()
                .filter(|(key, value)| {
                    literal_sets.iter().any(|other| !other.iter().any(|(k, v)| k == key && v == value))
                })
                .filter_map(|(key, value)| match value {
                    Value::String(s) => x_rust::to_upper_camel(s),
                    Value::Bool(b) => {
                        x_rust::to_upper_camel(key).map(|k| format!("{k}{}", if *b { "True" } else { "False" }))
                    }
                    other => x_rust::to_upper_camel(key)
                        .map(|k| format!("{k}{}", other.to_string().replace(['.', '-'], "_"))),
                })
                .collect();
            if varying.is_empty() {
                Hint::below(name, &format!("Variant{i}"))
            } else {
                Hint::below(name, &varying)
            }
        })
        .collect())
}

/// The `const` properties every map of a member carries: an object's own, or those all members
/// of a nested union share (up to 8 unions down). Each union is looked into once per depth.
pub(super) fn member_literals<'a>(
    cx: &mut Converter<'_, 'a>,
    member: &Node<'a>,
    depth: usize,
) -> Result<Vec<(String, Value)>> {
    let target = cx.follow(member.clone())?;
    let key = (target.path().to_string(), depth);
    if let Some(known) = cx.member_literals.get(&key) {
        return Ok(known.clone());
    }
    let literals = target_literals(cx, &target, depth)?;
    cx.member_literals.insert(key, literals.clone());
    Ok(literals)
}

/// [`member_literals`] of a schema that is not a reference.
pub(super) fn target_literals<'a>(
    cx: &mut Converter<'_, 'a>,
    target: &Node<'a>,
    depth: usize,
) -> Result<Vec<(String, Value)>> {
    if let Some(Value::Object(props)) = target.get("properties") {
        return Ok(props
            .iter()
            .filter_map(|(key, prop)| prop.get("const").filter(|v| !v.is_null()).map(|v| (key.clone(), v.clone())))
            .collect());
    }
    let nested = target.get("anyOf").or_else(|| target.get("oneOf"));
    match nested {
        Some(_) if depth < 8 => {
            let keyword = if target.has("anyOf") { "anyOf" } else { "oneOf" };
            let mut shared: Option<Vec<(String, Value)>> = None;
            for inner in target.children(keyword)? {
                let set = member_literals(cx, &inner, depth + 1)?;
                shared = Some(match shared {
                    None => set,
                    Some(prev) => prev.into_iter().filter(|e| set.contains(e)).collect(),
                });
            }
            Ok(shared.unwrap_or_default())
        }
        _ => Ok(Vec::new()),
    }
}

/// A length keyword (`minLength`, `maxItems`, ...): a non-negative integer below 2^32.
pub(super) fn length(node: &Node<'_>, key: &str) -> Result<Option<u64>> {
    match node.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 4_294_967_296.0)
            .map(|f| Some(f as u64))
            .ok_or_else(|| GenError::schema(node.at(key), "must be a non-negative integer below 2^32")),
    }
}

/// A numeric bound: a finite number, within +-(2^53 - 1) when integral.
pub(super) fn bound(node: &Node<'_>, key: &str) -> Result<Option<f64>> {
    match node.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|f| pi_protocol_runtime::Number::new(*f).is_some())
            .map(|f| Some(if f == 0.0 { 0.0 } else { f }))
            .ok_or_else(|| {
                GenError::schema(node.at(key), "must be a finite number (within +-(2^53 - 1) when integral)")
            }),
    }
}

/// `required` of an object: unique names of declared properties.
pub(super) fn required_keys<'v>(node: &Node<'v>, properties: &serde_json::Map<String, Value>) -> Result<Vec<&'v str>> {
    let path = node.at("required");
    let items = match node.get("required") {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(GenError::schema(path, "must be an array of property names")),
    };
    let mut out: Vec<&str> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}/{i}");
        let Value::String(name) = item else { return Err(GenError::schema(at, "must be a string")) };
        if !properties.contains_key(name) {
            return Err(GenError::schema(at, format!("names no property of this object: {name:?}")));
        }
        if out.contains(&name.as_str()) {
            return Err(GenError::schema(at, format!("{name:?} is listed twice")));
        }
        out.push(name);
    }
    Ok(out)
}
