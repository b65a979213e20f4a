//! `#[codec(crate = "...")]` names the runtime through a re-export.

mod runtime {
    pub use pi_protocol_runtime::*;
}

use pi_protocol_derive::Codec;

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(crate = "crate::runtime", min_length = 1)]
pub struct Label(String);

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(crate = "crate::runtime", literal(key = "type", value = "tag"))]
pub struct Tag {
    pub label: Label,
}

fn main() {
    let limits = runtime::CborLimits::default();
    let tag = Tag { label: Label::new("x").unwrap() };
    let bytes = runtime::encode_item(&tag, limits).unwrap();
    assert_eq!(runtime::decode_message::<Tag>(&bytes, limits).unwrap(), tag);
}
