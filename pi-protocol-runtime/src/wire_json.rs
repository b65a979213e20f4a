//! The JSON view of derived types (`#[codec(json)]`): serde impls and `to_json` / `from_json`
//! in the exact wire shape, going through the wire encoding so that JSON and CBOR can never
//! disagree (docs/PROTOCOL.md section 4).
//!
//! Deserializing applies every rule of the wire decoder (unknown keys, literals, patterns,
//! strict-JSON payloads, integer ranges, the default CBOR limits), so a value that
//! deserializes is a value the protocol accepts. It reads a whole value first, so it needs a
//! self-describing format (JSON, CBOR, YAML, ...). Serializing renders the value as it is, in
//! wire key order, without validation.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::cbor::Writer;
use crate::codec::{Decode, Encode};
use crate::error::ProtocolError;
use crate::limits::CborLimits;
use crate::message::decode_message;
use crate::payload::Payload;
use crate::serde_impls::CborJson;

/// What derived code names through the runtime, so that a crate using the derive needs no
/// direct dependency on them.
#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use serde_json;
}

/// The wire CBOR of `value`, as it is (without validation).
#[must_use]
pub fn wire_cbor<T: Encode + ?Sized>(value: &T) -> Vec<u8> {
    let mut writer = Writer::new();
    value.encode(&mut writer);
    writer.into_vec()
}

/// Serializes `value` in its wire JSON shape, streaming its wire encoding (no JSON value tree
/// is built).
///
/// # Errors
/// Whatever `serializer` reports.
pub fn serialize_wire<T: Encode + ?Sized, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    CborJson::new(&wire_cbor(value)).serialize(serializer)
}

/// Deserializes a `T` from its wire JSON shape, applying the wire decoder's rules.
///
/// # Errors
/// The `ProtocolError` text (kind, field path, rule) as a `D::Error`.
pub fn deserialize_wire<'de, T, D>(deserializer: D) -> Result<T, D::Error>
where
    T: for<'a> Decode<'a>,
    D: Deserializer<'de>,
{
    // Written as CBOR as it is read (keys in the order of the input), then decoded: no JSON value
    // tree is built.
    let payload = <Payload as Deserialize>::deserialize(deserializer)?;
    decode_message(payload.as_cbor(), CborLimits::default()).map_err(D::Error::custom)
}

/// `value` as JSON in its wire shape (keys in wire order), without validation.
///
/// The value is written as CBOR and read back under the widest limits
/// ([`CborLimits::widest`]: 512 levels of nesting), so a value nested deeper than 512 levels,
/// which no peer would accept either, comes out as `Value::Null`; encode it with
/// [`encode_message`](crate::encode_message) to get the error instead.
#[must_use]
pub fn to_json<T: Encode + ?Sized>(value: &T) -> Value {
    // Whatever an `Encode` impl writes is strict-JSON CBOR, so only the depth limit can refuse it.
    Payload::from_cbor(wire_cbor(value).into(), CborLimits::widest()).map(|p| p.to_value()).unwrap_or(Value::Null)
}

/// Validates `value` as a `T` with exactly the rules of the wire decoder and the default limits.
///
/// # Errors
/// `Schema` errors naming the field path and rule; `Encode`/`UnencodableNumber` for a number
/// JSON can hold but the protocol cannot carry (an integer beyond +-(2^53 - 1)).
pub fn from_json<T: for<'a> Decode<'a>>(value: &Value) -> Result<T, ProtocolError> {
    let cbor = Payload::from_value(value)?;
    decode_message(cbor.as_cbor(), CborLimits::default())
}
