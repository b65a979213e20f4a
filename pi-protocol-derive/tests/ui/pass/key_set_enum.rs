//! A key-set enum: the keys of the map pick the variant.

use pi_protocol_derive::Codec;
use pi_protocol_runtime::{decode_message, encode_item, CborLimits, KeySet, Rule};

#[derive(Debug, Clone, PartialEq, Codec)]
pub struct ByName {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Codec)]
pub struct ByPath {
    pub root: String,
    pub path: String,
    pub follow: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(key_set)]
pub enum Locator {
    Name(ByName),
    Path(ByPath),
}

fn main() {
    let limits = CborLimits::default();
    assert_eq!(ByPath::KEYS, &["root", "path", "follow"]);
    assert_eq!(ByPath::REQUIRED, &["root", "path"]);
    for locator in [
        Locator::from(ByName { name: "n".to_owned() }),
        Locator::from(ByPath { root: "r".to_owned(), path: "p".to_owned(), follow: None }),
        Locator::from(ByPath { root: "r".to_owned(), path: "p".to_owned(), follow: Some(true) }),
    ] {
        let bytes = encode_item(&locator, limits).unwrap();
        assert_eq!(decode_message::<Locator>(&bytes, limits).unwrap(), locator);
    }
    // {name: "n", path: "p"} fits neither key set.
    let err = decode_message::<Locator>(b"\xa2\x64name\x61n\x64path\x61p", limits).unwrap_err();
    assert_eq!(err.rule(), Rule::NoVariant);
}
