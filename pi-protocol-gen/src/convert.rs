//! Schema document -> checked [`Model`].
//!
//! Conversion runs in three passes over `$defs`: name every definition (so references can be
//! resolved in any order), convert strings and objects, then classify each union from the
//! literals of its members. Every error names the schema location as a JSON pointer.
//!
//! How an `anyOf` definition is classified:
//! - **tagged** (`tag = "<key>"`): some key holds a `const` in every member, with a different
//!   value in each. A member may itself be a union, when all its variants share one value for
//!   that key (`Response` inside `ServerMessage`, all `type: "response"`).
//! - **key set** (`key_set`): otherwise, when every member is an object and no map can carry
//!   keys that satisfy two members at once (`RpcTarget`: `{ serverId }` or
//!   `{ serverId, sessionId, attachmentId }`).
//! - anything else is ambiguous and rejected.
//!
//! Inside a property, `anyOf [<schema>, {"type": "null"}]` is a nullable value.

use std::collections::HashMap;

use pi_protocol_runtime::pattern::Pattern;
use serde_json::Value;

use crate::error::{GenError, Result};
use crate::model::{
    Field, FieldType, Literal, LiteralValue, Member, Model, Newtype, StringRules, Struct, TypeDef, TypeKind, Union,
    UnionKind, Variant,
};
use crate::schema::{Document, Node};
use crate::x_rust::{self, Location};

/// Names the generated module (or code derived from it) refers to unqualified; a schema type may
/// not shadow them.
const RESERVED: &[&str] = &[
    "Integer",
    "Payload",
    "Codec",
    "String",
    "Option",
    "Some",
    "None",
    "Result",
    "Ok",
    "Err",
    "Vec",
    "Box",
    "bool",
    "str",
    "PROTOCOL_VERSION",
];

/// Converts a parsed schema document into the checked model.
pub(crate) fn convert(value: &Value) -> Result<Model> {
    let doc = Document::read(value)?;
    let protocol_version = x_rust::protocol_version(&doc.root)?;
    let limits = x_rust::limits(&doc.root)?;
    let title = doc.root.str("title")?.map(str::to_owned);
    let description = doc.root.description()?;

    let mut ctx = Context::name_definitions(&doc)?;
    let mut shapes = Vec::with_capacity(ctx.defs.len());
    for def in &ctx.defs {
        shapes.push(ctx.convert_definition(def)?);
    }
    ctx.shapes = shapes;

    let mut types = Vec::with_capacity(ctx.defs.len());
    for (i, def) in ctx.defs.iter().enumerate() {
        let kind = match &ctx.shapes[i] {
            Shape::Newtype(n) => TypeKind::Newtype(n.clone()),
            Shape::Struct(s) => TypeKind::Struct(s.clone()),
            Shape::Union(members) => TypeKind::Union(ctx.classify(i, members)?),
        };
        types.push(TypeDef {
            schema_name: def.schema_name.to_string(),
            rust_name: def.rust_name.clone(),
            doc: def.node.description()?,
            kind,
        });
    }
    Ok(Model { protocol_version, limits, title, description, types })
}

/// A `$defs` member with its Rust name.
struct Definition<'a> {
    schema_name: &'a str,
    rust_name: String,
    node: Node<'a>,
}

/// A definition after the second pass: unions still hold their unclassified members.
enum Shape {
    Newtype(Newtype),
    Struct(Struct),
    Union(Vec<UnionMember>),
}

/// One `anyOf` member of a union definition.
struct UnionMember {
    path: String,
    target: usize,
    rust_variant: Option<String>,
    doc: Option<String>,
}

/// The definitions and what is known about them so far.
struct Context<'a> {
    defs: Vec<Definition<'a>>,
    index: HashMap<&'a str, usize>,
    shapes: Vec<Shape>,
}

impl<'a> Context<'a> {
    /// Pass 1: every definition gets a unique Rust name.
    fn name_definitions(doc: &Document<'a>) -> Result<Context<'a>> {
        let mut defs = Vec::with_capacity(doc.defs.len());
        let mut index = HashMap::new();
        let mut by_rust_name: HashMap<String, &str> = HashMap::new();
        for (schema_name, path, value) in &doc.defs {
            let node = Node::new(value, path.clone())?;
            let rust_name = x_rust::type_name(&node, schema_name)?;
            if RESERVED.contains(&rust_name.as_str()) {
                return Err(GenError::schema(
                    path.clone(),
                    format!("the Rust name {rust_name} is used by the generated module itself; set x-rust-name"),
                ));
            }
            if let Some(other) = by_rust_name.insert(rust_name.clone(), schema_name) {
                return Err(GenError::schema(
                    path.clone(),
                    format!("the Rust name {rust_name} is already used by #/$defs/{other}; set x-rust-name"),
                ));
            }
            index.insert(*schema_name, defs.len());
            defs.push(Definition { schema_name, rust_name, node });
        }
        Ok(Context { defs, index, shapes: Vec::new() })
    }

    /// The definition a node's `$ref` points at.
    fn resolve(&self, node: &Node<'_>) -> Result<usize> {
        let name = node.ref_target()?.ok_or_else(|| GenError::schema(node.path(), "missing $ref"))?;
        self.index
            .get(name.as_str())
            .copied()
            .ok_or_else(|| GenError::schema(node.at("$ref"), format!("reference to missing definition #/$defs/{name}")))
    }

    /// Pass 2: the shape of one definition.
    fn convert_definition(&self, def: &Definition<'a>) -> Result<Shape> {
        let node = &def.node;
        if node.has("anyOf") {
            return self.union_members(node).map(Shape::Union);
        }
        match node.get("type") {
            Some(Value::String(t)) if t == "string" => {
                node.allow(&["type", "minLength", "pattern"], Location::Definition, "a string definition")?;
                Ok(Shape::Newtype(Newtype { rules: string_rules(node)? }))
            }
            Some(Value::String(t)) if t == "object" => self.convert_struct(node).map(Shape::Struct),
            Some(_) => Err(GenError::schema(
                node.at("type"),
                "a definition must be a string (a newtype), an object, or an anyOf of definitions",
            )),
            None if node.has("$ref") => {
                Err(GenError::schema(node.at("$ref"), "a definition cannot be an alias of another one"))
            }
            None => {
                node.allow(&[], Location::Definition, "a definition")?;
                Err(GenError::schema(
                    node.path(),
                    "a definition must be a string (a newtype), an object, or an anyOf of definitions",
                ))
            }
        }
    }

    /// An object definition: properties in order, literals placed, `required` checked.
    fn convert_struct(&self, node: &Node<'a>) -> Result<Struct> {
        node.allow(&["type", "properties", "required", "additionalProperties"], Location::Definition, "an object")?;
        match node.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            None => {
                return Err(GenError::schema(
                    node.at("additionalProperties"),
                    "missing: every object must set additionalProperties to false",
                ))
            }
            Some(_) => {
                return Err(GenError::schema(
                    node.at("additionalProperties"),
                    "must be false: every object rejects unknown properties",
                ))
            }
        }
        let properties = match node.get("properties") {
            None => serde_json::Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => return Err(GenError::schema(node.at("properties"), "must be an object")),
        };
        let required = required_keys(node, &properties)?;
        let props_path = node.at("properties");

        let mut members: Vec<Member> = Vec::with_capacity(properties.len());
        let mut rust_names: HashMap<String, String> = HashMap::new();
        for (key, value) in &properties {
            let path = format!("{props_path}/{}", crate::schema::escape_pointer(key));
            let prop = Node::new(value, path)?;
            let is_required = required.contains(&key.as_str());
            let member = if prop.has("const") {
                let after = match members.iter().any(|m| matches!(m, Member::Field(_))) {
                    true => members.last().map(|m| m.key().to_string()),
                    false => None,
                };
                Member::Literal(convert_literal(&prop, key, is_required, after)?)
            } else {
                let field = self.convert_field(&prop, key, is_required)?;
                if let Some(other) = rust_names.insert(field.rust_name.clone(), key.clone()) {
                    return Err(GenError::schema(
                        prop.path(),
                        format!(
                            "the Rust field name {} is already used by property {other:?}; set x-rust-name",
                            field.rust_name
                        ),
                    ));
                }
                Member::Field(field)
            };
            members.push(member);
        }
        Ok(Struct { members })
    }

    /// A stored property.
    fn convert_field(&self, prop: &Node<'a>, key: &str, required: bool) -> Result<Field> {
        let rust_name = x_rust::field_name(prop, key)?;
        let doc = prop.description()?;
        let (ty, nullable) = if prop.has("anyOf") {
            prop.allow(&["anyOf"], Location::Property, "a nullable property")?;
            let inner = nullable_inner(prop)?;
            if !required {
                return Err(GenError::schema(
                    prop.path(),
                    "a nullable property must be required (optional and nullable together is not supported)",
                ));
            }
            (self.field_type(&inner, Location::Other)?, true)
        } else {
            (self.field_type(prop, Location::Property)?, false)
        };
        Ok(Field { key: key.to_string(), rust_name, doc, ty, optional: !required, nullable })
    }

    /// The value type of a property schema.
    fn field_type(&self, node: &Node<'a>, location: Location) -> Result<FieldType> {
        if node.has("$ref") {
            node.allow(&["$ref"], location, "a $ref")?;
            let target = self.resolve(node)?;
            return Ok(FieldType::Named(self.defs[target].rust_name.clone()));
        }
        if node.is_unconstrained() {
            node.allow(&[], location, "an opaque value")?;
            return Ok(FieldType::Payload);
        }
        if node.has("anyOf") {
            return Err(GenError::schema(
                node.at("anyOf"),
                "an anyOf inside a property must be [<schema>, {\"type\": \"null\"}]; define unions in $defs",
            ));
        }
        let ty = match node.get("type") {
            None => {
                node.allow(&["type"], location, "a property")?;
                return Err(GenError::schema(node.path(), "a property must be {}, a $ref, or have a type"));
            }
            Some(Value::String(ty)) => ty.as_str(),
            Some(_) => return Err(GenError::schema(node.at("type"), "must be a single type name")),
        };
        let type_path = node.at("type");
        match ty {
            "string" => {
                node.allow(&["type", "minLength", "pattern"], location, "a string property")?;
                Ok(FieldType::String(string_rules(node)?))
            }
            "integer" => {
                node.allow(&["type", "minimum"], location, "an integer property")?;
                let minimum = match node.get("minimum") {
                    None => None,
                    Some(v) => Some(integral(v).ok_or_else(|| {
                        GenError::schema(node.at("minimum"), "must be an integer (no fractional minimum)")
                    })?),
                };
                Ok(FieldType::Integer { minimum })
            }
            "boolean" => {
                node.allow(&["type"], location, "a boolean property")?;
                Ok(FieldType::Bool)
            }
            "number" => Err(GenError::schema(
                type_path,
                "a non-const number property is not supported; use type integer for integer values",
            )),
            "object" => Err(GenError::schema(
                type_path,
                "inline object schemas are not supported; define the object in $defs and use $ref",
            )),
            "null" => Err(GenError::schema(type_path, "a property that only holds null is not supported")),
            _ => Err(GenError::schema(type_path, "unsupported type")),
        }
    }

    /// The members of a union definition, each a `$ref` to an object or another union.
    fn union_members(&self, node: &Node<'a>) -> Result<Vec<UnionMember>> {
        node.allow(&["anyOf"], Location::Definition, "a union definition")?;
        let path = node.at("anyOf");
        let items = match node.get("anyOf") {
            Some(Value::Array(items)) if !items.is_empty() => items,
            _ => return Err(GenError::schema(path, "must be a non-empty array")),
        };
        let mut members = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let member = Node::new(item, format!("{path}/{i}"))?;
            if is_null_schema(&member) {
                return Err(GenError::schema(
                    member.path(),
                    "a nullable definition is not supported; write anyOf [<schema>, {\"type\": \"null\"}] in the property",
                ));
            }
            if !member.has("$ref") {
                return Err(GenError::schema(member.path(), "a union member must be a $ref to a definition"));
            }
            member.allow(&["$ref"], Location::UnionMember, "a union member")?;
            let target = self.resolve(&member)?;
            if matches!(self.shape_of(target), Some(ShapeKind::Newtype)) {
                return Err(GenError::schema(
                    member.at("$ref"),
                    "a union member must be an object or a union, not a string",
                ));
            }
            members.push(UnionMember {
                path: member.path().to_string(),
                target,
                rust_variant: x_rust::variant_name(&member)?,
                doc: member.description()?,
            });
        }
        Ok(members)
    }

    /// What kind of definition `i` is, from its keywords (usable before pass 2 finished).
    fn shape_of(&self, i: usize) -> Option<ShapeKind> {
        let node = &self.defs[i].node;
        if node.has("anyOf") {
            return Some(ShapeKind::Union);
        }
        match node.get("type").and_then(Value::as_str) {
            Some("string") => Some(ShapeKind::Newtype),
            Some("object") => Some(ShapeKind::Struct),
            _ => None,
        }
    }

    /// Pass 3: decides how union definition `i` is told apart and names its variants.
    fn classify(&self, i: usize, members: &[UnionMember]) -> Result<Union> {
        let node = &self.defs[i].node;
        let any_of = node.at("anyOf");
        let mut literal_sets = Vec::with_capacity(members.len());
        for member in members {
            literal_sets.push(self.shared_literals(member.target, &mut vec![i])?);
        }
        let tag = literal_sets[0].iter().map(|(k, _)| k.as_str()).find(|key| {
            let values: Option<Vec<&LiteralValue>> =
                literal_sets.iter().map(|set| set.iter().find(|(k, _)| k == key).map(|(_, v)| v)).collect();
            values.is_some_and(|vs| vs.iter().enumerate().all(|(a, va)| vs[..a].iter().all(|vb| vb != va)))
        });

        let kind =
            match tag {
                Some(key) => UnionKind::Tagged { key: key.to_string() },
                None => {
                    let mut structs = Vec::with_capacity(members.len());
                    for member in members {
                        match &self.shapes[member.target] {
                            Shape::Struct(s) => structs.push(s),
                            _ => return Err(GenError::schema(
                                member.path.clone(),
                                "no const property tells the members apart, and a member that is a union can only be \
                                 told apart by a const all its variants share",
                            )),
                        }
                    }
                    for a in 0..structs.len() {
                        for b in 0..a {
                            if key_sets_overlap(structs[a], structs[b]) {
                                return Err(GenError::schema(
                                    any_of,
                                    format!(
                                    "members {b} and {a} can match the same map: no const property tells them apart \
                                     and their key sets overlap"
                                ),
                                ));
                            }
                        }
                    }
                    UnionKind::KeySet
                }
            };

        let mut variants: Vec<Variant> = Vec::with_capacity(members.len());
        for (member, literals) in members.iter().zip(&literal_sets) {
            let target = &self.defs[member.target];
            let tag_value = match &kind {
                UnionKind::Tagged { key } => literals.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()),
                UnionKind::KeySet => None,
            };
            let rust_name = member
                .rust_variant
                .clone()
                .or_else(|| match &tag_value {
                    Some(LiteralValue::String(s)) => x_rust::variant_name_from_tag(s),
                    _ => None,
                })
                .unwrap_or_else(|| target.rust_name.clone());
            if variants.iter().any(|v| v.rust_name == rust_name) {
                return Err(GenError::schema(
                    member.path.clone(),
                    format!("the variant name {rust_name} is used twice; set x-rust-variant"),
                ));
            }
            variants.push(Variant {
                rust_name,
                target: target.rust_name.clone(),
                target_schema_name: target.schema_name.to_string(),
                doc: member.doc.clone(),
                tag_value,
            });
        }
        Ok(Union { kind, variants })
    }

    /// The literals definition `i` always carries: a struct's own, or those every variant of a
    /// union shares (same key, same value), in the order of the first variant.
    fn shared_literals(&self, i: usize, stack: &mut Vec<usize>) -> Result<Vec<(String, LiteralValue)>> {
        match &self.shapes[i] {
            Shape::Struct(s) => Ok(s.literals().map(|l| (l.key.clone(), l.value.clone())).collect()),
            Shape::Newtype(_) => Ok(Vec::new()),
            Shape::Union(members) => {
                if stack.contains(&i) {
                    return Err(GenError::schema(self.defs[i].node.at("anyOf"), "the union contains itself"));
                }
                stack.push(i);
                let mut shared: Option<Vec<(String, LiteralValue)>> = None;
                for member in members {
                    let set = self.shared_literals(member.target, stack)?;
                    shared = Some(match shared {
                        None => set,
                        Some(prev) => prev.into_iter().filter(|entry| set.contains(entry)).collect(),
                    });
                }
                stack.pop();
                Ok(shared.unwrap_or_default())
            }
        }
    }
}

/// The definition kinds, as far as [`Context::shape_of`] can tell from keywords.
enum ShapeKind {
    Newtype,
    Struct,
    Union,
}

/// Whether some map's keys could satisfy both objects: all keys required by either are allowed
/// by both.
fn key_sets_overlap(a: &Struct, b: &Struct) -> bool {
    let allowed_by_both = |k: &str| a.keys().any(|x| x == k) && b.keys().any(|x| x == k);
    a.required_keys().chain(b.required_keys()).all(allowed_by_both)
}

/// `minLength` and `pattern` of a string schema.
fn string_rules(node: &Node<'_>) -> Result<StringRules> {
    let min_length = match node.get("minLength") {
        None => None,
        Some(v) => {
            Some(v.as_u64().ok_or_else(|| GenError::schema(node.at("minLength"), "must be a non-negative integer"))?)
        }
    };
    let pattern = match node.str("pattern")? {
        None => None,
        Some(p) => {
            Pattern::parse(p).map_err(|e| GenError::schema(node.at("pattern"), e.to_string()))?;
            Some(p.to_string())
        }
    };
    Ok(StringRules { min_length, pattern })
}

/// `required` of an object: unique names of declared properties.
fn required_keys<'v>(node: &Node<'v>, properties: &serde_json::Map<String, Value>) -> Result<Vec<&'v str>> {
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

/// A `const` property.
fn convert_literal(prop: &Node<'_>, key: &str, required: bool, after: Option<String>) -> Result<Literal> {
    prop.allow(&["type", "const"], Location::Other, "a const property")?;
    if !required {
        return Err(GenError::schema(prop.path(), "a const property must be listed in required"));
    }
    let ty =
        prop.str("type")?.ok_or_else(|| GenError::schema(prop.at("type"), "missing: a const property needs a type"))?;
    let value = prop.get("const").unwrap_or(&Value::Null);
    let const_path = prop.at("const");
    let value = match (ty, value) {
        ("string", Value::String(s)) => LiteralValue::String(s.clone()),
        ("boolean", Value::Bool(b)) => LiteralValue::Bool(*b),
        ("integer" | "number", Value::Number(_)) => LiteralValue::Integer(
            integral(value).ok_or_else(|| GenError::schema(const_path, "only integral number consts are supported"))?,
        ),
        ("string" | "boolean" | "integer" | "number", _) => {
            return Err(GenError::schema(const_path, format!("the value does not have type {ty}")))
        }
        _ => return Err(GenError::schema(prop.at("type"), "a const must be a string, boolean or integral number")),
    };
    Ok(Literal { key: key.to_string(), value, after })
}

/// An integral JSON number as `i64` (`8` and `8.0` alike), within the safe integer range.
fn integral(value: &Value) -> Option<i64> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if let Some(n) = value.as_i64() {
        return (n.unsigned_abs() <= MAX_SAFE as u64).then_some(n);
    }
    let f = value.as_f64()?;
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE).then_some(f as i64)
}

/// Whether a schema is exactly `{"type": "null"}` (plus annotations).
fn is_null_schema(node: &Node<'_>) -> bool {
    node.get("type").and_then(Value::as_str) == Some("null")
        && node.keys().all(|k| k == "type" || crate::schema::ANNOTATIONS.contains(&k))
}

/// The non-null member of a nullable property's `anyOf [<schema>, {"type": "null"}]`.
fn nullable_inner<'a>(prop: &Node<'a>) -> Result<Node<'a>> {
    let path = prop.at("anyOf");
    let shape_error = || {
        GenError::schema(
            path.clone(),
            "an anyOf inside a property must be [<schema>, {\"type\": \"null\"}]; define unions in $defs",
        )
    };
    let Some(Value::Array(items)) = prop.get("anyOf") else { return Err(shape_error()) };
    if items.len() != 2 {
        return Err(shape_error());
    }
    let first = Node::new(&items[0], format!("{path}/0"))?;
    let second = Node::new(&items[1], format!("{path}/1"))?;
    match (is_null_schema(&first), is_null_schema(&second)) {
        (false, true) => Ok(first),
        (true, false) => Ok(second),
        _ => Err(shape_error()),
    }
}
