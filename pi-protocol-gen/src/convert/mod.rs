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
//!
//! This module holds the entry point, the converter's state and naming (pass 1 and the naming of
//! pass 2); `shapes` reads types and shapes from schema nodes (passes 2 and 4), `classify`
//! tells union members apart (pass 3), `cycles` bounds containment chains and boxes recursion
//! (pass 5).

use std::collections::{HashMap, HashSet};

use pi_protocol_runtime::pattern::SchemaPattern;
use pi_protocol_runtime::JsonTypes;
use serde_json::Value;

use crate::error::{GenError, Result};
use crate::limits::{self, MAX_CHAIN, MAX_MEMBERS, MAX_NESTING, MAX_PATTERN_MEMORY, MAX_TAG_KEYS, MAX_TYPES};
use crate::model::{
    Checks, Dispatch, Field, Literal, LiteralValue, Member, Model, Record, Shape, Struct, TypeDef, TypeExpr, TypeKind,
    Union, Variant, VariantKind,
};
use crate::pointer::escape_pointer;
use crate::schema::{too_many, Node, References};
use crate::x_rust::{self, Location};

mod classify;
mod cycles;
mod shapes;

use cycles::*;
use shapes::*;

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
    Ok(Model {
        protocol_version,
        limits,
        title,
        description,
        types,
        client_message,
        server_message,
        by_rust_name: HashMap::new(),
    }
    .indexed())
}

/// The literals that single out one union member: key and value.
type Tags = Vec<(String, LiteralValue)>;

/// What classification knows of each named type once it looked (by index): its JSON types and
/// the literals all its maps carry.
struct Memo {
    types: Vec<Option<JsonTypes>>,
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
    Union(Vec<UnionMember>, Option<Union>),
}

/// One member of a union before classification.
struct UnionMember {
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
