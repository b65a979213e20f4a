//! The stateful path codec of one stream: [`Encoder`] (producer side) and [`Decoder`]
//! (consumer side), as Chord's `encoder()` and `decoder()`.

use std::collections::HashMap;

use serde_json::Value;

use super::apply::{apply_edit, Edit, Items, Src};
use super::op::{parse_wire, RefView, WireKind, WireView};
use super::path::{wire_seg, Path, PathView, Seg, WirePath};
use super::{DeltaError, Op, PathRef, WireOp};

/// The producer side of one stream's path codec: turns decoded [`Op`]s into [`WireOp`]s
/// exactly as Chord's `encoder()` does, so that its batches are the ones Chord writes for the
/// same ops.
///
/// - An op on the same path as the op before it in the batch leaves its path out.
/// - A path's first use in the stream is written inline; its second use defines an id
///   (`["#", id, path]`, ids counting from 0) and references it; later uses reference the id.
/// - A complete replacement (`r`) resets the dictionary: a base batch is a recovery point a
///   fresh decoder can start from.
///
/// Use one encoder per stream (per subscriber and state member): a decoder must see exactly
/// the batches of its encoder, from a base on.
///
/// ```
/// use pi_chord::delta::{Encoder, Op, Path};
/// use serde_json::json;
///
/// let value = Path::from_segments(["value".into()]);
/// let mut encoder = Encoder::new();
/// let first = encoder.encode_json([Op::Set { path: value.clone(), value: json!(2) }]);
/// assert_eq!(first, json!([["s", ["value"], 2]]));
/// let second = encoder.encode_json([
///     Op::Set { path: value.clone(), value: json!(5) },
///     Op::Set { path: value, value: json!(6) },
/// ]);
/// assert_eq!(second, json!([["#", 0, ["value"]], ["s", 0, 5], ["s", 6]]));
/// ```
#[derive(Debug, Default, Clone)]
pub struct Encoder {
    /// Every path used since the last reset: `None` once, `Some(id)` from its second use.
    paths: HashMap<Path, Option<u64>>,
    next_id: u64,
}

impl Encoder {
    /// A fresh encoder (empty dictionary).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every path, as a complete replacement does.
    pub fn reset(&mut self) {
        self.paths.clear();
        self.next_id = 0;
    }

    /// The number of paths remembered since the last reset.
    #[must_use]
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// Whether no path is remembered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Encodes one batch, moving the ops' payloads.
    pub fn encode(&mut self, ops: impl IntoIterator<Item = Op>) -> Vec<WireOp> {
        let ops = ops.into_iter();
        let mut out = Vec::with_capacity(ops.size_hint().0);
        // The previous op's path, scoped to this batch.
        let mut previous: Option<Path> = None;
        for op in ops {
            let (path, rest) = match op {
                Op::Replace(v) => {
                    out.push(WireOp::Replace(v));
                    self.reset();
                    previous = None;
                    continue;
                }
                Op::Set { path, value } => (path, Rest::Set(value)),
                Op::Delete { path } => (path, Rest::Delete),
                Op::Append { path, text } => (path, Rest::Append(text)),
                Op::Truncate { path, count } => (path, Rest::Truncate(count)),
                Op::Splice { path, index, remove, items } => (path, Rest::Splice(index, remove, items)),
            };
            if previous.as_ref() == Some(&path) {
                out.push(rest.with(None));
                continue;
            }
            let reference = match self.paths.get_mut(&path) {
                Some(Some(id)) => PathRef::Id(*id),
                Some(slot @ None) => {
                    let id = self.next_id;
                    self.next_id += 1;
                    *slot = Some(id);
                    out.push(WireOp::Define { id, path: path.clone() });
                    PathRef::Id(id)
                }
                None => {
                    self.paths.insert(path.clone(), None);
                    PathRef::Inline(path.clone())
                }
            };
            out.push(rest.with(Some(reference)));
            previous = Some(path);
        }
        out
    }

    /// Encodes one batch into the JSON array a payload carries.
    pub fn encode_json(&mut self, ops: impl IntoIterator<Item = Op>) -> Value {
        Value::Array(self.encode(ops).into_iter().map(WireOp::into_json).collect())
    }
}

enum Rest {
    Set(Value),
    Delete,
    Append(String),
    Truncate(u64),
    Splice(u64, u64, Vec<Value>),
}

impl Rest {
    fn with(self, path: Option<PathRef>) -> WireOp {
        match self {
            Rest::Set(value) => WireOp::Set { path, value },
            Rest::Delete => WireOp::Delete { path },
            Rest::Append(text) => WireOp::Append { path, text },
            Rest::Truncate(count) => WireOp::Truncate { path, count },
            Rest::Splice(index, remove, items) => WireOp::Splice { path, index, remove, items },
        }
    }
}

/// The consumer side of one stream's path codec: reads any batch Chord's encoder writes (and
/// refuses what Chord's decoder refuses), restoring complete paths.
///
/// It remembers the `#` definitions of its stream until a complete replacement (`r`) clears
/// them; the short forms reuse the previous op's path within one batch only. Besides
/// [`decode`](Self::decode) to [`Op`]s it decodes and applies in one pass
/// ([`decode_apply`](Self::decode_apply)), borrowing paths from the batch instead of building
/// them, which is what a [`StateReplica`](super::StateReplica) does.
///
/// ```
/// use pi_chord::delta::Decoder;
/// use serde_json::json;
///
/// let mut decoder = Decoder::new();
/// let mut value = json!(null);
/// decoder.decode_apply(&mut value, &json!([["r", {"value": 0, "log": ""}]]))?;
/// decoder.decode_apply(&mut value, &json!([["s", ["value"], 2], ["a", ["log"], "+2"]]))?;
/// decoder.decode_apply(&mut value, &json!([["#", 0, ["value"]], ["s", 0, 5], ["#", 1, ["log"]], ["a", 1, "+3"]]))?;
/// decoder.decode_apply(&mut value, &json!([["s", 0, 9], ["a", 1, "+4"]]))?;
/// assert_eq!(value, json!({"value": 9, "log": "+2+3+4"}));
/// # Ok::<(), pi_chord::delta::DeltaError>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct Decoder {
    table: PathTable,
}

/// Path ids: dense from 0 as every encoder assigns them, a map for any other id a peer sends.
#[derive(Debug, Default, Clone)]
struct PathTable {
    dense: Vec<Option<Path>>,
    sparse: HashMap<u64, Path>,
}

impl PathTable {
    fn clear(&mut self) {
        self.dense.clear();
        self.sparse.clear();
    }

    fn get(&self, id: u64) -> Option<&Path> {
        match usize::try_from(id) {
            Ok(i) if i < self.dense.len() => self.dense[i].as_ref(),
            _ => self.sparse.get(&id),
        }
    }

    fn set(&mut self, id: u64, path: Path) {
        match usize::try_from(id) {
            Ok(i) if i < self.dense.len() => self.dense[i] = Some(path),
            Ok(i) if i == self.dense.len() => {
                self.sparse.remove(&id);
                self.dense.push(Some(path));
                // Adopt any ids defined out of order that now follow on densely.
                while let Some(next) = self.sparse.remove(&(self.dense.len() as u64)) {
                    self.dense.push(Some(next));
                }
            }
            _ => {
                self.sparse.insert(id, path);
            }
        }
    }
}

/// A resolved path: borrowed from the batch, or an interned definition.
#[derive(Clone)]
enum Resolved<'w> {
    Inline(&'w [Value]),
    Interned(Path),
}

impl PathView for Resolved<'_> {
    fn len(&self) -> usize {
        match self {
            Resolved::Inline(items) => items.len(),
            Resolved::Interned(p) => p.len(),
        }
    }
    fn seg(&self, i: usize) -> Seg<'_> {
        match self {
            Resolved::Inline(items) => wire_seg(&items[i]),
            Resolved::Interned(p) => p.seg(i),
        }
    }
}

impl Resolved<'_> {
    fn to_path(&self) -> Path {
        match self {
            Resolved::Inline(items) => Path::from_view(&WirePath(items)),
            Resolved::Interned(p) => p.clone(),
        }
    }
}

/// What a decoded op does: applied to a value, or collected as an [`Op`].
trait Sink<'w> {
    /// Before each decoded op (not `#`), with the op's verb: `Err` stops the batch.
    fn replace(&mut self, index: usize, value: &'w Value) -> Result<(), DeltaError>;
    fn edit(&mut self, index: usize, path: &Resolved<'w>, kind: WireKind<'w>) -> Result<(), DeltaError>;
}

struct ApplySink<'t> {
    target: &'t mut Value,
}

impl<'w> Sink<'w> for ApplySink<'_> {
    fn replace(&mut self, _index: usize, value: &'w Value) -> Result<(), DeltaError> {
        self.target.clone_from(value);
        Ok(())
    }

    fn edit(&mut self, index: usize, path: &Resolved<'w>, kind: WireKind<'w>) -> Result<(), DeltaError> {
        let edit = match kind {
            WireKind::Set(v) => Edit::Set(Src::Borrowed(v)),
            WireKind::Delete => Edit::Delete,
            WireKind::Append(text) => Edit::Append(text),
            WireKind::Truncate(count) => Edit::Truncate(count),
            WireKind::Splice(at, remove, items) => Edit::Splice { index: at, remove, items: Items::Borrowed(items) },
            WireKind::Replace(_) | WireKind::Define(..) => return Ok(()),
        };
        apply_edit(self.target, path, edit).map_err(|f| f.at(index, path))
    }
}

/// Applies payloads moved out of an owned batch beforehand (see [`take_payloads`]).
struct OwnedApplySink<'t> {
    target: &'t mut Value,
    taken: Vec<Option<Value>>,
}

impl<'w> Sink<'w> for OwnedApplySink<'_> {
    fn replace(&mut self, index: usize, value: &'w Value) -> Result<(), DeltaError> {
        match self.taken[index].take() {
            Some(v) => *self.target = v,
            None => self.target.clone_from(value),
        }
        Ok(())
    }

    fn edit(&mut self, index: usize, path: &Resolved<'w>, kind: WireKind<'w>) -> Result<(), DeltaError> {
        let taken = self.taken[index].take();
        let edit = match kind {
            WireKind::Set(v) => Edit::Set(taken.map_or(Src::Borrowed(v), Src::Owned)),
            WireKind::Delete => Edit::Delete,
            WireKind::Append(text) => Edit::Append(text),
            WireKind::Truncate(count) => Edit::Truncate(count),
            WireKind::Splice(at, remove, items) => {
                let items = match taken {
                    Some(Value::Array(owned)) => Items::Owned(owned),
                    _ => Items::Borrowed(items),
                };
                Edit::Splice { index: at, remove, items }
            }
            WireKind::Replace(_) | WireKind::Define(..) => return Ok(()),
        };
        apply_edit(self.target, path, edit).map_err(|f| f.at(index, path))
    }
}

/// Moves the payload of every op that has one out of the batch (a replacement's or a set's
/// value, a splice's items), leaving a placeholder of the same kind so that every tuple still
/// checks exactly as it did (a set's and a replacement's value are not checked; a splice's
/// items must be an array, and the placeholder is one).
fn take_payloads(batch: &mut [Value]) -> Vec<Option<Value>> {
    batch
        .iter_mut()
        .map(|op| {
            let Value::Array(t) = op else { return None };
            let (verb, len) = (t.first().and_then(Value::as_str), t.len());
            match (verb, len) {
                (Some("r"), 2) | (Some("s"), 2 | 3) => t.last_mut().map(std::mem::take),
                (Some("p"), 4 | 5) => match t.last_mut() {
                    Some(items @ Value::Array(_)) => Some(std::mem::replace(items, Value::Array(Vec::new()))),
                    _ => None,
                },
                _ => None,
            }
        })
        .collect()
}

struct CollectSink {
    ops: Vec<Op>,
}

impl<'w> Sink<'w> for CollectSink {
    fn replace(&mut self, _index: usize, value: &'w Value) -> Result<(), DeltaError> {
        self.ops.push(Op::Replace(value.clone()));
        Ok(())
    }

    fn edit(&mut self, _index: usize, path: &Resolved<'w>, kind: WireKind<'w>) -> Result<(), DeltaError> {
        let path = path.to_path();
        self.ops.push(match kind {
            WireKind::Set(v) => Op::Set { path, value: v.clone() },
            WireKind::Delete => Op::Delete { path },
            WireKind::Append(text) => Op::Append { path, text: text.to_owned() },
            WireKind::Truncate(count) => Op::Truncate { path, count },
            WireKind::Splice(index, remove, items) => Op::Splice { path, index, remove, items: items.to_vec() },
            WireKind::Replace(_) | WireKind::Define(..) => return Ok(()),
        });
        Ok(())
    }
}

impl Decoder {
    /// A fresh decoder (no path ids).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every path id, as a complete replacement does.
    pub fn reset(&mut self) {
        self.table.clear();
    }

    /// Decodes one wire batch (a JSON array of [`WireOp`] tuples) into [`Op`]s with complete
    /// paths, checking each tuple as Chord's decoder does.
    ///
    /// # Errors
    /// [`DeltaError`] for the first refused tuple, an unknown path id, or a short form with no
    /// previous path. The definitions read before it stay defined (the stream is over anyway).
    pub fn decode(&mut self, wire: &Value) -> Result<Vec<Op>, DeltaError> {
        let batch = wire.as_array().ok_or(DeltaError::NotABatch)?;
        let mut sink = CollectSink { ops: Vec::with_capacity(batch.len()) };
        self.run(batch, &mut sink, false)?;
        Ok(sink.ops)
    }

    /// Decodes one wire batch and applies it to `target` in the same pass, without building
    /// decoded ops (paths are borrowed from the batch; payloads are cloned into `target`).
    ///
    /// # Errors
    /// As [`decode`](Self::decode) and [`apply`](super::apply). Not transactional: the ops
    /// before the failing one have been applied.
    pub fn decode_apply(&mut self, target: &mut Value, wire: &Value) -> Result<(), DeltaError> {
        let batch = wire.as_array().ok_or(DeltaError::NotABatch)?;
        self.run(batch, &mut ApplySink { target }, false)
    }

    /// As [`decode_apply`](Self::decode_apply), taking the batch by value: payloads (values set
    /// or replaced, items spliced in) are moved into `target` instead of copied. What to use
    /// when the batch was decoded from a payload just for this.
    ///
    /// # Errors
    /// As [`decode_apply`](Self::decode_apply).
    pub fn decode_apply_owned(&mut self, target: &mut Value, wire: Value) -> Result<(), DeltaError> {
        self.apply_owned(target, wire, false)
    }

    pub(crate) fn apply_owned(
        &mut self,
        target: &mut Value,
        mut wire: Value,
        require_base: bool,
    ) -> Result<(), DeltaError> {
        let Value::Array(batch) = &mut wire else { return Err(DeltaError::NotABatch) };
        let taken = take_payloads(batch);
        self.run(batch, &mut OwnedApplySink { target, taken }, require_base)
    }

    /// As [`decode_apply`](Self::decode_apply), refusing a batch whose first decoded op is not
    /// a complete replacement.
    pub(crate) fn decode_apply_base(&mut self, target: &mut Value, wire: &Value) -> Result<(), DeltaError> {
        let batch = wire.as_array().ok_or(DeltaError::NotABatch)?;
        self.run(batch, &mut ApplySink { target }, true)
    }

    fn run<'w, S: Sink<'w>>(&mut self, batch: &'w [Value], sink: &mut S, require_base: bool) -> Result<(), DeltaError> {
        let mut previous: Option<Resolved<'w>> = None;
        let mut first = require_base;
        for (index, op) in batch.iter().enumerate() {
            let WireView { kind, path } = parse_wire(op, index)?;
            if let WireKind::Define(id, items) = kind {
                self.table.set(id, Path::from_view(&WirePath(items)));
                continue;
            }
            if std::mem::take(&mut first) && !matches!(kind, WireKind::Replace(_)) {
                return Err(DeltaError::NotABase);
            }
            if let WireKind::Replace(value) = kind {
                self.table.clear();
                previous = None;
                sink.replace(index, value)?;
                continue;
            }
            // The op's path becomes the previous one and is used from there: an interned path
            // is shared once per op that names it, never for a short form.
            if let Some(reference) = path {
                previous = Some(match reference {
                    RefView::Inline(items) => Resolved::Inline(items),
                    RefView::Id(id) => {
                        Resolved::Interned(self.table.get(id).cloned().ok_or(DeltaError::UnknownPathId { index, id })?)
                    }
                });
            }
            let resolved = previous.as_ref().ok_or(DeltaError::NoPreviousPath { index })?;
            if resolved.len() == 0 {
                let verb = match kind {
                    WireKind::Set(_) => 's',
                    WireKind::Delete => 'd',
                    WireKind::Append(_) => 'a',
                    WireKind::Truncate(_) => 't',
                    _ => 'p',
                };
                if verb != 'p' {
                    return Err(DeltaError::RootPath { index, verb });
                }
            }
            sink.edit(index, resolved, kind)?;
        }
        if first {
            return Err(DeltaError::NotABase);
        }
        Ok(())
    }
}
