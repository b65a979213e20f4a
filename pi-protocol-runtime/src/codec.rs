//! The traits that derived envelope types implement, and the small helpers their generated code
//! calls. `pi-protocol-derive` emits implementations of [`Decode`], [`Encode`], [`Validate`],
//! [`Tagged`] and [`KeySet`]; nothing here knows any particular schema.

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
    /// Reads one item at the reader's position and advances past it.
    ///
    /// # Errors
    /// A [`ProtocolError`] of kind `Cbor` for malformed or unsupported CBOR, or of kind `Schema`
    /// for a value that does not satisfy the type's schema.
    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError>;
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
/// read to choose the variant, handed on to the variant's [`DecodeMap::decode_entries`].
pub type LiteralEntry<'de> = (&'de [u8], Scalar<'de>);

/// A map-shaped type (a struct or a union of structs) that can finish decoding a map whose
/// head, and possibly some literal entries, were already read: how unions decode in one pass.
///
/// A tagged union reads its tag where the map starts with it (the reference always writes
/// the tag first), picks the variant by the tag's value and lets the variant read the rest; it
/// peeks only when the tag comes later.
pub trait DecodeMap<'de>: Sized {
    /// Decodes the rest of a map entered with [`Reader::enter_map`]: `remaining` entries are
    /// still at the cursor, `consumed` holds the literal entries already read. Leaves the map
    /// ([`Reader::leave`]) at the end.
    ///
    /// # Errors
    /// As [`Decode::decode`]; a `consumed` key the type does not have is `UnknownField`.
    fn decode_entries(
        reader: &mut Reader<'de>,
        remaining: usize,
        consumed: &[LiteralEntry<'de>],
    ) -> Result<Self, ProtocolError>;
}

/// Literal entries a tagged union keeps in hand for its variant (nested tagged unions add one
/// each); with more, a union peeks instead of consuming.
pub const MAX_CONSUMED_ENTRIES: usize = 4;

/// A map-shaped type whose literal keys (such as `type: "hello"` or `ok: true`) let a tagged
/// union pick it without decoding it first.
pub trait Tagged {
    /// Whether a map whose key `key` holds `value` can be this type.
    ///
    /// Returns `false` when `key` is not one of the type's literal keys or holds another value.
    fn accepts(key: &str, value: &Scalar<'_>) -> bool;
}

/// A map-shaped type described by its set of keys, which lets a key-set union (a target is a
/// server target or a session target) pick it from the keys a map holds.
pub trait KeySet {
    /// Every key the type may hold, in schema order, literal keys included.
    const KEYS: &'static [&'static str];
    /// The keys the type must hold.
    const REQUIRED: &'static [&'static str];

    /// Whether a map holding exactly `keys` has the shape of this type: every key is known and
    /// every required key is present. Values are not looked at.
    fn matches_keys(keys: &[&str]) -> bool {
        let bytes: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        Self::matches_key_bytes(&bytes)
    }

    /// [`matches_keys`](Self::matches_keys) for keys held as their UTF-8 bytes, as
    /// [`Reader::peek_map_keys_into`](crate::Reader::peek_map_keys_into) lists them.
    fn matches_key_bytes(keys: &[&[u8]]) -> bool {
        keys.iter().all(|k| Self::KEYS.iter().any(|known| known.as_bytes() == *k))
            && Self::REQUIRED.iter().all(|r| keys.contains(&r.as_bytes()))
    }
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
