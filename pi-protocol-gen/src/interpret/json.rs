//! The JSON a decode builds: texts borrowed from the payload, objects as lists of entries in
//! their output order, and opaque payloads kept as their CBOR bytes (a slice of the payload),
//! so that serializing a message streams each payload from the wire instead of building a
//! `serde_json::Value` for it.

use pi_protocol_runtime::serde_impls::CborJson;
use pi_protocol_runtime::{CborLimits, Decode, Payload, Reader};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// One decoded value.
#[derive(Debug, Clone)]
pub(crate) enum Json<'de> {
    /// A number, boolean, null, literal or (outside streaming decodes) payload.
    Value(Value),
    /// A text string of the payload.
    Text(&'de str),
    /// An array, in wire order.
    Array(Vec<Json<'de>>),
    /// An object: a struct's keys in canonical order, a record's in wire order.
    Object(Vec<(&'de str, Json<'de>)>),
    /// An opaque payload: its validated, strict-JSON CBOR item.
    Payload(&'de [u8]),
}

impl<'de> Json<'de> {
    /// `null`.
    pub(crate) const NULL: Json<'static> = Json::Value(Value::Null);

    /// The value as a `serde_json::Value`.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Json::Value(value) => value,
            Json::Text(text) => Value::String(text.to_owned()),
            Json::Array(items) => Value::Array(items.into_iter().map(Json::into_value).collect()),
            Json::Object(entries) => {
                let mut map = Map::with_capacity(entries.len());
                for (key, value) in entries {
                    map.insert(key.to_owned(), value.into_value());
                }
                Value::Object(map)
            }
            Json::Payload(cbor) => {
                let mut reader = Reader::new(cbor, CborLimits::widest());
                // Validated when it was decoded, so reading cannot fail.
                Payload::decode(&mut reader).map_or(Value::Null, |payload| payload.to_value())
            }
        }
    }
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Value(value) => value.serialize(serializer),
            Json::Text(text) => serializer.serialize_str(text),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
            Json::Payload(cbor) => CborJson::new(cbor).serialize(serializer),
        }
    }
}
