//! Every `x-` keyword the generator understands, in one place.
//!
//! JSON Schema has no words for protocol facts or Rust names, so the schema carries them as
//! extension keywords, each allowed at one kind of location:
//!
//! | keyword              | where                         | meaning                                        |
//! |----------------------|-------------------------------|------------------------------------------------|
//! | `x-protocol-version` | schema root                   | the protocol version (`PROTOCOL_VERSION`)      |
//! | `x-limits`           | schema root                   | default decoder limits, name -> integer        |
//! | `x-client-message`   | schema root                   | `$ref` of the client message type              |
//! | `x-server-message`   | schema root                   | `$ref` of the server message type              |
//! | `x-rust-name`        | any schema below the root     | Rust type name (of the type the schema becomes)|
//! |                      | a property                    | Rust field name                                |
//! | `x-rust-variant`     | a member of `anyOf`/`oneOf`   | Rust variant name                              |
//!
//! Without `x-rust-name` a type is named by its `$defs` key, or after the place where its
//! schema was found (the `cost` property of `Usage` makes `UsageCost`), and a field by its key
//! in snake_case (`serverId` -> `server_id`). Without `x-rust-variant` a variant of a union
//! told apart by string tags is named after its tag values in UpperCamelCase (`hello_error` ->
//! `HelloError`), any other variant after the type it wraps. Without `x-client-message` and
//! `x-server-message` the message types are the definitions named `ClientMessage` and
//! `ServerMessage`. Any other `x-` keyword, or one in the wrong place, is an error.
//!
//! Two halves: [`keywords`] holds the table of keywords and where each may appear, which
//! [`Node::allow`] consults for every `x-` key while reading the document (it needs no schema
//! node, so the reading layer depends on it and not on this module); the functions here read
//! the keywords' values from schema nodes.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{GenError, Result};
use crate::pointer::escape_pointer;
use crate::schema::Node;

pub(crate) mod keywords;

pub(crate) use keywords::Location;

/// The limit names `x-limits` may set (docs/PROTOCOL.md sections 1 and 2).
pub const LIMIT_NAMES: &[&str] = &[
    "maxFrameLength",
    "maxByteLength",
    "maxContainerLength",
    "maxDepth",
    "maxConfigurableDepth",
    "maxConfigurableLength",
];

/// The `$defs` key an `x-client-message` / `x-server-message` keyword of the root names.
pub(crate) fn message_type(root: &Node<'_>, keyword: &str) -> Result<Option<String>> {
    let Some(reference) = root.str(keyword)? else { return Ok(None) };
    reference
        .strip_prefix("#/$defs/")
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .map(|name| Some(name.to_owned()))
        .ok_or_else(|| GenError::schema(root.at(keyword), "must be a reference of the form #/$defs/<name>"))
}

/// The protocol version under `keyword` of the root: a non-negative integer that fits `u32`.
pub(crate) fn protocol_version(root: &Node<'_>, keyword: &str) -> Result<Option<u32>> {
    let Some(value) = root.get(keyword) else { return Ok(None) };
    value
        .as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .map(Some)
        .ok_or_else(|| GenError::schema(root.at(keyword), "must be an integer in 0..=4294967295"))
}

/// The limits under `keyword` of the root: an object mapping names from [`LIMIT_NAMES`] to
/// non-negative integers.
pub(crate) fn limits(root: &Node<'_>, keyword: &str) -> Result<BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    let Some(value) = root.get(keyword) else { return Ok(out) };
    let path = root.at(keyword);
    let Value::Object(map) = value else {
        return Err(GenError::schema(path, "must be an object of limit name -> integer"));
    };
    for (name, value) in map {
        let at = format!("{path}/{}", escape_pointer(name));
        if !LIMIT_NAMES.contains(&name.as_str()) {
            return Err(GenError::schema(at, "unknown limit"));
        }
        let n = value.as_u64().ok_or_else(|| GenError::schema(at, "must be a non-negative integer"))?;
        out.insert(name.clone(), n);
    }
    Ok(out)
}

/// The Rust name of the type defined by `def` under `$defs` key `schema_name`.
pub(crate) fn type_name(def: &Node<'_>, schema_name: &str) -> Result<String> {
    match def.str("x-rust-name")? {
        Some(name) => check_ident(name, def.at("x-rust-name")),
        None => check_ident(schema_name, def.path().to_string()).map_err(|_| {
            GenError::schema(def.path(), "the definition's name is not a Rust identifier; set x-rust-name")
        }),
    }
}

/// The Rust name of the field stored under wire key `key`, described by `property`.
pub(crate) fn field_name(property: &Node<'_>, key: &str) -> Result<String> {
    if let Some(name) = property.str("x-rust-name")? {
        return check_ident(name, property.at("x-rust-name"));
    }
    let snake = to_snake_case(key);
    check_ident(&snake, String::new())
        .or_else(|_| check_ident(&format!("{snake}_"), String::new()))
        .map_err(|_| GenError::schema(property.path(), "the key gives no Rust field name; set x-rust-name"))
}

/// The `x-rust-variant` of a union member, if given.
pub(crate) fn variant_name(member: &Node<'_>) -> Result<Option<String>> {
    match member.str("x-rust-variant")? {
        Some(name) => check_ident(name, member.at("x-rust-variant")).map(Some),
        None => Ok(None),
    }
}

/// The UpperCamelCase form of a key or value (`cacheRead` -> `CacheRead`, `item_started` ->
/// `ItemStarted`, `set-model` -> `SetModel`), keeping only ASCII letters and digits; `None`
/// when that is not an identifier (empty, or starting with a digit).
pub(crate) fn to_upper_camel(text: &str) -> Option<String> {
    let mut out = String::new();
    for word in text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    check_ident(&out, String::new()).ok()
}

/// The Rust name `x-rust-name` gives the type made from `node`, if any.
pub(crate) fn rust_name(node: &Node<'_>) -> Result<Option<String>> {
    match node.str("x-rust-name")? {
        Some(name) => check_ident(name, node.at("x-rust-name")).map(Some),
        None => Ok(None),
    }
}

/// `serverId` -> `server_id`, `HTTPServer` -> `http_server`, `a-b` -> `a_b`.
pub(crate) fn to_snake_case(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    let mut out = String::with_capacity(key.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.is_some_and(char::is_lowercase),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else if c == '-' || c == ' ' || c == '.' {
            out.push('_');
        } else {
            out.push(c);
        }
    }
    out
}

/// `name` if it is a plain Rust identifier (not a keyword, not raw), else an error at `path`.
pub(crate) fn check_ident(name: &str, path: String) -> Result<String> {
    match syn::parse_str::<syn::Ident>(name) {
        Ok(ident) if ident == name && !name.starts_with("r#") => Ok(name.to_string()),
        _ => Err(GenError::schema(path, format!("{name:?} is not a Rust identifier"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_of_wire_keys() {
        assert_eq!(to_snake_case("serverId"), "server_id");
        assert_eq!(to_snake_case("subscriptionId"), "subscription_id");
        assert_eq!(to_snake_case("HTTPServer"), "http_server");
        assert_eq!(to_snake_case("id"), "id");
        assert_eq!(to_snake_case("max-depth"), "max_depth");
        assert_eq!(to_snake_case("v2Id"), "v2_id");
    }

    #[test]
    fn upper_camel_names_from_keys_and_tags() {
        assert_eq!(to_upper_camel("hello_error").as_deref(), Some("HelloError"));
        assert_eq!(to_upper_camel("service_update").as_deref(), Some("ServiceUpdate"));
        assert_eq!(to_upper_camel("cacheRead").as_deref(), Some("CacheRead"));
        assert_eq!(to_upper_camel("set-model").as_deref(), Some("SetModel"));
        assert_eq!(to_upper_camel("9x"), None);
        assert_eq!(to_upper_camel(""), None);
    }

    #[test]
    fn identifiers_are_checked() {
        assert!(check_ident("server_id", String::new()).is_ok());
        assert!(check_ident("type", String::new()).is_err());
        assert!(check_ident("r#type", String::new()).is_err());
        assert!(check_ident("a b", String::new()).is_err());
    }
}
