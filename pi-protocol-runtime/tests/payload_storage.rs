//! Where a payload's bytes live (docs/PROTOCOL.md section 5): 46 bytes or less inline, longer
//! ones in a shared buffer, a decoded long payload a slice of the frame it came from; and the
//! small accessors: equality by bytes, `is_null`, `Debug` in wire order, `TryFrom<&Value>`.

use pi_protocol_runtime::{CborLimits, Decode, Payload, Reader, MAX_INLINE_PAYLOAD_LENGTH};
use serde_json::json;

/// Whether `inner` lies inside `outer`.
fn within(inner: &[u8], outer: &[u8]) -> bool {
    let (start, end) = (outer.as_ptr() as usize, outer.as_ptr() as usize + outer.len());
    let at = inner.as_ptr() as usize;
    at >= start && at + inner.len() <= end
}

fn text_payload(len: usize) -> Payload {
    // A text of n < 24 bytes takes n + 1 bytes of CBOR; 24..=255 bytes take n + 2.
    let payload = Payload::from_value(&json!("x".repeat(len))).unwrap();
    assert_eq!(payload.as_cbor().len(), if len < 24 { len + 1 } else { len + 2 });
    payload
}

#[test]
fn short_payloads_are_inline_and_longer_ones_share_one_buffer() {
    let short = text_payload(MAX_INLINE_PAYLOAD_LENGTH - 2);
    assert_eq!(short.as_cbor().len(), MAX_INLINE_PAYLOAD_LENGTH);
    // Inline: `to_bytes` is a copy, in a buffer of its own.
    let copy = short.to_bytes();
    assert_eq!(&copy[..], short.as_cbor());
    assert!(!within(&copy, short.as_cbor()));
    for long in [text_payload(MAX_INLINE_PAYLOAD_LENGTH - 1), text_payload(200)] {
        assert!(long.as_cbor().len() > MAX_INLINE_PAYLOAD_LENGTH);
        // Shared: `to_bytes` is the payload's own buffer.
        let shared = long.to_bytes();
        assert_eq!(&shared[..], long.as_cbor());
        assert_eq!(shared.as_ptr(), long.as_cbor().as_ptr());
    }
    for tiny in [Payload::null(), text_payload(0), text_payload(5), text_payload(20)] {
        assert!(!within(&tiny.to_bytes(), tiny.as_cbor()));
    }
}

#[test]
fn a_decoded_long_payload_slices_the_frame_and_a_short_one_is_copied() {
    let frame = Payload::from_value(&json!(["x".repeat(100), "short", "y".repeat(45)])).unwrap().to_bytes();
    let mut reader = Reader::new_shared(&frame, CborLimits::widest());
    assert_eq!(reader.enter_array().unwrap(), 3);
    let long = Payload::decode(&mut reader).unwrap();
    let short = Payload::decode(&mut reader).unwrap();
    let edge = Payload::decode(&mut reader).unwrap();
    assert_eq!(long, text_payload(100));
    assert_eq!(short, Payload::from_value(&json!("short")).unwrap());
    assert_eq!(edge.as_cbor().len(), MAX_INLINE_PAYLOAD_LENGTH + 1);
    assert!(within(long.as_cbor(), &frame));
    assert!(within(edge.as_cbor(), &frame));
    assert!(!within(short.as_cbor(), &frame));
}

#[test]
fn payloads_compare_by_their_bytes() {
    let one = Payload::from_json_str("[1]").unwrap();
    assert_eq!(one, Payload::from_json_str("[ 1 ]").unwrap());
    assert_ne!(one, Payload::from_json_str("[2]").unwrap());
    assert_ne!(one, Payload::null());
}

#[test]
fn null_is_null_and_nothing_else_is() {
    assert!(Payload::null().is_null());
    assert!(Payload::from_json_str("null").unwrap().is_null());
    assert!(Payload::default().is_null());
    for other in ["0", "false", "\"null\"", "[null]", "{}"] {
        assert!(!Payload::from_json_str(other).unwrap().is_null(), "{other}");
    }
}

#[test]
fn debug_shows_the_json_in_wire_order() {
    let payload = Payload::from_json_str(r#"{"b": 1, "a": [true, null]}"#).unwrap();
    assert_eq!(format!("{payload:?}"), r#"Payload({"b":1,"a":[true,null]})"#);
}

#[test]
fn try_from_a_value_encodes_it() {
    let value = json!({"serviceId": "s", "args": [1.5, "two"]});
    let by_ref = Payload::try_from(&value).unwrap();
    assert_eq!(by_ref, Payload::from_value(&value).unwrap());
    assert_eq!(by_ref.to_value(), value);
    assert_eq!(Payload::try_from(value.clone()).unwrap(), by_ref);
    assert!(Payload::try_from(&json!(1u64 << 60)).is_err());
}
