//! The schema interpreter (`pi_protocol_gen::interpret`) against the generated types, on every
//! schema of the suite: random instances (valid draws of `pi_protocol_gen::sample`, changed by
//! its mutations or not, keys in schema or shuffled order), encoded, framed, byte-mutated and
//! decoded by both, must get the same verdicts, JSON values and errors (kind, rule, field path,
//! offset); their JSON entry points (`validate_json`, `encode_canonical`) must agree with the
//! generated types' `from_json` and encoder.
//!
//! Then hand-made cases on `rich` (`pi-protocol-gen/tests/schemas/rich.json`: newtypes with
//! lengths, fixed and general patterns, numeric bounds, enumerations of mixed types, records
//! with key patterns, arrays of arrays, nested inline objects, nullable and optional nullable
//! fields, recursion through `$id`, unions told apart by type, tag, nested tags, several tags
//! and key sets, literals after fields), each a bug once found.

#[path = "../../../pi-protocol-gen/tests/support/verdicts.rs"]
mod verdicts;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use pi_protocol::runtime::wire_json::{from_json, wire_cbor};
use pi_protocol::runtime::{decode_message, CborLimits, CodecOptions, Payload, ProtocolError};
use pi_protocol_gen::interpret::Interpreter;
use pi_protocol_gen::model::Side;
use pi_protocol_gen::sample::{KeyOrder, Sampler};
use pi_protocol_gen::Model;
use pi_protocol_schema_suite::{for_each_schema, rich, Schema, Visitor};
use proptest::prelude::*;
use serde_json::Value;
use verdicts::{
    difference, frame, interpreted, interpreted_stream, mutate, mutation, same_encoding, typed, typed_stream, Mutation,
    Verdict,
};

/// A schema of the suite, read: its model (for the sampler) and its interpreter.
struct Prepared {
    name: &'static str,
    model: Model,
    interpreter: Interpreter,
}

/// Every schema of the suite, read once.
fn prepared() -> &'static [Prepared] {
    static PREPARED: OnceLock<Vec<Prepared>> = OnceLock::new();
    PREPARED.get_or_init(|| {
        struct Read(Vec<Prepared>);
        impl Visitor for Read {
            fn visit<S: Schema>(&mut self) {
                let model = Model::from_json(S::TEXT, S::NAME).unwrap_or_else(|e| panic!("{}: {e}", S::NAME));
                let interpreter = Interpreter::new(&model).unwrap_or_else(|e| panic!("{}: {e}", S::NAME));
                self.0.push(Prepared { name: S::NAME, model, interpreter });
            }
        }
        let mut read = Read(Vec::new());
        for_each_schema(&mut read);
        read.0
    })
}

fn prepared_for<S: Schema>() -> &'static Prepared {
    prepared().iter().find(|p| p.name == S::NAME).expect("every schema is read")
}

fn typed_payload<S: Schema>(side: Side, payload: &[u8], limits: CborLimits) -> Verdict {
    match side {
        Side::Client => typed::<S::ClientMessage>(payload, limits),
        Side::Server => typed::<S::ServerMessage>(payload, limits),
    }
}

fn typed_stream_of<S: Schema>(side: Side, stream: &[u8], options: &CodecOptions) -> Vec<Verdict> {
    match side {
        Side::Client => typed_stream::<S::ClientMessage>(stream, options),
        Side::Server => typed_stream::<S::ServerMessage>(stream, options),
    }
}

fn typed_from_json<S: Schema>(side: Side, value: &Value) -> Result<Vec<u8>, ProtocolError> {
    match side {
        Side::Client => from_json::<S::ClientMessage>(value).map(|m| wire_cbor(&m)),
        Side::Server => from_json::<S::ServerMessage>(value).map(|m| wire_cbor(&m)),
    }
}

/// A random instance of `side`'s messages: a valid draw after `changes` mutations, or `None`
/// when the schema's patterns defeated the draw.
fn instance(model: &Model, side: Side, seed: u64, changes: usize) -> Option<Value> {
    let mut sampler = Sampler::new(model, seed).key_order(KeyOrder::Mixed);
    let mut value = sampler.message(side)?;
    let root = &model.message_type(side)?.rust_name;
    for _ in 0..changes {
        value = sampler.mutate(root, &value);
    }
    Some(value)
}

/// One random comparison on every schema: the first disagreement, if any.
struct RandomComparison<'a> {
    seed: u64,
    changes: usize,
    mutations: &'a [Mutation],
    options: CodecOptions,
    failure: Option<String>,
}

impl Visitor for RandomComparison<'_> {
    fn visit<S: Schema>(&mut self) {
        let Prepared { model, interpreter, .. } = prepared_for::<S>();
        for side in Side::BOTH {
            if self.failure.is_some() {
                return;
            }
            let Some(value) = instance(model, side, self.seed, self.changes) else { continue };
            // The JSON entry points.
            let typed = typed_from_json::<S>(side, &value);
            let ours = interpreter.encode_canonical(side, &value);
            let validated = interpreter.validate_json(side, &value);
            if !same_encoding(&typed, &ours) || validated.is_ok() != typed.is_ok() {
                let what = format!("{} {} {value}", S::NAME, side.as_str());
                self.failure =
                    Some(format!("{what}:\n  generated:   {typed:?}\n  interpreter: {ours:?} / {validated:?}"));
                return;
            }
            // Frames, read as either side's messages.
            let Ok(payload) = Payload::from_value(&value) else { continue };
            let stream = mutate(&frame(payload.as_cbor()), self.mutations);
            for reader in Side::BOTH {
                let typed = typed_stream_of::<S>(reader, &stream, &self.options);
                let ours = interpreted_stream(interpreter, reader, &stream, &self.options);
                let what =
                    format!("{} {} as {}: {}\n{value}", S::NAME, side.as_str(), reader.as_str(), hex::encode(&stream));
                if let Some(d) = difference(&what, &typed, &ours) {
                    self.failure = Some(d);
                    return;
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(verdicts::config(1_000))]

    /// Random instances of every schema, changed by the sampler or not: the same JSON entry
    /// point results; then encoded, framed and byte-mutated: the same stream verdicts.
    #[test]
    fn random_instances_decode_validate_and_encode_alike(
        seed in any::<u64>(),
        changes in 0..3usize,
        mutations in prop::collection::vec(mutation(), 0..3),
        small_limits in any::<bool>(),
    ) {
        let options = if small_limits {
            CodecOptions::new().cbor_limits(CborLimits::new(512, 6, 6).expect("limits"))
        } else {
            CodecOptions::new()
        };
        let mut comparison = RandomComparison { seed, changes, mutations: &mutations, options, failure: None };
        for_each_schema(&mut comparison);
        prop_assert!(comparison.failure.is_none(), "{}", comparison.failure.unwrap_or_default());
    }
}

/// Valid draws and single mutations of them on fixed seeds, over every schema: every draw
/// accepted, every mutation judged alike, and the rules the mutations break counted.
struct Coverage {
    seeds: u64,
    valid: usize,
    /// Mutated instances accepted, and refused by rule.
    accepted: usize,
    rules: BTreeMap<String, usize>,
    failures: Vec<String>,
}

impl Visitor for Coverage {
    fn visit<S: Schema>(&mut self) {
        let Prepared { model, interpreter, .. } = prepared_for::<S>();
        let limits = CborLimits::default();
        for seed in 0..self.seeds {
            for side in Side::BOTH {
                let mut sampler = Sampler::new(model, seed);
                let Some(valid) = sampler.message(side) else { continue };
                let root = &model.message_type(side).expect("both sides").rust_name;
                let mutated: Vec<Value> = (0..6).map(|_| sampler.mutate(root, &valid)).collect();
                for (i, value) in std::iter::once(&valid).chain(&mutated).enumerate() {
                    let Ok(payload) = Payload::from_value(value) else { continue };
                    let typed = typed_payload::<S>(side, payload.as_cbor(), limits);
                    let ours = interpreted(interpreter, side, payload.as_cbor(), limits);
                    let what = format!("{} {} {value}", S::NAME, side.as_str());
                    if i == 0 && !(typed.is_message() && ours.is_message()) {
                        self.failures.push(format!("{what}: a valid draw refused: {typed:?} / {ours:?}"));
                    }
                    self.failures.extend(difference(&what, &[typed], &[ours]));
                    // The streaming decode (`decode --schema`) writes the same JSON, or fails alike.
                    let whole = interpreter.decode(side, payload.as_cbor(), limits);
                    let streamed = interpreter.decode_borrowed(side, payload.as_cbor(), limits);
                    let same = match (&streamed, &whole) {
                        (Ok(streamed), Ok(whole)) => serde_json::to_string(streamed).ok() == Some(whole.to_string()),
                        (Err(streamed), Err(whole)) => streamed == whole,
                        _ => false,
                    };
                    if !same {
                        self.failures.push(format!("{what}: decode_borrowed {streamed:?} / decode {whole:?}"));
                    }
                    if i == 0 {
                        self.valid += 1;
                        continue;
                    }
                    match interpreter.decode(side, payload.as_cbor(), limits) {
                        Ok(_) => self.accepted += 1,
                        Err(e) => {
                            let rule = format!("{:?}", e.rule()).split([' ', '{']).next().unwrap_or("").to_owned();
                            *self.rules.entry(rule).or_default() += 1;
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn valid_draws_are_accepted_and_mutations_meet_every_rule() {
    let mut coverage = Coverage { seeds: 300, valid: 0, accepted: 0, rules: BTreeMap::new(), failures: Vec::new() };
    for_each_schema(&mut coverage);
    assert!(coverage.failures.is_empty(), "{}", coverage.failures.join("\n"));
    eprintln!(
        "{} valid draws accepted; mutated: {} accepted, refused: {:?}",
        coverage.valid, coverage.accepted, coverage.rules
    );
    let draws = 2 * 300 * pi_protocol_schema_suite::SCHEMA_COUNT;
    assert_eq!(coverage.valid, draws, "a valid draw of each side of every schema for 300 seeds");
    assert!(coverage.accepted >= 300, "{} mutated instances accepted", coverage.accepted);
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
        let seen = coverage.rules.get(rule).copied().unwrap_or(0);
        assert!(seen >= 2, "{rule} seen {seen} times");
    }
}

fn rich_interpreter() -> &'static Interpreter {
    &prepared_for::<pi_protocol_schema_suite::Rich>().interpreter
}

/// Decodes `message` as a message `side` sends with both decoders and checks that each gives
/// `expected`: `None` for a message, else the error's path and rule.
fn assert_verdict(side: Side, message: &Value, expected: Option<(&str, &str)>) {
    let cbor = Payload::from_value(message).expect("JSON");
    let limits = CborLimits::default();
    let typed = match side {
        Side::Client => decode_message::<rich::ClientMessage>(cbor.as_cbor(), limits).map(drop),
        Side::Server => decode_message::<rich::ServerMessage>(cbor.as_cbor(), limits).map(drop),
    };
    let ours = rich_interpreter().decode(side, cbor.as_cbor(), limits).map(drop);
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
                let ours = rich_interpreter().decode(Side::Server, &chain(levels), limits);
                assert_eq!(ours.is_ok(), ok, "interpreter, {levels} levels: {:?}", ours.as_ref().err());
            }
        }),
    );
    on_stack(
        8 << 20,
        Box::new(move || {
            for (levels, _) in cases {
                let typed = typed_stream_of::<pi_protocol_schema_suite::Rich>(
                    Side::Server,
                    &frame(&chain(levels)),
                    &CodecOptions::new().cbor_limits(limits),
                );
                let ours = interpreted_stream(
                    rich_interpreter(),
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
