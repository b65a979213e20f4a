//! A validated string newtype with a compiled pattern and a minimum length.

use std::collections::HashSet;
use std::str::FromStr;

use pi_protocol_derive::Codec;
use pi_protocol_runtime::{decode_message, encode_item, CborLimits, Rule};

/// A lowercase hex colour such as `#a0b1c2`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Codec)]
#[codec(pattern = "^\\#[0-9a-f]{6}$", min_length = 7)]
pub struct Colour(String);

fn main() {
    let limits = CborLimits::default();
    let colour = Colour::new("#a0b1c2").unwrap();
    assert_eq!(colour, "#a0b1c2");
    assert_eq!(colour.as_str(), "#a0b1c2");
    assert_eq!(colour.len(), 7);
    assert_eq!(format!("{colour}"), "#a0b1c2");
    assert_eq!(Colour::from_str("#a0b1c2").unwrap(), colour);
    assert_eq!(Colour::try_from(String::from("#a0b1c2")).unwrap(), colour);
    assert_eq!(String::from(colour.clone()), "#a0b1c2");
    assert!(Colour::is_valid("#000000"));
    assert!(!Colour::is_valid("#A0B1C2"));
    assert!(!Colour::is_valid("a0b1c2"));
    assert_eq!(Colour::new("#12345").unwrap_err().rule(), Rule::MinLength { min: 7 });
    assert_eq!(Colour::new("#1234567").unwrap_err().rule(), Rule::Pattern);

    let bytes = encode_item(&colour, limits).unwrap();
    assert_eq!(bytes, b"\x67#a0b1c2");
    assert_eq!(decode_message::<Colour>(&bytes, limits).unwrap(), colour);
    let err = decode_message::<Colour>(b"\x67#A0B1C2", limits).unwrap_err();
    assert_eq!(err.rule(), Rule::Pattern);

    let set: HashSet<Colour> = [colour.clone()].into_iter().collect();
    assert!(set.contains(&colour));
}
