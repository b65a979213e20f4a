//! Every recorded vector of the reference package (`tests/vectors/vectors.jsonl`): decode
//! verdicts and canonical bytes, exact encoded frames, raw CBOR verdicts with their limits.

mod common;

use common::{canonical_hex_of_cbor, canonical_hex_of_json, unhex, vectors, vectors_in};
use pi_protocol::runtime::limits::{number_option, MAX_CONFIGURABLE_LENGTH};
use pi_protocol::{
    decode_cbor, encode_client_json, encode_client_message, encode_server_json, encode_server_message,
    parse_client_message, parse_server_message, CborLimits, ClientMessageDecoder, CodecOptions, ProtocolError,
    ServerMessageDecoder, MAX_CONFIGURABLE_DEPTH,
};
use serde_json::Value;

/// What our side did with a decode request, in the vectors' terms.
#[derive(Debug)]
enum Outcome {
    Ok { messages: Vec<Value> },
    Failed { stage: &'static str, chunk: usize, decoded_before: usize, error: Option<ProtocolError> },
}

fn frame_options(request: &Value) -> Result<CodecOptions, ProtocolError> {
    match request.get("maxFrameLength").and_then(Value::as_f64) {
        None => Ok(CodecOptions::new()),
        Some(n) => CodecOptions::new().max_frame_length(number_option("maxFrameLength", n, MAX_CONFIGURABLE_LENGTH)?),
    }
}

macro_rules! run_decoder {
    ($decoder:ty, $request:expr, $options:expr) => {{
        let mut decoder = <$decoder>::with_options(&$options);
        let mut messages = Vec::new();
        let chunks = $request["chunks"].as_array().unwrap();
        let mut failed = None;
        for (i, chunk) in chunks.iter().enumerate() {
            for result in decoder.push(&unhex(chunk.as_str().unwrap())) {
                match result {
                    Ok(m) => messages.push(m.to_json()),
                    Err(e) => {
                        failed = Some(Outcome::Failed {
                            stage: "push",
                            chunk: i,
                            decoded_before: messages.len(),
                            error: Some(e),
                        })
                    }
                }
            }
            if failed.is_some() {
                break;
            }
        }
        match failed {
            Some(f) => f,
            None if $request.get("end") != Some(&Value::Bool(false)) => match decoder.end() {
                Ok(()) => Outcome::Ok { messages },
                Err(e) => Outcome::Failed {
                    stage: "end",
                    chunk: chunks.len(),
                    decoded_before: messages.len(),
                    error: Some(e),
                },
            },
            None => Outcome::Ok { messages },
        }
    }};
}

fn run_decode(request: &Value) -> Outcome {
    let options = match frame_options(request) {
        Ok(o) => o,
        Err(e) => return Outcome::Failed { stage: "options", chunk: 0, decoded_before: 0, error: Some(e) },
    };
    match request["side"].as_str() {
        Some("client") => run_decoder!(ClientMessageDecoder, request, options),
        Some("server") => run_decoder!(ServerMessageDecoder, request, options),
        other => panic!("unknown side {other:?}"),
    }
}

fn check_decode(id: &str, request: &Value, expect: &Value) -> Result<(), String> {
    let outcome = run_decode(request);
    let expected_ok = expect["ok"].as_bool().unwrap();
    match (&outcome, expected_ok) {
        (Outcome::Ok { messages }, true) => {
            let canonical = expect["canonical"].as_array().unwrap();
            if messages.len() != canonical.len() {
                return Err(format!("{id}: decoded {} messages, reference {}", messages.len(), canonical.len()));
            }
            for (i, (m, c)) in messages.iter().zip(canonical).enumerate() {
                let ours = canonical_hex_of_json(m);
                if ours != c.as_str().unwrap() {
                    return Err(format!("{id}: message {i} canonical bytes differ\n ours {ours}\n ref  {c}"));
                }
            }
            if let Some(expected_messages) = expect.get("messages").and_then(Value::as_array) {
                for (i, (m, e)) in messages.iter().zip(expected_messages).enumerate() {
                    if !json_numbers_equal(m, e) {
                        return Err(format!("{id}: message {i} differs as JSON\n ours {m}\n ref  {e}"));
                    }
                }
            }
            Ok(())
        }
        (Outcome::Failed { stage, chunk, decoded_before, error }, false) => {
            let want_stage = expect["stage"].as_str().unwrap();
            let want_chunk = expect["chunk"].as_u64().unwrap() as usize;
            let want_before = expect["decodedBefore"].as_u64().unwrap() as usize;
            if *stage != want_stage || *chunk != want_chunk || *decoded_before < want_before {
                return Err(format!(
                    "{id}: failed at {stage}/{chunk} after {decoded_before} messages ({error:?}); reference at \
                     {want_stage}/{want_chunk} after {want_before}"
                ));
            }
            if let Some(e) = error {
                let text = e.to_string();
                if text.chars().count() > pi_protocol::runtime::MAX_ERROR_MESSAGE_LENGTH {
                    return Err(format!("{id}: error message too long"));
                }
            }
            Ok(())
        }
        (Outcome::Ok { .. }, false) => Err(format!("{id}: accepted, the reference rejected: {}", expect["error"])),
        (Outcome::Failed { error, .. }, true) => Err(format!("{id}: rejected ({error:?}), the reference accepted")),
    }
}

/// JSON equality where numbers compare by value (1 == 1.0), as JavaScript sees them.
fn json_numbers_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_numbers_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_numbers_equal(v, w)))
        }
        _ => a == b,
    }
}

fn check_encode(id: &str, request: &Value, expect: &Value) -> Result<(), String> {
    let options = frame_options(request).map_err(|e| format!("{id}: options {e}"))?;
    let message = &request["message"];
    let client = request["side"] == "client";
    let json_frame = if client { encode_client_json(message, &options) } else { encode_server_json(message, &options) };
    // The typed path: parse, then encode in schema order.
    let typed_frame = if client {
        parse_client_message(message).and_then(|m| pi_protocol::encode_client_message_with(&m, &options))
    } else {
        parse_server_message(message).and_then(|m| pi_protocol::encode_server_message_with(&m, &options))
    };
    match expect.get("frame").and_then(Value::as_str) {
        Some(frame) => {
            let json_frame = json_frame.map_err(|e| format!("{id}: JSON encoder refused: {e}"))?;
            if hex::encode(&json_frame) != frame {
                return Err(format!(
                    "{id}: JSON-path frame differs\n ours {}\n ref  {frame}",
                    hex::encode(&json_frame)
                ));
            }
            let typed_frame = typed_frame.map_err(|e| format!("{id}: typed encoder refused: {e}"))?;
            if hex::encode(&typed_frame) != frame {
                return Err(format!("{id}: typed frame differs\n ours {}\n ref  {frame}", hex::encode(&typed_frame)));
            }
            Ok(())
        }
        None => {
            if let Ok(f) = json_frame {
                return Err(format!("{id}: JSON path encoded {}, the reference refused", hex::encode(f)));
            }
            if let Ok(f) = typed_frame {
                return Err(format!("{id}: typed path encoded {}, the reference refused", hex::encode(f)));
            }
            Ok(())
        }
    }
}

fn cbor_limits(request: &Value) -> Result<CborLimits, ProtocolError> {
    let get = |key: &str, default: u64, max: u64| -> Result<u64, ProtocolError> {
        match request.get(key).and_then(Value::as_f64) {
            None => Ok(default),
            Some(n) => number_option(
                match key {
                    "maxByteLength" => "maxByteLength",
                    "maxContainerLength" => "maxContainerLength",
                    _ => "maxDepth",
                },
                n,
                max,
            ),
        }
    };
    let d = CborLimits::default();
    CborLimits::new(
        get("maxByteLength", u64::from(d.max_byte_length()), MAX_CONFIGURABLE_LENGTH)?,
        get("maxContainerLength", u64::from(d.max_container_length()), MAX_CONFIGURABLE_LENGTH)?,
        get("maxDepth", u64::from(d.max_depth()), u64::from(MAX_CONFIGURABLE_DEPTH))?,
    )
}

fn check_decode_cbor(id: &str, request: &Value, expect: &Value) -> Result<(), String> {
    let result = cbor_limits(request).and_then(|limits| decode_cbor(&unhex(request["hex"].as_str().unwrap()), limits));
    match (result, expect["ok"].as_bool().unwrap()) {
        (Ok(value), true) => {
            let ours = canonical_hex_of_cbor(&value);
            let want = expect["canonical"].as_str().unwrap();
            if ours == want {
                Ok(())
            } else {
                Err(format!("{id}: canonical differs\n ours {ours}\n ref  {want}"))
            }
        }
        (Err(_), false) => Ok(()),
        (Ok(v), false) => Err(format!("{id}: accepted {v:?}, the reference rejected: {}", expect["error"])),
        (Err(e), true) => Err(format!("{id}: rejected ({e}), the reference accepted")),
    }
}

/// Runs every case of `cases`; returns the disagreements and the count per op.
fn check_all(cases: &[Value]) -> (Vec<String>, std::collections::BTreeMap<String, usize>) {
    let mut failures = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let request = &case["request"];
        let expect = &case["expect"];
        let op = request["op"].as_str().unwrap();
        *counts.entry(op.to_owned()).or_insert(0) += 1;
        let result = match op {
            "decode" => check_decode(id, request, expect),
            "encode" => check_encode(id, request, expect),
            "decodeCbor" => check_decode_cbor(id, request, expect),
            other => Err(format!("{id}: unknown op {other}")),
        };
        if let Err(e) = result {
            failures.push(e);
        }
    }
    (failures, counts)
}

#[test]
fn every_vector_agrees_with_the_reference() {
    let cases = vectors();
    assert!(cases.len() >= 500, "the vectors file is incomplete: {} cases", cases.len());
    let (failures, counts) = check_all(&cases);
    assert!(failures.is_empty(), "{} of {} vectors disagree:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert_eq!(counts.get("decode"), Some(&510));
    assert_eq!(counts.get("encode"), Some(&25));
    assert_eq!(counts.get("decodeCbor"), Some(&11));
}

#[test]
fn rfc8949_examples_wrapped_in_envelopes_agree_with_the_reference() {
    // Recorded with the reference: every Appendix A example of RFC 8949 as request.call,
    // response.result, service_update.update, and as a raw item.
    let cases = vectors_in("rfc8949-examples.jsonl");
    assert_eq!(cases.len(), 360);
    let (failures, counts) = check_all(&cases);
    assert!(failures.is_empty(), "{} disagree:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(counts.get("decodeCbor"), Some(&90));
}

#[test]
fn typed_encoders_reproduce_decoded_frames() {
    // Every single-frame vector the reference accepted re-encodes to the reference's canonical
    // bytes when its keys are in schema order; the typed encoder must at least round-trip.
    for case in vectors() {
        let request = &case["request"];
        if request["op"] != "decode" || case["expect"]["ok"] != true {
            continue;
        }
        let Outcome::Ok { messages } = run_decode(request) else { panic!("{}: should decode", case["id"]) };
        for m in messages {
            let frame = if request["side"] == "client" {
                encode_client_message(&parse_client_message(&m).unwrap()).unwrap()
            } else {
                encode_server_message(&parse_server_message(&m).unwrap()).unwrap()
            };
            let again = if request["side"] == "client" {
                ClientMessageDecoder::new().push(&frame).pop().unwrap().unwrap().to_json()
            } else {
                ServerMessageDecoder::new().push(&frame).pop().unwrap().unwrap().to_json()
            };
            assert_eq!(canonical_hex_of_json(&again), canonical_hex_of_json(&m), "{}", case["id"]);
        }
    }
}
