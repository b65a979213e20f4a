//! [`CallInspector`]: how the application tells a [`Router`](super::Router) which calls open
//! and close subscriptions, the one thing routing needs to know about payloads it never reads.

use crate::{Payload, Request, SubscriptionId};

/// What a call does to subscriptions, as the application's [`CallInspector`] sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallEffect {
    /// Nothing the router must track (the answer for most calls).
    Plain,
    /// The call opens subscription `0`: its `service_update`s go to the calling client from the
    /// moment the call is forwarded, until the call fails, an [`Unsubscribe`](Self::Unsubscribe)
    /// call of that client succeeds, or the client goes away.
    Subscribe(SubscriptionId),
    /// The call closes subscription `0`: once it answers `ok: true`, its updates are no longer
    /// routed.
    Unsubscribe(SubscriptionId),
}

/// Reads a request on its way to a shared upstream and says what it does to subscriptions.
///
/// Payloads are opaque to the protocol (docs/PROTOCOL.md section 5): the subscription id of a
/// `service_update` is chosen inside an application call (for Chord, an argument of
/// `$chord.service` `subscribe`), which only the application can read. The router calls the
/// inspector once per request forwarded to a shared upstream (never for dedicated upstreams,
/// whose updates all belong to their one client), and only reads what it returns: the call
/// itself is forwarded byte for byte whatever the inspector does.
///
/// Closures `FnMut(&Request) -> CallEffect + Send` are inspectors:
///
/// ```
/// use pi_protocol::connection::{CallEffect, Router, RouterOptions};
/// use pi_protocol::{Request, ServerId, SubscriptionId};
///
/// // Calls of the form {"member": "subscribe", "args": [subscriptionId, ...]} open one.
/// let inspector = |request: &Request| {
///     let call = request.call.to_value();
///     let first = call["args"][0].as_str().and_then(|s| SubscriptionId::new(s).ok());
///     match (call["member"].as_str(), first) {
///         (Some("subscribe"), Some(id)) => CallEffect::Subscribe(id),
///         (Some("unsubscribe"), Some(id)) => CallEffect::Unsubscribe(id),
///         _ => CallEffect::Plain,
///     }
/// };
/// let home = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?;
/// let router = Router::new(home, RouterOptions::default()).with_inspector(inspector);
/// # drop(router);
/// # Ok::<(), pi_protocol::ProtocolError>(())
/// ```
pub trait CallInspector: Send {
    /// What `request` does to subscriptions.
    fn inspect(&mut self, request: &Request) -> CallEffect;

    /// The call that closes `subscription`, which the router sends to the upstream (with a
    /// server target) on behalf of a client that went away while holding it (rule 7 of the
    /// [router](super) module). The subscription id stays reserved for that client until the
    /// call is answered, so updates the server still sends for it never reach the next client
    /// that opens the same id.
    ///
    /// The default, `None`, frees the id at once: a server that keeps streaming the old
    /// subscription then feeds whichever client opens that id next on the same upstream.
    /// Closures get the default.
    fn unsubscribe_call(&mut self, subscription: &SubscriptionId) -> Option<Payload> {
        let _ = subscription;
        None
    }
}

impl<F> CallInspector for F
where
    F: FnMut(&Request) -> CallEffect + Send,
{
    fn inspect(&mut self, request: &Request) -> CallEffect {
        self(request)
    }
}
