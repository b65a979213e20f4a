//! What `inspect` and `stats` say about one decoded frame: its message type, id and the sizes of
//! its opaque payloads.

use pi_protocol::runtime::decode_message;
use pi_protocol::{CborLimits, ClientMessage, ProtocolError, Response, ServerMessage};

use crate::Side;

/// A decoded frame, summarised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// `hello`, `request`, `cancel`, `hello_error`, `response (ok)`, `response (error)`,
    /// `service_update`, `attachment (route)`, `attachment (cleared)`, or `other` for a message
    /// (or response shape) this summary does not know.
    pub kind: &'static str,
    /// The request id or subscription id the message carries, if any.
    pub id: Option<String>,
    /// The opaque payload (`call`, `result` or `update`) and its CBOR size in bytes.
    pub payload: Option<(&'static str, usize)>,
}

/// Decodes one frame payload with the library's rules and summarises it.
pub fn summarise(side: Side, payload: &[u8], limits: CborLimits) -> Result<Summary, ProtocolError> {
    Ok(match side {
        Side::Client => match decode_message::<ClientMessage>(payload, limits)? {
            ClientMessage::Hello(_) => Summary { kind: "hello", id: None, payload: None },
            ClientMessage::Request(r) => Summary {
                kind: "request",
                id: Some(r.id.as_str().to_owned()),
                payload: Some(("call", r.call.as_cbor().len())),
            },
            ClientMessage::Cancel(c) => Summary { kind: "cancel", id: Some(c.id.as_str().to_owned()), payload: None },
            _ => OTHER,
        },
        Side::Server => match decode_message::<ServerMessage>(payload, limits)? {
            ServerMessage::Hello(_) => Summary { kind: "hello", id: None, payload: None },
            ServerMessage::HelloError(_) => Summary { kind: "hello_error", id: None, payload: None },
            ServerMessage::Response(Response::Success(s)) => Summary {
                kind: "response (ok)",
                id: Some(s.id.as_str().to_owned()),
                payload: s.result.as_ref().map(|p| ("result", p.as_cbor().len())),
            },
            ServerMessage::Response(Response::Failure(f)) => {
                Summary { kind: "response (error)", id: Some(f.id.as_str().to_owned()), payload: None }
            }
            ServerMessage::ServiceUpdate(u) => Summary {
                kind: "service_update",
                id: Some(u.subscription_id.as_str().to_owned()),
                payload: Some(("update", u.update.as_cbor().len())),
            },
            ServerMessage::Attachment(a) => Summary {
                kind: if a.attachment.is_some() { "attachment (route)" } else { "attachment (cleared)" },
                id: None,
                payload: None,
            },
            _ => OTHER,
        },
    })
}

/// The summary of a message type (or response shape) the schema has but this summary does not
/// list.
const OTHER: Summary = Summary { kind: "other", id: None, payload: None };
