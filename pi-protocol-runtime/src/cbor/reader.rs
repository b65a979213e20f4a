//! The strict CBOR reader (docs/PROTOCOL.md section 2).
//!
//! [`Reader`] is a cursor over one complete CBOR payload. Every read checks the subset's rules
//! and the configured [`CborLimits`] before it trusts a declared length, so a lying length fails
//! as "truncated" without anything of that size being allocated. Nothing here knows the
//! envelope schema: derived decoders drive the reader.
//!
//! The reader is split by job: `head.rs` holds the grammar (the table of initial bytes and the
//! head primitives, with the short-text, float and depth rules), this file the typed reads and
//! peeks built on them, `skip.rs` the iterative walk that validates a whole item, `plain.rs`
//! the fast acceptance of small plain items in front of the walk, `words.rs` the word-at-a-time
//! string heads and key fingerprints both walkers compare keys by, and `text.rs` the UTF-8 and
//! ASCII checks of text bodies (the crate's one `unsafe` block).

use bytes::Bytes;

use crate::error::{ProtocolError, Rule};
use crate::limits::CborLimits;
use crate::scalar::{key_equals, JsonTypes, Scalar};

mod head;
mod plain;
mod skip;
#[cfg(test)]
mod tests;
mod text;
mod words;

pub use crate::number::MAX_SAFE_INTEGER;
pub(crate) use head::major;
use head::HEADS;
pub(crate) use text::{is_utf8, owned_text, utf8_str};
pub(crate) use words::FINGERPRINT_SPREAD;

/// Statistics of a skipped item: how deep it nests below itself and its widest container.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemShape {
    /// Levels of nesting below the item (0 for a scalar, 1 for `[1]`).
    pub depth: u32,
    /// Entries of the largest array or map inside the item (0 when there is none).
    pub widest: u32,
}

/// How many map keys that are not text strings, each inside the one before, are walked for an
/// earlier error before the innermost is refused at once ([`Reader::non_text_key`]).
const MAX_KEY_NESTING: u8 = 8;

/// A strict CBOR cursor over one payload (see the module documentation).
///
/// The reader tracks the depth of the next item: the first item read is at depth 0, entries of a
/// container are one deeper. `allow_bytes` decides whether byte strings are acceptable (raw
/// [`decode_cbor`](crate::decode_cbor)) or a schema violation (inside messages, which are JSON).
#[derive(Debug, Clone)]
pub struct Reader<'de> {
    input: &'de [u8],
    pos: usize,
    depth: u32,
    limits: CborLimits,
    allow_bytes: bool,
    shared: Option<&'de Bytes>,
    /// How many map keys that are not text strings enclose the item this reader walks
    /// ([`Reader::non_text_key`]).
    key_nesting: u8,
    /// Whether this reader walks the entries of a container that announces more entries than
    /// the input can hold, to find the first error in wire order (`Reader::short_container`).
    in_short_container: bool,
}

impl<'de> Reader<'de> {
    /// A reader over `input` applying `limits`, in message mode (byte strings refused).
    pub fn new(input: &'de [u8], limits: CborLimits) -> Self {
        Reader {
            input,
            pos: 0,
            depth: 0,
            limits,
            allow_bytes: false,
            shared: None,
            key_nesting: 0,
            in_short_container: false,
        }
    }

    /// A reader over a shared buffer: opaque payloads it yields are zero-copy slices of `input`.
    pub fn new_shared(input: &'de Bytes, limits: CborLimits) -> Self {
        Reader {
            input: input.as_ref(),
            pos: 0,
            depth: 0,
            limits,
            allow_bytes: false,
            shared: Some(input),
            key_nesting: 0,
            in_short_container: false,
        }
    }

    /// Accept byte strings (raw CBOR mode) instead of refusing them as non-JSON.
    pub fn allow_byte_strings(mut self, allow: bool) -> Self {
        self.allow_bytes = allow;
        self
    }

    /// The limits in force.
    pub fn limits(&self) -> CborLimits {
        self.limits
    }

    /// The reader moved to byte `pos` of its input (at most the input's length), at depth 0.
    pub(crate) fn at(mut self, pos: usize) -> Self {
        debug_assert!(pos <= self.input.len());
        self.pos = pos;
        self
    }

    /// Byte offset of the cursor in the input.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Depth of the next item to be read.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Whether the whole input has been consumed.
    pub fn is_at_end(&self) -> bool {
        self.pos >= self.input.len()
    }

    /// The input bytes in `start..end` (offsets from [`position`](Self::position)) as an owned
    /// buffer: a zero-copy slice when the reader was built with [`new_shared`](Self::new_shared).
    ///
    /// # Panics
    /// When `start..end` is not a range of the input (pass positions the reader has been at).
    pub fn bytes_between(&self, start: usize, end: usize) -> Bytes {
        match self.shared {
            Some(shared) => shared.slice(start..end),
            None => Bytes::copy_from_slice(self.input_between(start, end)),
        }
    }

    /// The input bytes in `start..end`, borrowed.
    ///
    /// # Panics
    /// As [`bytes_between`](Self::bytes_between).
    pub fn input_between(&self, start: usize, end: usize) -> &'de [u8] {
        &self.input[start..end]
    }

    /// Fails with `TrailingData` unless the input is fully consumed.
    ///
    /// # Errors
    /// `Cbor`/`TrailingData`.
    #[inline]
    pub fn finish(&self) -> Result<(), ProtocolError> {
        if self.is_at_end() {
            Ok(())
        } else {
            Err(ProtocolError::cbor(Rule::TrailingData))
        }
    }

    // ------------------------------------------------------ typed primitives

    /// Reads a definite map head at the cursor, checking depth and container limits, and
    /// returns the entry count. Entries read afterwards are one level deeper until
    /// [`leave`](Self::leave).
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "object" }` for any other well-formed item; `Cbor` errors
    /// for malformed heads, limits and truncation.
    #[inline(always)]
    pub fn enter_map(&mut self) -> Result<usize, ProtocolError> {
        // Fast path: a map of fewer than 24 entries at an allowed depth, its entries within reach.
        if let Some(&b) = self.input.get(self.pos) {
            let n = usize::from(b.wrapping_sub(0xa0));
            if n < 24
                && self.depth_allows(self.depth)
                && n as u64 <= u64::from(self.limits.max_container_length())
                && 2 * n < self.input.len() - self.pos
            {
                self.pos += 1;
                self.depth += 1;
                return Ok(n);
            }
        }
        self.enter_map_slow()
    }

    #[inline(never)]
    fn enter_map_slow(&mut self) -> Result<usize, ProtocolError> {
        let (m, ai) = self.initial()?;
        if m != major::MAP {
            return Err(self.wrong_type(m, "object"));
        }
        let n = self.container_length(ai, 2)?;
        self.depth += 1;
        Ok(n)
    }

    /// Reads a definite array head, like [`enter_map`](Self::enter_map) for arrays.
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "array" }`, or `Cbor` errors.
    pub fn enter_array(&mut self) -> Result<usize, ProtocolError> {
        let (m, ai) = self.initial()?;
        if m != major::ARRAY {
            return Err(self.wrong_type(m, "array"));
        }
        let n = self.container_length(ai, 1)?;
        self.depth += 1;
        Ok(n)
    }

    /// Ends a container entered with [`enter_map`](Self::enter_map) or
    /// [`enter_array`](Self::enter_array).
    #[inline]
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Reads a map key, which must be a text string.
    ///
    /// # Errors
    /// `Cbor`/`NonTextKey` for any other item, `InvalidUtf8`, limits, truncation.
    pub fn read_key(&mut self) -> Result<&'de str, ProtocolError> {
        utf8_str(self.read_key_raw()?).ok_or_else(|| ProtocolError::cbor(Rule::InvalidUtf8))
    }

    /// Reads a map key, which must be a text string, as its UTF-8 bytes (validated).
    ///
    /// # Errors
    /// As [`read_key`](Self::read_key).
    #[inline]
    pub fn read_key_bytes(&mut self) -> Result<&'de [u8], ProtocolError> {
        let key = self.read_key_raw()?;
        if is_utf8(key) {
            Ok(key)
        } else {
            Err(ProtocolError::cbor(Rule::InvalidUtf8))
        }
    }

    /// Reads a text string.
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "string" }` for another item; `Cbor` errors.
    #[inline(always)]
    pub fn read_text(&mut self) -> Result<&'de str, ProtocolError> {
        match self.short_str_at_cursor() {
            Some(text) => Ok(text),
            None => self.read_text_slow(),
        }
    }

    #[inline(never)]
    fn read_text_slow(&mut self) -> Result<&'de str, ProtocolError> {
        let (m, ai) = self.initial()?;
        if m != major::TEXT {
            return Err(self.wrong_type(m, "string"));
        }
        self.text_body(ai)
    }

    /// Reads a text string into a `String` of its own (see [`owned_text`]: long text is checked
    /// and copied in one pass).
    ///
    /// # Errors
    /// As [`read_text`](Self::read_text).
    pub(crate) fn read_text_owned(&mut self) -> Result<String, ProtocolError> {
        if let Some(text) = self.short_str_at_cursor() {
            return Ok(text.to_owned());
        }
        let (m, ai) = self.initial()?;
        if m != major::TEXT {
            return Err(self.wrong_type(m, "string"));
        }
        let body = self.string_body(ai)?;
        owned_text(body).ok_or_else(|| ProtocolError::cbor(Rule::InvalidUtf8))
    }

    /// Reads a byte string's content (raw CBOR mode only).
    ///
    /// # Errors
    /// `Schema`/`ByteString` in message mode; `Schema`/`WrongType { expected: "bytes" }` for
    /// another item; `Cbor` errors.
    pub fn read_byte_string(&mut self) -> Result<&'de [u8], ProtocolError> {
        let (m, ai) = self.initial()?;
        if m != major::BYTES {
            return Err(self.wrong_type(m, "bytes"));
        }
        if !self.allow_bytes {
            return Err(ProtocolError::schema(Rule::ByteString));
        }
        self.string_body(ai)
    }

    /// Reads `true` or `false`.
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "boolean" }`; `Cbor` errors.
    pub fn read_bool(&mut self) -> Result<bool, ProtocolError> {
        match self.read_scalar_or_type("boolean")? {
            Scalar::Bool(b) => Ok(b),
            _ => Err(ProtocolError::schema(Rule::WrongType { expected: "boolean" })),
        }
    }

    /// Reads an integer (major 0/1) or a float64 as the JSON number it stands for.
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "number" }`; `Cbor` errors (`UnsafeInteger`,
    /// `NonFiniteNumber`, widths other than float64).
    pub fn read_number(&mut self) -> Result<f64, ProtocolError> {
        match self.read_scalar_or_type("number")? {
            Scalar::Number(n) => Ok(n),
            _ => Err(ProtocolError::schema(Rule::WrongType { expected: "number" })),
        }
    }

    /// Reads `null`.
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "null" }`; `Cbor` errors.
    pub fn read_null(&mut self) -> Result<(), ProtocolError> {
        match self.read_scalar_or_type("null")? {
            Scalar::Null => Ok(()),
            _ => Err(ProtocolError::schema(Rule::WrongType { expected: "null" })),
        }
    }

    /// The major type (0-7) of the next item, or `None` at the end of the input.
    pub fn peek_major(&self) -> Option<u8> {
        self.input.get(self.pos).map(|b| b >> 5)
    }

    /// The JSON type of the next item, from its initial byte (the cursor does not move):
    /// [`JsonTypes::NONE`](crate::JsonTypes::NONE) at the end of the input and for items that
    /// are no JSON value (byte strings, tags, simple values other than `false`, `true`, `null`,
    /// floats other than float64, reserved or indefinite heads), which decoding then reports.
    #[inline]
    pub fn peek_json_type(&self) -> JsonTypes {
        match self.input.get(self.pos) {
            Some(&b) => HEADS[usize::from(b)].json,
            None => JsonTypes::NONE,
        }
    }

    /// Whether the next item is `null` (the cursor does not move).
    pub fn peek_null(&self) -> bool {
        self.input.get(self.pos) == Some(&0xf6)
    }

    /// Reads a scalar where a scalar is wanted: containers, byte strings and tags are reported as
    /// a wrong type (after the CBOR-level checks of their head).
    fn read_scalar_or_type(&mut self, expected: &'static str) -> Result<Scalar<'de>, ProtocolError> {
        let (m, ai) = self.initial()?;
        match m {
            major::UNSIGNED | major::NEGATIVE => Ok(Scalar::Number(self.integer_value(m, ai)?)),
            major::TEXT => Ok(Scalar::Text(self.text_body(ai)?)),
            major::SIMPLE => self.simple(ai),
            _ => Err(self.wrong_type(m, expected)),
        }
    }

    /// Reads any one item. Scalars come back as themselves; containers and byte strings are
    /// skipped (fully validated) and come back as [`Scalar::Other`].
    ///
    /// # Errors
    /// Any `Cbor` error of the item; `Schema`/`ByteString` in message mode.
    #[inline(always)]
    pub fn read_scalar(&mut self) -> Result<Scalar<'de>, ProtocolError> {
        // Short text (tags, literals) inline at the call site; the rest out of line.
        match self.short_str_at_cursor() {
            Some(text) => Ok(Scalar::Text(text)),
            None => self.read_scalar_slow(),
        }
    }

    #[inline(never)]
    fn read_scalar_slow(&mut self) -> Result<Scalar<'de>, ProtocolError> {
        let (m, ai) = self.initial()?;
        match m {
            major::UNSIGNED | major::NEGATIVE => Ok(Scalar::Number(self.integer_value(m, ai)?)),
            major::TEXT => Ok(Scalar::Text(self.text_body(ai)?)),
            major::SIMPLE => self.simple(ai),
            _ => {
                self.skip()?;
                Ok(Scalar::Other)
            }
        }
    }

    fn wrong_type(&self, m: u8, expected: &'static str) -> ProtocolError {
        match m {
            major::TAG => ProtocolError::cbor(Rule::Tag),
            major::BYTES if !self.allow_bytes => ProtocolError::schema(Rule::ByteString),
            _ => ProtocolError::schema(Rule::WrongType { expected }),
        }
    }

    // --------------------------------------------------------------- peeking

    /// Moves past the next item when it is the text string `key` ([`next_key_is`](Self::next_key_is)),
    /// and says whether it did; otherwise the cursor stays where it was. For decoders that expect
    /// their keys in one order and walk the general way when they are not. The bytes compared are
    /// `key`'s, so a key taken is valid UTF-8 when `key` is.
    #[inline(always)]
    pub fn take_key(&mut self, key: &[u8]) -> bool {
        match self.short_text_at_cursor() {
            Some((header, len)) if key_equals(&self.input[self.pos + header..self.pos + header + len], key) => {
                self.pos += header + len;
                true
            }
            _ => false,
        }
    }

    /// Reads a map key, which must be a text string, as its bytes, without checking that they
    /// are UTF-8: for decoders that only compare keys with known (valid) ones and refuse any
    /// other key, so that a key they accept is valid UTF-8 by that comparison.
    ///
    /// # Errors
    /// `Cbor`/`NonTextKey` for any other item, limits, truncation.
    #[inline(always)]
    pub fn read_key_raw(&mut self) -> Result<&'de [u8], ProtocolError> {
        if let Some((header, len)) = self.short_text_at_cursor() {
            let start = self.pos + header;
            self.pos = start + len;
            return Ok(&self.input[start..start + len]);
        }
        self.read_key_raw_slow()
    }

    #[inline(never)]
    fn read_key_raw_slow(&mut self) -> Result<&'de [u8], ProtocolError> {
        let (m, ai) = self.initial()?;
        if m != major::TEXT {
            return Err(self.non_text_key());
        }
        self.string_body(ai)
    }

    /// The error for the map key at the cursor, which is not a text string. The reference reads
    /// the whole key before it refuses it, so the first CBOR error inside the key wins; without
    /// one, `NonTextKey` (docs/PROTOCOL.md section 6). The key is walked by a reader of its own
    /// that accepts byte strings (the key's failure is its type, whatever it holds). A key
    /// inside such a key is walked the same way up to [`MAX_KEY_NESTING`] levels, which bounds
    /// the recursion; deeper, it is refused at once.
    #[cold]
    #[inline(never)]
    pub(crate) fn non_text_key(&self) -> ProtocolError {
        if self.key_nesting < MAX_KEY_NESTING {
            let mut key = Reader { allow_bytes: true, shared: None, key_nesting: self.key_nesting + 1, ..*self };
            if let Err(error) = key.skip() {
                return error;
            }
        }
        ProtocolError::cbor(Rule::NonTextKey)
    }

    /// Reads the item at the cursor when it is a short text string (see
    /// [`short_text_at_cursor`](Self::short_text_at_cursor)) of valid UTF-8; otherwise `None`
    /// and the cursor stays, for the general path to read or report.
    #[inline(always)]
    fn short_str_at_cursor(&mut self) -> Option<&'de str> {
        let (header, len) = self.short_text_at_cursor()?;
        let start = self.pos + header;
        let text = utf8_str(&self.input[start..start + len])?;
        self.pos = start + len;
        Some(text)
    }

    /// Moves past one item for a peek: a short text string by its length alone (the decode that
    /// follows the peek checks its content), anything else validated by [`skip`](Self::skip).
    #[inline]
    fn pass_over(&mut self) -> Result<(), ProtocolError> {
        if let Some((header, len)) = self.short_text_at_cursor() {
            self.pos += header + len;
            return Ok(());
        }
        self.skip()
    }

    /// With the cursor at a map head, finds `key` among its entries without moving the cursor.
    ///
    /// Returns `Ok(None)` when the key is absent. This is a peek for choosing how to decode the
    /// map: entries before the key are only passed over (structure and limits are checked, the
    /// UTF-8 of keys and short strings is not); the map as a whole is validated when it is read.
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "object" }` when the item is not a map; `Cbor` errors met
    /// on the way.
    pub fn peek_map_value(&self, key: &str) -> Result<Option<Scalar<'de>>, ProtocolError> {
        let mut probe = self.clone();
        let n = probe.enter_map()?;
        probe.peek_entries_value(n, key)
    }

    /// Like [`peek_map_value`](Self::peek_map_value), inside a map already entered: looks for
    /// `key` among the next `remaining` entries.
    ///
    /// # Errors
    /// `Cbor` errors met on the way.
    pub fn peek_entries_value(&self, remaining: usize, key: &str) -> Result<Option<Scalar<'de>>, ProtocolError> {
        let mut probe = self.clone();
        for _ in 0..remaining {
            let k = probe.read_key_raw()?;
            if k == key.as_bytes() {
                return probe.read_scalar().map(Some);
            }
            probe.pass_over()?;
        }
        Ok(None)
    }

    /// Whether the next item is the text string `key` (the cursor does not move).
    #[inline]
    pub fn next_key_is(&self, key: &[u8]) -> bool {
        match self.short_text_at_cursor() {
            Some((header, len)) => key_equals(&self.input[self.pos + header..self.pos + header + len], key),
            None => false,
        }
    }

    /// With the cursor at a map head, writes its keys in wire order into `out` without moving
    /// the cursor and returns how many there are, or `Ok(None)` when the map has more entries
    /// than `out` holds. Allocates nothing. Like [`peek_map_value`](Self::peek_map_value), a
    /// peek: the keys are raw bytes (compare them with known keys) and values are passed over.
    ///
    /// # Errors
    /// As [`peek_map_value`](Self::peek_map_value).
    pub fn peek_map_keys_into(&self, out: &mut [&'de [u8]]) -> Result<Option<usize>, ProtocolError> {
        let mut probe = self.clone();
        let n = probe.enter_map()?;
        probe.peek_entries_keys_into(n, out)
    }

    /// Like [`peek_map_keys_into`](Self::peek_map_keys_into), inside a map already entered:
    /// the keys of the next `remaining` entries.
    ///
    /// # Errors
    /// `Cbor` errors met on the way.
    pub fn peek_entries_keys_into(
        &self,
        remaining: usize,
        out: &mut [&'de [u8]],
    ) -> Result<Option<usize>, ProtocolError> {
        if remaining > out.len() {
            return Ok(None);
        }
        let mut probe = self.clone();
        for slot in out.iter_mut().take(remaining) {
            *slot = probe.read_key_raw()?;
            probe.pass_over()?;
        }
        Ok(Some(remaining))
    }
}
