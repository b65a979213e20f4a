//! The leaf values of decoding, which know neither the reader nor the codec traits: the JSON
//! types an item can have ([`JsonTypes`]), a scalar read from a map entry ([`Scalar`]) and the
//! comparison of a raw map key with a schema key ([`key_equals`]). The CBOR reader and the
//! codec traits both use them; [`crate::codec`] re-exports them under their public paths.

/// A set of JSON types (null, boolean, number, string, array, object), as [`Decode::TYPES`](crate::Decode::TYPES)
/// declares them and [`Reader::peek_json_type`](crate::Reader::peek_json_type) reports the next item's.
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

    /// The types in both sets.
    ///
    /// ```
    /// use pi_protocol_runtime::JsonTypes;
    /// let both = JsonTypes::STRING.union(JsonTypes::NULL).intersection(JsonTypes::NULL.union(JsonTypes::ARRAY));
    /// assert_eq!(both, JsonTypes::NULL);
    /// assert!(JsonTypes::STRING.intersection(JsonTypes::NUMBER).is_empty());
    /// ```
    #[must_use]
    pub const fn intersection(self, other: JsonTypes) -> JsonTypes {
        JsonTypes(self.0 & other.0)
    }

    /// Whether the set holds no type.
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set's types in words, `or` between them (`"null or string"`), in the order of the
    /// constants above; empty for [`JsonTypes::NONE`].
    ///
    /// ```
    /// use pi_protocol_runtime::JsonTypes;
    /// assert_eq!(JsonTypes::STRING.union(JsonTypes::NULL).describe(), "null or string");
    /// assert_eq!(JsonTypes::ANY.describe(), "null or boolean or number or string or array or object");
    /// ```
    #[must_use]
    pub fn describe(self) -> String {
        const NAMES: [(JsonTypes, &str); 6] = [
            (JsonTypes::NULL, "null"),
            (JsonTypes::BOOLEAN, "boolean"),
            (JsonTypes::NUMBER, "number"),
            (JsonTypes::STRING, "string"),
            (JsonTypes::ARRAY, "array"),
            (JsonTypes::OBJECT, "object"),
        ];
        let parts: Vec<&str> = NAMES.iter().filter(|(bit, _)| self.contains(*bit)).map(|(_, name)| *name).collect();
        parts.join(" or ")
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
