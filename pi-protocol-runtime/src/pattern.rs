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

use crate::cbor::reader::HIGH_BITS;

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

/// Why a pattern cannot be used: outside the fixed subset [`Pattern`] reads (with the byte
/// position), or not a valid ECMAScript regular expression at all (with the engine's reason).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PatternError {
    /// Byte offset in the pattern text, when the error has one.
    pub position: Option<usize>,
    /// What is wrong there.
    pub reason: String,
}

impl PatternError {
    fn at(position: usize, reason: &str) -> PatternError {
        PatternError { position: Some(position), reason: reason.to_owned() }
    }
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some(position) => write!(f, "unsupported pattern at byte {position}: {}", self.reason),
            None => write!(f, "invalid pattern: {}", self.reason),
        }
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
        let err = |position, reason| Err(PatternError::at(position, reason));
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
                // Any printable ASCII character that is not regular-expression syntax stands for
                // itself (JavaScript's reading, u flag included).
                c if c == b' ' || (c.is_ascii_graphic() && !b"^$\\.*+?()[]{}|/".contains(&c)) => (vec![(c, c)], i + 1),
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
                count = source[start..j].parse().map_err(|_| PatternError::at(i, "bad count"))?;
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

/// The bounds of one byte range in every lane of an eight-byte word, for [`word_matches`].
///
/// Lane `i` is byte `i` of the word read little-endian. For a lane whose range is
/// `lo..=hi` (ASCII), `above_low` holds `0x80 - lo` and `above_high` holds `0x7f - hi`: adding
/// them to an ASCII byte `b` sets its high bit exactly when `b >= lo`, respectively `b > hi`,
/// and never carries into the next lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneRanges {
    /// Per lane, `0x80 - lo`.
    pub above_low: u64,
    /// Per lane, `0x7f - hi`.
    pub above_high: u64,
}

/// Eight consecutive positions of a pattern, tested as one word by [`word_matches`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordWindow {
    /// Byte offset of the window's first position.
    pub offset: usize,
    /// A byte matches its position when it lies in its lane's range in any of these.
    /// Positions with fewer ranges than the widest repeat their first range.
    pub ranges: Vec<LaneRanges>,
}

/// Whether each of the eight bytes of `word` (read little-endian) lies in one of its lane's
/// ranges in `ranges` (see [`LaneRanges`]; [`Pattern::word_windows`] builds them).
///
/// About four instructions per range and word, against two loads per byte for a table test.
///
/// Non-ASCII bytes need no test of their own: for a byte of `0x80` or more (even with a carry
/// from the lane below), `b + above_low` overflows the lane and leaves its high bit clear, so
/// the byte is outside every range. Only such bytes carry into the next lane, and their word
/// fails already.
///
/// ```
/// use pi_protocol_runtime::pattern::{word_matches, Pattern};
/// let p = Pattern::parse("^[0-9a-f]{8}$").unwrap();
/// let windows = p.word_windows().unwrap();
/// let word = |s: &str| u64::from_le_bytes(s.as_bytes().try_into().unwrap());
/// assert!(word_matches(word("0badcafe"), &windows[0].ranges));
/// assert!(!word_matches(word("0BADCAFE"), &windows[0].ranges));
/// ```
#[inline(always)]
pub fn word_matches(word: u64, ranges: &[LaneRanges]) -> bool {
    let mut inside = 0;
    for r in ranges {
        inside |= word.wrapping_add(r.above_low) & !word.wrapping_add(r.above_high);
    }
    !inside & HIGH_BITS == 0
}

impl Pattern {
    /// The pattern as eight-byte windows for [`word_matches`], covering every position: one
    /// window every eight bytes, the last one ending at the last position (it may overlap the
    /// one before). `None` for patterns shorter than eight bytes.
    pub fn word_windows(&self) -> Option<Vec<WordWindow>> {
        if self.length < 8 {
            return None;
        }
        let positions: Vec<&[(u8, u8)]> =
            self.segments.iter().flat_map(|s| std::iter::repeat_n(s.ranges.as_slice(), s.count)).collect();
        let mut offsets: Vec<usize> = (0..self.length - 7).step_by(8).collect();
        if self.length % 8 != 0 {
            offsets.push(self.length - 8);
        }
        let windows = offsets
            .into_iter()
            .map(|offset| {
                let lanes = &positions[offset..offset + 8];
                let widest = lanes.iter().map(|r| r.len()).max().unwrap_or(1);
                let ranges = (0..widest)
                    .map(|k| {
                        let mut r = LaneRanges { above_low: 0, above_high: 0 };
                        for (lane, alternatives) in lanes.iter().enumerate() {
                            let (lo, hi) = alternatives.get(k).copied().unwrap_or(alternatives[0]);
                            r.above_low |= u64::from(0x80 - lo) << (8 * lane);
                            r.above_high |= u64::from(0x7f - hi) << (8 * lane);
                        }
                        r
                    })
                    .collect();
                WordWindow { offset, ranges }
            })
            .collect();
        Some(windows)
    }
}

fn parse_class(bytes: &[u8], open: usize, end: usize) -> Result<(Vec<(u8, u8)>, usize), PatternError> {
    let err = |position, reason| Err(PatternError::at(position, reason));
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

    /// `bytes` tested window by window with [`word_matches`], as the derive emits it.
    fn matches_by_words(p: &Pattern, bytes: &[u8]) -> bool {
        let windows = p.word_windows().expect("eight bytes or more");
        bytes.len() == p.length()
            && windows.iter().all(|w| {
                let word = u64::from_le_bytes(bytes[w.offset..w.offset + 8].try_into().unwrap());
                word_matches(word, &w.ranges)
            })
    }

    /// A byte-wise match that also accepts non-UTF-8 input (`matches` takes `&str`).
    fn matches_bytes(p: &Pattern, bytes: &[u8]) -> bool {
        bytes.len() == p.length() && {
            let mut i = 0;
            p.segments().iter().all(|s| {
                let ok = bytes[i..i + s.count].iter().all(|&b| s.ranges.iter().any(|&(lo, hi)| lo <= b && b <= hi));
                i += s.count;
                ok
            })
        }
    }

    #[test]
    fn word_windows_cover_every_position() {
        let p = Pattern::parse(UUID_V4).unwrap();
        let offsets: Vec<usize> = p.word_windows().unwrap().iter().map(|w| w.offset).collect();
        assert_eq!(offsets, [0, 8, 16, 24, 28]);
        let p = Pattern::parse("^[a-c]{16}$").unwrap();
        let offsets: Vec<usize> = p.word_windows().unwrap().iter().map(|w| w.offset).collect();
        assert_eq!(offsets, [0, 8]);
        assert!(Pattern::parse("^[a-c]{7}$").unwrap().word_windows().is_none());
        assert!(matches_by_words(&p, b"abcabcabcabcabca"));
        assert!(!matches_by_words(&p, b"abcabcabcabcabcd"));
    }

    #[test]
    fn word_test_agrees_with_byte_test_on_every_byte_at_every_position() {
        let p = Pattern::parse(UUID_V4).unwrap();
        let valid = *b"7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b";
        for at in 0..valid.len() {
            for b in 0..=255u8 {
                let mut text = valid;
                text[at] = b;
                assert_eq!(matches_by_words(&p, &text), matches_bytes(&p, &text), "byte {b:#04x} at {at}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn word_test_agrees_with_byte_test(
            classes in proptest::collection::vec((0usize..6, 1usize..12), 1..6),
            text in proptest::collection::vec(proptest::sample::select(b"0189abfgz-_AZ\x7f\x80\xff ".to_vec()), 8..48),
        ) {
            const CLASSES: [&str; 6] = ["[0-9a-f]", "[89ab]", "-", "[a-zA-Z]", "4", "[0-9]"];
            let source: String = classes.iter().map(|&(c, n)| format!("{}{{{n}}}", CLASSES[c])).collect();
            let p = Pattern::parse(&format!("^{source}$")).unwrap();
            proptest::prop_assume!(p.length() >= 8);
            // Cut or pad the random text to the pattern's length half of the time.
            let mut text = text;
            if text.len() % 2 == 0 {
                text.resize(p.length(), b'a');
            }
            proptest::prop_assert_eq!(matches_by_words(&p, &text), matches_bytes(&p, &text));
        }
    }

    #[test]
    fn unsupported_constructs_name_their_position() {
        assert_eq!(Pattern::parse("[a]$").unwrap_err().position, Some(0));
        assert_eq!(Pattern::parse("^a+$").unwrap_err().position, Some(2));
        assert_eq!(Pattern::parse("^[^a]$").unwrap_err().position, Some(2));
        assert_eq!(Pattern::parse("^(a)$").unwrap_err().position, Some(1));
        assert_eq!(Pattern::parse("^a{}$").unwrap_err().position, Some(2));
        assert!(Pattern::parse("^a").is_err());
    }
}

/// A schema `pattern` of any form, with the semantics the reference gives it: an ECMAScript
/// regular expression with the `u` (Unicode) flag, tested anywhere in the string (anchor it with
/// `^` and `$` to match whole strings), matched by the `regress` engine.
///
/// ```
/// use pi_protocol_runtime::pattern::Regex;
/// let re = Regex::new("^[a-z]+(-[a-z]+)*$").unwrap();
/// assert!(re.is_match("session-id"));
/// assert!(!re.is_match("Session"));
/// assert!(Regex::new("x{").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct Regex {
    inner: regress::Regex,
}

impl Regex {
    /// Compiles `source` with the `u` flag.
    ///
    /// # Errors
    /// A [`PatternError`] when `source` is not a valid ECMAScript pattern in Unicode mode.
    pub fn new(source: &str) -> Result<Regex, PatternError> {
        regress::Regex::with_flags(source, "u").map(|inner| Regex { inner }).map_err(|e| PatternError {
            position: None,
            reason: format!("not a valid ECMAScript regular expression with the u flag ({e})"),
        })
    }

    /// Whether the pattern matches somewhere in `text` (JavaScript's `RegExp.prototype.test`).
    #[must_use]
    pub fn is_match(&self, text: &str) -> bool {
        self.inner.find(text).is_some()
    }
}

/// A compiled schema pattern: the fixed-length subset of [`Pattern`] where it applies (a single
/// pass over the bytes), a [`Regex`] otherwise. Both give the same verdicts on every string.
///
/// ```
/// use pi_protocol_runtime::pattern::SchemaPattern;
/// let fixed = SchemaPattern::compile("^[0-9]{2}$").unwrap();
/// assert!(matches!(fixed, SchemaPattern::Fixed(_)));
/// let general = SchemaPattern::compile("^[0-9]+$").unwrap();
/// assert!(matches!(general, SchemaPattern::General(_)));
/// assert!(fixed.matches("42") && general.matches("4242"));
/// ```
#[derive(Debug, Clone)]
pub enum SchemaPattern {
    /// The fixed-length subset.
    Fixed(Pattern),
    /// Any other ECMAScript pattern.
    General(Regex),
}

impl SchemaPattern {
    /// Compiles `source`, preferring the fixed-length subset.
    ///
    /// # Errors
    /// A [`PatternError`] when `source` is not a valid ECMAScript pattern in Unicode mode (the
    /// reference refuses such a schema), even if the fixed-length subset could read it.
    pub fn compile(source: &str) -> Result<SchemaPattern, PatternError> {
        let general = Regex::new(source)?;
        match Pattern::parse(source) {
            Ok(pattern) => Ok(SchemaPattern::Fixed(pattern)),
            Err(_) => Ok(SchemaPattern::General(general)),
        }
    }

    /// Whether `text` matches.
    #[must_use]
    pub fn matches(&self, text: &str) -> bool {
        match self {
            SchemaPattern::Fixed(pattern) => pattern.matches(text),
            SchemaPattern::General(regex) => regex.is_match(text),
        }
    }
}

#[cfg(test)]
mod regex_tests {
    use super::*;

    #[test]
    fn the_fixed_subset_agrees_with_the_general_engine() {
        let patterns = ["^[0-9a-f]{8}-[0-9a-f]{4}$", "^ab\\.c$", "^[89ab]{2}x$"];
        let texts = ["0badcafe-1234", "0BADCAFE-1234", "0badcafe-1234\n", "ab.c", "abc", "8ax", "9bx", "8cx", ""];
        for p in patterns {
            let fixed = Pattern::parse(p).unwrap();
            let general = Regex::new(p).unwrap();
            for t in texts {
                assert_eq!(fixed.matches(t), general.is_match(t), "{p} on {t:?}");
            }
        }
    }

    #[test]
    fn escapes_the_unicode_mode_refuses_are_refused() {
        // `\-` outside a class is an identity escape JavaScript refuses with the u flag.
        assert!(SchemaPattern::compile("^ab\\-c$").is_err());
        assert!(SchemaPattern::compile("^[a\\-c]$").is_ok());
    }

    #[test]
    fn unicode_mode_matches_code_points() {
        // With the u flag a character outside the BMP is one `.`, as in the reference.
        let re = Regex::new("^.$").unwrap();
        assert!(re.is_match("\u{1F600}"));
        assert!(!re.is_match("\n"));
        assert!(Regex::new("^.*$").unwrap().is_match(""));
        assert!(!Regex::new("^.*$").unwrap().is_match("a\u{2028}b"));
    }
}
