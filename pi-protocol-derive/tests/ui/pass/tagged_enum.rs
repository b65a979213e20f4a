//! A tagged enum, with a nested tagged enum as one variant.

use pi_protocol_derive::Codec;
use pi_protocol_runtime::{decode_message, encode_item, CborLimits, Rule, Scalar, Tagged};

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "kind", value = "open"))]
pub struct Open {
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "kind", value = "done"), literal(key = "ok", value = true))]
pub struct Done {}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "kind", value = "done"), literal(key = "ok", value = false))]
pub struct Failed {
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(tag = "ok")]
pub enum Outcome {
    Done(Done),
    Failed(Failed),
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(tag = "kind")]
pub enum Event {
    Open(Open),
    Outcome(Outcome),
}

fn main() {
    let limits = CborLimits::default();
    for event in [
        Event::from(Open { path: "/tmp".to_owned() }),
        Event::from(Outcome::from(Done {})),
        Event::from(Outcome::from(Failed { reason: "no".to_owned() })),
    ] {
        let bytes = encode_item(&event, limits).unwrap();
        assert_eq!(decode_message::<Event>(&bytes, limits).unwrap(), event);
    }
    assert!(Event::accepts("kind", &Scalar::Text("done")));
    assert!(!Event::accepts("kind", &Scalar::Text("close")));
    // {kind: "close"}
    let err = decode_message::<Event>(b"\xa1\x64kind\x65close", limits).unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::Literal, "kind".to_owned()));
    // {kind: "done"}: the outer tag matches, the inner `ok` is missing.
    let err = decode_message::<Event>(b"\xa1\x64kind\x64done", limits).unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::MissingField, "ok".to_owned()));
}
