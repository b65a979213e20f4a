//! Applying ops to a `serde_json::Value` in place, as strictly as Chord's `apply`.

use serde_json::Value;

use super::path::{excerpt, PathView, Seg};
use super::utf16;
use super::{DeltaError, Op};

/// A value an edit writes: moved in from an owned op, or cloned from a borrowed wire batch.
pub(crate) enum Src<'a> {
    Owned(Value),
    Borrowed(&'a Value),
}

impl Src<'_> {
    fn into_value(self) -> Value {
        match self {
            Src::Owned(v) => v,
            Src::Borrowed(v) => v.clone(),
        }
    }
}

/// The items a splice inserts.
pub(crate) enum Items<'a> {
    Owned(Vec<Value>),
    Borrowed(&'a [Value]),
}

/// One path-addressed edit (every op but `r`).
pub(crate) enum Edit<'a> {
    Set(Src<'a>),
    Delete,
    Append(&'a str),
    Truncate(u64),
    Splice { index: u64, remove: u64, items: Items<'a> },
}

/// Why an edit failed, before the op index and path are attached.
pub(crate) enum Fault {
    Unresolvable,
    UnsafeKey(String),
    OutOfRange(u64),
    SplitsSurrogatePair(u64),
}

impl Fault {
    pub(crate) fn at<P: PathView + ?Sized>(self, index: usize, path: &P) -> DeltaError {
        match self {
            Fault::Unresolvable => DeltaError::UnresolvablePath { index, path: excerpt(path) },
            Fault::UnsafeKey(segment) => DeltaError::UnsafeSegment { index, path: excerpt(path), segment },
            Fault::OutOfRange(position) => DeltaError::IndexOutOfRange { index, path: excerpt(path), position },
            Fault::SplitsSurrogatePair(count) => DeltaError::SplitsSurrogatePair { index, path: excerpt(path), count },
        }
    }
}

fn quoted_key(k: &str) -> String {
    super::path::excerpt_value(&Value::String(k.to_owned()))
}

/// Walks the first `upto` segments of `path` from `node`, through own keys and existing
/// elements only (Chord's `resolveValue`).
fn walk<'v, P: PathView + ?Sized>(mut node: &'v mut Value, path: &P, upto: usize) -> Result<&'v mut Value, Fault> {
    for i in 0..upto {
        let seg = path.seg(i);
        node = match node {
            Value::Object(map) => map.get_mut(seg.object_key().as_ref()).ok_or(Fault::Unresolvable)?,
            Value::Array(items) => match seg {
                Seg::Index(n) => usize::try_from(n).ok().and_then(|n| items.get_mut(n)).ok_or(Fault::Unresolvable)?,
                Seg::Key(k) => return Err(Fault::UnsafeKey(quoted_key(k))),
            },
            _ => return Err(Fault::Unresolvable),
        };
    }
    Ok(node)
}

/// Applies one edit at `path` (non-empty unless the edit is a splice).
pub(crate) fn apply_edit<P: PathView + ?Sized>(root: &mut Value, path: &P, edit: Edit<'_>) -> Result<(), Fault> {
    if let Edit::Splice { index, remove, items } = edit {
        let Value::Array(target) = walk(root, path, path.len())? else {
            return Err(Fault::Unresolvable);
        };
        // JavaScript's splice clamps the start to the length and the count to what remains.
        let len = target.len();
        let start = usize::try_from(index).unwrap_or(usize::MAX).min(len);
        let end = start + usize::try_from(remove).unwrap_or(usize::MAX).min(len - start);
        // One element in or out (what a producer writes for most list edits) is a single
        // `insert` or `remove`: one move of the tail, without `splice`'s drain machinery.
        match (items, end - start) {
            (Items::Owned(mut items), 0) if items.len() == 1 => target.insert(start, items.pop().expect("one item")),
            (Items::Borrowed([item]), 0) => target.insert(start, item.clone()),
            (Items::Owned(items), 1) if items.is_empty() => drop(target.remove(start)),
            (Items::Borrowed([]), 1) => drop(target.remove(start)),
            (Items::Owned(items), _) => drop(target.splice(start..end, items)),
            (Items::Borrowed(items), _) => drop(target.splice(start..end, items.iter().cloned())),
        }
        return Ok(());
    }
    let last = path.len() - 1;
    let parent = walk(root, path, last)?;
    let key = path.seg(last);
    match parent {
        Value::Array(items) => {
            let n = match key {
                Seg::Index(n) => n,
                Seg::Key(k) => return Err(Fault::UnsafeKey(quoted_key(k))),
            };
            let len = items.len();
            let position = usize::try_from(n).ok().filter(|&p| p <= len).ok_or(Fault::OutOfRange(n))?;
            match edit {
                Edit::Set(value) => {
                    let value = value.into_value();
                    if position == len {
                        items.push(value);
                    } else {
                        items[position] = value;
                    }
                }
                Edit::Delete => {
                    if position == len {
                        return Err(Fault::Unresolvable);
                    }
                    items.remove(position);
                }
                Edit::Append(text) => match items.get_mut(position) {
                    Some(Value::String(s)) => s.push_str(text),
                    _ => return Err(Fault::Unresolvable),
                },
                Edit::Truncate(count) => match items.get_mut(position) {
                    Some(Value::String(s)) => truncate_front(s, count)?,
                    _ => return Err(Fault::Unresolvable),
                },
                Edit::Splice { .. } => return Err(Fault::Unresolvable),
            }
        }
        Value::Object(map) => {
            let key = key.object_key();
            match edit {
                Edit::Set(value) => {
                    let value = value.into_value();
                    match map.get_mut(key.as_ref()) {
                        Some(slot) => *slot = value,
                        None => {
                            map.insert(key.into_owned(), value);
                        }
                    }
                }
                Edit::Delete => {
                    // Deleting an absent key is no error, as in JavaScript. (Key order is not
                    // replicated, so the order `remove` leaves under `preserve_order` is fine.)
                    map.remove(key.as_ref());
                }
                Edit::Append(text) => match map.get_mut(key.as_ref()) {
                    Some(Value::String(s)) => s.push_str(text),
                    _ => return Err(Fault::Unresolvable),
                },
                Edit::Truncate(count) => match map.get_mut(key.as_ref()) {
                    Some(Value::String(s)) => truncate_front(s, count)?,
                    _ => return Err(Fault::Unresolvable),
                },
                Edit::Splice { .. } => return Err(Fault::Unresolvable),
            }
        }
        _ => return Err(Fault::Unresolvable),
    }
    Ok(())
}

/// Removes the first `count` UTF-16 code units (JavaScript's `s.slice(count)`).
fn truncate_front(s: &mut String, count: u64) -> Result<(), Fault> {
    let end = utf16::byte_offset(s, count).map_err(|()| Fault::SplitsSurrogatePair(count))?;
    if end == s.len() {
        s.clear();
    } else {
        s.drain(..end);
    }
    Ok(())
}

/// Applies decoded ops to `target` in order, as Chord's `apply` does.
///
/// An `r` replaces `target` outright; every other op edits it in place, moving its payload in
/// (nothing is copied but the appended text). The ops are checked as Chord checks untrusted
/// ops: a path must resolve through existing keys and elements, an array index may address
/// an element or the position just past the last one, `a` and `t` need a string, `p` an array.
/// A splice clamps its start and count as JavaScript's `splice` does, and `t` counts UTF-16
/// code units (a count past the end empties the string).
///
/// # Errors
/// [`DeltaError`] for the first op that cannot be applied, with its index. Application is not
/// transactional: the ops before it have been applied.
///
/// # Examples
/// ```
/// use pi_chord::delta::{apply, Op, Path};
/// use serde_json::json;
///
/// let mut value = json!({"log": "ab"});
/// let log = Path::from_segments(["log".into()]);
/// apply(&mut value, [
///     Op::Truncate { path: log.clone(), count: 1 },
///     Op::Append { path: log, text: "c😀".into() },
/// ])?;
/// assert_eq!(value, json!({"log": "bc😀"}));
/// # Ok::<(), pi_chord::delta::DeltaError>(())
/// ```
pub fn apply(target: &mut Value, ops: impl IntoIterator<Item = Op>) -> Result<(), DeltaError> {
    for (index, op) in ops.into_iter().enumerate() {
        apply_op(target, index, op)?;
    }
    Ok(())
}

pub(crate) fn apply_op(target: &mut Value, index: usize, op: Op) -> Result<(), DeltaError> {
    if let Some(path) = op.path() {
        check_safe(index, path)?;
    }
    let (path, edit) = match op {
        Op::Replace(value) => {
            *target = value;
            return Ok(());
        }
        Op::Set { path, value } => (path, Edit::Set(Src::Owned(value))),
        Op::Delete { path } => (path, Edit::Delete),
        Op::Append { path, text } => {
            check_not_root(index, &path, 'a')?;
            return apply_edit(target, &path, Edit::Append(&text)).map_err(|f| f.at(index, &path));
        }
        Op::Truncate { path, count } => (path, Edit::Truncate(count)),
        Op::Splice { path, index: at, remove, items } => {
            (path, Edit::Splice { index: at, remove, items: Items::Owned(items) })
        }
    };
    if !matches!(edit, Edit::Splice { .. }) {
        let verb = match edit {
            Edit::Set(_) => 's',
            Edit::Delete => 'd',
            _ => 't',
        };
        check_not_root(index, &path, verb)?;
    }
    apply_edit(target, &path, edit).map_err(|f| f.at(index, &path))
}

/// Chord's `assertSafePath` for a path built in Rust (a wire path is checked as it is read).
fn check_safe(index: usize, path: &super::Path) -> Result<(), DeltaError> {
    for segment in path.segments() {
        if let super::PathSegment::Key(k) = segment {
            if super::is_reserved_segment(k) {
                return Err(DeltaError::UnsafeSegment { index, path: excerpt(path), segment: quoted_key(k) });
            }
        }
    }
    Ok(())
}

fn check_not_root(index: usize, path: &super::Path, verb: char) -> Result<(), DeltaError> {
    if path.is_empty() {
        Err(DeltaError::RootPath { index, verb })
    } else {
        Ok(())
    }
}
