//! The walk: skipping one whole item with every rule of the subset and every limit checked
//! (duplicate keys included), iteratively, after the plain-item test of `plain.rs` had its try.

use std::collections::HashSet;

use smallvec::SmallVec;

use super::head::{
    check_float, major, reserved_or_indefinite, short_text, truncated, Class, Follows, FLOAT64, HEADS, RESERVED,
};
use super::plain::Plain;
use super::text::is_utf8;
use super::words::{ascii_head, head_word, key_fingerprint, low_bytes};
use super::{ItemShape, Reader};
use crate::error::{ProtocolError, Rule};

impl<'de> Reader<'de> {
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
                if HEADS[usize::from(head)].class == Class::SmallContainer && self.depth_allows(self.depth) {
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
    pub(super) fn skip_scalar(&mut self) -> Result<(), ProtocolError> {
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
    pub(super) fn skip_nested(&mut self) -> Result<ItemShape, ProtocolError> {
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
        let mut current = Level::open(m == major::MAP, n, self.input.len() - self.pos, &keys, &mut key_sets);
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
                if let Some((start, n)) = short_text(b, input, pos, max_byte_length) {
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
                    let head = HEADS[usize::from(b)];
                    if head.argument == RESERVED {
                        return Err(reserved_or_indefinite(b));
                    }
                    if head.follows != Follows::Text {
                        return Err(self.non_text_key());
                    }
                    let key = self.string_body(b & 0x1f)?;
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
            if let Some((start, n)) = short_text(b, input, pos, max_byte_length) {
                // Most ids and short values.
                if !is_utf8(&input[start..start + n]) {
                    return Err(ProtocolError::cbor(Rule::InvalidUtf8));
                }
                pos = start + n;
                continue;
            }
            let head = HEADS[usize::from(b)];
            if head.class == Class::Fixed {
                // Small integers, false, true, null, float64: their size is in the table.
                let end = pos + usize::from(head.fixed_size);
                let bytes = input.get(pos..end).ok_or_else(truncated)?;
                if b == FLOAT64 {
                    check_float(f64::from_be_bytes(bytes[1..].try_into().expect("eight bytes")))?;
                }
                pos = end;
                continue;
            }
            self.pos = pos;
            if head.argument == RESERVED {
                return Err(reserved_or_indefinite(b));
            }
            let (m, ai) = (head.major, b & 0x1f);
            match head.follows {
                Follows::Text => self.skip_text_body(ai)?,
                Follows::Nothing => {
                    self.integer_value(m, ai)?;
                }
                Follows::Elements | Follows::Entries => {
                    let is_map = head.follows == Follows::Entries;
                    let n = self.container_length(ai, if is_map { 2 } else { 1 })?;
                    shape.depth = shape.depth.max(parents.len() as u32 + 2);
                    shape.widest = shape.widest.max(n as u32);
                    if n > 0 {
                        // The entries are one level deeper: check that depth once for all of them.
                        self.check_entry_depth()?;
                        parents.push(current);
                        current = Level::open(is_map, n, self.input.len() - self.pos, &keys, &mut key_sets);
                        self.depth += 1;
                    }
                }
                Follows::Bytes => {
                    if !self.allow_bytes {
                        return Err(ProtocolError::schema(Rule::ByteString));
                    }
                    self.string_body(ai)?;
                }
                Follows::Tag => return Err(ProtocolError::cbor(Rule::Tag)),
                Follows::Float | Follows::Refused => {
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
        if self.depth_allows(self.depth + 1) {
            Ok(())
        } else {
            Err(self.depth_error())
        }
    }
}

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

/// Entries of small maps are checked for duplicates by a linear scan; larger maps use a hash set.
const LINEAR_KEY_SCAN: usize = 16;
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
    fn open(is_map: bool, n: usize, left: usize, keys: &KeyStack, key_sets: &mut Vec<HashSet<&[u8]>>) -> Level {
        let key_set = if is_map && n > LINEAR_KEY_SCAN {
            // No more keys than input bytes `left` (a short container's walk sees larger counts).
            key_sets.push(HashSet::with_capacity(n.min(4096).min(left / 2)));
            (key_sets.len() - 1) as u32
        } else {
            NO_KEY_SET
        };
        Level { remaining: n, is_map, keys_start: keys.len(), key_set }
    }
}
