//! A validated string newtype with a compiled pattern and a minimum length.

use std::collections::HashSet;
use std::str::FromStr;

use pi_protocol_derive::Codec;
use pi_protocol_runtime::{decode_message, encode_item, ArrayString, CborLimits, CompactString, Rule};

/// A lowercase hex colour such as `#a0b1c2`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Codec)]
#[codec(pattern = "^#[0-9a-f]{6}$", min_length = 7)]
pub struct Colour(String);

/// The same colour stored in place: the pattern fixes the length at 7 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Codec)]
#[codec(pattern = "^#[0-9a-f]{6}$")]
pub struct FixedColour(ArrayString<7>);

/// Any non-empty name, inline up to 24 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Codec)]
#[codec(min_length = 1)]
pub struct Name(CompactString);

fn main() {
    let limits = CborLimits::default();
    let fixed = FixedColour::new("#a0b1c2").unwrap();
    assert_eq!(fixed.as_str(), "#a0b1c2");
    assert_eq!(fixed.clone().into_string(), "#a0b1c2");
    assert_eq!(FixedColour::new("#a0b1c2d").unwrap_err().rule(), Rule::Pattern);
    assert_eq!(decode_message::<FixedColour>(b"\x67#a0b1c2", limits).unwrap(), fixed);
    assert_eq!(decode_message::<FixedColour>(b"\x68#a0b1c2d", limits).unwrap_err().rule(), Rule::Pattern);
    let long = "n".repeat(40);
    assert_eq!(Name::new(long.as_str()).unwrap().as_str(), long);
    assert_eq!(Name::new("").unwrap_err().rule(), Rule::MinLength { min: 1 });

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
