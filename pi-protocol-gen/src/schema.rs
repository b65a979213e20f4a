//! Reading the schema document: JSON objects with their JSON pointers, and the keyword profile.
//!
//! This layer knows JSON Schema's vocabulary but not Rust: it hands [`crate::convert`] the
//! root and the `$defs` members as [`Node`]s, each carrying the pointer of where it sits, and
//! it rejects every keyword outside the profile the generator supports.

use serde_json::{Map, Value};

use crate::error::{GenError, Result};
use crate::x_rust::{self, Location};

/// The JSON Schema keywords the generator understands, wherever they may appear.
const PROFILE: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "$comment",
    "title",
    "description",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "const",
    "minLength",
    "pattern",
    "minimum",
    "anyOf",
    "$ref",
];

/// Keywords that only annotate and may appear on every schema object.
pub(crate) const ANNOTATIONS: &[&str] = &["description", "$comment"];

/// The prefix of a reference to a definition.
pub(crate) const DEFS_PREFIX: &str = "#/$defs/";

/// Escapes one JSON pointer segment (RFC 6901: `~` -> `~0`, `/` -> `~1`).
pub fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Undoes [`escape_pointer`]; `None` for a malformed escape.
fn unescape_pointer(segment: &str) -> Option<String> {
    let mut out = String::with_capacity(segment.len());
    let mut chars = segment.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// A schema object and the JSON pointer where it sits.
#[derive(Debug, Clone)]
pub(crate) struct Node<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

impl<'a> Node<'a> {
    /// The object at `path`, or an error if `value` is not an object.
    pub(crate) fn new(value: &'a Value, path: String) -> Result<Node<'a>> {
        match value {
            Value::Object(map) => Ok(Node { map, path }),
            _ => Err(GenError::schema(path, "a schema must be a JSON object")),
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
        self.map.get(key)
    }

    /// Whether keyword `key` is present.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// The keywords present, in file order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &'a str> {
        self.map.keys().map(String::as_str)
    }

    /// Whether the object holds nothing but annotations and `x-` keywords (`{}`: any JSON).
    pub(crate) fn is_unconstrained(&self) -> bool {
        self.keys().all(|k| ANNOTATIONS.contains(&k) || x_rust::is_extension(k))
    }

    /// Fails on the first keyword that is not in `allowed` (annotations are always allowed),
    /// and on `x-` keywords not supported at `location`.
    pub(crate) fn allow(&self, allowed: &[&str], location: Location, what: &str) -> Result<()> {
        for key in self.keys() {
            if x_rust::is_extension(key) {
                x_rust::check_allowed(self, key, location)?;
            } else if !allowed.contains(&key) && !ANNOTATIONS.contains(&key) {
                let message = if PROFILE.contains(&key) {
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

    /// The `$defs` name a `$ref` value points at (`#/$defs/Name` -> `Name`).
    pub(crate) fn ref_target(&self) -> Result<Option<String>> {
        let Some(target) = self.str("$ref")? else { return Ok(None) };
        let name = target
            .strip_prefix(DEFS_PREFIX)
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .and_then(unescape_pointer)
            .ok_or_else(|| {
                GenError::schema(self.at("$ref"), "only references of the form #/$defs/<name> are supported")
            })?;
        Ok(Some(name))
    }
}

/// The parsed top level of a schema document.
#[derive(Debug)]
pub(crate) struct Document<'a> {
    /// The root object.
    pub root: Node<'a>,
    /// The `$defs` members, in file order: name, pointer.
    pub defs: Vec<(&'a str, String, &'a Value)>,
}

impl<'a> Document<'a> {
    /// Checks the root's keywords and lists its definitions.
    pub(crate) fn read(value: &'a Value) -> Result<Document<'a>> {
        let root = Node::new(value, "#".to_string())?;
        root.allow(&["$schema", "$id", "$defs", "title"], Location::Root, "the schema root")?;
        root.str("$schema")?;
        root.str("$id")?;
        root.str("title")?;
        let defs = match root.get("$defs") {
            None => Vec::new(),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(name, value)| (name.as_str(), format!("{DEFS_PREFIX}{}", escape_pointer(name)), value))
                .collect(),
            Some(_) => return Err(GenError::schema("#/$defs", "must be an object of named schemas")),
        };
        Ok(Document { root, defs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_segments_round_trip() {
        assert_eq!(escape_pointer("a/b~c"), "a~1b~0c");
        assert_eq!(unescape_pointer("a~1b~0c").as_deref(), Some("a/b~c"));
        assert_eq!(unescape_pointer("a~2"), None);
    }
}
