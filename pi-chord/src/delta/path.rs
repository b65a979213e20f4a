//! Paths: typed segments (object key or array index), the reserved segments, and the borrowed
//! views the codec and the applier walk without copying.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// The object keys no path may contain: Chord's `RESERVED_SEGMENTS`.
///
/// In JavaScript these reach the prototype chain (`parent["__proto__"] = value` pollutes every
/// object of the process), so Chord refuses any path that names one, in every op it reads and
/// every op it writes. A value may still *contain* such keys (a set or a replacement carries
/// them as data); only addressing them by path is refused.
pub const RESERVED_SEGMENTS: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// Whether `key` is one of [`RESERVED_SEGMENTS`].
///
/// ```
/// use pi_chord::delta::is_reserved_segment;
/// assert!(is_reserved_segment("__proto__"));
/// assert!(!is_reserved_segment("proto"));
/// ```
#[must_use]
pub fn is_reserved_segment(key: &str) -> bool {
    RESERVED_SEGMENTS.contains(&key)
}

/// One step of a [`Path`]: an object key or an array index.
///
/// On the wire a key is a JSON string and an index a non-negative integer. An index that meets
/// an object addresses the key JavaScript would spell for that number (`5` addresses `"5"`),
/// as Chord does; a key that meets an array is refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathSegment {
    /// An object key (never one of [`RESERVED_SEGMENTS`] in a path Chord accepts).
    Key(String),
    /// An array index (or, meeting an object, the key of that number).
    Index(u64),
}

impl PathSegment {
    pub(crate) fn view(&self) -> Seg<'_> {
        match self {
            PathSegment::Key(k) => Seg::Key(k),
            PathSegment::Index(i) => Seg::Index(*i),
        }
    }

    /// The segment as it appears on the wire: a JSON string or integer.
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            PathSegment::Key(k) => Value::String(k.clone()),
            PathSegment::Index(i) => Value::from(*i),
        }
    }
}

impl From<&str> for PathSegment {
    fn from(key: &str) -> Self {
        PathSegment::Key(key.to_owned())
    }
}

impl From<String> for PathSegment {
    fn from(key: String) -> Self {
        PathSegment::Key(key)
    }
}

impl From<u64> for PathSegment {
    fn from(index: u64) -> Self {
        PathSegment::Index(index)
    }
}

impl From<usize> for PathSegment {
    fn from(index: usize) -> Self {
        PathSegment::Index(index as u64)
    }
}

/// A complete path from the root of a value: a shared, immutable list of [`PathSegment`]s.
///
/// Cloning a path is cheap (a reference count), which is what lets the codec intern paths and
/// the decoder hand the same path to several ops. The empty path is the root; only a splice
/// may address it ([`Op`](super::Op)).
///
/// ```
/// use pi_chord::delta::{Path, PathSegment};
/// let path = Path::from_segments(["messages".into(), PathSegment::Index(3), "text".into()]);
/// assert_eq!(path.to_json(), serde_json::json!(["messages", 3, "text"]));
/// assert_eq!(path.to_string(), r#"["messages",3,"text"]"#);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Path(Arc<[PathSegment]>);

impl Path {
    /// The root (the empty path).
    #[must_use]
    pub fn root() -> Self {
        Path(Arc::from(Vec::new()))
    }

    /// A path of these segments, in order from the root.
    pub fn from_segments(segments: impl IntoIterator<Item = PathSegment>) -> Self {
        Path(segments.into_iter().collect())
    }

    /// The segments, in order from the root.
    #[must_use]
    pub fn segments(&self) -> &[PathSegment] {
        &self.0
    }

    /// The number of segments (0 for the root).
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether this is the root.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The path as it appears on the wire: a JSON array of strings and integers.
    #[must_use]
    pub fn to_json(&self) -> Value {
        Value::Array(self.0.iter().map(PathSegment::to_json).collect())
    }

    /// Reads a wire path, refusing what Chord's `assertSafePath` refuses: a reserved key, a
    /// number that is not a non-negative integer, any other JSON type. Numbers past 2^64 are
    /// refused too (Chord would address an object key such as `"1e+300"` with them).
    ///
    /// # Errors
    /// [`PathFault`] with the position of the first refused segment.
    pub fn from_json(value: &Value) -> Result<Self, PathFault> {
        let items = value.as_array().ok_or(PathFault::NotAnArray)?;
        let mut out = Vec::with_capacity(items.len());
        for (position, item) in items.iter().enumerate() {
            let segment = segment(item).map_err(|_| PathFault::Segment { position })?;
            out.push(segment.to_segment());
        }
        Ok(Path(Arc::from(out)))
    }

    pub(crate) fn from_view<P: PathView + ?Sized>(view: &P) -> Self {
        Path((0..view.len()).map(|i| view.seg(i).to_segment()).collect())
    }

    pub(crate) fn from_segs(segs: &[Seg<'_>]) -> Self {
        Path(segs.iter().map(|s| s.to_segment()).collect())
    }
}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Path({self})")
    }
}

impl fmt::Display for Path {
    /// The wire form, compact JSON: `["a",0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match s {
                PathSegment::Key(k) => write!(f, "{}", Value::String(k.clone()))?,
                PathSegment::Index(n) => write!(f, "{n}")?,
            }
        }
        f.write_str("]")
    }
}

impl FromIterator<PathSegment> for Path {
    fn from_iter<T: IntoIterator<Item = PathSegment>>(iter: T) -> Self {
        Path::from_segments(iter)
    }
}

impl From<Vec<PathSegment>> for Path {
    fn from(segments: Vec<PathSegment>) -> Self {
        Path(Arc::from(segments))
    }
}

/// Why [`Path::from_json`] refused a wire path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathFault {
    /// The path is not a JSON array.
    #[error("a path must be an array")]
    NotAnArray,
    /// The segment at `position` is reserved, or not a string or a non-negative integer.
    #[error("unsafe path segment at position {position}")]
    Segment {
        /// The 0-based position of the refused segment.
        position: usize,
    },
}

/// A borrowed segment: what the applier and the producer walk with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Seg<'a> {
    Key(&'a str),
    Index(u64),
}

impl<'a> Seg<'a> {
    pub(crate) fn to_segment(self) -> PathSegment {
        match self {
            Seg::Key(k) => PathSegment::Key(k.to_owned()),
            Seg::Index(i) => PathSegment::Index(i),
        }
    }

    /// The object key this segment addresses: a number addresses its JavaScript spelling.
    pub(crate) fn object_key(self) -> Cow<'a, str> {
        match self {
            Seg::Key(k) => Cow::Borrowed(k),
            Seg::Index(n) => Cow::Owned(js_integer_key(n)),
        }
    }
}

/// The key JavaScript spells for the integer `n` (`String(n)`): exact below 2^53, the
/// shortest round-trip decimal of the nearest double above.
pub(crate) fn js_integer_key(n: u64) -> String {
    if n < (1u64 << 53) {
        n.to_string()
    } else {
        // Rust prints a double's shortest round-trip digits padded with zeros, as JavaScript
        // does for magnitudes below 1e21 (every u64 is below 1e21).
        format!("{}", n as f64)
    }
}

/// Why one segment was refused (kept small; the caller adds the op index and path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadSegment;

/// Reads a JSON number as JavaScript's `Number.isInteger(x) && x >= 0` accepts it, saturated
/// at `u64::MAX` (every use clamps to a length far below that, so saturation is exact).
pub(crate) fn js_uint(value: &Value) -> Option<u64> {
    let Value::Number(n) = value else { return None };
    if let Some(u) = n.as_u64() {
        return Some(u);
    }
    if n.is_i64() {
        return None;
    }
    let f = n.as_f64()?;
    if !f.is_finite() || f.fract() != 0.0 || f < 0.0 {
        return None;
    }
    Some(if f >= 18_446_744_073_709_551_616.0 { u64::MAX } else { f as u64 })
}

/// Reads a JSON number used as an identity (a path segment or a path id), as JavaScript would
/// key it: exact below 2^53, rounded to the nearest double above; refused past 2^64.
pub(crate) fn js_identity(value: &Value) -> Option<u64> {
    let Value::Number(n) = value else { return None };
    let u = match n.as_u64() {
        Some(u) => u,
        None => {
            if n.is_i64() {
                return None;
            }
            let f = n.as_f64()?;
            if f.fract() != 0.0 || !(0.0..18_446_744_073_709_551_616.0).contains(&f) {
                return None;
            }
            f as u64
        }
    };
    Some(if u < (1u64 << 53) { u } else { (u as f64) as u64 })
}

/// 2^53: below it every integer is exact in a double.
const EXACT: u64 = 1 << 53;

/// Reads a JSON number used as a path id, keyed as JavaScript's `Map` keys it: a
/// non-negative integer below 2^53 is itself; a larger one (any size) is the bit pattern of
/// the double JavaScript reads, which is at least 2^62 and so never one of the small ids.
pub(crate) fn js_path_id(value: &Value) -> Option<u64> {
    let Value::Number(n) = value else { return None };
    if let Some(u) = n.as_u64() {
        return Some(if u < EXACT { u } else { (u as f64).to_bits() });
    }
    if n.is_i64() {
        return None;
    }
    let f = n.as_f64()?;
    if f.fract() != 0.0 || f < 0.0 || !f.is_finite() {
        return None;
    }
    Some(if f < EXACT as f64 { f as u64 } else { f.to_bits() })
}

/// The JSON number of a path id read by [`js_path_id`].
pub(crate) fn path_id_json(id: u64) -> Value {
    if id < EXACT {
        Value::from(id)
    } else {
        Value::from(f64::from_bits(id))
    }
}

/// One wire segment, checked as Chord's `assertSafePath` checks it.
pub(crate) fn segment(value: &Value) -> Result<Seg<'_>, BadSegment> {
    match value {
        Value::String(s) if !is_reserved_segment(s) => Ok(Seg::Key(s)),
        Value::Number(_) => js_identity(value).map(Seg::Index).ok_or(BadSegment),
        _ => Err(BadSegment),
    }
}

/// A path the applier can walk: an owned [`Path`], a checked wire path, or the producer's stack.
pub(crate) trait PathView {
    fn len(&self) -> usize;
    /// The segment at `i` (already checked safe).
    fn seg(&self, i: usize) -> Seg<'_>;
}

impl PathView for [PathSegment] {
    fn len(&self) -> usize {
        <[PathSegment]>::len(self)
    }
    fn seg(&self, i: usize) -> Seg<'_> {
        self[i].view()
    }
}

impl PathView for Path {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn seg(&self, i: usize) -> Seg<'_> {
        self.0[i].view()
    }
}

/// A wire path whose segments have all passed [`segment`].
pub(crate) struct WirePath<'w>(pub(crate) &'w [Value]);

impl PathView for WirePath<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn seg(&self, i: usize) -> Seg<'_> {
        wire_seg(&self.0[i])
    }
}

/// A wire segment already checked by [`segment`].
pub(crate) fn wire_seg(value: &Value) -> Seg<'_> {
    // Checked on entry; a refused segment cannot reach here.
    segment(value).unwrap_or(Seg::Index(u64::MAX))
}

/// Checks every segment of a wire path; the position of the first refused one on failure.
pub(crate) fn check_wire_path(items: &[Value]) -> Result<(), usize> {
    for (i, item) in items.iter().enumerate() {
        if segment(item).is_err() {
            return Err(i);
        }
    }
    Ok(())
}

/// Longest rendering of a path or peer value an error message carries.
const EXCERPT_LIMIT: usize = 96;

/// A bounded rendering of a path for error messages: never echoes large peer data.
pub(crate) fn excerpt<P: PathView + ?Sized>(path: &P) -> String {
    let mut out = String::from("[");
    for i in 0..path.len() {
        if i > 0 {
            out.push(',');
        }
        match path.seg(i) {
            Seg::Key(k) => push_quoted(&mut out, k),
            Seg::Index(n) => out.push_str(&n.to_string()),
        }
        if out.len() > EXCERPT_LIMIT {
            out.push_str(",…");
            break;
        }
    }
    out.push(']');
    out
}

/// A bounded rendering of raw wire path items (some possibly refused).
pub(crate) fn excerpt_values(items: &[Value]) -> String {
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&excerpt_value(item));
        if out.len() > EXCERPT_LIMIT {
            out.push_str(",…");
            break;
        }
    }
    out.push(']');
    out
}

/// A bounded rendering of one peer value: strings cut short, containers named by type.
pub(crate) fn excerpt_value(value: &Value) -> String {
    match value {
        Value::String(s) => {
            let mut out = String::new();
            push_quoted(&mut out, s);
            out
        }
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_owned(),
        Value::Array(a) => format!("<array of {}>", a.len()),
        Value::Object(o) => format!("<object of {}>", o.len()),
    }
}

fn push_quoted(out: &mut String, s: &str) {
    const KEY_LIMIT: usize = 32;
    let cut = if s.len() > KEY_LIMIT {
        let mut end = KEY_LIMIT;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        &s[..end]
    } else {
        s
    };
    out.push_str(&Value::String(cut.to_owned()).to_string());
    if cut.len() < s.len() {
        out.insert(out.len() - 1, '…');
    }
}
