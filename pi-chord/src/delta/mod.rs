//! Delta: replicated state as batches of path operations, as `@earendil-works/chord@0.85.1`'s
//! `@earendil-works/chord/delta` carries it inside Chord's subscription snapshots and updates.
//!
//! A provider owns a JSON value and publishes, for every change, a batch of [`Op`]s that turns
//! the previous value into the next one ([`diff`]). Between the provider and each subscriber,
//! an [`Encoder`] compresses the batch's paths into [`WireOp`]s (ids defined on a path's
//! second use, short forms that reuse the previous op's path) and a [`Decoder`] restores them;
//! [`apply`] turns a replica into the provider's value. A batch that begins with a complete
//! replacement (`r`) is a *base*: it resets both path dictionaries, so a fresh decoder can start
//! there (every snapshot is one).
//!
//! The two types most programs need:
//! - [`StatePublisher`], the provider's side of one state member for one subscriber stream:
//!   give it each new value, send what it returns;
//! - [`StateReplica`], the consumer's side: hydrate it from a snapshot's ops, feed it each
//!   update's ops, read its value.
//!
//! ```
//! use pi_chord::delta::{StatePublisher, StateReplica};
//! use serde_json::json;
//!
//! let mut publisher = StatePublisher::new(json!({"count": 0, "log": ""}));
//! let snapshot = publisher.snapshot_ops();
//! assert_eq!(snapshot, json!([["r", {"count": 0, "log": ""}]]));
//! let mut replica = StateReplica::from_snapshot_ops(&snapshot)?;
//!
//! let mut batches = Vec::new();
//! for (n, log) in [(2, "+2"), (5, "+2+3"), (9, "+2+3+4")] {
//!     let ops = publisher.publish(json!({"count": n, "log": log})).expect("a change");
//!     replica.apply_wire(&ops)?;
//!     batches.push(ops);
//! }
//! // A path is written inline on its first use and given an id on its second.
//! assert_eq!(batches, [
//!     json!([["s", ["count"], 2], ["a", ["log"], "+2"]]),
//!     json!([["#", 0, ["count"]], ["s", 0, 5], ["#", 1, ["log"]], ["a", 1, "+3"]]),
//!     json!([["s", 0, 9], ["a", 1, "+4"]]),
//! ]);
//! assert_eq!(replica.value(), &json!({"count": 9, "log": "+2+3+4"}));
//! assert_eq!(publisher.publish(json!({"count": 9, "log": "+2+3+4"})), None);
//! # Ok::<(), pi_chord::delta::DeltaError>(())
//! ```
//!
//! Object keys are visited in the order of `serde_json`'s map (sorted, or insertion order
//! under its `preserve_order` feature), where Chord visits them in JavaScript's order; the
//! ops then come in another order but turn the replica into the same value. Key order itself
//! is not replicated, by Chord either.
//!
//! Strictness is Chord's: every tuple is checked for its verb, arity and argument types,
//! paths may not name [`RESERVED_SEGMENTS`], must resolve through existing keys and elements,
//! and an array index may address an element or the position just past the last. Strings are
//! counted in UTF-16 code units as JavaScript counts them. Where Rust cannot follow Chord (a
//! `t` that would leave half of a surrogate pair, a number past 2^64 as a path segment)
//! the op is refused; Chord's own producer writes neither.

mod apply;
mod codec;
mod diff;
mod error;
mod op;
mod path;
mod utf16;

pub use apply::apply;
pub use codec::{Decoder, Encoder};
pub use diff::{diff, diff_with, DiffOptions};
pub use error::DeltaError;
pub use op::{wire_batch_to_json, Op, PathRef, WireOp};
pub use path::{is_reserved_segment, Path, PathFault, PathSegment, RESERVED_SEGMENTS};

use serde_json::Value;

/// A consumer's replica of one state member: its [`Decoder`] and its current value.
///
/// Hydrate it from the `ops` of the member in a subscription snapshot (a base batch), then
/// give it the `ops` of every `state` update for that member, in order. Chord's codec registry
/// keeps one per instance and state member, replaced on a new snapshot, `replaced` and
/// `unavailable`, dropped on `closed`; sequence numbers are the caller's to check.
///
/// After a failed batch the replica refuses every batch but a base one
/// ([`DeltaError::Terminated`]), as Chord ends a stream on its first error.
///
/// ```
/// use pi_chord::delta::StateReplica;
/// use serde_json::json;
///
/// let mut replica = StateReplica::from_snapshot_ops(&json!([["r", {"value": 0, "log": ""}]]))?;
/// replica.apply_wire(&json!([["s", ["value"], 2], ["a", ["log"], "+2"]]))?;
/// assert_eq!(replica.value(), &json!({"value": 2, "log": "+2"}));
/// assert!(replica.apply_wire(&json!([["a", ["value"], "x"]])).is_err()); // not a string
/// # Ok::<(), pi_chord::delta::DeltaError>(())
/// ```
#[derive(Debug, Clone)]
pub struct StateReplica {
    value: Value,
    decoder: Decoder,
    failed: bool,
}

impl StateReplica {
    /// Hydrates a replica from a snapshot member's wire `ops`, which must decode to a batch
    /// that begins with a complete replacement (`[["r", value]]` from Chord's provider).
    ///
    /// # Errors
    /// [`DeltaError::NotABase`] when the first decoded op is not `r`, any decoding or
    /// application error of the batch.
    pub fn from_snapshot_ops(ops: &Value) -> Result<Self, DeltaError> {
        let mut replica = StateReplica { value: Value::Null, decoder: Decoder::new(), failed: false };
        replica.decoder.decode_apply_base(&mut replica.value, ops)?;
        Ok(replica)
    }

    /// As [`from_snapshot_ops`](Self::from_snapshot_ops), taking the ops by value: the
    /// snapshot's value is moved into the replica, not copied.
    ///
    /// # Errors
    /// As [`from_snapshot_ops`](Self::from_snapshot_ops).
    pub fn from_snapshot_ops_owned(ops: Value) -> Result<Self, DeltaError> {
        let mut replica = StateReplica { value: Value::Null, decoder: Decoder::new(), failed: false };
        replica.decoder.apply_owned(&mut replica.value, ops, true)?;
        Ok(replica)
    }

    /// Decodes an update's wire `ops` and applies them to the value (payloads are copied
    /// from `ops`).
    ///
    /// # Errors
    /// Any [`DeltaError`] of decoding or application; after one, every later batch but a
    /// base one is refused with [`DeltaError::Terminated`] (a base batch restarts the
    /// replica).
    pub fn apply_wire(&mut self, ops: &Value) -> Result<(), DeltaError> {
        let result = if self.failed {
            if !begins_with_base(ops) {
                return Err(DeltaError::Terminated);
            }
            self.decoder.reset();
            self.decoder.decode_apply_base(&mut self.value, ops)
        } else {
            self.decoder.decode_apply(&mut self.value, ops)
        };
        self.failed = result.is_err();
        result
    }

    /// As [`apply_wire`](Self::apply_wire), taking the ops by value: the values set and the
    /// items spliced in are moved into the replica, not copied (the faster way when the
    /// update was decoded from its payload for this replica alone).
    ///
    /// # Errors
    /// As [`apply_wire`](Self::apply_wire).
    pub fn apply_wire_owned(&mut self, ops: Value) -> Result<(), DeltaError> {
        let result = if self.failed {
            if !begins_with_base(&ops) {
                return Err(DeltaError::Terminated);
            }
            self.decoder.reset();
            self.decoder.apply_owned(&mut self.value, ops, true)
        } else {
            self.decoder.apply_owned(&mut self.value, ops, false)
        };
        self.failed = result.is_err();
        result
    }

    /// The replicated value.
    #[must_use]
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The replicated value, by value.
    #[must_use]
    pub fn into_value(self) -> Value {
        self.value
    }

    /// Whether a batch failed and the replica waits for a base batch.
    #[must_use]
    pub fn is_terminated(&self) -> bool {
        self.failed
    }
}

/// Whether the first op of a wire batch that is not a path definition is `r`.
fn begins_with_base(ops: &Value) -> bool {
    let Some(batch) = ops.as_array() else { return false };
    batch
        .iter()
        .map(|op| op.get(0).and_then(Value::as_str))
        .find(|verb| *verb != Some("#"))
        .is_some_and(|verb| verb == Some("r"))
}

/// A provider's side of one state member for one subscriber stream: the last published value
/// and the stream's [`Encoder`].
///
/// [`snapshot_ops`](Self::snapshot_ops) gives the member's `ops` for a subscription snapshot
/// (and resets the stream's path dictionary, as the base batch does at the subscriber);
/// [`publish`](Self::publish) gives the `ops` of the next `state` update, derived by
/// [`diff`]. With many subscribers of one value, derive the ops once with [`diff`] and give
/// each stream its own [`Encoder`] instead.
///
/// ```
/// use pi_chord::delta::StatePublisher;
/// use serde_json::json;
///
/// let mut publisher = StatePublisher::new(json!({"items": ["a", "b"]}));
/// assert_eq!(publisher.snapshot_ops(), json!([["r", {"items": ["a", "b"]}]]));
/// let ops = publisher.publish(json!({"items": ["a", "b", "c"]}));
/// assert_eq!(ops, Some(json!([["p", ["items"], 2, 0, ["c"]]])));
/// ```
#[derive(Debug, Clone)]
pub struct StatePublisher {
    value: Value,
    encoder: Encoder,
    options: DiffOptions,
}

impl StatePublisher {
    /// A publisher whose current value is `initial`.
    #[must_use]
    pub fn new(initial: Value) -> Self {
        Self::with_options(initial, DiffOptions::default())
    }

    /// A publisher that derives its ops with `options`.
    #[must_use]
    pub fn with_options(initial: Value, options: DiffOptions) -> Self {
        StatePublisher { value: initial, encoder: Encoder::new(), options }
    }

    /// The wire ops of a snapshot of the current value (`[["r", value]]`); resets the
    /// stream's path dictionary.
    #[must_use]
    pub fn snapshot_ops(&mut self) -> Value {
        self.encoder.encode_json([Op::Replace(self.value.clone())])
    }

    /// Makes `next` the current value and returns the wire ops that turn the previous value
    /// into it, or `None` when the two are equal (Chord publishes no empty batch).
    pub fn publish(&mut self, next: Value) -> Option<Value> {
        let ops = diff_with(&self.value, &next, &self.options);
        self.value = next;
        if ops.is_empty() {
            None
        } else {
            Some(self.encoder.encode_json(ops))
        }
    }

    /// Makes `next` the current value and returns the wire ops of `ops`, a batch already
    /// derived from the current value to `next` (by [`diff`], once for many streams of one
    /// value), or `None` for an empty batch. The caller vouches that `ops` lead there.
    pub fn publish_ops(&mut self, ops: impl IntoIterator<Item = Op>, next: Value) -> Option<Value> {
        let mut ops = ops.into_iter().peekable();
        self.value = next;
        ops.peek()?;
        Some(self.encoder.encode_json(ops))
    }

    /// The current (last published) value.
    #[must_use]
    pub fn value(&self) -> &Value {
        &self.value
    }
}
