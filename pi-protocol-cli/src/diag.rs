//! CBOR diagnostic notation (RFC 8949 section 8) for frame payloads, tolerant of bad input.
//!
//! The printer walks general CBOR (tags, byte strings, indefinite lengths and every simple value
//! included) so it can show what a peer actually sent, and remembers the first place where the
//! payload leaves the protocol's strict subset (docs/PROTOCOL.md section 2). It can also mark the item
//! at a field path, which is how schema errors are located. Nesting is bounded so no input can
//! exhaust the stack.

use std::collections::HashSet;
use std::fmt::Write as _;

use pi_protocol::PathSegment;

/// Deepest nesting the printer follows; deeper input is reported, not walked.
const MAX_WALK_DEPTH: usize = 600;
/// Largest integer magnitude the strict subset carries: 2^53 - 1.
const MAX_SAFE: u64 = pi_protocol::runtime::MAX_SAFE_INTEGER;
/// Marks put around the offending item in the diagnostic text.
pub const MARK_OPEN: &str = ">>>";
/// See [`MARK_OPEN`].
pub const MARK_CLOSE: &str = "<<<";

/// A byte range of the payload that breaks a rule, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offence {
    /// First offending byte (payload offset).
    pub start: usize,
    /// One past the last offending byte.
    pub end: usize,
    /// What is wrong there, in words.
    pub reason: String,
}

/// The diagnostic text of a payload, the first strict-subset offence, the span of the item at the
/// requested path, and the text under the message type's tag key (`type` for version 8) when the
/// payload is a map that has one.
#[derive(Debug, Default)]
pub struct Diagnosis {
    /// Diagnostic notation; the marked item (if any) is wrapped in [`MARK_OPEN`]/[`MARK_CLOSE`].
    pub text: String,
    /// The first place the payload breaks the strict subset.
    pub offence: Option<Offence>,
    /// The span of the deepest item found along the requested path.
    pub marked: Option<(usize, usize)>,
    /// The top-level text under the tag key, when present.
    pub message_type: Option<String>,
}

struct Walker<'a> {
    input: &'a [u8],
    pos: usize,
    out: String,
    offence: Option<Offence>,
    target: Option<Vec<PathSegment>>,
    /// Current path; `None` for a key that is not on the target path.
    path: Vec<Option<PathSegment>>,
    /// The deepest item found along `target`.
    best: Option<Found>,
    message_type: Option<String>,
    /// The key whose top-level text names the message type.
    tag: Option<&'a str>,
    /// Bytes of text after which output stops (the walk goes on, to find offences and marks).
    budget: usize,
    clipped: bool,
}

/// (path length, byte span, text span) of an item found along the target path.
type Found = (usize, (usize, usize), (usize, usize));

/// A fatal walking problem: the rest of the payload cannot be read.
struct Stop;

/// Describes `payload`. When `target` is given, the item at that field path (or, when it does
/// not exist, its deepest existing ancestor) is marked in the text and its span returned.
#[cfg(test)]
pub fn diagnose(payload: &[u8], target: Option<Vec<PathSegment>>) -> Diagnosis {
    diagnose_within(payload, target, usize::MAX, Some("type"))
}

/// [`diagnose`], writing at most about `budget` bytes of text (then ` ...`); the whole payload
/// is still walked for its offence and the marked span. The message type is read under `tag`.
pub fn diagnose_within<'a>(
    payload: &'a [u8],
    target: Option<Vec<PathSegment>>,
    budget: usize,
    tag: Option<&'a str>,
) -> Diagnosis {
    let mut walker = Walker {
        input: payload,
        pos: 0,
        out: String::new(),
        offence: None,
        target,
        path: Vec::new(),
        best: None,
        message_type: None,
        tag,
        budget,
        clipped: false,
    };
    if payload.is_empty() {
        walker.offend(0, 0, "empty payload");
    } else if walker.item(0).is_ok() && walker.pos < payload.len() {
        let start = walker.pos;
        walker.offend(start, payload.len(), "trailing bytes after the item");
        let _ = write!(walker.out, " {MARK_OPEN}trailing h'{}'{MARK_CLOSE}", hex(&payload[start..]));
    }
    let mut text = walker.out;
    let marked = walker.best.map(|(_, span, (open, close))| {
        text.insert_str(close, MARK_CLOSE);
        text.insert_str(open, MARK_OPEN);
        span
    });
    Diagnosis { text, offence: walker.offence, marked, message_type: walker.message_type }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

impl<'a> Walker<'a> {
    /// Appends diagnostic text, up to the text budget; past it, once, an ellipsis.
    fn emit(&mut self, text: &str) {
        if self.out.len() < self.budget {
            self.out.push_str(text);
        } else if !self.clipped {
            self.clipped = true;
            self.out.push_str(" ...");
        }
    }

    fn emit_fmt(&mut self, args: std::fmt::Arguments<'_>) {
        if self.out.len() < self.budget {
            let _ = self.out.write_fmt(args);
        } else {
            self.emit("");
        }
    }

    fn offend(&mut self, start: usize, end: usize, reason: &str) {
        if self.offence.is_none() {
            self.offence = Some(Offence { start, end: end.max(start), reason: reason.to_owned() });
        }
    }

    fn truncated(&mut self, start: usize) -> Stop {
        self.offend(start, self.input.len(), "item truncated: the payload ends inside it");
        self.emit_fmt(format_args!("{MARK_OPEN}truncated{MARK_CLOSE}"));
        Stop
    }

    /// Reads an initial byte and its argument; `None` means indefinite length (additional
    /// information 31).
    fn head(&mut self) -> Result<(u8, u8, Option<u64>), Stop> {
        let start = self.pos;
        let Some(&initial) = self.input.get(start) else {
            return Err(self.truncated(start));
        };
        let (major, ai) = (initial >> 5, initial & 0x1f);
        let width = match ai {
            0..=23 => 0,
            24 => 1,
            25 => 2,
            26 => 4,
            27 => 8,
            28..=30 => {
                self.offend(start, start + 1, "reserved additional information (28-30)");
                self.emit_fmt(format_args!("{MARK_OPEN}reserved 0x{initial:02x}{MARK_CLOSE}"));
                return Err(Stop);
            }
            _ => {
                self.pos += 1;
                return Ok((major, ai, None));
            }
        };
        if self.input.len() - start - 1 < width {
            return Err(self.truncated(start));
        }
        let value = if width == 0 {
            u64::from(ai)
        } else {
            self.input[start + 1..start + 1 + width].iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
        };
        self.pos = start + 1 + width;
        Ok((major, ai, Some(value)))
    }

    fn on_path(&self) -> bool {
        match &self.target {
            Some(target) => {
                self.path.len() <= target.len() && self.path.iter().zip(target).all(|(p, t)| p.as_ref() == Some(t))
            }
            None => false,
        }
    }

    fn item(&mut self, depth: usize) -> Result<(), Stop> {
        let start = self.pos;
        let text_start = self.out.len();
        let on_path = self.on_path();
        let result = self.item_inner(depth);
        // Children finish first: the deepest item along the path wins, and among items at the same
        // path (a tag and its content) the outermost.
        if on_path && self.best.is_none_or(|(len, _, _)| self.path.len() >= len) {
            self.best = Some((self.path.len(), (start, self.pos), (text_start, self.out.len())));
        }
        result
    }

    fn item_inner(&mut self, depth: usize) -> Result<(), Stop> {
        let start = self.pos;
        if depth > MAX_WALK_DEPTH {
            self.offend(start, start + 1, "nesting too deep to show");
            self.emit("...");
            return Err(Stop);
        }
        let (major, ai, argument) = self.head()?;
        match (major, argument) {
            (0, Some(n)) => {
                self.emit_fmt(format_args!("{n}"));
                if n > MAX_SAFE {
                    self.offend(start, self.pos, "integer beyond +-(2^53 - 1)");
                }
            }
            (1, Some(n)) => {
                self.emit_fmt(format_args!("-{}", u128::from(n) + 1));
                if n >= MAX_SAFE {
                    self.offend(start, self.pos, "integer beyond +-(2^53 - 1)");
                }
            }
            (2, Some(n)) => {
                let body = self.body(start, n)?;
                self.emit_fmt(format_args!("h'{}'", hex(body)));
                self.offend(start, self.pos, "byte string (messages hold JSON values only)");
            }
            (3, Some(n)) => {
                let body = self.body(start, n)?;
                match std::str::from_utf8(body) {
                    Ok(text) => self.emit(&quote(text)),
                    Err(_) => {
                        self.emit_fmt(format_args!("{MARK_OPEN}invalid UTF-8 h'{}'{MARK_CLOSE}", hex(body)));
                        self.offend(start, self.pos, "text string is not valid UTF-8");
                    }
                }
            }
            (2 | 3, None) => {
                self.offend(start, start + 1, "indefinite-length string");
                self.emit("(_ ");
                let mut first = true;
                loop {
                    if self.input.get(self.pos) == Some(&0xff) {
                        self.pos += 1;
                        break;
                    }
                    if !first {
                        self.emit(", ");
                    }
                    first = false;
                    self.item(depth + 1)?;
                }
                self.emit(")");
            }
            (4, len) => {
                if len.is_none() {
                    self.offend(start, start + 1, "indefinite-length array");
                }
                self.emit(if len.is_none() { "[_ " } else { "[" });
                let mut index = 0u64;
                while self.more(len, index, start)? {
                    if index > 0 {
                        self.emit(", ");
                    }
                    self.path.push(Some(PathSegment::Index(index)));
                    let result = self.item(depth + 1);
                    self.path.pop();
                    result?;
                    index += 1;
                }
                self.emit("]");
            }
            (5, len) => {
                if len.is_none() {
                    self.offend(start, start + 1, "indefinite-length map");
                }
                self.emit(if len.is_none() { "{_ " } else { "{" });
                let mut seen = HashSet::new();
                let mut index = 0u64;
                while self.more(len, index, start)? {
                    if index > 0 {
                        self.emit(", ");
                    }
                    let key_start = self.pos;
                    let key = self.key(depth + 1)?;
                    self.emit(": ");
                    let segment = match &key {
                        Some(k) => {
                            if !seen.insert(k.clone()) {
                                self.offend(key_start, self.pos, "duplicate map key");
                            }
                            self.known_key(k)
                        }
                        None => {
                            self.offend(key_start, self.pos, "map key is not a text string");
                            None
                        }
                    };
                    let value_start = self.pos;
                    self.path.push(segment);
                    let result = self.item(depth + 1);
                    self.path.pop();
                    result?;
                    if depth == 0 && key.is_some() && key.as_deref() == self.tag {
                        if let Some(name) = self.text_at(value_start) {
                            self.message_type = Some(name);
                        }
                    }
                    index += 1;
                }
                self.emit("}");
            }
            (6, Some(tag)) => {
                self.offend(start, self.pos, "CBOR tag (tags are not allowed)");
                self.emit_fmt(format_args!("{tag}("));
                self.item(depth + 1)?;
                self.emit(")");
            }
            (7, None) => {
                self.offend(start, start + 1, "break marker outside an indefinite-length item");
                self.emit_fmt(format_args!("{MARK_OPEN}break{MARK_CLOSE}"));
                return Err(Stop);
            }
            (7, Some(value)) => self.simple(start, ai, value),
            _ => {
                // Additional information 31 on an integer or a tag: not well-formed.
                self.offend(start, start + 1, "additional information 31 on an integer or tag");
                self.emit_fmt(format_args!("{MARK_OPEN}malformed 0x{:02x}{MARK_CLOSE}", self.input[start]));
                return Err(Stop);
            }
        }
        Ok(())
    }

    /// Whether another entry follows in a container of `len` entries (`None`: indefinite).
    fn more(&mut self, len: Option<u64>, index: u64, start: usize) -> Result<bool, Stop> {
        match len {
            Some(n) => {
                if index < n && self.pos >= self.input.len() {
                    if index > 0 {
                        self.emit(", ");
                    }
                    return Err(self.truncated(start));
                }
                Ok(index < n)
            }
            None => match self.input.get(self.pos) {
                Some(0xff) => {
                    self.pos += 1;
                    Ok(false)
                }
                Some(_) => Ok(true),
                None => Err(self.truncated(start)),
            },
        }
    }

    fn body(&mut self, start: usize, n: u64) -> Result<&'a [u8], Stop> {
        let available = (self.input.len() - self.pos) as u64;
        if n > available {
            return Err(self.truncated(start));
        }
        let from = self.pos;
        self.pos += n as usize;
        let input = self.input;
        Ok(&input[from..self.pos])
    }

    /// Prints a map key (never marked); returns it when it is a valid text string.
    fn key(&mut self, depth: usize) -> Result<Option<String>, Stop> {
        let start = self.pos;
        let target = self.target.take();
        let result = self.item(depth);
        self.target = target;
        result?;
        Ok(self.text_at(start))
    }

    /// The text string starting at `start`, if it is a definite, valid one.
    fn text_at(&self, start: usize) -> Option<String> {
        let mut probe = Walker {
            input: self.input,
            pos: start,
            out: String::new(),
            offence: None,
            target: None,
            path: Vec::new(),
            best: None,
            message_type: None,
            tag: None,
            budget: 0,
            clipped: false,
        };
        let (major, _, len) = probe.head().ok()?;
        if major != 3 {
            return None;
        }
        let len = usize::try_from(len?).ok()?;
        let body = self.input.get(probe.pos..probe.pos.checked_add(len)?)?;
        std::str::from_utf8(body).ok().map(str::to_owned)
    }

    /// The path segment of a key the target path names (paths only hold schema keys).
    fn known_key(&self, key: &str) -> Option<PathSegment> {
        let target = self.target.as_ref()?;
        match target.get(self.path.len()) {
            Some(PathSegment::Key(name)) if *name == key => Some(PathSegment::Key(name)),
            _ => None,
        }
    }

    fn simple(&mut self, start: usize, ai: u8, value: u64) {
        match ai {
            20 => self.emit("false"),
            21 => self.emit("true"),
            22 => self.emit("null"),
            23 => {
                self.emit("undefined");
                self.offend(start, self.pos, "undefined is not a JSON value");
            }
            25 | 26 => {
                let number = if ai == 25 { half(value as u16) } else { f64::from(f32::from_bits(value as u32)) };
                self.emit_fmt(format_args!("{}_{}", float(number), ai - 24));
                self.offend(start, self.pos, "only float64 numbers are allowed");
            }
            27 => {
                let number = f64::from_bits(value);
                self.emit(&float(number));
                if !number.is_finite() {
                    self.offend(start, self.pos, "number is not finite");
                } else if number.fract() == 0.0 && number.abs() > MAX_SAFE as f64 {
                    self.offend(start, self.pos, "integer beyond +-(2^53 - 1)");
                }
            }
            _ => {
                self.emit_fmt(format_args!("simple({value})"));
                self.offend(start, self.pos, "simple values other than false, true and null are not allowed");
            }
        }
    }
}

fn float(n: f64) -> String {
    if n.is_nan() {
        "NaN".to_owned()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else if n.fract() == 0.0 && n.abs() < 1e16 {
        format!("{n:.1}")
    } else {
        format!("{n}")
    }
}

/// IEEE 754 half precision to f64.
fn half(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => mantissa * 2f64.powi(-24),
        31 if mantissa == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + mantissa / 1024.0) * 2f64.powi(e - 15),
    }
}

/// A text string in diagnostic notation (JSON string escaping).
fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"?\"".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_strict_items() {
        let d = diagnose(&[0xa2, 0x61, b'a', 0x82, 0x01, 0x20, 0x61, b'b', 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0], None);
        assert_eq!(d.text, r#"{"a": [1, -1], "b": 1.5}"#);
        assert_eq!(d.offence, None);
    }

    #[test]
    fn finds_the_first_offence_and_keeps_printing() {
        // {"type": "hello", "v": 0(1)}: a tag at payload byte 14.
        let mut payload = vec![0xa2, 0x64];
        payload.extend_from_slice(b"type");
        payload.push(0x65);
        payload.extend_from_slice(b"hello");
        payload.extend_from_slice(&[0x61, b'v', 0xc0, 0x01]);
        let d = diagnose(&payload, None);
        assert_eq!(d.text, r#"{"type": "hello", "v": 0(1)}"#);
        assert_eq!(d.offence.as_ref().map(|o| (o.start, o.end)), Some((14, 15)));
        assert_eq!(d.message_type.as_deref(), Some("hello"));
    }

    #[test]
    fn marks_the_item_at_a_path() {
        // {"t": {"id": "X"}}
        let payload = [0xa1, 0x61, b't', 0xa1, 0x62, b'i', b'd', 0x61, b'X'];
        let d = diagnose(&payload, Some(vec![PathSegment::Key("t"), PathSegment::Key("id")]));
        assert_eq!(d.text, r#"{"t": {"id": >>>"X"<<<}}"#);
        assert_eq!(d.marked, Some((7, 9)));
        // A missing field marks its parent.
        let d = diagnose(&payload, Some(vec![PathSegment::Key("t"), PathSegment::Key("other")]));
        assert_eq!(d.text, r#"{"t": >>>{"id": "X"}<<<}"#);
    }

    /// Random and mutated payloads: the walker never panics, and it finds an offence exactly
    /// when the library's strict decoder refuses the bytes (byte strings aside, which the raw
    /// decoder accepts and messages do not; depth aside, which the walker follows further).
    #[test]
    fn agrees_with_the_strict_decoder_on_random_input() {
        use pi_protocol::{decode_cbor, CborLimits, CborValue, Rule};
        fn has_bytes(v: &CborValue) -> bool {
            match v {
                CborValue::Bytes(_) => true,
                CborValue::Array(items) => items.iter().any(has_bytes),
                CborValue::Map(entries) => entries.iter().any(|(_, v)| has_bytes(v)),
                _ => false,
            }
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let seeds: [&[u8]; 3] = [
            &[0xa2, 0x64, b't', b'y', b'p', b'e', 0x65, b'h', b'e', b'l', b'l', b'o', 0x61, b'v', 0x08],
            &[0x83, 0xf5, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x62, b'a', b'b'],
            &[0xa1, 0x61, b'k', 0x82, 0x38, 0x63, 0xf6],
        ];
        let (mut agreed_ok, mut agreed_bad) = (0, 0);
        for round in 0..20_000 {
            let payload: Vec<u8> = if round % 2 == 0 {
                let len = (next() % 24) as usize;
                (0..len).map(|_| next() as u8).collect()
            } else {
                let mut p = seeds[round % 3].to_vec();
                let at = (next() as usize) % p.len();
                p[at] = next() as u8;
                if next() % 4 == 0 {
                    p.truncate((next() as usize) % (p.len() + 1));
                }
                p
            };
            let d = diagnose(&payload, None);
            match decode_cbor(&payload, CborLimits::default()) {
                Ok(value) if !has_bytes(&value) => {
                    assert_eq!(d.offence, None, "{payload:02x?}");
                    agreed_ok += 1;
                }
                Ok(_) => assert!(d.offence.is_some(), "{payload:02x?}"),
                Err(e) if matches!(e.rule(), Rule::DepthLimit { .. }) => {}
                Err(e) => {
                    assert!(d.offence.is_some(), "{payload:02x?}: library says {e}");
                    agreed_bad += 1;
                }
            }
        }
        assert!(agreed_ok > 1000 && agreed_bad > 1000, "{agreed_ok} {agreed_bad}");
    }

    #[test]
    fn text_budget_clips_the_text_but_not_the_walk() {
        // [null x 1000, 0(1)]: the tag sits at payload byte 1003.
        let mut payload = vec![0x99, 0x03, 0xe9];
        payload.resize(1003, 0xf6);
        payload.extend_from_slice(&[0xc0, 0x01]);
        let d = diagnose_within(&payload, None, 20, None);
        assert_eq!(d.text, "[null, null, null, null ...");
        assert_eq!(d.offence.map(|o| o.start), Some(1003));
    }

    #[test]
    fn truncation_and_deep_nesting_stop_cleanly() {
        let d = diagnose(&[0x82, 0x01], None);
        assert_eq!(d.text, "[1, >>>truncated<<<");
        assert_eq!(d.offence.map(|o| o.start), Some(0));
        let deep = vec![0x81; 100_000];
        let d = diagnose(&deep, None);
        assert_eq!(d.offence.map(|o| o.reason), Some("nesting too deep to show".to_owned()));
        let d = diagnose(&[0xf6, 0xf6], None);
        assert_eq!(d.text, "null >>>trailing h'f6'<<<");
    }
}
