//! Chord's wire grammar: service calls, control calls, catalogues, snapshots and updates.
//!
//! The types are generated from `pi-chord/schema/chord.json` (the project's schema language,
//! `pi-protocol-gen/SCHEMA.md`) by `cargo xtask gen` into `generated.rs` (checked in, kept fresh
//! by `cargo xtask gen --check`); this module adds what JSON Schema cannot say and
//! Chord's parsers check (`parseServiceCall`, `parseServiceCatalogue`,
//! `parseWireServiceSubscriptionSnapshot`, `parseWireServiceProviderUpdate` and
//! `decodeServiceControlCall` of `@earendil-works/chord@0.85.1`):
//!
//! - every Delta wire op in `ops` has the shape of its verb (`check_wire_op`);
//! - catalogue service ids are unique;
//! - a control call is a [`ServiceCall`] to [`SERVICE_CONTROL_ID`] whose member and arguments
//!   fit one of the three control calls ([`ControlCall`]).
//!
//! Every value is read straight from a [`Payload`] (`from_payload`) and written into one
//! (`to_payload`), strictly: unknown keys, empty ids, unknown modes, fractional or too small
//! sequences and generations, and malformed ops are refused with a [`WireError`] that names the
//! field path (`instances[0].members[1].ops[2][1]`). The Pi protocol carries these values in its
//! opaque payloads (docs/PROTOCOL.md section 5).
//!
//! ```
//! use pi_chord::wire::{ControlCall, ServiceCall, ServiceMode};
//! use pi_protocol_runtime::Payload;
//!
//! let payload = Payload::from_json_str(
//!     r#"{"serviceId":"$chord.service","member":"subscribe","args":["service-1","demo.counter","singleton"]}"#,
//! )?;
//! let call = ServiceCall::from_payload(&payload)?;
//! let control = ControlCall::from_call(&call);
//! assert_eq!(control, Some(ControlCall::subscribe("service-1", "demo.counter", ServiceMode::Singleton)?));
//! assert_eq!(call.to_payload()?, payload);
//!
//! let bad = Payload::from_json_str(r#"{"serviceId":"","member":"m","args":[]}"#)?;
//! assert_eq!(ServiceCall::from_payload(&bad).unwrap_err().path(), "serviceId");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashSet;
use std::fmt;

use pi_protocol_runtime::{decode_message, encode_item, CborLimits, Decode, Encode, Payload, ProtocolError, Validate};
use serde_json::Value;

mod generated;
mod ops;

pub use generated::{
    Catalogue, CatalogueEntry, ClosedUpdate, Id, InstanceAddress, InstanceSnapshot, MemberSnapshot, MethodSnapshot,
    Ops, RemoteServiceErrorCode, ReplacedUpdate, ServiceCall, ServiceMode, Snapshot, SpawnedUpdate, StateSnapshot,
    StateUpdate, UnavailableUpdate, Update,
};
pub use ops::RESERVED_SEGMENTS;

/// The service id of Chord's control calls (`catalogue`, `subscribe`, `unsubscribe`).
pub const SERVICE_CONTROL_ID: &str = "$chord.service";

/// A value that is not what Chord's grammar allows: where (the field path inside the value,
/// empty for the value itself) and why.
///
/// The path reads `instances[0].members[1].ops[2][1]`: keys joined with `.`, array indexes in
/// brackets. The message quotes nothing received from the peer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what}{}: {message}", if path.is_empty() { String::new() } else { format!(" at {path}") })]
pub struct WireError {
    what: &'static str,
    path: String,
    message: String,
}

impl WireError {
    pub(crate) fn new(what: &'static str, path: impl Into<String>, message: impl Into<String>) -> Self {
        WireError { what, path: path.into(), message: message.into() }
    }

    fn protocol(what: &'static str, error: &ProtocolError) -> Self {
        WireError::new(what, error.path_string(), error.rule().to_string())
    }

    /// The field path of the offending value (`args[1]`, `[3].serviceId`), empty for the whole
    /// value.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What was being read: `service call`, `control call`, `service catalogue`, `service
    /// subscription snapshot`, `service provider update`, `service instance address`,
    /// `service instance snapshot` or `remote service error code`.
    #[must_use]
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// What is wrong at [`path`](Self::path).
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Joins a parent path and a child's (`instances[0]` + `members[1]`, `ops` + `[2]`).
fn join(parent: &str, child: &str) -> String {
    match (parent.is_empty(), child.is_empty() || child.starts_with('[')) {
        (true, _) => child.to_string(),
        (false, true) => format!("{parent}{child}"),
        (false, false) => format!("{parent}.{child}"),
    }
}

/// Decodes a whole payload as `T`: the schema checks of the generated type.
fn decode<T: for<'de> Decode<'de>>(payload: &Payload, what: &'static str) -> Result<T, WireError> {
    // The payload was already read under the connection's limits: read it again under the widest.
    decode_message(payload.as_cbor(), CborLimits::widest()).map_err(|e| WireError::protocol(what, &e))
}

/// Encodes a value into a payload (checking it first).
fn encode<T: Encode + Validate>(value: &T, what: &'static str) -> Result<Payload, WireError> {
    let cbor = encode_item(value, CborLimits::widest()).map_err(|e| WireError::protocol(what, &e))?;
    Payload::from_cbor(cbor.into(), CborLimits::widest()).map_err(|e| WireError::protocol(what, &e))
}

/// Checks every op of a batch as Chord's `assertValidWireOp` does; `at` is the batch's path.
fn check_ops(ops: &Ops, at: &str, what: &'static str) -> Result<(), WireError> {
    for (i, op) in ops.get().iter().enumerate() {
        ops::check_wire_op(&op.to_value())
            .map_err(|fault| WireError::new(what, format!("{}[{i}]{}", join(at, "ops"), fault.at), fault.message))?;
    }
    Ok(())
}

impl Ops {
    /// The batch as one JSON array, as the Delta decoder reads it
    /// (`StateReplica::apply_wire`).
    #[must_use]
    pub fn to_value(&self) -> Value {
        Value::Array(self.get().iter().map(Payload::to_value).collect())
    }

    /// A batch from a JSON array of wire ops (as the Delta encoder writes it), each op checked.
    ///
    /// # Errors
    /// A [`WireError`] naming the op (`[2][1]`) when `value` is not an array of well-formed wire
    /// ops, or holds an integral number beyond +-(2^53 - 1).
    pub fn from_value(value: &Value) -> Result<Ops, WireError> {
        const WHAT: &str = "op batch";
        let Value::Array(items) = value else { return Err(WireError::new(WHAT, "", "not an array")) };
        let mut ops = Vec::with_capacity(items.len());
        for (i, op) in items.iter().enumerate() {
            ops::check_wire_op(op)
                .map_err(|fault| WireError::new(WHAT, format!("[{i}]{}", fault.at), fault.message))?;
            ops.push(
                Payload::from_value(op).map_err(|e| WireError::new(WHAT, format!("[{i}]"), e.rule().to_string()))?,
            );
        }
        Ops::new(ops).map_err(|e| WireError::protocol(WHAT, &e))
    }
}

impl ServiceCall {
    /// Reads a service call (the payload of a service request), as `parseServiceCall` does.
    ///
    /// # Errors
    /// A [`WireError`] naming the field: an unknown or missing key, an empty `serviceId` or
    /// `member`, `args` not an array, a malformed `instance`.
    pub fn from_payload(payload: &Payload) -> Result<ServiceCall, WireError> {
        decode(payload, "service call")
    }

    /// Writes the call into a payload (`serviceId`, `instance`, `member`, `args`, in Chord's
    /// order).
    ///
    /// # Errors
    /// A [`WireError`] when a field was given a value the grammar refuses.
    pub fn to_payload(&self) -> Result<Payload, WireError> {
        encode(self, "service call")
    }

    /// Whether the call goes to Chord's control service ([`SERVICE_CONTROL_ID`]); see
    /// [`ControlCall::from_call`] for whether it is a valid one.
    #[must_use]
    pub fn is_control(&self) -> bool {
        self.service_id.as_str() == SERVICE_CONTROL_ID
    }
}

/// One of the three calls of Chord's control service `$chord.service`, as
/// `decodeServiceControlCall` reads them out of a [`ServiceCall`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ControlCall {
    /// `catalogue []`: the services offered, answered with a [`Catalogue`].
    Catalogue,
    /// `subscribe [subscriptionId, serviceId, mode]`: answered with a [`Snapshot`], followed by
    /// the service's [`Update`]s under `subscription_id`.
    Subscribe {
        /// The id the caller picked for the subscription (pi-client: `service-1`, ...).
        subscription_id: Id,
        /// The service to follow.
        service_id: Id,
        /// The mode the caller expects the service to have.
        mode: ServiceMode,
    },
    /// `unsubscribe [subscriptionId]`: ends a subscription, answered with no result.
    Unsubscribe {
        /// The subscription to end.
        subscription_id: Id,
    },
}

/// Reads argument `i` as a non-empty id.
fn id_arg(args: &[Payload], i: usize) -> Option<Id> {
    decode::<Id>(&args[i], "control call").ok()
}

impl ControlCall {
    /// `subscribe [subscription_id, service_id, mode]`.
    ///
    /// # Errors
    /// A [`WireError`] (`args[0]` or `args[1]`) when an id is empty.
    pub fn subscribe(
        subscription_id: impl Into<String>,
        service_id: impl Into<String>,
        mode: ServiceMode,
    ) -> Result<ControlCall, WireError> {
        let id = |s: String, at: &str| Id::new(s).map_err(|e| WireError::new("control call", at, e.rule().to_string()));
        Ok(ControlCall::Subscribe {
            subscription_id: id(subscription_id.into(), "args[0]")?,
            service_id: id(service_id.into(), "args[1]")?,
            mode,
        })
    }

    /// `unsubscribe [subscription_id]`.
    ///
    /// # Errors
    /// A [`WireError`] (`args[0]`) when the id is empty.
    pub fn unsubscribe(subscription_id: impl Into<String>) -> Result<ControlCall, WireError> {
        let subscription_id = Id::new(subscription_id.into())
            .map_err(|e| WireError::new("control call", "args[0]", e.rule().to_string()))?;
        Ok(ControlCall::Unsubscribe { subscription_id })
    }

    /// The control call `call` is, or `None` when it is not one: another service, an
    /// `instance` given, an unknown member, or arguments that do not fit (a wrong count, an
    /// empty id, an unknown mode). Chord hands such a call on to the provider as an ordinary
    /// call, which refuses `$chord.service` as `service_not_allowed`.
    #[must_use]
    pub fn from_call(call: &ServiceCall) -> Option<ControlCall> {
        if !call.is_control() || call.instance.is_some() {
            return None;
        }
        let args = &call.args;
        match (call.member.as_str(), args.len()) {
            ("catalogue", 0) => Some(ControlCall::Catalogue),
            ("subscribe", 3) => Some(ControlCall::Subscribe {
                subscription_id: id_arg(args, 0)?,
                service_id: id_arg(args, 1)?,
                mode: decode::<ServiceMode>(&args[2], "control call").ok()?,
            }),
            ("unsubscribe", 1) => Some(ControlCall::Unsubscribe { subscription_id: id_arg(args, 0)? }),
            _ => None,
        }
    }

    /// The member name: `catalogue`, `subscribe` or `unsubscribe`.
    #[must_use]
    pub fn member(&self) -> &'static str {
        match self {
            ControlCall::Catalogue => "catalogue",
            ControlCall::Subscribe { .. } => "subscribe",
            ControlCall::Unsubscribe { .. } => "unsubscribe",
        }
    }

    /// The service call that carries it (to [`SERVICE_CONTROL_ID`], no instance).
    #[must_use]
    pub fn to_call(&self) -> ServiceCall {
        let text = |s: &str| Payload::from_value(&Value::String(s.to_owned())).unwrap_or_else(|_| Payload::null());
        let args = match self {
            ControlCall::Catalogue => Vec::new(),
            ControlCall::Subscribe { subscription_id, service_id, mode } => {
                vec![text(subscription_id), text(service_id), text(mode.as_str())]
            }
            ControlCall::Unsubscribe { subscription_id } => vec![text(subscription_id)],
        };
        let control = Id::new(SERVICE_CONTROL_ID).unwrap_or_else(|_| unreachable!("a non-empty id"));
        let member = Id::new(self.member()).unwrap_or_else(|_| unreachable!("a non-empty id"));
        ServiceCall::new(control, member, args)
    }

    /// Writes the control call into a payload, as [`ServiceCall::to_payload`] of
    /// [`to_call`](Self::to_call).
    ///
    /// # Errors
    /// None in practice (every control call is a valid service call); the type is that of
    /// [`ServiceCall::to_payload`].
    pub fn to_payload(&self) -> Result<Payload, WireError> {
        self.to_call().to_payload()
    }
}

impl ServiceMode {
    /// The wire text: `singleton` or `keyed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceMode::Singleton => "singleton",
            ServiceMode::Keyed => "keyed",
        }
    }
}

impl fmt::Display for ServiceMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl InstanceAddress {
    /// Reads an instance address `{key, generation}` (key non-empty, generation an integer
    /// from 1).
    ///
    /// # Errors
    /// A [`WireError`] naming the field.
    pub fn from_payload(payload: &Payload) -> Result<InstanceAddress, WireError> {
        decode(payload, "service instance address")
    }

    /// Writes the address into a payload.
    ///
    /// # Errors
    /// A [`WireError`] when a field holds a value the grammar refuses.
    pub fn to_payload(&self) -> Result<Payload, WireError> {
        encode(self, "service instance address")
    }

    /// The generation, as an integer (at least 1 in a checked address).
    #[must_use]
    pub fn generation(&self) -> i64 {
        self.generation.get()
    }
}

impl fmt::Display for InstanceAddress {
    /// `key@generation`, as Chord names an instance in its messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.key.as_str(), self.generation.get())
    }
}

impl Catalogue {
    /// Reads a catalogue, as `parseServiceCatalogue` does: an array of `{serviceId, mode}`,
    /// every service id non-empty and given once.
    ///
    /// # Errors
    /// A [`WireError`] naming the entry (`[3].serviceId` for a repeated id).
    pub fn from_payload(payload: &Payload) -> Result<Catalogue, WireError> {
        let catalogue: Catalogue = decode(payload, "service catalogue")?;
        catalogue.check()?;
        Ok(catalogue)
    }

    /// A catalogue of `entries`, checked.
    ///
    /// # Errors
    /// A [`WireError`] naming the entry whose service id came before.
    pub fn from_entries(entries: Vec<CatalogueEntry>) -> Result<Catalogue, WireError> {
        let catalogue = Catalogue::new(entries).map_err(|e| WireError::protocol("service catalogue", &e))?;
        catalogue.check()?;
        Ok(catalogue)
    }

    /// Writes the catalogue into a payload.
    ///
    /// # Errors
    /// A [`WireError`] when a service id is given twice.
    pub fn to_payload(&self) -> Result<Payload, WireError> {
        self.check()?;
        encode(self, "service catalogue")
    }

    /// The entry of `service_id`, if offered.
    #[must_use]
    pub fn entry(&self, service_id: &str) -> Option<&CatalogueEntry> {
        self.get().iter().find(|e| e.service_id.as_str() == service_id)
    }

    fn check(&self) -> Result<(), WireError> {
        let mut seen = HashSet::with_capacity(self.get().len());
        for (i, entry) in self.get().iter().enumerate() {
            if !seen.insert(entry.service_id.as_str()) {
                return Err(WireError::new("service catalogue", format!("[{i}].serviceId"), "service id given twice"));
            }
        }
        Ok(())
    }
}

impl InstanceSnapshot {
    /// Reads one instance snapshot (`{instance?, members}`), every state member's ops checked.
    ///
    /// # Errors
    /// A [`WireError`] naming the field (`members[1].ops[0][1]`).
    pub fn from_payload(payload: &Payload) -> Result<InstanceSnapshot, WireError> {
        const WHAT: &str = "service instance snapshot";
        let snapshot: InstanceSnapshot = decode(payload, WHAT)?;
        snapshot.check("", WHAT)?;
        Ok(snapshot)
    }

    /// The state members (name, sequence, ops), in order.
    pub fn states(&self) -> impl Iterator<Item = &StateSnapshot> {
        self.members.iter().filter_map(|m| match m {
            MemberSnapshot::State(s) => Some(s),
            _ => None,
        })
    }

    fn check(&self, at: &str, what: &'static str) -> Result<(), WireError> {
        for (i, member) in self.members.iter().enumerate() {
            if let MemberSnapshot::State(state) = member {
                check_ops(&state.ops, &join(at, &format!("members[{i}]")), what)?;
            }
        }
        Ok(())
    }
}

impl MemberSnapshot {
    /// Whether the member is a state member.
    #[must_use]
    pub fn is_state(&self) -> bool {
        matches!(self, MemberSnapshot::State(_))
    }
}

impl Snapshot {
    /// Reads a wire subscription snapshot (the result of `subscribe`), as
    /// `parseWireServiceSubscriptionSnapshot` does.
    ///
    /// # Errors
    /// A [`WireError`] naming the field (`instances[0].members[1].ops[2][1]`).
    pub fn from_payload(payload: &Payload) -> Result<Snapshot, WireError> {
        const WHAT: &str = "service subscription snapshot";
        let snapshot: Snapshot = decode(payload, WHAT)?;
        snapshot.check(WHAT)?;
        Ok(snapshot)
    }

    /// Writes the snapshot into a payload, every op checked.
    ///
    /// # Errors
    /// A [`WireError`] naming a malformed op or field.
    pub fn to_payload(&self) -> Result<Payload, WireError> {
        const WHAT: &str = "service subscription snapshot";
        self.check(WHAT)?;
        encode(self, WHAT)
    }

    fn check(&self, what: &'static str) -> Result<(), WireError> {
        for (i, instance) in self.instances.iter().enumerate() {
            instance.check(&format!("instances[{i}]"), what)?;
        }
        Ok(())
    }
}

impl Update {
    /// Reads a wire provider update (the payload of a `service_update`), as
    /// `parseWireServiceProviderUpdate` does.
    ///
    /// # Errors
    /// A [`WireError`] naming the field (`ops[2][1]`, `snapshot.members[0].name`).
    pub fn from_payload(payload: &Payload) -> Result<Update, WireError> {
        const WHAT: &str = "service provider update";
        let update: Update = decode(payload, WHAT)?;
        update.check(WHAT)?;
        Ok(update)
    }

    /// Writes the update into a payload, every op checked.
    ///
    /// # Errors
    /// A [`WireError`] naming a malformed op or field.
    pub fn to_payload(&self) -> Result<Payload, WireError> {
        const WHAT: &str = "service provider update";
        self.check(WHAT)?;
        encode(self, WHAT)
    }

    /// The `type` of the update: `state`, `unavailable`, `replaced`, `spawned` or `closed`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Update::State(_) => "state",
            Update::Unavailable(_) => "unavailable",
            Update::Replaced(_) => "replaced",
            Update::Spawned(_) => "spawned",
            Update::Closed(_) => "closed",
        }
    }

    fn check(&self, what: &'static str) -> Result<(), WireError> {
        match self {
            Update::State(state) => check_ops(&state.ops, "", what),
            Update::Replaced(replaced) => replaced.snapshot.check("snapshot", what),
            Update::Spawned(spawned) => spawned.instance.check("instance", what),
            Update::Unavailable(_) | Update::Closed(_) => Ok(()),
        }
    }
}

impl RemoteServiceErrorCode {
    /// The eight codes, in Chord's order.
    pub const ALL: [RemoteServiceErrorCode; 8] = [
        RemoteServiceErrorCode::ServiceNotAllowed,
        RemoteServiceErrorCode::ServiceNotFound,
        RemoteServiceErrorCode::ServiceModeMismatch,
        RemoteServiceErrorCode::ServiceMemberNotFound,
        RemoteServiceErrorCode::ServiceMemberMismatch,
        RemoteServiceErrorCode::ServiceInstanceNotFound,
        RemoteServiceErrorCode::ServiceStaleInstance,
        RemoteServiceErrorCode::ServiceInvalidValue,
    ];

    /// The wire text (`service_not_found`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RemoteServiceErrorCode::ServiceNotAllowed => "service_not_allowed",
            RemoteServiceErrorCode::ServiceNotFound => "service_not_found",
            RemoteServiceErrorCode::ServiceModeMismatch => "service_mode_mismatch",
            RemoteServiceErrorCode::ServiceMemberNotFound => "service_member_not_found",
            RemoteServiceErrorCode::ServiceMemberMismatch => "service_member_mismatch",
            RemoteServiceErrorCode::ServiceInstanceNotFound => "service_instance_not_found",
            RemoteServiceErrorCode::ServiceStaleInstance => "service_stale_instance",
            RemoteServiceErrorCode::ServiceInvalidValue => "service_invalid_value",
        }
    }

    /// The code written `text`, if it is one of the eight (`isRemoteServiceErrorCode`).
    #[must_use]
    pub fn from_wire(text: &str) -> Option<RemoteServiceErrorCode> {
        Self::ALL.into_iter().find(|code| code.as_str() == text)
    }
}

impl fmt::Display for RemoteServiceErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests;
