//! The grammar of the strict subset, once (docs/PROTOCOL.md section 2): the table of initial
//! bytes ([`HEADS`]) and the reader's head primitives built on it (the argument, string and
//! container lengths, integers, simple values), with the three rules every walker shares: the
//! short-text rule ([`short_text`]), the float rule ([`check_float`], from
//! [`is_encodable_number`]) and the depth rule ([`Reader::depth_allows`]). The typed reads
//! (`reader.rs`), the walk (`skip.rs`) and the plain-item test (`plain.rs`) all read heads here.

use super::text::{is_utf8, utf8_str};
use super::Reader;
use crate::codec::Scalar;
use crate::error::{ProtocolError, Rule};
use crate::number::{is_encodable_number, MAX_SAFE_INTEGER};
use crate::scalar::JsonTypes;

/// Major types of RFC 8949.
pub(crate) mod major {
    pub const UNSIGNED: u8 = 0;
    pub const NEGATIVE: u8 = 1;
    pub const BYTES: u8 = 2;
    pub const TEXT: u8 = 3;
    pub const ARRAY: u8 = 4;
    pub const MAP: u8 = 5;
    pub const TAG: u8 = 6;
    pub const SIMPLE: u8 = 7;
}

impl<'de> Reader<'de> {
    #[inline]
    pub(super) fn peek_byte(&self) -> Result<u8, ProtocolError> {
        match self.input.get(self.pos) {
            Some(&b) => Ok(b),
            None => Err(ProtocolError::cbor(Rule::Truncated)),
        }
    }

    /// Reads the argument of the initial byte at the cursor (`ai` is its additional information,
    /// at most 27) and moves past it.
    #[inline(always)]
    pub(super) fn argument(&mut self, ai: u8) -> Result<u64, ProtocolError> {
        if ai < 24 {
            self.pos += 1;
            return Ok(u64::from(ai));
        }
        self.wide_argument(ai)
    }

    /// Reads an argument of `1 << (ai - 24)` bytes following the initial byte.
    #[inline]
    pub(super) fn wide_argument(&mut self, ai: u8) -> Result<u64, ProtocolError> {
        let start = self.pos + 1;
        let (value, width) = match ai {
            24 => (u64::from(*self.input.get(start).ok_or_else(truncated)?), 1),
            25 => {
                let b = self.input.get(start..start + 2).ok_or_else(truncated)?;
                (u64::from(u16::from_be_bytes([b[0], b[1]])), 2)
            }
            26 => {
                let b = self.input.get(start..start + 4).ok_or_else(truncated)?;
                (u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])), 4)
            }
            _ => {
                let b = self.input.get(start..start + 8).ok_or_else(truncated)?;
                (u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]), 8)
            }
        };
        self.pos = start + width;
        Ok(value)
    }

    /// Checks the depth of the item at the cursor and returns its initial byte's parts.
    #[inline]
    pub(super) fn initial(&self) -> Result<(u8, u8), ProtocolError> {
        let b = self.peek_byte()?;
        if !self.depth_allows(self.depth) {
            return Err(self.depth_error());
        }
        let head = HEADS[usize::from(b)];
        if head.argument == RESERVED {
            return Err(reserved_or_indefinite(b));
        }
        Ok((head.major, b & 0x1f))
    }

    #[inline]
    pub(super) fn string_body(&mut self, ai: u8) -> Result<&'de [u8], ProtocolError> {
        let at = self.pos;
        let n = self.argument(ai)?;
        let start = self.pos;
        // One test for the common case: the length fits both the input and the limit.
        if n <= (self.input.len() - start) as u64 && n <= u64::from(self.limits.max_byte_length()) {
            let end = start + n as usize;
            self.pos = end;
            return Ok(&self.input[start..end]);
        }
        Err(self.string_length_error(n, at))
    }

    /// Why a string of declared length `n`, whose initial byte is at `at`, cannot be read:
    /// beyond 2^53 - 1, beyond the limit, or beyond the input, checked in that order (the
    /// reference's order).
    #[cold]
    pub(super) fn string_length_error(&self, n: u64, at: usize) -> ProtocolError {
        if n > MAX_SAFE_INTEGER {
            ProtocolError::cbor(Rule::LengthOutOfRange)
        } else if n > u64::from(self.limits.max_byte_length()) {
            let error = ProtocolError::cbor(Rule::ByteLengthLimit { limit: u64::from(self.limits.max_byte_length()) });
            // The reference names the string's kind (docs/PROTOCOL.md section 6).
            with_head_at(error, self.input, at)
        } else {
            truncated()
        }
    }

    #[inline]
    pub(super) fn text_body(&mut self, ai: u8) -> Result<&'de str, ProtocolError> {
        let body = self.string_body(ai)?;
        utf8_str(body).ok_or_else(|| ProtocolError::cbor(Rule::InvalidUtf8))
    }

    /// Skips a text string body, checking only that it is valid UTF-8 (no `&str` is needed).
    #[inline]
    pub(super) fn skip_text_body(&mut self, ai: u8) -> Result<(), ProtocolError> {
        let body = self.string_body(ai)?;
        if is_utf8(body) {
            Ok(())
        } else {
            Err(ProtocolError::cbor(Rule::InvalidUtf8))
        }
    }

    /// Reads a container count and checks the container limit and the remaining input
    /// (`min_entry_bytes` per entry).
    #[inline]
    pub(super) fn container_length(&mut self, ai: u8, min_entry_bytes: usize) -> Result<usize, ProtocolError> {
        let at = self.pos;
        let n = self.argument(ai)?;
        if n > MAX_SAFE_INTEGER {
            return Err(ProtocolError::cbor(Rule::LengthOutOfRange));
        }
        if n > u64::from(self.limits.max_container_length()) {
            let error = ProtocolError::cbor(Rule::ContainerLengthLimit {
                limit: u64::from(self.limits.max_container_length()),
            });
            // The reference names the container's kind (docs/PROTOCOL.md section 6).
            return Err(with_head_at(error, self.input, at));
        }
        let n = n as usize;
        if n.saturating_mul(min_entry_bytes) > self.input.len() - self.pos && !self.in_short_container {
            return Err(self.short_container(at));
        }
        Ok(n)
    }

    /// The error for the container whose initial byte is at `at` and which announces more
    /// entries than the input can hold. The reference reads entries until one fails, so the
    /// first error in wire order among the entries present wins, and `Truncated` only when they
    /// are all well-formed (docs/PROTOCOL.md section 6). They are walked by a reader of their
    /// own that accepts byte strings and never takes this path again; the walk is iterative and
    /// each entry costs at least one input byte.
    #[cold]
    #[inline(never)]
    fn short_container(&self, at: usize) -> ProtocolError {
        let mut walk = Reader { pos: at, allow_bytes: true, shared: None, in_short_container: true, ..*self };
        match walk.skip() {
            Err(error) => error,
            Ok(()) => truncated(),
        }
    }

    #[inline]
    pub(super) fn integer_value(&mut self, m: u8, ai: u8) -> Result<f64, ProtocolError> {
        let at = self.pos;
        let n = self.argument(ai)?;
        // An argument beyond 2^53 - 1 keeps its head: the reference words it as an argument out
        // of range, unlike the one unsafe value -2^53 (docs/PROTOCOL.md section 6).
        if n > MAX_SAFE_INTEGER {
            return Err(with_head_at(ProtocolError::cbor(Rule::UnsafeInteger), self.input, at));
        }
        if m == major::UNSIGNED {
            Ok(n as f64)
        } else {
            // -1 - n must stay >= -(2^53 - 1).
            if n == MAX_SAFE_INTEGER {
                return Err(ProtocolError::cbor(Rule::UnsafeInteger));
            }
            Ok(-1.0 - n as f64)
        }
    }

    /// The depth rule: whether an item at `depth` (the first item of the input is at 0) is
    /// within `maxDepth`.
    #[inline(always)]
    pub(super) fn depth_allows(&self, depth: u32) -> bool {
        depth <= self.limits.max_depth()
    }

    /// The error of an item beyond `maxDepth`.
    #[cold]
    pub(super) fn depth_error(&self) -> ProtocolError {
        ProtocolError::cbor(Rule::DepthLimit { limit: u64::from(self.limits.max_depth()) })
    }

    /// The item at the cursor when it is a text string of the short-text rule ([`short_text`])
    /// at an allowed depth: its header length and its length.
    #[inline(always)]
    pub(super) fn short_text_at_cursor(&self) -> Option<(usize, usize)> {
        let (start, len) = short_text_head(*self.input.get(self.pos)?, self.input, self.pos)?;
        let fits = start + len <= self.input.len()
            && len as u64 <= u64::from(self.limits.max_byte_length())
            && self.depth_allows(self.depth);
        fits.then_some((start - self.pos, len))
    }

    /// Reads the remainder of a major-type-7 item whose initial byte has `ai`.
    #[inline]
    pub(super) fn simple(&mut self, ai: u8) -> Result<Scalar<'de>, ProtocolError> {
        match ai {
            20 => {
                self.pos += 1;
                Ok(Scalar::Bool(false))
            }
            21 => {
                self.pos += 1;
                Ok(Scalar::Bool(true))
            }
            22 => {
                self.pos += 1;
                Ok(Scalar::Null)
            }
            27 => {
                let bits = self.argument(27)?;
                let v = f64::from_bits(bits);
                check_float(v)?;
                Ok(Scalar::Number(v))
            }
            _ => Err(ProtocolError::cbor(Rule::UnsupportedSimple)),
        }
    }
}

/// The float rule as an error: a decoded float64 must be finite, and a safe integer when
/// integral ([`is_encodable_number`]).
#[inline]
pub(crate) fn check_float(v: f64) -> Result<(), ProtocolError> {
    if is_encodable_number(v) {
        Ok(())
    } else {
        Err(float_error(v))
    }
}

/// Why the float64 `v` is refused: not finite, or integral beyond 2^53 - 1.
#[cold]
fn float_error(v: f64) -> ProtocolError {
    ProtocolError::cbor(if v.is_finite() { Rule::UnsafeInteger } else { Rule::NonFiniteNumber })
}

/// The error for the initial byte `b` of additional information 28-31.
#[cold]
pub(crate) fn reserved_or_indefinite(b: u8) -> ProtocolError {
    ProtocolError::cbor(match (b & 0x1f, b >> 5) {
        (31, major::BYTES | major::TEXT | major::ARRAY | major::MAP) => Rule::IndefiniteLength,
        (31, major::SIMPLE) => Rule::UnexpectedBreak,
        _ => Rule::ReservedAdditionalInfo,
    })
    // The reference words these by the major type (docs/PROTOCOL.md section 6).
    .with_head(b)
}

/// `error` with the initial byte at `at` of `input` recorded, for the reference's wording.
#[cold]
fn with_head_at(error: ProtocolError, input: &[u8], at: usize) -> ProtocolError {
    match input.get(at) {
        Some(&b) => error.with_head(b),
        None => error,
    }
}

/// What one initial byte says (RFC 8949 section 3, restricted by docs/PROTOCOL.md section 2):
/// its major type, how many argument bytes follow it, what follows the argument, and, for the
/// walkers' fast paths, the size of an item its head alone decides and its class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(8))]
pub(crate) struct Head {
    /// Major type, 0 to 7.
    pub(crate) major: u8,
    /// Bytes of argument after the initial byte: 0 (additional information below 24, the
    /// argument is in the byte itself), 1, 2, 4 or 8; [`RESERVED`] for additional information
    /// 28 to 31 (reserved, or indefinite length: refused).
    pub(crate) argument: u8,
    /// What follows the argument.
    pub(crate) follows: Follows,
    /// The size of the whole item when its head alone makes it valid: 1 for integers below 24,
    /// `false`, `true` and `null`; 2, 3 and 5 for integers with 1, 2 and 4 argument bytes (below
    /// 2^32 in magnitude, always safe); 9 for float64 (its value still passes the float rule);
    /// 0 for every other head.
    pub(crate) fixed_size: u8,
    /// The JSON type the item stands for ([`JsonTypes::NONE`] for items that are no JSON value).
    pub(crate) json: JsonTypes,
    /// The class the fast paths dispatch on.
    pub(crate) class: Class,
}

/// [`Head::argument`] of additional information 28 to 31.
pub(crate) const RESERVED: u8 = 0xff;

/// What follows an initial byte's argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Follows {
    /// Nothing: the argument is the value (integers), or there is none (`false`, `true`, `null`).
    Nothing,
    /// Nothing, the argument being a float64's bits (checked by the float rule).
    Float,
    /// A byte string of the argument's length (refused inside messages).
    Bytes,
    /// A UTF-8 text string of the argument's length.
    Text,
    /// As many items as the argument says (an array).
    Elements,
    /// As many key-value pairs as the argument says (a map with text keys).
    Entries,
    /// One item, tagged: refused.
    Tag,
    /// Nothing the subset accepts: simple values other than `false`, `true`, `null`, floats
    /// other than float64, reserved and indefinite-length heads.
    Refused,
}

/// The class of an initial byte for the fast paths of the walk and the plain-item test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Class {
    /// An item of [`Head::fixed_size`] bytes.
    Fixed,
    /// A text string with its length (0 to 23) in the head.
    ShortText,
    /// A text string with its length (24 to 255) in the next byte.
    ByteLengthText,
    /// An array or map of at most [`SMALL_CONTAINER`] entries, counted in the head.
    SmallContainer,
    /// Anything else: the general path decides.
    Other,
}

/// The initial byte of the empty text string: heads from it to 0x77 count the text's length.
pub(crate) const SHORT_TEXT_HEAD: u8 = 0x60;

/// Entries of the largest container of [`Class::SmallContainer`].
pub(crate) const SMALL_CONTAINER: u8 = 16;

/// The [`Head`] of every initial byte, indexed by the byte.
pub(crate) static HEADS: [Head; 256] = {
    let mut heads = [Head {
        major: 0,
        argument: 0,
        follows: Follows::Refused,
        fixed_size: 0,
        json: JsonTypes::NONE,
        class: Class::Other,
    }; 256];
    let mut b = 0;
    while b < 256 {
        heads[b] = head_of(b as u8);
        b += 1;
    }
    heads
};

/// The [`Head`] of the initial byte `b`.
const fn head_of(b: u8) -> Head {
    let (m, ai) = (b >> 5, b & 0x1f);
    let argument = match ai {
        0..=23 => 0,
        24..=27 => 1 << (ai - 24),
        _ => RESERVED,
    };
    let follows = if argument == RESERVED {
        Follows::Refused
    } else {
        match m {
            major::UNSIGNED | major::NEGATIVE => Follows::Nothing,
            major::BYTES => Follows::Bytes,
            major::TEXT => Follows::Text,
            major::ARRAY => Follows::Elements,
            major::MAP => Follows::Entries,
            major::TAG => Follows::Tag,
            _ => match ai {
                20..=22 => Follows::Nothing,
                27 => Follows::Float,
                _ => Follows::Refused,
            },
        }
    };
    let json = match follows {
        Follows::Nothing if m == major::SIMPLE && ai == 22 => JsonTypes::NULL,
        Follows::Nothing if m == major::SIMPLE => JsonTypes::BOOLEAN,
        Follows::Nothing | Follows::Float => JsonTypes::NUMBER,
        Follows::Text => JsonTypes::STRING,
        Follows::Elements => JsonTypes::ARRAY,
        Follows::Entries => JsonTypes::OBJECT,
        _ => JsonTypes::NONE,
    };
    // Integers of up to four argument bytes are below 2^32 in magnitude: safe by their head.
    let fixed_size = match follows {
        Follows::Nothing if argument <= 4 => 1 + argument,
        Follows::Float => 9,
        _ => 0,
    };
    let class = if fixed_size != 0 {
        Class::Fixed
    } else {
        match follows {
            Follows::Text if argument == 0 => Class::ShortText,
            Follows::Text if argument == 1 => Class::ByteLengthText,
            Follows::Elements | Follows::Entries if ai <= SMALL_CONTAINER => Class::SmallContainer,
            _ => Class::Other,
        }
    };
    Head { major: m, argument, follows, fixed_size, json, class }
}

/// The short-text rule, its heads: when the item at `input[pos]`, whose initial byte is `b`,
/// is a text string of fewer than 256 bytes, that is of [`Class::ShortText`] (heads 0x60 to
/// 0x77 count its length) or [`Class::ByteLengthText`] (0x78: its length in the next byte),
/// the position of its body and its length. `None` for every other head. See [`short_text`]
/// for the bounds.
#[inline(always)]
pub(crate) fn short_text_head(b: u8, input: &[u8], pos: usize) -> Option<(usize, usize)> {
    // By arithmetic rather than a table load: this runs for every key and short value.
    match b.wrapping_sub(SHORT_TEXT_HEAD) {
        n @ 0..=23 => Some((pos + 1, usize::from(n))),
        24 => Some((pos + 2, usize::from(*input.get(pos + 1)?))),
        _ => None,
    }
}

/// The short-text rule: the text of [`short_text_head`] when it lies within the input and
/// `max_byte_length`. `None` for every other head, and for a short text beyond the input or
/// the limit, which the general path then reports. Its UTF-8 is the caller's to check.
#[inline(always)]
pub(crate) fn short_text(b: u8, input: &[u8], pos: usize, max_byte_length: usize) -> Option<(usize, usize)> {
    let (start, len) = short_text_head(b, input, pos)?;
    (start + len <= input.len() && len <= max_byte_length).then_some((start, len))
}

#[cold]
pub(crate) fn truncated() -> ProtocolError {
    ProtocolError::cbor(Rule::Truncated)
}

/// Initial byte of a float64 (major type 7, additional information 27).
pub(crate) const FLOAT64: u8 = 0xfb;
