//! The interpreter against generated code on a schema using every construct of the language
//! (`tests/fixtures/rich.json`: newtypes with lengths, fixed and general patterns, numeric
//! bounds, enumerations of mixed types, records with key patterns, arrays of arrays, nested
//! inline objects, nullable and optional nullable fields, recursion through `$id`, unions told
//! apart by type, tag, nested tags, several tags and key sets, literals after fields).
//!
//! The generated types are checked in (`tests/fixtures/rich.rs`, kept current by
//! `rich_fixture_is_up_to_date`; regenerate with `PI_UPDATE_FIXTURES=1`); random instances of
//! the schema, mostly valid, are encoded, mutated and decoded by both, which must agree on
//! every verdict, JSON value and error.

mod support;

use std::sync::OnceLock;

use pi_protocol_gen::interpret::Interpreter;
use pi_protocol_gen::model::Side;
use pi_protocol_gen::{Model, Options};
use pi_protocol_runtime::wire_json::{from_json, wire_cbor};
use pi_protocol_runtime::{CborLimits, CodecOptions, Payload, ProtocolError};
use proptest::prelude::*;
use serde_json::Value;
use support::sample::Sampler;
use support::{difference, frame, interpreted_stream, mutate, mutation, typed_stream, Verdict};

/// The generated types of `tests/fixtures/rich.json`.
#[allow(dead_code, unreachable_pub, clippy::all)]
mod rich {
    include!("fixtures/rich.rs");
}

const SCHEMA: &str = "pi-protocol-gen/tests/fixtures/rich.json";
const FIXTURE: &str = "pi-protocol-gen/tests/fixtures/rich.rs";

fn options() -> Options {
    Options::default()
        .inner_docs(false)
        .command("PI_UPDATE_FIXTURES=1 cargo test -p pi-protocol-gen --test interpret_rich")
}

fn model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| {
        let text = String::from_utf8(support::repo_file(SCHEMA)).expect("UTF-8");
        Model::from_json(&text, SCHEMA).unwrap_or_else(|e| panic!("{e}"))
    })
}

fn interpreter() -> &'static Interpreter {
    static INTERPRETER: OnceLock<Interpreter> = OnceLock::new();
    INTERPRETER.get_or_init(|| Interpreter::new(model()).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn rich_fixture_is_up_to_date() {
    let expected = model().to_rust(SCHEMA, &options()).expect("the schema generates");
    let path = support::repo_path(FIXTURE);
    if std::env::var_os("PI_UPDATE_FIXTURES").is_some() {
        std::fs::write(&path, &expected).expect("write the fixture");
    }
    let actual = String::from_utf8(support::repo_file(FIXTURE)).expect("UTF-8");
    assert!(
        actual == expected,
        "{FIXTURE} is stale: run PI_UPDATE_FIXTURES=1 cargo test -p pi-protocol-gen --test interpret_rich"
    );
}

fn typed_stream_of(side: Side, stream: &[u8], options: &CodecOptions) -> Vec<Verdict> {
    match side {
        Side::Client => typed_stream::<rich::ClientMessage>(stream, options),
        Side::Server => typed_stream::<rich::ServerMessage>(stream, options),
    }
}

fn typed_from_json(side: Side, value: &Value) -> Result<Vec<u8>, ProtocolError> {
    match side {
        Side::Client => from_json::<rich::ClientMessage>(value).map(|m| wire_cbor(&m)),
        Side::Server => from_json::<rich::ServerMessage>(value).map(|m| wire_cbor(&m)),
    }
}

fn same_error(a: &ProtocolError, b: &ProtocolError) -> bool {
    a.kind() == b.kind() && a.rule() == b.rule() && a.path().eq(b.path()) && a.offset() == b.offset()
}

/// A random instance of `side`'s message type.
fn instance(side: Side, seed: u64) -> Value {
    let def = model().message_type(side).expect("both sides");
    Sampler::new(model(), seed).instance(def)
}

proptest! {
    #![proptest_config(support::config(4_000))]

    /// Random instances, encoded with their keys in the order sampled, then mutated: the same
    /// verdicts (messages as JSON, errors with kind, rule, path and offset) from both.
    #[test]
    fn random_instances_decode_alike(
        seed in any::<u64>(),
        mutations in prop::collection::vec(mutation(), 0..3),
        small_limits in any::<bool>(),
    ) {
        let options = if small_limits {
            CodecOptions::new().cbor_limits(CborLimits::new(512, 6, 6).expect("limits"))
        } else {
            CodecOptions::new()
        };
        for side in Side::BOTH {
            let value = instance(side, seed);
            let Ok(payload) = Payload::from_value(&value) else { continue };
            let stream = mutate(&frame(payload.as_cbor()), &mutations);
            for reader in Side::BOTH {
                let typed = typed_stream_of(reader, &stream, &options);
                let ours = interpreted_stream(interpreter(), reader, &stream, &options);
                prop_assert!(typed == ours, "{}\n{value}", difference(&format!("{} as {}: {}", side.as_str(), reader.as_str(), hex::encode(&stream)), &typed, &ours).unwrap_or_default());
            }
        }
    }

    /// The JSON entry points: validation and canonical encoding of random instances as the
    /// generated types' `from_json` and `Encode` give them.
    #[test]
    fn random_instances_validate_and_encode_alike(seed in any::<u64>()) {
        for side in Side::BOTH {
            let value = instance(side, seed);
            let typed = typed_from_json(side, &value);
            let ours = interpreter().encode_canonical(side, &value);
            let agree = match (&typed, &ours) {
                (Ok(a), Ok(b)) => a == b,
                (Err(a), Err(b)) => same_error(a, b),
                _ => false,
            };
            prop_assert!(agree, "{} {value}:\n  generated:   {typed:?}\n  interpreter: {ours:?}", side.as_str());
            prop_assert_eq!(interpreter().validate_json(side, &value).is_ok(), typed.is_ok());
        }
    }
}

#[test]
fn the_random_instances_meet_every_rule() {
    // Fixed seeds, without mutation: many messages accepted, and every schema rule refused.
    let (mut accepted, mut rules) = (0, std::collections::BTreeMap::<String, usize>::new());
    for seed in 0..3_000u64 {
        for side in Side::BOTH {
            let value = instance(side, seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let Ok(payload) = Payload::from_value(&value) else { continue };
            match interpreter().decode(side, payload.as_cbor(), CborLimits::default()) {
                Ok(_) => accepted += 1,
                Err(e) => {
                    *rules
                        .entry(format!("{:?}", e.rule()).split([' ', '{']).next().unwrap_or("").to_owned())
                        .or_default() += 1
                }
            }
        }
    }
    eprintln!("unmutated instances: {accepted} accepted; refused: {rules:?}");
    assert!(accepted > 1_500, "{accepted} accepted");
    for rule in [
        "WrongType",
        "UnknownField",
        "MissingField",
        "Literal",
        "MinLength",
        "MaxLength",
        "Pattern",
        "Minimum",
        "Maximum",
        "ExclusiveMinimum",
        "ExclusiveMaximum",
        "MinItems",
        "MaxItems",
        "NotInEnum",
        "NoVariant",
    ] {
        assert!(rules.get(rule).is_some_and(|&n| n >= 2), "{rule} seen {:?} times", rules.get(rule));
    }
}

/// Decodes `message` as a message `side` sends with both decoders and checks that each gives
/// `expected`: `None` for a message, else the error's path and rule.
fn assert_verdict(side: Side, message: &Value, expected: Option<(&str, &str)>) {
    let cbor = Payload::from_value(message).expect("JSON");
    let limits = CborLimits::default();
    let typed = match side {
        Side::Client => pi_protocol_runtime::decode_message::<rich::ClientMessage>(cbor.as_cbor(), limits).map(drop),
        Side::Server => pi_protocol_runtime::decode_message::<rich::ServerMessage>(cbor.as_cbor(), limits).map(drop),
    };
    let ours = interpreter().decode(side, cbor.as_cbor(), limits).map(drop);
    let describe = |r: Result<(), ProtocolError>| r.err().map(|e| (e.path_string(), format!("{:?}", e.rule())));
    let expected = expected.map(|(path, rule)| (path.to_owned(), rule.to_owned()));
    assert_eq!(describe(typed), expected, "generated, {message}");
    assert_eq!(describe(ours), expected, "interpreter, {message}");
}

/// A valid `put` message with `field` set to `value`.
fn put(field: &str, value: Value) -> Value {
    let mut message =
        serde_json::json!({"op": "put", "id": "p1", "code": "ABC", "note": null, "version": 3, "final": true});
    message[field] = value;
    message
}

/// A union member's own constraints (`anyOf: [{"type": "string", "minLength": 2}, ...]`, or
/// those of a type list) hold for the values of that member, as JSON Schema has it: the
/// generated code once dropped them (a tuple variant carries no checks).
#[test]
fn union_members_keep_their_constraints() {
    let cases = [
        ("scalar", serde_json::json!("a"), Some(("scalar", "MinLength { min: 2 }"))),
        ("scalar", serde_json::json!(-1), Some(("scalar", "Minimum { min: 0 }"))),
        ("scalar", serde_json::json!("ab"), None),
        ("flexible", serde_json::json!(""), Some(("flexible", "MinLength { min: 1 }"))),
        ("flexible", serde_json::json!(9), Some(("flexible", "Minimum { min: 10 }"))),
        ("flexible", serde_json::json!([1, 2, 3]), Some(("flexible", "MaxItems { max: 2 }"))),
        ("flexible", serde_json::json!([1, 2]), None),
    ];
    for (field, value, expected) in cases {
        assert_verdict(Side::Client, &put(field, value), expected);
    }
}

/// `patternProperties` without `additionalProperties: false` leaves the keys outside the
/// pattern free (JSON Schema, and the reference's validator): a key the pattern does not match
/// is no error (`free` has the pattern `^[a-z]+$`; `Json`'s record, TypeBox's `^.*$`, meets
/// keys holding a line break). With `additionalProperties: false` (`limits`) it is.
#[test]
fn records_without_closed_keys_accept_keys_outside_their_pattern() {
    let event = |data: Value| serde_json::json!({"kind": "event", "place": null, "data": data});
    let cases = [
        (Side::Client, put("free", serde_json::json!({"ok": 1, "NOT-LOWER": 2})), None),
        (Side::Client, put("free", serde_json::json!({"ok": -1})), Some(("free{0}", "Minimum { min: 0 }"))),
        (Side::Client, put("limits", serde_json::json!({"12": 1, "x": 2})), Some(("limits{1}", "Pattern"))),
        (Side::Server, event(serde_json::json!({"a\nb": [1, {"\u{2028}": null}]})), None),
    ];
    for (side, message, expected) in cases {
        assert_verdict(side, &message, expected);
    }
}

/// A recursive type nested to the deepest configurable depth (512 levels: an event's `tree`,
/// each `Node` holding the next) decodes, and one level more is the reader's depth error, as
/// for the generated types; the interpreter needs no more than a 2 MiB thread stack for it,
/// even unoptimized (the generated code is given 8 MiB: unoptimized, it needs more than 2).
#[test]
fn recursion_to_the_deepest_configurable_depth_decodes_alike() {
    fn chain(levels: usize) -> Vec<u8> {
        // {"kind": "event", "place": null, "tree": {"label": "n", "next": {... "next": null}}}
        let mut out = vec![0xa3, 0x64, b'k', b'i', b'n', b'd', 0x65, b'e', b'v', b'e', b'n', b't'];
        out.extend([0x65, b'p', b'l', b'a', b'c', b'e', 0xf6, 0x64, b't', b'r', b'e', b'e']);
        for _ in 0..levels {
            out.extend([0xa2, 0x65, b'l', b'a', b'b', b'e', b'l', 0x61, b'n', 0x64, b'n', b'e', b'x', b't']);
        }
        out.push(0xf6);
        out
    }
    let limits = CborLimits::new(1 << 20, 1 << 20, 512).expect("limits");
    // The event is level 0, its tree level 1, and each node's entries one deeper.
    let cases = [(511, true), (512, false)];
    let on_stack = |bytes: usize, job: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new().stack_size(bytes).spawn(job).expect("thread").join().expect("no stack overflow");
    };
    on_stack(
        2 << 20,
        Box::new(move || {
            for (levels, ok) in cases {
                let ours = interpreter().decode(Side::Server, &chain(levels), limits);
                assert_eq!(ours.is_ok(), ok, "interpreter, {levels} levels: {:?}", ours.as_ref().err());
            }
        }),
    );
    on_stack(
        8 << 20,
        Box::new(move || {
            for (levels, _) in cases {
                let typed =
                    typed_stream_of(Side::Server, &frame(&chain(levels)), &CodecOptions::new().cbor_limits(limits));
                let ours = interpreted_stream(
                    interpreter(),
                    Side::Server,
                    &frame(&chain(levels)),
                    &CodecOptions::new().cbor_limits(limits),
                );
                assert_eq!(typed, ours, "{levels} levels");
            }
        }),
    );
}

/// Unions told apart by tag or key set may hold other values than maps (JSON Schema puts no
/// limit there): literals and values of other JSON types go to their variants by type. The
/// generated code once did not compile for them (`Shape`: a key set with an enumeration and a
/// constrained integer; `Signal`: a tag with a literal and an array).
#[test]
fn unions_of_maps_hold_other_values_too() {
    let event = |field: &str, value: Value| serde_json::json!({"kind": "event", "place": null, field: value});
    let cases = [
        ("shape", serde_json::json!({"x": 1, "y": 2}), None),
        ("shape", serde_json::json!({"name": "ab"}), None),
        ("shape", serde_json::json!({"x": 1}), Some(("shape", "NoVariant"))),
        ("shape", serde_json::json!("green"), None),
        ("shape", serde_json::json!("purple"), Some(("shape", "NotInEnum"))),
        ("shape", serde_json::json!(4), None),
        ("shape", serde_json::json!(-4), Some(("shape", "Minimum { min: 0 }"))),
        ("shape", serde_json::json!([]), Some(("shape", "NoVariant"))),
        ("signal", serde_json::json!({"sig": "on", "level": 2}), None),
        ("signal", serde_json::json!({"level": 2, "sig": "off"}), Some(("signal", "UnknownField"))),
        ("signal", serde_json::json!({"sig": "dim"}), Some(("signal.sig", "Literal"))),
        ("signal", serde_json::json!("idle"), None),
        ("signal", serde_json::json!("busy"), Some(("signal", "NotInEnum"))),
        ("signal", serde_json::json!([1, 2]), None),
        ("signal", serde_json::json!(7), Some(("signal", "NoVariant"))),
    ];
    for (field, value, expected) in cases {
        assert_verdict(Side::Server, &event(field, value), expected);
    }
}
