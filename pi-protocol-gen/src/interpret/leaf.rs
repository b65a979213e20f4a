//! The decoders of the types that hold no other, as the runtime's `Decode` impls of `String`,
//! `Integer`, `Number`, `bool`, `Null` and `Payload` read them, and what every decoder of the
//! interpreter gives ([`Decoded`]): the program stores these functions, the decode calls them.

use pi_protocol_runtime::payload::number_value;
use pi_protocol_runtime::{Decode, Payload, ProtocolError, Reader, Rule};
use serde_json::Value;

use super::json::Json;

/// What decoding a value gives: the value as JSON, or the error.
pub(super) type Decoded<'de> = Result<Json<'de>, ProtocolError>;

/// A leaf type's decoder.
pub(super) type Leaf = for<'de> fn(&mut Reader<'de>) -> Decoded<'de>;

/// A text string.
pub(super) fn string<'de>(reader: &mut Reader<'de>) -> Decoded<'de> {
    Ok(Json::Text(reader.read_text()?))
}

/// A number that is an integer (an integral float64 too), within +-(2^53 - 1).
pub(super) fn integer<'de>(reader: &mut Reader<'de>) -> Decoded<'de> {
    let value = reader.read_number().map_err(|e| retype(e, "integer"))?;
    if value.fract() != 0.0 {
        return Err(ProtocolError::schema(Rule::WrongType { expected: "integer" }));
    }
    Ok(Json::Value(number_value(value)))
}

/// Any number.
pub(super) fn number<'de>(reader: &mut Reader<'de>) -> Decoded<'de> {
    Ok(Json::Value(number_value(reader.read_number()?)))
}

/// `true` or `false`.
pub(super) fn boolean<'de>(reader: &mut Reader<'de>) -> Decoded<'de> {
    Ok(Json::Value(Value::Bool(reader.read_bool()?)))
}

/// `null`.
pub(super) fn null<'de>(reader: &mut Reader<'de>) -> Decoded<'de> {
    reader.read_null().map(|()| Json::NULL)
}

/// Any strict JSON value, in its wire key order.
pub(super) fn payload<'de>(reader: &mut Reader<'de>) -> Decoded<'de> {
    Ok(Json::Value(Payload::decode(reader)?.to_value()))
}

/// Any strict JSON value, checked as [`payload`] checks it, then dropped (`null` stands in: a
/// payload carries no constraint a value could be tested against).
pub(super) fn payload_checked<'de>(reader: &mut Reader<'de>) -> Decoded<'de> {
    Payload::decode(reader).map(|_| Json::NULL)
}

/// Any strict JSON value, checked as [`payload`] checks it and kept as its CBOR bytes (a slice
/// of the input), written out as JSON only when the message is serialized.
pub(super) fn payload_span<'de>(reader: &mut Reader<'de>) -> Decoded<'de> {
    let start = reader.position();
    reader.skip_item()?;
    Ok(Json::Payload(reader.input_between(start, reader.position())))
}

/// A wrong type reported as `expected` (the reader names the JSON type it was asked for).
fn retype(error: ProtocolError, expected: &'static str) -> ProtocolError {
    if matches!(error.rule(), Rule::WrongType { .. }) {
        ProtocolError::schema(Rule::WrongType { expected })
    } else {
        error
    }
}
