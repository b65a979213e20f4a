//! Chord on the [`Client`] (feature `chord`): the `$chord.service` catalogue, and subscriptions
//! whose updates arrive decoded with the replicated state applied ([`ServiceSubscription`]).

use std::sync::atomic::Ordering;

use pi_chord::subscription::{Applied, StateChange, StateRegistry};
use pi_chord::wire::{Catalogue, ControlCall, InstanceAddress, ServiceMode, Snapshot, Update};
use serde_json::Value;

use super::{Client, RequestError, Updates, UpdatesError};
use crate::connection::CallTarget;
use crate::{Payload, SubscriptionId};

/// One update of a [`ServiceSubscription`]: as it came, and what it did to the state.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AppliedUpdate {
    /// The provider update, decoded (Chord's `parseWireServiceProviderUpdate`).
    pub update: Update,
    /// Its effect: for a `state` update, the member's whole value after its ops, with its
    /// sequence ([`StateChange`]).
    pub applied: Applied,
}

/// Why a [`ServiceSubscription`] stopped following its service.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceUpdateError {
    /// The update stream ended: the connection ended, or the application fell behind by more
    /// than [`ClientBuilder::max_buffered_update_bytes`](super::ClientBuilder::max_buffered_update_bytes).
    #[error(transparent)]
    Updates(#[from] UpdatesError),
    /// An update Chord's grammar or the state registry refuses (a malformed update, a sequence
    /// gap, ops that do not apply). The real pi-client ends the whole connection here; this
    /// ends the subscription's stream only (the replicas no longer follow the provider).
    #[error("invalid service update: {0}")]
    Invalid(String),
}

/// A subscription to a Chord service, from [`Client::subscribe_service`]: the snapshot, the
/// state members' values, then each update decoded and applied, in order
/// ([`next`](Self::next)). Updates that arrived before the snapshot (the server may send them
/// first) are applied after it, as pi-client does.
#[derive(Debug)]
#[must_use = "updates are queued until they are read or the subscription dropped"]
pub struct ServiceSubscription {
    client: Client,
    target: CallTarget,
    snapshot: Snapshot,
    states: Vec<StateChange>,
    registry: StateRegistry,
    updates: Updates,
    ended: bool,
}

impl ServiceSubscription {
    /// The subscription id (`service-1`, `service-2`, ... per client, as pi-client names them).
    pub fn id(&self) -> &SubscriptionId {
        self.updates.subscription_id()
    }

    /// The snapshot the server answered `subscribe` with.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Every state member of the snapshot with its value and sequence, in snapshot order.
    pub fn states(&self) -> &[StateChange] {
        &self.states
    }

    /// A state member's current value (every update read so far applied).
    pub fn value(&self, instance: Option<&InstanceAddress>, member: &str) -> Option<&Value> {
        self.registry.value(instance, member)
    }

    /// The next update, applied; `Some(Err(_))` once when the subscription stops following the
    /// service, then `None`.
    pub async fn next(&mut self) -> Option<Result<AppliedUpdate, ServiceUpdateError>> {
        if self.ended {
            return None;
        }
        let outcome = match self.updates.next().await {
            Some(Ok(payload)) => self.apply(&payload),
            Some(Err(error)) => Err(error.into()),
            None => {
                self.ended = true;
                return None;
            }
        };
        if outcome.is_err() {
            self.ended = true;
        }
        Some(outcome)
    }

    fn apply(&mut self, payload: &Payload) -> Result<AppliedUpdate, ServiceUpdateError> {
        let update = Update::from_payload(payload).map_err(|e| ServiceUpdateError::Invalid(e.to_string()))?;
        let applied = self.registry.apply(&update).map_err(|e| ServiceUpdateError::Invalid(e.to_string()))?;
        Ok(AppliedUpdate { update, applied })
    }

    /// Ends the subscription on the server (`$chord.service unsubscribe [id]`, to the target it
    /// was made on).
    ///
    /// # Errors
    /// As [`Client::request`].
    pub async fn unsubscribe(self) -> Result<(), RequestError> {
        let call = control_payload(&ControlCall::unsubscribe(self.id().as_str()))?;
        self.client.request(self.target, call).await.map(drop)
    }
}

fn control_payload(call: &Result<ControlCall, pi_chord::wire::WireError>) -> Result<Payload, RequestError> {
    call.as_ref()
        .map_err(|e| RequestError::Invalid(e.to_string()))?
        .to_payload()
        .map_err(|e| RequestError::Invalid(e.to_string()))
}

impl Client {
    /// The services `target` offers: `$chord.service catalogue []`, read with Chord's strict
    /// catalogue parser.
    ///
    /// # Errors
    /// As [`request`](Self::request); [`RequestError::Invalid`] for an answer that is no catalogue.
    pub async fn catalogue(&self, target: CallTarget) -> Result<Catalogue, RequestError> {
        let result = self.request(target, control_payload(&Ok(ControlCall::Catalogue))?).await?;
        Catalogue::from_payload(&result.unwrap_or_else(Payload::null)).map_err(|e| RequestError::Invalid(e.to_string()))
    }

    /// Subscribes to the Chord service `service_id` of `target` in `mode`
    /// (`$chord.service subscribe [service-N, serviceId, mode]`), and returns the snapshot and
    /// the stream of its updates with the replicated state applied.
    ///
    /// # Errors
    /// As [`request`](Self::request) (for example `service_mode_mismatch` from the server);
    /// [`RequestError::Invalid`] for a snapshot Chord refuses.
    pub async fn subscribe_service(
        &self,
        target: CallTarget,
        service_id: &str,
        mode: ServiceMode,
    ) -> Result<ServiceSubscription, RequestError> {
        let n = self.inner.next_subscription.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("service-{n}");
        let call = control_payload(&ControlCall::subscribe(id.as_str(), service_id, mode))?;
        let subscription_id = SubscriptionId::new(id).map_err(|e| RequestError::Invalid(e.to_string()))?;
        // Registered before the call: the server may send updates before its answer.
        let updates = self.updates(subscription_id)?;
        let result = self.request(target, call).await?;
        let snapshot = Snapshot::from_payload(&result.unwrap_or_else(Payload::null))
            .map_err(|e| RequestError::Invalid(e.to_string()))?;
        let mut registry = StateRegistry::new();
        let states = registry.install(&snapshot).map_err(|e| RequestError::Invalid(e.to_string()))?;
        Ok(ServiceSubscription { client: self.clone(), target, snapshot, states, registry, updates, ended: false })
    }
}
