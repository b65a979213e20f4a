//! The JSON entry points named after the reference package: validating a `serde_json::Value`
//! as a message (the derived `from_json` of the message enums), and encoding a message given as
//! JSON with the reference's key order. Rendering a message as JSON is the derived `to_json`.

use pi_protocol_runtime::json::{encode_json_frame, payload_in_javascript_order};
use pi_protocol_runtime::{decode_message, encode_frame, CodecOptions, ProtocolError};
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

/// Encodes a client message given as a `serde_json::Value`, after validating it like
/// [`parse_client_message`], with keys in the order the value iterates them (array-index keys
/// first, ascending, as a JavaScript object holds them).
///
/// That order is the order given only when the application turns on `serde_json`'s
/// `preserve_order` feature (without it, `serde_json::Map` iterates keys sorted). To encode
/// JSON text exactly as the reference encodes the same text, whatever the features, use
/// [`encode_client_json_str`]. The typed [`encode_client_message`](crate::encode_client_message)
/// writes envelope keys in schema order instead.
///
/// # Errors
/// As [`parse_client_message`], plus `Frame`/`EncodedFrameTooLong` past the frame limit.
///
/// ```
/// use serde_json::json;
/// let frame = pi_protocol::encode_client_json(&json!({"type": "hello", "version": 8}), &Default::default()).unwrap();
/// assert_eq!(frame.len(), 4 + 21);
/// ```
pub fn encode_client_json(value: &Value, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
    encode_message_json::<ClientMessage>(value, options)
}

/// Encodes a server message given as a `serde_json::Value`, as [`encode_client_json`] does
/// for client messages.
///
/// # Errors
/// As [`encode_client_json`].
pub fn encode_server_json(value: &Value, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
    encode_message_json::<ServerMessage>(value, options)
}

/// Encodes a client message given as JSON text exactly as the reference package encodes the
/// same text: keys in JavaScript property order (array-index keys first, ascending, then the
/// others in the order of the text), numbers read exactly, after validating it like
/// [`parse_client_message`]. No `serde_json::Value` is built, so neither order nor numbers
/// depend on the `serde_json` features an application turns on (docs/PROTOCOL.md section 7).
///
/// Use it where bytes must match what the TypeScript peer would produce for the same JSON.
///
/// # Errors
/// `Schema`/`WrongType { expected: "JSON" }` for text that is not JSON; otherwise as
/// [`encode_client_json`].
///
/// ```
/// let frame = pi_protocol::encode_client_json_str(r#"{"version": 8, "type": "hello"}"#, &Default::default())?;
/// assert_eq!(&frame[4..6], &[0xa2, 0x67]); // "version" first, as given
/// # Ok::<(), pi_protocol::ProtocolError>(())
/// ```
pub fn encode_client_json_str(text: &str, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
    encode_message_json_str::<ClientMessage>(text, options)
}

/// Encodes a server message given as JSON text, as [`encode_client_json_str`] does for client
/// messages.
///
/// # Errors
/// As [`encode_client_json_str`].
pub fn encode_server_json_str(text: &str, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
    encode_message_json_str::<ServerMessage>(text, options)
}

/// [`encode_client_json_str`] for any message type `T`, such as the ones a crate generates from
/// its own schema: the text validated as a `T`, encoded as the reference encodes it.
///
/// # Errors
/// As [`encode_client_json_str`], with the rules of `T`.
///
/// ```
/// use pi_protocol::{encode_client_json_str, encode_message_json_str, ClientMessage};
/// let hello = r#"{"version": 8, "type": "hello"}"#;
/// let frame = encode_message_json_str::<ClientMessage>(hello, &Default::default())?;
/// assert_eq!(frame, encode_client_json_str(hello, &Default::default())?);
/// # Ok::<(), pi_protocol::ProtocolError>(())
/// ```
pub fn encode_message_json_str<T>(text: &str, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError>
where
    T: for<'de> pi_protocol_runtime::Decode<'de>,
{
    let cbor = payload_in_javascript_order(text)?;
    // Decoding the very bytes that will be sent validates the message, limits included.
    decode_message::<T>(cbor.as_cbor(), options.limits())?;
    encode_frame(cbor.as_cbor(), options.frame_limit())
}

/// [`encode_client_json`] for any message type `T`, such as the ones a crate generates from its
/// own schema: the value validated as a `T`, its keys in the order it iterates them.
///
/// # Errors
/// As [`encode_client_json`], with the rules of `T`.
///
/// ```
/// use pi_protocol::{encode_client_json, encode_message_json, ClientMessage};
/// let hello = serde_json::json!({"type": "hello", "version": 8});
/// let frame = encode_message_json::<ClientMessage>(&hello, &Default::default())?;
/// assert_eq!(frame, encode_client_json(&hello, &Default::default())?);
/// # Ok::<(), pi_protocol::ProtocolError>(())
/// ```
pub fn encode_message_json<T>(value: &Value, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError>
where
    T: for<'de> pi_protocol_runtime::Decode<'de>,
{
    encode_json_frame(value, options, |cbor, limits| decode_message::<T>(cbor, limits).map(drop))
}
