//! TODO(delta merge): a stand-in for `crate::delta::{StateReplica, StatePublisher, DeltaError}`
//! with the signatures the `delta` module will expose, so that the subscription registry builds
//! and is tested before that module lands. When it does, `subscription/mod.rs` imports the real
//! types from `crate::delta` and this file is deleted.
//!
//! It understands only what its own publisher writes: a batch of complete replacements
//! (`[["r", value]]`) and long-form sets with a literal path (`["s", [..], value]`), enough to
//! follow a subscription in tests. It is not Delta.

use serde_json::Value;

/// Why a batch could not be decoded or applied (stand-in for `crate::delta::DeltaError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DeltaError(pub(crate) String);

/// The replicated value of one state member, fed wire batches (stand-in).
#[derive(Debug, Clone, PartialEq)]
pub struct StateReplica {
    value: Value,
}

impl StateReplica {
    /// A replica from a snapshot's batch, which must start with a complete replacement.
    pub fn from_snapshot_ops(ops: &Value) -> Result<Self, DeltaError> {
        match ops.as_array().and_then(|ops| ops.first()).and_then(Value::as_array).map(Vec::as_slice) {
            Some([verb, _]) if verb == "r" => {}
            _ => return Err(DeltaError("a snapshot's batch does not start with a complete replacement".into())),
        }
        let mut replica = StateReplica { value: Value::Null };
        replica.apply_wire(ops)?;
        Ok(replica)
    }

    /// Applies one wire batch.
    pub fn apply_wire(&mut self, ops: &Value) -> Result<(), DeltaError> {
        let ops = ops.as_array().ok_or_else(|| DeltaError("the batch is not an array".into()))?;
        for op in ops {
            match op.as_array().map(Vec::as_slice) {
                Some([verb, value]) if verb == "r" => self.value = value.clone(),
                Some([verb, Value::Array(path), value]) if verb == "s" => {
                    let mut at = &mut self.value;
                    for segment in path {
                        at = match (at, segment) {
                            (Value::Object(map), Value::String(key)) => map.entry(key.clone()).or_insert(Value::Null),
                            (Value::Array(items), Value::Number(i)) => {
                                let i = i.as_u64().and_then(|i| usize::try_from(i).ok()).unwrap_or(usize::MAX);
                                items.get_mut(i).ok_or_else(|| DeltaError("index out of range".into()))?
                            }
                            _ => return Err(DeltaError("the path does not fit the value".into())),
                        };
                    }
                    *at = value.clone();
                }
                _ => return Err(DeltaError("the stand-in decodes only r and long-form s".into())),
            }
        }
        Ok(())
    }

    /// The value after every batch applied.
    pub fn value(&self) -> &Value {
        &self.value
    }
}

/// The publishing side of one state member (stand-in): every change is a complete replacement.
#[derive(Debug, Clone, PartialEq)]
pub struct StatePublisher {
    value: Value,
}

impl StatePublisher {
    /// A publisher whose value is `value`.
    pub fn new(value: Value) -> Self {
        StatePublisher { value }
    }

    /// The batch a snapshot carries: the whole value.
    pub fn snapshot_ops(&mut self) -> Value {
        Value::Array(vec![Value::Array(vec!["r".into(), self.value.clone()])])
    }

    /// The batch that turns the last value into `value`, `None` when they are equal.
    pub fn publish(&mut self, value: Value) -> Option<Value> {
        if value == self.value {
            return None;
        }
        self.value = value;
        Some(self.snapshot_ops())
    }

    /// The last value published.
    #[allow(dead_code)] // Part of the signature the delta module will expose.
    pub fn value(&self) -> &Value {
        &self.value
    }
}
