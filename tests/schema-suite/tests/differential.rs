//! The generated codecs against an independent validator, the `jsonschema` crate, on every
//! committed test schema.
//!
//! For each schema and side, random valid messages are drawn from the schema's model
//! (`pi_protocol_gen::sample`), and each is mutated a few times (keys dropped or added,
//! literals changed, values retyped, bounds overstepped, nesting changed). For every instance:
//! - the generated strict decoder accepts its CBOR encoding exactly when `jsonschema` accepts
//!   the JSON;
//! - an accepted message renders back to the same JSON, and its canonical re-encoding decodes
//!   to the same message and re-encodes to the same bytes;
//! - every drawn "valid" message is valid for `jsonschema` (the sampler is checked too).
//!
//! Cases per schema and side: `PI_SCHEMA_CASES` (default 600: a few thousand instances in all,
//! mutations included). The seed is `PI_SCHEMA_SEED` (default fixed); a failure prints the
//! seed, the instance and both verdicts.
//!
//! Where this implementation and the JSON Schema standard differ, the oracle is told what the
//! codecs do (see `pi-protocol-gen/SCHEMA.md`, "Where this implementation is stricter"): a
//! record written as `patternProperties` without `additionalProperties` takes any key but
//! checks every value against the pattern's schema, so the oracle's copy of the schema says
//! `additionalProperties: <that schema>` there. String lengths differ between the reference and
//! the standard only for combining marks, joiners, variation selectors and flags, which the
//! sampler does not produce.

use pi_protocol_gen::model::Side;
use pi_protocol_gen::sample::Sampler;
use pi_protocol_gen::Model;
use pi_protocol_runtime::Payload;
use pi_protocol_schema_suite::{Case, CASES};
use serde_json::{json, Value};

fn cases_per_side() -> u64 {
    std::env::var("PI_SCHEMA_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(600)
}

fn base_seed() -> u64 {
    std::env::var("PI_SCHEMA_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_2026)
}

/// The schema `jsonschema` validates messages of `side` with.
fn oracle_schema(case: &Case, side: Side) -> Value {
    let mut document: Value = serde_json::from_str(case.schema).expect("test schemas are JSON");
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

#[derive(Default)]
struct Tally {
    instances: u64,
    accepted: u64,
    refused: u64,
}

fn check(case: &Case, side: Side, tally: &mut Tally) {
    let model = Model::from_json(case.schema, case.name).expect("test schemas generate");
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&oracle_schema(case, side))
        .unwrap_or_else(|e| panic!("{}: the oracle cannot read the schema: {e}", case.name));
    let decode = match side {
        Side::Client => case.client,
        Side::Server => case.server,
    };
    let root = model.message_type(side).expect("every test schema has both sides").rust_name.clone();
    let seed = base_seed();
    for i in 0..cases_per_side() {
        let mut sampler = Sampler::new(&model, seed.wrapping_add(i));
        let Some(valid) = sampler.message(side) else { continue };
        assert!(
            validator.is_valid(&valid),
            "{} {}: seed {}: the sampler drew an invalid message: {valid}\n{:?}",
            case.name,
            side.as_str(),
            seed.wrapping_add(i),
            validator.iter_errors(&valid).map(|e| e.to_string()).collect::<Vec<_>>()
        );
        let mut instances = vec![valid.clone()];
        let mut mutated = valid;
        for _ in 0..3 {
            mutated = sampler.mutate(&root, &mutated);
            instances.push(mutated.clone());
        }
        for instance in instances {
            let Ok(cbor) = Payload::from_value(&instance) else { continue };
            tally.instances += 1;
            let expected = validator.is_valid(&instance);
            let got = decode(cbor.as_cbor());
            assert_eq!(
                got.is_ok(),
                expected,
                "{} {}: seed {}: jsonschema says {expected}, the generated decoder says {:?} for {instance}",
                case.name,
                side.as_str(),
                seed.wrapping_add(i),
                got.as_ref().map(|_| "ok").map_err(ToString::to_string),
            );
            match got {
                Ok((rendered, canonical)) => {
                    tally.accepted += 1;
                    assert_eq!(rendered, instance, "{}: rendering changes the message", case.name);
                    let (again, bytes) = decode(&canonical).expect("the canonical encoding decodes");
                    assert_eq!(again, instance, "{}: the canonical encoding is another message", case.name);
                    assert_eq!(bytes, canonical, "{}: re-encoding is not a fixpoint", case.name);
                }
                Err(_) => tally.refused += 1,
            }
        }
    }
}

#[test]
fn generated_codecs_agree_with_jsonschema() {
    for case in CASES {
        let mut tally = Tally::default();
        for side in Side::BOTH {
            check(case, side, &mut tally);
        }
        eprintln!(
            "{}: {} instances, {} accepted, {} refused, no disagreement",
            case.name, tally.instances, tally.accepted, tally.refused
        );
        assert!(tally.accepted > 0 && tally.refused > 0, "{}: both verdicts must occur", case.name);
    }
}
