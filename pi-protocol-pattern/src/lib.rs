//! Schema `pattern`s for pi-protocol: whether a string matches an ECMAScript regular expression
//! (`u` flag) of the forms the schema language allows, decided as JavaScript decides it and in
//! time linear in the string, whatever the pattern.
//!
//! That is the crate's one job, and it serves it at two moments:
//!
//! - at run time, [`Regex`] reads any allowed pattern construct by construct into the syntax of
//!   the `regex-automata` engine and runs its automata (no backtracking, so `^(a+)+$` cannot be
//!   made slow); [`SchemaPattern`] prefers the fixed-length subset below when a pattern is in
//!   it, and gives the same verdicts either way;
//! - at compile time, [`Pattern`] reads the fixed-length subset (`^`, literal characters and
//!   ASCII classes each with an optional `{n}`, `$`, such as the `ServerId` UUID pattern), which
//!   `pi-protocol-derive` turns into straight-line byte checks while the macro expands: a table
//!   lookup per position, or eight positions per word with [`word_matches`] over the windows of
//!   [`Pattern::word_windows`].
//!
//! A pattern's text is bounded before any parser reads it ([`check_size`], the `MAX_PATTERN_*`
//! constants), and its compiled automaton by [`MAX_PATTERN_AUTOMATON`].
//!
//! Nothing here knows a message, a schema or CBOR. `pi-protocol-runtime` re-exports the crate as
//! `pi_protocol_runtime::pattern`, the path derived and generated code call at run time; the
//! derive depends on this crate alone.
//!
//! ```
//! use pi_protocol_pattern::{Pattern, SchemaPattern};
//! // Any allowed pattern, tested anywhere in the string unless anchored.
//! let id = SchemaPattern::compile("^[a-z]+(-[a-z]+)*$").unwrap();
//! assert!(id.matches("session-id") && !id.matches("Session"));
//! // The fixed-length subset: one length, one pass over the bytes.
//! let fixed = Pattern::parse("^[0-9a-f]{2}-x$").unwrap();
//! assert_eq!(fixed.length(), 4);
//! assert!(fixed.matches("0f-x") && !fixed.matches("0F-x"));
//! ```

use std::fmt;

mod ecma;

/// The crate's README (the page crates.io shows), compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The high bit of every byte of a 64-bit word. A word of ASCII bytes has none of them set, so
/// `word & HIGH_BITS == 0` tests eight bytes at once; [`word_matches`] ends with that test, and
/// `pi-protocol-runtime`'s ASCII scans of CBOR text use this same constant.
pub const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// One atom of a pattern: a set of ASCII bytes, repeated a fixed number of times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Inclusive byte ranges; a byte matches when it lies in any of them.
    pub ranges: Vec<(u8, u8)>,
    /// How many consecutive bytes this segment matches.
    pub count: usize,
}

/// A pattern of the fixed-length subset, parsed.
///
/// The subset: `^`, then a sequence of atoms each followed by an optional `{n}` count, then `$`.
/// An atom is a printable ASCII literal character (punctuation escaped with `\`) or a class
/// `[...]` of ASCII letters, digits and ranges of them (`[0-9a-f]`, `[89ab]`). Every string such
/// a pattern matches has the same length in bytes ([`Pattern::length`]), so a match is one pass
/// over the bytes and nothing is ever retried. The verdicts are JavaScript's for the same
/// pattern: `$` holds only at the very end, so a trailing newline fails. [`Pattern::parse`]
/// refuses anything else, naming the byte where the subset ends.
///
/// ```
/// use pi_protocol_pattern::Pattern;
/// let p = Pattern::parse("^[0-9a-f]{2}-x$").unwrap();
/// assert!(p.matches("0f-x"));
/// assert!(!p.matches("0F-x"));
/// assert!(!p.matches("0f-x\n"));
/// assert!(Pattern::parse("^[0-9]+$").is_err());
/// ```
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
/// use pi_protocol_pattern::{word_matches, Pattern};
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

/// The longest schema pattern, in bytes of its text. Checked before any parser reads the
/// pattern (SCHEMA.md, "Limits").
pub const MAX_PATTERN_LENGTH: usize = 4096;

/// The deepest nesting of groups (`(...)`, `(?:...)`, `(?<name>...)`) in a pattern: each level
/// is one level of recursion in the parsers and the compiler. Checked, without recursion,
/// before any parser reads the pattern.
pub const MAX_PATTERN_NESTING: usize = 32;

/// The most alternatives (`|`) in a pattern, all groups counted together. Checked, without
/// recursion, before any parser reads the pattern.
pub const MAX_PATTERN_ALTERNATIVES: usize = 512;

/// The most heap bytes the automaton of one pattern may take once compiled (`a{1000}{1000}`,
/// `.{5000}` are short texts for large automata).
pub const MAX_PATTERN_AUTOMATON: usize = 8 << 20;

/// Fails when `source` is longer than [`MAX_PATTERN_LENGTH`], nests groups deeper than
/// [`MAX_PATTERN_NESTING`] or holds more than [`MAX_PATTERN_ALTERNATIVES`] alternatives,
/// naming the byte where the limit is passed. One pass over the bytes, no recursion: classes
/// (`[(]`) and escapes (`\(`) open no group.
///
/// ```
/// use pi_protocol_pattern::{check_size, MAX_PATTERN_NESTING};
/// assert!(check_size("^(a(b)[(])$").is_ok());
/// let deep = format!("{}a{}", "(".repeat(MAX_PATTERN_NESTING + 1), ")".repeat(MAX_PATTERN_NESTING + 1));
/// assert_eq!(check_size(&deep).unwrap_err().position, Some(MAX_PATTERN_NESTING));
/// ```
///
/// # Errors
/// A [`PatternError`] saying which limit, where, and what to write instead.
pub fn check_size(source: &str) -> Result<(), PatternError> {
    let bytes = source.as_bytes();
    if bytes.len() > MAX_PATTERN_LENGTH {
        return Err(PatternError {
            position: None,
            reason: format!(
                "the pattern is {} bytes long, more than the {MAX_PATTERN_LENGTH} a pattern may be; \
                 shorten it (a class for alternatives of single characters, an `enum` for a list of words)",
                bytes.len()
            ),
        });
    }
    let (mut depth, mut alternatives, mut in_class, mut i) = (0usize, 0usize, false, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b']' if in_class => in_class = false,
            _ if in_class => {}
            b'[' => in_class = true,
            b'(' => {
                depth += 1;
                if depth > MAX_PATTERN_NESTING {
                    return Err(PatternError::at(
                        i,
                        &format!(
                            "groups nested more than {MAX_PATTERN_NESTING} deep; \
                             split the pattern or drop groups that only group"
                        ),
                    ));
                }
            }
            b')' => depth = depth.saturating_sub(1),
            b'|' => {
                alternatives += 1;
                if alternatives > MAX_PATTERN_ALTERNATIVES {
                    return Err(PatternError::at(
                        i,
                        &format!(
                            "more than {MAX_PATTERN_ALTERNATIVES} alternatives (`|`); \
                             use a class for single characters or an `enum` for a list of words"
                        ),
                    ));
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// A schema `pattern` of any form, with the semantics the reference gives it: an ECMAScript
/// regular expression with the `u` (Unicode) flag, tested anywhere in the string (anchor it with
/// `^` and `$` to match whole strings).
///
/// Matching takes time linear in the text, whatever the pattern (`^(a+)+$` against
/// `aaa...a!` included): the pattern is read into the syntax of the `regex-automata` engine,
/// construct by construct with ECMAScript's meaning (see below), and run by its automata.
/// Constructs that need a backtracking engine are refused when the pattern is compiled:
/// backreferences (`\1`, `\k<name>`), lookahead and lookbehind (`(?=`, `(?!`, `(?<=`, `(?<!`);
/// so are modifier groups (`(?i:...)`) and property escapes the engine's Unicode tables do not
/// know. Validity itself is ECMAScript's (the `regress` parser decides it): a pattern
/// JavaScript refuses with the `u` flag is refused.
///
/// The meanings kept: `.` is any code point but `\n`, `\r`, U+2028 and U+2029; `^` and `$`
/// hold only at the ends of the text; `\d`, `\w` and `\b` are ASCII; `\s` is ECMAScript's
/// white space and line terminators; `[^...]` holds every other code point; `\b` in a class is
/// U+0008; a lone surrogate escape matches nothing (a decoded text holds none).
///
/// ```
/// use pi_protocol_pattern::Regex;
/// let re = Regex::new("^[a-z]+(-[a-z]+)*$").unwrap();
/// assert!(re.is_match("session-id"));
/// assert!(!re.is_match("Session"));
/// assert!(Regex::new("x{").is_err());
/// // Linear time: 10,000 characters against nested repetitions, in microseconds.
/// let hostile = format!("{}!", "a".repeat(10_000));
/// assert!(!Regex::new("^(a+)+$").unwrap().is_match(&hostile));
/// // Backreferences are refused, with the offset of the construct.
/// assert_eq!(Regex::new("^(a)\\1$").unwrap_err().position, Some(4));
/// ```
#[derive(Debug, Clone)]
pub struct Regex {
    inner: regex_automata::meta::Regex,
}

impl Regex {
    /// Compiles `source` with the `u` flag.
    ///
    /// # Errors
    /// A [`PatternError`] when `source` passes a limit ([`check_size`],
    /// [`MAX_PATTERN_AUTOMATON`]), is not a valid ECMAScript pattern in Unicode mode, or uses
    /// a construct the linear-time engine refuses (see the type's documentation).
    pub fn new(source: &str) -> Result<Regex, PatternError> {
        check_size(source)?;
        // Within the limits the ECMAScript parser's recursion stays shallow.
        regress::Regex::with_flags(source, "u").map_err(|e| PatternError {
            position: None,
            reason: format!("not a valid ECMAScript regular expression with the u flag ({e})"),
        })?;
        let hir = ecma::translate(source)?;
        let config = regex_automata::meta::Config::new()
            .which_captures(regex_automata::nfa::thompson::WhichCaptures::Implicit)
            .nfa_size_limit(Some(MAX_PATTERN_AUTOMATON))
            .onepass_size_limit(Some(MAX_PATTERN_AUTOMATON))
            .dfa_size_limit(Some(MAX_PATTERN_AUTOMATON))
            .hybrid_cache_capacity(MAX_PATTERN_AUTOMATON);
        let inner =
            regex_automata::meta::Builder::new().configure(config).build_from_hir(&hir).map_err(|_| PatternError {
                position: None,
                reason: format!(
                    "the pattern compiles to an automaton larger than {MAX_PATTERN_AUTOMATON} bytes; \
                     write smaller repetition counts (`{{n}}`) or narrower classes"
                ),
            })?;
        Ok(Regex { inner })
    }

    /// Whether the pattern matches somewhere in `text` (JavaScript's `RegExp.prototype.test`),
    /// in time linear in `text`.
    #[must_use]
    pub fn is_match(&self, text: &str) -> bool {
        self.inner.is_match(text)
    }

    /// The heap bytes the compiled pattern holds (its automata and search caches so far).
    #[must_use]
    pub fn memory_usage(&self) -> usize {
        self.inner.memory_usage()
    }
}

/// A compiled schema pattern: the fixed-length subset of [`Pattern`] where it applies (a single
/// pass over the bytes), a [`Regex`] otherwise. Both give the same verdicts on every string.
///
/// ```
/// use pi_protocol_pattern::SchemaPattern;
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

    /// The heap bytes the compiled pattern holds.
    #[must_use]
    pub fn memory_usage(&self) -> usize {
        match self {
            SchemaPattern::Fixed(pattern) => {
                pattern.segments.iter().map(|s| std::mem::size_of_val(s) + std::mem::size_of_val(&s.ranges[..])).sum()
            }
            SchemaPattern::General(regex) => regex.memory_usage(),
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

#[cfg(test)]
mod linear_tests {
    use super::*;

    /// The verdict of the backtracking ECMAScript engine the patterns ran on before.
    fn ecmascript(source: &str, text: &str) -> bool {
        regress::Regex::with_flags(source, "u").expect("a valid pattern").find(text).is_some()
    }

    #[rustfmt::skip]
    const TEXTS: &[&str] = &[
        "",
        "a",
        "aa",
        "ab",
        "ba",
        "abc",
        "a-b",
        "A",
        "0",
        "09",
        "_",
        " ",
        "\t",
        "\n",
        "\r",
        "a\nb",
        "\u{2028}",
        "\u{a0}",
        "\u{feff}",
        "é",
        "aéb",
        "éa",
        "\u{1F600}",
        "a\u{1F600}b",
        "\u{8}",
        "x.y",
        "$",
        "^",
        "a b",
        "aaaa",
        "abab",
        "z9_",
        "-",
        "[",
        "]",
        "\\",
        "\u{0}",
        "\u{b}",
        "\u{3000}",
        "ǅ",
    ];

    #[test]
    fn the_linear_engine_agrees_with_ecmascript_on_every_construct() {
        #[rustfmt::skip]
        let patterns = [
            "",
            "a",
            "^a",
            "a$",
            "^a$",
            "^$",
            "ab|ba",
            "^(a|b)+$",
            "^(?:ab)*$",
            "^a*?$",
            "^a{2}$",
            "^a{1,}$",
            "^a{0,1}b",
            "a{2,3}",
            ".",
            "^.$",
            "^.*$",
            "^.+$",
            "\\d",
            "\\D",
            "^\\d+$",
            "\\w",
            "^\\W$",
            "\\s",
            "^\\S+$",
            "\\b",
            "\\B",
            "a\\b",
            "\\Ba",
            "^\\B$",
            "[abc]",
            "[^abc]",
            "^[^a]$",
            "[a-c]",
            "[\\d_]",
            "[\\w-]",
            "[\\b]",
            "[-a]",
            "[a-]",
            "[\\-]",
            "[^]",
            "[]",
            "^[\\s\\S]$",
            "\\u0061",
            "\\u{1F600}",
            "\\uD83D\\uDE00",
            "^[\\uD83D\\uDE00]$",
            "\\uD83D",
            "[\\uD800-\\uDFFF]",
            "\\x41",
            "\\t",
            "\\n",
            "\\v",
            "\\f",
            "\\r",
            "\\0",
            "\\cA",
            "\\.",
            "\\$",
            "\\^",
            "\\/",
            "\\\\",
            "\\[",
            "\\]",
            "\\(",
            "\\{",
            "(?<name>a)b",
            "^(a+)+$",
            "^[a-z]+(-[a-z]+)*$",
            "^[a-z][a-z0-9_.]*$",
            "^https://",
            "^#",
            "\\p{L}",
            "^\\p{Lu}$",
            "\\P{L}",
            "^\\p{Script=Greek}+$",
            "[\\p{N}a]",
            "é",
            "^é$",
            "ǅ",
            "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
            "a|",
            "|",
            "(|a)b",
        ];
        for source in patterns {
            let regex = Regex::new(source).unwrap_or_else(|e| panic!("{source:?}: {e}"));
            for text in TEXTS {
                assert_eq!(regex.is_match(text), ecmascript(source, text), "{source:?} on {text:?}");
            }
        }
    }

    #[test]
    fn constructs_that_need_backtracking_are_refused_with_their_offset() {
        for (source, at, what) in [
            ("^(a)\\1$", 4, "backreference"),
            ("^(?<x>a)\\k<x>$", 8, "backreference"),
            ("a(?=b)", 1, "lookahead"),
            ("a(?!b)", 1, "lookahead"),
            ("(?<=a)b", 0, "lookbehind"),
            ("(?<!a)b", 0, "lookbehind"),
        ] {
            let error = Regex::new(source).unwrap_err();
            assert_eq!(error.position, Some(at), "{source}");
            assert!(error.reason.contains(what) && error.reason.contains("linear time"), "{source}: {error}");
        }
    }

    #[test]
    fn patterns_past_a_limit_are_refused_before_they_are_parsed() {
        let deep = format!("{}a{}", "(".repeat(20_000), ")".repeat(20_000));
        let wide = vec!["a"; 100_000].join("|");
        let nested = format!("{}a{}", "(?:".repeat(MAX_PATTERN_NESTING + 1), ")".repeat(MAX_PATTERN_NESTING + 1));
        for (source, words) in [
            (deep.as_str(), "bytes long"),
            (&deep[..4000], "nested more than 32"),
            (&wide[..4001], "more than 512 alternatives"),
            (&wide, "bytes long"),
            (&nested, "nested more than 32"),
        ] {
            // A test thread's stack: the refusal must come before any parser recurses.
            let source = source.to_owned();
            let error = std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || Regex::new(&source).unwrap_err())
                .unwrap()
                .join()
                .unwrap();
            assert!(error.reason.contains(words), "{error}");
        }
        let at_limit = format!("{}a{}", "(?:".repeat(MAX_PATTERN_NESTING), ")".repeat(MAX_PATTERN_NESTING));
        assert!(Regex::new(&at_limit).is_ok());
        assert!(Regex::new(&vec!["a"; MAX_PATTERN_ALTERNATIVES + 1].join("|")).is_ok());
        let error = Regex::new("^(?:(?:a{1000}){1000}){1000}$").unwrap_err();
        assert!(error.reason.contains("automaton larger than"), "{error}");
        assert!(Regex::new("a{4294967296}").unwrap_err().reason.contains("repetition count"));
    }

    #[test]
    fn hostile_texts_match_in_linear_time() {
        let text = format!("{}!", "a".repeat(10_000));
        for source in ["^(a+)+$", "^(a|a)*$", "^(a|aa)+$", "(a*)*b", "^(\\w+\\s?)*$", "^([a-z]+)*[0-9]$"] {
            let regex = Regex::new(source).unwrap();
            let start = std::time::Instant::now();
            assert!(!regex.is_match(&text), "{source}");
            assert!(start.elapsed() < std::time::Duration::from_secs(1), "{source}: {:?}", start.elapsed());
        }
    }

    proptest::proptest! {
        /// Random patterns over a few constructs, random texts over a few characters: the
        /// linear engine and the ECMAScript engine agree (texts are short, so backtracking
        /// stays cheap).
        #[test]
        fn the_linear_engine_agrees_with_ecmascript_on_random_patterns(
            atoms in proptest::collection::vec((0usize..18, 0usize..8), 1..6),
            anchors in 0usize..4,
            text in proptest::collection::vec(proptest::sample::select(vec!['a', 'b', '-', ' ', '\n', 'é', '1', 'Z']), 0..8),
        ) {
            const ATOMS: [&str; 18] = [
                "a", "b", ".", "\\d", "\\w", "\\s", "[ab]", "[^a]", "(a|b)", "(?:ab|b)", "\\b", "\\B", "é",
                "[a-z]", "(a*)", "-", "[\\s\\d]", "(?:a|)",
            ];
            const QUANTIFIERS: [&str; 8] = ["", "", "*", "+", "?", "{2}", "{1,2}", "*?"];
            let mut source: String = atoms
                .iter()
                .map(|&(a, q)| {
                    let quantifier = if ATOMS[a].starts_with('\\') && "bB".contains(&ATOMS[a][1..]) { "" } else { QUANTIFIERS[q] };
                    format!("{}{quantifier}", ATOMS[a])
                })
                .collect();
            if anchors & 1 == 1 {
                source.insert(0, '^');
            }
            if anchors & 2 == 2 {
                source.push('$');
            }
            let text: String = text.into_iter().collect();
            let regex = Regex::new(&source).unwrap();
            proptest::prop_assert_eq!(regex.is_match(&text), ecmascript(&source, &text), "{:?} on {:?}", source, text);
        }
    }
}
