//! JSON text -> payload CBOR in one pass (RFC 8259 text; docs/PROTOCOL.md section 5): the reader
//! behind [`Payload::from_json_str`](crate::Payload::from_json_str) and
//! [`json::payload_in_javascript_order`](crate::json::payload_in_javascript_order).
//!
//! No `serde_json::Value` is built, so the result does not depend on the `serde_json` features
//! an application turns on: object keys keep the order of the text, and numbers are read
//! exactly (the nearest float64, by the standard library's correctly rounded parser, where
//! `serde_json` without `float_roundtrip` may be one unit in the last place off). Numbers
//! follow `serde_json`'s reading otherwise: an integer written without fraction or exponent
//! is an integer (`-0` is the float `-0.0`); integral numbers beyond +-(2^53 - 1) are refused
//! (`Encode`/`UnencodableNumber`), as are numbers beyond the float64 range
//! (`Schema`/`WrongType { expected: "JSON" }`, like any other text that is not JSON). Nesting
//! is limited to 512 levels as in [`Payload::from_value`](crate::Payload::from_value)
//! (`Encode`/`DepthLimit`); the walk keeps its own stack, so deep text uses no call frames.

use crate::cbor::builder::Builder;
use crate::error::{ErrorKind, ProtocolError, Rule};
use crate::number::MAX_SAFE_INTEGER;

/// Reads the JSON text `text` (one value, whitespace around it) into `builder`.
///
/// # Errors
/// `Schema`/`WrongType { expected: "JSON" }` for text that is not JSON; the builder's errors.
pub(crate) fn read(text: &str, builder: &mut Builder) -> Result<(), ProtocolError> {
    Text { bytes: text.as_bytes(), text, pos: 0, scratch: String::new() }.read(builder)
}

/// A container open in the text: `true` for an object.
type Open = bool;

struct Text<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    /// Strings with escapes are unescaped here.
    scratch: String,
}

#[cold]
fn not_json() -> ProtocolError {
    ProtocolError::schema(Rule::WrongType { expected: "JSON" })
}

impl<'t> Text<'t> {
    fn read(&mut self, builder: &mut Builder) -> Result<(), ProtocolError> {
        let mut open: Vec<Open> = Vec::new();
        'value: loop {
            // A value.
            self.skip_whitespace();
            match self.next_byte()? {
                b'{' => {
                    builder.begin_object(None)?;
                    self.skip_whitespace();
                    if self.eat(b'}') {
                        builder.end()?;
                    } else {
                        open.push(true);
                        self.key(builder)?;
                        continue 'value;
                    }
                }
                b'[' => {
                    builder.begin_array(None)?;
                    self.skip_whitespace();
                    if self.eat(b']') {
                        builder.end()?;
                    } else {
                        open.push(false);
                        continue 'value;
                    }
                }
                b'"' => {
                    let s = self.string()?;
                    builder.text(s)?;
                }
                b't' => self.literal(b"rue").and_then(|()| builder.bool(true))?,
                b'f' => self.literal(b"alse").and_then(|()| builder.bool(false))?,
                b'n' => self.literal(b"ull").and_then(|()| builder.null())?,
                b'-' | b'0'..=b'9' => {
                    self.pos -= 1;
                    self.number(builder)?;
                }
                _ => return Err(not_json()),
            }
            // After a value: the next entry, or the ends of the containers it completes.
            loop {
                self.skip_whitespace();
                let Some(&is_object) = open.last() else {
                    return if self.pos == self.bytes.len() { Ok(()) } else { Err(not_json()) };
                };
                match (self.next_byte()?, is_object) {
                    (b',', true) => {
                        self.skip_whitespace();
                        self.key(builder)?;
                        continue 'value;
                    }
                    (b',', false) => continue 'value,
                    (b'}', true) | (b']', false) => {
                        open.pop();
                        builder.end()?;
                    }
                    _ => return Err(not_json()),
                }
            }
        }
    }

    #[inline]
    fn next_byte(&mut self) -> Result<u8, ProtocolError> {
        let b = *self.bytes.get(self.pos).ok_or_else(not_json)?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    fn eat(&mut self, b: u8) -> bool {
        let found = self.bytes.get(self.pos) == Some(&b);
        self.pos += usize::from(found);
        found
    }

    #[inline]
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn literal(&mut self, rest: &[u8]) -> Result<(), ProtocolError> {
        if self.bytes.get(self.pos..self.pos + rest.len()) != Some(rest) {
            return Err(not_json());
        }
        self.pos += rest.len();
        Ok(())
    }

    /// An object key (whitespace before it skipped) and the colon after it.
    fn key(&mut self, builder: &mut Builder) -> Result<(), ProtocolError> {
        if self.next_byte()? != b'"' {
            return Err(not_json());
        }
        let key = self.string()?;
        builder.key(key)?;
        self.skip_whitespace();
        if self.next_byte()? != b':' {
            return Err(not_json());
        }
        Ok(())
    }

    /// The rest of a string whose opening quote was read: borrowed from the text when it has
    /// no escape, else unescaped into the scratch buffer.
    fn string(&mut self) -> Result<&str, ProtocolError> {
        let start = self.pos;
        loop {
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    // Both ends are ASCII bytes, so character boundaries.
                    return Ok(&self.text[start..self.pos - 1]);
                }
                Some(b'\\') => break,
                Some(&b) if b < 0x20 => return Err(not_json()),
                Some(_) => self.pos += 1,
                None => return Err(not_json()),
            }
        }
        self.scratch.clear();
        self.scratch.push_str(&self.text[start..self.pos]);
        loop {
            let run = self.pos;
            while let Some(&b) = self.bytes.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            self.scratch.push_str(&self.text[run..self.pos]);
            match self.next_byte()? {
                b'"' => return Ok(&self.scratch),
                b'\\' => {
                    let c = match self.next_byte()? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(not_json()),
                    };
                    self.scratch.push(c);
                }
                _ => return Err(not_json()),
            }
        }
    }

    /// The character of a `\u` escape (its `\u` read), a surrogate pair taking two escapes;
    /// a lone surrogate is refused, as `serde_json` refuses it.
    fn unicode_escape(&mut self) -> Result<char, ProtocolError> {
        let first = self.hex4()?;
        let code = match first {
            0xd800..=0xdbff => {
                if self.literal(b"\\u").is_err() {
                    return Err(not_json());
                }
                let second = self.hex4()?;
                if !(0xdc00..=0xdfff).contains(&second) {
                    return Err(not_json());
                }
                0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00)
            }
            0xdc00..=0xdfff => return Err(not_json()),
            _ => first,
        };
        char::from_u32(code).ok_or_else(not_json)
    }

    fn hex4(&mut self) -> Result<u32, ProtocolError> {
        let digits = self.bytes.get(self.pos..self.pos + 4).ok_or_else(not_json)?;
        let mut code = 0;
        for &d in digits {
            code = code * 16 + char::from(d).to_digit(16).ok_or_else(not_json)?;
        }
        self.pos += 4;
        Ok(code)
    }

    /// A number, checked against the JSON grammar, then read as `serde_json` reads it (see the
    /// module documentation).
    fn number(&mut self, builder: &mut Builder) -> Result<(), ProtocolError> {
        let start = self.pos;
        let negative = self.eat(b'-');
        let digits_start = self.pos;
        match self.next_byte()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return Err(not_json()),
        }
        let integer_digits = self.pos - digits_start;
        let mut integral = true;
        if self.eat(b'.') {
            integral = false;
            self.required_digits()?;
        }
        if self.eat(b'e') || self.eat(b'E') {
            integral = false;
            let _ = self.eat(b'+') || self.eat(b'-');
            self.required_digits()?;
        }
        let text = &self.text[start..self.pos];
        if integral {
            // No leading zeros: 17 digits or more are beyond 2^53 - 1.
            if integer_digits > 16 {
                return Err(ProtocolError::new(ErrorKind::Encode, Rule::UnencodableNumber));
            }
            let magnitude: u64 = text[usize::from(negative)..].parse().map_err(|_| not_json())?;
            return match (negative, magnitude) {
                (true, 0) => builder.float(-0.0),
                _ if magnitude > MAX_SAFE_INTEGER => {
                    Err(ProtocolError::new(ErrorKind::Encode, Rule::UnencodableNumber))
                }
                (true, _) => builder.integer(-i128::from(magnitude)),
                (false, _) => builder.integer(i128::from(magnitude)),
            };
        }
        let value: f64 = text.parse().map_err(|_| not_json())?;
        if value.is_infinite() {
            return Err(not_json());
        }
        builder.float(value)
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn required_digits(&mut self) -> Result<(), ProtocolError> {
        let start = self.pos;
        self.digits();
        if self.pos == start {
            return Err(not_json());
        }
        Ok(())
    }
}
