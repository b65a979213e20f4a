//! Schema-agnostic runtime of `pi-protocol`: the strict CBOR subset, framing, limits, the opaque
//! JSON payload type and the one error type (docs/PROTOCOL.md sections 1-3, 5 and 6).
//!
//! This crate knows nothing of the Pi envelopes. `pi-protocol-derive` turns envelope types into
//! implementations of the [`Decode`], [`Encode`] and [`Validate`] traits defined here, and the
//! `pi-protocol` facade puts the two together.
//!
//! ```
//! use pi_protocol_runtime::{decode_cbor, encode_cbor, CborLimits, CborValue};
//! let item = decode_cbor(&[0xa1, 0x61, b'a', 0xf5], CborLimits::default()).unwrap();
//! assert_eq!(item, CborValue::Map(vec![("a".into(), CborValue::Bool(true))]));
//! assert_eq!(encode_cbor(&item, CborLimits::default()).unwrap(), vec![0xa1, 0x61, b'a', 0xf5]);
//! ```

// One `unsafe` block exists, in `cbor::reader::text::utf8_str`, allowed there alone (see its comment).

/// The crate's README (the page crates.io shows), compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod cbor;
pub mod checks;
pub mod codec;
mod containers;
pub mod error;
pub mod frame;
pub mod frame_reader;
pub mod json;
mod json_text;
mod leaf_codec;
pub mod limits;
pub mod message;
pub mod number;
/// The engine of schema `pattern`s (the [`pi-protocol-pattern`](pi_protocol_pattern) crate),
/// under the path derived and generated code call at run time: `pi_protocol_runtime::pattern`.
#[doc(inline)]
pub use pi_protocol_pattern as pattern;
pub mod payload;
pub mod record;
mod scalar;
pub mod serde_de;
pub mod serde_impls;
pub mod serde_ser;
pub mod text;
pub mod vectored;
pub mod wire_json;

pub use cbor::{decode_cbor, encode_cbor, CborValue, Reader, Writer};
pub use codec::{
    key_equals, Decode, Encode, JsonTypes, KeySet, LiteralEntry, Positional, Scalar, Tagged, Validate,
    MAX_CONSUMED_ENTRIES,
};
pub use containers::INITIAL_ITEMS_BYTES;
pub use error::{ErrorKind, PathSegment, ProtocolError, Rule, MAX_ERROR_MESSAGE_LENGTH};
pub use frame::{encode_frame, undecoded_frame_error, FrameDecoder, FrameHeader, Frames, FRAME_HEADER_LENGTH};
pub use frame_reader::{FrameReader, RawFrame};
pub use limits::{
    CborLimits, DEFAULT_MAX_BYTE_LENGTH, DEFAULT_MAX_CONTAINER_LENGTH, DEFAULT_MAX_DEPTH, DEFAULT_MAX_FRAME_LENGTH,
    MAX_CONFIGURABLE_DEPTH, MAX_CONFIGURABLE_LENGTH,
};
pub use message::{
    decode_message, decode_message_shared, decode_message_with, encode_item, encode_message, encode_message_into,
    encode_message_vectored, ChunkStorage, CodecOptions, Copied, MessageDecoder, Messages, Shared,
};
pub use number::{is_encodable_number, Integer, Null, Number, MAX_SAFE_INTEGER};
pub use payload::{Payload, MAX_INLINE_PAYLOAD_LENGTH};
pub use record::Record;
pub use text::{ArrayString, CompactString, TextStorage};
pub use vectored::{EncodedFrame, MIN_PAYLOAD_SEGMENT_LENGTH};
