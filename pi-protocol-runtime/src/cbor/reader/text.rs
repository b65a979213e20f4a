//! The checks of text bodies: UTF-8 ([`is_utf8`], [`utf8_str`], [`owned_text`]) with an ASCII
//! test a word at a time in front ([`is_ascii`]).
//!
//! The crate's one `unsafe` block is here, in [`utf8_str`]: viewing bytes that [`is_ascii`]
//! accepted as `str` without the standard validator. Audit it with `is_ascii` (its test,
//! `the_ascii_test_sees_a_high_byte_at_every_position_of_every_length`, covers every length
//! class and position).

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

/// [`is_ascii`] for texts of 16 to 255 bytes (ids, the texts of [`Plain`] with their length
/// after the head): sixteen bytes per step in two words, the last step overlapping the one
/// before; no vector loop to set up (for a 40-byte text that setup and its tail cost more than
/// the test).
#[inline(never)]
pub(crate) fn is_ascii_text(bytes: &[u8]) -> bool {
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

// The high bit of every byte of a word: zero after masking for ASCII bytes. Defined once, by
// the pattern engine, whose word-at-a-time class test ends with the same mask.
pub(crate) use pi_protocol_pattern::HIGH_BITS;

#[cfg(test)]
mod tests {
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
