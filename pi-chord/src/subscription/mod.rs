//! One subscription's replicated state, on both ends: [`StateRegistry`] follows a subscription
//! as Chord's consumer does (one Delta replica per instance and state member, fed the snapshot
//! and then every update), and [`SubscriptionPublisher`] writes one as Chord's provider does
//! (one Delta publisher per instance and state member).
//!
//! The rules are those of `@earendil-works/chord@0.85.1` (its state codec registry, its
//! replicas and its consumer):
//!
//! - a snapshot and a `replaced` update start over (every replica dropped, then one per state
//!   member of the instances they carry); `unavailable` drops every replica; `spawned` adds the
//!   new instance's; `closed` removes the closed instance's;
//! - one instance may not hold two state members of one name; a `state` update for an
//!   (instance, member) without a replica is refused;
//! - a `state` update's sequence is the replica's plus one, else the replica is dropped and the
//!   update refused (a gap);
//! - a keyed subscription's instances carry addresses, a singleton's none; `unavailable` and
//!   `replaced` belong to singletons.
//!
//! The real pi-client closes the connection on the first update it cannot follow, so every
//! refusal here is final for the subscription.
//!
//! ```
//! use pi_chord::subscription::{Applied, StateRegistry};
//! use pi_chord::wire::{Snapshot, Update};
//! use pi_protocol_runtime::Payload;
//!
//! let snapshot = Snapshot::from_payload(&Payload::from_json_str(
//!     r#"{"serviceId":"demo.counter","mode":"singleton","instances":[{"members":[
//!         {"name":"bump","kind":"method"},
//!         {"name":"count","kind":"state","sequence":0,"ops":[["r",{"value":0}]]}]}]}"#,
//! )?)?;
//! let mut registry = StateRegistry::new();
//! let states = registry.install(&snapshot)?;
//! assert_eq!(states[0].value, serde_json::json!({"value": 0}));
//!
//! let update = Update::from_payload(&Payload::from_json_str(
//!     r#"{"type":"state","member":"count","sequence":1,"ops":[["r",{"value":2}]]}"#,
//! )?)?;
//! let Applied::State(change) = registry.apply(&update)? else { unreachable!() };
//! assert_eq!((change.member.as_str(), change.sequence, &change.value), ("count", 1, &serde_json::json!({"value": 2})));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

use crate::wire::{
    ClosedUpdate, Id, InstanceAddress, InstanceSnapshot, MemberSnapshot, MethodSnapshot, Ops, ReplacedUpdate,
    ServiceMode, Snapshot, SpawnedUpdate, StateSnapshot, StateUpdate, UnavailableUpdate, Update, WireError,
};

pub use crate::delta::DeltaError;
use crate::delta::{StatePublisher, StateReplica};

#[cfg(test)]
mod tests;

/// A state member's place: its instance (`None` in a singleton) and its name.
type StateKey = (Option<InstanceAddress>, Id);

/// Names a state as Chord does in its messages: `member`, or `key@generation.member`.
fn describe(instance: Option<&InstanceAddress>, member: &str) -> String {
    match instance {
        Some(address) => format!("{address}.{member}"),
        None => member.to_string(),
    }
}

/// Why a snapshot or an update could not be followed (or published). Each variant names the
/// state (`count`, `room-1@2.count`) and, where it comes from the value, the field path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubscriptionError {
    /// Two state members of one name in one instance.
    #[error("duplicate service state {state} at {path}")]
    Duplicate {
        /// The state (`key@generation.member`).
        state: String,
        /// The field path of the second one.
        path: String,
    },
    /// A state update (or a publication) for a state the subscription does not hold.
    #[error("unknown service state {state}")]
    Unknown {
        /// The state.
        state: String,
    },
    /// A state update whose sequence is not the replica's plus one. The replica is dropped.
    #[error("service state {state} update sequence has a gap: expected {expected}, got {got}")]
    SequenceGap {
        /// The state.
        state: String,
        /// The sequence that was due.
        expected: i64,
        /// The sequence the update carried.
        got: i64,
    },
    /// A batch Delta could not decode or apply.
    #[error("service state {state}: invalid ops at {path}: {source}")]
    Delta {
        /// The state.
        state: String,
        /// The field path of the batch.
        path: String,
        /// Delta's reason.
        source: DeltaError,
    },
    /// A value that does not fit the subscription's mode (an address in a singleton, none in
    /// a keyed service, a singleton lifecycle update in a keyed service).
    #[error("{message} at {path}")]
    Mode {
        /// The field path.
        path: String,
        /// What does not fit.
        message: &'static str,
    },
    /// An update before any snapshot.
    #[error("service update before the subscription snapshot")]
    NotInstalled,
    /// A value the wire grammar refuses (on the publishing side).
    #[error(transparent)]
    Wire(#[from] WireError),
}

/// A state member's whole value after a snapshot or an update, with its sequence.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StateChange {
    /// The instance (`None` in a singleton service).
    pub instance: Option<InstanceAddress>,
    /// The state member's name.
    pub member: Id,
    /// Its sequence (0 or more in a snapshot, from 1 in updates).
    pub sequence: i64,
    /// Its whole value, every batch so far applied.
    pub value: Value,
}

impl StateChange {
    /// The change as one JSON object `{"member", "instance", "sequence", "value"}`, `instance`
    /// `null` in a singleton (the line `pi-protocol subscribe` prints).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let instance = self
            .instance
            .as_ref()
            .map_or(Value::Null, |a| serde_json::json!({"key": a.key.as_str(), "generation": a.generation.get()}));
        serde_json::json!({
            "member": self.member.as_str(),
            "instance": instance,
            "sequence": self.sequence,
            "value": self.value,
        })
    }
}

/// What one update did to the subscription's state.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Applied {
    /// `state`: one state member changed.
    State(StateChange),
    /// `unavailable`: every replica dropped (the singleton has no provider).
    Unavailable,
    /// `replaced`: every replica dropped, then the new instance's state members, each value.
    Replaced(Vec<StateChange>),
    /// `spawned`: an instance added, with its state members' values.
    Spawned {
        /// The new instance (`None` only if a singleton subscription is sent one).
        instance: Option<InstanceAddress>,
        /// Its state members.
        states: Vec<StateChange>,
    },
    /// `closed`: the instance's replicas removed.
    Closed(InstanceAddress),
}

/// One replica and its sequence.
#[derive(Debug)]
struct Replica {
    replica: StateReplica,
    sequence: i64,
}

/// The replicated state of one subscription, as a consumer follows it: see the
/// [module docs](self).
#[derive(Debug, Default)]
pub struct StateRegistry {
    mode: Option<ServiceMode>,
    replicas: HashMap<StateKey, Replica>,
}

impl StateRegistry {
    /// A registry with no snapshot yet.
    #[must_use]
    pub fn new() -> Self {
        StateRegistry::default()
    }

    /// Starts over from `snapshot` (the result of `subscribe`): one replica per state member.
    /// Returns every state member's value, in snapshot order.
    ///
    /// # Errors
    /// [`SubscriptionError::Duplicate`], [`Delta`](SubscriptionError::Delta) for a batch that is
    /// not a complete replacement, [`Mode`](SubscriptionError::Mode) for an instance address
    /// that does not fit the snapshot's mode. The registry is then empty.
    pub fn install(&mut self, snapshot: &Snapshot) -> Result<Vec<StateChange>, SubscriptionError> {
        self.replicas.clear();
        self.mode = Some(snapshot.mode);
        let mut states = Vec::new();
        for (i, instance) in snapshot.instances.iter().enumerate() {
            let added = self.add_instance(instance, &format!("instances[{i}]"));
            match added {
                Ok(added) => states.extend(added),
                Err(e) => {
                    self.replicas.clear();
                    return Err(e);
                }
            }
        }
        Ok(states)
    }

    /// Follows one update.
    ///
    /// # Errors
    /// [`SubscriptionError::NotInstalled`] before [`install`](Self::install);
    /// [`Unknown`](SubscriptionError::Unknown), [`SequenceGap`](SubscriptionError::SequenceGap),
    /// [`Delta`](SubscriptionError::Delta), [`Duplicate`](SubscriptionError::Duplicate) and
    /// [`Mode`](SubscriptionError::Mode) as the module docs say.
    pub fn apply(&mut self, update: &Update) -> Result<Applied, SubscriptionError> {
        let mode = self.mode.ok_or(SubscriptionError::NotInstalled)?;
        let singleton_only = |message| Err(SubscriptionError::Mode { path: "type".into(), message });
        match update {
            Update::State(state) => self.apply_state(state, mode).map(Applied::State),
            Update::Unavailable(_) if mode == ServiceMode::Keyed => {
                singleton_only("a keyed service received a singleton lifecycle update")
            }
            Update::Unavailable(_) => {
                self.replicas.clear();
                Ok(Applied::Unavailable)
            }
            Update::Replaced(_) if mode == ServiceMode::Keyed => {
                singleton_only("a keyed service received a singleton lifecycle update")
            }
            Update::Replaced(replaced) => {
                self.replicas.clear();
                self.add_instance(&replaced.snapshot, "snapshot").map(Applied::Replaced)
            }
            Update::Spawned(spawned) => {
                let states = self.add_instance(&spawned.instance, "instance")?;
                Ok(Applied::Spawned { instance: spawned.instance.instance.clone(), states })
            }
            Update::Closed(closed) => {
                self.replicas.retain(|(instance, _), _| instance.as_ref() != Some(&closed.instance));
                Ok(Applied::Closed(closed.instance.clone()))
            }
        }
    }

    /// The value of a state member, if the subscription holds it.
    #[must_use]
    pub fn value(&self, instance: Option<&InstanceAddress>, member: &str) -> Option<&Value> {
        self.find(instance, member).map(|r| r.replica.value())
    }

    /// The sequence of a state member, if the subscription holds it.
    #[must_use]
    pub fn sequence(&self, instance: Option<&InstanceAddress>, member: &str) -> Option<i64> {
        self.find(instance, member).map(|r| r.sequence)
    }

    /// How many state members the subscription holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    /// Whether it holds none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }

    fn find(&self, instance: Option<&InstanceAddress>, member: &str) -> Option<&Replica> {
        let member = Id::new(member).ok()?;
        self.replicas.get(&(instance.cloned(), member))
    }

    fn add_instance(&mut self, instance: &InstanceSnapshot, at: &str) -> Result<Vec<StateChange>, SubscriptionError> {
        match (self.mode, &instance.instance) {
            (Some(ServiceMode::Keyed), None) => {
                return Err(SubscriptionError::Mode {
                    path: at.to_string(),
                    message: "a keyed service instance snapshot has no address",
                })
            }
            (Some(ServiceMode::Singleton), Some(_)) => {
                return Err(SubscriptionError::Mode {
                    path: format!("{at}.instance"),
                    message: "a singleton service instance snapshot has an address",
                })
            }
            _ => {}
        }
        let mut states = Vec::new();
        for (i, member) in instance.members.iter().enumerate() {
            let MemberSnapshot::State(state) = member else { continue };
            let path = format!("{at}.members[{i}]");
            let key = (instance.instance.clone(), state.name.clone());
            let name = describe(instance.instance.as_ref(), &state.name);
            if self.replicas.contains_key(&key) {
                return Err(SubscriptionError::Duplicate { state: name, path });
            }
            let replica = StateReplica::from_snapshot_ops(&state.ops.to_value())
                .map_err(|source| SubscriptionError::Delta { state: name, path: format!("{path}.ops"), source })?;
            states.push(StateChange {
                instance: instance.instance.clone(),
                member: state.name.clone(),
                sequence: state.sequence.get(),
                value: replica.value().clone(),
            });
            self.replicas.insert(key, Replica { replica, sequence: state.sequence.get() });
        }
        Ok(states)
    }

    fn apply_state(&mut self, update: &StateUpdate, mode: ServiceMode) -> Result<StateChange, SubscriptionError> {
        if mode == ServiceMode::Keyed && update.instance.is_none() {
            return Err(SubscriptionError::Mode {
                path: String::new(),
                message: "a keyed state update has no instance",
            });
        }
        let key = (update.instance.clone(), update.member.clone());
        let state = describe(update.instance.as_ref(), &update.member);
        let Some(entry) = self.replicas.get_mut(&key) else { return Err(SubscriptionError::Unknown { state }) };
        let (expected, got) = (entry.sequence + 1, update.sequence.get());
        if got != expected {
            self.replicas.remove(&key);
            return Err(SubscriptionError::SequenceGap { state, expected, got });
        }
        entry.replica.apply_wire(&update.ops.to_value()).map_err(|source| SubscriptionError::Delta {
            state,
            path: "ops".into(),
            source,
        })?;
        entry.sequence = got;
        Ok(StateChange {
            instance: update.instance.clone(),
            member: update.member.clone(),
            sequence: got,
            value: entry.replica.value().clone(),
        })
    }
}

/// One member of a service instance as a provider describes it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServiceMember {
    /// A method: callable, no state.
    Method {
        /// Its name.
        name: Id,
    },
    /// A state member: its current value and the sequence of its last publication (0 before
    /// any).
    State {
        /// Its name.
        name: Id,
        /// The sequence of its last publication.
        sequence: i64,
        /// Its current value.
        value: Value,
    },
}

impl ServiceMember {
    /// A method member.
    ///
    /// # Errors
    /// A [`WireError`] when `name` is empty.
    pub fn method(name: impl Into<String>) -> Result<Self, WireError> {
        Ok(ServiceMember::Method { name: member_id(name)? })
    }

    /// A state member holding `value`, published `sequence` times so far.
    ///
    /// # Errors
    /// A [`WireError`] when `name` is empty.
    pub fn state(name: impl Into<String>, sequence: i64, value: Value) -> Result<Self, WireError> {
        Ok(ServiceMember::State { name: member_id(name)?, sequence, value })
    }
}

fn member_id(name: impl Into<String>) -> Result<Id, WireError> {
    Id::new(name.into()).map_err(|e| WireError::new("service member", "name", e.rule().to_string()))
}

/// One instance of a service as a provider describes it: its address (keyed services only)
/// and its members in order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServiceInstance {
    /// The address (`None` for a singleton's instance).
    pub address: Option<InstanceAddress>,
    /// The members, in the order the snapshot lists them.
    pub members: Vec<ServiceMember>,
}

impl ServiceInstance {
    /// An instance with these members, no address.
    #[must_use]
    pub fn new(members: Vec<ServiceMember>) -> Self {
        ServiceInstance { address: None, members }
    }

    /// Sets the address (keyed services).
    #[must_use]
    pub fn with_address(mut self, address: InstanceAddress) -> Self {
        self.address = Some(address);
        self
    }
}

/// One publisher and its sequence.
#[derive(Debug)]
struct Publisher {
    publisher: StatePublisher,
    sequence: i64,
}

/// The provider's end of one subscription: writes its snapshot and its updates, one Delta
/// publisher per instance and state member (reset by the snapshot and by `replaced` and
/// `unavailable`, removed by `closed`). See the [module docs](self).
#[derive(Debug)]
pub struct SubscriptionPublisher {
    service_id: Id,
    mode: ServiceMode,
    publishers: HashMap<StateKey, Publisher>,
}

impl SubscriptionPublisher {
    /// A publisher for a subscription of `service_id` in `mode`.
    #[must_use]
    pub fn new(service_id: Id, mode: ServiceMode) -> Self {
        SubscriptionPublisher { service_id, mode, publishers: HashMap::new() }
    }

    /// The snapshot that answers `subscribe`, for these instances (a keyed service's in the order
    /// given: Chord sorts them by key). Starts over: one publisher per state member.
    ///
    /// # Errors
    /// [`SubscriptionError::Duplicate`] for two state members of one name in one instance;
    /// [`Mode`](SubscriptionError::Mode) for an address that does not fit the mode.
    pub fn snapshot(&mut self, instances: &[ServiceInstance]) -> Result<Snapshot, SubscriptionError> {
        self.publishers.clear();
        let mut written = Vec::with_capacity(instances.len());
        for (i, instance) in instances.iter().enumerate() {
            written.push(self.add_instance(instance, &format!("instances[{i}]"))?);
        }
        Ok(Snapshot::new(self.service_id.clone(), self.mode, written))
    }

    /// The `state` update that turns a state member's last value into `value`, or `None` when
    /// nothing changed (Chord publishes nothing then). The sequence is the last one plus one.
    ///
    /// # Errors
    /// [`SubscriptionError::Unknown`] for a state the subscription does not hold.
    pub fn publish(
        &mut self,
        instance: Option<&InstanceAddress>,
        member: &str,
        value: Value,
    ) -> Result<Option<Update>, SubscriptionError> {
        self.publish_with(instance, member, |publisher| publisher.publish(value))
    }

    /// As [`publish`](Self::publish), for the batch `ops` already derived (with
    /// [`diff`](crate::delta::diff), once for every subscription of one state) from the
    /// member's last value to `value`: each subscription then only encodes it.
    ///
    /// # Errors
    /// As [`publish`](Self::publish).
    pub fn publish_ops(
        &mut self,
        instance: Option<&InstanceAddress>,
        member: &str,
        ops: &[crate::delta::Op],
        value: &Value,
    ) -> Result<Option<Update>, SubscriptionError> {
        self.publish_with(instance, member, |publisher| publisher.publish_ops(ops.iter().cloned(), value.clone()))
    }

    fn publish_with(
        &mut self,
        instance: Option<&InstanceAddress>,
        member: &str,
        encode: impl FnOnce(&mut StatePublisher) -> Option<Value>,
    ) -> Result<Option<Update>, SubscriptionError> {
        let state = describe(instance, member);
        let Ok(name) = Id::new(member) else { return Err(SubscriptionError::Unknown { state }) };
        let key = (instance.cloned(), name.clone());
        let Some(entry) = self.publishers.get_mut(&key) else { return Err(SubscriptionError::Unknown { state }) };
        let Some(ops) = encode(&mut entry.publisher) else { return Ok(None) };
        entry.sequence += 1;
        let ops = Ops::from_value(&ops)?;
        let sequence = pi_protocol_runtime::Integer::new(entry.sequence).map_err(|_| SubscriptionError::Mode {
            path: "sequence".into(),
            message: "the sequence passed 2^53 - 1",
        })?;
        let mut update = StateUpdate::new(name, sequence, ops);
        update.instance = instance.cloned();
        Ok(Some(Update::State(update)))
    }

    /// `replaced`: a singleton's provider was replaced by `instance`; starts over.
    ///
    /// # Errors
    /// As [`snapshot`](Self::snapshot).
    pub fn replace(&mut self, instance: &ServiceInstance) -> Result<Update, SubscriptionError> {
        self.publishers.clear();
        Ok(Update::Replaced(ReplacedUpdate::new(self.add_instance(instance, "snapshot")?)))
    }

    /// `spawned`: a keyed service gained `instance`.
    ///
    /// # Errors
    /// As [`snapshot`](Self::snapshot).
    pub fn spawn(&mut self, instance: &ServiceInstance) -> Result<Update, SubscriptionError> {
        Ok(Update::Spawned(SpawnedUpdate::new(self.add_instance(instance, "instance")?)))
    }

    /// `closed`: the instance at `address` closed; its publishers go.
    #[must_use]
    pub fn close(&mut self, address: &InstanceAddress) -> Update {
        self.publishers.retain(|(instance, _), _| instance.as_ref() != Some(address));
        Update::Closed(ClosedUpdate::new(address.clone()))
    }

    /// `unavailable`: a singleton lost its provider; every publisher goes.
    #[must_use]
    pub fn unavailable(&mut self) -> Update {
        self.publishers.clear();
        Update::Unavailable(UnavailableUpdate::new())
    }

    fn add_instance(&mut self, instance: &ServiceInstance, at: &str) -> Result<InstanceSnapshot, SubscriptionError> {
        match (self.mode, &instance.address) {
            (ServiceMode::Keyed, None) => {
                return Err(SubscriptionError::Mode {
                    path: at.into(),
                    message: "a keyed service instance has no address",
                })
            }
            (ServiceMode::Singleton, Some(_)) => {
                return Err(SubscriptionError::Mode {
                    path: format!("{at}.instance"),
                    message: "a singleton service instance has an address",
                })
            }
            _ => {}
        }
        let mut members = Vec::with_capacity(instance.members.len());
        for (i, member) in instance.members.iter().enumerate() {
            match member {
                ServiceMember::Method { name } => {
                    members.push(MemberSnapshot::Method(MethodSnapshot::new(name.clone())))
                }
                ServiceMember::State { name, sequence, value } => {
                    let key = (instance.address.clone(), name.clone());
                    if self.publishers.contains_key(&key) {
                        return Err(SubscriptionError::Duplicate {
                            state: describe(instance.address.as_ref(), name),
                            path: format!("{at}.members[{i}]"),
                        });
                    }
                    let mut publisher = StatePublisher::new(value.clone());
                    let ops = Ops::from_value(&publisher.snapshot_ops())?;
                    let wire_sequence =
                        pi_protocol_runtime::Integer::new(*sequence).map_err(|_| SubscriptionError::Mode {
                            path: format!("{at}.members[{i}].sequence"),
                            message: "the sequence is outside 0..=2^53 - 1",
                        })?;
                    if *sequence < 0 {
                        return Err(SubscriptionError::Mode {
                            path: format!("{at}.members[{i}].sequence"),
                            message: "the sequence is outside 0..=2^53 - 1",
                        });
                    }
                    members.push(MemberSnapshot::State(StateSnapshot::new(name.clone(), wire_sequence, ops)));
                    self.publishers.insert(key, Publisher { publisher, sequence: *sequence });
                }
            }
        }
        let mut snapshot = InstanceSnapshot::new(members);
        snapshot.instance = instance.address.clone();
        Ok(snapshot)
    }
}

impl fmt::Display for StateChange {
    /// `member` or `key@generation.member`, then `#sequence`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", describe(self.instance.as_ref(), &self.member), self.sequence)
    }
}
