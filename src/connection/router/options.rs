//! [`RouterOptions`]: the limits of a [`Router`](super::Router) and the errors it answers with
//! on its own.

use crate::connection::options::{default_error, option_setters};
use crate::connection::{DEFAULT_MAX_IN_FLIGHT, DEFAULT_REQUEST_ID_PREFIX};
use crate::{ErrorBody, PROTOCOL_VERSION};

/// The default of [`RouterOptions::max_subscriptions`]: subscriptions one client may hold
/// through shared upstreams at once.
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 1024;

/// Why a [`Router`](super::Router) answered a client's request itself instead of forwarding it
/// (reported as [`RouterEvent::Refused`](super::RouterEvent::Refused)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refusal {
    /// The client already has a request with this id pending ([`RouterOptions::duplicate_id`]).
    DuplicateId,
    /// The client has [`RouterOptions::max_in_flight`] requests pending
    /// ([`RouterOptions::too_many_requests`]).
    TooManyRequests,
    /// No upstream serves the target's `serverId`: none announced it, or it departed
    /// ([`RouterOptions::unknown_server`]).
    UnknownServer,
    /// The call opens or closes a subscription id that another client holds on the same shared
    /// upstream ([`RouterOptions::subscription_in_use`]).
    SubscriptionInUse,
    /// The call opens a subscription while the client holds
    /// [`RouterOptions::max_subscriptions`] ([`RouterOptions::too_many_subscriptions`]).
    TooManySubscriptions,
}

/// How a [`Router`](super::Router) behaves, and the errors it sends by itself.
///
/// Error codes are opaque strings to the protocol (docs/PROTOCOL.md section 4), so each error the
/// router sends on its own is configurable. The defaults:
///
/// | field | code | sent when |
/// |---|---|---|
/// | `unsupported_version` | `unsupported_version` | a client's `hello` offers a version other than 8 (as `hello_error`) |
/// | `duplicate_id` | `duplicate_request` | a request reuses the id of one of the client's pending requests |
/// | `too_many_requests` | `too_many_requests` | the client already has `max_in_flight` requests pending |
/// | `unknown_server` | `unknown_server` | no connected upstream serves the target's `serverId` |
/// | `subscription_in_use` | `subscription_in_use` | the call opens or closes a subscription id another client holds on that upstream |
/// | `too_many_subscriptions` | `too_many_subscriptions` | the client already holds `max_subscriptions` subscriptions |
/// | `server_departed` | `server_departed` | the upstream holding a pending request went away before answering it |
///
/// Build it with the chained setters:
///
/// ```
/// use pi_protocol::connection::RouterOptions;
/// let options = RouterOptions::default().max_in_flight(64).request_id_prefix("via-router-");
/// assert_eq!(options.max_in_flight, 64);
/// assert_eq!(options.unknown_server.code.as_str(), "unknown_server");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RouterOptions {
    /// The `hello_error` for an unsupported version (code `unsupported_version`).
    pub unsupported_version: ErrorBody,
    /// The error response for an id the client has pending already (code `duplicate_request`).
    pub duplicate_id: ErrorBody,
    /// The error response past [`max_in_flight`](Self::max_in_flight) (code `too_many_requests`).
    pub too_many_requests: ErrorBody,
    /// The error response for a `serverId` no upstream serves (code `unknown_server`).
    pub unknown_server: ErrorBody,
    /// The error response for a subscription id held by another client (code
    /// `subscription_in_use`).
    pub subscription_in_use: ErrorBody,
    /// The error response past [`max_subscriptions`](Self::max_subscriptions) (code
    /// `too_many_subscriptions`).
    pub too_many_subscriptions: ErrorBody,
    /// The error response that settles a pending request whose upstream went away (code
    /// `server_departed`).
    pub server_departed: ErrorBody,
    /// How many requests one client may have pending at once (default
    /// [`DEFAULT_MAX_IN_FLIGHT`]); bounds what a client makes the router hold.
    pub max_in_flight: usize,
    /// How many subscriptions one client may hold through shared upstreams (default
    /// [`DEFAULT_MAX_SUBSCRIPTIONS`]).
    pub max_subscriptions: usize,
    /// Upstream request ids are this prefix followed by a decimal counter that starts at 1 on
    /// each upstream (default [`DEFAULT_REQUEST_ID_PREFIX`], `req-`).
    pub request_id_prefix: String,
}

impl Default for RouterOptions {
    fn default() -> Self {
        RouterOptions {
            unsupported_version: default_error(
                "unsupported_version",
                &format!("This server speaks protocol version {PROTOCOL_VERSION}"),
            ),
            duplicate_id: default_error("duplicate_request", "A request with this id is already in flight"),
            too_many_requests: default_error("too_many_requests", "Too many requests in flight"),
            unknown_server: default_error("unknown_server", "No server with this id is connected to the coordinator"),
            subscription_in_use: default_error("subscription_in_use", "Another client holds this subscription id"),
            too_many_subscriptions: default_error("too_many_subscriptions", "Too many subscriptions held"),
            server_departed: default_error("server_departed", "The server went away before answering"),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
            request_id_prefix: DEFAULT_REQUEST_ID_PREFIX.to_owned(),
        }
    }
}

option_setters! {
    RouterOptions {
        /// Sets [`unsupported_version`](Self::unsupported_version).
        unsupported_version: ErrorBody;
        /// Sets [`duplicate_id`](Self::duplicate_id).
        duplicate_id: ErrorBody;
        /// Sets [`too_many_requests`](Self::too_many_requests).
        too_many_requests: ErrorBody;
        /// Sets [`unknown_server`](Self::unknown_server).
        unknown_server: ErrorBody;
        /// Sets [`subscription_in_use`](Self::subscription_in_use).
        subscription_in_use: ErrorBody;
        /// Sets [`too_many_subscriptions`](Self::too_many_subscriptions).
        too_many_subscriptions: ErrorBody;
        /// Sets [`server_departed`](Self::server_departed).
        server_departed: ErrorBody;
        /// Sets [`max_in_flight`](Self::max_in_flight).
        max_in_flight: usize;
        /// Sets [`max_subscriptions`](Self::max_subscriptions).
        max_subscriptions: usize;
    }
}

impl RouterOptions {
    /// Sets [`request_id_prefix`](Self::request_id_prefix).
    #[must_use]
    pub fn request_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.request_id_prefix = prefix.into();
        self
    }

    /// The error body the router answers with for `refusal`.
    pub(super) fn refusal(&self, refusal: Refusal) -> &ErrorBody {
        match refusal {
            Refusal::DuplicateId => &self.duplicate_id,
            Refusal::TooManyRequests => &self.too_many_requests,
            Refusal::UnknownServer => &self.unknown_server,
            Refusal::SubscriptionInUse => &self.subscription_in_use,
            Refusal::TooManySubscriptions => &self.too_many_subscriptions,
        }
    }
}
