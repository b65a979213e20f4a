//! Helpers shared by the conformance tests: hex, the vectors file, and the "canonical" form the
//! vectors use to compare decoded values (keys sorted by UTF-16 code unit, then held the way a
//! JavaScript object holds them).

#![allow(dead_code)]

pub mod checks;

use pi_protocol::runtime::json::to_javascript_key_order;
use pi_protocol::{encode_cbor, CborLimits, CborValue, Payload};
use serde_json::{Map, Value};

/// Reads a file of the repository.
pub fn repo_file(path: &str) -> Vec<u8> {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("cannot read {full}: {e}"))
}

/// Every case of a vectors file under `tests/vectors/` (same shape as the reference's
/// `vectors.jsonl`).
pub fn vectors_in(name: &str) -> Vec<Value> {
    let text = String::from_utf8(repo_file(&format!("tests/vectors/{name}"))).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Every case of `tests/vectors/vectors.jsonl`, recorded from the reference.
pub fn vectors() -> Vec<Value> {
    vectors_in("vectors.jsonl")
}

pub fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap_or_else(|e| panic!("bad hex in vector: {e}"))
}

fn utf16_key(k: &str) -> Vec<u16> {
    k.encode_utf16().collect()
}

/// Sorts every object's keys by UTF-16 code unit, then applies JavaScript property order.
pub fn canonical_json(value: &Value) -> Value {
    let mut v = sort_keys(value);
    to_javascript_key_order(&mut v);
    v
}

fn sort_keys(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(sort_keys).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by_key(|(k, _)| utf16_key(k));
            let mut out = Map::new();
            for (k, v) in entries {
                out.insert(k.clone(), sort_keys(v));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// The canonical CBOR (hex) of a JSON value.
pub fn canonical_hex_of_json(value: &Value) -> String {
    hex::encode(Payload::from_value(&canonical_json(value)).expect("encodable").as_cbor())
}

/// The canonical CBOR (hex) of a raw CBOR value (byte strings allowed).
pub fn canonical_hex_of_cbor(value: &CborValue) -> String {
    hex::encode(encode_cbor(&sort_cbor(value), CborLimits::widest()).expect("encodable"))
}

fn sort_cbor(value: &CborValue) -> CborValue {
    match value {
        CborValue::Array(items) => CborValue::Array(items.iter().map(sort_cbor).collect()),
        CborValue::Map(entries) => {
            let mut entries: Vec<(String, CborValue)> =
                entries.iter().map(|(k, v)| (k.clone(), sort_cbor(v))).collect();
            entries.sort_by_key(|(k, _)| utf16_key(k));
            // JavaScript property order: array-index keys first, ascending (stable sort keeps the rest).
            entries.sort_by_key(|(k, _)| {
                if pi_protocol::runtime::json::is_array_index(k) {
                    (0, k.parse::<u64>().unwrap())
                } else {
                    (1, 0)
                }
            });
            CborValue::Map(entries)
        }
        other => other.clone(),
    }
}
