//! The strict CBOR reader (docs/PROTOCOL.md section 2).
//!
//! [`Reader`] is a cursor over one complete CBOR payload. Every read checks the subset's rules
//! and the configured [`CborLimits`] before it trusts a declared length, so a lying length fails
//! as "truncated" without anything of that size being allocated. Nothing here knows the
//! envelope schema: derived decoders drive the reader.

use std::collections::HashSet;

use bytes::Bytes;
use smallvec::SmallVec;

use crate::error::{ProtocolError, Rule};
use crate::limits::CborLimits;
use crate::number::is_encodable_number;
use crate::scalar::{key_equals, JsonTypes, Scalar};

pub use crate::number::MAX_SAFE_INTEGER;

/// Major types of RFC 8949.
pub(crate) mod major {
    pub const UNSIGNED: u8 = 0;
    pub const NEGATIVE: u8 = 1;
    pub const BYTES: u8 = 2;
    pub const TEXT: u8 = 3;
    pub const ARRAY: u8 = 4;
    pub const MAP: u8 = 5;
    pub const TAG: u8 = 6;
    pub const SIMPLE: u8 = 7;
}

/// Statistics of a skipped item: how deep it nests below itself and its widest container.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemShape {
    /// Levels of nesting below the item (0 for a scalar, 1 for `[1]`).
    pub depth: u32,
    /// Entries of the largest array or map inside the item (0 when there is none).
    pub widest: u32,
}

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
}

impl<'de> Reader<'de> {
    /// A reader over `input` applying `limits`, in message mode (byte strings refused).
    pub fn new(input: &'de [u8], limits: CborLimits) -> Self {
        Reader { input, pos: 0, depth: 0, limits, allow_bytes: false, shared: None }
    }

    /// A reader over a shared buffer: opaque payloads it yields are zero-copy slices of `input`.
    pub fn new_shared(input: &'de Bytes, limits: CborLimits) -> Self {
        Reader { input: input.as_ref(), pos: 0, depth: 0, limits, allow_bytes: false, shared: Some(input) }
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

    // ----------------------------------------------------------------- heads

    #[inline]
    fn peek_byte(&self) -> Result<u8, ProtocolError> {
        match self.input.get(self.pos) {
            Some(&b) => Ok(b),
            None => Err(ProtocolError::cbor(Rule::Truncated)),
        }
    }

    /// Reads the argument of the initial byte at the cursor (`ai` is its additional information,
    /// at most 27) and moves past it.
    #[inline(always)]
    fn argument(&mut self, ai: u8) -> Result<u64, ProtocolError> {
        if ai < 24 {
            self.pos += 1;
            return Ok(u64::from(ai));
        }
        self.wide_argument(ai)
    }

    /// Reads an argument of `1 << (ai - 24)` bytes following the initial byte.
    #[inline]
    fn wide_argument(&mut self, ai: u8) -> Result<u64, ProtocolError> {
        let start = self.pos + 1;
        let (value, width) = match ai {
            24 => (u64::from(*self.input.get(start).ok_or_else(truncated)?), 1),
            25 => {
                let b = self.input.get(start..start + 2).ok_or_else(truncated)?;
                (u64::from(u16::from_be_bytes([b[0], b[1]])), 2)
            }
            26 => {
                let b = self.input.get(start..start + 4).ok_or_else(truncated)?;
                (u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])), 4)
            }
            _ => {
                let b = self.input.get(start..start + 8).ok_or_else(truncated)?;
                (u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]), 8)
            }
        };
        self.pos = start + width;
        Ok(value)
    }

    /// Checks the depth of the item at the cursor and returns its initial byte's parts.
    #[inline]
    fn initial(&self) -> Result<(u8, u8), ProtocolError> {
        let b = self.peek_byte()?;
        if self.depth > self.limits.max_depth() {
            return Err(ProtocolError::cbor(Rule::DepthLimit { limit: u64::from(self.limits.max_depth()) }));
        }
        let (m, ai) = (b >> 5, b & 0x1f);
        if ai >= 28 {
            return Err(reserved_or_indefinite(m, ai));
        }
        Ok((m, ai))
    }

    #[inline]
    fn string_body(&mut self, ai: u8) -> Result<&'de [u8], ProtocolError> {
        let n = self.argument(ai)?;
        let start = self.pos;
        // One test for the common case: the length fits both the input and the limit.
        if n <= (self.input.len() - start) as u64 && n <= u64::from(self.limits.max_byte_length()) {
            let end = start + n as usize;
            self.pos = end;
            return Ok(&self.input[start..end]);
        }
        Err(self.string_length_error(n))
    }

    /// Why a string of declared length `n` cannot be read: beyond 2^53 - 1, beyond the limit,
    /// or beyond the input, checked in that order.
    #[cold]
    fn string_length_error(&self, n: u64) -> ProtocolError {
        if n > MAX_SAFE_INTEGER {
            ProtocolError::cbor(Rule::LengthOutOfRange)
        } else if n > u64::from(self.limits.max_byte_length()) {
            ProtocolError::cbor(Rule::ByteLengthLimit { limit: u64::from(self.limits.max_byte_length()) })
        } else {
            truncated()
        }
    }

    #[inline]
    fn text_body(&mut self, ai: u8) -> Result<&'de str, ProtocolError> {
        let body = self.string_body(ai)?;
        utf8_str(body).ok_or_else(|| ProtocolError::cbor(Rule::InvalidUtf8))
    }

    /// Skips a text string body, checking only that it is valid UTF-8 (no `&str` is needed).
    #[inline]
    fn skip_text_body(&mut self, ai: u8) -> Result<(), ProtocolError> {
        let body = self.string_body(ai)?;
        if is_utf8(body) {
            Ok(())
        } else {
            Err(ProtocolError::cbor(Rule::InvalidUtf8))
        }
    }

    /// Reads a container count and checks the container limit and the remaining input
    /// (`min_entry_bytes` per entry).
    #[inline]
    fn container_length(&mut self, ai: u8, min_entry_bytes: usize) -> Result<usize, ProtocolError> {
        let n = self.argument(ai)?;
        if n > MAX_SAFE_INTEGER {
            return Err(ProtocolError::cbor(Rule::LengthOutOfRange));
        }
        if n > u64::from(self.limits.max_container_length()) {
            return Err(ProtocolError::cbor(Rule::ContainerLengthLimit {
                limit: u64::from(self.limits.max_container_length()),
            }));
        }
        let n = n as usize;
        if n.saturating_mul(min_entry_bytes) > self.input.len() - self.pos {
            return Err(truncated());
        }
        Ok(n)
    }

    #[inline]
    fn integer_value(&mut self, m: u8, ai: u8) -> Result<f64, ProtocolError> {
        let n = self.argument(ai)?;
        if m == major::UNSIGNED {
            if n > MAX_SAFE_INTEGER {
                return Err(ProtocolError::cbor(Rule::UnsafeInteger));
            }
            Ok(n as f64)
        } else {
            // -1 - n must stay >= -(2^53 - 1).
            if n >= MAX_SAFE_INTEGER {
                return Err(ProtocolError::cbor(Rule::UnsafeInteger));
            }
            Ok(-1.0 - n as f64)
        }
    }

    /// Reads the remainder of a major-type-7 item whose initial byte has `ai`.
    #[inline]
    fn simple(&mut self, ai: u8) -> Result<Scalar<'de>, ProtocolError> {
        match ai {
            20 => {
                self.pos += 1;
                Ok(Scalar::Bool(false))
            }
            21 => {
                self.pos += 1;
                Ok(Scalar::Bool(true))
            }
            22 => {
                self.pos += 1;
                Ok(Scalar::Null)
            }
            27 => {
                let bits = self.argument(27)?;
                let v = f64::from_bits(bits);
                check_float(v)?;
                Ok(Scalar::Number(v))
            }
            24 if self.input.len() < self.pos + 2 => Err(truncated()),
            _ => Err(ProtocolError::cbor(Rule::UnsupportedSimple)),
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
                && self.depth <= self.limits.max_depth()
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
        let Some(&b) = self.input.get(self.pos) else { return JsonTypes::NONE };
        if b & 0x1f >= 28 {
            return JsonTypes::NONE;
        }
        match b >> 5 {
            major::UNSIGNED | major::NEGATIVE => JsonTypes::NUMBER,
            major::TEXT => JsonTypes::STRING,
            major::ARRAY => JsonTypes::ARRAY,
            major::MAP => JsonTypes::OBJECT,
            major::SIMPLE => match b {
                0xf4 | 0xf5 => JsonTypes::BOOLEAN,
                0xf6 => JsonTypes::NULL,
                0xfb => JsonTypes::NUMBER,
                _ => JsonTypes::NONE,
            },
            _ => JsonTypes::NONE,
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

    // ------------------------------------------------------------- skipping

    /// Skips one item, validating all of it against the subset and the limits (duplicate keys
    /// included).
    ///
    /// # Errors
    /// Any `Cbor` error; `Schema`/`ByteString` for a byte string in message mode.
    pub fn skip(&mut self) -> Result<(), ProtocolError> {
        self.skip_item().map(|_| ())
    }

    /// Skips one item like [`skip`](Self::skip) and reports its shape (nesting depth below it
    /// and widest container).
    ///
    /// Small plain items (a few levels, short ASCII strings, maps of up to 16 keys) are accepted
    /// by a short recursive test of at most 6 levels; everything else, and anything invalid,
    /// by the walk, which alone decides and reports errors. The walk is iterative: nesting
    /// costs a few bytes of an explicit stack per level (inline for the first levels, so
    /// shallow items allocate nothing), never a call frame, so even the deepest configurable
    /// item is safe on a small thread stack.
    ///
    /// # Errors
    /// As [`skip`](Self::skip).
    pub fn skip_item(&mut self) -> Result<ItemShape, ProtocolError> {
        match self.peek_major() {
            Some(major::ARRAY | major::MAP) => {
                // Most payloads are small and plain: accept those without setting up the walk.
                let head = self.input[self.pos];
                let short = matches!(head, 0x80..=0x90 | 0xa0..=0xb0);
                if short && self.depth <= self.limits.max_depth() {
                    let mut shape = ItemShape::default();
                    if let Some(end) = Plain::new(self).container_here(self.pos, 0, &mut shape, head) {
                        self.pos = end;
                        return Ok(shape);
                    }
                }
                self.skip_nested()
            }
            _ => {
                self.skip_scalar()?;
                Ok(ItemShape::default())
            }
        }
    }

    /// Skips one item that is not an array or map (a scalar, a string, or something refused).
    #[inline]
    fn skip_scalar(&mut self) -> Result<(), ProtocolError> {
        let (m, ai) = self.initial()?;
        match m {
            major::UNSIGNED | major::NEGATIVE => self.integer_value(m, ai).map(drop),
            major::BYTES if !self.allow_bytes => Err(ProtocolError::schema(Rule::ByteString)),
            major::BYTES => self.string_body(ai).map(drop),
            major::TEXT => self.skip_text_body(ai),
            major::TAG => Err(ProtocolError::cbor(Rule::Tag)),
            major::SIMPLE => self.simple(ai).map(drop),
            _ => unreachable!("containers are skipped by skip_nested"),
        }
    }

    /// Skips an array or map with an explicit stack (see [`skip_item`](Self::skip_item)).
    ///
    /// The innermost open container lives in a local (`current`); only its parents are on the
    /// stack, so the per-item work touches no memory beyond the input and the key list.
    ///
    /// Out of line, so that [`skip_item`](Self::skip_item) accepting a plain item does not pay
    /// for the walk's large stack frame (about 20 instructions of a small request's decode).
    #[inline(never)]
    fn skip_nested(&mut self) -> Result<ItemShape, ProtocolError> {
        let (m, ai) = self.initial()?;
        let n = self.container_length(ai, if m == major::MAP { 2 } else { 1 })?;
        let mut shape = ItemShape { depth: 1, widest: n as u32 };
        if n == 0 {
            return Ok(shape);
        }
        self.check_entry_depth()?;
        let mut parents: SmallVec<[Level; INLINE_LEVELS]> = SmallVec::new();
        let mut keys = KeyStack::new();
        let mut key_sets: Vec<HashSet<&'de [u8]>> = Vec::new();
        let mut current = Level::open(m == major::MAP, n, &keys, &mut key_sets);
        self.depth += 1;
        // The fast paths below work on locals (the cursor in a register, not behind `&mut self`);
        // the general path syncs `self.pos` around the reader's own methods.
        let input = self.input;
        let max_byte_length = self.limits.max_byte_length() as usize;
        let mut pos = self.pos;
        loop {
            if current.remaining == 0 {
                // The innermost container is complete: close it and resume its parent.
                if current.key_set != NO_KEY_SET {
                    key_sets.pop();
                }
                keys.truncate(current.keys_start);
                self.depth -= 1;
                match parents.pop() {
                    Some(parent) => {
                        current = parent;
                        continue;
                    }
                    None => {
                        self.pos = pos;
                        return Ok(shape);
                    }
                }
            }
            current.remaining -= 1;
            if current.is_map {
                // The entry's key: a text string, fresh in its map.
                let Some(&b) = input.get(pos) else { return Err(truncated()) };
                let n = usize::from(b.wrapping_sub(0x60));
                if n < 24 {
                    let start = pos + 1;
                    if n > max_byte_length || n > input.len() - start {
                        return Err(self.string_length_error(n as u64));
                    }
                    let head = match ascii_head(input, start, n) {
                        Some(head) => head,
                        None if std::str::from_utf8(&input[start..start + n]).is_ok() => {
                            head_word(&input[start..]) & low_bytes(n)
                        }
                        None => return Err(ProtocolError::cbor(Rule::InvalidUtf8)),
                    };
                    pos = start + n;
                    let fingerprint = key_fingerprint(head, n);
                    self.check_fresh_key(fingerprint, start, n, &current, &mut keys, &mut key_sets)?;
                } else {
                    self.pos = pos;
                    let (m, ai) = (b >> 5, b & 0x1f);
                    if ai >= 28 {
                        return Err(reserved_or_indefinite(m, ai));
                    }
                    if m != major::TEXT {
                        return Err(ProtocolError::cbor(Rule::NonTextKey));
                    }
                    let key = self.string_body(ai)?;
                    if !is_utf8(key) {
                        return Err(ProtocolError::cbor(Rule::InvalidUtf8));
                    }
                    let start = self.pos - key.len();
                    let fingerprint = key_fingerprint(head_word(key), key.len());
                    self.check_fresh_key(fingerprint, start, key.len(), &current, &mut keys, &mut key_sets)?;
                    pos = self.pos;
                }
            }
            // An array element or a map entry's value.
            let Some(&b) = input.get(pos) else { return Err(truncated()) };
            match b {
                // A text string shorter than 24 bytes (most ids and short values).
                0x60..=0x77 => {
                    let n = usize::from(b - 0x60);
                    let start = pos + 1;
                    if n > max_byte_length || n > input.len() - start {
                        return Err(self.string_length_error(n as u64));
                    }
                    if ascii_head(input, start, n).is_none() && std::str::from_utf8(&input[start..start + n]).is_err() {
                        return Err(ProtocolError::cbor(Rule::InvalidUtf8));
                    }
                    pos = start + n;
                    continue;
                }
                // A text string of 24 to 255 bytes (its length in the next byte).
                0x78 => {
                    let start = pos + 2;
                    let Some(&len) = input.get(pos + 1) else { return Err(truncated()) };
                    let n = usize::from(len);
                    if n > max_byte_length || start > input.len() || n > input.len() - start {
                        self.pos = pos;
                        return Err(self.string_length_error(n as u64));
                    }
                    if !is_utf8(&input[start..start + n]) {
                        return Err(ProtocolError::cbor(Rule::InvalidUtf8));
                    }
                    pos = start + n;
                    continue;
                }
                // One byte: small integers, false, true, null.
                0x00..=0x17 | 0x20..=0x37 | 0xf4..=0xf6 => {
                    pos += 1;
                    continue;
                }
                FLOAT64 => {
                    let bytes = input.get(pos + 1..pos + 9).ok_or_else(truncated)?;
                    check_float(f64::from_be_bytes(bytes.try_into().expect("eight bytes")))?;
                    pos += 9;
                    continue;
                }
                _ => {}
            }
            self.pos = pos;
            let (m, ai) = (b >> 5, b & 0x1f);
            if ai >= 28 {
                return Err(reserved_or_indefinite(m, ai));
            }
            match m {
                major::TEXT => self.skip_text_body(ai)?,
                major::UNSIGNED | major::NEGATIVE => {
                    self.integer_value(m, ai)?;
                }
                major::ARRAY | major::MAP => {
                    let is_map = m == major::MAP;
                    let n = self.container_length(ai, if is_map { 2 } else { 1 })?;
                    shape.depth = shape.depth.max(parents.len() as u32 + 2);
                    shape.widest = shape.widest.max(n as u32);
                    if n > 0 {
                        // The entries are one level deeper: check that depth once for all of them.
                        self.check_entry_depth()?;
                        parents.push(current);
                        current = Level::open(is_map, n, &keys, &mut key_sets);
                        self.depth += 1;
                    }
                }
                major::BYTES => {
                    if !self.allow_bytes {
                        return Err(ProtocolError::schema(Rule::ByteString));
                    }
                    self.string_body(ai)?;
                }
                major::TAG => return Err(ProtocolError::cbor(Rule::Tag)),
                _ => {
                    self.simple(ai)?;
                }
            }
            pos = self.pos;
        }
    }

    /// Records the key `input[start..start + len]` (with its [`KeyStack`] fingerprint) just read
    /// in the map `level`, failing with `DuplicateKey` when the map already has it.
    #[inline(always)]
    fn check_fresh_key(
        &self,
        fingerprint: u64,
        start: usize,
        len: usize,
        level: &Level,
        keys: &mut KeyStack,
        key_sets: &mut [HashSet<&'de [u8]>],
    ) -> Result<(), ProtocolError> {
        let fresh = if level.key_set != NO_KEY_SET {
            key_sets[level.key_set as usize].insert(&self.input[start..start + len])
        } else {
            keys.insert(level.keys_start, self.input, fingerprint, start, len)
        };
        if fresh {
            Ok(())
        } else {
            Err(ProtocolError::cbor(Rule::DuplicateKey))
        }
    }

    /// Checks that entries of a container opened at the current depth stay within the limit.
    #[inline]
    fn check_entry_depth(&self) -> Result<(), ProtocolError> {
        if self.depth + 1 > self.limits.max_depth() {
            return Err(ProtocolError::cbor(Rule::DepthLimit { limit: u64::from(self.limits.max_depth()) }));
        }
        Ok(())
    }

    // --------------------------------------------------------------- peeking

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
            return Err(ProtocolError::cbor(Rule::NonTextKey));
        }
        self.string_body(ai)
    }

    /// When the item at the cursor is a text string of less than 256 bytes that is within the
    /// input, the depth and the byte limit: its header length and its length.
    #[inline(always)]
    fn short_text_at_cursor(&self) -> Option<(usize, usize)> {
        let b = *self.input.get(self.pos)?;
        let (header, len) = match b.wrapping_sub(0x60) {
            n @ 0..=23 => (1, usize::from(n)),
            24 => (2, usize::from(*self.input.get(self.pos + 1)?)),
            _ => return None,
        };
        let fits = self.pos + header + len <= self.input.len()
            && len as u64 <= u64::from(self.limits.max_byte_length())
            && self.depth <= self.limits.max_depth();
        fits.then_some((header, len))
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

/// Checks a decoded float64: finite, and a safe integer when integral.
#[inline]
pub(crate) fn check_float(v: f64) -> Result<(), ProtocolError> {
    if is_encodable_number(v) {
        Ok(())
    } else {
        Err(float_error(v))
    }
}

/// Why the float64 `v` is refused: not finite, or integral beyond 2^53 - 1.
#[cold]
fn float_error(v: f64) -> ProtocolError {
    ProtocolError::cbor(if v.is_finite() { Rule::UnsafeInteger } else { Rule::NonFiniteNumber })
}

/// Whether `bytes` is valid UTF-8: an ASCII scan a word at a time first (keys, ids and most
/// payload strings are ASCII), the standard library's validator only for the rest.
#[inline]
pub(crate) fn is_utf8(bytes: &[u8]) -> bool {
    is_ascii(bytes) || std::str::from_utf8(bytes).is_ok()
}

/// `bytes` as a `&str` when it is valid UTF-8.
///
/// ASCII strings (ids, literals, most payload text) are recognised by [`is_ascii`] and viewed
/// as `str` directly; everything else goes through `std::str::from_utf8`. The standard
/// validator costs about 80 instructions on a 6-byte id, the ASCII test about 15: on a small
/// request (four ids and a literal) this was 5% of the decode (callgrind, `docs/PERFORMANCE.md`).
#[inline]
#[allow(unsafe_code)]
pub(crate) fn utf8_str(bytes: &[u8]) -> Option<&str> {
    if is_ascii(bytes) {
        // SAFETY: every byte is below 0x80, and a sequence of ASCII bytes is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// Longest text [`owned_text`] checks and copies in one pass; longer text goes by pieces of
/// this size.
const TEXT_PIECE: usize = 4096;

/// `bytes` copied into a `String` when it is valid UTF-8.
///
/// Short text is checked, then copied. Longer text is checked and copied a piece of
/// [`TEXT_PIECE`] bytes at a time, so that each piece is copied while the check has it in the
/// first-level cache: the input is read from memory once, not twice (a 1 MiB string read by
/// `Payload::to_value`). A character cut by the end of a piece goes with the next piece.
pub(crate) fn owned_text(bytes: &[u8]) -> Option<String> {
    if bytes.len() <= TEXT_PIECE {
        return utf8_str(bytes).map(str::to_owned);
    }
    let mut text = String::with_capacity(bytes.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        let piece = &rest[..rest.len().min(TEXT_PIECE)];
        let valid = match utf8_str(piece) {
            Some(valid) => valid,
            // Only a character cut by the piece's end (not the text's) may carry over.
            None => match std::str::from_utf8(piece) {
                Err(e) if e.error_len().is_none() && piece.len() < rest.len() => utf8_str(&piece[..e.valid_up_to()])?,
                _ => return None,
            },
        };
        text.push_str(valid);
        rest = &rest[valid.len()..];
    }
    Some(text)
}

/// Whether every byte of `bytes` is ASCII, by length: up to 16 bytes with two overlapping
/// loads, up to 255 with [`is_ascii_text`] (16 bytes per step, no vector loop to set up), longer
/// eight bytes per step in a loop the compiler vectorises; the last step reads the final bytes
/// again (overlapping) instead of looping over a tail.
#[inline(always)]
pub(crate) fn is_ascii(bytes: &[u8]) -> bool {
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("eight bytes"));
    let len = bytes.len();
    if len < 8 {
        // Two loads that overlap cover any length from 4 to 7 (2 to 3 with half-words).
        let seen = if len >= 4 {
            let half = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("four bytes"));
            half(&bytes[..4]) | half(&bytes[len - 4..])
        } else if len >= 2 {
            u32::from(u16::from_le_bytes([bytes[0], bytes[1]]) | u16::from_le_bytes([bytes[len - 2], bytes[len - 1]]))
        } else {
            bytes.first().map_or(0, |&b| u32::from(b))
        };
        return seen & 0x8080_8080 == 0;
    }
    if len <= 16 {
        // Two words that overlap cover 8 to 16 bytes.
        return (word(&bytes[..8]) | word(&bytes[len - 8..])) & HIGH_BITS == 0;
    }
    if len < 256 {
        // Ids and most payload text: no vector loop to set up.
        return is_ascii_text(bytes);
    }
    let mut seen = word(&bytes[len - 8..]);
    for chunk in bytes.chunks_exact(8) {
        seen |= word(chunk);
    }
    seen & HIGH_BITS == 0
}

/// The error for additional information 28-31 in major type `m`.
#[cold]
fn reserved_or_indefinite(m: u8, ai: u8) -> ProtocolError {
    ProtocolError::cbor(match (ai, m) {
        (31, major::BYTES | major::TEXT | major::ARRAY | major::MAP) => Rule::IndefiniteLength,
        (31, major::SIMPLE) => Rule::UnexpectedBreak,
        _ => Rule::ReservedAdditionalInfo,
    })
}

/// The plain-item test of [`Reader::skip_item`]: accepts an item when it is valid and plain,
/// that is at most [`PLAIN_LEVELS`] levels of arrays and maps of at most 16 entries, text
/// strings of ASCII shorter than 256 bytes, integers below 2^32 in magnitude, float64, `false`,
/// `true`, `null`, every CBOR limit respected, and map keys of fewer than 24 bytes whose
/// [`key_fingerprint`]s differ (so they are distinct).
///
/// `None` means "not plain", never "invalid": anything else (deeper, wider, non-ASCII, a
/// possible duplicate, a limit reached, malformed, refused) is left to
/// [`Reader::skip_nested`], the one place that decides and reports. The limits are folded
/// into the few bounds below once per item, so each key and value costs one comparison per
/// bound. Containers are read by [`Plain::container`], which recurses at most `PLAIN_LEVELS`
/// deep (the stack stays small) and reads some of the containers inside it without a call.
struct Plain<'de> {
    input: &'de [u8],
    /// Longest text accepted with its length in the head (0x60 to 0x77): 23 bytes, or
    /// `maxByteLength` when lower.
    short_text: usize,
    /// `maxByteLength`, for the longer texts (head 0x78).
    max_byte_length: usize,
    /// Most entries of a container: 16, or `maxContainerLength` when lower.
    max_entries: usize,
    /// Levels (below the item) at which entries may be read: entries of a container at level
    /// `l` are accepted when `l < entry_levels`, which keeps them within `PLAIN_LEVELS` and
    /// `maxDepth`.
    entry_levels: u32,
}

impl<'de> Plain<'de> {
    /// The test for an item at the reader's cursor, whose own depth is within `maxDepth`.
    #[inline(always)]
    fn new(reader: &Reader<'de>) -> Self {
        let limits = reader.limits;
        Plain {
            input: reader.input,
            short_text: (limits.max_byte_length() as usize).min(23),
            max_byte_length: limits.max_byte_length() as usize,
            max_entries: (limits.max_container_length() as usize).min(16),
            entry_levels: (PLAIN_LEVELS - 1).min(limits.max_depth().saturating_sub(reader.depth)),
        }
    }

    /// Reads the item at `pos`, whose head is `b`, when it is a plain scalar; an array or map
    /// of up to 16 entries is left to the caller, which reads it inline or by a call.
    #[inline(always)]
    fn value(&self, pos: usize, b: u8) -> Step {
        match self.scalar(pos, b) {
            Some(end) => Step::End(end),
            None if matches!(b, 0x80..=0x90 | 0xa0..=0xb0) => Step::Container,
            None => Step::NotPlain,
        }
    }

    /// The position after the plain scalar of head `b` at `pos`, or `None` (for a container too).
    #[inline(always)]
    fn scalar(&self, pos: usize, b: u8) -> Option<usize> {
        let input = self.input;
        if let 0x60..=0x77 = b {
            // Text shorter than 24 bytes (most keys, ids and short values).
            return self.short_text(pos, b).map(|(end, _)| end);
        }
        // Integers below 2^32 in magnitude, false, true, null, float64: one lookup for all.
        let size = usize::from(PLAIN_SIZES[usize::from(b)]);
        if size != 0 {
            let end = pos + size;
            let bytes = input.get(pos..end)?;
            if b == FLOAT64 {
                let v = f64::from_be_bytes(bytes.get(1..)?.try_into().ok()?);
                return is_encodable_number(v).then_some(end);
            }
            return Some(end);
        }
        match b {
            // Text of 24 to 255 bytes.
            0x78 => {
                let len = usize::from(*input.get(pos + 1)?);
                let end = pos + 2 + len;
                if end > input.len() || len > self.max_byte_length || !is_ascii_text(&input[pos + 2..end]) {
                    return None;
                }
                Some(end)
            }
            _ => None,
        }
    }

    /// The text of head `b` (0x60 to 0x77) at `pos`, when within the input, `short_text` and
    /// ASCII: the position after it and its first eight bytes as a little-endian word (zero
    /// beyond the text).
    ///
    /// A text of up to 8 bytes with 8 bytes of input after its head (all but the last few
    /// items) costs one bound and one load; a longer one two or three overlapping loads; one
    /// among the last eight bytes of the input is loaded as the word that ends with it.
    #[inline(always)]
    fn short_text(&self, pos: usize, b: u8) -> Option<(usize, u64)> {
        // Any other head wraps to 24 or more, beyond `short_text`: callers reading a key rely on it.
        let len = usize::from(b.wrapping_sub(0x60));
        if len > self.short_text {
            return None;
        }
        let start = pos + 1;
        let rest = self.input.get(start..)?;
        let word = |at: usize| word_at(rest, at);
        let (head, seen) = if len <= 8 {
            let head = match rest.first_chunk::<8>() {
                Some(w) => u64::from_le_bytes(*w) & LOW_BYTES[len],
                None if len > rest.len() => return None,
                None if len == 0 => 0,
                // Near the end of the input: the word that ends with the text, shifted down.
                None if start + len >= 8 => word_at(self.input, start + len - 8)? >> (64 - 8 * len),
                None => short_input_head(rest, len),
            };
            (head, head)
        } else {
            if len > rest.len() {
                return None;
            }
            let head = word(0)?;
            let middle = if len > 16 { word(8)? } else { 0 };
            (head, head | middle | word(len - 8)?)
        };
        (seen & HIGH_BITS == 0).then_some((start + len, head))
    }

    /// Checks the head `b` (an array or map of at most 16 entries) of the container at `pos`
    /// at `level`, and records it in `shape`; returns the position of its first entry and its
    /// number of entries.
    #[inline(always)]
    fn open(&self, pos: usize, level: u32, shape: &mut ItemShape, b: u8) -> Option<(usize, usize)> {
        let n = usize::from(b & 0x1f);
        if n > self.max_entries {
            return None;
        }
        shape.depth = shape.depth.max(level + 1);
        shape.widest = shape.widest.max(n as u32);
        // The entries are one level deeper than the container.
        if n > 0 && level >= self.entry_levels {
            return None;
        }
        Some((pos + 1, n))
    }

    /// Accepts the array or map whose head `b` (at most 16 entries) is at `pos` at `level`
    /// below the tested item (see [`Plain`]), recording its depth and widest container in
    /// `shape`; returns the position after it.
    #[inline(never)]
    fn container(&self, pos: usize, level: u32, shape: &mut ItemShape, b: u8) -> Option<usize> {
        self.container_here(pos, level, shape, b)
    }

    /// [`container`](Self::container) inlined in its caller: for the tested item itself, so
    /// that [`Reader::skip_item`] makes no call for it.
    ///
    /// Some containers inside are read inline too, where entering a call would cost more than
    /// reading them (a whole small call's `"args": ["hi"]`, or a 7-entry map in a list): maps
    /// that are entries of an array (the items of a list), whose own containers are calls; and
    /// arrays that are values of a map when all their entries are scalars (the arguments of a
    /// call), else they are read again by a call. The other containers are calls.
    #[inline(always)]
    fn container_here(&self, pos: usize, level: u32, shape: &mut ItemShape, b: u8) -> Option<usize> {
        let (mut pos, n) = self.open(pos, level, shape, b)?;
        if b >= 0xa0 {
            return self.map_entries::<true>(pos, n, level, shape);
        }
        for _ in 0..n {
            let b = *self.input.get(pos)?;
            pos = match self.value(pos, b) {
                Step::End(end) => end,
                Step::Container if b >= 0xa0 => {
                    let (entries, n) = self.open(pos, level + 1, shape, b)?;
                    self.map_entries::<false>(entries, n, level + 1, shape)?
                }
                Step::Container => self.container(pos, level + 1, shape, b)?,
                Step::NotPlain => return None,
            };
        }
        Some(pos)
    }

    /// Accepts the array of head `b` at `pos` at `level` inline when its entries are scalars,
    /// else by a call (which reads it again).
    #[inline(always)]
    fn leaf_array(&self, pos: usize, level: u32, shape: &mut ItemShape, b: u8) -> Option<usize> {
        let (mut end, n) = self.open(pos, level, shape, b)?;
        for _ in 0..n {
            match self.input.get(end).and_then(|&b| self.scalar(end, b)) {
                Some(next) => end = next,
                // An entry that is a container (or not plain): the whole array by a call.
                None => return self.container(pos, level, shape, b),
            }
        }
        Some(end)
    }

    /// Accepts the `n` entries from `pos` on of a map at `level`, and returns the position after
    /// them. Arrays among the values are read by [`leaf_array`](Self::leaf_array) with
    /// `LEAF_ARRAYS`, else (like maps) by a call.
    #[inline(always)]
    fn map_entries<const LEAF_ARRAYS: bool>(
        &self,
        mut pos: usize,
        n: usize,
        level: u32,
        shape: &mut ItemShape,
    ) -> Option<usize> {
        let mut fingerprints = [0u64; 16];
        // One bit per key, chosen by its fingerprint: the keys before are compared only when
        // the bit of a new key is already set (about one key in eight in a map of 16).
        let mut seen = 0u64;
        for i in 0..n {
            // A key: short ASCII text, its fingerprint unlike those of the keys before it.
            let (end, head) = self.short_text(pos, *self.input.get(pos)?)?;
            let fingerprint = key_fingerprint(head, end - pos - 1);
            let bit = 1u64 << (fingerprint.wrapping_mul(FINGERPRINT_SPREAD) >> 58);
            if seen & bit != 0 && fingerprints[..i].contains(&fingerprint) {
                return None;
            }
            seen |= bit;
            *fingerprints.get_mut(i)? = fingerprint;
            let b = *self.input.get(end)?;
            pos = match self.value(end, b) {
                Step::End(end) => end,
                Step::Container if LEAF_ARRAYS && b < 0xa0 => self.leaf_array(end, level + 1, shape, b)?,
                Step::Container => self.container(end, level + 1, shape, b)?,
                Step::NotPlain => return None,
            };
        }
        Some(pos)
    }
}

/// [`is_ascii`] for texts of 16 to 255 bytes (ids, the texts of [`Plain`] with their length
/// after the head): sixteen bytes per step in two words, the last step overlapping the one
/// before; no vector loop to set up (for a 40-byte text that setup and its tail cost more than
/// the test).
#[inline(never)]
fn is_ascii_text(bytes: &[u8]) -> bool {
    let len = bytes.len();
    if len < 16 {
        return is_ascii(bytes);
    }
    let pair = |chunk: &[u8]| {
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("eight bytes"));
        word(&chunk[..8]) | word(&chunk[8..16])
    };
    let mut seen = pair(&bytes[len - 16..]);
    for chunk in bytes[..len - 1].chunks_exact(16) {
        seen |= pair(chunk);
    }
    seen & HIGH_BITS == 0
}

/// What [`Plain::value`] found.
enum Step {
    /// A plain scalar, ending there.
    End(usize),
    /// An array or map of up to 16 entries, for the caller to read.
    Container,
    /// Anything else.
    NotPlain,
}

/// `head_word(rest) & low_bytes(len)`, for a text in an input shorter than eight bytes: out of
/// line, as its byte loop would cost [`Plain::container`] registers and setup for every map.
#[cold]
#[inline(never)]
fn short_input_head(rest: &[u8], len: usize) -> u64 {
    head_word(rest) & low_bytes(len)
}

/// The eight bytes at `input[at..]` as a little-endian word, if there are eight.
#[inline(always)]
fn word_at(input: &[u8], at: usize) -> Option<u64> {
    input.get(at..).and_then(|rest| rest.first_chunk::<8>()).map(|w| u64::from_le_bytes(*w))
}

/// The size of the item of each head byte that [`Plain`] reads in one step: 1 for integers
/// below 24, `false`, `true` and `null`; 2, 3 and 5 for integers with 1, 2 and 4 argument bytes
/// (below 2^32 in magnitude, always safe); 9 for float64; 0 for every other head.
const PLAIN_SIZES: [u8; 256] = {
    let mut sizes = [0u8; 256];
    let mut ai = 0;
    while ai < 24 {
        sizes[ai] = 1;
        sizes[0x20 + ai] = 1;
        ai += 1;
    }
    let (mut major, mut argument) = (0, 0);
    while major < 2 {
        while argument < 3 {
            sizes[major * 0x20 + 0x18 + argument] = 1 + (1 << argument);
            argument += 1;
        }
        (major, argument) = (major + 1, 0);
    }
    sizes[0xf4] = 1;
    sizes[0xf5] = 1;
    sizes[0xf6] = 1;
    sizes[FLOAT64 as usize] = 9;
    sizes
};

/// An odd constant whose product with a fingerprint has its top six bits depend on all of it
/// (the golden-ratio constant of Fibonacci hashing).
pub(crate) const FINGERPRINT_SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

/// `LOW_BYTES[n]`: a mask of the low `n` bytes of a word, `n` up to 8 (see [`low_bytes`]).
const LOW_BYTES: [u64; 9] = {
    let mut masks = [u64::MAX; 9];
    let mut n = 0;
    while n < 8 {
        masks[n] = (1u64 << (8 * n)) - 1;
        n += 1;
    }
    masks
};

/// The keys of the small maps open in an item being skipped, innermost map last, for the
/// duplicate-key check: each key as a fingerprint ([`key_fingerprint`]: keys of up to seven
/// bytes are equal exactly when their fingerprints are) and its location in the input. The first
/// [`INLINE_KEYS`] live in fixed arrays (zeroed, not allocated); more spill to the heap.
struct KeyStack {
    len: usize,
    fingerprints: [u64; INLINE_KEYS],
    /// `start << 32 | length` of each key (frames are shorter than 4 GiB).
    locations: [u64; INLINE_KEYS],
    spill: Vec<(u64, u64)>,
}

impl KeyStack {
    #[inline(always)]
    fn new() -> Self {
        KeyStack { len: 0, fingerprints: [0; INLINE_KEYS], locations: [0; INLINE_KEYS], spill: Vec::new() }
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }

    /// Adds the key `input[start..start + len]`, whose fingerprint is `fingerprint`, to the map
    /// whose keys begin at `from`; `false` when that map already has it.
    #[inline(always)]
    fn insert(&mut self, from: usize, input: &[u8], fingerprint: u64, start: usize, len: usize) -> bool {
        let location = ((start as u64) << 32) | len as u64;
        // Keys of up to seven bytes are their fingerprint; longer ones are compared when theirs agree.
        let same = |other: u64| {
            let (other_start, other_len) = ((other >> 32) as usize, (other & 0xffff_ffff) as usize);
            other_len == len && (len <= 7 || input[other_start..other_start + len] == input[start..start + len])
        };
        if self.len <= INLINE_KEYS {
            for i in from..self.len {
                if self.fingerprints[i] == fingerprint && same(self.locations[i]) {
                    return false;
                }
            }
            if self.len < INLINE_KEYS {
                self.fingerprints[self.len] = fingerprint;
                self.locations[self.len] = location;
                self.len += 1;
                return true;
            }
            // Full: move everything to the heap and continue there.
            self.spill.reserve(2 * INLINE_KEYS);
            self.spill.extend(self.fingerprints.iter().copied().zip(self.locations.iter().copied()));
        } else if self.spill[from..].iter().any(|&(f, l)| f == fingerprint && same(l)) {
            return false;
        }
        self.spill.push((fingerprint, location));
        self.len += 1;
        true
    }

    /// Forgets the keys from `len` on (a map was closed).
    #[inline(always)]
    fn truncate(&mut self, len: usize) {
        if self.len > INLINE_KEYS {
            self.spill.truncate(len);
            if len <= INLINE_KEYS {
                self.spill.clear();
            }
        }
        self.len = self.len.min(len);
    }
}

/// The first eight bytes of `rest` as a little-endian word (one unaligned load), or its bytes
/// zero-extended when it is shorter. Callers mask off the bytes beyond their string.
#[inline(always)]
fn head_word(rest: &[u8]) -> u64 {
    match rest.get(..8) {
        Some(word) => u64::from_le_bytes(word.try_into().expect("eight bytes")),
        None => rest.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
    }
}

/// For the `n`-byte string at `input[start..]` (within the input): its first eight bytes as a
/// word (the bytes beyond the string masked off) when the string is ASCII, else `None`.
#[inline(always)]
fn ascii_head(input: &[u8], start: usize, n: usize) -> Option<u64> {
    let head = head_word(&input[start..]) & low_bytes(n);
    let ascii = if n <= 8 { head & HIGH_BITS == 0 } else { is_ascii(&input[start..start + n]) };
    ascii.then_some(head)
}

/// The fingerprint of an `n`-byte key whose first bytes are `head` (zero beyond the key), as
/// [`KeyStack`] and [`Plain`] compare keys: the first eight bytes with the length mixed into
/// the top byte. Equal keys have equal fingerprints; keys of up to seven bytes (top byte of
/// `head` zero) are equal exactly when their fingerprints are, longer ones whose fingerprints
/// agree are compared byte by byte (or, in [`Plain`], left to the walk).
#[inline(always)]
fn key_fingerprint(head: u64, n: usize) -> u64 {
    head ^ ((n as u64) << 56)
}

/// A mask of the low `n` bytes of a word (all of it from eight on).
#[inline(always)]
fn low_bytes(n: usize) -> u64 {
    LOW_BYTES[n.min(8)]
}

/// The high bit of every byte of a word: zero after masking for ASCII bytes.
pub(crate) const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

#[cold]
fn truncated() -> ProtocolError {
    ProtocolError::cbor(Rule::Truncated)
}

/// Initial byte of a float64 (major type 7, additional information 27).
const FLOAT64: u8 = 0xfb;

/// Entries of small maps are checked for duplicates by a linear scan; larger maps use a hash set.
const LINEAR_KEY_SCAN: usize = 16;
/// Levels of arrays and maps [`Plain`] descends before it leaves an item to the
/// iterative walk (the `medium` and `large` payloads have 5).
const PLAIN_LEVELS: u32 = 6;
/// Container levels held without allocating while skipping.
const INLINE_LEVELS: usize = 16;
/// Keys of small maps held without allocating while skipping.
const INLINE_KEYS: usize = 16;
/// `Level::key_set` of a map checked by linear scan.
const NO_KEY_SET: u32 = u32::MAX;

/// One open container of an item being skipped.
#[derive(Debug, Clone, Copy)]
struct Level {
    /// Entries still to read: elements of an array, key-value pairs of a map.
    remaining: usize,
    is_map: bool,
    /// Where this map's keys start in the shared key list.
    keys_start: usize,
    /// Index of this map's hash set, or `NO_KEY_SET`.
    key_set: u32,
}

impl Level {
    /// The level of a container of `n > 0` entries; a large map gets its own hash set of keys.
    #[inline]
    fn open(is_map: bool, n: usize, keys: &KeyStack, key_sets: &mut Vec<HashSet<&[u8]>>) -> Level {
        let key_set = if is_map && n > LINEAR_KEY_SCAN {
            key_sets.push(HashSet::with_capacity(n.min(4096)));
            (key_sets.len() - 1) as u32
        } else {
            NO_KEY_SET
        };
        Level { remaining: n, is_map, keys_start: keys.len(), key_set }
    }
}

#[cfg(test)]
mod tests {
    //! The plain-item acceptance test must never be more permissive than the iterative walk,
    //! and must agree with it on shape and end position whenever it accepts.

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Node {
        Int(u64, u8),
        Negative(u64),
        Float(f64),
        Text(String, bool),
        Simple(u8),
        Bytes(usize),
        Tag,
        Array(Vec<Node>, bool),
        Map(Vec<(usize, Node)>, bool),
    }

    const KEYS: [&str; 11] = [
        "a",
        "b",
        "abcdefg",
        "abcdefgh",
        "abcdefgX",
        "é",
        "abcdefghijk",
        "abcdefghijX",
        "abcdefghijklmnopqrstu",
        "abcdefghijklmnopqrstX",
        "abcdefghéjklmnopqrs",
    ];

    fn head(out: &mut Vec<u8>, major: u8, n: u64, long: bool) {
        if n < 24 && !long {
            out.push(major << 5 | n as u8);
        } else if n < 256 {
            out.extend_from_slice(&[major << 5 | 24, n as u8]);
        } else {
            out.push(major << 5 | 27);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }

    fn encode(node: &Node, out: &mut Vec<u8>) {
        match node {
            Node::Int(n, width) => match width % 4 {
                0 => head(out, 0, *n % 24, false),
                1 => out.extend_from_slice(&[0x19, (*n >> 8) as u8, *n as u8]),
                2 => out.extend_from_slice(&[0x1a, (*n >> 24) as u8, (*n >> 16) as u8, (*n >> 8) as u8, *n as u8]),
                _ => {
                    out.push(0x1b);
                    out.extend_from_slice(&n.to_be_bytes());
                }
            },
            Node::Negative(n) => head(out, 1, *n % 300, false),
            Node::Float(f) => {
                out.push(0xfb);
                out.extend_from_slice(&f.to_be_bytes());
            }
            Node::Text(t, long) => {
                head(out, 3, t.len() as u64, *long);
                out.extend_from_slice(t.as_bytes());
            }
            Node::Simple(s) => out.push(0xe0 | (s % 32)),
            Node::Bytes(n) => {
                head(out, 2, *n as u64, false);
                out.extend(std::iter::repeat_n(0u8, *n));
            }
            Node::Tag => out.extend_from_slice(&[0xc0, 0x01]),
            Node::Array(items, long) => {
                head(out, 4, items.len() as u64, *long);
                items.iter().for_each(|i| encode(i, out));
            }
            Node::Map(entries, long) => {
                head(out, 5, entries.len() as u64, *long);
                for (k, v) in entries {
                    let key = KEYS[k % KEYS.len()];
                    head(out, 3, key.len() as u64, false);
                    out.extend_from_slice(key.as_bytes());
                    encode(v, out);
                }
            }
        }
    }

    fn node() -> impl Strategy<Value = Node> {
        let leaf = prop_oneof![
            (any::<u64>(), any::<u8>()).prop_map(|(n, w)| Node::Int(n, w)),
            any::<u64>().prop_map(Node::Negative),
            prop_oneof![Just(1.5), Just(f64::NAN), Just(1e300), Just(-0.0)].prop_map(Node::Float),
            ("[a-z]{0,30}|[a-zé]{0,10}|x{250,260}", any::<bool>()).prop_map(|(t, l)| Node::Text(t, l)),
            prop_oneof![Just(20u8), Just(21), Just(22), Just(23), Just(19)].prop_map(Node::Simple),
            (0usize..3).prop_map(Node::Bytes),
            Just(Node::Tag),
        ];
        leaf.prop_recursive(8, 64, 20, |inner| {
            prop_oneof![
                (prop::collection::vec(inner.clone(), 0..20), any::<bool>()).prop_map(|(v, l)| Node::Array(v, l)),
                (prop::collection::vec((0usize..12, inner), 0..20), any::<bool>()).prop_map(|(v, l)| Node::Map(v, l)),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn plain_acceptance_agrees_with_the_walk(
            tree in node(),
            bytes_limit in prop_oneof![Just(u32::MAX), 0u32..40],
            containers in prop_oneof![Just(u32::MAX), 0u32..20],
            depth in 0u32..10,
            at_depth in 0u32..3,
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
        ) {
            let mut input = Vec::new();
            encode(&tree, &mut input);
            if truncate {
                let keep = cut.index(input.len() + 1);
                input.truncate(keep);
            }
            let limits = CborLimits::new(u64::from(bytes_limit), u64::from(containers), u64::from(depth)).unwrap();
            let mut walk = Reader::new(&input, limits).allow_byte_strings(true);
            walk.depth = at_depth;
            let mut fast = walk.clone();
            let by_walk = walk.skip_nested_for_test();
            // The public entry point (plain acceptance first) must give the walk's answer.
            let by_item = fast.skip_item();
            match (&by_walk, &by_item) {
                (Ok(a), Ok(b)) => {
                    prop_assert_eq!(a, b);
                    prop_assert_eq!(walk.position(), fast.position());
                }
                (Err(a), Err(b)) => prop_assert_eq!(a.rule(), b.rule()),
                _ => prop_assert!(false, "walk {:?}, item {:?}", by_walk, by_item),
            }
        }
    }

    #[test]
    fn wide_and_long_form_heads_are_left_to_the_walk() {
        // 17 to 23 entries in the head, and counts in the byte after it (0x98, 0xb8), at the top
        // and nested: the same answer as the walk, whatever the entries.
        for head in [0x91u8, 0x97, 0x98, 0xb1, 0xb7, 0xb8] {
            for n in [17usize, 23, 24, 30] {
                let mut item = vec![head];
                if head & 0x1f == 24 {
                    item.push(n as u8);
                }
                let count = if head & 0x1f == 24 { n } else { usize::from(head & 0x1f) };
                for i in 0..count {
                    if head >= 0xa0 {
                        item.extend_from_slice(&[0x62, b'k', b'a' + (i % 26) as u8]);
                    }
                    item.push(0x18);
                    item.push(i as u8);
                }
                for input in [item.clone(), [&[0x81u8][..], &item].concat()] {
                    let limits = CborLimits::default();
                    let mut walk = Reader::new(&input, limits);
                    let mut fast = walk.clone();
                    let expected = walk.skip_nested_for_test().map_err(|e| e.rule());
                    assert_eq!(fast.skip_item().map_err(|e| e.rule()), expected, "{}", hex_of(&input));
                    assert_eq!(fast.position(), walk.position());
                }
            }
        }
    }

    #[test]
    fn the_ascii_test_sees_a_high_byte_at_every_position_of_every_length() {
        // Every length class: two overlapping loads, 16 bytes per step, the vectorised loop.
        for len in 0..=300usize {
            let clean = vec![b'a'; len];
            assert!(is_ascii(&clean), "{len}");
            for at in 0..len {
                let mut dirty = clean.clone();
                dirty[at] = 0x80;
                assert!(!is_ascii(&dirty), "{len} at {at}");
            }
        }
    }

    /// Checks that `skip_item` gives the walk's answer and end position on `input`, and
    /// returns whether the plain test alone accepted it.
    fn agrees_with_the_walk(input: &[u8]) -> bool {
        let mut walk = Reader::new(input, CborLimits::default());
        let mut fast = walk.clone();
        let expected = walk.skip_nested_for_test().map_err(|e| e.rule());
        assert_eq!(fast.skip_item().map_err(|e| e.rule()), expected, "{}", hex_of(input));
        assert_eq!(fast.position(), walk.position(), "{}", hex_of(input));
        let plain = Plain::new(&fast).container(0, 0, &mut ItemShape::default(), input[0]);
        if let Some(end) = plain {
            assert_eq!(Ok(end), expected.map(|_| walk.position()), "{}", hex_of(input));
        }
        plain.is_some()
    }

    #[test]
    fn every_fixed_size_head_is_read_to_its_end() {
        // [item, 0]: a wrong size for the item's head would misplace the 0 after it.
        for head in 0..=255u8 {
            let mut input = vec![0x82, head];
            input.extend_from_slice(&[0x01; 8]);
            let size = usize::from(PLAIN_SIZES[usize::from(head)]);
            if size > 0 {
                input.truncate(1 + size);
                input.push(0x00);
                assert!(agrees_with_the_walk(&input), "{}", hex_of(&input));
            } else {
                agrees_with_the_walk(&input);
            }
        }
    }

    #[test]
    fn keys_and_texts_of_every_short_length_anywhere_in_the_input() {
        // Keys and values of 0 to 40 bytes, ASCII or with a high byte at any position, twice
        // (duplicates) or not, at the start of the input and in its last bytes, where the
        // plain test loads them differently.
        let text = |out: &mut Vec<u8>, t: &[u8]| {
            if t.len() < 24 {
                out.push(0x60 + t.len() as u8);
            } else {
                out.extend_from_slice(&[0x78, t.len() as u8]);
            }
            out.extend_from_slice(t);
        };
        for len in 0..=40usize {
            let key: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let mut variants = vec![key.clone()];
            for at in 0..len {
                let mut other = key.clone();
                other[at] = b'Z';
                variants.push(other.clone());
                other[at] = 0xc3;
                variants.push(other.clone());
                if at + 1 < len {
                    other[at + 1] = 0xa9; // "é": valid UTF-8, not ASCII
                    variants.push(other);
                }
            }
            for second in &variants {
                for padding in [0usize, 1, 7, 30] {
                    // {pad: [0, ...], key: 1, second: 2}, and [pad..., key, second] for values.
                    let mut map = vec![0xa3];
                    text(&mut map, b"p");
                    map.push(0x80 + padding.min(16) as u8);
                    map.extend(std::iter::repeat_n(0u8, padding.min(16)));
                    text(&mut map, &key);
                    map.push(0x01);
                    text(&mut map, second);
                    map.push(0x02);
                    let plain_map = agrees_with_the_walk(&map);
                    let mut array = vec![0x83, 0x80 + padding.min(16) as u8];
                    array.extend(std::iter::repeat_n(0u8, padding.min(16)));
                    text(&mut array, &key);
                    text(&mut array, second);
                    let plain_array = agrees_with_the_walk(&array);
                    // Short distinct ASCII keys, and ASCII values, must not be left to the walk.
                    let ascii = second.is_ascii();
                    assert_eq!(plain_array, ascii, "{}", hex_of(&array));
                    if ascii && len <= 7 && *second != key {
                        assert!(plain_map, "{}", hex_of(&map));
                    }
                    if *second == key && len < 24 {
                        assert!(!plain_map, "{}", hex_of(&map));
                    }
                }
            }
        }
    }

    #[test]
    fn containers_read_inline_keep_every_limit() {
        // Maps inside arrays and arrays inside maps (read inline or by a call, or first one and
        // then the other) under every depth and container limit, at several reader depths.
        let int = |n: u64| Node::Int(n, 0);
        let array = |items: Vec<Node>| Node::Array(items, false);
        let map = |entries: Vec<(usize, Node)>| Node::Map(entries, false);
        let trees = [
            map(vec![(0, int(1)), (1, array(vec![int(2), int(3)]))]),
            map(vec![(0, array(vec![int(1), array(vec![int(2)]), int(3)]))]),
            map(vec![(0, array(vec![int(1), map(vec![(1, array(vec![int(2)]))])]))]),
            array(vec![map(vec![(0, int(1)), (1, map(vec![(0, array(vec![]))]))]), map(vec![])]),
            array(vec![array(vec![map(vec![(0, array(vec![map(vec![(1, int(5))])]))])])]),
            map(vec![(0, array(vec![map(vec![(1, array(vec![map(vec![(2, array(vec![int(1)]))])]))])]))]),
            map(vec![(0, array((0..16).map(int).collect())), (1, array((0..17).map(int).collect()))]),
            array(vec![
                map((0..3).map(|k| (k, array(vec![int(1), int(2)]))).collect()),
                map(vec![(0, int(1)), (0, int(2))]),
            ]),
        ];
        for tree in &trees {
            let mut input = Vec::new();
            encode(tree, &mut input);
            for depth in 0..8u64 {
                for containers in [1u64, 2, 3, 16, 100] {
                    for at_depth in 0..3 {
                        let limits = CborLimits::new(1000, containers, depth).unwrap();
                        let mut walk = Reader::new(&input, limits);
                        walk.depth = at_depth;
                        let mut fast = walk.clone();
                        let expected = walk.skip_nested_for_test().map_err(|e| e.rule());
                        assert_eq!(fast.skip_item().map_err(|e| e.rule()), expected, "{}", hex_of(&input));
                        assert_eq!(fast.position(), walk.position(), "{}", hex_of(&input));
                    }
                }
            }
        }
    }

    /// A small deterministic generator (xorshift64*), for the differential loop below.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
            &items[self.below(items.len() as u64) as usize]
        }
    }

    /// Map keys close to each other: schema keys and variants that differ in one byte at
    /// 0..16, keys of 7 and 8 bytes whose plain fingerprints agree, keys equal in their
    /// first eight bytes, non-ASCII keys.
    const HOSTILE_KEYS: [&[u8]; 34] = [
        b"id",
        b"iD",
        b"type",
        b"typf",
        b"call",
        b"target",
        b"targeu",
        b"serverId",
        b"serverIe",
        b"serverI\x80",
        b"sessionId",
        b"sessionIe",
        b"sessionI",
        b"attachmentId",
        b"attachmentIe",
        b"attachmentId\x7f",
        b"abcdefg",
        b"abcdefg\x0f",
        b"abcdefg\x0e",
        b"abcdefgh",
        b"abcdefgh\x01",
        b"abcdefghi",
        b"abcdefghj",
        b"abcdefghijklmnop",
        b"abcdefghijklmnoq",
        b"abcdefghijklmnopqrstuvw",
        b"abcdefghijklmnopqrstuvx",
        b"abcdefghijklmnopqrstuvwx",
        b"\xc3\xa9",
        b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9a",
        b"",
        b"\x00",
        b"\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f",
        b"\xff",
    ];

    fn push_text(out: &mut Vec<u8>, t: &[u8], rng: &mut Rng) {
        let long = rng.below(16) == 0;
        if t.len() < 24 && !long {
            out.push(0x60 + t.len() as u8);
        } else if t.len() < 256 {
            out.extend_from_slice(&[0x78, t.len() as u8]);
        } else {
            out.push(0x79);
            out.extend_from_slice(&(t.len() as u16).to_be_bytes());
        }
        out.extend_from_slice(t);
    }

    fn hostile_scalar(out: &mut Vec<u8>, rng: &mut Rng, plainish: bool) {
        const FLOATS: [u64; 16] = [
            0x433f_ffff_ffff_ffff, // 2^53 - 1
            0xc33f_ffff_ffff_ffff, // -(2^53 - 1)
            0x4340_0000_0000_0000, // 2^53
            0xc340_0000_0000_0000, // -2^53
            0x7ff8_0000_0000_0000, // NaN
            0x7ff0_0000_0000_0001, // signalling NaN
            0xfff8_0000_0000_0001, // negative NaN with a payload
            0x8000_0000_0000_0000, // -0.0
            0x0000_0000_0000_0001, // smallest subnormal
            0x800f_ffff_ffff_ffff, // largest negative subnormal
            0x7ff0_0000_0000_0000, // infinity
            0xfff0_0000_0000_0000, // -infinity
            0x7fef_ffff_ffff_ffff, // largest finite
            0x3ff8_0000_0000_0000, // 1.5
            0x433f_ffff_ffff_fffe, // 2^53 - 2
            0x4340_0000_0000_0001, // 2^53 + 2
        ];
        match rng.below(14) {
            0 => out.push(rng.below(0x18) as u8 | if rng.below(2) == 0 { 0 } else { 0x20 }),
            1 => {
                let major = if rng.below(2) == 0 { 0 } else { 0x20 };
                let ai = 24 + rng.below(if plainish { 3 } else { 4 }) as u8;
                out.push(major | ai);
                for _ in 0..(1 << (ai - 24)) {
                    out.push(*rng.pick(&[0u8, 0xff, 0x1f, 0x20, 0x01]));
                }
            }
            2 | 3 => {
                out.push(FLOAT64);
                out.extend_from_slice(&rng.pick(&FLOATS).to_be_bytes());
            }
            4 if plainish => out.push(*rng.pick(&[0xf4u8, 0xf5, 0xf6])),
            4 => out.push(*rng.pick(&[
                0xf4u8, 0xf5, 0xf6, 0xf7, 0xf3, 0xf8, 0xf9, 0xfa, 0xfc, 0xff, 0xc0, 0xd8, 0x40, 0x41, 0x5f, 0x7f, 0x9f,
                0xbf,
            ])),
            5..=8 => {
                let bound = if rng.below(8) == 0 && !plainish { 300 } else { 26 };
                let len = rng.below(bound) as usize;
                let mut t: Vec<u8> = (0..len).map(|_| b' ' + rng.below(95) as u8).collect();
                if len > 0 && rng.below(if plainish { 64 } else { 4 }) == 0 {
                    let at = rng.below(len as u64) as usize;
                    t[at] = *rng.pick(&[0x80u8, 0xc3, 0xff, 0x7f, 0x00]);
                    if t[at] == 0xc3 && at + 1 < len {
                        t[at + 1] = 0xa9;
                    }
                }
                push_text(out, &t, rng);
            }
            _ => {
                let key = hostile_key(rng, plainish);
                push_text(out, key, rng);
            }
        }
    }

    fn hostile_item(out: &mut Vec<u8>, rng: &mut Rng, levels: u32, plainish: bool) {
        if levels == 0 || rng.below(3) == 0 {
            return hostile_scalar(out, rng, plainish);
        }
        let n = if rng.below(8) == 0 { rng.below(if plainish { 18 } else { 20 }) } else { rng.below(6) } as usize;
        let is_map = rng.below(2) == 0;
        let major = if is_map { 0xa0 } else { 0x80 };
        if n < 24 && (plainish || rng.below(16) != 0) {
            out.push(major + n as u8);
        } else {
            out.extend_from_slice(&[major + 24, n as u8]);
        }
        let mut keys: Vec<&[u8]> = Vec::new();
        for _ in 0..n {
            if is_map {
                let key: &[u8] = if !keys.is_empty() && rng.below(12) == 0 {
                    keys[rng.below(keys.len() as u64) as usize]
                } else {
                    hostile_key(rng, plainish)
                };
                keys.push(key);
                if rng.below(30) == 0 && !plainish {
                    hostile_scalar(out, rng, plainish);
                } else {
                    push_text(out, key, rng);
                }
            }
            hostile_item(out, rng, levels - 1, plainish);
        }
    }

    /// One of [`HOSTILE_KEYS`]; with `plainish`, one the plain test may read (ASCII, short).
    fn hostile_key(rng: &mut Rng, plainish: bool) -> &'static [u8] {
        loop {
            let key = HOSTILE_KEYS[rng.below(HOSTILE_KEYS.len() as u64) as usize];
            if !plainish || (key.len() < 24 && key.is_ascii()) {
                return key;
            }
        }
    }

    /// Compares `skip_item` with the walk on `input` under `limits` at reader depth `at`, and
    /// checks that a payload decoded there keeps its bytes exactly; returns whether the walk
    /// accepted it and whether the plain test alone did.
    fn compare_with_walk(input: &[u8], limits: CborLimits, at: u32) -> (bool, bool) {
        let mut walk = Reader::new(input, limits);
        walk.depth = at;
        let mut fast = walk.clone();
        let expected = walk.skip_nested_for_test();
        let got = fast.skip_item();
        match (&expected, &got) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "shape {}", hex_of(input));
                assert_eq!(walk.position(), fast.position(), "end {}", hex_of(input));
                let mut again = Reader::new(input, limits);
                again.depth = at;
                let payload = <crate::Payload as crate::codec::Decode>::decode(&mut again).expect("accepted twice");
                assert_eq!(payload.as_cbor(), &input[..walk.position()], "payload bytes {}", hex_of(input));
                assert_eq!((payload.depth(), payload.widest_container()), (a.depth, a.widest));
            }
            (Err(a), Err(b)) => assert_eq!(a.rule(), b.rule(), "rule {}", hex_of(input)),
            _ => panic!("walk {expected:?}, skip_item {got:?}: {}", hex_of(input)),
        }
        let mut reader = Reader::new(input, limits);
        reader.depth = at;
        let plain = matches!(input[0], 0x80..=0x90 | 0xa0..=0xb0)
            && Plain::new(&reader).container(0, 0, &mut ItemShape::default(), input[0]).is_some();
        (expected.is_ok(), plain)
    }

    #[test]
    fn hostile_items_and_their_mutations_agree_with_the_walk() {
        // Items built from near-duplicate keys, float64 edge values, texts with high bytes and
        // every head, then mutated (a byte replaced, cut short, a byte inserted), under tight
        // and default limits at several reader depths. `PI_HOSTILE_CASES` runs more.
        let cases: u64 = std::env::var("PI_HOSTILE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3_000);
        let seed: u64 = std::env::var("PI_HOSTILE_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed);
        let mut rng = Rng(seed | 1);
        let (mut accepted, mut by_plain) = (0u64, 0u64);
        for _ in 0..cases {
            let mut item = Vec::new();
            // Half the items stay close to plain (short ASCII keys and texts, narrow containers,
            // no refused items), so that the plain test accepts many before their mutation.
            let plainish = rng.below(2) == 0;
            let levels = 1 + rng.below(if plainish { 7 } else { 8 }) as u32;
            hostile_item(&mut item, &mut rng, levels, plainish);
            let limits = match rng.below(4) {
                0 => CborLimits::new(rng.below(30), rng.below(18), rng.below(9)).unwrap(),
                _ => CborLimits::default(),
            };
            let at = rng.below(3) as u32;
            if at > limits.max_depth() {
                continue;
            }
            for variant in 0..4 {
                let mut input = item.clone();
                if variant > 0 && !input.is_empty() {
                    let i = rng.below(input.len() as u64) as usize;
                    let byte = if rng.below(2) == 0 { rng.next() as u8 } else { input[i] ^ (1 << rng.below(8)) };
                    match variant {
                        1 => input[i] = byte,
                        2 => input.truncate(i),
                        _ => input.insert(i, byte),
                    }
                }
                if input.is_empty() {
                    continue;
                }
                let (valid, plain) = compare_with_walk(&input, limits, at);
                accepted += u64::from(valid);
                by_plain += u64::from(plain);
                // Trailing bytes after the item change nothing but where the input ends.
                input.extend_from_slice(&[0x61, 0x80]);
                compare_with_walk(&input, limits, at);
            }
        }
        // Both the plain test and the walk must see many valid items (the generator drifts
        // otherwise), and the walk some the plain test leaves to it.
        assert!(accepted > cases / 4, "{accepted} of {cases} accepted: the generator drifted");
        assert!(by_plain > cases / 8 && by_plain < accepted, "{by_plain} plain of {accepted} accepted");
    }

    fn hex_of(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    impl Reader<'_> {
        /// The iterative walk alone (scalars through `skip_scalar`), for comparison.
        fn skip_nested_for_test(&mut self) -> Result<ItemShape, ProtocolError> {
            match self.peek_major() {
                Some(major::ARRAY | major::MAP) => self.skip_nested(),
                _ => self.skip_scalar().map(|()| ItemShape::default()),
            }
        }
    }
}

#[cfg(test)]
mod owned_text_tests {
    //! [`owned_text`] checks long text piece by piece: it must give what the standard
    //! validator gives on the whole, wherever a piece's end falls.

    use super::{owned_text, TEXT_PIECE};

    /// `owned_text` and `std::str::from_utf8` agree on `bytes`.
    fn agrees(bytes: &[u8]) {
        let expected = std::str::from_utf8(bytes).ok().map(str::to_owned);
        assert_eq!(owned_text(bytes), expected, "length {}", bytes.len());
    }

    /// Three pieces and a bit of `unit` repeated after `lead` ASCII bytes.
    fn text(lead: usize, unit: &str) -> Vec<u8> {
        let mut text = "x".repeat(lead);
        while text.len() < 3 * TEXT_PIECE + 10 {
            text.push_str(unit);
        }
        text.into_bytes()
    }

    #[test]
    fn characters_cut_by_a_piece_end_are_read_whole() {
        for unit in ["é", "€", "😀", "a€b😀é"] {
            for lead in 0..4 {
                let bytes = text(lead, unit);
                agrees(&bytes);
                let s = owned_text(&bytes).expect("valid");
                assert_eq!(s.as_bytes(), &bytes[..]);
            }
        }
        // Exactly one piece, and one byte more.
        agrees(&text(0, "😀")[..TEXT_PIECE]);
        agrees("y".repeat(TEXT_PIECE + 1).as_bytes());
    }

    #[test]
    fn invalid_bytes_anywhere_are_refused() {
        for unit in ["a", "😀"] {
            let valid = text(0, unit);
            for at in [0, TEXT_PIECE - 3, TEXT_PIECE - 1, TEXT_PIECE, TEXT_PIECE + 1, 2 * TEXT_PIECE, valid.len() - 1] {
                for bad in [0x80, 0xc3, 0xf0, 0xff] {
                    let mut bytes = valid.clone();
                    bytes[at] = bad;
                    agrees(&bytes);
                }
            }
            // The text's last character cut short: no next piece to complete it.
            let mut cut = text(0, "a");
            cut.extend_from_slice(&[0xf0, 0x9f, 0x98]);
            assert_eq!(owned_text(&cut), None);
            agrees(&cut);
        }
        // A character cut by a piece end, the next piece not continuing it.
        let mut bytes = "z".repeat(TEXT_PIECE - 1).into_bytes();
        bytes.push(0xe2);
        bytes.extend_from_slice("z".repeat(TEXT_PIECE).as_bytes());
        assert_eq!(owned_text(&bytes), None);
    }
}
