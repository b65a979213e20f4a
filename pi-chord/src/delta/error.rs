//! The one error type of Delta: which op of a batch failed, where, and why.

/// Why a batch of ops was refused, or could not be applied.
///
/// Every variant names the 0-based `index` of the failing op in its batch (counting every
/// tuple, path definitions included) and, where there is one, a bounded rendering of its
/// `path`: errors never echo large peer data. The kinds follow Chord's three exceptions:
/// `TypeError` (a malformed tuple: [`Malformed`](Self::Malformed),
/// [`UnknownVerb`](Self::UnknownVerb)), `UnsafePathError` ([`UnsafeSegment`](Self::UnsafeSegment),
/// [`IndexOutOfRange`](Self::IndexOutOfRange)) and `PathError` (the rest of the op kinds).
///
/// After an error the stream is over, as in Chord: an applied batch is not transactional (the
/// ops before the failing one have been applied), so the replica must be rebuilt from a base
/// batch (one that begins with `r`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeltaError {
    /// The batch is not a JSON array of ops.
    #[error("a batch of ops must be an array")]
    NotABatch,
    /// The op is not a tuple of the shape its verb needs (arity, argument types).
    #[error("op {index}: {reason}")]
    Malformed {
        /// The op's position in its batch.
        index: usize,
        /// What is wrong, in Chord's words (`"s arity"`, `"t count"`, ...).
        reason: &'static str,
    },
    /// The op's verb is none of `r`, `s`, `d`, `a`, `t`, `p` (nor `#` on the wire).
    #[error("op {index}: unknown op verb {verb}")]
    UnknownVerb {
        /// The op's position in its batch.
        index: usize,
        /// A bounded rendering of the verb.
        verb: String,
    },
    /// A path segment is reserved ([`RESERVED_SEGMENTS`](super::RESERVED_SEGMENTS)), not a
    /// string or a non-negative integer, or a key used on an array.
    #[error("op {index}: unsafe path segment {segment} in {path}")]
    UnsafeSegment {
        /// The op's position in its batch.
        index: usize,
        /// A bounded rendering of the op's path.
        path: String,
        /// A bounded rendering of the refused segment.
        segment: String,
    },
    /// An array index past the end of its array (an index may address an element or the
    /// position just past the last one).
    #[error("op {index}: index {position} is past the end of the array at {path}")]
    IndexOutOfRange {
        /// The op's position in its batch.
        index: usize,
        /// A bounded rendering of the op's path.
        path: String,
        /// The refused array index.
        position: u64,
    },
    /// The path does not lead to what the op needs: a missing key or element, a scalar where
    /// a container is needed, a non-string under `a` or `t`, a non-array under `p`, a `d` of
    /// a missing array element.
    #[error("op {index}: unresolvable path {path}")]
    UnresolvablePath {
        /// The op's position in its batch.
        index: usize,
        /// A bounded rendering of the op's path.
        path: String,
    },
    /// A `s`, `d`, `a` or `t` addresses the root (only `r` replaces it and only `p` may
    /// splice a root array).
    #[error("op {index}: {verb} cannot address the root")]
    RootPath {
        /// The op's position in its batch.
        index: usize,
        /// The op's verb.
        verb: char,
    },
    /// A numeric path reference to an id no `#` of this stream defined (since its last
    /// complete replacement).
    #[error("op {index}: unknown path id {id}")]
    UnknownPathId {
        /// The op's position in its batch.
        index: usize,
        /// The undefined id.
        id: u64,
    },
    /// A short form (an op that reuses the previous op's path) with no previous path in its
    /// batch: paths are reused within one batch only.
    #[error("op {index}: a short form with no previous path in its batch")]
    NoPreviousPath {
        /// The op's position in its batch.
        index: usize,
    },
    /// A `t` whose count ends between the two UTF-16 code units of one character. Chord
    /// would leave a lone surrogate in the string, which no Rust string (nor well-formed
    /// JSON text) can hold; Chord's own producer never writes such a count.
    #[error("op {index}: truncating {count} UTF-16 code units at {path} splits a surrogate pair")]
    SplitsSurrogatePair {
        /// The op's position in its batch.
        index: usize,
        /// A bounded rendering of the op's path.
        path: String,
        /// The refused count.
        count: u64,
    },
    /// A snapshot's ops do not begin with a complete replacement (`r`), as Chord's replica
    /// requires of a hydration.
    #[error("a snapshot's ops must begin with a complete replacement (r)")]
    NotABase,
    /// An earlier batch of this stream failed; only a base batch (beginning with `r`)
    /// restarts it.
    #[error("the stream failed on an earlier batch; only a base batch (r) restarts it")]
    Terminated,
}

impl DeltaError {
    /// The failing op's position in its batch, where the error is about one op.
    #[must_use]
    pub fn op_index(&self) -> Option<usize> {
        match self {
            DeltaError::Malformed { index, .. }
            | DeltaError::UnknownVerb { index, .. }
            | DeltaError::UnsafeSegment { index, .. }
            | DeltaError::IndexOutOfRange { index, .. }
            | DeltaError::UnresolvablePath { index, .. }
            | DeltaError::RootPath { index, .. }
            | DeltaError::UnknownPathId { index, .. }
            | DeltaError::NoPreviousPath { index }
            | DeltaError::SplitsSurrogatePair { index, .. } => Some(*index),
            DeltaError::NotABatch | DeltaError::NotABase | DeltaError::Terminated => None,
        }
    }
}
