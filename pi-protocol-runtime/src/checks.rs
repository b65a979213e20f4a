//! The value constraints of a schema, as derived code and the schema interpreter check them
//! (docs/PROTOCOL.md section 4): string lengths, numeric bounds, array sizes.
//!
//! Lengths are counted as the reference's validator counts them, so a string is accepted exactly
//! when the reference accepts it: see [`text_length`].

use crate::error::{ProtocolError, Rule};
use crate::number::{Integer, Number};

/// The length of `text` as the reference's validator (TypeBox) measures it for `minLength` and
/// `maxLength`: clusters of characters, where a cluster is one character followed by any
/// combining marks (U+0300-036F, U+1AB0-1AFF, U+1DC0-1DFF, U+FE20-FE2F) and variation
/// selectors (U+FE00-FE0F), extended over each zero-width joiner (U+200D) that has a character
/// after it (that character and its own marks join the cluster), and a pair of regional
/// indicators (U+1F1E6-1F1FF: a flag) counts once.
///
/// ASCII text is measured by its byte length.
///
/// ```
/// use pi_protocol_runtime::checks::text_length;
/// assert_eq!(text_length("abc"), 3);
/// assert_eq!(text_length("e\u{301}"), 1); // e + combining acute accent
/// assert_eq!(text_length("\u{1F600}"), 1); // one character outside the BMP
/// assert_eq!(text_length("\u{1F1EB}\u{1F1F7}"), 1); // a flag
/// assert_eq!(text_length("a\u{200D}b"), 1); // joined
/// assert_eq!(text_length("a\u{200D}"), 2); // a trailing joiner stands alone
/// ```
#[must_use]
pub fn text_length(text: &str) -> usize {
    if text.is_ascii() {
        return text.len();
    }
    let mut chars = text.chars().peekable();
    let mut count = 0;
    while let Some(first) = chars.next() {
        count += 1;
        skip_modifiers(&mut chars);
        while chars.peek() == Some(&ZERO_WIDTH_JOINER) {
            let mut ahead = chars.clone();
            ahead.next();
            if ahead.next().is_none() {
                break;
            }
            chars.next();
            chars.next();
            skip_modifiers(&mut chars);
        }
        if is_regional_indicator(first) && chars.peek().copied().is_some_and(is_regional_indicator) {
            chars.next();
        }
    }
    count
}

const ZERO_WIDTH_JOINER: char = '\u{200D}';

fn skip_modifiers(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while chars.peek().copied().is_some_and(is_modifier) {
        chars.next();
    }
}

/// A combining mark or a variation selector: it joins the character before it.
fn is_modifier(c: char) -> bool {
    matches!(c, '\u{0300}'..='\u{036F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}' | '\u{FE20}'..='\u{FE2F}' | '\u{FE00}'..='\u{FE0F}')
}

fn is_regional_indicator(c: char) -> bool {
    matches!(c, '\u{1F1E6}'..='\u{1F1FF}')
}

/// Whether `text` has at least `min` characters as [`text_length`] counts them. Most strings
/// are decided by their byte length alone (a character is at least one byte).
#[inline]
#[must_use]
pub fn has_min_length(text: &str, min: u64) -> bool {
    match min {
        0 => true,
        1 => !text.is_empty(),
        _ => text.len() as u64 >= min && text_length(text) as u64 >= min,
    }
}

/// Whether `text` has at most `max` characters as [`text_length`] counts them.
#[inline]
#[must_use]
pub fn has_max_length(text: &str, max: u64) -> bool {
    text.len() as u64 <= max || text_length(text) as u64 <= max
}

/// A numeric value that bounds (`minimum`, `maximum`, exclusive ones) can be checked on.
pub trait NumericValue {
    /// The value as the JSON number it stands for.
    fn numeric_value(&self) -> f64;
}

impl NumericValue for Integer {
    fn numeric_value(&self) -> f64 {
        self.value()
    }
}

impl NumericValue for Number {
    fn numeric_value(&self) -> f64 {
        self.value()
    }
}

/// The bound `value` as a [`Number`] for an error message; the derive only passes finite,
/// encodable bounds.
#[must_use]
pub fn bound(value: f64) -> Number {
    Number::new(value).unwrap_or(Number::from(0))
}

/// The `Schema` error for `rule`.
#[cold]
#[must_use]
pub fn violation(rule: Rule) -> ProtocolError {
    ProtocolError::schema(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_values_are_the_numbers_they_stand_for() {
        assert_eq!(Integer::from(-7i32).numeric_value(), -7.0);
        assert_eq!(Integer::from(42u32).numeric_value(), 42.0);
        assert_eq!(Number::new(2.5).expect("finite").numeric_value(), 2.5);
        assert_eq!(Number::from(-3i32).numeric_value(), -3.0);
    }

    #[test]
    fn lengths_follow_the_reference_rules() {
        assert_eq!(text_length(""), 0);
        assert_eq!(text_length("héllo"), 5);
        // Emoji with a skin-tone modifier are two clusters here (U+1F3FB is not a modifier in
        // the reference's rule), a ZWJ family is one.
        assert_eq!(text_length("\u{1F44D}\u{1F3FB}"), 2);
        assert_eq!(text_length("\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}"), 1);
        // Variation selector after a character joins it; three regional indicators: a flag and one.
        assert_eq!(text_length("\u{2764}\u{FE0F}"), 1);
        assert_eq!(text_length("\u{1F1EB}\u{1F1F7}\u{1F1EB}"), 2);
        // A regional indicator pairs only with one before it: after another character it
        // stands alone.
        assert_eq!(text_length("a\u{1F1EB}"), 2);
        assert_eq!(text_length("\u{1F1EB}a"), 2);
        // A joiner followed by marks: the joined character takes its marks.
        assert_eq!(text_length("a\u{200D}b\u{301}c"), 2);
        // A leading mark is a cluster of its own.
        assert_eq!(text_length("\u{301}a"), 2);
    }

    #[test]
    fn length_bounds_agree_with_the_count() {
        for text in ["", "a", "ab", "e\u{301}e\u{301}", "\u{1F600}\u{1F600}\u{1F600}", "a\u{200D}b"] {
            let n = text_length(text) as u64;
            for bound in 0..6u64 {
                assert_eq!(has_min_length(text, bound), n >= bound, "{text:?} min {bound}");
                assert_eq!(has_max_length(text, bound), n <= bound, "{text:?} max {bound}");
            }
        }
    }
}
