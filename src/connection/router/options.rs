//! [`RouterOptions`]: the limits of a [`Router`](super::Router) and the errors it answers with
//! on its own.

use std::time::Duration;

use crate::connection::options::{default_error, option_setters};
use crate::connection::{DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_PENDING_TRANSMIT, DEFAULT_REQUEST_ID_PREFIX};
use crate::{ErrorBody, PROTOCOL_VERSION};

/// The default of [`RouterOptions::max_subscriptions`]: subscriptions one client may hold
/// through shared upstreams at once.
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 1024;
/// The default of [`RouterOptions::handshake_timeout`] and
/// [`RouterOptions::upstream_handshake_timeout`]: 5 s, as the reference server.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// The default of [`RouterOptions::write_timeout`]: 30 s.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The default of [`RouterOptions::frame_timeout`]: 30 s.
pub const DEFAULT_FRAME_TIMEOUT: Duration = Duration::from_secs(30);
/// The default of [`RouterOptions::max_frame_before_hello`]: 1 KiB (a `hello` is about 25 bytes).
pub const DEFAULT_MAX_FRAME_BEFORE_HELLO: usize = 1024;
/// The default of [`RouterOptions::max_client_queue_bytes`] and
/// [`RouterOptions::max_upstream_queue_bytes`]: 64 MiB, four frames of the default frame limit
/// (the reference caps pending output at four times its frame limit too).
pub const DEFAULT_MAX_QUEUE_BYTES: usize = DEFAULT_MAX_PENDING_TRANSMIT;
/// The default of [`RouterOptions::max_total_queue_bytes`]: 1 GiB for every queue of the
/// router together.
pub const DEFAULT_MAX_TOTAL_QUEUE_BYTES: usize = 1 << 30;
/// The default of [`RouterOptions::max_held_bytes`]: 1 MiB of request ids and targets held for
/// one client's calls in flight.
pub const DEFAULT_MAX_HELD_BYTES: usize = 1 << 20;
/// The default of [`RouterOptions::max_in_flight_per_shared_upstream`]: 256, a sixteenth of
/// [`DEFAULT_MAX_IN_FLIGHT`], so that one client holds at most that share of a shared upstream.
pub const DEFAULT_MAX_IN_FLIGHT_PER_SHARED_UPSTREAM: usize = DEFAULT_MAX_IN_FLIGHT / 16;

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
    /// The client has [`RouterOptions::max_in_flight_per_shared_upstream`] requests pending on
    /// this shared upstream ([`RouterOptions::too_many_requests`]).
    TooManyOnSharedUpstream,
    /// The upstream holds [`RouterOptions::upstream_max_in_flight`] forwarded requests
    /// ([`RouterOptions::too_many_requests`]).
    UpstreamFull,
    /// Holding this request's id and target would take the client past
    /// [`RouterOptions::max_held_bytes`] ([`RouterOptions::too_many_requests`]).
    TooManyHeldBytes,
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
/// | `handshake_timeout_error` | `invalid_request` | a client sent no `hello` within `handshake_timeout` (as `hello_error`, the reference server's answer) |
///
/// And its bounds (docs/PROTOCOL.md section 8, "The coordinator"). Bytes queued are counted
/// with [`Transmit::queued_bytes`](super::Transmit::queued_bytes) from the moment the router
/// produces a message until the driver reports it written
/// ([`Router::client_written`](super::Router::client_written),
/// [`Router::upstream_written`](super::Router::upstream_written)):
///
/// | field | default | enforced by | past it |
/// |---|---|---|---|
/// | `handshake_timeout` | 5 s | router | a client without `hello`: `hello_error` `invalid_request` "Handshake timeout", closed |
/// | `upstream_handshake_timeout` | 5 s | router | an upstream that did not answer the router's `hello`: closed |
/// | `idle_timeout` | none | router | a client that sent and was sent nothing, with nothing pending: closed |
/// | `write_timeout` | 30 s | router | a peer with bytes queued of which none was written: closed, queue dropped |
/// | `max_client_queue_bytes` | 64 MiB | router | a client whose queue would exceed it: closed at once, queue dropped |
/// | `max_upstream_queue_bytes` | 64 MiB | router | the same for an upstream |
/// | `max_total_queue_bytes` | 1 GiB | router | the connection with the longest queue: closed at once, queue dropped |
/// | `max_in_flight` | 4,096 | router | a client's request: refused `too_many_requests` |
/// | `max_in_flight_per_shared_upstream` | 256 | router | a client's request to a shared upstream: refused `too_many_requests` |
/// | `upstream_max_in_flight` | 4,096 | router | a request to an upstream holding that many: refused `too_many_requests` |
/// | `max_held_bytes` | 1 MiB | router | a request whose id and target would take the client's held bytes past it: refused `too_many_requests` |
/// | `max_frame_before_hello` | 1 KiB | driver | a client frame header announcing more before its `hello`: closed |
/// | `frame_timeout` | 30 s | driver | a frame whose header arrived but not the rest: closed |
///
/// The last two concern bytes, which the router never sees: the driver (`examples/router`)
/// reads them from here so that every bound has one home.
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
    /// The `hello_error` for a client that sent no `hello` within
    /// [`handshake_timeout`](Self::handshake_timeout) (code `invalid_request`, message
    /// "Handshake timeout", as the reference server).
    pub handshake_timeout_error: ErrorBody,
    /// How long a client has to send its `hello` (default [`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub handshake_timeout: Duration,
    /// How long an upstream has to answer the router's `hello` (default
    /// [`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub upstream_handshake_timeout: Duration,
    /// Close an open client after this long with no frame in either direction and nothing
    /// pending (default `None`: never).
    pub idle_timeout: Option<Duration>,
    /// Close a peer (client or upstream) that has bytes queued and had none of them written for
    /// this long (default [`DEFAULT_WRITE_TIMEOUT`]).
    pub write_timeout: Duration,
    /// The most bytes queued for one client (default [`DEFAULT_MAX_QUEUE_BYTES`]).
    pub max_client_queue_bytes: usize,
    /// The most bytes queued for one upstream (default [`DEFAULT_MAX_QUEUE_BYTES`]).
    pub max_upstream_queue_bytes: usize,
    /// The most bytes queued for every connection together (default
    /// [`DEFAULT_MAX_TOTAL_QUEUE_BYTES`]).
    pub max_total_queue_bytes: usize,
    /// The most bytes of request ids and targets the router holds for one client's requests in
    /// flight (default [`DEFAULT_MAX_HELD_BYTES`]).
    pub max_held_bytes: usize,
    /// How many requests one client may have pending on one shared upstream (default
    /// [`DEFAULT_MAX_IN_FLIGHT_PER_SHARED_UPSTREAM`]): below the upstream's own limit, so that
    /// one client cannot take all of it.
    pub max_in_flight_per_shared_upstream: usize,
    /// How many forwarded requests one upstream may hold (default [`DEFAULT_MAX_IN_FLIGHT`],
    /// the server's own default limit), so that the server never has to refuse one.
    pub upstream_max_in_flight: usize,
    /// The largest frame a client may announce before its `hello` (default
    /// [`DEFAULT_MAX_FRAME_BEFORE_HELLO`]); enforced by the driver's decoder.
    pub max_frame_before_hello: usize,
    /// How long the rest of a frame may take once its header arrived (default
    /// [`DEFAULT_FRAME_TIMEOUT`]); enforced by the driver's reader.
    pub frame_timeout: Duration,
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
            handshake_timeout_error: default_error("invalid_request", "Handshake timeout"),
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            upstream_handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            idle_timeout: None,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            max_client_queue_bytes: DEFAULT_MAX_QUEUE_BYTES,
            max_upstream_queue_bytes: DEFAULT_MAX_QUEUE_BYTES,
            max_total_queue_bytes: DEFAULT_MAX_TOTAL_QUEUE_BYTES,
            max_held_bytes: DEFAULT_MAX_HELD_BYTES,
            max_in_flight_per_shared_upstream: DEFAULT_MAX_IN_FLIGHT_PER_SHARED_UPSTREAM,
            upstream_max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_frame_before_hello: DEFAULT_MAX_FRAME_BEFORE_HELLO,
            frame_timeout: DEFAULT_FRAME_TIMEOUT,
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
        /// Sets [`handshake_timeout_error`](Self::handshake_timeout_error).
        handshake_timeout_error: ErrorBody;
        /// Sets [`handshake_timeout`](Self::handshake_timeout).
        handshake_timeout: Duration;
        /// Sets [`upstream_handshake_timeout`](Self::upstream_handshake_timeout).
        upstream_handshake_timeout: Duration;
        /// Sets [`idle_timeout`](Self::idle_timeout).
        idle_timeout: Option<Duration>;
        /// Sets [`write_timeout`](Self::write_timeout).
        write_timeout: Duration;
        /// Sets [`max_client_queue_bytes`](Self::max_client_queue_bytes).
        max_client_queue_bytes: usize;
        /// Sets [`max_upstream_queue_bytes`](Self::max_upstream_queue_bytes).
        max_upstream_queue_bytes: usize;
        /// Sets [`max_total_queue_bytes`](Self::max_total_queue_bytes).
        max_total_queue_bytes: usize;
        /// Sets [`max_held_bytes`](Self::max_held_bytes).
        max_held_bytes: usize;
        /// Sets [`max_in_flight_per_shared_upstream`](Self::max_in_flight_per_shared_upstream).
        max_in_flight_per_shared_upstream: usize;
        /// Sets [`upstream_max_in_flight`](Self::upstream_max_in_flight).
        upstream_max_in_flight: usize;
        /// Sets [`max_frame_before_hello`](Self::max_frame_before_hello).
        max_frame_before_hello: usize;
        /// Sets [`frame_timeout`](Self::frame_timeout).
        frame_timeout: Duration;
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
            Refusal::TooManyRequests
            | Refusal::TooManyOnSharedUpstream
            | Refusal::UpstreamFull
            | Refusal::TooManyHeldBytes => &self.too_many_requests,
            Refusal::UnknownServer => &self.unknown_server,
            Refusal::SubscriptionInUse => &self.subscription_in_use,
            Refusal::TooManySubscriptions => &self.too_many_subscriptions,
        }
    }
}
