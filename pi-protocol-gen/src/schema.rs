//! Reading the schema document: JSON objects with their JSON pointers, the keyword vocabulary,
//! and references (`$ref` by JSON pointer or by `$id`).
//!
//! This layer knows JSON Schema's vocabulary but not Rust: it hands [`crate::convert`] schema
//! nodes, each carrying the pointer of where it sits, resolves references, and rejects every
//! keyword outside the language the generator supports.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::error::{GenError, Result};
use crate::limits::MAX_MEMBERS;
use crate::pointer::{escape_pointer, unescape_pointer};
use crate::x_rust::keywords::{self, Location};

/// Every JSON Schema keyword the generator understands, wherever it may appear, besides the
/// [`TYPED`] ones.
const VOCABULARY: &[&str] =
    &["$schema", "$id", "$defs", "definitions", "$ref", "type", "const", "enum", "anyOf", "oneOf"];

/// The keywords that constrain values of one JSON type, so a schema using them needs a `type`.
pub(crate) const TYPED: &[&str] = &[
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
];

/// Keywords that only annotate: they may appear on every schema object and change nothing.
pub(crate) const ANNOTATIONS: &[&str] =
    &["title", "description", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly"];

/// Keywords every schema object may carry besides its own: annotations, the identifier and
/// nested definitions (which TypeBox places next to the reference to a cyclic type).
pub(crate) const ANYWHERE: &[&str] = &["$id", "$defs", "definitions"];

/// JSON Schema keywords outside the language, with what to do instead.
const OUTSIDE: &[(&str, &str)] = &[
    ("allOf", "merge the schemas into one object (intersections are not supported)"),
    ("not", "negated schemas are not supported; describe what is allowed instead"),
    ("if", "conditional schemas are not supported; use a union told apart by a const property"),
    ("then", "conditional schemas are not supported; use a union told apart by a const property"),
    ("else", "conditional schemas are not supported; use a union told apart by a const property"),
    ("format", "formats are not checked by the protocol; use a pattern"),
    ("multipleOf", "multipleOf is not supported; use an integer type or bounds"),
    ("uniqueItems", "uniqueItems is not supported; use a record keyed by the unique value"),
    ("prefixItems", "tuples are not supported; use an object with named properties"),
    ("contains", "contains is not supported"),
    ("minProperties", "property counts are not supported; use a struct with required properties"),
    ("maxProperties", "property counts are not supported"),
    ("propertyNames", "use patternProperties with one pattern for constrained keys"),
    ("dependentRequired", "dependencies are not supported; use a union of objects"),
    ("dependentSchemas", "dependencies are not supported; use a union of objects"),
    ("unevaluatedProperties", "use additionalProperties: false"),
    ("unevaluatedItems", "use items"),
    ("$dynamicRef", "dynamic references are not supported; use $ref"),
    ("$anchor", "anchors are not supported; use $id or a pointer"),
    ("nullable", "write anyOf [<schema>, {\"type\": \"null\"}] or type [<type>, \"null\"]"),
];

/// The error for a union, enumeration or object wider than [`MAX_MEMBERS`] at `path`.
pub(crate) fn too_many(path: String, what: &str) -> GenError {
    GenError::schema(path, format!("more than {MAX_MEMBERS} {what}: split the schema into named parts"))
}

/// A schema and the JSON pointer where it sits. `{}` and `true` (any value) are both
/// unconstrained objects here.
#[derive(Debug, Clone)]
pub(crate) struct Node<'a> {
    value: &'a Value,
    path: String,
}

/// The map every `true` schema reads as.
static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();

impl<'a> Node<'a> {
    /// The schema at `path`, or an error if `value` is neither an object nor `true`.
    pub(crate) fn new(value: &'a Value, path: String) -> Result<Node<'a>> {
        match value {
            Value::Object(_) | Value::Bool(true) => Ok(Node { value, path }),
            Value::Bool(false) => {
                Err(GenError::schema(path, "the schema `false` accepts nothing; remove the property or the member"))
            }
            _ => Err(GenError::schema(path, "a schema must be a JSON object")),
        }
    }

    fn map(&self) -> &'a Map<String, Value> {
        match self.value {
            Value::Object(map) => map,
            _ => EMPTY.get_or_init(Map::new),
        }
    }

    /// Its pointer.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The pointer of `key` below it.
    pub(crate) fn at(&self, key: &str) -> String {
        format!("{}/{}", self.path, escape_pointer(key))
    }

    /// The value of keyword `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map().get(key)
    }

    /// Whether keyword `key` is present.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.map().contains_key(key)
    }

    /// The keywords present, in file order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &'a str> {
        self.map().keys().map(String::as_str)
    }

    /// The schema under keyword `key` (`items`, `additionalProperties`, ...).
    pub(crate) fn child(&self, key: &str) -> Result<Option<Node<'a>>> {
        self.get(key).map(|v| Node::new(v, self.at(key))).transpose()
    }

    /// The schemas of an array keyword (`anyOf`, `oneOf`), non-empty, at most
    /// [`MAX_MEMBERS`](crate::limits::MAX_MEMBERS).
    pub(crate) fn children(&self, key: &str) -> Result<Vec<Node<'a>>> {
        let path = self.at(key);
        match self.get(key) {
            Some(Value::Array(items)) if items.len() > MAX_MEMBERS => Err(too_many(path, "members")),
            Some(Value::Array(items)) if !items.is_empty() => {
                items.iter().enumerate().map(|(i, item)| Node::new(item, format!("{path}/{i}"))).collect()
            }
            _ => Err(GenError::schema(path, "must be a non-empty array of schemas")),
        }
    }

    /// Whether the schema holds nothing but annotations, `$id`/`$defs` and `x-` keywords
    /// (`{}`: any JSON).
    pub(crate) fn is_unconstrained(&self) -> bool {
        self.keys().all(|k| ANNOTATIONS.contains(&k) || ANYWHERE.contains(&k) || keywords::is_extension(k))
    }

    /// Fails on the first keyword that is not in `allowed` (annotations, `$id` and `$defs` are
    /// always allowed), naming what to do instead where the keyword is outside the language,
    /// and on `x-` keywords not supported at `location`.
    pub(crate) fn allow(&self, allowed: &[&str], location: Location, what: &str) -> Result<()> {
        for key in self.keys() {
            if keywords::is_extension(key) {
                keywords::check_allowed(key, location).map_err(|message| GenError::schema(self.at(key), message))?;
            } else if !allowed.contains(&key) && !ANNOTATIONS.contains(&key) && !ANYWHERE.contains(&key) {
                let message = if let Some((_, instead)) = OUTSIDE.iter().find(|(k, _)| *k == key) {
                    format!("keyword outside the schema language: {instead}")
                } else if VOCABULARY.contains(&key) || TYPED.contains(&key) {
                    format!("keyword not allowed in {what}")
                } else {
                    "unsupported keyword".to_string()
                };
                return Err(GenError::schema(self.at(key), message));
            }
        }
        Ok(())
    }

    /// The string value of keyword `key`, if present; an error if it is not a string.
    pub(crate) fn str(&self, key: &str) -> Result<Option<&'a str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(GenError::schema(self.at(key), "must be a string")),
        }
    }

    /// The `description`, if any.
    pub(crate) fn description(&self) -> Result<Option<String>> {
        self.str("description").map(|d| d.map(str::to_owned))
    }

    /// The schema with annotations removed, as canonical text: two schemas with the same text
    /// accept the same values and become the same type.
    pub(crate) fn canonical(&self) -> String {
        fn strip(value: &Value) -> Value {
            match value {
                Value::Object(map) => Value::Object(
                    map.iter()
                        .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), strip(v)))
                        .collect(),
                ),
                Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
                other => other.clone(),
            }
        }
        strip(self.value).to_string()
    }
}

/// The targets of every reference in a document: schemas by JSON pointer, and by `$id`.
#[derive(Debug)]
pub(crate) struct References<'a> {
    root: &'a Value,
    ids: HashMap<String, (String, &'a Value)>,
}

impl<'a> References<'a> {
    /// Collects the `$id` of every schema in the document (walking the schema keywords).
    ///
    /// # Errors
    /// When one `$id` names two different schemas.
    pub(crate) fn collect(root: &'a Value) -> Result<References<'a>> {
        let mut refs = References { root, ids: HashMap::new() };
        refs.walk(root, "#".to_string())?;
        Ok(refs)
    }

    fn walk(&mut self, value: &'a Value, path: String) -> Result<()> {
        let Value::Object(map) = value else { return Ok(()) };
        if let Some(Value::String(id)) = map.get("$id") {
            if path != "#" {
                match self.ids.get(id) {
                    Some((_, other)) if *other != value => {
                        return Err(GenError::schema(
                            format!("{path}/$id"),
                            format!("the $id {id:?} already names a different schema"),
                        ))
                    }
                    Some(_) => {}
                    None => {
                        self.ids.insert(id.clone(), (path.clone(), value));
                    }
                }
            }
        }
        for (key, child) in map {
            let at = format!("{path}/{}", escape_pointer(key));
            match key.as_str() {
                "properties" | "patternProperties" | "$defs" | "definitions" => {
                    if let Value::Object(members) = child {
                        for (name, schema) in members {
                            self.walk(schema, format!("{at}/{}", escape_pointer(name)))?;
                        }
                    }
                }
                "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                    if let Value::Array(items) = child {
                        for (i, schema) in items.iter().enumerate() {
                            self.walk(schema, format!("{at}/{i}"))?;
                        }
                    }
                }
                "items" | "additionalProperties" | "not" | "clientMessage" | "serverMessage" => {
                    self.walk(child, at)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The schema a `$ref` value points at, with its pointer: `#` or `#/...` (a JSON pointer
    /// into the document), or a bare `$id`.
    pub(crate) fn resolve(&self, reference: &str, at: &str) -> Result<Node<'a>> {
        if let Some(pointer) = reference.strip_prefix('#') {
            let mut value = self.root;
            for segment in pointer.split('/').skip(1) {
                let segment = unescape_pointer(segment)
                    .ok_or_else(|| GenError::schema(at, format!("malformed JSON pointer {reference:?}")))?;
                value = match value {
                    Value::Object(map) => map.get(&segment),
                    Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
                    _ => None,
                }
                .ok_or_else(|| GenError::schema(at, format!("reference to missing schema {reference:?}")))?;
            }
            return Node::new(value, reference.to_string());
        }
        match self.ids.get(reference) {
            Some((path, value)) => Node::new(value, path.clone()),
            None => Err(GenError::schema(
                at,
                format!("reference to unknown schema {reference:?}: use #/$defs/<name> or the $id of a schema"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_by_pointer_and_by_id() {
        let doc = serde_json::json!({
            "$defs": {"A": {"type": "string"}, "B": {"$id": "Bee", "type": "integer"}},
            "properties": {"x": {"$defs": {"C": {"$id": "Cee", "type": "boolean"}}, "$ref": "Cee"}}
        });
        let refs = References::collect(&doc).unwrap();
        assert_eq!(refs.resolve("#/$defs/A", "#").unwrap().path(), "#/$defs/A");
        assert_eq!(refs.resolve("Bee", "#").unwrap().path(), "#/$defs/B");
        assert_eq!(refs.resolve("Cee", "#").unwrap().path(), "#/properties/x/$defs/C");
        assert!(refs.resolve("#/$defs/Z", "#/p").unwrap_err().to_string().contains("missing schema"));
        assert!(refs.resolve("Zed", "#/p").unwrap_err().to_string().starts_with("#/p: reference to unknown"));
    }

    #[test]
    fn one_id_for_two_schemas_is_refused() {
        let doc =
            serde_json::json!({"$defs": {"A": {"$id": "X", "type": "string"}, "B": {"$id": "X", "type": "integer"}}});
        let err = References::collect(&doc).unwrap_err();
        assert_eq!(err.path(), Some("#/$defs/B/$id"));
    }
}
