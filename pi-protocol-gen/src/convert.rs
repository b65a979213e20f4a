//! Schema document -> checked [`Model`].
//!
//! Conversion runs in passes:
//! 1. the document's form is read (this project's own: `$defs` plus `x-` keywords; or the
//!    reference's published form: `clientMessage` and `serverMessage` schemas, fully inlined)
//!    and every `$id` is collected, so references resolve in any order;
//! 2. named types are converted one by one, in order of discovery: the root's definitions
//!    first, then every object, union or enumeration found inline, named after the place where
//!    it was found. Structurally identical schemas (annotations aside) become one type, which is
//!    how the reference's inlined form, repeating each subschema wherever it is used, folds
//!    back into its types;
//! 3. unions are classified: values of different JSON types are told apart by their type;
//!    objects by one literal key (`tag`), by several literal keys together (`tags`), or by key
//!    sets; anything else is an error that names the two members a decoder could not tell
//!    apart;
//! 4. union members whose shape carries constraints become newtypes of their own (named after
//!    the union and the variant), since constraints are checked by fields and newtypes, never
//!    by a variant in place;
//! 5. references on cycles of direct containment (a recursive type) are boxed.
//!
//! Every error names the schema location as a JSON pointer.

use std::collections::{HashMap, HashSet};

use pi_protocol_runtime::pattern::SchemaPattern;
use serde_json::Value;

use crate::error::{GenError, Result};
use crate::limits::{self, MAX_CHAIN, MAX_MEMBERS, MAX_NESTING, MAX_PATTERN_MEMORY, MAX_TAG_KEYS, MAX_TYPES};
use crate::model::{
    Checks, Dispatch, Field, Literal, LiteralValue, Member, Model, ModelParts, Record, Shape, Struct, TypeDef,
    TypeExpr, TypeKind, Union, Variant, VariantKind,
};
use crate::schema::{escape_pointer, too_many, Node, References};
use crate::x_rust::{self, Location};

/// Names the generated module (or code derived from it) refers to unqualified; a schema type may
/// not take them.
const RESERVED: &[&str] = &[
    "Integer",
    "Number",
    "Payload",
    "Record",
    "Null",
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
    "ArrayString",
    "CompactString",
    "Self",
    "PROTOCOL_VERSION",
];

/// Keywords of the root of the project's own form.
const ROOT_KEYWORDS: &[&str] = &["$schema", "$id", "$defs", "definitions", "title"];

/// Keywords of the root of the reference's published form.
const REFERENCE_ROOT_KEYWORDS: &[&str] = &["source", "protocolVersion", "limits", "clientMessage", "serverMessage"];

/// JSON types as a bit set, for telling union members apart.
mod json_type {
    pub const NULL: u8 = 1;
    pub const BOOLEAN: u8 = 2;
    pub const NUMBER: u8 = 4;
    pub const STRING: u8 = 8;
    pub const ARRAY: u8 = 16;
    pub const OBJECT: u8 = 32;
    pub const ANY: u8 = 63;

    /// Words for a set, for messages.
    pub fn describe(types: u8) -> String {
        let names = [
            (NULL, "null"),
            (BOOLEAN, "boolean"),
            (NUMBER, "number"),
            (STRING, "string"),
            (ARRAY, "array"),
            (OBJECT, "object"),
        ];
        let parts: Vec<&str> = names.iter().filter(|(bit, _)| types & bit != 0).map(|(_, n)| *n).collect();
        parts.join(" or ")
    }
}

/// Converts a parsed schema document into the checked model.
pub(crate) fn convert(value: &Value) -> Result<Model> {
    limits::check_document_depth(value)?;
    let refs = References::collect(value)?;
    let root = Node::new(value, "#".to_string())?;
    let reference_form = root.has("clientMessage") || root.has("serverMessage");
    let mut cx = Converter::new(&refs);
    let (protocol_version, limits, title, description, roots) = if reference_form {
        for key in root.keys() {
            if !REFERENCE_ROOT_KEYWORDS.contains(&key) {
                return Err(GenError::schema(
                    root.at(key),
                    "unknown key in the reference's form (source, protocolVersion, limits, clientMessage, serverMessage)",
                ));
            }
        }
        let mut roots = [None, None];
        for (slot, (key, name)) in
            roots.iter_mut().zip([("clientMessage", "ClientMessage"), ("serverMessage", "ServerMessage")])
        {
            if let Some(node) = root.child(key)? {
                *slot = Some(cx.named_root(node, name)?);
            }
        }
        let version = x_rust::protocol_version(&root, "protocolVersion")?;
        (version, x_rust::limits(&root, "limits")?, None, None, roots)
    } else {
        root.allow(ROOT_KEYWORDS, Location::Root, "the schema root")?;
        root.str("$schema")?;
        root.str("$id")?;
        let mut defs = Vec::new();
        for keyword in ["$defs", "definitions"] {
            match root.get(keyword) {
                None => {}
                Some(Value::Object(map)) => {
                    for (name, schema) in map {
                        let path = format!("#/{keyword}/{}", escape_pointer(name));
                        defs.push((name.as_str(), Node::new(schema, path)?));
                    }
                }
                Some(_) => return Err(GenError::schema(root.at(keyword), "must be an object of named schemas")),
            }
        }
        for (name, node) in &defs {
            cx.define(name, node)?;
        }
        let mut roots = [None, None];
        for (slot, (keyword, default)) in
            roots.iter_mut().zip([("x-client-message", "ClientMessage"), ("x-server-message", "ServerMessage")])
        {
            let name = x_rust::message_type(&root, keyword)?;
            let explicit = name.is_some();
            let name = name.unwrap_or_else(|| default.to_string());
            match defs.iter().find(|(n, _)| *n == name) {
                Some((_, node)) => *slot = Some(cx.named(node.clone(), &Hint::below("", &name), true)?),
                None if explicit => {
                    return Err(GenError::schema(root.at(keyword), format!("no definition #/$defs/{name}")))
                }
                None => {}
            }
        }
        let version = x_rust::protocol_version(&root, "x-protocol-version")?;
        let title = root.str("title")?.map(str::to_owned);
        (version, x_rust::limits(&root, "x-limits")?, title, root.description()?, roots)
    };
    cx.convert_all()?;
    cx.check_chains()?;
    cx.classify_all()?;
    cx.box_cycles();
    let [client, server] = roots;
    let client_message = client.map(|i| cx.types[i].rust_name.clone());
    let server_message = server.map(|i| cx.types[i].rust_name.clone());
    let types = cx.finish()?;
    for (name, side) in [(&client_message, "client"), (&server_message, "server")] {
        if let Some(name) = name {
            let def = types.iter().find(|t| &t.rust_name == name).expect("root types are named types");
            if !matches!(def.kind, TypeKind::Union(_) | TypeKind::Struct(_)) {
                return Err(GenError::schema(
                    def.pointer.clone(),
                    format!("the {side} message type must be an object or a union of objects"),
                ));
            }
        }
    }
    Ok(Model::new(ModelParts { protocol_version, limits, title, description, types, client_message, server_message }))
}

/// The literals that single out one union member: key and value.
type Tags = Vec<(String, LiteralValue)>;

/// What classification knows of each named type once it looked (by index): its JSON types and
/// the literals all its maps carry.
struct Memo {
    types: Vec<Option<u8>>,
    literals: Vec<Option<Tags>>,
}

/// The key sets of the object members of a union, for telling whether one map could fit two
/// of them: each member's keys as a set, and its required keys rarest first (the key most
/// likely missing from another member is tried first).
struct KeySets<'s> {
    keys: Vec<HashSet<&'s str>>,
    required: Vec<Vec<&'s str>>,
}

impl<'s> KeySets<'s> {
    fn new(structs: impl Iterator<Item = &'s Struct>) -> Self {
        let structs: Vec<&Struct> = structs.collect();
        let keys: Vec<HashSet<&str>> = structs.iter().map(|s| s.keys().collect()).collect();
        let mut frequency: HashMap<&str, usize> = HashMap::new();
        for set in &keys {
            for key in set {
                *frequency.entry(key).or_default() += 1;
            }
        }
        let required = structs
            .iter()
            .map(|s| {
                let mut required: Vec<&str> = s.required_keys().collect();
                required.sort_by_key(|k| frequency.get(k).copied().unwrap_or(0));
                required
            })
            .collect();
        KeySets { keys, required }
    }

    /// Whether some map's keys could satisfy members `a` and `b`: all keys required by either
    /// are allowed by both.
    fn overlap(&self, a: usize, b: usize) -> bool {
        self.required[a].iter().all(|k| self.keys[b].contains(k))
            && self.required[b].iter().all(|k| self.keys[a].contains(k))
    }
}

/// A name for a type made from an inline schema: the short form (`Cost`, `ItemStarted`) when no
/// other type has it, else the long form that adds the place it was found (`UsageCost`).
#[derive(Debug, Clone)]
struct Hint {
    short: String,
    long: String,
}

impl Hint {
    /// The hint for a schema found under `part` of the type named `parent`.
    fn below(parent: &str, part: &str) -> Hint {
        Hint { short: part.to_string(), long: format!("{parent}{part}") }
    }

    /// Both forms followed by `suffix` (`Item`, `Value`).
    fn then(&self, suffix: &str) -> Hint {
        Hint { short: format!("{}{suffix}", self.short), long: format!("{}{suffix}", self.long) }
    }
}

/// A named type while the model is built.
struct Pending<'a> {
    rust_name: String,
    schema_name: Option<String>,
    node: Node<'a>,
    kind: Option<PendingKind>,
}

/// What a named type is, before its unions are classified.
enum PendingKind {
    Newtype(Shape),
    Struct(Struct),
    Union(Vec<Member_>, Option<Union>),
}

/// One member of a union before classification.
#[allow(non_camel_case_types)]
struct Member_ {
    pointer: String,
    doc: Option<String>,
    rust_variant: Option<String>,
    kind: VariantKind,
}

/// The conversion state.
struct Converter<'r, 'a> {
    refs: &'r References<'a>,
    types: Vec<Pending<'a>>,
    by_pointer: HashMap<String, usize>,
    by_canonical: HashMap<String, usize>,
    /// Every named type by its Rust name.
    by_name: HashMap<String, usize>,
    names: HashSet<String>,
    /// The next number to try after a name's long form, once the form is taken.
    numbered: HashMap<String, usize>,
    /// The targets of the references being followed in place, innermost last.
    expanding: Vec<String>,
    /// The levels of the value being converted in place (see [`MAX_NESTING`]).
    nesting: usize,
    /// The literals of union members already found ([`member_literals`]), by the pointer of the
    /// member's schema and the depth they were looked for at.
    member_literals: HashMap<(String, usize), Vec<(String, Value)>>,
    /// The patterns compiled so far, each once (see [`Converter::pattern`]).
    patterns: HashSet<String>,
    /// The heap bytes those patterns took compiled, against [`MAX_PATTERN_MEMORY`].
    pattern_memory: usize,
}

impl<'r, 'a> Converter<'r, 'a> {
    fn new(refs: &'r References<'a>) -> Self {
        Converter {
            refs,
            types: Vec::new(),
            by_pointer: HashMap::new(),
            by_canonical: HashMap::new(),
            by_name: HashMap::new(),
            names: HashSet::new(),
            numbered: HashMap::new(),
            expanding: Vec::new(),
            nesting: 0,
            member_literals: HashMap::new(),
            patterns: HashSet::new(),
            pattern_memory: 0,
        }
    }

    /// Compiles `pattern` (the keyword at `at`) to check it, once per distinct pattern: its
    /// size ([`pattern::check_size`](pi_protocol_runtime::pattern::check_size)) before any
    /// parser reads it, its validity as ECMAScript, the constructs the linear-time engine
    /// refuses, and the heap the schema's patterns take together ([`MAX_PATTERN_MEMORY`]).
    fn pattern(&mut self, pattern: &str, at: &str) -> Result<()> {
        if self.patterns.contains(pattern) {
            return Ok(());
        }
        let compiled = SchemaPattern::compile(pattern).map_err(|e| GenError::schema(at, e.to_string()))?;
        self.pattern_memory = self.pattern_memory.saturating_add(compiled.memory_usage());
        if self.pattern_memory > MAX_PATTERN_MEMORY {
            return Err(GenError::schema(
                at,
                format!(
                    "the schema's patterns take more than {MAX_PATTERN_MEMORY} bytes compiled; \
                     use fewer distinct patterns or smaller repetition counts"
                ),
            ));
        }
        self.patterns.insert(pattern.to_owned());
        Ok(())
    }

    /// Registers a root definition under its name (`x-rust-name` or the key). An alias (a
    /// definition that is only a `$ref`) names nothing of its own.
    fn define(&mut self, name: &str, node: &Node<'a>) -> Result<()> {
        if is_reference(node) {
            // An alias: references to it lead to its target.
            return node.allow(&["$ref"], Location::Definition, "a definition that is a reference");
        }
        let rust_name = x_rust::type_name(node, name)?;
        let index = self.create(node.clone(), rust_name, Some(name.to_string()), true)?;
        self.by_pointer.insert(node.path().to_string(), index);
        Ok(())
    }

    /// A root message type of the reference's form.
    fn named_root(&mut self, node: Node<'a>, name: &str) -> Result<usize> {
        let node = self.follow(node)?;
        if let Some(&index) = self.by_pointer.get(node.path()) {
            return Ok(index);
        }
        let index = self.create(node.clone(), name.to_string(), None, false)?;
        self.by_pointer.insert(node.path().to_string(), index);
        Ok(index)
    }

    /// Adds a named type, with a name not taken yet: an explicit name (a definition's key or an
    /// `x-rust-name`) must be free, any other name is made unique with a number.
    fn create(
        &mut self,
        node: Node<'a>,
        rust_name: String,
        schema_name: Option<String>,
        explicit: bool,
    ) -> Result<usize> {
        if RESERVED.contains(&rust_name.as_str()) {
            return Err(GenError::schema(
                node.path(),
                format!("the Rust name {rust_name} is used by the generated module itself; set x-rust-name"),
            ));
        }
        let rust_name = if schema_name.is_some() || explicit {
            if !self.names.insert(rust_name.clone()) {
                return Err(GenError::schema(
                    node.path(),
                    format!("the Rust name {rust_name} is already used by another type; set x-rust-name"),
                ));
            }
            rust_name
        } else {
            self.unique_name(&Hint { short: rust_name.clone(), long: rust_name })
        };
        let index = self.types.len();
        if index == MAX_TYPES {
            return Err(GenError::schema(
                node.path(),
                format!("the schema has more than {MAX_TYPES} named types (definitions and inline objects, unions)"),
            ));
        }
        self.by_canonical.entry(node.canonical()).or_insert(index);
        self.by_name.insert(rust_name.clone(), index);
        self.types.push(Pending { rust_name, schema_name, node, kind: None });
        Ok(index)
    }

    /// The first unused name of: the short form of `hint`, its long form, the long form with a
    /// number from 2.
    fn unique_name(&mut self, hint: &Hint) -> String {
        let free = |names: &HashSet<String>, name: &str| {
            !names.contains(name) && !RESERVED.contains(&name) && x_rust::check_ident(name, String::new()).is_ok()
        };
        let mut name = if free(&self.names, &hint.short) { hint.short.clone() } else { hint.long.clone() };
        if !free(&self.names, &name) {
            // Numbers already handed out for this form are not tried again.
            let mut n = self.numbered.get(&hint.long).copied().unwrap_or(2);
            loop {
                name = format!("{}{n}", hint.long);
                n += 1;
                if free(&self.names, &name) {
                    break;
                }
            }
            self.numbered.insert(hint.long.clone(), n);
        }
        self.names.insert(name.clone());
        name
    }

    /// Follows `$ref`s from `node` to a schema that is not only a reference.
    fn follow(&self, mut node: Node<'a>) -> Result<Node<'a>> {
        let mut seen = HashSet::new();
        while is_reference(&node) {
            let target = node.str("$ref")?.unwrap_or_default();
            if !seen.insert(target.to_string()) {
                return Err(GenError::schema(node.at("$ref"), "the reference leads back to itself"));
            }
            node = self.refs.resolve(target, &node.at("$ref"))?;
        }
        Ok(node)
    }

    /// The named type made from `node` (after references): the definition it is, a type made
    /// earlier from an identical schema, or a new type named `hint` (or, with `own_name`, its
    /// `x-rust-name`; on a property that keyword names the field instead).
    fn named(&mut self, node: Node<'a>, hint: &Hint, own_name: bool) -> Result<usize> {
        let node = self.follow(node)?;
        if let Some(&index) = self.by_pointer.get(node.path()) {
            return Ok(index);
        }
        if let Some(&index) = self.by_canonical.get(&node.canonical()) {
            return Ok(index);
        }
        let explicit = if own_name { x_rust::rust_name(&node)? } else { None };
        let index = match explicit {
            Some(name) => self.create(node.clone(), name, None, true)?,
            None => {
                let name = self.unique_name(hint);
                self.names.remove(&name);
                self.create(node.clone(), name, None, true)?
            }
        };
        self.by_pointer.insert(node.path().to_string(), index);
        Ok(index)
    }

    /// Converts every named type, including those discovered on the way.
    fn convert_all(&mut self) -> Result<()> {
        let mut next = 0;
        while next < self.types.len() {
            if self.types[next].kind.is_some() {
                next += 1;
                continue;
            }
            let node = self.types[next].node.clone();
            let name = self.types[next].rust_name.clone();
            let kind = self.convert_type(&node, &name)?;
            self.types[next].kind = Some(kind);
            next += 1;
        }
        Ok(())
    }

    /// The kind of the named type made from `node`.
    fn convert_type(&mut self, node: &Node<'a>, name: &str) -> Result<PendingKind> {
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
    fn shape(&mut self, node: &Node<'a>, hint: &Hint, location: Location) -> Result<Shape> {
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

    fn shape_in_place(&mut self, node: &Node<'a>, hint: &Hint, location: Location) -> Result<Shape> {
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
    fn nullable(&mut self, member: &Node<'a>, hint: &Hint) -> Result<Shape> {
        let inner = self.shape(member, hint, Location::UnionMember)?;
        if matches!(inner.ty, TypeExpr::Nullable(_)) {
            return Ok(inner);
        }
        Ok(Shape::plain(TypeExpr::Nullable(Box::new(inner))))
    }

    /// The shape of `node` read as a value of JSON type `ty` (one of the names in its `type`).
    /// With `lenient`, keywords of other types are ignored (they apply to the other types of a
    /// `type` list).
    fn typed_shape(
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
    fn record(&mut self, node: &Node<'a>, hint: &Hint) -> Result<Record> {
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
    fn convert_struct(&mut self, node: &Node<'a>, name: &str) -> Result<Struct> {
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
    fn union_members(&mut self, node: &Node<'a>, name: &str) -> Result<Vec<Member_>> {
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
                    all.push(Member_ { pointer: node.path().to_string(), doc: None, rust_variant: None, kind });
                    continue;
                }
                let hint = Hint::below(name, &x_rust::to_upper_camel(t).unwrap_or_default());
                let shape = self.typed_shape(node, t, &hint, Location::Definition, true)?;
                let kind = VariantKind::Value(self.variant_shape(shape, node, &hint)?);
                all.push(Member_ { pointer: node.path().to_string(), doc: None, rust_variant: None, kind });
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
            return Ok(vec![Member_ {
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
                    Ok(Member_ { pointer, doc: None, rust_variant: None, kind: VariantKind::Literal(value) })
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
                out.push(Member_ {
                    pointer: member.path().to_string(),
                    doc,
                    rust_variant,
                    kind: VariantKind::Literal(value),
                });
                continue;
            }
            if target.has("enum") && !target.has("anyOf") {
                for (pointer, value) in enum_values(&target)? {
                    out.push(Member_ {
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
            out.push(Member_ {
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
    fn variant_shape(&mut self, shape: Shape, node: &Node<'a>, hint: &Hint) -> Result<Shape> {
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

    /// Refuses a type that holds itself with no object or array in between (through newtypes,
    /// nullable values and union members: no value of it could be decoded), and chains of more
    /// than [`MAX_CHAIN`] types held so, which decoders would recurse through without reading
    /// anything. Walks the types without recursion; the chains found here bound every recursion
    /// through named types that follows (classification, the emitter's accessors, the
    /// interpreter).
    fn check_chains(&self) -> Result<()> {
        let edges: Vec<Vec<usize>> = self
            .types
            .iter()
            .map(|t| {
                let mut out = Vec::new();
                match &t.kind {
                    Some(PendingKind::Newtype(shape)) => self.direct(shape, &mut out),
                    Some(PendingKind::Union(members, _)) => members.iter().for_each(|m| {
                        if let VariantKind::Value(shape) = &m.kind {
                            self.direct(shape, &mut out);
                        }
                    }),
                    _ => {}
                }
                out
            })
            .collect();
        // The number of types of the longest chain from each type, once known; `0` while the
        // type is on the path being walked.
        let mut longest: Vec<Option<usize>> = vec![None; edges.len()];
        for start in 0..edges.len() {
            if longest[start].is_some() {
                continue;
            }
            let mut path = vec![(start, 0usize)];
            longest[start] = Some(0);
            while let Some(&mut (node, ref mut next)) = path.last_mut() {
                if let Some(&target) = edges[node].get(*next) {
                    *next += 1;
                    match longest[target] {
                        None => {
                            longest[target] = Some(0);
                            path.push((target, 0));
                        }
                        Some(0) => {
                            let what = match self.types[target].kind {
                                Some(PendingKind::Union(..)) => "union",
                                _ => "type",
                            };
                            return Err(GenError::schema(
                                self.types[target].node.path(),
                                format!("the {what} contains itself"),
                            ));
                        }
                        Some(_) => {}
                    }
                } else {
                    let below = edges[node].iter().filter_map(|&t| longest[t]).max().unwrap_or(0);
                    longest[node] = Some(below + 1);
                    path.pop();
                }
            }
        }
        match longest.iter().position(|l| l.is_some_and(|l| l > MAX_CHAIN)) {
            Some(index) => Err(GenError::schema(
                self.types[index].node.path(),
                format!(
                    "a chain of more than {MAX_CHAIN} types starts here, each holding the next with no object or \
                     array in between (decoders recurse through it without reading anything)"
                ),
            )),
            None => Ok(()),
        }
    }

    /// Classifies every union (pass 3).
    fn classify_all(&mut self) -> Result<()> {
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
    fn classify(&self, index: usize, members: &[Member_], memo: &mut Memo) -> Result<Union> {
        let pointer = self.types[index].node.path().to_string();
        let types: Vec<u8> = members
            .iter()
            .map(|m| match &m.kind {
                VariantKind::Literal(value) => literal_json_type(value),
                VariantKind::Value(shape) => self.shape_types(shape, memo),
            })
            .collect();
        // Literals: distinct values, and no other member of their JSON type.
        for (a, ma) in members.iter().enumerate() {
            for (b, mb) in members.iter().enumerate().take(a) {
                let overlap = types[a] & types[b];
                if overlap == 0 {
                    continue;
                }
                match (&ma.kind, &mb.kind) {
                    (VariantKind::Literal(x), VariantKind::Literal(y)) if x == y => {
                        return Err(GenError::schema(ma.pointer.clone(), format!("the value {x} is listed twice")));
                    }
                    (VariantKind::Literal(_), VariantKind::Literal(_)) => {}
                    (VariantKind::Value(_), VariantKind::Value(_))
                        if overlap == json_type::OBJECT
                            && types[a] == json_type::OBJECT
                            && types[b] == json_type::OBJECT => {}
                    _ => {
                        return Err(GenError::schema(
                            pointer.clone(),
                            format!(
                                "members {b} and {a} can both hold a {}: a decoder could not tell them apart",
                                json_type::describe(overlap)
                            ),
                        ))
                    }
                }
            }
        }
        let objects: Vec<usize> = (0..members.len()).filter(|&i| types[i] == json_type::OBJECT).collect();
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
    fn object_dispatch(
        &self,
        members: &[Member_],
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
    fn reference(&self, index: usize) -> Shape {
        Shape::plain(TypeExpr::Named { name: self.types[index].rust_name.clone(), boxed: false })
    }

    fn kind_of(&self, rust_name: &str) -> Option<&PendingKind> {
        self.by_name.get(rust_name).and_then(|&i| self.types[i].kind.as_ref())
    }

    fn index_of(&self, rust_name: &str) -> usize {
        self.by_name.get(rust_name).copied().expect("named types exist")
    }

    /// The JSON types a value of `shape` can have, each named type's computed once (`memo`);
    /// the types hold no cycle without a container ([`check_chains`](Self::check_chains)).
    fn shape_types(&self, shape: &Shape, memo: &mut Memo) -> u8 {
        match &shape.ty {
            TypeExpr::Named { name, .. } => {
                let index = self.index_of(name);
                if let Some(types) = memo.types[index] {
                    return types;
                }
                let types = match &self.types[index].kind {
                    Some(PendingKind::Struct(_)) => json_type::OBJECT,
                    Some(PendingKind::Newtype(inner)) => self.shape_types(inner, memo),
                    Some(PendingKind::Union(members, _)) => members.iter().fold(0, |all, member| {
                        all | match &member.kind {
                            VariantKind::Literal(value) => literal_json_type(value),
                            VariantKind::Value(shape) => self.shape_types(shape, memo),
                        }
                    }),
                    None => json_type::ANY,
                };
                memo.types[index] = Some(types);
                types
            }
            TypeExpr::String => json_type::STRING,
            TypeExpr::Integer | TypeExpr::Number => json_type::NUMBER,
            TypeExpr::Boolean => json_type::BOOLEAN,
            TypeExpr::Null => json_type::NULL,
            TypeExpr::Payload => json_type::ANY,
            TypeExpr::Array(_) => json_type::ARRAY,
            TypeExpr::Record(_) => json_type::OBJECT,
            TypeExpr::Nullable(inner) => self.shape_types(inner, memo) | json_type::NULL,
        }
    }

    /// The literals every map of `shape` carries: a struct's own, or those every variant of a
    /// union shares (same key, same value), in the order of the first variant; each named
    /// type's computed once (`memo`).
    fn shape_literals(&self, shape: &Shape, memo: &mut Memo) -> Tags {
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
    fn shape_variant_name(&self, shape: &Shape, union_name: &str) -> String {
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

    /// Boxes every reference that lies on a cycle of direct containment (pass 5).
    fn box_cycles(&mut self) {
        let edges: Vec<Vec<usize>> = (0..self.types.len())
            .map(|i| {
                let mut out = Vec::new();
                match &self.types[i].kind {
                    Some(PendingKind::Struct(s)) => s.fields().for_each(|f| self.direct(&f.shape, &mut out)),
                    Some(PendingKind::Newtype(shape)) => self.direct(shape, &mut out),
                    Some(PendingKind::Union(_, Some(u))) => u.variants.iter().for_each(|v| {
                        if let VariantKind::Value(shape) = &v.kind {
                            self.direct(shape, &mut out);
                        }
                    }),
                    _ => {}
                }
                out
            })
            .collect();
        let component = strongly_connected(&edges);
        for i in 0..self.types.len() {
            let on_cycle = |target: usize| component[target] == component[i] && (i != target || edges[i].contains(&i));
            let cyclic: HashSet<String> =
                edges[i].iter().filter(|&&t| on_cycle(t)).map(|&t| self.types[t].rust_name.clone()).collect();
            if cyclic.is_empty() {
                continue;
            }
            match &mut self.types[i].kind {
                Some(PendingKind::Struct(s)) => {
                    for member in &mut s.members {
                        if let Member::Field(f) = member {
                            box_direct(&mut f.shape, &cyclic);
                        }
                    }
                }
                Some(PendingKind::Newtype(shape)) => box_direct(shape, &cyclic),
                Some(PendingKind::Union(_, Some(u))) => {
                    for v in &mut u.variants {
                        if let VariantKind::Value(shape) = &mut v.kind {
                            box_direct(shape, &cyclic);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// The named types `shape` holds directly (not behind an array or a record).
    fn direct(&self, shape: &Shape, out: &mut Vec<usize>) {
        match &shape.ty {
            TypeExpr::Named { name, .. } => out.push(self.index_of(name)),
            TypeExpr::Nullable(inner) => self.direct(inner, out),
            _ => {}
        }
    }

    /// The finished named types.
    fn finish(self) -> Result<Vec<TypeDef>> {
        self.types
            .into_iter()
            .map(|t| {
                let kind = match t.kind {
                    Some(PendingKind::Newtype(shape)) => TypeKind::Newtype(shape),
                    Some(PendingKind::Struct(s)) => TypeKind::Struct(s),
                    Some(PendingKind::Union(_, Some(u))) => TypeKind::Union(u),
                    _ => unreachable!("every type is converted and classified"),
                };
                Ok(TypeDef {
                    rust_name: t.rust_name,
                    schema_name: t.schema_name,
                    pointer: t.node.path().to_string(),
                    doc: t.node.description()?,
                    kind,
                })
            })
            .collect()
    }
}

/// Whether a value of `shape` has constraints to check: its own, or those of what it holds in
/// place (a nullable value, array elements, record keys and values; not a named type's).
fn has_checks(shape: &Shape) -> bool {
    !shape.checks.is_empty()
        || match &shape.ty {
            TypeExpr::Nullable(inner) | TypeExpr::Array(inner) => has_checks(inner),
            TypeExpr::Record(record) => !record.keys.is_empty() || has_checks(&record.values),
            _ => false,
        }
}

/// Marks the references of `shape` to the types in `cyclic` as boxed.
fn box_direct(shape: &mut Shape, cyclic: &HashSet<String>) {
    match &mut shape.ty {
        TypeExpr::Named { name, boxed } if cyclic.contains(name.as_str()) => *boxed = true,
        TypeExpr::Nullable(inner) => box_direct(inner, cyclic),
        _ => {}
    }
}

/// Tarjan's algorithm: the strongly connected component of every node. Iterative: a chain of
/// types as long as the schema allows costs no stack.
fn strongly_connected(edges: &[Vec<usize>]) -> Vec<usize> {
    let n = edges.len();
    let mut index: Vec<Option<usize>> = vec![None; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut component = vec![0; n];
    let (mut next, mut components) = (0, 0);
    for root in 0..n {
        if index[root].is_some() {
            continue;
        }
        // The depth-first path: each node with the position of its next edge.
        let mut path = vec![(root, 0usize)];
        index[root] = Some(next);
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut edge)) = path.last_mut() {
            if let Some(&w) = edges[v].get(*edge) {
                *edge += 1;
                match index[w] {
                    None => {
                        index[w] = Some(next);
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        path.push((w, 0));
                    }
                    Some(iw) if on_stack[w] => low[v] = low[v].min(iw),
                    Some(_) => {}
                }
                continue;
            }
            path.pop();
            if let Some(&(parent, _)) = path.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if Some(low[v]) == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component[w] = components;
                    if w == v {
                        break;
                    }
                }
                components += 1;
            }
        }
    }
    component
}

/// Whether `node` is only a reference (with annotations, `$defs`, `$id` and `x-` keywords).
fn is_reference(node: &Node<'_>) -> bool {
    node.has("$ref")
}

/// Whether `node` is an object with a fixed set of keys (a struct): it has properties, or it is
/// an object refusing every key.
fn is_struct(node: &Node<'_>) -> bool {
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
fn is_union(node: &Node<'_>) -> bool {
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
fn is_null(node: &Node<'_>) -> bool {
    let only = |keys: &[&str]| node.keys().all(|k| keys.contains(&k) || crate::schema::ANNOTATIONS.contains(&k));
    (node.get("type").and_then(Value::as_str) == Some("null") && only(&["type"]))
        || (node.get("const") == Some(&Value::Null) && only(&["const", "type"]))
}

/// The literal a schema stands for: a `const` (with a `type` that agrees, if any), or an
/// `enum` of one value.
fn literal_of(node: &Node<'_>) -> Result<Option<LiteralValue>> {
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
fn literal_value(value: &Value, path: &str) -> Result<LiteralValue> {
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
fn enum_values(node: &Node<'_>) -> Result<Vec<(String, LiteralValue)>> {
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

/// The JSON type of a literal.
fn literal_json_type(value: &LiteralValue) -> u8 {
    match value {
        LiteralValue::String(_) => json_type::STRING,
        LiteralValue::Bool(_) => json_type::BOOLEAN,
        LiteralValue::Number(_) => json_type::NUMBER,
        LiteralValue::Null => json_type::NULL,
    }
}

/// The variant name of a literal: `item_started` -> `ItemStarted`, `true` -> `True`, `8` ->
/// `N8`, `-1.5` -> `Neg1_5`, `null` -> `Null`.
fn literal_variant_name(value: &LiteralValue) -> String {
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

/// Names for the types inline union members may become: the literals that differ between the
/// members (`item_started` -> `ItemStarted`; `ok: true` -> `OkTrue`), after the union's name in
/// the long form, or the member's position.
fn member_hints<'a>(cx: &mut Converter<'_, 'a>, name: &str, members: &[Node<'a>]) -> Result<Vec<Hint>> {
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
fn member_literals<'a>(cx: &mut Converter<'_, 'a>, member: &Node<'a>, depth: usize) -> Result<Vec<(String, Value)>> {
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
fn target_literals<'a>(cx: &mut Converter<'_, 'a>, target: &Node<'a>, depth: usize) -> Result<Vec<(String, Value)>> {
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
fn length(node: &Node<'_>, key: &str) -> Result<Option<u64>> {
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
fn bound(node: &Node<'_>, key: &str) -> Result<Option<f64>> {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A type holding itself through nullable values only, as the member of a union: an error
    /// naming the type, not an endless recursion while the union's members are typed.
    #[test]
    fn a_type_holding_itself_in_a_union_member_is_an_error() {
        let schema = json!({ "$defs": {
            "A": { "anyOf": [{ "$ref": "#/$defs/A" }, { "type": "null" }] },
            "W": { "anyOf": [{ "$ref": "#/$defs/A" }, { "type": "string" }] }
        } });
        let error = super::convert(&schema).unwrap_err();
        assert_eq!(error.path(), Some("#/$defs/A"));
        assert!(error.to_string().contains("contains itself"), "{error}");
    }

    /// An array written in place that holds itself through its `$id` (a list of lists of ...):
    /// a named type the recursion goes through, not an endless expansion.
    #[test]
    fn an_array_holding_itself_in_place_becomes_a_named_type() {
        let schema = json!({ "$defs": { "M": {
            "type": "object",
            "properties": { "a": { "$id": "X", "type": "array", "items": { "$ref": "X" } } },
            "required": ["a"],
            "additionalProperties": false
        } } });
        let model = super::convert(&schema).expect("a valid schema");
        let names: Vec<&str> = model.types.iter().map(|t| t.rust_name.as_str()).collect();
        assert_eq!(names, ["M", "AItemItem"]);
        let super::TypeKind::Newtype(lists) = &model.types[1].kind else { panic!("a newtype: {:?}", model.types[1]) };
        assert_eq!(
            lists.ty,
            super::TypeExpr::Array(Box::new(super::Shape::plain(super::TypeExpr::Named {
                name: "AItemItem".into(),
                boxed: false
            })))
        );
    }
}
