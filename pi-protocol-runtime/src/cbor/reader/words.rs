//! Word-at-a-time helpers both walkers (`skip.rs`, `plain.rs`) read strings with: the first
//! eight bytes of a string as one word, masks of its low bytes, and the fingerprints that map
//! keys are compared by in the duplicate-key checks.

use super::text::{is_ascii, HIGH_BITS};

/// An odd constant whose product with a fingerprint has its top six bits depend on all of it
/// (the golden-ratio constant of Fibonacci hashing).
pub(crate) const FINGERPRINT_SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

/// `LOW_BYTES[n]`: a mask of the low `n` bytes of a word, `n` up to 8 (see [`low_bytes`]).
pub(super) const LOW_BYTES: [u64; 9] = {
    let mut masks = [u64::MAX; 9];
    let mut n = 0;
    while n < 8 {
        masks[n] = (1u64 << (8 * n)) - 1;
        n += 1;
    }
    masks
};

/// The first eight bytes of `rest` as a little-endian word (one unaligned load), or its bytes
/// zero-extended when it is shorter. Callers mask off the bytes beyond their string.
#[inline(always)]
pub(super) fn head_word(rest: &[u8]) -> u64 {
    match rest.get(..8) {
        Some(word) => u64::from_le_bytes(word.try_into().expect("eight bytes")),
        None => rest.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
    }
}

/// For the `n`-byte string at `input[start..]` (within the input): its first eight bytes as a
/// word (the bytes beyond the string masked off) when the string is ASCII, else `None`.
#[inline(always)]
pub(super) fn ascii_head(input: &[u8], start: usize, n: usize) -> Option<u64> {
    let head = head_word(&input[start..]) & low_bytes(n);
    let ascii = if n <= 8 { head & HIGH_BITS == 0 } else { is_ascii(&input[start..start + n]) };
    ascii.then_some(head)
}

/// The fingerprint of an `n`-byte key whose first bytes are `head` (zero beyond the key), as
/// the walk's key stack and [`Plain`](super::plain::Plain) compare keys: the first eight bytes with the length mixed into
/// the top byte. Equal keys have equal fingerprints; keys of up to seven bytes (top byte of
/// `head` zero) are equal exactly when their fingerprints are, longer ones whose fingerprints
/// agree are compared byte by byte (or, in `Plain`, left to the walk).
#[inline(always)]
pub(super) fn key_fingerprint(head: u64, n: usize) -> u64 {
    head ^ ((n as u64) << 56)
}

/// A mask of the low `n` bytes of a word (all of it from eight on).
#[inline(always)]
pub(super) fn low_bytes(n: usize) -> u64 {
    LOW_BYTES[n.min(8)]
}
