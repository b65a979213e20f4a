//! The typed serde paths of payloads (docs/PROTOCOL.md section 5) against the
//! `serde_json::Value` paths they replace. Any item the strict decoder takes as a payload:
//! - `Payload::deserialize` into a `Value` gives what `to_value` gives;
//! - `Payload::from_serialize` of that value gives the bytes `Payload::from_value` gives;
//! - a typed call (a service call envelope) is read alike by `Payload::deserialize` and by
//!   `serde_json::from_value` (both accept with the same result, or both refuse), and written
//!   back alike by `Payload::from_serialize` and `Payload::from_value(&to_value(..))`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_protocol::runtime::{decode_message, CborLimits, Payload};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Call {
    service_id: String,
    instance: Option<String>,
    member: String,
    args: Vec<Value>,
    #[serde(default)]
    timeout_ms: Option<u32>,
}

fuzz_target!(|data: &[u8]| {
    let Ok(payload) = decode_message::<Payload>(data, CborLimits::default()) else {
        return;
    };
    let value = payload.to_value();
    let read: Value = payload.deserialize().expect("every payload reads as a Value");
    assert_eq!(read, value, "deserialize and to_value differ");
    // The value went through serde_json, whose depth limit is 128: beyond it the text paths
    // refuse, and there is nothing to compare.
    if let Ok(expected) = Payload::from_value(&value) {
        let written = Payload::from_serialize(&value).expect("what from_value writes, from_serialize writes");
        assert_eq!(written.as_cbor(), expected.as_cbor(), "from_serialize and from_value differ");
    }
    let typed = payload.deserialize::<Call>();
    let via_value = serde_json::from_value::<Call>(value);
    match (typed, via_value) {
        (Ok(typed), Ok(via_value)) => {
            assert_eq!(typed, via_value, "the typed call differs");
            let written = Payload::from_serialize(&typed).expect("a call serializes");
            let expected = Payload::from_value(&serde_json::to_value(&typed).expect("a call converts"))
                .expect("a call converts");
            assert_eq!(written.as_cbor(), expected.as_cbor(), "the written call differs");
        }
        (Err(_), Err(_)) => {}
        (typed, via_value) => panic!("one path refused: typed {typed:?}, via Value {via_value:?}"),
    }
});
