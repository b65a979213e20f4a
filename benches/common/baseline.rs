//! Baseline (a) of `docs/PERFORMANCE.md`: the same envelopes written the way a Rust developer
//! writes them without this crate — serde derive with `deny_unknown_fields`, internally tagged
//! and untagged enums, `serde_json::Value` payloads, ciborium for CBOR, and the schema checks
//! the types cannot express (the serverId pattern, non-empty ids, literal values) run after
//! decoding and before encoding.
//!
//! It is deliberately straightforward, not a strawman: one pass of ciborium into typed structs,
//! no intermediate `Value` for the envelope itself (serde buffers tagged and untagged enums into
//! its private `Content` tree, which is the cost of that approach). It is not byte-exact with the
//! reference on every input (ciborium writes floats in their shortest width), and it does not
//! enforce the strict CBOR subset (tags, duplicate keys, limits); it is a speed yardstick only.

#![allow(dead_code)]

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A request's target: the key set tells the two shapes apart.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Target {
    /// `{serverId, sessionId, attachmentId}`.
    Session(SessionTarget),
    /// `{serverId}`.
    Server(ServerTarget),
}

/// `{serverId}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServerTarget {
    /// Lowercase version 4 UUID.
    pub server_id: String,
}

/// `{serverId, sessionId, attachmentId}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionTarget {
    /// Lowercase version 4 UUID.
    pub server_id: String,
    /// Non-empty.
    pub session_id: String,
    /// Non-empty.
    pub attachment_id: String,
}

/// `{code, message}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    /// Non-empty.
    pub code: String,
    /// Any text.
    pub message: String,
}

/// What a client sends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMessage {
    /// `{type: "hello", version}`.
    Hello {
        /// Offered version (>= 0).
        version: u64,
    },
    /// `{type: "request", id, target, call}`.
    Request {
        /// Non-empty.
        id: String,
        /// Routing.
        target: Target,
        /// Opaque JSON.
        call: Value,
    },
    /// `{type: "cancel", id, target}`.
    Cancel {
        /// Non-empty.
        id: String,
        /// Routing.
        target: Target,
    },
}

/// What a server sends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerMessage {
    /// `{type: "hello", version: 8, serverId}`.
    Hello {
        /// Must be 8.
        version: u64,
        /// Lowercase version 4 UUID.
        #[serde(rename = "serverId")]
        server_id: String,
    },
    /// `{type: "hello_error", error}`.
    HelloError {
        /// Why.
        error: ErrorBody,
    },
    /// `{type: "response", id, ok, result?|error}`.
    Response(Response),
    /// `{type: "service_update", subscriptionId, update}`.
    ServiceUpdate {
        /// Non-empty.
        #[serde(rename = "subscriptionId")]
        subscription_id: String,
        /// Opaque JSON.
        update: Value,
    },
    /// `{type: "attachment", attachment: SessionTarget|null}`.
    Attachment {
        /// The live route, or null.
        attachment: Option<SessionTarget>,
    },
}

/// A response: success or failure, told apart by its keys and checked against `ok` afterwards.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Response {
    /// `{id, ok: true, result?}`.
    Success(SuccessResponse),
    /// `{id, ok: false, error}`.
    Failure(ErrorResponse),
}

/// `{id, ok: true, result?}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SuccessResponse {
    /// Non-empty.
    pub id: String,
    /// Must be true.
    pub ok: bool,
    /// Absent, or any JSON (null included).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// `{id, ok: false, error}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ErrorResponse {
    /// Non-empty.
    pub id: String,
    /// Must be false.
    pub ok: bool,
    /// Why.
    pub error: ErrorBody,
}

/// A present key is `Some`, even when it holds `null`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Why a baseline decode or encode failed.
#[derive(Debug)]
pub struct Invalid(pub String);

fn invalid<T>(why: impl Into<String>) -> Result<T, Invalid> {
    Err(Invalid(why.into()))
}

/// The `ServerId` pattern `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`,
/// checked by hand (a regex crate would be slower still).
pub fn is_server_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            14 => c == b'4',
            19 => matches!(c, b'8' | b'9' | b'a' | b'b'),
            _ => matches!(c, b'0'..=b'9' | b'a'..=b'f'),
        })
}

fn check_id(s: &str, what: &str) -> Result<(), Invalid> {
    if s.is_empty() {
        return invalid(format!("{what} is empty"));
    }
    Ok(())
}

fn check_server_id(s: &str) -> Result<(), Invalid> {
    if !is_server_id(s) {
        return invalid("serverId does not match the pattern");
    }
    Ok(())
}

fn check_session_target(t: &SessionTarget) -> Result<(), Invalid> {
    check_server_id(&t.server_id)?;
    check_id(&t.session_id, "sessionId")?;
    check_id(&t.attachment_id, "attachmentId")
}

fn check_target(t: &Target) -> Result<(), Invalid> {
    match t {
        Target::Server(t) => check_server_id(&t.server_id),
        Target::Session(t) => check_session_target(t),
    }
}

/// The schema checks a client message's types do not express.
pub fn validate_client(m: &ClientMessage) -> Result<(), Invalid> {
    match m {
        ClientMessage::Hello { .. } => Ok(()),
        ClientMessage::Request { id, target, .. } | ClientMessage::Cancel { id, target } => {
            check_id(id, "id")?;
            check_target(target)
        }
    }
}

/// The schema checks a server message's types do not express.
pub fn validate_server(m: &ServerMessage) -> Result<(), Invalid> {
    match m {
        ServerMessage::Hello { version, server_id } => {
            if *version != 8 {
                return invalid("version must be 8");
            }
            check_server_id(server_id)
        }
        ServerMessage::HelloError { error } => check_id(&error.code, "code"),
        ServerMessage::Response(Response::Success(r)) => {
            if !r.ok {
                return invalid("ok must be true");
            }
            check_id(&r.id, "id")
        }
        ServerMessage::Response(Response::Failure(r)) => {
            if r.ok {
                return invalid("ok must be false");
            }
            check_id(&r.id, "id")?;
            check_id(&r.error.code, "code")
        }
        ServerMessage::ServiceUpdate { subscription_id, .. } => check_id(subscription_id, "subscriptionId"),
        ServerMessage::Attachment { attachment } => attachment.as_ref().map_or(Ok(()), check_session_target),
    }
}

/// Decodes one frame payload (no header) and validates it.
pub fn decode_client(payload: &[u8]) -> Result<ClientMessage, Invalid> {
    let m: ClientMessage = ciborium::from_reader(payload).map_err(|e| Invalid(e.to_string()))?;
    validate_client(&m)?;
    Ok(m)
}

/// Decodes one frame payload (no header) and validates it.
pub fn decode_server(payload: &[u8]) -> Result<ServerMessage, Invalid> {
    let m: ServerMessage = ciborium::from_reader(payload).map_err(|e| Invalid(e.to_string()))?;
    validate_server(&m)?;
    Ok(m)
}

fn encode_framed<T: Serialize>(m: &T) -> Result<Vec<u8>, Invalid> {
    let mut out = vec![0; 4];
    ciborium::into_writer(m, &mut out).map_err(|e| Invalid(e.to_string()))?;
    let len = u32::try_from(out.len() - 4).map_err(|_| Invalid("frame too long".into()))?;
    out[..4].copy_from_slice(&len.to_be_bytes());
    Ok(out)
}

/// Validates and encodes one complete frame.
pub fn encode_client(m: &ClientMessage) -> Result<Vec<u8>, Invalid> {
    validate_client(m)?;
    encode_framed(m)
}

/// Validates and encodes one complete frame.
pub fn encode_server(m: &ServerMessage) -> Result<Vec<u8>, Invalid> {
    validate_server(m)?;
    encode_framed(m)
}

/// A minimal streaming frame splitter in the same style: append every chunk to a buffer, cut
/// off complete frames, decode each with `decode`.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    buffer: Vec<u8>,
}

impl StreamDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        StreamDecoder { buffer: Vec::new() }
    }

    /// Feeds `chunk`; calls `on_payload` with each complete frame's payload.
    pub fn push<E>(&mut self, chunk: &[u8], mut on_payload: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        self.buffer.extend_from_slice(chunk);
        let mut start = 0;
        while self.buffer.len() - start >= 4 {
            let b = &self.buffer[start..];
            let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
            if b.len() < 4 + len {
                break;
            }
            on_payload(&b[4..4 + len])?;
            start += 4 + len;
        }
        self.buffer.drain(..start);
        Ok(())
    }
}
