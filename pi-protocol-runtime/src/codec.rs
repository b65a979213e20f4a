//! The traits that derived envelope types implement, and the small helpers their generated code
//! calls. `pi-protocol-derive` emits implementations of [`Decode`], [`Encode`], [`Validate`],
//! [`Tagged`] and [`KeySet`]; nothing here knows any particular schema.
//!
//! Unions decode in two steps: the JSON type of the next item ([`JsonTypes`], from its major
//! type) narrows the variants to those whose [`Decode::TYPES`] hold it; among several
//! map-shaped variants, the literal keys ([`Tagged`]) or the key sets ([`KeySet`]) decide.

use crate::cbor::{Reader, Writer};
use crate::error::ProtocolError;
pub use crate::scalar::{key_equals, JsonTypes, Scalar};

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
    impl<T> for Vec<T>;
    impl<T> for Option<T>;
}
