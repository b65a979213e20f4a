//! The plain-item test in front of the walk: small plain items (the common case) accepted by a
//! short recursive test over the same table of initial bytes, leaving everything else to the
//! walk of `skip.rs`.

use super::head::{short_text, Class, FLOAT64, HEADS, SHORT_TEXT_HEAD, SMALL_CONTAINER};
use super::text::{is_ascii_text, HIGH_BITS};
use super::words::{head_word, key_fingerprint, low_bytes, FINGERPRINT_SPREAD, LOW_BYTES};
use super::{ItemShape, Reader};
use crate::number::is_encodable_number;

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
pub(super) struct Plain<'de> {
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
    pub(super) fn new(reader: &Reader<'de>) -> Self {
        let limits = reader.limits;
        Plain {
            input: reader.input,
            short_text: (limits.max_byte_length() as usize).min(23),
            max_byte_length: limits.max_byte_length() as usize,
            max_entries: (limits.max_container_length() as usize).min(usize::from(SMALL_CONTAINER)),
            // The depth rule, folded: entries at `level` are at `reader.depth + level + 1`.
            entry_levels: (PLAIN_LEVELS - 1).min(limits.max_depth().saturating_sub(reader.depth)),
        }
    }

    /// Reads the item at `pos`, whose head is `b`, when it is a plain scalar; an array or map
    /// of up to 16 entries is left to the caller, which reads it inline or by a call.
    #[inline(always)]
    fn value(&self, pos: usize, b: u8) -> Step {
        match self.scalar(pos, b) {
            Some(end) => Step::End(end),
            None if HEADS[usize::from(b)].class == Class::SmallContainer => Step::Container,
            None => Step::NotPlain,
        }
    }

    /// The position after the plain scalar of head `b` at `pos`, or `None` (for a container too).
    #[inline(always)]
    fn scalar(&self, pos: usize, b: u8) -> Option<usize> {
        let head = HEADS[usize::from(b)];
        match head.class {
            // Text shorter than 24 bytes (most keys, ids and short values).
            Class::ShortText => self.short_text(pos, b).map(|(end, _)| end),
            // Integers below 2^32 in magnitude, false, true, null, float64.
            Class::Fixed => {
                let end = pos + usize::from(head.fixed_size);
                let bytes = self.input.get(pos..end)?;
                if b == FLOAT64 {
                    let v = f64::from_be_bytes(bytes.get(1..)?.try_into().ok()?);
                    return is_encodable_number(v).then_some(end);
                }
                Some(end)
            }
            // Text of 24 to 255 bytes.
            Class::ByteLengthText => {
                let (start, len) = short_text(b, self.input, pos, self.max_byte_length)?;
                is_ascii_text(&self.input[start..start + len]).then_some(start + len)
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
        // The short-text rule's length of a 0x60-0x77 head; any other head wraps to 24 or more,
        // beyond `short_text` (at most 23): callers reading a key rely on it.
        let len = usize::from(b.wrapping_sub(SHORT_TEXT_HEAD));
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
        // A small container counts its entries in the head.
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
    pub(super) fn container(&self, pos: usize, level: u32, shape: &mut ItemShape, b: u8) -> Option<usize> {
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
    pub(super) fn container_here(&self, pos: usize, level: u32, shape: &mut ItemShape, b: u8) -> Option<usize> {
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

/// Levels of arrays and maps [`Plain`] descends before it leaves an item to the
/// iterative walk (the `medium` and `large` payloads have 5).
const PLAIN_LEVELS: u32 = 6;
