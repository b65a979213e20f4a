//! JSON-side helpers: the JavaScript object key order that the reference's encoder follows.
//!
//! A JavaScript object lists keys that are array indices (`"0"`, `"7"`, `"4294967294"`; no
//! leading zeros) first, in ascending numeric order, then every other key in insertion order.
//! The reference encodes objects in that order, so a message parsed from JSON text encodes to
//! the reference's bytes only after [`to_javascript_key_order`].

use serde_json::{Map, Value};

use crate::cbor::builder::Builder;
pub use crate::cbor::object::is_array_index;
use crate::error::ProtocolError;
use crate::frame::encode_frame;
use crate::limits::CborLimits;
use crate::message::CodecOptions;
use crate::payload::Payload;

/// Parses JSON text into a payload whose objects are in JavaScript property order (array
/// indices ascending, then the other keys in the order of the text), as the reference encodes
/// what `JSON.parse` gives it; otherwise as [`Payload::from_json_str`]. The order comes from
/// the text, whatever `serde_json` features the application turns on.
///
/// ```
/// use pi_protocol_runtime::json::payload_in_javascript_order;
/// let p = payload_in_javascript_order(r#"{"b":1,"10":2,"a":3,"2":4}"#).unwrap();
/// assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"2":4,"10":2,"b":1,"a":3}"#);
/// ```
///
/// # Errors
/// As [`Payload::from_json_str`].
pub fn payload_in_javascript_order(text: &str) -> Result<Payload, ProtocolError> {
    let mut builder = Builder::javascript_order();
    crate::json_text::read(text, &mut builder)?;
    builder.finish()
}

/// Reorders every object in `value`, recursively, into JavaScript property order (array
/// indices ascending, then the other keys in their current order).
///
/// A `serde_json::Map` keeps an order of its own only when the application turns on
/// `serde_json`'s `preserve_order` feature; without it, maps iterate sorted by key and this
/// changes nothing a map can show. To get the order of JSON text, parse the text with
/// [`payload_in_javascript_order`].
///
/// ```
/// use pi_protocol_runtime::json::to_javascript_key_order;
/// let mut v: serde_json::Value = serde_json::from_str(r#"{"b":{"7":1,"x":2},"10":2}"#).unwrap();
/// to_javascript_key_order(&mut v);
/// assert_eq!(v, serde_json::json!({"10": 2, "b": {"7": 1, "x": 2}}));
/// ```
pub fn to_javascript_key_order(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(to_javascript_key_order),
        Value::Object(map) => {
            let needs_reorder = map.keys().any(|k| is_array_index(k));
            let entries = std::mem::take(map);
            let mut entries: Vec<(String, Value)> = entries.into_iter().collect();
            if needs_reorder {
                // Stable: non-index keys keep their relative order.
                entries
                    .sort_by_key(|(k, _)| if is_array_index(k) { (0, k.parse::<u64>().unwrap_or(0)) } else { (1, 0) });
            }
            let mut out = Map::with_capacity(entries.len());
            for (k, mut v) in entries {
                to_javascript_key_order(&mut v);
                out.insert(k, v);
            }
            *map = out;
        }
        _ => {}
    }
}

/// Encodes a message given as JSON exactly as the reference package encodes the same JSON text,
/// as one frame: keys in JavaScript property order ([`to_javascript_key_order`]), the payload
/// checked by `validate` (a decoder of the message type, given the very bytes that will be sent
/// and the CBOR limits of `options`), then framed against `options`' frame limit (docs/PROTOCOL.md
/// sections 1 and 3).
///
/// This is what the facade's `encode_client_json` and the schema interpreter's
/// `encode_json_frame` do, with their own decoders as `validate`.
///
/// ```
/// use pi_protocol_runtime::json::encode_json_frame;
/// use pi_protocol_runtime::{decode_cbor, CodecOptions, ProtocolError};
/// let value = serde_json::json!({"b": 1, "2": true});
/// let accept = |cbor: &[u8], limits| decode_cbor(cbor, limits).map(drop);
/// let frame = encode_json_frame(&value, &CodecOptions::default(), accept)?;
/// // Length 7, then {"2": true, "b": 1}: the array-index key first.
/// assert_eq!(frame, [0, 0, 0, 7, 0xa2, 0x61, b'2', 0xf5, 0x61, b'b', 0x01]);
/// # Ok::<(), ProtocolError>(())
/// ```
///
/// # Errors
/// `Encode` errors for JSON the protocol cannot carry (an integer beyond +-(2^53 - 1), nesting
/// beyond 512 levels); whatever `validate` reports; `Frame`/`EncodedFrameTooLong` past the
/// frame limit.
pub fn encode_json_frame<F>(value: &Value, options: &CodecOptions, validate: F) -> Result<Vec<u8>, ProtocolError>
where
    F: FnOnce(&[u8], CborLimits) -> Result<(), ProtocolError>,
{
    // Bounded-depth validation first: `clone` and the key reordering recurse without a limit,
    // so a value nested 100,000 deep would overflow the stack.
    Payload::from_value(value)?;
    let mut ordered = value.clone();
    to_javascript_key_order(&mut ordered);
    let cbor = Payload::from_value(&ordered)?;
    // Decoding the very bytes that will be sent validates the message, limits included.
    validate(cbor.as_cbor(), options.limits())?;
    encode_frame(cbor.as_cbor(), options.frame_limit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_indices_are_canonical_decimals_below_u32_max() {
        for key in ["0", "7", "10", "4294967294", "1000000000"] {
            assert!(is_array_index(key), "{key}");
        }
        // Empty, leading zero, sign, beyond 2^32 - 2, eleven digits, not a number.
        for key in ["", "00", "01", "+5", "-1", "4294967295", "10000000000", "99999999999", "1a", "a"] {
            assert!(!is_array_index(key), "{key}");
        }
    }

    #[test]
    fn text_is_read_into_javascript_key_order() {
        let payload = payload_in_javascript_order(r#"{"b":1,"10":2,"a":3,"2":[{"1":0,"0":0}]}"#).unwrap();
        // {"2": [{"0": 0, "1": 0}], "10": 2, "b": 1, "a": 3}
        let expected = [
            0xa4, 0x61, b'2', 0x81, 0xa2, 0x61, b'0', 0x00, 0x61, b'1', 0x00, 0x62, b'1', b'0', 0x02, 0x61, b'b', 0x01,
            0x61, b'a', 0x03,
        ];
        assert_eq!(payload.as_cbor(), expected);
    }

    #[test]
    fn a_json_message_is_validated_and_framed() {
        let value = serde_json::json!({"b": 1, "2": [true]});
        let accept = |cbor: &[u8], limits| crate::decode_cbor(cbor, limits).map(drop);
        let frame = encode_json_frame(&value, &CodecOptions::default(), accept).unwrap();
        assert_eq!(frame, [0, 0, 0, 8, 0xa2, 0x61, b'2', 0x81, 0xf5, 0x61, b'b', 0x01]);
        // The validator sees the very bytes that are framed, and its verdict is the result.
        let seen = std::cell::RefCell::new(Vec::new());
        let refuse = |cbor: &[u8], _| {
            seen.borrow_mut().extend_from_slice(cbor);
            Err(ProtocolError::schema(crate::Rule::Pattern).at("b"))
        };
        let err = encode_json_frame(&value, &CodecOptions::default(), refuse).unwrap_err();
        assert_eq!((err.rule(), err.path_string()), (crate::Rule::Pattern, "b".to_owned()));
        assert_eq!(seen.borrow().as_slice(), &frame[4..]);
    }
}
