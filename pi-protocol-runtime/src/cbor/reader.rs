//! The strict CBOR reader (PROTOCOL.md section 2).
//!
//! [`Reader`] is a cursor over one complete CBOR payload. Every read checks the subset's rules
//! and the configured [`CborLimits`] before it trusts a declared length, so a lying length fails
//! as "truncated" without anything of that size being allocated. Nothing here knows the
//! envelope schema: derived decoders drive the reader.

use bytes::Bytes;

use crate::codec::Scalar;
use crate::error::{ProtocolError, Rule};
use crate::limits::CborLimits;

/// Largest integer magnitude JSON numbers carry exactly: 2^53 - 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

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
            None => Bytes::copy_from_slice(&self.input[start..end]),
        }
    }

    /// Fails with `TrailingData` unless the input is fully consumed.
    ///
    /// # Errors
    /// `Cbor`/`TrailingData`.
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

    /// The initial byte's parts, like [`initial`](Self::initial) but without the depth check, for
    /// entries of a container whose children's depth was checked when it was opened.
    #[inline]
    fn initial_at_checked_depth(&self) -> Result<(u8, u8), ProtocolError> {
        let b = self.peek_byte()?;
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
        std::str::from_utf8(body).map_err(|_| ProtocolError::cbor(Rule::InvalidUtf8))
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
    pub fn enter_map(&mut self) -> Result<usize, ProtocolError> {
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
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Reads a map key, which must be a text string.
    ///
    /// # Errors
    /// `Cbor`/`NonTextKey` for any other item, `InvalidUtf8`, limits, truncation.
    pub fn read_key(&mut self) -> Result<&'de str, ProtocolError> {
        let (m, ai) = self.initial()?;
        if m != major::TEXT {
            return Err(ProtocolError::cbor(Rule::NonTextKey));
        }
        self.text_body(ai)
    }

    /// Reads a map key, which must be a text string, as its UTF-8 bytes (validated).
    ///
    /// # Errors
    /// As [`read_key`](Self::read_key).
    #[inline]
    pub fn read_key_bytes(&mut self) -> Result<&'de [u8], ProtocolError> {
        let (m, ai) = self.initial()?;
        if m != major::TEXT {
            return Err(ProtocolError::cbor(Rule::NonTextKey));
        }
        let body = self.string_body(ai)?;
        if is_utf8(body) {
            Ok(body)
        } else {
            Err(ProtocolError::cbor(Rule::InvalidUtf8))
        }
    }

    /// Reads a text string.
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "string" }` for another item; `Cbor` errors.
    pub fn read_text(&mut self) -> Result<&'de str, ProtocolError> {
        let (m, ai) = self.initial()?;
        if m != major::TEXT {
            return Err(self.wrong_type(m, "string"));
        }
        self.text_body(ai)
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
    pub fn read_scalar(&mut self) -> Result<Scalar<'de>, ProtocolError> {
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
    /// The walk is iterative: nesting costs a few bytes of an explicit stack per level (inline
    /// for the first levels, so shallow items allocate nothing), never a call frame, so even
    /// the deepest configurable item is safe on a small thread stack.
    ///
    /// # Errors
    /// As [`skip`](Self::skip).
    pub fn skip_item(&mut self) -> Result<ItemShape, ProtocolError> {
        match self.peek_major() {
            Some(major::ARRAY | major::MAP) => self.skip_nested(),
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
    fn skip_nested(&mut self) -> Result<ItemShape, ProtocolError> {
        let mut shape = ItemShape::default();
        let mut levels: InlineStack<Level, INLINE_LEVELS> = InlineStack::new();
        let mut keys: InlineStack<&'de [u8], INLINE_KEYS> = InlineStack::new();
        let mut key_sets: Vec<std::collections::HashSet<&'de [u8]>> = Vec::new();
        loop {
            if let Some(level) = levels.last_mut() {
                if level.expect_key {
                    let (m, ai) = self.initial_at_checked_depth()?;
                    if m != major::TEXT {
                        return Err(ProtocolError::cbor(Rule::NonTextKey));
                    }
                    let key = self.string_body(ai)?;
                    if !is_utf8(key) {
                        return Err(ProtocolError::cbor(Rule::InvalidUtf8));
                    }
                    let fresh = if level.key_set != NO_KEY_SET {
                        key_sets[level.key_set as usize].insert(key)
                    } else if keys.as_slice()[level.keys_start..].iter().any(|seen| same_key(seen, key)) {
                        false
                    } else {
                        keys.push(key);
                        true
                    };
                    if !fresh {
                        return Err(ProtocolError::cbor(Rule::DuplicateKey));
                    }
                    level.expect_key = false;
                    continue;
                }
                level.remaining -= 1;
                level.expect_key = level.is_map && level.remaining > 0;
            }
            let (m, ai) = if levels.is_empty() { self.initial()? } else { self.initial_at_checked_depth()? };
            match m {
                major::UNSIGNED | major::NEGATIVE => {
                    self.integer_value(m, ai)?;
                }
                major::BYTES => {
                    if !self.allow_bytes {
                        return Err(ProtocolError::schema(Rule::ByteString));
                    }
                    self.string_body(ai)?;
                }
                major::TEXT => {
                    self.skip_text_body(ai)?;
                }
                major::ARRAY | major::MAP => {
                    let is_map = m == major::MAP;
                    let n = self.container_length(ai, if is_map { 2 } else { 1 })?;
                    shape.depth = shape.depth.max(levels.len() as u32 + 1);
                    shape.widest = shape.widest.max(n as u32);
                    if n > 0 {
                        // The entries are one level deeper: check that depth once for all of them.
                        if self.depth + 1 > self.limits.max_depth() {
                            return Err(ProtocolError::cbor(Rule::DepthLimit {
                                limit: u64::from(self.limits.max_depth()),
                            }));
                        }
                        let key_set = if is_map && n > LINEAR_KEY_SCAN {
                            key_sets.push(std::collections::HashSet::with_capacity(n.min(4096)));
                            (key_sets.len() - 1) as u32
                        } else {
                            NO_KEY_SET
                        };
                        levels.push(Level {
                            remaining: n,
                            is_map,
                            expect_key: is_map,
                            keys_start: keys.len(),
                            key_set,
                        });
                        self.depth += 1;
                    }
                }
                major::TAG => return Err(ProtocolError::cbor(Rule::Tag)),
                // false, true, null: one byte, nothing to check.
                _ if (20..=22).contains(&ai) => self.pos += 1,
                _ => {
                    self.simple(ai)?;
                }
            }
            // Close every finished container; the item ends when none is open.
            while let Some(level) = levels.last() {
                if level.remaining > 0 || level.expect_key {
                    break;
                }
                if level.key_set != NO_KEY_SET {
                    key_sets.pop();
                }
                keys.truncate(level.keys_start);
                levels.pop();
                self.depth -= 1;
            }
            if levels.is_empty() {
                return Ok(shape);
            }
        }
    }

    // --------------------------------------------------------------- peeking

    /// With the cursor at a map head, finds `key` among its entries without moving the cursor.
    ///
    /// Returns `Ok(None)` when the key is absent. Entries before the key are validated as they
    /// are passed over; the map as a whole is validated when it is actually read.
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "object" }` when the item is not a map; `Cbor` errors met
    /// on the way.
    pub fn peek_map_value(&self, key: &str) -> Result<Option<Scalar<'de>>, ProtocolError> {
        let mut probe = self.clone();
        let n = probe.enter_map()?;
        for _ in 0..n {
            let k = probe.read_key_bytes()?;
            if k == key.as_bytes() {
                return probe.read_scalar().map(Some);
            }
            probe.skip()?;
        }
        Ok(None)
    }

    /// With the cursor at a map head, writes its keys in wire order into `out` without moving
    /// the cursor and returns how many there are, or `Ok(None)` when the map has more entries
    /// than `out` holds. Allocates nothing.
    ///
    /// # Errors
    /// As [`peek_map_value`](Self::peek_map_value).
    pub fn peek_map_keys_into(&self, out: &mut [&'de [u8]]) -> Result<Option<usize>, ProtocolError> {
        let mut probe = self.clone();
        let n = probe.enter_map()?;
        if n > out.len() {
            return Ok(None);
        }
        for slot in out.iter_mut().take(n) {
            *slot = probe.read_key_bytes()?;
            probe.skip()?;
        }
        Ok(Some(n))
    }
}

/// Checks a decoded float64: finite, and a safe integer when integral.
#[inline]
pub(crate) fn check_float(v: f64) -> Result<(), ProtocolError> {
    if !v.is_finite() {
        return Err(ProtocolError::cbor(Rule::NonFiniteNumber));
    }
    // Every float64 beyond 2^53 - 1 in magnitude is integral, so no `fract()` (a libm call) is needed.
    if v.abs() > MAX_SAFE_INTEGER as f64 {
        return Err(ProtocolError::cbor(Rule::UnsafeInteger));
    }
    Ok(())
}

/// Whether `bytes` is valid UTF-8: an ASCII scan for short strings (keys, ids), the standard
/// library's validator for long or non-ASCII ones. Short strings dominate envelopes and payload
/// keys, and `std::str::from_utf8` has a fixed cost per call that this avoids.
#[inline]
pub(crate) fn is_utf8(bytes: &[u8]) -> bool {
    if bytes.len() <= 64 && bytes.is_ascii() {
        return true;
    }
    std::str::from_utf8(bytes).is_ok()
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

/// Whether two keys are equal, testing length and first byte before comparing the rest (most
/// keys of one map differ there, and a `memcmp` call costs more than the whole test).
#[inline]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.first() == b.first() && a == b
}

#[cold]
fn truncated() -> ProtocolError {
    ProtocolError::cbor(Rule::Truncated)
}

/// Entries of small maps are checked for duplicates by a linear scan; larger maps use a hash set.
const LINEAR_KEY_SCAN: usize = 16;
/// Container levels held without allocating while skipping.
const INLINE_LEVELS: usize = 16;
/// Keys of small maps held without allocating while skipping.
const INLINE_KEYS: usize = 32;
/// `Level::key_set` of a map checked by linear scan.
const NO_KEY_SET: u32 = u32::MAX;

/// One open container of an item being skipped.
#[derive(Debug, Clone, Copy, Default)]
struct Level {
    /// Entries (array elements, map entries) still to read.
    remaining: usize,
    is_map: bool,
    /// Whether the next item of this map is a key.
    expect_key: bool,
    /// Where this map's keys start in the shared key stack.
    keys_start: usize,
    /// Index of this map's hash set, or `NO_KEY_SET`.
    key_set: u32,
}

/// A stack holding its first `N` elements inline and spilling to the heap beyond.
struct InlineStack<T: Copy + Default, const N: usize> {
    inline: [T; N],
    len: usize,
    spill: Vec<T>,
}

impl<T: Copy + Default, const N: usize> InlineStack<T, N> {
    #[inline]
    fn new() -> Self {
        InlineStack { inline: [T::default(); N], len: 0, spill: Vec::new() }
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn as_slice(&self) -> &[T] {
        if self.spill.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }

    #[inline]
    fn push(&mut self, value: T) {
        if self.spill.is_empty() && self.len < N {
            self.inline[self.len] = value;
        } else {
            if self.spill.is_empty() {
                self.spill.reserve(2 * N);
                self.spill.extend_from_slice(&self.inline[..self.len]);
            }
            self.spill.push(value);
        }
        self.len += 1;
    }

    #[inline]
    fn truncate(&mut self, len: usize) {
        if len < self.len {
            self.len = len;
            if !self.spill.is_empty() {
                self.spill.truncate(len);
                if len == 0 {
                    // Keep the spill allocation's role: an empty spill means "inline".
                    self.spill.clear();
                }
            }
        }
    }

    #[inline]
    fn pop(&mut self) {
        self.truncate(self.len.saturating_sub(1));
    }

    #[inline]
    fn last(&self) -> Option<&T> {
        self.as_slice().last()
    }

    #[inline]
    fn last_mut(&mut self) -> Option<&mut T> {
        if self.spill.is_empty() {
            self.inline[..self.len].last_mut()
        } else {
            self.spill.last_mut()
        }
    }
}
