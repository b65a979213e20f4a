//! UTF-16 code unit counting over UTF-8 strings, as JavaScript's `length` and `slice` count.

/// The number of UTF-16 code units of `s` (JavaScript's `s.length`).
pub(crate) fn len(s: &str) -> usize {
    // Every character is one unit but those of four UTF-8 bytes, which are two: count the
    // bytes that begin a character, plus one for each four-byte lead.
    s.as_bytes().iter().map(|&b| usize::from((b & 0xC0) != 0x80) + usize::from(b >= 0xF0)).sum()
}

/// `min(len(s), cap)`, reading no further than needed.
pub(crate) fn len_capped(s: &str, cap: usize) -> usize {
    let mut units = 0;
    for c in s.chars() {
        if units >= cap {
            break;
        }
        units += c.len_utf16();
    }
    units.min(cap)
}

/// Where the first `count` UTF-16 code units of `s` end, as a byte offset.
///
/// `Ok(s.len())` when `s` has no more than `count` units (JavaScript's `slice` clamps);
/// `Err(())` when `count` ends between the two units of one character.
pub(crate) fn byte_offset(s: &str, count: u64) -> Result<usize, ()> {
    let bytes = s.as_bytes();
    let mut units: u64 = 0;
    let mut i = 0;
    while i < bytes.len() {
        if units >= count {
            return Ok(i);
        }
        let b = bytes[i];
        let (width, cost) = match b {
            0x00..=0x7F => (1, 1),
            0xC0..=0xDF => (2, 1),
            0xE0..=0xEF => (3, 1),
            _ => (4, 2),
        };
        if units + cost > count {
            return Err(());
        }
        units += cost;
        i += width;
    }
    Ok(bytes.len())
}

/// The byte offset of the first character boundary at or after `count` UTF-16 units (a count
/// between the two units of one character rounds up past it).
pub(crate) fn byte_offset_ceil(s: &str, count: usize) -> usize {
    match byte_offset(s, count as u64) {
        Ok(i) => i,
        Err(()) => byte_offset(s, count as u64 + 1).unwrap_or(s.len()),
    }
}

/// The UTF-16 high surrogate of a character outside the Basic Multilingual Plane.
pub(crate) fn high_surrogate(c: char) -> Option<u16> {
    let v = c as u32;
    (v >= 0x1_0000).then(|| (((v - 0x1_0000) >> 10) + 0xD800) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_as_javascript_does() {
        assert_eq!(len(""), 0);
        assert_eq!(len("abc"), 3);
        assert_eq!(len("é"), 1);
        assert_eq!(len("€"), 1);
        assert_eq!(len("😀"), 2);
        assert_eq!(len("a😀b"), 4);
    }

    #[test]
    fn offsets_refuse_a_split_pair_and_clamp() {
        assert_eq!(byte_offset("a😀b", 0), Ok(0));
        assert_eq!(byte_offset("a😀b", 1), Ok(1));
        assert_eq!(byte_offset("a😀b", 2), Err(()));
        assert_eq!(byte_offset("a😀b", 3), Ok(5));
        assert_eq!(byte_offset("a😀b", 4), Ok(6));
        assert_eq!(byte_offset("a😀b", u64::MAX), Ok(6));
        assert_eq!(byte_offset_ceil("a😀b", 2), 5);
        assert_eq!(high_surrogate('😀'), Some(0xD83D));
        assert_eq!(high_surrogate('a'), None);
    }
}
