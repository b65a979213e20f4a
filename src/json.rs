//! The JSON entry points named after the reference package: validating a `serde_json::Value`
//! as a message (the derived `from_json` of the message enums), and encoding a message given as
//! JSON with the reference's key order. Rendering a message as JSON is the derived `to_json`.

use pi_protocol_runtime::json::encode_json_frame;
use pi_protocol_runtime::{decode_message, CodecOptions, ProtocolError};
use serde_json::Value;

use crate::{ClientMessage, ServerMessage};

/// Validates `value` as a [`ClientMessage`] with exactly the rules of the CBOR path (unknown
/// keys, literals, id and serverId constraints, strict-JSON payloads): the reference's name for
/// [`ClientMessage::from_json`].
///
/// # Errors
/// `Schema` errors naming the field path and rule; `Encode`/`UnencodableNumber` for a number
/// JSON can hold but the protocol cannot carry (an integer beyond +-(2^53 - 1)).
///
/// ```
/// let m = pi_protocol::parse_client_message(&serde_json::json!({"type": "hello", "version": 8})).unwrap();
/// assert!(matches!(m, pi_protocol::ClientMessage::Hello(_)));
/// assert!(pi_protocol::parse_client_message(&serde_json::json!({"type": "hello"})).is_err());
/// ```
pub fn parse_client_message(value: &Value) -> Result<ClientMessage, ProtocolError> {
    ClientMessage::from_json(value)
}

/// Validates `value` as a [`ServerMessage`], like [`parse_client_message`].
///
/// # Errors
/// As [`parse_client_message`].
pub fn parse_server_message(value: &Value) -> Result<ServerMessage, ProtocolError> {
    ServerMessage::from_json(value)
}

/// Encodes a client message given as JSON exactly as the reference package encodes the same
/// JSON text: keys in JavaScript property order (array-index keys first, ascending, then the
/// others in the order given), after validating it like [`parse_client_message`].
///
/// Use it where bytes must match what the TypeScript peer would produce for the same JSON; the
/// typed [`encode_client_message`](crate::encode_client_message) writes envelope keys in schema
/// order instead.
///
/// # Errors
/// As [`parse_client_message`], plus `Frame`/`EncodedFrameTooLong` past the frame limit.
///
/// ```
/// use serde_json::json;
/// let frame = pi_protocol::encode_client_json(&json!({"version": 8, "type": "hello"}), &Default::default()).unwrap();
/// assert_eq!(&frame[4..6], &[0xa2, 0x67]); // "version" first, as given
/// ```
pub fn encode_client_json(value: &Value, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
    encode_json::<ClientMessage>(value, options)
}

/// Encodes a server message given as JSON like the reference does, as
/// [`encode_client_json`] does for client messages.
///
/// # Errors
/// As [`encode_client_json`].
pub fn encode_server_json(value: &Value, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
    encode_json::<ServerMessage>(value, options)
}

fn encode_json<T: for<'de> pi_protocol_runtime::Decode<'de>>(
    value: &Value,
    options: &CodecOptions,
) -> Result<Vec<u8>, ProtocolError> {
    encode_json_frame(value, options, |cbor, limits| decode_message::<T>(cbor, limits).map(drop))
}
