//! Pi protocol version 8 for Rust: typed envelopes, strict CBOR framing, streaming decoders.
//!
//! Every message on a Pi connection is a *frame*: a 4-byte big-endian payload length followed by
//! one CBOR item of a strict subset (no tags, no indefinite lengths, only float64, safe
//! integers, text keys, no duplicates). The item is an *envelope*: a [`ClientMessage`] from a
//! client (`hello`, `request`, `cancel`) or a [`ServerMessage`] from a server (`hello`,
//! `hello_error`, `response`, `service_update`, `attachment`). Opaque application data (`call`,
//! `result`, `update`) travels as [`Payload`]: strict JSON kept as validated CBOR bytes.
//!
//! The envelope types are generated from `schema/pi-protocol.v8.json` by `cargo xtask gen` and
//! implemented by `#[derive(Codec)]`; this crate adds the entry points named after the
//! reference TypeScript package `@earendil-works/pi-protocol@0.85.1`. They are
//! `#[non_exhaustive]`, so that a schema revision may add a message type or an optional field
//! without breaking their users: a value is built with its constructor, which takes the
//! required fields (`Request::new(id, target, call)`), optional fields are set with the `with_`
//! methods (`SuccessResponse::new(id).with_result(payload)`), and a `match` on a message enum
//! ends with a `_` arm. A crate with a schema of its own generates its types the same way in its
//! `build.rs` (`pi_protocol_gen::Builder`); that code names [`Codec`] and [`runtime`] through this
//! crate, so it needs no other dependency.
//!
//! Such types get everything the built-in ones have, because the machinery is generic over the
//! message types and the built-in names are aliases or thin wrappers of it: [`MessageDecoder`]
//! and [`SharedMessageDecoder`] (`ClientMessageDecoder` is `MessageDecoder<ClientMessage>`),
//! [`encode_message`], [`decode_message`], [`encode_message_json`] and
//! [`encode_message_json_str`], `io::MessageReader` and `io::write_message`,
//! `io::MessageCodec<In, Out>` (feature `tokio`); the generated types carry the strict codec,
//! serde in the wire shape and the JSON view (`to_json`, `from_json`) themselves. The repository's `examples/extension` crate extends the protocol with messages
//! of its own this way.
//!
//! ```
//! use pi_protocol::{encode_client_message, ClientMessage, ClientMessageDecoder, Payload, Request,
//!                   RequestId, ServerId, ServerTarget};
//! use serde_json::json;
//!
//! let request = ClientMessage::from(Request::new(
//!     RequestId::new("req-1")?,
//!     ServerTarget::new(ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?),
//!     Payload::from_value(&json!({"serviceId": "$chord.service", "member": "catalogue", "args": []}))?,
//! ));
//! let frame = encode_client_message(&request)?;
//!
//! // The receiving side: any fragmentation of the stream works. `messages` hands out what each
//! // chunk completes, pull style, and allocates nothing of its own.
//! let mut decoder = ClientMessageDecoder::new();
//! let mut received = Vec::new();
//! for chunk in frame.chunks(7) {
//!     for message in decoder.messages(chunk) {
//!         received.push(message?);
//!     }
//! }
//! decoder.end()?;
//! assert_eq!(received, vec![request]);
//! # Ok::<(), pi_protocol::ProtocolError>(())
//! ```
//!
//! Source map, in the sections of `docs/PROTOCOL.md` (the protocol as this project implements
//! it, kept in the repository): framing is section 1, the CBOR subset sections 2-3, envelopes
//! section 4, payloads section 5, errors section 6, where this crate goes further than the
//! reference section 7, and the connection rules section 8.
//!
//! To send a message that carries a large payload, [`encode_client_message_vectored`] and
//! [`encode_server_message_vectored`] return an [`EncodedFrame`]: the same bytes as a list of
//! segments in which every payload of 4 KiB or more is the payload's own memory, not a copy,
//! ready for `write_vectored` or any [`bytes::Buf`] consumer.
//!
//! On top of the codec, [`connection`] holds the protocol's connection rules (handshake,
//! request correlation, cancellation, attachment routes, server fencing) as sans-IO state
//! machines, [`ClientConnection`] and [`ServerConnection`], that any transport can drive, and
//! the coordinator's message routing between many of each, [`Router`].
//!
//! Transports and interop: [`io`] reads and writes messages over blocking `std::io` streams
//! and, with the `tokio` feature, offers `tokio_util` codecs (`io::ServerCodec`,
//! `io::ClientCodec`; see `docs/ASYNC.md`). Every envelope type, its parts and the id newtypes
//! implement serde's `Serialize` and `Deserialize` in the exact wire JSON shape (`type` tags,
//! camelCase keys, `ok` picking the response shape), validating on the way in like
//! [`parse_client_message`]. The `uuid` feature converts [`ServerId`] to and from `uuid::Uuid`
//! (`From<ServerId>`, and `TryFrom<Uuid>` checking version 4 and the RFC 4122 variant).

#![forbid(unsafe_code)]

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod generated {
    pub mod v8;
}
#[cfg(feature = "tokio")]
pub mod client;
pub mod connection;
pub mod io;
#[cfg(feature = "tokio")]
pub mod server;
/// Chord's wire grammar and Delta replicated state (feature `chord`): the `pi-chord` crate.
#[cfg(feature = "chord")]
pub use pi_chord as chord;
mod json;
mod messages;
mod serde_impls;
mod shared;

pub use connection::{
    CallTarget, ClientConnection, ClientEvent, ClientOptions, CloseReason, ConnectionError, FenceReason, Router,
    RouterEvent, RouterOptions, ServerConnection, ServerEvent, ServerOptions, TransportError, Violation,
};
pub use generated::v8::*;
pub use json::{
    encode_client_json, encode_client_json_str, encode_message_json, encode_message_json_str, encode_server_json,
    encode_server_json_str, parse_client_message, parse_server_message,
};
/// `#[derive(Codec)]`, re-exported so that types generated for a crate's own schema
/// (`pi_protocol_gen::Builder` in a `build.rs`) need no dependency besides `pi-protocol`: the
/// generated code names it `pi_protocol::Codec` and the runtime `pi_protocol::runtime`.
pub use pi_protocol_derive::Codec;
pub use pi_protocol_runtime as runtime;
pub use pi_protocol_runtime::{
    decode_cbor, encode_cbor, encode_frame, CborLimits, CborValue, CodecOptions, EncodedFrame, ErrorKind, FrameDecoder,
    Integer, JsonTypes, Null, Number, PathSegment, Payload, ProtocolError, Record, Rule, DEFAULT_MAX_BYTE_LENGTH,
    DEFAULT_MAX_CONTAINER_LENGTH, DEFAULT_MAX_DEPTH, DEFAULT_MAX_FRAME_LENGTH, MAX_CONFIGURABLE_DEPTH,
    MAX_CONFIGURABLE_LENGTH, MIN_PAYLOAD_SEGMENT_LENGTH,
};
pub use pi_protocol_runtime::{
    decode_message, encode_message, encode_message_into, encode_message_vectored, MessageDecoder, Messages,
};
pub use shared::{SharedClientMessageDecoder, SharedMessageDecoder, SharedMessages, SharedServerMessageDecoder};

/// The JSON Schema the built-in envelope types were generated from
/// (`schema/pi-protocol.v8.json`, the project's own form: `$defs` plus `x-` keywords), as text.
///
/// Tools that work from the schema model rather than from the compiled types (the CLI's
/// schema-driven views, `pi_protocol_gen::Model::from_json`) read it from here, so they always
/// agree with the types of this build.
///
/// ```
/// let schema: serde_json::Value = serde_json::from_str(pi_protocol::SCHEMA_JSON).unwrap();
/// assert_eq!(schema["x-protocol-version"], pi_protocol::PROTOCOL_VERSION);
/// assert!(schema["$defs"]["ClientMessage"].is_object());
/// ```
pub const SCHEMA_JSON: &str = include_str!("../schema/pi-protocol.v8.json");

/// Whether `value` is a valid logical server id: a lowercase RFC 4122 version 4 UUID
/// (`#/$defs/ServerId`).
///
/// ```
/// assert!(pi_protocol::is_server_id("3b241101-e2bb-4255-8caf-4136c566a962"));
/// assert!(!pi_protocol::is_server_id("3B241101-E2BB-4255-8CAF-4136C566A962"));
/// ```
pub fn is_server_id(value: &str) -> bool {
    ServerId::is_valid(value)
}

/// Whether a client's offered `version` is one this implementation speaks (only
/// [`PROTOCOL_VERSION`], 8).
///
/// ```
/// assert!(pi_protocol::is_supported_protocol_version(8));
/// assert!(!pi_protocol::is_supported_protocol_version(7));
/// ```
pub fn is_supported_protocol_version(version: i64) -> bool {
    version == i64::from(PROTOCOL_VERSION)
}

/// Validates `message` and encodes it as one complete frame with the default options.
///
/// Fields are written in schema order, opaque payloads byte for byte (docs/PROTOCOL.md section 3).
///
/// # Errors
/// `Schema` errors for a value that breaks the schema (for example a negative hello version),
/// `Encode` errors when a payload breaks the CBOR limits in its place, `Frame` errors past
/// 16 MiB.
pub fn encode_client_message(message: &ClientMessage) -> Result<Vec<u8>, ProtocolError> {
    encode_message(message, &CodecOptions::default())
}

/// [`encode_client_message`] with explicit options (frame and CBOR limits).
///
/// # Errors
/// As [`encode_client_message`], against `options`.
pub fn encode_client_message_with(message: &ClientMessage, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
    encode_message(message, options)
}

/// Validates `message` and encodes it as one complete frame with the default options.
///
/// # Errors
/// As [`encode_client_message`].
pub fn encode_server_message(message: &ServerMessage) -> Result<Vec<u8>, ProtocolError> {
    encode_message(message, &CodecOptions::default())
}

/// [`encode_server_message`] with explicit options.
///
/// # Errors
/// As [`encode_client_message`], against `options`.
pub fn encode_server_message_with(message: &ServerMessage, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
    encode_message(message, options)
}

/// Validates `message` and encodes it as one frame with the default options, without copying
/// large opaque payloads (docs/PROTOCOL.md section 1).
///
/// The [`EncodedFrame`] holds the 4-byte header and the envelope as owned bytes and each payload
/// of at least [`MIN_PAYLOAD_SEGMENT_LENGTH`] bytes (4 KiB) as a segment sharing the payload's
/// own memory; read in order, its segments are exactly the bytes of
/// [`encode_client_message`]. Write it with [`EncodedFrame::write_to`] (blocking,
/// `write_vectored`), or hand it to anything that takes a [`bytes::Buf`] (tokio's
/// `write_all_buf`). For small messages it is one segment and costs the same as
/// [`encode_client_message`].
///
/// ```
/// use pi_protocol::{encode_client_message, encode_client_message_vectored, ClientMessage, Payload,
///                   Request, RequestId, ServerId, ServerTarget};
/// use serde_json::json;
///
/// let call = Payload::from_value(&json!({"member": "upload", "args": ["x".repeat(1 << 20)]}))?;
/// let request = ClientMessage::from(Request::new(
///     RequestId::new("req-1")?,
///     ServerTarget::new(ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?),
///     call.clone(),
/// ));
/// let mut frame = encode_client_message_vectored(&request)?;
/// // Envelope bytes, the call's own memory (not a copy), nothing after it.
/// let segments: Vec<&[u8]> = frame.segments().collect();
/// assert_eq!(segments.len(), 2);
/// assert_eq!(segments[1].as_ptr(), call.as_cbor().as_ptr());
///
/// let mut socket = Vec::new(); // any std::io::Write
/// frame.write_to(&mut socket)?;
/// assert_eq!(socket, encode_client_message(&request)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`encode_client_message`].
pub fn encode_client_message_vectored(message: &ClientMessage) -> Result<EncodedFrame, ProtocolError> {
    encode_message_vectored(message, &CodecOptions::default())
}

/// [`encode_client_message_vectored`] with explicit options (frame and CBOR limits).
///
/// # Errors
/// As [`encode_client_message`], against `options`.
pub fn encode_client_message_vectored_with(
    message: &ClientMessage,
    options: &CodecOptions,
) -> Result<EncodedFrame, ProtocolError> {
    encode_message_vectored(message, options)
}

/// Validates `message` and encodes it as one frame with the default options, without copying
/// large opaque payloads; see [`encode_client_message_vectored`].
///
/// # Errors
/// As [`encode_client_message`].
pub fn encode_server_message_vectored(message: &ServerMessage) -> Result<EncodedFrame, ProtocolError> {
    encode_message_vectored(message, &CodecOptions::default())
}

/// [`encode_server_message_vectored`] with explicit options.
///
/// # Errors
/// As [`encode_client_message`], against `options`.
pub fn encode_server_message_vectored_with(
    message: &ServerMessage,
    options: &CodecOptions,
) -> Result<EncodedFrame, ProtocolError> {
    encode_message_vectored(message, options)
}

/// Decodes the stream a client sends ([`ClientMessage`]s), for use on the server side
/// (docs/PROTOCOL.md sections 1, 4 and 7): the generic [`MessageDecoder`] for the built-in
/// envelopes. Feed it chunks with `push` (a `Vec` of results per chunk), `push_each` (a
/// closure) or `messages` (pull style, allocating nothing per chunk).
///
/// ```
/// let mut decoder = pi_protocol::ClientMessageDecoder::new();
/// let frame = [0, 0, 0, 0x15, 0xa2, 0x64, b't', b'y', b'p', b'e', 0x65, b'h', b'e', b'l', b'l', b'o',
///              0x67, b'v', b'e', b'r', b's', b'i', b'o', b'n', 0x08];
/// let messages = decoder.push(&frame);
/// assert!(matches!(&messages[0], Ok(pi_protocol::ClientMessage::Hello(h)) if h.version.get() == 8));
/// // The same frame again, pull style.
/// for message in decoder.messages(&frame) {
///     assert!(matches!(message, Ok(pi_protocol::ClientMessage::Hello(_))));
/// }
/// decoder.end().unwrap();
/// ```
pub type ClientMessageDecoder = MessageDecoder<ClientMessage>;

/// Decodes the stream a server sends ([`ServerMessage`]s), for use on the client side
/// (docs/PROTOCOL.md sections 1, 4 and 7): the generic [`MessageDecoder`] for the built-in
/// envelopes, like [`ClientMessageDecoder`].
pub type ServerMessageDecoder = MessageDecoder<ServerMessage>;
