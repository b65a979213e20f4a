//! The small, anchored subset of regular expressions that schema `pattern`s may use.
//!
//! A pattern is `^`, then a sequence of atoms each followed by an optional `{n}` count, then `$`.
//! An atom is a printable ASCII literal character (punctuation escaped with `\`) or a character
//! class `[...]` of ASCII characters and ranges (`[0-9a-f]`, `[89ab]`). Such a pattern matches
//! strings of one fixed length, so matching is a single pass over the bytes with no
//! backtracking. It is exactly what the protocol needs (the `ServerId` UUID pattern), and it
//! agrees with JavaScript's reading of the same pattern: `$` matches only at the very end, so a
//! trailing newline fails. Anything else is rejected by [`Pattern::parse`] with its position.
//!
//! ```
//! use pi_protocol_runtime::pattern::Pattern;
//! let p = Pattern::parse("^[0-9a-f]{2}-x$").unwrap();
//! assert!(p.matches("0f-x"));
//! assert!(!p.matches("0F-x"));
//! assert!(!p.matches("0f-x\n"));
//! ```

use std::fmt;

/// One atom of a pattern: a set of ASCII bytes, repeated a fixed number of times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Inclusive byte ranges; a byte matches when it lies in any of them.
    pub ranges: Vec<(u8, u8)>,
    /// How many consecutive bytes this segment matches.
    pub count: usize,
}

/// A parsed pattern of the supported subset (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    segments: Vec<Segment>,
    length: usize,
}

/// Why a pattern is outside the supported subset: the byte position and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    /// Byte offset in the pattern text.
    pub position: usize,
    /// What is not supported there.
    pub reason: &'static str,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unsupported pattern at byte {}: {}", self.position, self.reason)
    }
}

impl std::error::Error for PatternError {}

impl Pattern {
    /// Parses `source`.
    ///
    /// # Errors
    /// A [`PatternError`] naming the first construct outside the subset: a missing anchor,
    /// alternation, open-ended quantifiers, non-ASCII characters, negated classes, groups.
    pub fn parse(source: &str) -> Result<Pattern, PatternError> {
        let bytes = source.as_bytes();
        let err = |position, reason| Err(PatternError { position, reason });
        if bytes.first() != Some(&b'^') {
            return err(0, "the pattern must start with ^");
        }
        if bytes.len() < 2 || bytes[bytes.len() - 1] != b'$' || bytes[bytes.len() - 2] == b'\\' {
            return err(bytes.len(), "the pattern must end with $");
        }
        let body_end = bytes.len() - 1;
        let mut i = 1;
        let mut segments = Vec::new();
        while i < body_end {
            let (ranges, next) = match bytes[i] {
                b'[' => parse_class(bytes, i, body_end)?,
                b'\\' => {
                    let Some(&c) = bytes.get(i + 1).filter(|_| i + 1 < body_end) else {
                        return err(i, "dangling escape");
                    };
                    if !c.is_ascii_punctuation() {
                        return err(i, "only escaped punctuation is supported");
                    }
                    (vec![(c, c)], i + 2)
                }
                c if c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b' ' || c == b':' => {
                    (vec![(c, c)], i + 1)
                }
                _ => return err(i, "only literals, classes and {n} counts are supported"),
            };
            i = next;
            let mut count = 1;
            if i < body_end && bytes[i] == b'{' {
                let start = i + 1;
                let mut j = start;
                while j < body_end && bytes[j].is_ascii_digit() {
                    j += 1;
                }
                if j == start || j >= body_end || bytes[j] != b'}' || j - start > 6 {
                    return err(i, "a count must be {n} with a number of at most 6 digits");
                }
                count = source[start..j].parse().map_err(|_| PatternError { position: i, reason: "bad count" })?;
                i = j + 1;
            }
            segments.push(Segment { ranges, count });
        }
        let length = segments.iter().map(|s| s.count).sum();
        Ok(Pattern { segments, length })
    }

    /// The segments, in order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The exact length, in bytes, of every matching string.
    pub fn length(&self) -> usize {
        self.length
    }

    /// Whether `text` matches the whole pattern.
    pub fn matches(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        if bytes.len() != self.length {
            return false;
        }
        let mut i = 0;
        for segment in &self.segments {
            for &b in &bytes[i..i + segment.count] {
                if !segment.ranges.iter().any(|&(lo, hi)| lo <= b && b <= hi) {
                    return false;
                }
            }
            i += segment.count;
        }
        true
    }
}

fn parse_class(bytes: &[u8], open: usize, end: usize) -> Result<(Vec<(u8, u8)>, usize), PatternError> {
    let err = |position, reason| Err(PatternError { position, reason });
    let mut i = open + 1;
    if i < end && bytes[i] == b'^' {
        return err(i, "negated classes are not supported");
    }
    let mut ranges = Vec::new();
    while i < end && bytes[i] != b']' {
        let lo = bytes[i];
        if !lo.is_ascii_alphanumeric() {
            return err(i, "classes may hold only ASCII letters and digits");
        }
        if i + 2 < end && bytes[i + 1] == b'-' && bytes[i + 2] != b']' {
            let hi = bytes[i + 2];
            if !hi.is_ascii_alphanumeric() || hi < lo {
                return err(i, "bad range in class");
            }
            ranges.push((lo, hi));
            i += 3;
        } else {
            ranges.push((lo, lo));
            i += 1;
        }
    }
    if i >= end {
        return err(open, "unclosed class");
    }
    if ranges.is_empty() {
        return err(open, "empty class");
    }
    Ok((ranges, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID_V4: &str = "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

    #[test]
    fn uuid_pattern_matches_like_javascript() {
        let p = Pattern::parse(UUID_V4).unwrap();
        assert_eq!(p.length(), 36);
        assert!(p.matches("7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b"));
        assert!(p.matches("00000000-0000-4000-8000-000000000000"));
        assert!(!p.matches("00000000-0000-0000-0000-000000000000"));
        assert!(!p.matches("7F3C2A10-5B6D-4E8F-9A1B-2C3D4E5F6A7B"));
        assert!(!p.matches("7f3c2a10-5b6d-4e8f-ca1b-2c3d4e5f6a7b"));
        assert!(!p.matches("7f3c2a10-5b6d-1e8f-9a1b-2c3d4e5f6a7b"));
        assert!(!p.matches("7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b\n"));
        assert!(!p.matches("{7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b}"));
        assert!(!p.matches("7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7\u{ff10}"));
    }

    #[test]
    fn unsupported_constructs_name_their_position() {
        assert_eq!(Pattern::parse("[a]$").unwrap_err().position, 0);
        assert_eq!(Pattern::parse("^a+$").unwrap_err().position, 2);
        assert_eq!(Pattern::parse("^[^a]$").unwrap_err().position, 2);
        assert_eq!(Pattern::parse("^(a)$").unwrap_err().position, 1);
        assert_eq!(Pattern::parse("^a{}$").unwrap_err().position, 2);
        assert!(Pattern::parse("^a").is_err());
    }
}
