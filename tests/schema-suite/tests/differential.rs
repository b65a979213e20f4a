//! The generated codecs against an independent validator, the `jsonschema` crate, on every
//! schema of the suite.
//!
//! For each schema and side, random valid messages are drawn from the schema's model
//! (`pi_protocol_gen::sample`, keys in schema or shuffled order), and each is mutated a few
//! times (keys dropped or added, literals changed, values retyped, bounds overstepped, integral
//! numbers written as floats, strings replaced by ones where validators part ways). For every
//! instance:
//! - the generated strict decoder accepts its CBOR encoding exactly when the oracle accepts the
//!   JSON;
//! - an accepted message renders back to the same JSON (numbers compared by value: `3.0` is
//!   the integer `3`), and its canonical re-encoding decodes to the same message and re-encodes
//!   to the same bytes;
//! - every drawn "valid" message is valid for `jsonschema` (the sampler is checked too).
//!
//! Cases per schema and side: `PI_SCHEMA_CASES` (default 600: about 24,000 instances in all,
//! mutations included). The seed is `PI_SCHEMA_SEED` (default fixed); a failure prints the
//! seed, the instance and both verdicts.
//!
//! Where the codecs follow the reference rather than the JSON Schema standard
//! (`pi-protocol-gen/SCHEMA.md`, "Where the reference wins" and "Where this implementation is
//! stricter"), the oracle is told so:
//! - records: a `patternProperties` without `additionalProperties` takes any key but the codecs
//!   check every value against the pattern's schema, so the oracle's copy of the schema says
//!   `additionalProperties: <that schema>` there;
//! - string lengths: the reference counts a character with its combining marks, variation
//!   selectors and joined characters, and a flag, once; the standard counts code points. Valid
//!   draws never hold such strings, mutations do. An instance holding one (as a value or a key)
//!   is judged by a second oracle, the same schema with `minLength`/`maxLength` replaced by
//!   custom keywords that count as the reference does (`pi_protocol::runtime::checks::
//!   text_length`, itself checked against the reference's verdicts in
//!   `tests/reference_verdicts.rs` and the runtime's tests); every other instance by the
//!   standard oracle. The tally shows how many instances took the second oracle and how many of
//!   them the standard count would have judged otherwise.

use jsonschema::{Keyword, ValidationError, Validator};
use pi_protocol::runtime::checks::text_length;
use pi_protocol::runtime::wire_json::{to_json, wire_cbor};
use pi_protocol::runtime::{decode_message, CborLimits, Decode, Encode, Payload, ProtocolError};
use pi_protocol_gen::model::Side;
use pi_protocol_gen::sample::{KeyOrder, Sampler};
use pi_protocol_gen::Model;
use pi_protocol_schema_suite::{for_each_schema, Schema, Visitor};
use serde_json::{json, Value};

fn cases_per_side() -> u64 {
    std::env::var("PI_SCHEMA_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(600)
}

fn base_seed() -> u64 {
    std::env::var("PI_SCHEMA_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_2026)
}

/// What decoding a frame payload with generated types gives: the message as wire JSON and its
/// canonical re-encoding.
type Decoded = Result<(Value, Vec<u8>), ProtocolError>;

/// Decodes `payload` as a `T` with the default limits, then renders and re-encodes it.
fn decode<T: for<'de> Decode<'de> + Encode>(payload: &[u8]) -> Decoded {
    let message: T = decode_message(payload, CborLimits::default())?;
    Ok((to_json(&message), wire_cbor(&message)))
}

/// The schema `jsonschema` validates messages of `side` with.
fn oracle_schema(text: &str, side: Side) -> Value {
    let mut document: Value = serde_json::from_str(text).expect("test schemas are JSON");
    close_records(&mut document);
    if let Some(root) = document.get(match side {
        Side::Client => "clientMessage",
        Side::Server => "serverMessage",
    }) {
        return root.clone();
    }
    let name = match side {
        Side::Client => "ClientMessage",
        Side::Server => "ServerMessage",
    };
    let object = document.as_object_mut().expect("a schema object");
    object.insert("$ref".into(), json!(format!("#/$defs/{name}")));
    document
}

/// Adds `additionalProperties: <the pattern's schema>` next to every `patternProperties` that
/// has no `additionalProperties`: keys outside the pattern are taken, their values checked
/// against the same schema.
fn close_records(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if !map.contains_key("additionalProperties") {
                let values =
                    map.get("patternProperties").and_then(Value::as_object).and_then(|p| p.values().next()).cloned();
                if let Some(values) = values {
                    map.insert("additionalProperties".into(), values);
                }
            }
            map.values_mut().for_each(close_records);
        }
        Value::Array(items) => items.iter_mut().for_each(close_records),
        _ => {}
    }
}

/// The custom keywords standing for `minLength` and `maxLength` in the second oracle.
const REFERENCE_LENGTHS: [(&str, &str); 2] =
    [("minLength", "x-reference-min-length"), ("maxLength", "x-reference-max-length")];

/// Renames the length keywords (a number under `minLength` or `maxLength`: a property named so
/// would hold a schema object) to the custom keywords counting as the reference does.
fn count_as_the_reference(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (standard, custom) in REFERENCE_LENGTHS {
                if map.get(standard).is_some_and(Value::is_u64) {
                    let bound = map.shift_remove(standard).expect("present");
                    map.insert(custom.into(), bound);
                }
            }
            map.values_mut().for_each(count_as_the_reference);
        }
        Value::Array(items) => items.iter_mut().for_each(count_as_the_reference),
        _ => {}
    }
}

/// A string length bound counted as the reference counts (`text_length`).
struct ReferenceLength {
    bound: u64,
    at_least: bool,
}

impl<'i> Keyword<'i> for ReferenceLength {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            Err(ValidationError::custom(format!("length beyond {} as the reference counts it", self.bound)))
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        instance.as_str().is_none_or(|text| {
            let length = text_length(text) as u64;
            if self.at_least {
                length >= self.bound
            } else {
                length <= self.bound
            }
        })
    }
}

/// Whether `value` holds a string (value or key) whose length the reference and the JSON
/// Schema standard count differently.
fn counted_apart(value: &Value) -> bool {
    let apart = |text: &str| text_length(text) != text.chars().count();
    match value {
        Value::String(text) => apart(text),
        Value::Array(items) => items.iter().any(counted_apart),
        Value::Object(map) => map.iter().any(|(key, value)| apart(key) || counted_apart(value)),
        _ => false,
    }
}

/// Whether two JSON values are the same, numbers compared by value.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// The two oracles of one side of a schema.
struct Oracle {
    standard: Validator,
    reference_lengths: Validator,
}

impl Oracle {
    fn new(name: &str, text: &str, side: Side) -> Oracle {
        let schema = oracle_schema(text, side);
        let build = |schema: &Value| {
            let mut options = jsonschema::options().with_draft(jsonschema::Draft::Draft202012);
            for (at_least, (_, custom)) in [true, false].into_iter().zip(REFERENCE_LENGTHS) {
                options = options.with_keyword(custom, move |_, bound: &Value, _| {
                    let bound = bound.as_u64().ok_or_else(|| ValidationError::custom("a length bound"))?;
                    Ok(Box::new(ReferenceLength { bound, at_least }))
                });
            }
            options.build(schema).unwrap_or_else(|e| panic!("{name}: the oracle cannot read the schema: {e}"))
        };
        let mut counted = schema.clone();
        count_as_the_reference(&mut counted);
        Oracle { standard: build(&schema), reference_lengths: build(&counted) }
    }
}

#[derive(Default)]
struct Tally {
    instances: u64,
    accepted: u64,
    refused: u64,
    /// Instances judged by the oracle counting lengths as the reference does.
    counted_apart: u64,
    /// Of those, the ones the standard count judges otherwise.
    standard_differs: u64,
}

struct Differential {
    cases: u64,
    seed: u64,
    schemas: usize,
}

impl Visitor for Differential {
    fn visit<S: Schema>(&mut self) {
        let model = Model::from_json(S::TEXT, S::NAME).expect("test schemas generate");
        let mut tally = Tally::default();
        for side in Side::BOTH {
            let decode = match side {
                Side::Client => decode::<S::ClientMessage>,
                Side::Server => decode::<S::ServerMessage>,
            };
            self.check(S::NAME, S::TEXT, &model, side, decode, &mut tally);
        }
        eprintln!(
            "{}: {} instances, {} accepted, {} refused, no disagreement; {} with strings counted apart \
             (the standard count judges {} of them otherwise)",
            S::NAME,
            tally.instances,
            tally.accepted,
            tally.refused,
            tally.counted_apart,
            tally.standard_differs
        );
        assert!(tally.accepted > 0 && tally.refused > 0, "{}: both verdicts must occur", S::NAME);
        assert!(tally.counted_apart > 0, "{}: no mutation put in a string counted apart", S::NAME);
        self.schemas += 1;
    }
}

impl Differential {
    fn check(&self, name: &str, text: &str, model: &Model, side: Side, decode: fn(&[u8]) -> Decoded, t: &mut Tally) {
        let oracle = Oracle::new(name, text, side);
        let root = model.message_type(side).expect("every test schema has both sides").rust_name.clone();
        for i in 0..self.cases {
            let seed = self.seed.wrapping_add(i);
            let mut sampler = Sampler::new(model, seed).key_order(KeyOrder::Mixed);
            let Some(valid) = sampler.message(side) else { continue };
            assert!(
                oracle.standard.is_valid(&valid),
                "{name} {}: seed {seed}: the sampler drew an invalid message: {valid}\n{:?}",
                side.as_str(),
                oracle.standard.iter_errors(&valid).map(|e| e.to_string()).collect::<Vec<_>>()
            );
            let mut instances = vec![valid.clone()];
            let mut mutated = valid;
            for _ in 0..3 {
                mutated = sampler.mutate(&root, &mutated);
                instances.push(mutated.clone());
            }
            for instance in instances {
                let Ok(cbor) = Payload::from_value(&instance) else { continue };
                t.instances += 1;
                let expected = if counted_apart(&instance) {
                    t.counted_apart += 1;
                    let expected = oracle.reference_lengths.is_valid(&instance);
                    t.standard_differs += u64::from(expected != oracle.standard.is_valid(&instance));
                    expected
                } else {
                    oracle.standard.is_valid(&instance)
                };
                let got = decode(cbor.as_cbor());
                assert_eq!(
                    got.is_ok(),
                    expected,
                    "{name} {}: seed {seed}: the oracle says {expected}, the generated decoder says {:?} for {instance}",
                    side.as_str(),
                    got.as_ref().map(|_| "ok").map_err(ToString::to_string),
                );
                match got {
                    Ok((rendered, canonical)) => {
                        t.accepted += 1;
                        assert!(same_json(&rendered, &instance), "{name}: rendering changes {instance} to {rendered}");
                        let (again, bytes) = decode(&canonical).expect("the canonical encoding decodes");
                        assert!(same_json(&again, &instance), "{name}: the canonical encoding is another message");
                        assert_eq!(bytes, canonical, "{name}: re-encoding is not a fixpoint");
                    }
                    Err(_) => t.refused += 1,
                }
            }
        }
    }
}

#[test]
fn generated_codecs_agree_with_jsonschema() {
    let mut differential = Differential { cases: cases_per_side(), seed: base_seed(), schemas: 0 };
    for_each_schema(&mut differential);
    assert_eq!(differential.schemas, pi_protocol_schema_suite::SCHEMA_COUNT, "every schema of the suite");
}

/// The second oracle differs from the first exactly in how it counts lengths.
#[test]
fn the_reference_length_oracle_counts_clusters() {
    let text = r#"{"$defs": {"ClientMessage": {"type": "string", "minLength": 2, "maxLength": 3}}}"#;
    let oracle = Oracle::new("lengths", text, Side::Client);
    let cases = [
        ("ab", true, true),
        ("a", false, false),
        ("abcd", false, false),
        // Three characters for the reference, four code points.
        ("e\u{301}bc", true, false),
        // One character for the reference (a flag), two code points.
        ("\u{1F1EB}\u{1F1F7}", false, true),
    ];
    for (text, reference, standard) in cases {
        let value = json!(text);
        assert_eq!(oracle.reference_lengths.is_valid(&value), reference, "{text:?}");
        assert_eq!(oracle.standard.is_valid(&value), standard, "{text:?}");
        assert_eq!(counted_apart(&value), !text.is_ascii(), "{text:?}");
    }
}
