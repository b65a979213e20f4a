//! Where a payload's bytes live (docs/PROTOCOL.md section 5): 46 bytes or less inline, longer
//! ones in a shared buffer, a decoded long payload a slice of the frame it came from; and the
//! small accessors: equality by bytes, `is_null`, `Debug` in wire order, `TryFrom<&Value>`.

use pi_protocol_runtime::{CborLimits, Decode, Payload, Reader, Rule, MAX_INLINE_PAYLOAD_LENGTH};
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
fn payloads_hash_by_their_bytes() {
    let hash = |payload: &Payload| {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        payload.hash(&mut hasher);
        hasher.finish()
    };
    // The same bytes hash alike whether inline or a slice of a longer buffer.
    let long = text_payload(MAX_INLINE_PAYLOAD_LENGTH + 10);
    let copy = Payload::from_json_str(&serde_json::to_string(&long.to_value()).unwrap()).unwrap();
    assert_eq!(hash(&long), hash(&copy));
    assert_eq!(hash(&Payload::from_json_str("[1]").unwrap()), hash(&Payload::from_json_str("[ 1 ]").unwrap()));
    // Other bytes, another hash (for these few, with the standard hasher's fixed keys).
    let hashes: std::collections::HashSet<u64> =
        ["[1]", "[2]", "null", "{}", "\"a\""].iter().map(|json| hash(&Payload::from_json_str(json).unwrap())).collect();
    assert_eq!(hashes.len(), 5);
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
    // And back: a payload into a value.
    assert_eq!(serde_json::Value::from(&by_ref), value);
}

#[test]
fn an_object_of_payloads_is_the_object_of_their_values() {
    let value = |v: serde_json::Value| Payload::from_value(&v).unwrap();
    let (wide, deep, long) = (value(json!([1, 2, 3, 4, 5])), value(json!({"a": [[{}]]})), value(json!("x".repeat(80))));
    let object = Payload::object(&[("wide", &wide), ("deep", &deep), ("long", &long)]).unwrap();
    let text = format!(r#"{{"wide":[1,2,3,4,5],"deep":{{"a":[[{{}}]]}},"long":"{}"}}"#, "x".repeat(80));
    assert_eq!(object, Payload::from_json_str(&text).unwrap());
    // Depth: one over the deepest entry; widest: the widest container inside, itself included.
    assert_eq!((object.depth(), object.widest_container()), (5, 5));
    // A key longer than the nine bytes reserved for each head.
    let named = Payload::object(&[("a-key-of-twenty-bytes", &wide)]).unwrap();
    assert_eq!(named, Payload::from_json_str(r#"{"a-key-of-twenty-bytes":[1,2,3,4,5]}"#).unwrap());
    let empty = Payload::object(&[]).unwrap();
    assert_eq!((empty.as_cbor(), empty.depth(), empty.widest_container()), (&[0xa0][..], 1, 0));
    // Many keys: the repeated one is found as well.
    let keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    let mut entries: Vec<(&str, &Payload)> = keys.iter().map(|k| (k.as_str(), &wide)).collect();
    assert_eq!(Payload::object(&entries).unwrap().widest_container(), 40);
    entries.push(("k7", &deep));
    assert_eq!(Payload::object(&entries).unwrap_err().rule(), pi_protocol_runtime::Rule::DuplicateKey);
    assert_eq!(
        Payload::object(&[("a", &wide), ("a", &deep)]).unwrap_err().rule(),
        pi_protocol_runtime::Rule::DuplicateKey
    );
}

#[test]
fn an_object_past_the_depth_limit_is_refused() {
    let mut nested = Payload::null();
    for _ in 0..512 {
        nested = Payload::object(&[("a", &nested)]).unwrap();
    }
    assert_eq!(nested.depth(), 512);
    let error = Payload::object(&[("a", &nested)]).unwrap_err();
    assert_eq!(error.rule(), pi_protocol_runtime::Rule::DepthLimit { limit: 512 });
}

#[test]
fn the_parts_of_a_payload_are_read_at_their_offsets() {
    let call = Payload::from_json_str(r#"{"member":"echo","args":[1,[2]]}"#).unwrap();
    // 0xa2; 0x66 "member" (7 bytes), the text at 8; 0x64 "echo" (5); 0x64 "args" (5), the array at 18.
    assert_eq!(call.text_at(8).unwrap(), "echo");
    assert_eq!(call.item_at(8).unwrap(), Payload::from_json_str(r#""echo""#).unwrap());
    let args = call.item_at(18).unwrap();
    assert_eq!(args, Payload::from_json_str("[1,[2]]").unwrap());
    assert_eq!((args.depth(), args.widest_container()), (2, 2));
    assert!(call.text_at(18).is_err(), "an array is not a text");
    // At the end and past it: nothing there.
    let end = call.as_cbor().len();
    for offset in [end, end + 1, 1 << 40, usize::MAX] {
        assert_eq!(call.item_at(offset).unwrap_err().rule(), Rule::Truncated, "{offset}");
        assert_eq!(call.text_at(offset).unwrap_err().rule(), Rule::Truncated, "{offset}");
    }
}

#[test]
fn a_payload_encodes_as_its_own_bytes() {
    for json in [r#"{"member":"echo","args":[1,[2]]}"#, "null", &format!("{:?}", "x".repeat(80))] {
        let payload = Payload::from_json_str(json).unwrap();
        let bytes = pi_protocol_runtime::encode_item(&payload, CborLimits::default()).unwrap();
        assert_eq!(bytes, payload.as_cbor(), "{json}");
    }
}

#[test]
fn values_nested_past_the_depth_limit_are_refused_in_objects_as_in_arrays() {
    let nested = |depth: usize, object: bool| {
        (0..depth).fold(json!(0), |inner, _| if object { json!({"a": inner}) } else { json!([inner]) })
    };
    for object in [false, true] {
        assert!(Payload::from_value(&nested(500, object)).is_ok(), "{object}");
        let error = Payload::from_value(&nested(600, object)).unwrap_err();
        assert_eq!(error.rule(), Rule::DepthLimit { limit: 512 }, "{object}");
    }
}
