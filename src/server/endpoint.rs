//! [`ChordEndpoint`]: Chord services on a [`Server`](super::Server) (features `tokio` and
//! `chord`); its rules are on the type.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use super::{Call, CallError, CallResult, Context};
use crate::chord::delta::diff;
use crate::chord::subscription::{ServiceInstance, ServiceMember, SubscriptionPublisher};
use crate::chord::wire::{
    Catalogue, CatalogueEntry, ControlCall, Id, RemoteServiceErrorCode, ServiceMode, SERVICE_CONTROL_ID,
};
use crate::{Payload, SubscriptionId};

/// The default of [`ChordEndpointBuilder::max_subscriptions`]: 1,024 subscriptions held by one
/// connection.
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 1024;

/// Why the endpoint could not be built, or a state member not changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChordError {
    /// A declaration the endpoint refuses: an empty or duplicate service id, the control
    /// service's id, a service with no members, an empty or duplicate member name.
    #[error("invalid Chord service declaration: {0}")]
    Declaration(String),
    /// [`ChordEndpoint::set`] or [`update`](ChordEndpoint::update) of a state member that was
    /// not declared.
    #[error("unknown service state {service}.{member}")]
    UnknownState {
        /// The service id given.
        service: String,
        /// The member name given.
        member: String,
    },
    /// The state's sequence passed 2^53 - 1 (Chord's largest integer).
    #[error("service state {service}.{member}: the sequence passed 2^53 - 1")]
    SequenceExhausted {
        /// The service id.
        service: String,
        /// The member name.
        member: String,
    },
}

impl From<ChordError> for CallError {
    /// A handler's `?` on a [`ChordError`]: an internal failure, hidden from the client.
    fn from(error: ChordError) -> Self {
        CallError::internal(error)
    }
}

impl CallError {
    /// A failure with one of Chord's remote service codes (`service_invalid_value`, ...),
    /// which the client sees as it is.
    pub fn remote(code: RemoteServiceErrorCode, message: impl Into<String>) -> Self {
        CallError::new(code.as_str(), message)
    }
}

/// One singleton service to declare on a [`ChordEndpoint`]: its `serviceId`, its method names
/// and its state members with their first values (snapshot members are listed sorted by name,
/// as Chord sorts an implementation's keys).
///
/// ```
/// use pi_protocol::server::ChordService;
/// use serde_json::json;
///
/// let counter = ChordService::new("demo.counter").method("bump").state("count", json!({"value": 0}));
/// # let _ = counter;
/// ```
#[derive(Debug, Clone)]
pub struct ChordService {
    id: String,
    members: Vec<(String, Option<Value>)>,
}

impl ChordService {
    /// A service with this id and no members yet.
    #[must_use]
    pub fn new(service_id: impl Into<String>) -> Self {
        ChordService { id: service_id.into(), members: Vec::new() }
    }

    /// Adds a method member.
    #[must_use]
    pub fn method(mut self, name: impl Into<String>) -> Self {
        self.members.push((name.into(), None));
        self
    }

    /// Adds a state member holding `value` (sequence 0).
    ///
    /// The snapshot writes `value` and the Delta ops of its changes in the key order of its
    /// objects, which is your `serde_json`'s: sorted by default, insertion order with its
    /// `preserve_order` feature (what a JavaScript provider writes). Replicas reach the same
    /// value either way; the bytes, and which path gets the first path id, differ.
    #[must_use]
    pub fn state(mut self, name: impl Into<String>, value: Value) -> Self {
        self.members.push((name.into(), Some(value)));
        self
    }
}

/// Builds a [`ChordEndpoint`]: see [`ChordEndpoint::builder`].
#[derive(Debug, Default)]
pub struct ChordEndpointBuilder {
    services: Vec<ChordService>,
    max_subscriptions: Option<usize>,
}

impl ChordEndpointBuilder {
    /// Declares a service (catalogue order is declaration order).
    #[must_use]
    pub fn service(mut self, service: ChordService) -> Self {
        self.services.push(service);
        self
    }

    /// At most `subscriptions` held by one connection at once (default
    /// [`DEFAULT_MAX_SUBSCRIPTIONS`]); a subscribe past it is an internal error.
    #[must_use]
    pub fn max_subscriptions(mut self, subscriptions: usize) -> Self {
        self.max_subscriptions = Some(subscriptions);
        self
    }

    /// The endpoint.
    ///
    /// # Errors
    /// [`ChordError::Declaration`] for an empty or duplicate service id, `$chord.service`, a
    /// service without members, an empty or duplicate member name.
    pub fn build(self) -> Result<ChordEndpoint, ChordError> {
        let refuse = |what: String| Err(ChordError::Declaration(what));
        let mut services: Vec<Declared> = Vec::with_capacity(self.services.len());
        for service in self.services {
            let Ok(id) = Id::new(service.id.clone()) else { return refuse("an empty service id".into()) };
            if service.id == SERVICE_CONTROL_ID || services.iter().any(|s| s.id == id) {
                return refuse(format!("service id {} used twice or reserved", service.id));
            }
            if service.members.is_empty() {
                return refuse(format!("service {} has no members", service.id));
            }
            let mut members = BTreeMap::new();
            for (name, value) in service.members {
                if name.is_empty() || members.contains_key(&name) {
                    return refuse(format!("service {}: member name {name:?} empty or used twice", service.id));
                }
                let member = match value {
                    None => Member::Method,
                    Some(value) => Member::State { value, sequence: 0 },
                };
                members.insert(name, member);
            }
            services.push(Declared { id, members });
        }
        let entries = services.iter().map(|s| CatalogueEntry::new(s.id.clone(), ServiceMode::Singleton)).collect();
        let catalogue = Catalogue::from_entries(entries)
            .and_then(|c| c.to_payload())
            .map_err(|e| ChordError::Declaration(format!("the catalogue: {e}")))?;
        let registry = Registry { services, connections: HashMap::new() };
        Ok(ChordEndpoint {
            inner: Arc::new(Mutex::new(registry)),
            max_subscriptions: self.max_subscriptions.unwrap_or(DEFAULT_MAX_SUBSCRIPTIONS),
            catalogue,
        })
    }
}

/// Chord services on a [`Server`](super::Server) (features `tokio` and
/// `chord`), answering the `$chord.service` control calls (docs/PROTOCOL.md section 8; the
/// shapes are `pi-chord/schema/chord.json`'s) as `@earendil-works/chord@0.85.1`'s
/// `RemoteServiceProvider` behind `createRemoteServiceEndpoint` does.
///
/// The application declares its services ([`ChordService`]: a `serviceId`, its methods, its
/// state members with their first values), calls [`ChordEndpoint::answer`] first in
/// [`Service::call`](super::Service::call), and runs the methods the endpoint hands back. It
/// changes a state member with [`ChordEndpoint::set`] or [`ChordEndpoint::update`]: every
/// subscription of the service, on every connection, is sent a `service_update` of type `state`
/// whose ops pi-chord's Delta producer derives ([`SubscriptionPublisher`]: one Delta encoder per
/// subscription and state member, so a path gets its id on its second use in each stream).
///
/// What the endpoint answers itself, with Chord's codes and texts:
///
/// - `catalogue []`: `[{serviceId, mode}]` in declaration order;
/// - `subscribe [subscriptionId, serviceId, mode]`: the snapshot `{serviceId, mode, instances}`,
///   its members sorted by name, each state member as `{name, kind: "state", sequence, ops:
///   [["r", value]]}` with its current sequence; an undeclared service is `service_not_allowed`
///   "Remote service X is not allowlisted", another mode `service_mode_mismatch` "Remote
///   service X is singleton, not keyed", more than
///   [`max_subscriptions`](ChordEndpointBuilder::max_subscriptions) on one connection an internal
///   error;
/// - `unsubscribe [subscriptionId]`: no result; an id the connection does not hold is an
///   internal error (Chord throws a plain `Error`);
/// - any other `$chord.service` call, and any undeclared service: `service_not_allowed`;
/// - an `instance` on a singleton: `service_mode_mismatch` "Remote service X is singleton";
/// - an undeclared member: `service_member_not_found` "Unknown remote service member X.m"; a
///   state member called: `service_member_mismatch` "Remote service member X.m is not a method".
///
/// A method's own failures keep their code when the application answers with one of Chord's
/// ([`CallError::remote`]); anything else it fails with is hidden as `internal_error`, as the
/// reference server hides it. Subscriptions of a closed connection are dropped at the next
/// change of their service or the next subscribe on the endpoint.
///
/// One endpoint serves every connection of a server; cloning it gives another handle on the
/// same services.
///
/// ```
/// use pi_protocol::server::{Call, CallResult, ChordEndpoint, ChordService, Context, Service};
/// use serde_json::json;
///
/// struct App {
///     chord: ChordEndpoint,
/// }
///
/// impl Service for App {
///     async fn call(&self, call: Call, cx: Context) -> CallResult {
///         if let Some(answer) = self.chord.answer(&call, &cx) {
///             return answer; // a control call, or one Chord refuses
///         }
///         // A declared method: here only demo.counter bump(n).
///         let n = call.args_json().first().and_then(|n| n.as_i64()).unwrap_or(0);
///         self.chord.update("demo.counter", "count", |count| count["value"] = json!(count["value"].as_i64().unwrap_or(0) + n))?;
///         Ok(None)
///     }
/// }
///
/// let chord = ChordEndpoint::builder()
///     .service(ChordService::new("demo.counter").method("bump").state("count", json!({"value": 0})))
///     .build()?;
/// let app = App { chord };
/// # let _ = app;
/// # Ok::<(), pi_protocol::server::ChordError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ChordEndpoint {
    inner: Arc<Mutex<Registry>>,
    max_subscriptions: usize,
    /// The answer to `catalogue`, encoded once: the services are fixed at build.
    catalogue: Payload,
}

#[derive(Debug)]
struct Registry {
    services: Vec<Declared>,
    /// Per connection (its key), the subscriptions it holds.
    connections: HashMap<u64, HashMap<SubscriptionId, Subscriber>>,
}

#[derive(Debug)]
struct Declared {
    id: Id,
    /// Sorted by name, as Chord lists them.
    members: BTreeMap<String, Member>,
}

#[derive(Debug)]
enum Member {
    Method,
    State { value: Value, sequence: i64 },
}

#[derive(Debug)]
struct Subscriber {
    /// Index into `Registry::services`.
    service: usize,
    publisher: SubscriptionPublisher,
    cx: Context,
}

/// Chord's refusal with `code` and `message`.
fn refuse(code: RemoteServiceErrorCode, message: String) -> Option<CallResult> {
    Some(Err(CallError::remote(code, message)))
}

fn not_allowed(service: &str) -> Option<CallResult> {
    refuse(RemoteServiceErrorCode::ServiceNotAllowed, format!("Remote service {service} is not allowlisted"))
}

fn payload(result: Result<Payload, impl std::error::Error + Send + Sync + 'static>) -> CallResult {
    result.map(Some).map_err(CallError::internal)
}

impl ChordEndpoint {
    /// A builder with no services and the defaults.
    #[must_use]
    pub fn builder() -> ChordEndpointBuilder {
        ChordEndpointBuilder::default()
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding it leaves the tables consistent (every change is one statement).
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the endpoint answers for `call` on `cx`'s connection: `Some` for the control calls
    /// and for every call Chord refuses (see [`ChordEndpoint`]), `None` for a call of a
    /// declared method, which the application then runs.
    pub fn answer(&self, call: &Call, cx: &Context) -> Option<CallResult> {
        let service = call.service_id();
        if service == SERVICE_CONTROL_ID {
            return self.control(call, cx).or_else(|| not_allowed(service));
        }
        let registry = self.lock();
        let Some(declared) = registry.services.iter().find(|s| s.id.as_str() == service) else {
            return not_allowed(service);
        };
        if call.instance().is_some() {
            return refuse(
                RemoteServiceErrorCode::ServiceModeMismatch,
                format!("Remote service {service} is singleton"),
            );
        }
        let member = call.member();
        match declared.members.get(member) {
            None => refuse(
                RemoteServiceErrorCode::ServiceMemberNotFound,
                format!("Unknown remote service member {service}.{member}"),
            ),
            Some(Member::State { .. }) => refuse(
                RemoteServiceErrorCode::ServiceMemberMismatch,
                format!("Remote service member {service}.{member} is not a method"),
            ),
            Some(Member::Method) => None,
        }
    }

    /// A control call (`None`: `call` is not one, for Chord's grammar).
    fn control(&self, call: &Call, cx: &Context) -> Option<CallResult> {
        // A control call names no instance.
        if call.instance().is_some() {
            return None;
        }
        // The common case, read without decoding the arguments: `catalogue` with `[]` (0x80,
        // the only encoding of an empty array the decoder admits).
        if call.member() == "catalogue" && call.args().as_cbor() == [0x80] {
            return Some(Ok(Some(self.catalogue.clone())));
        }
        let control = call.control_call()?;
        let mut registry = self.lock();
        registry.prune();
        Some(match control {
            ControlCall::Catalogue => Ok(Some(self.catalogue.clone())),
            ControlCall::Subscribe { subscription_id, service_id, mode } => {
                let Some(index) = registry.services.iter().position(|s| s.id == service_id) else {
                    return not_allowed(&service_id);
                };
                if mode != ServiceMode::Singleton {
                    let message = format!("Remote service {} is singleton, not {}", service_id.as_str(), mode.as_str());
                    return refuse(RemoteServiceErrorCode::ServiceModeMismatch, message);
                }
                let Ok(id) = SubscriptionId::new(subscription_id.as_str()) else {
                    return Some(Err(CallError::internal("a subscription id the Pi protocol refuses")));
                };
                let held = registry.connections.get(&cx.key());
                if held.is_some_and(|subs| subs.contains_key(&id)) {
                    return Some(Err(CallError::internal("Service subscription ID is already active")));
                }
                if held.map_or(0, HashMap::len) >= self.max_subscriptions {
                    return Some(Err(CallError::internal("too many service subscriptions on one connection")));
                }
                let mut publisher = SubscriptionPublisher::new(service_id, ServiceMode::Singleton);
                let snapshot = publisher.snapshot(&[registry.services[index].instance()]);
                let snapshot = match snapshot {
                    Ok(snapshot) => snapshot,
                    Err(error) => return Some(Err(CallError::internal(error))),
                };
                let subscriber = Subscriber { service: index, publisher, cx: cx.clone() };
                registry.connections.entry(cx.key()).or_default().insert(id, subscriber);
                payload(snapshot.to_payload())
            }
            ControlCall::Unsubscribe { subscription_id } => {
                let removed = SubscriptionId::new(subscription_id.as_str())
                    .ok()
                    .and_then(|id| registry.connections.get_mut(&cx.key())?.remove(&id));
                match removed {
                    Some(_) => Ok(None),
                    None => Err(CallError::internal("Service subscription was not found")),
                }
            }
            _ => return None,
        })
    }

    /// How many subscriptions the endpoint holds, on every connection (those of closed
    /// connections count until the next subscribe or state change drops them): for metrics.
    #[must_use]
    pub fn subscription_count(&self) -> usize {
        self.lock().connections.values().map(HashMap::len).sum()
    }

    /// The current value of a state member.
    #[must_use]
    pub fn value(&self, service: &str, member: &str) -> Option<Value> {
        let registry = self.lock();
        match registry.services.iter().find(|s| s.id.as_str() == service)?.members.get(member)? {
            Member::State { value, .. } => Some(value.clone()),
            Member::Method => None,
        }
    }

    /// Makes `value` the state member's value; when it differs from the last one, its sequence
    /// grows by one and every subscription of the service is sent the `state` update (before
    /// the response of the call that changed it, on that call's connection). Returns the
    /// state's sequence.
    ///
    /// # Errors
    /// [`ChordError::UnknownState`] for an undeclared state member,
    /// [`ChordError::SequenceExhausted`] past 2^53 - 1 changes.
    pub fn set(&self, service: &str, member: &str, value: Value) -> Result<i64, ChordError> {
        self.change(service, member, |current| *current = value).map(|((), sequence)| sequence)
    }

    /// Changes the state member's value in place with `change`, then publishes as
    /// [`set`](Self::set) does. Returns what `change` returned.
    ///
    /// # Errors
    /// As [`set`](Self::set); `change` does not run for an undeclared state member.
    pub fn update<R>(
        &self,
        service: &str,
        member: &str,
        change: impl FnOnce(&mut Value) -> R,
    ) -> Result<R, ChordError> {
        self.change(service, member, change).map(|(returned, _)| returned)
    }

    /// [`update`](Self::update), also returning the state's sequence after the change, read
    /// under the same lock.
    fn change<R>(
        &self,
        service: &str,
        member: &str,
        change: impl FnOnce(&mut Value) -> R,
    ) -> Result<(R, i64), ChordError> {
        let mut guard = self.lock();
        let registry = &mut *guard;
        let index = registry.services.iter().position(|s| s.id.as_str() == service);
        let state = index.and_then(|i| registry.services[i].members.get_mut(member));
        let (Some(index), Some(Member::State { value, sequence })) = (index, state) else {
            return Err(unknown(service, member));
        };
        let before = value.clone();
        let returned = change(value);
        // Derived once, encoded per subscription; no ops, no update (as Chord publishes).
        let ops = diff(&before, value);
        if ops.is_empty() {
            return Ok((returned, *sequence));
        }
        if u64::try_from(*sequence).map_or(true, |n| n >= pi_protocol_runtime::MAX_SAFE_INTEGER) {
            *value = before;
            return Err(ChordError::SequenceExhausted { service: service.into(), member: member.into() });
        }
        *sequence += 1;
        let sequence = *sequence;
        // The state is read where it is: the services and the connections are separate tables.
        let value = &*value;
        registry.connections.retain(|_, subscriptions| {
            let mut open = true;
            subscriptions.retain(|id, subscriber| {
                if subscriber.service != index {
                    return true;
                }
                match subscriber.publisher.publish_ops(None, member, &ops, value) {
                    Ok(Some(update)) => match update.to_payload() {
                        Ok(update) => {
                            open = subscriber.cx.publish(id.clone(), update);
                            open
                        }
                        Err(_) => false,
                    },
                    Ok(None) => true,
                    Err(_) => false,
                }
            });
            open && !subscriptions.is_empty()
        });
        Ok((returned, sequence))
    }
}

fn unknown(service: &str, member: &str) -> ChordError {
    ChordError::UnknownState { service: service.into(), member: member.into() }
}

impl Registry {
    /// Drops the subscriptions of connections that are gone.
    fn prune(&mut self) {
        self.connections.retain(|_, subscriptions| subscriptions.values().next().is_some_and(|s| !s.cx.is_closed()));
    }
}

impl Declared {
    /// The singleton's instance as a snapshot describes it now.
    fn instance(&self) -> ServiceInstance {
        let members = self
            .members
            .iter()
            .filter_map(|(name, member)| match member {
                Member::Method => ServiceMember::method(name.as_str()).ok(),
                Member::State { value, sequence } => ServiceMember::state(name.as_str(), *sequence, value.clone()).ok(),
            })
            .collect();
        ServiceInstance::new(members)
    }
}
