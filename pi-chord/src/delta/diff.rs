//! The producer: the ops between two successive values, as Chord's tracker derives them when
//! a value is replaced by another (`diffValue`).

use serde_json::{Map, Value};

use super::path::{is_reserved_segment, Path, Seg};
use super::{utf16, Op};

/// Options of [`diff_with`]: Chord's `TrackerOptions`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiffOptions {
    /// How many trailing UTF-16 code units of the previous string are searched for the start
    /// of the next one, to express a moving text window as `t` then `a` (Chord's
    /// `maxOverlapScan`, default 65,536). 0 disables the search (an unrelated string is `s`).
    pub max_overlap_scan: usize,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions { max_overlap_scan: 65_536 }
    }
}

impl DiffOptions {
    /// Sets [`max_overlap_scan`](Self::max_overlap_scan).
    #[must_use]
    pub fn max_overlap_scan(mut self, units: usize) -> Self {
        self.max_overlap_scan = units;
        self
    }
}

/// The ops that turn `before` into `after`, with the default [`DiffOptions`].
///
/// The same ops Chord's tracker publishes when a tracked value is assigned a new one:
/// - strings: `a` when the new string extends the old; `t` then `a` when a suffix of the old
///   one begins the new one (a moving window); `s` otherwise;
/// - arrays of one length: element by element; of different lengths, one `p` when the change
///   is one contiguous run between an equal prefix and suffix, else element by element then a
///   `p` for the difference in length at the tail;
/// - objects: the keys of `after` in its order, then `d` for each key `after` lacks; an
///   object with a reserved key ([`RESERVED_SEGMENTS`](super::RESERVED_SEGMENTS)) is set whole;
/// - anything else that differs: `s`, or `r` at the root (the root is never `a`, `t` or `d`).
///
/// Nothing is emitted for equal values; payloads are copied from `after` only where they
/// appear in an op.
///
/// ```
/// use pi_chord::delta::{apply, diff};
/// use serde_json::json;
///
/// let before = json!({"log": "line 1\n", "items": [1, 2, 3], "done": false});
/// let after = json!({"log": "line 1\nline 2\n", "items": [1, 9, 2, 3], "done": true});
/// let ops = diff(&before, &after);
/// assert_eq!(ops.len(), 3); // a, p, s
/// let mut replica = before.clone();
/// apply(&mut replica, ops)?;
/// assert_eq!(replica, after);
/// # Ok::<(), pi_chord::delta::DeltaError>(())
/// ```
#[must_use]
pub fn diff(before: &Value, after: &Value) -> Vec<Op> {
    diff_with(before, after, &DiffOptions::default())
}

/// [`diff`] with options.
#[must_use]
pub fn diff_with(before: &Value, after: &Value, options: &DiffOptions) -> Vec<Op> {
    let mut differ = Differ { scan: options.max_overlap_scan, path: Vec::new(), out: Vec::new() };
    differ.value(before, after);
    differ.out
}

struct Differ<'a> {
    scan: usize,
    path: Vec<Seg<'a>>,
    out: Vec<Op>,
}

impl<'a> Differ<'a> {
    fn here(&self) -> Path {
        Path::from_segs(&self.path)
    }

    fn set(&mut self, after: &Value) {
        let value = after.clone();
        if self.path.is_empty() {
            self.out.push(Op::Replace(value));
        } else {
            let path = self.here();
            self.out.push(Op::Set { path, value });
        }
    }

    fn value(&mut self, before: &'a Value, after: &'a Value) {
        match (before, after) {
            (Value::String(b), Value::String(a)) => self.string(b, a, after),
            (Value::Array(b), Value::Array(a)) => self.array(b, a, after),
            (Value::Object(b), Value::Object(a)) => self.object(b, a, after),
            _ => {
                if before != after {
                    self.set(after);
                }
            }
        }
    }

    fn string(&mut self, before: &str, after: &str, whole: &Value) {
        if before == after {
            return;
        }
        if self.path.is_empty() {
            self.set(whole);
            return;
        }
        if after.len() > before.len() && after.starts_with(before) {
            let path = self.here();
            self.out.push(Op::Append { path, text: after[before.len()..].to_owned() });
            return;
        }
        match overlap(before, after, self.scan) {
            None => {
                let path = self.here();
                self.out.push(Op::Set { path, value: whole.clone() });
            }
            Some((shared_units, shared_bytes)) => {
                let path = self.here();
                let count = (utf16::len(before) - shared_units) as u64;
                self.out.push(Op::Truncate { path: path.clone(), count });
                if after.len() > shared_bytes {
                    self.out.push(Op::Append { path, text: after[shared_bytes..].to_owned() });
                }
            }
        }
    }

    fn object(&mut self, before: &'a Map<String, Value>, after: &'a Map<String, Value>, whole: &Value) {
        if before.keys().chain(after.keys()).any(|k| is_reserved_segment(k)) {
            self.set(whole);
            return;
        }
        for (key, a) in after {
            self.path.push(Seg::Key(key));
            match before.get(key) {
                Some(b) => self.value(b, a),
                None => self.set(a),
            }
            self.path.pop();
        }
        for key in before.keys() {
            if !after.contains_key(key) {
                self.path.push(Seg::Key(key));
                let path = self.here();
                self.out.push(Op::Delete { path });
                self.path.pop();
            }
        }
    }

    fn array(&mut self, before: &'a [Value], after: &'a [Value], whole: &Value) {
        if before.len() == after.len() {
            self.elements(before, after, before.len());
            return;
        }
        let prefix = before.iter().zip(after).take_while(|(b, a)| b == a).count();
        let suffix =
            before[prefix..].iter().rev().zip(after[prefix..].iter().rev()).take_while(|(b, a)| b == a).count();
        let shorter = before.len().min(after.len());
        if prefix + suffix == shorter {
            let remove = before.len() - prefix - suffix;
            if prefix == 0 && remove == before.len() {
                self.set(whole);
            } else {
                let path = self.here();
                let items = after[prefix..after.len() - suffix].to_vec();
                self.out.push(Op::Splice { path, index: prefix as u64, remove: remove as u64, items });
            }
            return;
        }
        // Movement combined with edits has no unique alignment: compare the retained
        // positions, then express the change of length at the tail (as Chord does).
        self.elements(before, after, shorter);
        let path = self.here();
        if after.len() > before.len() {
            let items = after[before.len()..].to_vec();
            self.out.push(Op::Splice { path, index: before.len() as u64, remove: 0, items });
        } else {
            let remove = (before.len() - after.len()) as u64;
            self.out.push(Op::Splice { path, index: after.len() as u64, remove, items: Vec::new() });
        }
    }

    fn elements(&mut self, before: &'a [Value], after: &'a [Value], count: usize) {
        for (i, (b, a)) in before[..count].iter().zip(&after[..count]).enumerate() {
            self.path.push(Seg::Index(i as u64));
            self.value(b, a);
            self.path.pop();
        }
    }
}

/// Candidates a probe may try before giving up (Chord's `maxCandidates`).
const MAX_CANDIDATES: usize = 8;
/// The long probe's length in UTF-16 code units (Chord's `probe`).
const PROBE: usize = 64;

/// The head of `b` a probe of `units` UTF-16 code units looks for: the bytes of its whole
/// characters, and the high surrogate it ends with when `units` ends inside a character.
fn head(b: &str, units: usize) -> (&str, Option<u16>) {
    match utf16::byte_offset(b, units as u64) {
        Ok(end) => (&b[..end], None),
        Err(()) => {
            let end = utf16::byte_offset(b, units as u64 - 1).unwrap_or(0);
            let split = b[end..].chars().next().and_then(utf16::high_surrogate);
            (&b[..end], split)
        }
    }
}

/// Chord's `overlap`: the longest suffix of `a` (within its last `scan` UTF-16 units) that is
/// a prefix of `b`, found by probing with a long head then a one-unit head, trying at most
/// [`MAX_CANDIDATES`] positions per probe. `Some((units, bytes))` of the shared part.
///
/// This searches UTF-8 bytes yet visits exactly the candidates JavaScript's `indexOf` visits
/// on UTF-16 units, a head that ends inside a character matching any character with the same
/// high surrogate, so that it gives up where Chord gives up.
fn overlap(a: &str, b: &str, scan: usize) -> Option<(usize, usize)> {
    if a.is_empty() || b.is_empty() || scan == 0 {
        return None;
    }
    let a_units = utf16::len(a);
    let tail = if a_units > scan { &a[utf16::byte_offset_ceil(a, a_units - scan)..] } else { a };
    let long = utf16::len_capped(b, PROBE);
    for units in [long, 1] {
        let (head_bytes, split) = head(b, units);
        let mut tried = 0;
        let mut from = 0;
        while from <= tail.len() {
            let Some(found) = tail[from..].find(head_bytes).map(|k| from + k) else { break };
            let next_char = tail[found + head_bytes.len()..].chars().next();
            let matches = match split {
                None => true,
                Some(high) => next_char.and_then(utf16::high_surrogate) == Some(high),
            };
            if matches {
                tried += 1;
                if tried > MAX_CANDIDATES {
                    break;
                }
                let rest = &tail[found..];
                if b.as_bytes().starts_with(rest.as_bytes()) {
                    return Some((utf16::len(rest), rest.len()));
                }
            }
            // JavaScript resumes one unit on; every match begins a character.
            match tail[found..].chars().next() {
                Some(c) => from = found + c.len_utf8(),
                None => break,
            }
        }
        if units == 1 {
            break;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::overlap;

    #[test]
    fn overlap_finds_the_longest_window() {
        assert_eq!(overlap("abcdef", "defgh", 100), Some((3, 3)));
        assert_eq!(overlap("abc", "xyz", 100), None);
        assert_eq!(overlap("", "x", 100), None);
        assert_eq!(overlap("abc", "c", 0), None);
        assert_eq!(overlap("x😀", "😀y", 100), Some((2, 4)));
        // A window limited to the last two units cannot see "bc" begin at unit 1.
        assert_eq!(overlap("abcd", "bcdx", 2), None);
        assert_eq!(overlap("abcd", "cdx", 2), Some((2, 2)));
    }
}
