//! What `inspect` and `stats` say about one valid frame, computed from the schema's model and
//! the frame's bytes alone: the message type (its tags, `response ok=false`), the id it
//! carries, and every opaque payload with its size on the wire.
//!
//! The payload is read again after it was validated (by the built-in types or the schema
//! interpreter), without building a value tree: a 16 MiB `call` costs a walk, not memory.

use pi_protocol::runtime::{CborLimits, Reader, Scalar};
use pi_protocol_gen::model::{LiteralValue, Model, Side};

use crate::resolve::{self, Fit, MapView, Resolved};

/// Deepest nesting of objects followed to find payloads (a recursive schema may nest deeper;
/// payloads below are not listed).
const MAX_NESTING: usize = 32;

/// A valid frame, summarised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The message type's name (see [`Resolved::name`]).
    pub kind: String,
    /// The first top-level text field whose key is `id` or ends in `Id`: (key, value).
    pub id: Option<(String, String)>,
    /// Every opaque payload (`{}`) present, reached through objects, in schema order: its key
    /// path (`call`, `data.blob`) and its size in bytes of CBOR.
    pub payloads: Vec<(String, usize)>,
}

impl Summary {
    /// The summary on one line: `response ok=true  id "req-1"  result 92 bytes`.
    pub fn label(&self) -> String {
        let mut line = self.kind.clone();
        if let Some((key, id)) = &self.id {
            line.push_str(&format!("  {key} {}", quoted(id)));
        }
        for (path, size) in &self.payloads {
            line.push_str(&format!("  {path} {}", bytes(*size)));
        }
        line
    }
}

/// `1 byte`, `92 bytes`.
pub fn bytes(count: usize) -> String {
    if count == 1 {
        "1 byte".to_owned()
    } else {
        format!("{count} bytes")
    }
}

/// `text` as a JSON string: an id read from the wire may hold spaces, quotes or control
/// characters, and must not break the line it is printed on.
pub fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// Summarises `payload`, a valid message `side` sends under `model`.
///
/// A message that does not resolve (not possible for a payload the same schema validated) is
/// named after the side's message type and lists nothing.
pub fn summarise(model: &Model, side: Side, payload: &[u8]) -> Summary {
    let root = model.message_type(side);
    let fallback = || Summary {
        kind: root.map_or_else(|| "message".to_owned(), |d| d.rust_name.clone()),
        id: None,
        payloads: Vec::new(),
    };
    let (Some(root), Some(map)) = (root, WireMap::read(payload)) else {
        return fallback();
    };
    let Some(resolved) = resolve::resolve(model, root, &map, Fit::Exact) else {
        return fallback();
    };
    let id = resolved
        .fields
        .fields()
        .filter(|f| f.key == "id" || f.key.ends_with("Id"))
        .filter(|f| resolve::is_text(model, &f.shape))
        .find_map(|f| match map.get(&f.key) {
            Some(WireEntry { value: Scalar::Text(text), .. }) => Some((f.key.clone(), (*text).to_owned())),
            _ => None,
        });
    let mut payloads = Vec::new();
    collect_payloads(model, &resolved, &map, payload, "", 0, &mut payloads);
    Summary { kind: resolved.name(), id, payloads }
}

/// Adds the payloads of the struct `resolved` (whose entries are `map`, read from `item`) under
/// `prefix`, and those of the objects it holds.
fn collect_payloads(
    model: &Model,
    resolved: &Resolved<'_>,
    map: &WireMap<'_>,
    item: &[u8],
    prefix: &str,
    depth: usize,
    out: &mut Vec<(String, usize)>,
) {
    for field in resolved.fields.fields() {
        let Some(entry) = map.get(&field.key) else { continue };
        let path = format!("{prefix}{}", field.key);
        if resolve::is_payload(&field.shape) {
            out.push((path, entry.end - entry.start));
            continue;
        }
        if depth >= MAX_NESTING || !matches!(entry.value, Scalar::Other) {
            continue;
        }
        let Some(def) = resolve::named(model, &field.shape) else { continue };
        let nested_item = &item[entry.start..entry.end];
        if let Some(nested) = WireMap::read(nested_item) {
            if let Some(inner) = resolve::resolve(model, def, &nested, Fit::Exact) {
                collect_payloads(model, &inner, &nested, nested_item, &format!("{path}."), depth + 1, out);
            }
        }
    }
}

/// One entry of a map read from the wire: the key, the value when it is a scalar, and the
/// value's byte span within the map's item.
#[derive(Debug)]
struct WireEntry<'p> {
    key: &'p str,
    value: Scalar<'p>,
    start: usize,
    end: usize,
}

/// The entries of a CBOR map, read from a payload that was already validated.
struct WireMap<'p> {
    entries: Vec<WireEntry<'p>>,
}

impl<'p> WireMap<'p> {
    /// The entries of the map `item` is, or `None` when it is no map.
    fn read(item: &'p [u8]) -> Option<WireMap<'p>> {
        // The bytes were validated under the run's limits, which are at most the widest.
        let mut reader = Reader::new(item, CborLimits::widest());
        let count = reader.enter_map().ok()?;
        let mut entries = Vec::with_capacity(count.min(64));
        for _ in 0..count {
            let key = reader.read_key().ok()?;
            let start = reader.position();
            let value = reader.read_scalar().ok()?;
            entries.push(WireEntry { key, value, start, end: reader.position() });
        }
        Some(WireMap { entries })
    }

    fn get(&self, key: &str) -> Option<&WireEntry<'p>> {
        self.entries.iter().find(|e| e.key == key)
    }
}

impl MapView for WireMap<'_> {
    fn has_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    fn keys(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.key).collect()
    }

    fn holds(&self, key: &str, literal: &LiteralValue) -> bool {
        let Some(entry) = self.get(key) else { return false };
        match literal {
            LiteralValue::String(s) => entry.value.is_text(s),
            LiteralValue::Bool(b) => entry.value.is_bool(*b),
            LiteralValue::Number(n) => entry.value.is_number(*n),
            LiteralValue::Null => matches!(entry.value, Scalar::Null),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cbor(value: serde_json::Value) -> Vec<u8> {
        pi_protocol::Payload::from_value(&value).unwrap().as_cbor().to_vec()
    }

    #[test]
    fn names_ids_and_payloads_come_from_the_model() {
        let model = Model::from_json(pi_protocol::SCHEMA_JSON, "v8").unwrap();
        let request = cbor(json!({"type": "request", "id": "r-1",
            "target": {"serverId": "3b241101-e2bb-4255-8caf-4136c566a962"}, "call": [1, 2, 3]}));
        let summary = summarise(&model, Side::Client, &request);
        assert_eq!(summary.kind, "request");
        assert_eq!(summary.id, Some(("id".to_owned(), "r-1".to_owned())));
        assert_eq!(summary.payloads, vec![("call".to_owned(), 4)]);
        let update = cbor(json!({"type": "service_update", "subscriptionId": "s", "update": null}));
        let summary = summarise(&model, Side::Server, &update);
        assert_eq!((summary.kind.as_str(), summary.id.unwrap().0.as_str()), ("service_update", "subscriptionId"));
        assert_eq!(summary.payloads, vec![("update".to_owned(), 1)]);
        let ok = cbor(json!({"type": "response", "id": "r", "ok": true}));
        assert_eq!(summarise(&model, Side::Server, &ok).kind, "response ok=true");
        assert!(summarise(&model, Side::Server, &ok).payloads.is_empty());
        let summary = summarise(&model, Side::Client, &request);
        assert_eq!(summary.label(), r#"request  id "r-1"  call 4 bytes"#);
    }

    #[test]
    fn payloads_inside_objects_are_found_with_their_path() {
        let schema = json!({ "$defs": {
            "Inner": { "type": "object", "properties": { "blob": {}, "n": { "type": "integer" } },
                       "required": ["blob"], "additionalProperties": false },
            "ClientMessage": { "type": "object",
                "properties": { "type": { "const": "put" }, "key": { "type": "string" },
                                "data": { "$ref": "#/$defs/Inner" }, "meta": {} },
                "required": ["type", "data"], "additionalProperties": false }
        } });
        let model = Model::from_value(&schema).unwrap();
        let message = cbor(json!({"type": "put", "data": {"n": 1, "blob": "abc"}, "meta": {}}));
        let summary = summarise(&model, Side::Client, &message);
        assert_eq!(summary.kind, "ClientMessage");
        assert_eq!(summary.id, None, "`key` is neither `id` nor `...Id`");
        assert_eq!(summary.payloads, vec![("data.blob".to_owned(), 4), ("meta".to_owned(), 1)]);
    }
}
