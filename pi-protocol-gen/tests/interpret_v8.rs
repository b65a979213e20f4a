//! The interpreter of the protocol's schema, in this project's form (`schema/pi-protocol.v8.json`)
//! and in the reference's inlined form (`tests/vectors/reference-schema.json`), against the
//! facade's generated types (`pi_protocol::ClientMessage`, `ServerMessage`): the same verdict,
//! the same JSON and the same error (kind, rule, field path, offset) for every payload and
//! stream of the conformance vectors and the captures, for hand-made hostile payloads, and for
//! thousands of mutated frames; the JSON entry points (`validate_json`, `encode_canonical`,
//! `encode_json_frame`) against `parse_*_message`, the typed encoder and `encode_*_json`.
//! Random instances of both forms are compared with types generated from the same form in the
//! schema suite (`tests/schema-suite/tests/interpret.rs`, schemas `own-v8` and `reference-v8`).

mod support;

use std::sync::OnceLock;

use pi_protocol::runtime::wire_json::wire_cbor;
use pi_protocol::runtime::{CborLimits, CodecOptions, ProtocolError};
use pi_protocol::{
    encode_client_json, encode_server_json, parse_client_message, parse_server_message, ClientMessage, ServerMessage,
};
use pi_protocol_gen::interpret::Interpreter;
use pi_protocol_gen::model::Side;
use proptest::prelude::*;
use serde_json::{json, Value};
use support::{
    difference, frame, interpreted, interpreted_stream, mutate, mutation, payloads_of, recorded_streams, same_encoding,
    typed, typed_stream, Verdict,
};

fn v8() -> &'static Interpreter {
    static V8: OnceLock<Interpreter> = OnceLock::new();
    V8.get_or_init(|| support::interpreter_of("schema/pi-protocol.v8.json"))
}

fn reference() -> &'static Interpreter {
    static REFERENCE: OnceLock<Interpreter> = OnceLock::new();
    REFERENCE.get_or_init(|| support::interpreter_of("tests/vectors/reference-schema.json"))
}

fn interpreters() -> [(&'static str, &'static Interpreter); 2] {
    [("v8", v8()), ("reference form", reference())]
}

fn typed_payload(side: Side, payload: &[u8], limits: CborLimits) -> Verdict {
    match side {
        Side::Client => typed::<ClientMessage>(payload, limits),
        Side::Server => typed::<ServerMessage>(payload, limits),
    }
}

fn typed_stream_of(side: Side, stream: &[u8], options: &CodecOptions) -> Vec<Verdict> {
    match side {
        Side::Client => typed_stream::<ClientMessage>(stream, options),
        Side::Server => typed_stream::<ServerMessage>(stream, options),
    }
}

/// Compares one payload on both sides (a client payload read as a server message gives errors
/// worth comparing too), and the interpreter's `check` with its `decode`; returns the number of
/// comparisons and accepted messages.
fn compare_payload(
    name: &str,
    interpreter: &Interpreter,
    payload: &[u8],
    limits: CborLimits,
    failures: &mut Vec<String>,
) -> (usize, usize) {
    let mut accepted = 0;
    for side in Side::BOTH {
        let typed = typed_payload(side, payload, limits);
        let ours = interpreted(interpreter, side, payload, limits);
        accepted += usize::from(typed.is_message());
        if let Some(d) = difference(&format!("{name} as {} {}", side.as_str(), hex::encode(payload)), &[typed], &[ours])
        {
            failures.push(d);
        }
        // The verdict alone (payloads checked, never built) is the same, error included.
        let checked = interpreter.check(side, payload, limits);
        let decoded = interpreter.decode(side, payload, limits).map(drop);
        if checked != decoded {
            failures.push(format!("{name} as {}: check gives {checked:?}, decode {decoded:?}", side.as_str()));
        }
    }
    (2, accepted)
}

#[test]
fn every_recorded_payload_and_stream_decodes_as_the_generated_types_decode_it() {
    let recorded = recorded_streams();
    // The decode vectors, the RFC 8949 examples in envelopes, the regressions the oracle found
    // (38 more since the reference's error texts are compared) and the 5 captures.
    assert_eq!(recorded.len(), 823, "recorded streams");
    for (form, interpreter) in interpreters() {
        let mut failures = Vec::new();
        let (mut compared, mut accepted, mut streams) = (0, 0, 0);
        for case in &recorded {
            for payload in payloads_of(&case.stream, &case.options) {
                let (c, a) = compare_payload(&case.name, interpreter, &payload, case.options.limits(), &mut failures);
                compared += c;
                accepted += a;
            }
            let typed = typed_stream_of(case.side, &case.stream, &case.options);
            let ours = interpreted_stream(interpreter, case.side, &case.stream, &case.options);
            failures.extend(difference(&format!("{form}: stream {}", case.name), &typed, &ours));
            streams += 1;
        }
        assert!(failures.is_empty(), "{form}: {} disagreements:\n{}", failures.len(), failures.join("\n"));
        eprintln!("{form}: {compared} payloads compared ({accepted} accepted), {streams} streams");
        // Every decode vector and capture frame, read as both sides.
        assert_eq!(compared, 1_804, "{form}: payloads compared");
        assert_eq!(accepted, 285, "{form}: payloads accepted");
        assert_eq!(streams, 823, "{form}: streams");
    }
}

// ------------------------------------------------------------------ hostile payloads

fn head(major: u8, n: u64) -> Vec<u8> {
    let m = major << 5;
    match n {
        0..=23 => vec![m | n as u8],
        24..=0xff => vec![m | 24, n as u8],
        0x100..=0xffff => [&[m | 25][..], &(n as u16).to_be_bytes()].concat(),
        0x1_0000..=0xffff_ffff => [&[m | 26][..], &(n as u32).to_be_bytes()].concat(),
        _ => [&[m | 27][..], &n.to_be_bytes()].concat(),
    }
}

fn text(s: &[u8]) -> Vec<u8> {
    [head(3, s.len() as u64), s.to_vec()].concat()
}

fn map(entries: &[(&[u8], Vec<u8>)]) -> Vec<u8> {
    let mut out = head(5, entries.len() as u64);
    for (k, v) in entries {
        out.extend(text(k));
        out.extend_from_slice(v);
    }
    out
}

const SERVER: &[u8] = b"3b241101-e2bb-4255-8caf-4136c566a962";

/// Payloads aimed at the decoders' shortcuts: tags read in place or peeked, key sets counted or
/// peeked, raw key reads, literal checks, nested errors after CBOR errors, limits.
fn hostile_payloads() -> Vec<(String, Vec<u8>)> {
    let server_target = map(&[(b"serverId", text(SERVER))]);
    let session_target = map(&[(b"serverId", text(SERVER)), (b"sessionId", text(b"s")), (b"attachmentId", text(b"a"))]);
    let request = |target: Vec<u8>, call: Vec<u8>| {
        map(&[(b"type", text(b"request")), (b"id", text(b"r1")), (b"target", target), (b"call", call)])
    };
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("request to a server".into(), request(server_target.clone(), head(7, 22))),
        ("request to a session".into(), request(session_target.clone(), head(4, 0))),
        (
            "tag last".into(),
            map(&[
                (b"id", text(b"r1")),
                (b"target", server_target.clone()),
                (b"call", vec![0xf6]),
                (b"type", text(b"request")),
            ]),
        ),
        ("tag missing".into(), map(&[(b"id", text(b"r1")), (b"target", server_target.clone())])),
        (
            "tag twice".into(),
            map(&[
                (b"type", text(b"cancel")),
                (b"type", text(b"cancel")),
                (b"id", text(b"r1")),
                (b"target", server_target.clone()),
            ]),
        ),
        ("tag not text".into(), map(&[(b"type", vec![0x01]), (b"id", text(b"r1"))])),
        ("tag a map".into(), map(&[(b"type", map(&[])), (b"id", text(b"r1"))])),
        ("unknown tag".into(), map(&[(b"type", text(b"hullo")), (b"version", vec![0x08])])),
        (
            "unknown key first".into(),
            map(&[(b"extra", vec![0xf6]), (b"type", text(b"hello")), (b"version", vec![0x08])]),
        ),
        (
            "unknown key last".into(),
            map(&[(b"type", text(b"hello")), (b"version", vec![0x08]), (b"extra", vec![0xf6])]),
        ),
        (
            "duplicate field".into(),
            map(&[(b"type", text(b"hello")), (b"version", vec![0x08]), (b"version", vec![0x08])]),
        ),
        (
            "version a float".into(),
            map(&[(b"type", text(b"hello")), (b"version", vec![0xfb, 0x40, 0x20, 0, 0, 0, 0, 0, 0])]),
        ),
        (
            "version fractional".into(),
            map(&[(b"type", text(b"hello")), (b"version", vec![0xfb, 0x40, 0x20, 0, 0, 0, 0, 0, 1])]),
        ),
        (
            "version negative zero".into(),
            map(&[(b"type", text(b"hello")), (b"version", vec![0xfb, 0x80, 0, 0, 0, 0, 0, 0, 0])]),
        ),
        ("version -1".into(), map(&[(b"type", text(b"hello")), (b"version", vec![0x20])])),
        ("version 2^53".into(), map(&[(b"type", text(b"hello")), (b"version", head(0, 1 << 53))])),
        ("version a string".into(), map(&[(b"type", text(b"hello")), (b"version", text(b"8"))])),
        (
            "server version 8.0".into(),
            map(&[
                (b"type", text(b"hello")),
                (b"version", vec![0xfb, 0x40, 0x20, 0, 0, 0, 0, 0, 0]),
                (b"serverId", text(SERVER)),
            ]),
        ),
        (
            "server version 7".into(),
            map(&[(b"type", text(b"hello")), (b"version", vec![0x07]), (b"serverId", text(SERVER))]),
        ),
        (
            "server id upper case".into(),
            map(&[
                (b"type", text(b"hello")),
                (b"version", vec![0x08]),
                (b"serverId", text(&SERVER.to_ascii_uppercase())),
            ]),
        ),
        (
            "target with both key sets".into(),
            request(map(&[(b"serverId", text(SERVER)), (b"sessionId", text(b"s"))]), vec![0xf6]),
        ),
        ("target empty".into(), request(map(&[]), vec![0xf6])),
        (
            "target with an unknown key".into(),
            request(map(&[(b"serverId", text(SERVER)), (b"x", text(b"s"))]), vec![0xf6]),
        ),
        (
            "target with a duplicate key".into(),
            request(map(&[(b"serverId", text(SERVER)), (b"serverId", text(SERVER))]), vec![0xf6]),
        ),
        (
            "target session id empty".into(),
            request(
                map(&[(b"serverId", text(SERVER)), (b"sessionId", text(b"")), (b"attachmentId", text(b"a"))]),
                vec![0xf6],
            ),
        ),
        ("target a string".into(), request(text(b"x"), vec![0xf6])),
        ("call a byte string".into(), request(server_target.clone(), vec![0x41, 0x00])),
        ("call with a tag".into(), request(server_target.clone(), vec![0xc1, 0x00])),
        ("call a float16".into(), request(server_target.clone(), vec![0xf9, 0x3c, 0x00])),
        ("call indefinite".into(), request(server_target.clone(), vec![0x9f, 0xff])),
        ("call with duplicate keys".into(), request(server_target.clone(), map(&[(b"a", vec![1]), (b"a", vec![2])]))),
        ("call truncated".into(), request(server_target.clone(), vec![0x82, 0x01])),
        (
            "id empty then a tag in the call".into(),
            map(&[
                (b"type", text(b"request")),
                (b"id", text(b"")),
                (b"target", server_target.clone()),
                (b"call", vec![0xc1, 0x00]),
            ]),
        ),
        ("invalid UTF-8 in a key".into(), map(&[(b"type", text(b"hello")), (b"vers\xffon", vec![0x08])])),
        ("invalid UTF-8 in the tag".into(), map(&[(b"type", text(b"hel\xffo")), (b"version", vec![0x08])])),
        (
            "invalid UTF-8 in an id".into(),
            map(&[(b"type", text(b"cancel")), (b"id", text(b"r\xff")), (b"target", server_target.clone())]),
        ),
        ("a key that is not text".into(), [&[0xa2][..], &text(b"type"), &text(b"hello"), &[0x01, 0x08]].concat()),
        (
            "response ok as a number".into(),
            map(&[(b"type", text(b"response")), (b"id", text(b"r1")), (b"ok", vec![0x01])]),
        ),
        ("response ok missing".into(), map(&[(b"type", text(b"response")), (b"id", text(b"r1"))])),
        ("response ok first".into(), map(&[(b"ok", vec![0xf5]), (b"type", text(b"response")), (b"id", text(b"r1"))])),
        (
            "response failure without error".into(),
            map(&[(b"type", text(b"response")), (b"id", text(b"r1")), (b"ok", vec![0xf4])]),
        ),
        (
            "response success with error".into(),
            map(&[(b"type", text(b"response")), (b"id", text(b"r1")), (b"ok", vec![0xf5]), (b"error", map(&[]))]),
        ),
        ("attachment null".into(), map(&[(b"type", text(b"attachment")), (b"attachment", vec![0xf6])])),
        ("attachment missing".into(), map(&[(b"type", text(b"attachment"))])),
        (
            "attachment a server target".into(),
            map(&[(b"type", text(b"attachment")), (b"attachment", server_target.clone())]),
        ),
        (
            "hello error with an empty code".into(),
            map(&[(b"type", text(b"hello_error")), (b"error", map(&[(b"code", text(b"")), (b"message", text(b""))]))]),
        ),
        (
            "service update without update".into(),
            map(&[(b"type", text(b"service_update")), (b"subscriptionId", text(b"s"))]),
        ),
        ("trailing data".into(), [map(&[(b"type", text(b"hello")), (b"version", vec![0x08])]), vec![0xf6]].concat()),
        ("empty payload".into(), vec![]),
        ("null".into(), vec![0xf6]),
        ("an array".into(), vec![0x81, 0x01]),
        ("a byte string".into(), vec![0x40]),
        ("a map longer than the input".into(), vec![0xb8, 0xff, 0x61, b'a']),
        ("a long key head".into(), [&[0xa1, 0x78, 0x04][..], b"type", &text(b"hello")].concat()),
    ];
    // Nesting near and past the depth limit inside the call.
    for depth in [62, 63, 64, 65, 200] {
        let mut call = vec![0x81; depth];
        call.push(0xf6);
        cases.push((format!("call nested {depth} deep"), request(server_target.clone(), call)));
    }
    cases
}

#[test]
fn hostile_payloads_fail_as_the_generated_types_fail() {
    let limits = [
        CborLimits::default(),
        CborLimits::new(64, 3, 4).expect("limits"),
        CborLimits::new(16, 100, 2).expect("limits"),
        CborLimits::new(1024, 1, 1).expect("limits"),
    ];
    let cases = hostile_payloads();
    for (form, interpreter) in interpreters() {
        let mut failures = Vec::new();
        let mut compared = 0;
        for (name, payload) in &cases {
            for limits in limits {
                compared += compare_payload(name, interpreter, payload, limits, &mut failures).0;
                // Each truncation of the payload too.
                for cut in 0..payload.len() {
                    compared += compare_payload(name, interpreter, &payload[..cut], limits, &mut failures).0;
                }
            }
        }
        assert!(failures.is_empty(), "{form}: {} disagreements:\n{}", failures.len(), failures.join("\n"));
        eprintln!("{form}: {compared} hostile payloads compared");
        assert!(compared > 10_000, "{form}: only {compared} comparisons");
    }
}

// ------------------------------------------------------------------ mutated frames

/// Every payload the generated types accept (client and server), each with its side.
fn accepted_payloads() -> &'static [(Side, Vec<u8>)] {
    static CORPUS: OnceLock<Vec<(Side, Vec<u8>)>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut out = Vec::new();
        for case in recorded_streams() {
            for payload in payloads_of(&case.stream, &case.options) {
                if typed_payload(case.side, &payload, CborLimits::default()).is_message() {
                    out.push((case.side, payload));
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|entry| seen.insert(entry.clone()));
        out
    })
}

proptest! {
    #![proptest_config(support::config(3_000))]

    /// Mutated frames (and two frames in a row, the second mutated) decode to the same verdicts,
    /// whole streams compared: messages, errors, offsets.
    #[test]
    fn mutated_frames_decode_as_the_generated_types_decode_them(
        pick in any::<prop::sample::Index>(),
        second in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..4),
        small_limits in any::<bool>(),
    ) {
        let corpus = accepted_payloads();
        let (side, payload) = &corpus[pick.index(corpus.len())];
        let (_, next) = &corpus[second.index(corpus.len())];
        let options = if small_limits {
            CodecOptions::new().cbor_limits(CborLimits::new(256, 4, 3).expect("limits"))
        } else {
            CodecOptions::new()
        };
        let streams = [
            mutate(&frame(payload), &mutations),
            [frame(payload), mutate(&frame(next), &mutations)].concat(),
        ];
        for (form, interpreter) in interpreters() {
            for stream in &streams {
                for side in [*side, if *side == Side::Client { Side::Server } else { Side::Client }] {
                    let typed = typed_stream_of(side, stream, &options);
                    let ours = interpreted_stream(interpreter, side, stream, &options);
                    prop_assert!(typed == ours, "{}", difference(&format!("{form} {} {}", side.as_str(), hex::encode(stream)), &typed, &ours).unwrap_or_default());
                }
            }
        }
    }
}

// ------------------------------------------------------------------ the JSON entry points

fn typed_validate(side: Side, value: &Value) -> Result<Vec<u8>, ProtocolError> {
    match side {
        Side::Client => parse_client_message(value).map(|m| wire_cbor(&m)),
        Side::Server => parse_server_message(value).map(|m| wire_cbor(&m)),
    }
}

fn typed_json_frame(side: Side, value: &Value, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
    match side {
        Side::Client => encode_client_json(value, options),
        Side::Server => encode_server_json(value, options),
    }
}

/// JSON values: every message of the vectors and captures, the encode vectors' messages, and
/// variations of them that break a rule.
fn json_messages() -> Vec<Value> {
    let mut out = Vec::new();
    for side in Side::BOTH {
        for (_, payload) in accepted_payloads().iter().filter(|(s, _)| *s == side) {
            out.push(v8().decode(side, payload, CborLimits::default()).expect("accepted"));
        }
    }
    let vectors = String::from_utf8(support::repo_file("tests/vectors/vectors.jsonl")).expect("UTF-8");
    for line in vectors.lines() {
        let case: Value = serde_json::from_str(line).expect("JSON");
        if case["request"]["op"] == "encode" {
            out.push(case["request"]["message"].clone());
        }
    }
    let mut variations = Vec::new();
    for message in &out {
        let Value::Object(map) = message else { continue };
        for key in map.keys() {
            let mut without = map.clone();
            without.shift_remove(key);
            variations.push(Value::Object(without));
            for replacement in
                [json!(null), json!(""), json!(-1), json!(1.5), json!([]), json!({}), json!(9007199254740993u64)]
            {
                let mut changed = map.clone();
                changed.insert(key.clone(), replacement);
                variations.push(Value::Object(changed));
            }
        }
        let mut extra = map.clone();
        extra.insert("7".into(), json!(true));
        variations.push(Value::Object(extra));
    }
    out.extend(variations);
    out
}

#[test]
fn json_entry_points_agree_with_the_generated_types() {
    let messages = json_messages();
    assert!(messages.len() > 2_000, "only {} JSON messages", messages.len());
    let options = [CodecOptions::new(), CodecOptions::new().max_frame_length(40).expect("limit")];
    for (form, interpreter) in interpreters() {
        let mut failures = Vec::new();
        let mut accepted = 0;
        for value in &messages {
            for side in Side::BOTH {
                let typed = typed_validate(side, value);
                let canonical = interpreter.encode_canonical(side, value);
                let validated = interpreter.validate_json(side, value);
                if !same_encoding(&typed, &canonical) || validated.is_ok() != typed.is_ok() {
                    failures.push(format!("{form} {} {value}: {typed:?} / {canonical:?}", side.as_str()));
                }
                accepted += usize::from(typed.is_ok());
                for options in &options {
                    let typed = typed_json_frame(side, value, options);
                    let ours = interpreter.encode_json_frame(side, value, options);
                    if !same_encoding(&typed, &ours) {
                        failures.push(format!("{form} {} frame {value}: {typed:?} / {ours:?}", side.as_str()));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{form}: {} disagreements:\n{}", failures.len(), failures.join("\n"));
        eprintln!("{form}: {} JSON values compared on both sides, {accepted} accepted", messages.len());
        assert!(accepted >= 300, "{form}: only {accepted} accepted");
    }
}
