//! The two vocabularies: decoded [`Op`]s (complete paths) and [`WireOp`]s (what crosses a
//! boundary: path ids, references and short forms).

use serde_json::Value;

use super::path::{check_wire_path, excerpt_value, excerpt_values, js_path_id, js_uint, path_id_json, Path};
use super::DeltaError;

/// One decoded operation on a value: Chord's `Op` tuple, with its complete path.
///
/// | Variant | Wire tuple | Meaning |
/// | --- | --- | --- |
/// | [`Replace`](Op::Replace) | `["r", value]` | replace the complete value |
/// | [`Set`](Op::Set) | `["s", path, value]` | set an object key or an array element (one past the end appends) |
/// | [`Delete`](Op::Delete) | `["d", path]` | delete an object key (absent: no-op) or remove an array element |
/// | [`Append`](Op::Append) | `["a", path, text]` | append to a string |
/// | [`Truncate`](Op::Truncate) | `["t", path, count]` | remove `count` UTF-16 code units from a string's front |
/// | [`Splice`](Op::Splice) | `["p", path, index, remove, items]` | splice an array |
///
/// `s`, `d`, `a` and `t` never address the root; `p` may (a root array). Decoded ops are what
/// [`apply`](super::apply) takes and what [`diff`](super::diff) produces; the wire carries
/// [`WireOp`]s, written by an [`Encoder`](super::Encoder) and read by a
/// [`Decoder`](super::Decoder).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Op {
    /// `["r", value]`: the complete value. Also resets both ends' path dictionaries.
    Replace(Value),
    /// `["s", path, value]`.
    Set {
        /// The key or element to set (not the root).
        path: Path,
        /// The new value.
        value: Value,
    },
    /// `["d", path]`.
    Delete {
        /// The key or element to delete (not the root).
        path: Path,
    },
    /// `["a", path, text]`.
    Append {
        /// The string to append to (not the root).
        path: Path,
        /// The text appended.
        text: String,
    },
    /// `["t", path, count]`.
    Truncate {
        /// The string to truncate (not the root).
        path: Path,
        /// How many UTF-16 code units to remove from the front (all, if it has fewer).
        count: u64,
    },
    /// `["p", path, index, remove, items]`: JavaScript's `array.splice(index, remove, ...items)`.
    Splice {
        /// The array (the root allowed).
        path: Path,
        /// Where to start (clamped to the length).
        index: u64,
        /// How many elements to remove (clamped to what follows `index`).
        remove: u64,
        /// The elements inserted at `index`.
        items: Vec<Value>,
    },
}

impl Op {
    /// The op's one-letter verb.
    #[must_use]
    pub fn verb(&self) -> char {
        match self {
            Op::Replace(_) => 'r',
            Op::Set { .. } => 's',
            Op::Delete { .. } => 'd',
            Op::Append { .. } => 'a',
            Op::Truncate { .. } => 't',
            Op::Splice { .. } => 'p',
        }
    }

    /// The op's path (`None` for a replacement).
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        match self {
            Op::Replace(_) => None,
            Op::Set { path, .. }
            | Op::Delete { path }
            | Op::Append { path, .. }
            | Op::Truncate { path, .. }
            | Op::Splice { path, .. } => Some(path),
        }
    }

    /// The decoded tuple as JSON (`["s", ["a"], 1]`).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let path = |p: &Path| p.to_json();
        Value::Array(match self {
            Op::Replace(v) => vec![verb("r"), v.clone()],
            Op::Set { path: p, value } => vec![verb("s"), path(p), value.clone()],
            Op::Delete { path: p } => vec![verb("d"), path(p)],
            Op::Append { path: p, text } => vec![verb("a"), path(p), Value::String(text.clone())],
            Op::Truncate { path: p, count } => vec![verb("t"), path(p), Value::from(*count)],
            Op::Splice { path: p, index, remove, items } => {
                vec![verb("p"), path(p), Value::from(*index), Value::from(*remove), Value::Array(items.clone())]
            }
        })
    }

    /// Reads one decoded tuple, as strictly as Chord's `assertValidOp`: exact arity, inline
    /// safe paths (non-empty but for `p`), a string under `a`, non-negative integers as counts
    /// and indices, an array of items under `p`. `index` is the op's position, for the error.
    ///
    /// # Errors
    /// [`DeltaError::Malformed`], [`DeltaError::UnknownVerb`] or [`DeltaError::UnsafeSegment`].
    pub fn from_json(op: &Value, index: usize) -> Result<Op, DeltaError> {
        let t = tuple(op, index)?;
        let malformed = |reason| DeltaError::Malformed { index, reason };
        let path_at = |v: &Value, non_empty: bool| -> Result<Path, DeltaError> {
            let items = v.as_array().ok_or(malformed("path is not an array"))?;
            if non_empty && items.is_empty() {
                return Err(malformed("path is empty"));
            }
            inline_path(items, index)
        };
        Ok(match verb_of(t, index)? {
            'r' => {
                arity(t.len() == 2, index, "r arity")?;
                Op::Replace(t[1].clone())
            }
            's' => {
                arity(t.len() == 3, index, "s arity")?;
                Op::Set { path: path_at(&t[1], true)?, value: t[2].clone() }
            }
            'd' => {
                arity(t.len() == 2, index, "d arity")?;
                Op::Delete { path: path_at(&t[1], true)? }
            }
            'a' => {
                let text = t.get(2).and_then(Value::as_str).filter(|_| t.len() == 3).ok_or(malformed("a shape"))?;
                Op::Append { path: path_at(&t[1], true)?, text: text.to_owned() }
            }
            't' => {
                let count = t.get(2).and_then(js_uint).filter(|_| t.len() == 3).ok_or(malformed("t shape"))?;
                Op::Truncate { path: path_at(&t[1], true)?, count }
            }
            'p' => {
                arity(t.len() == 5, index, "p arity")?;
                let path = path_at(&t[1], false)?;
                let (at, remove, items) = splice_args(&t[2..], index)?;
                Op::Splice { path, index: at, remove, items: items.to_vec() }
            }
            _ => return Err(unknown_verb(&t[0], index)),
        })
    }
}

/// A path on the wire: inline, or a numeric id a `#` of the same stream defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRef {
    /// The complete path, written out.
    Inline(Path),
    /// An id defined by an earlier `["#", id, path]` of the stream. Ids below 2^53 (all an
    /// encoder writes) are themselves; a larger one is held as the bit pattern of the double
    /// JavaScript reads it as, so that ids are told apart exactly as Chord tells them apart.
    Id(u64),
}

impl PathRef {
    /// The reference as it appears on the wire: a path array or an integer.
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            PathRef::Inline(p) => p.to_json(),
            PathRef::Id(id) => path_id_json(*id),
        }
    }
}

/// One encoded operation: Chord's `WireOp`, what a batch carries across a boundary.
///
/// The wire adds two compressions to [`Op`] and nothing else: a path used a second time in a
/// stream gets an id (`["#", id, path]` then the integer in its place), and an op on the same
/// path as the op before it in its batch leaves the path out (`["a", "text"]`), its arity
/// telling the two forms apart. A `path` of `None` below is that short form.
///
/// ```
/// use pi_chord::delta::WireOp;
/// use serde_json::json;
///
/// let op = WireOp::from_json(&json!(["a", 1, "+3"]), 0)?;
/// assert!(matches!(op, WireOp::Append { path: Some(pi_chord::delta::PathRef::Id(1)), .. }));
/// assert_eq!(op.to_json(), json!(["a", 1, "+3"]));
/// # Ok::<(), pi_chord::delta::DeltaError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum WireOp {
    /// `["r", value]`: a complete replacement (it resets the path dictionary).
    Replace(Value),
    /// `["#", id, path]`: defines (or redefines) a path id for the rest of the stream.
    Define {
        /// The id (as in [`PathRef::Id`]).
        id: u64,
        /// The path it stands for (the root allowed, for a root splice).
        path: Path,
    },
    /// `["s", ref, value]`, or `["s", value]` on the previous path.
    Set {
        /// The path, or `None` for the previous op's.
        path: Option<PathRef>,
        /// The new value.
        value: Value,
    },
    /// `["d", ref]`, or `["d"]` on the previous path.
    Delete {
        /// The path, or `None` for the previous op's.
        path: Option<PathRef>,
    },
    /// `["a", ref, text]`, or `["a", text]` on the previous path.
    Append {
        /// The path, or `None` for the previous op's.
        path: Option<PathRef>,
        /// The text appended.
        text: String,
    },
    /// `["t", ref, count]`, or `["t", count]` on the previous path.
    Truncate {
        /// The path, or `None` for the previous op's.
        path: Option<PathRef>,
        /// UTF-16 code units removed from the front.
        count: u64,
    },
    /// `["p", ref, index, remove, items]`, or `["p", index, remove, items]` on the previous path.
    Splice {
        /// The path, or `None` for the previous op's.
        path: Option<PathRef>,
        /// Where to start.
        index: u64,
        /// How many elements to remove.
        remove: u64,
        /// The elements inserted.
        items: Vec<Value>,
    },
}

impl WireOp {
    /// The tuple as JSON.
    #[must_use]
    pub fn to_json(&self) -> Value {
        self.clone().into_json()
    }

    /// The tuple as JSON, moving the payload.
    #[must_use]
    pub fn into_json(self) -> Value {
        fn with(verb_str: &str, path: Option<PathRef>, rest: impl IntoIterator<Item = Value>) -> Value {
            let mut out = vec![verb(verb_str)];
            if let Some(p) = path {
                out.push(p.to_json());
            }
            out.extend(rest);
            Value::Array(out)
        }
        match self {
            WireOp::Replace(v) => Value::Array(vec![verb("r"), v]),
            WireOp::Define { id, path } => Value::Array(vec![verb("#"), path_id_json(id), path.to_json()]),
            WireOp::Set { path, value } => with("s", path, [value]),
            WireOp::Delete { path } => with("d", path, []),
            WireOp::Append { path, text } => with("a", path, [Value::String(text)]),
            WireOp::Truncate { path, count } => with("t", path, [Value::from(count)]),
            WireOp::Splice { path, index, remove, items } => {
                with("p", path, [Value::from(index), Value::from(remove), Value::Array(items)])
            }
        }
    }

    /// Reads one wire tuple, as strictly as Chord's `assertValidWireOp` (`index` is its
    /// position in the batch, for the error). Path ids are not resolved here; a
    /// [`Decoder`](super::Decoder) does that.
    ///
    /// # Errors
    /// [`DeltaError::Malformed`], [`DeltaError::UnknownVerb`] or [`DeltaError::UnsafeSegment`].
    pub fn from_json(op: &Value, index: usize) -> Result<WireOp, DeltaError> {
        let view = parse_wire(op, index)?;
        let path = match view.path {
            None => None,
            Some(RefView::Id(id)) => Some(PathRef::Id(id)),
            Some(RefView::Inline(items)) => Some(PathRef::Inline(inline_path(items, index)?)),
        };
        Ok(match view.kind {
            WireKind::Replace(v) => WireOp::Replace(v.clone()),
            WireKind::Define(id, items) => WireOp::Define { id, path: inline_path(items, index)? },
            WireKind::Set(v) => WireOp::Set { path, value: v.clone() },
            WireKind::Delete => WireOp::Delete { path },
            WireKind::Append(text) => WireOp::Append { path, text: text.to_owned() },
            WireKind::Truncate(count) => WireOp::Truncate { path, count },
            WireKind::Splice(at, remove, items) => WireOp::Splice { path, index: at, remove, items: items.to_vec() },
        })
    }
}

/// Turns a batch of wire ops into the JSON array a payload carries.
#[must_use]
pub fn wire_batch_to_json(ops: Vec<WireOp>) -> Value {
    Value::Array(ops.into_iter().map(WireOp::into_json).collect())
}

fn verb(v: &str) -> Value {
    Value::String(v.to_owned())
}

pub(crate) fn tuple(op: &Value, index: usize) -> Result<&[Value], DeltaError> {
    match op {
        Value::Array(t) if !t.is_empty() => Ok(t),
        _ => Err(DeltaError::Malformed { index, reason: "op is not a tuple" }),
    }
}

fn arity(ok: bool, index: usize, reason: &'static str) -> Result<(), DeltaError> {
    if ok {
        Ok(())
    } else {
        Err(DeltaError::Malformed { index, reason })
    }
}

fn verb_of(t: &[Value], index: usize) -> Result<char, DeltaError> {
    match &t[0] {
        Value::String(s) if s.len() == 1 => Ok(s.as_bytes()[0] as char),
        other => Err(unknown_verb(other, index)),
    }
}

fn unknown_verb(v: &Value, index: usize) -> DeltaError {
    DeltaError::UnknownVerb { index, verb: excerpt_value(v) }
}

fn inline_path(items: &[Value], index: usize) -> Result<Path, DeltaError> {
    check_path(items, index)?;
    Ok(Path::from_view(&super::path::WirePath(items)))
}

pub(crate) fn check_path(items: &[Value], index: usize) -> Result<(), DeltaError> {
    check_wire_path(items).map_err(|position| DeltaError::UnsafeSegment {
        index,
        path: excerpt_values(items),
        segment: excerpt_value(&items[position]),
    })
}

fn splice_args(args: &[Value], index: usize) -> Result<(u64, u64, &[Value]), DeltaError> {
    let malformed = |reason| DeltaError::Malformed { index, reason };
    let at = js_uint(&args[0]).ok_or(malformed("p index"))?;
    let remove = js_uint(&args[1]).ok_or(malformed("p remove"))?;
    let items = args[2].as_array().ok_or(malformed("p items"))?;
    Ok((at, remove, items))
}

/// A wire path reference, borrowed from the batch.
pub(crate) enum RefView<'w> {
    /// Checked safe.
    Inline(&'w [Value]),
    Id(u64),
}

/// A wire op's verb and arguments, borrowed from the batch.
pub(crate) enum WireKind<'w> {
    Replace(&'w Value),
    /// The definition's path items are checked safe.
    Define(u64, &'w [Value]),
    Set(&'w Value),
    Delete,
    Append(&'w str),
    Truncate(u64),
    Splice(u64, u64, &'w [Value]),
}

pub(crate) struct WireView<'w> {
    pub(crate) kind: WireKind<'w>,
    /// `None`: the short form (or an op without a path: `r`, `#`).
    pub(crate) path: Option<RefView<'w>>,
}

fn wire_ref(r: &Value, index: usize) -> Result<RefView<'_>, DeltaError> {
    match r {
        Value::Number(_) => {
            js_path_id(r).map(RefView::Id).ok_or(DeltaError::Malformed { index, reason: "bad path id" })
        }
        Value::Array(items) => {
            check_path(items, index)?;
            Ok(RefView::Inline(items))
        }
        _ => Err(DeltaError::Malformed { index, reason: "path is not an array" }),
    }
}

/// Chord's `assertValidWireOp`, borrowing: verb, arity (telling the short form apart),
/// argument types, and the safety of inline paths.
pub(crate) fn parse_wire(op: &Value, index: usize) -> Result<WireView<'_>, DeltaError> {
    let t = tuple(op, index)?;
    let malformed = |reason| DeltaError::Malformed { index, reason };
    let reference = |r| wire_ref(r, index);
    let verb = verb_of(t, index)?;
    let (kind, path) = match (verb, t.len()) {
        ('r', 2) => (WireKind::Replace(&t[1]), None),
        ('r', _) => return Err(malformed("r arity")),
        ('s', 3) => (WireKind::Set(&t[2]), Some(reference(&t[1])?)),
        ('s', 2) => (WireKind::Set(&t[1]), None),
        ('s', _) => return Err(malformed("s arity")),
        ('d', 2) => (WireKind::Delete, Some(reference(&t[1])?)),
        ('d', 1) => (WireKind::Delete, None),
        ('d', _) => return Err(malformed("d arity")),
        ('a', 3) => {
            let path = reference(&t[1])?;
            (WireKind::Append(t[2].as_str().ok_or(malformed("a value"))?), Some(path))
        }
        ('a', 2) => (WireKind::Append(t[1].as_str().ok_or(malformed("a value"))?), None),
        ('a', _) => return Err(malformed("a arity")),
        ('t', 3) => {
            let path = reference(&t[1])?;
            (WireKind::Truncate(js_uint(&t[2]).ok_or(malformed("t count"))?), Some(path))
        }
        ('t', 2) => (WireKind::Truncate(js_uint(&t[1]).ok_or(malformed("t count"))?), None),
        ('t', _) => return Err(malformed("t arity")),
        ('p', 5) => {
            let path = reference(&t[1])?;
            let (at, remove, items) = splice_args(&t[2..], index)?;
            (WireKind::Splice(at, remove, items), Some(path))
        }
        ('p', 4) => {
            let (at, remove, items) = splice_args(&t[1..], index)?;
            (WireKind::Splice(at, remove, items), None)
        }
        ('p', _) => return Err(malformed("p arity")),
        ('#', 3) => {
            let id = js_path_id(&t[1]).ok_or(malformed("# shape"))?;
            let items = t[2].as_array().ok_or(malformed("# shape"))?;
            check_path(items, index)?;
            (WireKind::Define(id, items), None)
        }
        ('#', _) => return Err(malformed("# shape")),
        _ => return Err(unknown_verb(&t[0], index)),
    };
    Ok(WireView { kind, path })
}
