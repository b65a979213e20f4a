//! Writing an object (CBOR map) whose keys arrive one by one, for [`Builder`](super::builder)
//! and the payload serializer ([`crate::serde_ser`]): telling a repeated key, merging a repeated
//! key's value into the first entry, the canonical head once the count is known, JavaScript
//! property order (docs/PROTOCOL.md sections 3 and 5).
//!
//! A repeated key is rare, so the common path records one bit per key (chosen by a hash of
//! it) and, past [`LINEAR_KEYS`] keys, a hash of each key in a set; a possible repeat is
//! confirmed, and the earlier entry found, by reading the object's entries back from the output.

use std::collections::HashSet;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::ops::Range;

use super::reader::FINGERPRINT_SPREAD;
use super::Reader;
use crate::error::ProtocolError;
use crate::limits::CborLimits;

/// Keys of an object told apart by a one-word filter; past them, keys are hashed into a set.
pub(crate) const LINEAR_KEYS: usize = 16;

/// The key sets of the objects being written that have more than [`LINEAR_KEYS`] keys,
/// innermost last.
#[derive(Debug, Default)]
pub(crate) struct KeyStack {
    wide: Vec<HashSet<u64>>,
}

/// What one object's writer keeps of its keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ObjectKeys {
    /// One bit per key, chosen by its fingerprint (a Bloom filter of one hash): a key whose
    /// bit is clear is certainly new.
    seen: u64,
    /// Whether it has a set in [`KeyStack`] (the last one).
    wide: bool,
}

impl KeyStack {
    /// Starts the keys of a new object (inside the ones open).
    #[inline]
    pub(crate) fn open(&self) -> ObjectKeys {
        ObjectKeys { seen: 0, wide: false }
    }

    /// Records `key` as the next key of the innermost object (`keys`), whose `count` entries
    /// so far are written from `content_at` on in `out`; `true` when it may repeat one of them
    /// (confirm with [`find_entry`]), `false` when it certainly does not.
    ///
    /// The first [`LINEAR_KEYS`] keys are told apart by the filter alone; a key whose bit is
    /// set (about one in eight among sixteen) is compared with the keys read back. From then
    /// on each key's hash goes into a set (the first keys' are added, read back, once).
    #[inline]
    pub(crate) fn insert(
        &mut self,
        keys: &mut ObjectKeys,
        key: &[u8],
        out: &[u8],
        content_at: usize,
        count: usize,
    ) -> bool {
        if count < LINEAR_KEYS {
            let bit = 1u64 << (filter_hash(key).wrapping_mul(FINGERPRINT_SPREAD) >> 58);
            let maybe = keys.seen & bit != 0;
            keys.seen |= bit;
            return maybe;
        }
        // By value, not by reference: the caller's `keys` need not live in memory, so that the
        // filter of a struct whose keys are constants folds away where it is inlined.
        let first_wide = !keys.wide;
        keys.wide = true;
        self.insert_wide(first_wide, key, out, content_at, count)
    }

    /// Past [`LINEAR_KEYS`] keys: `key` goes into the innermost set, which `first_wide` asks
    /// to create from the keys written so far.
    #[cold]
    #[inline(never)]
    fn insert_wide(&mut self, first_wide: bool, key: &[u8], out: &[u8], content_at: usize, count: usize) -> bool {
        if first_wide {
            let mut set = HashSet::with_capacity(4 * LINEAR_KEYS);
            let mut reader = Reader::new(out.get(content_at..).unwrap_or_default(), CborLimits::widest());
            for _ in 0..count {
                let Ok(earlier) = reader.read_key_raw() else { break };
                set.insert(hash_key(earlier));
                if reader.skip().is_err() {
                    break;
                }
            }
            self.wide.push(set);
        }
        !self.wide.last_mut().is_some_and(|set| set.insert(hash_key(key)))
    }

    /// Forgets the keys of the innermost object (it is complete).
    #[inline]
    pub(crate) fn close(&mut self, keys: ObjectKeys) {
        if keys.wide {
            self.drop_innermost();
        }
    }

    #[cold]
    #[inline(never)]
    fn drop_innermost(&mut self) {
        self.wide.pop();
    }
}

fn hash_key(key: &[u8]) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(key)
}

/// Where the keys of an object's first [`LINEAR_KEYS`] entries start in the output, the most
/// recent first, as the payload serializer keeps them (the event builder lists them in a
/// stack of its own): a key the filter flags is compared with those keys alone, not found by
/// reading the object back over every value before it (one of them may be a large array).
///
/// Each entry moves the offsets one place (a constant place each, never an index known at run
/// time only), so that a writer that keeps them in a local can keep them in registers, where
/// the compiler drops them when no flagged key needs them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyOffsets([u32; LINEAR_KEYS]);

/// The offset of a key that was not kept (beyond `u32::MAX`): the object is read back.
pub(crate) const UNKNOWN: u32 = u32::MAX;

/// The offset `at` as kept.
#[inline(always)]
pub(crate) fn kept_offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(UNKNOWN)
}

/// [`KeyOffsets::with`], place by place.
macro_rules! key_offsets_with {
    ($($place:literal)*) => {
        /// These offsets with the key at `at` as the most recent one (the oldest one dropped).
        #[inline(always)]
        #[must_use]
        pub(crate) fn with(self, at: usize) -> Self {
            KeyOffsets([kept_offset(at), $(self.0[$place]),*])
        }
    };
}

impl KeyOffsets {
    /// No key yet.
    pub(crate) const NONE: KeyOffsets = KeyOffsets([UNKNOWN; LINEAR_KEYS]);

    key_offsets_with!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14);

    /// The offsets of the first `entries` keys in the order they were written (none when
    /// there are more entries than offsets kept).
    pub(crate) fn in_written_order(&self, entries: usize) -> ([u32; LINEAR_KEYS], usize) {
        let mut order = self.0;
        let kept = if entries <= LINEAR_KEYS { entries } else { 0 };
        order[..kept].reverse();
        (order, kept)
    }

    /// These offsets after a merge (see [`moved_by_merge`]).
    #[must_use]
    pub(crate) fn after_merge(mut self, old_end: usize, grown: isize) -> Self {
        moved_by_merge(&mut self.0, old_end, grown);
        self
    }
}

/// Moves the key offsets `offsets` that lie after `old_end`, where a value that ended there was
/// replaced by one `grown` bytes longer (shorter when negative).
pub(crate) fn moved_by_merge(offsets: &mut [u32], old_end: usize, grown: isize) {
    for at in offsets {
        if *at != UNKNOWN && *at as usize >= old_end {
            *at = kept_offset((*at as usize).wrapping_add_signed(grown));
        }
    }
}

/// The value of the entry whose key is `key` among the `entries` entries written from
/// `content_at` on in `out` (strict CBOR written by this crate), as a range of `out`; `end` is
/// where the last entry ends (the repeated key starts there) and `offsets` where the entries'
/// keys start, in order: the object is read back when they are not all there.
pub(crate) fn find_entry_at(
    out: &[u8],
    content_at: usize,
    entries: usize,
    end: usize,
    offsets: &[u32],
    key: &[u8],
) -> Option<Range<usize>> {
    if offsets.len() != entries || offsets.contains(&UNKNOWN) {
        return find_entry(out, content_at, entries, key);
    }
    for (i, &at) in offsets.iter().enumerate() {
        let at = at as usize;
        let next = offsets.get(i + 1).map_or(end, |&next| next as usize);
        let mut reader = Reader::new(out.get(at..next)?, CborLimits::widest());
        match reader.read_key_raw() {
            Ok(this) if this == key => return Some(at + reader.position()..next),
            Ok(_) => {}
            Err(_) => return find_entry(out, content_at, entries, key),
        }
    }
    None
}

/// The value of the entry whose key is `key` among the `entries` entries written from
/// `content_at` on in `out` (strict CBOR written by this crate), as a range of `out`.
pub(crate) fn find_entry(out: &[u8], content_at: usize, entries: usize, key: &[u8]) -> Option<Range<usize>> {
    let content = out.get(content_at..)?;
    let mut reader = Reader::new(content, CborLimits::widest());
    for _ in 0..entries {
        let this = reader.read_key_raw().ok()?;
        let start = reader.position();
        reader.skip().ok()?;
        if this == key {
            return Some(content_at + start..content_at + reader.position());
        }
    }
    None
}

/// Moves the value written last into `buf` (from `value_at` on, after a repeated key written
/// at `key_at`) into the place of the earlier value `old`, and drops the repeated key.
pub(crate) fn replace_value(buf: &mut Vec<u8>, old: Range<usize>, key_at: usize, value_at: usize) {
    let value = buf.split_off(value_at);
    buf.truncate(key_at);
    buf.splice(old, value);
}

/// Rewrites the head of the container at `head_at` (`head_len` bytes written, major type
/// `major`) in its canonical form for `count` entries, when it differs.
#[inline]
pub(crate) fn finish_head(buf: &mut Vec<u8>, head_at: usize, head_len: usize, major: u8, count: usize) {
    if count < 24 && head_len == 1 {
        buf[head_at] = (major << 5) | count as u8;
        return;
    }
    let (head, len) = head_bytes(major, count as u64);
    let written = head_at..head_at + head_len;
    if buf[written.clone()] != head[..len] {
        buf.splice(written, head[..len].iter().copied());
    }
}

/// The canonical head of major type `major` with argument `n`, and its length.
fn head_bytes(major: u8, n: u64) -> ([u8; 9], usize) {
    let mut head = [0u8; 9];
    let m = major << 5;
    let len = match n {
        0..=23 => {
            head[0] = m | n as u8;
            1
        }
        24..=0xff => {
            head[..2].copy_from_slice(&[m | 24, n as u8]);
            2
        }
        0x100..=0xffff => {
            head[0] = m | 25;
            head[1..3].copy_from_slice(&(n as u16).to_be_bytes());
            3
        }
        0x1_0000..=0xffff_ffff => {
            head[0] = m | 26;
            head[1..5].copy_from_slice(&(n as u32).to_be_bytes());
            5
        }
        _ => {
            head[0] = m | 27;
            head[1..].copy_from_slice(&n.to_be_bytes());
            9
        }
    };
    (head, len)
}

/// Puts the `entries` entries written from `content_at` on (to the end of `buf`) in
/// JavaScript property order when one of the keys is an array index: those keys first,
/// ascending, then the others in their order.
pub(crate) fn to_javascript_order(buf: &mut Vec<u8>, content_at: usize, entries: usize) -> Result<(), ProtocolError> {
    let mut reader = Reader::new(&buf[content_at..], CborLimits::widest());
    // (array index or none, start, end) of each entry, relative to `content_at`.
    let mut ranges = Vec::with_capacity(entries);
    let mut any_index = false;
    for _ in 0..entries {
        let start = reader.position();
        let key = reader.read_key()?;
        let index = if is_array_index(key) { key.parse::<u64>().ok() } else { None };
        any_index |= index.is_some();
        reader.skip()?;
        ranges.push((index, start, reader.position()));
    }
    if !any_index {
        return Ok(());
    }
    // Stable: the other keys keep their order.
    ranges.sort_by_key(|&(index, _, _)| index.map_or((1, 0), |i| (0, i)));
    let mut content = Vec::with_capacity(buf.len() - content_at);
    for (_, start, end) in ranges {
        content.extend_from_slice(&buf[content_at + start..content_at + end]);
    }
    buf.truncate(content_at);
    buf.extend_from_slice(&content);
    Ok(())
}

/// A hash of `key` for the one-word filter of [`ObjectKeys`]: its length and its first, middle
/// and last bytes (no branch, no loop; keys that agree on all of them are compared).
#[inline(always)]
fn filter_hash(key: &[u8]) -> u64 {
    let byte = |i: usize| u64::from(key.get(i).copied().unwrap_or(0));
    let n = key.len();
    (n as u64) ^ byte(0) << 8 ^ byte(n / 2) << 16 ^ byte(n.wrapping_sub(1)) << 24
}

/// Whether `key` is a canonical array index: `0` or a decimal without leading zero, at most
/// 4,294,967,294.
///
/// ```
/// use pi_protocol_runtime::json::is_array_index;
/// assert!(is_array_index("0") && is_array_index("10"));
/// assert!(!is_array_index("01") && !is_array_index("-1") && !is_array_index("4294967295"));
/// ```
pub fn is_array_index(key: &str) -> bool {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || !b.iter().all(u8::is_ascii_digit) || (b.len() > 1 && b[0] == b'0') {
        return false;
    }
    key.parse::<u64>().is_ok_and(|n| n < u64::from(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_always_flagged_and_a_fresh_one_rarely() {
        let mut stack = KeyStack::default();
        let mut outer = stack.open();
        assert!(!stack.insert(&mut outer, b"key-0", &[], 0, 0));
        // An object written as the keys come, each with the value null.
        let mut out = vec![0xb9, 0, 0];
        let mut keys = stack.open();
        let names: Vec<String> = (0..200).map(|i| format!("key-{i}")).collect();
        let mut flagged = 0;
        for (count, name) in names.iter().enumerate() {
            flagged += usize::from(stack.insert(&mut keys, name.as_bytes(), &out, 3, count));
            out.push(0x60 + name.len() as u8);
            out.extend_from_slice(name.as_bytes());
            out.push(0xf6);
        }
        assert!(flagged <= 6, "{flagged} fresh keys flagged");
        for name in [&names[0], &names[15], &names[16], &names[199]] {
            assert!(stack.insert(&mut keys, name.as_bytes(), &out, 3, 200), "{name}");
            assert!(find_entry(&out, 3, 200, name.as_bytes()).is_some());
        }
        assert_eq!(find_entry(&out, 3, 200, b"key-200"), None);
        stack.close(keys);
        // The outer object's keys are its own again.
        assert!(stack.insert(&mut outer, b"key-0", &[], 0, 1));
        stack.close(outer);
        assert_eq!(stack.wide.len(), 0);
    }

    #[test]
    fn kept_key_offsets_find_an_entry_without_reading_the_values_before_it() {
        // {"a": [1, 2, 3], "bb": null, "c": "x"} written entry by entry, the offsets kept.
        let mut out = vec![0xa3];
        let mut keys_at = KeyOffsets::NONE;
        let mut entry = |out: &mut Vec<u8>, key: &str, value: &[u8]| {
            keys_at = keys_at.with(out.len());
            out.push(0x60 + key.len() as u8);
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(value);
        };
        entry(&mut out, "a", &[0x83, 1, 2, 3]);
        entry(&mut out, "bb", &[0xf6]);
        entry(&mut out, "c", &[0x61, b'x']);
        let end = out.len();
        let (order, kept) = keys_at.in_written_order(3);
        assert_eq!(&order[..kept], &[1, 7, 11]);
        for (key, value) in [("a", &[0x83, 1, 2, 3][..]), ("bb", &[0xf6]), ("c", &[0x61, b'x'])] {
            let found = find_entry_at(&out, 1, 3, end, &order[..kept], key.as_bytes()).unwrap();
            assert_eq!(&out[found.clone()], value, "{key}");
            // The same range as reading the object back.
            assert_eq!(Some(found), find_entry(&out, 1, 3, key.as_bytes()));
        }
        assert_eq!(find_entry_at(&out, 1, 3, end, &order[..kept], b"b"), None);
        // Without all the offsets (or with one unknown), the object is read back.
        assert_eq!(find_entry_at(&out, 1, 3, end, &order[..2], b"c"), find_entry(&out, 1, 3, b"c"));
        assert_eq!(find_entry_at(&out, 1, 3, end, &[1, UNKNOWN, 11], b"c"), find_entry(&out, 1, 3, b"c"));
        assert_eq!(keys_at.in_written_order(LINEAR_KEYS + 1).1, 0);
        // "a"'s value grows by 2 bytes: the keys after it move, the ones before it do not.
        let moved = keys_at.after_merge(6, 2);
        assert_eq!(&moved.in_written_order(3).0[..3], &[1, 9, 13]);
        let shrunk = keys_at.after_merge(6, -3);
        assert_eq!(&shrunk.in_written_order(3).0[..3], &[1, 4, 8]);
        assert_eq!(&shrunk.0[3..], &KeyOffsets::NONE.0[3..]);
    }

    #[test]
    fn heads_are_rewritten_only_when_they_differ() {
        for (count, expected) in [(0usize, "80"), (23, "97"), (24, "9818"), (256, "990100"), (65_536, "9a00010000")] {
            let mut buf = vec![0x80, 0xf6];
            finish_head(&mut buf, 0, 1, 4, count);
            assert_eq!(hex::encode(&buf[..buf.len() - 1]), expected);
            assert_eq!(buf.last(), Some(&0xf6));
        }
    }
}
