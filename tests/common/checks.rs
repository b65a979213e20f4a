//! The comparison of one case (a request in the shape of `tests/vectors/vectors.jsonl` and the
//! reference's verdict) with what this crate does, shared by `tests/regressions.rs` and
//! `cargo xtask conformance` (which includes this folder with `#[path]`).
//!
//! Rules (docs/PROTOCOL.md sections 7 and 10):
//! - `decode`: same verdict; when both accept, the same messages (canonical bytes and JSON
//!   numbers); when both reject, the same stage and chunk, and at least as many messages
//!   delivered before the error as the reference delivered.
//! - `encode`: the JSON-path encoder must produce the reference's frame exactly; the typed
//!   encoder too unless the request says `"schemaOrder": false` (its keys are not in schema
//!   order, or a payload is not in JavaScript key order, so only the JSON path can match).
//! - `decodeCbor`: same verdict and, when accepted, the same canonical bytes.
//!
//! Every error message must also fit in `MAX_ERROR_MESSAGE_LENGTH` characters, and a rejected
//! `decode` must be worded as the reference words it (`ProtocolError::reference_text`).

use super::{canonical_hex_of_cbor, canonical_hex_of_json, unhex};
use pi_protocol::runtime::limits::{number_option, MAX_CONFIGURABLE_LENGTH};
use pi_protocol::{
    decode_cbor, encode_client_json, encode_client_message_with, encode_server_json, encode_server_message_with,
    parse_client_message, parse_server_message, CborLimits, ClientMessageDecoder, CodecOptions, ProtocolError,
    ServerMessageDecoder, MAX_CONFIGURABLE_DEPTH,
};
use serde_json::Value;

/// What this crate did with a `decode` request.
#[derive(Debug)]
pub enum Outcome {
    /// Every chunk was accepted (and `end()` too, unless the request said `end: false`).
    Ok {
        /// The decoded messages, as JSON in wire key order.
        messages: Vec<Value>,
    },
    /// A call failed.
    Failed {
        /// `options`, `push` or `end`.
        stage: &'static str,
        /// Index of the failing chunk (the number of chunks for `end`).
        chunk: usize,
        /// Messages delivered before the error.
        decoded_before: usize,
        /// The error.
        error: ProtocolError,
    },
}

/// Checks one case; `Err` describes the disagreement.
pub fn check_case(id: &str, request: &Value, expect: &Value) -> Result<(), String> {
    match request["op"].as_str() {
        Some("decode") => check_decode(id, request, expect),
        Some("encode") => check_encode(id, request, expect),
        Some("decodeCbor") => check_decode_cbor(id, request, expect),
        other => Err(format!("{id}: unknown op {other:?}")),
    }
}

fn frame_options(request: &Value) -> Result<CodecOptions, ProtocolError> {
    match request.get("maxFrameLength").and_then(Value::as_f64) {
        None => Ok(CodecOptions::new()),
        Some(n) => CodecOptions::new().max_frame_length(number_option("maxFrameLength", n, MAX_CONFIGURABLE_LENGTH)?),
    }
}

fn chunks_of(request: &Value) -> Vec<Vec<u8>> {
    request["chunks"]
        .as_array()
        .map(|c| c.iter().map(|h| unhex(h.as_str().unwrap_or_default())).collect())
        .unwrap_or_default()
}

macro_rules! run_decoder {
    ($decoder:ty, $request:expr, $options:expr) => {{
        let mut decoder = <$decoder>::with_options(&$options);
        let chunks = chunks_of($request);
        let mut messages = Vec::new();
        let mut failed = None;
        for (i, chunk) in chunks.iter().enumerate() {
            for result in decoder.push(chunk) {
                match result {
                    Ok(m) => messages.push(m.to_json()),
                    Err(error) => {
                        failed =
                            Some(Outcome::Failed { stage: "push", chunk: i, decoded_before: messages.len(), error })
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
                Err(error) => {
                    Outcome::Failed { stage: "end", chunk: chunks.len(), decoded_before: messages.len(), error }
                }
            },
            None => Outcome::Ok { messages },
        }
    }};
}

/// Runs a `decode` request through this crate's message decoders.
pub fn run_decode(request: &Value) -> Outcome {
    let options = match frame_options(request) {
        Ok(o) => o,
        Err(error) => return Outcome::Failed { stage: "options", chunk: 0, decoded_before: 0, error },
    };
    if request["side"] == "server" {
        run_decoder!(ServerMessageDecoder, request, options)
    } else {
        run_decoder!(ClientMessageDecoder, request, options)
    }
}

fn check_error_length(id: &str, error: &ProtocolError) -> Result<(), String> {
    let count = error.to_string().chars().count();
    if count > pi_protocol::runtime::MAX_ERROR_MESSAGE_LENGTH {
        return Err(format!("{id}: error message has {count} characters"));
    }
    Ok(())
}

/// The reference's words for a failed decode, as its server sends them in `hello_error`
/// (docs/PROTOCOL.md section 6): `Invalid <side> protocol frame: ` or `... framing: ` and the
/// decoder's text, which must be [`ProtocolError::reference_text`]; `Invalid <side> protocol
/// message` for a schema error. Other texts (bad options) are not compared.
fn check_error_text(id: &str, side: &str, error: &ProtocolError, expect: &Value) -> Result<(), String> {
    let reference = expect["error"].as_str().unwrap_or_default();
    let reference = reference.strip_prefix("ProtocolValidationError: ").unwrap_or(reference);
    let frame = format!("Invalid {side} protocol frame: ");
    let framing = format!("Invalid {side} protocol framing: ");
    let detail = reference.strip_prefix(frame.as_str()).or_else(|| reference.strip_prefix(framing.as_str()));
    let schema = error.kind() == pi_protocol::ErrorKind::Schema;
    let agrees = match detail {
        Some(detail) => !schema && error.reference_text() == detail,
        None if reference == format!("Invalid {side} protocol message") => schema,
        None => return Ok(()),
    };
    if agrees {
        Ok(())
    } else {
        Err(format!("{id}: error text differs\n ours {:?} ({error})\n ref  {reference:?}", error.reference_text()))
    }
}

fn check_decode(id: &str, request: &Value, expect: &Value) -> Result<(), String> {
    let outcome = run_decode(request);
    match (&outcome, expect["ok"].as_bool() == Some(true)) {
        (Outcome::Ok { messages }, true) => {
            let canonical = expect["canonical"].as_array().map(Vec::as_slice).unwrap_or_default();
            if messages.len() != canonical.len() {
                return Err(format!("{id}: decoded {} messages, the reference {}", messages.len(), canonical.len()));
            }
            for (i, (m, c)) in messages.iter().zip(canonical).enumerate() {
                let ours = canonical_hex_of_json(m);
                if ours != c.as_str().unwrap_or_default() {
                    return Err(format!("{id}: message {i} canonical bytes differ\n ours {ours}\n ref  {c}"));
                }
            }
            if let Some(expected) = expect.get("messages").and_then(Value::as_array) {
                for (i, (m, e)) in messages.iter().zip(expected).enumerate() {
                    if !json_numbers_equal(m, e) {
                        return Err(format!("{id}: message {i} differs as JSON\n ours {m}\n ref  {e}"));
                    }
                }
            }
            Ok(())
        }
        (Outcome::Failed { stage, chunk, decoded_before, error }, false) => {
            let want_stage = expect["stage"].as_str().unwrap_or_default();
            let want_chunk = expect["chunk"].as_u64().unwrap_or_default() as usize;
            let want_before = expect["decodedBefore"].as_u64().unwrap_or_default() as usize;
            if *stage != want_stage || *chunk != want_chunk || *decoded_before < want_before {
                return Err(format!(
                    "{id}: failed at {stage}/{chunk} after {decoded_before} messages ({error}); the reference at \
                     {want_stage}/{want_chunk} after {want_before} ({})",
                    expect["error"]
                ));
            }
            check_error_length(id, error)?;
            check_error_text(id, request["side"].as_str().unwrap_or("client"), error, expect)
        }
        (Outcome::Ok { messages }, false) => Err(format!(
            "{id}: accepted ({} messages), the reference rejected at {}/{}: {}",
            messages.len(),
            expect["stage"],
            expect["chunk"],
            expect["error"]
        )),
        (Outcome::Failed { stage, chunk, error, .. }, true) => {
            Err(format!("{id}: rejected at {stage}/{chunk} ({error}), the reference accepted"))
        }
    }
}

/// JSON equality where numbers compare by value (1 == 1.0), as JavaScript sees them.
pub fn json_numbers_equal(a: &Value, b: &Value) -> bool {
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
    let options = match frame_options(request) {
        Ok(o) => o,
        Err(e) => {
            return match expect.get("frame") {
                Some(_) => Err(format!("{id}: options refused ({e}), the reference encoded")),
                None => Ok(()),
            }
        }
    };
    let message = &request["message"];
    let client = request["side"] == "client";
    let json_frame = if client { encode_client_json(message, &options) } else { encode_server_json(message, &options) };
    let typed_frame = if client {
        parse_client_message(message).and_then(|m| encode_client_message_with(&m, &options))
    } else {
        parse_server_message(message).and_then(|m| encode_server_message_with(&m, &options))
    };
    let compare_typed = request.get("schemaOrder") != Some(&Value::Bool(false));
    match expect.get("frame").and_then(Value::as_str) {
        Some(frame) => {
            let json_frame =
                json_frame.map_err(|e| format!("{id}: JSON encoder refused ({e}), the reference encoded"))?;
            if hex::encode(&json_frame) != frame {
                return Err(format!(
                    "{id}: JSON-path frame differs\n ours {}\n ref  {frame}",
                    hex::encode(&json_frame)
                ));
            }
            let typed_frame =
                typed_frame.map_err(|e| format!("{id}: typed encoder refused ({e}), the reference encoded"))?;
            if compare_typed && hex::encode(&typed_frame) != frame {
                return Err(format!("{id}: typed frame differs\n ours {}\n ref  {frame}", hex::encode(&typed_frame)));
            }
            Ok(())
        }
        None => match (json_frame, typed_frame) {
            (Ok(f), _) => Err(format!("{id}: JSON path encoded {}, the reference refused", hex::encode(f))),
            (_, Ok(f)) => Err(format!("{id}: typed path encoded {}, the reference refused", hex::encode(f))),
            (Err(a), Err(b)) => check_error_length(id, &a).and_then(|()| check_error_length(id, &b)),
        },
    }
}

/// The limits of a `decodeCbor` request (defaults where absent).
pub fn cbor_limits(request: &Value) -> Result<CborLimits, ProtocolError> {
    fn get(request: &Value, key: &'static str, default: u32, max: u64) -> Result<u64, ProtocolError> {
        match request.get(key).and_then(Value::as_f64) {
            None => Ok(u64::from(default)),
            Some(n) => number_option(key, n, max),
        }
    }
    let d = CborLimits::default();
    CborLimits::new(
        get(request, "maxByteLength", d.max_byte_length(), MAX_CONFIGURABLE_LENGTH)?,
        get(request, "maxContainerLength", d.max_container_length(), MAX_CONFIGURABLE_LENGTH)?,
        get(request, "maxDepth", d.max_depth(), u64::from(MAX_CONFIGURABLE_DEPTH))?,
    )
}

fn check_decode_cbor(id: &str, request: &Value, expect: &Value) -> Result<(), String> {
    let input = unhex(request["hex"].as_str().unwrap_or_default());
    let result = cbor_limits(request).and_then(|limits| decode_cbor(&input, limits));
    match (result, expect["ok"].as_bool() == Some(true)) {
        (Ok(value), true) => {
            let ours = canonical_hex_of_cbor(&value);
            let want = expect["canonical"].as_str().unwrap_or_default();
            if ours == want {
                Ok(())
            } else {
                Err(format!("{id}: canonical bytes differ\n ours {ours}\n ref  {want}"))
            }
        }
        (Err(e), false) => check_error_length(id, &e),
        (Ok(v), false) => Err(format!("{id}: accepted {v:?}, the reference rejected: {}", expect["error"])),
        (Err(e), true) => Err(format!("{id}: rejected ({e}), the reference accepted")),
    }
}
