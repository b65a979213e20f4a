//! The traits that derived envelope types implement, and the small helpers their generated code
//! calls. `pi-protocol-derive` emits implementations of [`Decode`], [`Encode`], [`Validate`],
//! [`Tagged`] and [`KeySet`]; nothing here knows any particular schema.
//!
//! Unions decode in two steps: the JSON type of the next item ([`JsonTypes`], from its major
//! type) narrows the variants to those whose [`Decode::TYPES`] hold it; among several
//! map-shaped variants, the literal keys ([`Tagged`]) or the key sets ([`KeySet`]) decide.

use crate::cbor::{Reader, Writer};
use crate::error::ProtocolError;

/// Strict decoding of one CBOR item into `Self`.
///
/// Implementations read exactly one item at the reader's position. They reject unknown keys,
/// duplicate keys, missing required keys, wrong literal values and wrong types, and they
/// check every schema constraint of the type, so a decoded value is always valid.
///
/// Errors carry the field path relative to the item being decoded: an implementation adds its
/// own segment with [`ProtocolError::at`] when a nested decode fails.
pub trait Decode<'de>: Sized {
    /// The JSON types a value of this type can be decoded from (a union picks its variant by
    /// them). The default, [`JsonTypes::ANY`], suits opaque values.
    const TYPES: JsonTypes = JsonTypes::ANY;

    /// Reads one item at the reader's position and advances past it.
    ///
    /// # Errors
    /// A [`ProtocolError`] of kind `Cbor` for malformed or unsupported CBOR, or of kind `Schema`
    /// for a value that does not satisfy the type's schema.
    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError>;

    /// Decodes the rest of a map entered with [`Reader::enter_map`]: `remaining` entries are
    /// still at the cursor, `consumed` holds the literal entries a union already read to choose
    /// this type. Leaves the map ([`Reader::leave`]) at the end. This is how unions of
    /// map-shaped types decode in one pass: a tagged union reads its tag where the map starts
    /// with it (the reference always writes the tag first), picks the variant by the tag's value
    /// and lets the variant read the rest; it peeks only when the tag comes later.
    ///
    /// Only map-shaped types (derived structs and unions of them) implement it; the default
    /// refuses the map as a wrong type.
    ///
    /// # Errors
    /// As [`decode`](Self::decode); a `consumed` key the type does not have is `UnknownField`.
    fn decode_entries(
        reader: &mut Reader<'de>,
        remaining: usize,
        consumed: &[LiteralEntry<'de>],
    ) -> Result<Self, ProtocolError> {
        let _ = (reader, remaining, consumed);
        Err(ProtocolError::schema(crate::Rule::NoVariant))
    }
}

/// A set of JSON types (null, boolean, number, string, array, object), as [`Decode::TYPES`]
/// declares them and [`Reader::peek_json_type`] reports the next item's.
///
/// ```
/// use pi_protocol_runtime::JsonTypes;
/// let scalar = JsonTypes::STRING.union(JsonTypes::NUMBER);
/// assert!(scalar.contains(JsonTypes::NUMBER));
/// assert!(!scalar.contains(JsonTypes::OBJECT));
/// assert!(JsonTypes::ANY.contains(JsonTypes::ARRAY));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JsonTypes(u8);

impl JsonTypes {
    /// No type.
    pub const NONE: JsonTypes = JsonTypes(0);
    /// `null`.
    pub const NULL: JsonTypes = JsonTypes(1);
    /// `true` or `false`.
    pub const BOOLEAN: JsonTypes = JsonTypes(2);
    /// A number (integer or float64 on the wire).
    pub const NUMBER: JsonTypes = JsonTypes(4);
    /// A text string.
    pub const STRING: JsonTypes = JsonTypes(8);
    /// An array.
    pub const ARRAY: JsonTypes = JsonTypes(16);
    /// An object (a map with text keys).
    pub const OBJECT: JsonTypes = JsonTypes(32);
    /// Every JSON type.
    pub const ANY: JsonTypes = JsonTypes(63);

    /// Both sets together.
    #[must_use]
    pub const fn union(self, other: JsonTypes) -> JsonTypes {
        JsonTypes(self.0 | other.0)
    }

    /// Whether every type of `other` is in `self` (and `other` is not empty).
    #[must_use]
    pub const fn contains(self, other: JsonTypes) -> bool {
        other.0 != 0 && self.0 & other.0 == other.0
    }
}

/// Canonical encoding of `Self` as one CBOR item: fields in schema order, absent optional
/// fields omitted, shortest argument widths (docs/PROTOCOL.md section 3).
///
/// Encoding never fails: every value a type can hold is encodable. Callers that accept values
/// built by users run [`Validate::validate`] first.
pub trait Encode {
    /// Appends the item to `writer`.
    fn encode(&self, writer: &mut Writer);
}

/// Schema validation of a value built in memory (docs/PROTOCOL.md section 4).
pub trait Validate {
    /// Checks every constraint that the Rust type cannot enforce by construction (for example
    /// an integer minimum on a public field).
    ///
    /// # Errors
    /// A [`ProtocolError`] of kind `Schema` naming the field path and the rule that failed.
    fn validate(&self) -> Result<(), ProtocolError>;
}

/// A literal entry of a map (its key's bytes and its scalar value) that a union has already
/// read to choose the variant, handed on to the variant's [`Decode::decode_entries`].
pub type LiteralEntry<'de> = (&'de [u8], Scalar<'de>);

/// Literal entries a tagged union keeps in hand for its variant (nested tagged unions add one
/// each); with more, a union peeks instead of consuming.
pub const MAX_CONSUMED_ENTRIES: usize = 4;

/// A type whose literal keys (such as `type: "hello"` or `ok: true`) let a tagged union pick it
/// without decoding it first. Map-shaped types (derived structs and unions) implement it with
/// their literals; every other type implements it with the defaults, which accept no map.
pub trait Tagged {
    /// Whether a map whose key `key` holds `value` can be this type.
    ///
    /// Returns `false` when `key` is not one of the type's literal keys or holds another value.
    fn accepts(key: &str, value: &Scalar<'_>) -> bool {
        let _ = (key, value);
        false
    }

    /// Whether a map whose tag keys hold `values` (`None`: the key is absent) can be this type:
    /// every tag key at which the type has a literal holds exactly that literal. Keys at which
    /// the type has no literal do not matter. A union accepts what any of its variants accepts.
    ///
    /// This is how a union told apart by several literal keys together (`role`, then `status`)
    /// picks its variant.
    fn accepts_all(values: &[(&str, Option<Scalar<'_>>)]) -> bool {
        let _ = values;
        false
    }
}

/// An array-shaped type that a union of tuples can pick by the array's length and its first
/// element, without decoding it first: a derived tuple struct (`#[codec(tuple)]`, a fixed-length
/// array such as `["s", path, value]`) accepts its own length and, when its first element is a
/// literal, that literal. A union accepts what any of its variants accepts; a plain array
/// (`Vec<T>`) and an opaque value accept every array; every other type accepts none.
///
/// This is how a union of tuples (`#[codec(tuples)]`, such as Delta's wire ops) picks its
/// variant.
pub trait Positional {
    /// Whether an array of `len` elements whose first element is `head` (`None` when the array
    /// is empty or its first element is not a scalar) can be this type.
    fn accepts_elements(len: usize, head: Option<&Scalar<'_>>) -> bool {
        let _ = (len, head);
        false
    }
}

/// `Positional` for types that accept no array, or every array.
macro_rules! positional {
    ($(impl$(<$param:ident>)? for $ty:ty = $any:expr;)*) => {$(
        impl$(<$param>)? Positional for $ty {
            fn accepts_elements(_len: usize, _head: Option<&Scalar<'_>>) -> bool {
                $any
            }
        }
    )*};
}

positional! {
    impl for String = false;
    impl for bool = false;
    impl for crate::Integer = false;
    impl for crate::Number = false;
    impl for crate::Null = false;
    impl<T> for crate::Record<T> = false;
    impl for crate::Payload = true;
    impl<T> for Vec<T> = true;
}

impl<T: Positional> Positional for Option<T> {
    fn accepts_elements(len: usize, head: Option<&Scalar<'_>>) -> bool {
        T::accepts_elements(len, head)
    }
}

impl<T: Positional> Positional for Box<T> {
    fn accepts_elements(len: usize, head: Option<&Scalar<'_>>) -> bool {
        T::accepts_elements(len, head)
    }
}

/// A map-shaped type described by its set of keys, which lets a key-set union (a target is a
/// server target or a session target) pick it from the keys a map holds.
///
/// Every other type a union can hold implements it too, with [`MAP`](Self::MAP) `false`: a
/// key-set union may also hold strings, numbers, arrays or enumerations, told apart from its
/// maps (and from each other) by their JSON type, and those match no map.
pub trait KeySet {
    /// Every key the type may hold, in schema order, literal keys included.
    const KEYS: &'static [&'static str];
    /// The keys the type must hold.
    const REQUIRED: &'static [&'static str];
    /// Whether a map can be of this type (`true` for derived structs; `false` for every other
    /// type, derived newtypes and enums included, whose `KEYS` are empty).
    const MAP: bool = true;

    /// Whether a map holding exactly `keys` has the shape of this type: every key is known and
    /// every required key is present. Values are not looked at.
    fn matches_keys(keys: &[&str]) -> bool {
        let bytes: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        Self::matches_key_bytes(&bytes)
    }

    /// [`matches_keys`](Self::matches_keys) for keys held as their UTF-8 bytes, as
    /// [`Reader::peek_map_keys_into`](crate::Reader::peek_map_keys_into) lists them.
    fn matches_key_bytes(keys: &[&[u8]]) -> bool {
        Self::MAP
            && keys.iter().all(|k| Self::KEYS.iter().any(|known| known.as_bytes() == *k))
            && Self::REQUIRED.iter().all(|r| keys.contains(&r.as_bytes()))
    }
}

/// `KeySet` for types that are never maps (see [`KeySet::MAP`]).
macro_rules! no_key_set {
    ($(impl$(<$param:ident>)? for $ty:ty;)*) => {$(
        impl$(<$param>)? KeySet for $ty {
            const KEYS: &'static [&'static str] = &[];
            const REQUIRED: &'static [&'static str] = &[];
            const MAP: bool = false;
        }
    )*};
}

no_key_set! {
    impl for String;
    impl for bool;
    impl for crate::Integer;
    impl for crate::Number;
    impl for crate::Null;
    impl for crate::Payload;
    impl<T> for Vec<T>;
    impl<T> for Option<T>;
}

/// Whether the map key `key` (raw bytes) is `expected`, a key of the schema.
///
/// Derived decoders call this with a constant `expected`, so after inlining its words are
/// constants too: a key of 4 to 16 bytes is compared with two overlapping loads and two
/// comparisons, instead of one comparison per byte.
///
/// ```
/// use pi_protocol_runtime::key_equals;
/// assert!(key_equals(b"sessionId", b"sessionId"));
/// assert!(!key_equals(b"sessionIx", b"sessionId"));
/// assert!(!key_equals(b"session", b"sessionId"));
/// ```
#[inline(always)]
pub fn key_equals(key: &[u8], expected: &[u8]) -> bool {
    let n = expected.len();
    if key.len() != n {
        return false;
    }
    // Both sides hold `n` bytes; the two loads cover them, overlapping in the middle.
    let half = |b: &[u8], at: usize| b.get(at..at + 4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    let word = |b: &[u8], at: usize| b.get(at..at + 8).map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
    match n {
        4..=7 => half(key, 0) == half(expected, 0) && half(key, n - 4) == half(expected, n - 4),
        8..=16 => word(key, 0) == word(expected, 0) && word(key, n - 8) == word(expected, n - 8),
        _ => key == expected,
    }
}

/// A scalar value peeked from a map entry, as tagged unions compare it with their literals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar<'a> {
    /// A text string.
    Text(&'a str),
    /// `true` or `false`.
    Bool(bool),
    /// An integer or float64, as the JSON number it stands for.
    Number(f64),
    /// `null`.
    Null,
    /// Any other item (container, byte string).
    Other,
}

impl Scalar<'_> {
    /// Whether this scalar is the text literal `expected`.
    pub fn is_text(&self, expected: &str) -> bool {
        matches!(self, Scalar::Text(t) if *t == expected)
    }

    /// Whether this scalar is the boolean literal `expected`.
    pub fn is_bool(&self, expected: bool) -> bool {
        matches!(self, Scalar::Bool(b) if *b == expected)
    }

    /// Whether this scalar is the number literal `expected` (an integral float64 equals the
    /// integer it holds, as in JSON).
    pub fn is_number(&self, expected: f64) -> bool {
        matches!(self, Scalar::Number(n) if *n == expected)
    }
}

#[cfg(test)]
mod tests {
    use super::key_equals;

    #[test]
    fn key_equals_is_byte_equality_for_every_length_and_position() {
        for n in 0..=24usize {
            let expected: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(key_equals(&expected, &expected), "length {n}");
            // One byte changed at every position, in the low and the high bit.
            for at in 0..n {
                for flip in [0x01, 0x80] {
                    let mut key = expected.clone();
                    key[at] ^= flip;
                    assert!(!key_equals(&key, &expected), "length {n}, byte {at}, flip {flip:#x}");
                }
            }
            // Shorter and longer keys with the same prefix.
            assert!(!key_equals(&expected[..n.saturating_sub(1)], &expected) || n == 0);
            let mut longer = expected.clone();
            longer.push(b'z');
            assert!(!key_equals(&longer, &expected), "length {n} + 1");
        }
    }
}
