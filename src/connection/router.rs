//! [`Router`]: the coordinator, a sans-IO message router between many clients and the
//! server processes that each own one logical `serverId`.
//!
//! The protocol's local coordinator is only an opaque router: clients talk to it as they would
//! to a server, and it passes their requests to the server processes behind it and the answers
//! back, without touching payloads (docs/PROTOCOL.md section 8, "The coordinator", sums up the
//! rules below). A [`Router`] is that router as a plain value, like
//! [`ClientConnection`](super::ClientConnection) and [`ServerConnection`](super::ServerConnection):
//! it owns no socket and no task. It works on decoded messages rather than bytes, so that every
//! payload is moved from the message that brought it to the message that carries it on, never
//! copied or re-encoded (decode with a zero-copy decoder such as
//! [`SharedClientMessageDecoder`](crate::SharedClientMessageDecoder) or `io::ServerCodec`, and
//! encode with the vectored encoders, and a large payload is never copied between the socket
//! buffers).
//!
//! The driver registers both sides and feeds what they send:
//!
//! - **clients**: [`add_client`](Router::add_client), then
//!   [`client_message`](Router::client_message) for each decoded [`ClientMessage`], and
//!   [`disconnect_client`](Router::disconnect_client) when the transport ends;
//! - **upstreams**, connections to server processes: [`add_upstream`](Router::add_upstream)
//!   (shared by every client) or [`add_dedicated_upstream`](Router::add_dedicated_upstream)
//!   (serving one client), then [`upstream_message`](Router::upstream_message) and
//!   [`disconnect_upstream`](Router::disconnect_upstream).
//!
//! and drains [`poll_transmit`](Router::poll_transmit) (each message to write, and to whom) and
//! [`poll_event`](Router::poll_event) (what happened, and which transports to close).
//!
//! # Shared or dedicated upstreams
//!
//! A server connection is one *presentation* to the server: it holds one live attachment
//! route, and the server releases that route when the connection closes (docs/PROTOCOL.md
//! section 4, targets). A **shared** upstream multiplexes every client onto one such
//! connection: cheap, and right for stateless server calls, but its clients share that one
//! route (once a second client attaches, the server fences the first one's session calls as
//! stale) and must pick distinct subscription ids. A **dedicated** upstream is a connection of
//! its own per client and server: each client is its own presentation, its updates and routes
//! need no inference, and its release is the server's own close rule. A router can mix both;
//! a client's dedicated upstream for a `serverId` wins over the shared one. `examples/router`
//! opens dedicated upstreams by default, as real clients need (every pi-client names its first
//! subscription `service-1`, and each attaches to a Session of its own); docs/PROTOCOL.md
//! section 8 lists what a shared upstream can and cannot carry.
//!
//! # Rules
//!
//! On top of docs/PROTOCOL.md section 4 (envelopes) and the connection rules of the
//! [module docs](super); `tests/router.rs` holds one test per rule, and a property test that
//! drives many clients and server connections through a router in random interleavings (rule 8
//! above all).
//!
//! 1. **Client handshake.** The router answers a client's `hello` itself. Version 8 is answered
//!    with a `hello` naming the router's *home* `serverId` (given to [`Router::new`]; a
//!    [`ClientConnection`](super::ClientConnection) addresses its server calls to it), whether or
//!    not an upstream serves it yet: servers come and go, the handshake does not wait for them.
//!    Any other version gets a `hello_error` ([`RouterOptions::unsupported_version`]) and the
//!    client is closed. A first frame other than `hello`, or a second `hello`, closes the client
//!    ([`Violation::ExpectedHello`], [`Violation::UnexpectedHello`]).
//! 2. **Upstream handshake.** Adding an upstream queues the router's `hello` (version 8) to it.
//!    Its `hello` registers it under the `serverId` it announces; a `hello_error` or any other
//!    first frame closes it. A shared upstream serves its `serverId` for every client, and
//!    replaces the shared upstream that served it before (a replaceable server process taking
//!    over): the old one stops receiving new requests but still answers, updates and publishes
//!    routes for what it already holds; close it when it is idle. A dedicated upstream serves
//!    its `serverId` for its one client only, in preference to the shared one.
//! 3. **Routing.** A request goes to the upstream that serves its `target.serverId` for that
//!    client (dedicated first, then shared). When none does, the router answers it with an
//!    error response of its own ([`RouterOptions::unknown_server`]); before that it refuses an id
//!    the client has pending already ([`RouterOptions::duplicate_id`]) and a request beyond
//!    [`RouterOptions::max_in_flight`] ([`RouterOptions::too_many_requests`]). A `cancel` follows
//!    its request to the upstream holding it, provided it names the same target; a cancel for an
//!    unknown or settled request, or a second one, does nothing.
//! 4. **Request ids.** Each forwarded request gets an id fresh on its upstream
//!    ([`RouterOptions::request_id_prefix`] and a counter), so ids chosen independently by
//!    different clients never collide there; the response is forwarded under the client's own
//!    id. A response for an id the router never sent on that upstream, or already settled, is a
//!    [`Violation::UnknownResponse`]: the upstream is closed (rule 9).
//! 5. **Subscriptions.** Updates from a dedicated upstream go to its client. On a shared
//!    upstream the subscription id is chosen inside an opaque call, so the router relies on the
//!    application's [`CallInspector`]: a call it reports as [`CallEffect::Subscribe`] makes the
//!    calling client the holder of that subscription id on that upstream from the moment the
//!    call is forwarded, until the call fails, an [`CallEffect::Unsubscribe`] of the holder
//!    succeeds, or the holder goes away (rule 7 says when its id is free again). A subscription id another client holds on the same
//!    upstream is refused ([`RouterOptions::subscription_in_use`]): the server could not tell
//!    the two apart; so is a call closing a subscription id another client holds. An update no client holds is dropped and reported
//!    ([`RouterEvent::UnroutedUpdate`]); without an inspector that is every update of a shared
//!    upstream.
//! 6. **Attachments.** Attachments from a dedicated upstream go to its client. On a shared
//!    upstream, an `attachment` message belongs to the call whose response comes next on that
//!    upstream: a server publishes the route that an `attach` or `detach` selected just before
//!    answering that call ([`ServerConnection::set_attachment`](super::ServerConnection::set_attachment)),
//!    as the reference's sessions do. The router holds the message until that response and
//!    hands both to the response's client, the attachment first. A client given a route becomes
//!    the holder of that upstream's current route (one per upstream connection, as on any
//!    server connection); a `null` route clears it. Servers behind a shared upstream must
//!    therefore publish routes only in answer to a call; use dedicated upstreams for servers
//!    that change routes on their own.
//! 7. **Client departure** ([`disconnect_client`](Router::disconnect_client), or the router
//!    closing a client). Its dedicated upstreams are closed ([`RouterEvent::UpstreamClosed`]),
//!    and each server then settles and releases as on any closed connection. On shared
//!    upstreams, each request still pending gets a `cancel` (unless it had one) and its answer
//!    is dropped when it comes. Each subscription it held is closed on its behalf with the
//!    inspector's [`CallInspector::unsubscribe_call`] (sent with a server target, answer
//!    dropped), its id staying reserved, its updates unrouted, until that call is answered;
//!    without such a call the id is freed at once. And when it held a shared upstream's current
//!    route, [`RouterEvent::Release`] reports that route once every call the client had pending
//!    on that upstream settled, at once if none was. The driver
//!    passes it on to the server process, which owns that lifecycle.
//! 8. **Isolation.** Responses, updates and attachments reach only the client the rules above
//!    name; nothing a client sends reaches another client.
//! 9. **Upstream departure** ([`disconnect_upstream`](Router::disconnect_upstream), or the
//!    router closing an upstream). Every request pending on it is answered with an error of the
//!    router's own ([`RouterOptions::server_departed`]); it no longer serves its `serverId`, so
//!    later requests for it are refused until another upstream announces it; its subscriptions,
//!    route holder and any attachment held for a response are forgotten.
//!
//! 10. **Deadlines** ([`handle_timeout`](Router::handle_timeout) with the driver's clock,
//!     [`poll_timeout`](Router::poll_timeout) for when to call it). A client that sent no `hello`
//!     within [`RouterOptions::handshake_timeout`] is answered
//!     [`RouterOptions::handshake_timeout_error`] and closed; an upstream that did not answer
//!     within [`RouterOptions::upstream_handshake_timeout`] is closed; a peer with bytes queued
//!     of which none was written for [`RouterOptions::write_timeout`] is closed
//!     ([`Deadline::Write`]); with [`RouterOptions::idle_timeout`], a client with no frame in
//!     either direction and nothing pending is closed. The driver reports a frame that did not
//!     complete within [`RouterOptions::frame_timeout`]
//!     ([`client_frame_timed_out`](Router::client_frame_timed_out)).
//! 11. **Byte budgets.** Every message the router queues counts
//!     ([`Transmit::queued_bytes`]) against its connection until the driver reports it written
//!     ([`client_written`](Router::client_written), [`upstream_written`](Router::upstream_written)).
//!     A connection whose queue would pass [`RouterOptions::max_client_queue_bytes`] or
//!     [`RouterOptions::max_upstream_queue_bytes`] is closed instead, at once, and its queue
//!     dropped ([`CloseReason::TransmitQueueFull`]; [`CloseReason::drops_queue`] tells the
//!     driver to drop rather than write); past [`RouterOptions::max_total_queue_bytes`] for all
//!     connections together, the connection with the longest queue is. What the driver holds
//!     itself (a frame partly received) it charges to a budget of its own
//!     (`io::ByteBudget`, with the `tokio` feature) and reports one past it
//!     ([`client_budget_exceeded`](Router::client_budget_exceeded),
//!     [`upstream_budget_exceeded`](Router::upstream_budget_exceeded)). The ids and targets held
//!     for a client's requests in flight are bounded by [`RouterOptions::max_held_bytes`], its
//!     requests on one shared upstream by [`RouterOptions::max_in_flight_per_shared_upstream`]
//!     and an upstream's by [`RouterOptions::upstream_max_in_flight`] (refused
//!     `too_many_requests`, rule 3).
//!
//! A message of a type the schema gains later has no routing rule here: the router drops it
//! (the connection state machines hand such messages to their application instead; a router has
//! no application to hand them to, and cannot know where they belong).
//!
//! The driver closes a client's transport after [`RouterEvent::ClientClosed`] and an upstream's
//! after [`RouterEvent::UpstreamClosed`], once it has written the transmits queued for them.
//!
//! # Example: one client, one server, through memory
//!
//! ```
//! use pi_protocol::connection::{Router, RouterEvent, RouterOptions, Transmit};
//! use pi_protocol::{
//!     ClientHello, ClientMessage, Payload, Request, RequestId, Response, RpcTarget, ServerHello, ServerId,
//!     ServerMessage, ServerTarget, SuccessResponse,
//! };
//!
//! let server_id = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?;
//! let mut router = Router::new(server_id.clone(), RouterOptions::default());
//!
//! // The upstream handshake: the router says hello, the server answers with its serverId.
//! let upstream = router.add_upstream();
//! assert!(matches!(router.poll_transmit(), Some(Transmit::ToUpstream { message: ClientMessage::Hello(_), .. })));
//! router.upstream_message(upstream, ServerMessage::Hello(ServerHello::new(server_id.clone())));
//! assert!(matches!(router.poll_event(), Some(RouterEvent::UpstreamReady { .. })));
//!
//! // The client handshake is answered by the router.
//! let client = router.add_client();
//! router.client_message(client, ClientMessage::Hello(ClientHello::new(8u32)));
//! assert!(matches!(router.poll_transmit(), Some(Transmit::ToClient { message: ServerMessage::Hello(_), .. })));
//!
//! // A request travels upstream under an id of the router's, its answer comes back under the client's.
//! let target = RpcTarget::Server(ServerTarget::new(server_id));
//! let call = Payload::from_json_str(r#"{"serviceId":"$chord.service","member":"catalogue","args":[]}"#)?;
//! let id = RequestId::new("mine-1")?;
//! router.client_message(client, ClientMessage::Request(Request::new(id.clone(), target, call)));
//! let Some(Transmit::ToUpstream { message: ClientMessage::Request(forwarded), .. }) = router.poll_transmit() else {
//!     panic!("expected the forwarded request")
//! };
//! assert_eq!(forwarded.id.as_str(), "req-1");
//! let answer = Response::Success(SuccessResponse::new(forwarded.id));
//! router.upstream_message(upstream, ServerMessage::Response(answer));
//! let Some(Transmit::ToClient { client: to, message: ServerMessage::Response(Response::Success(back)) }) =
//!     router.poll_transmit()
//! else {
//!     panic!("expected the response")
//! };
//! assert_eq!((to, back.id), (client, id));
//! # Ok::<(), pi_protocol::ProtocolError>(())
//! ```

mod envelope;
mod inspect;
mod keys;
mod options;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::time::Instant;

use self::keys::{upstream_id, upstream_sequence, KeyMap};
use super::{CloseReason, ConnectionError, Deadline, TransportError, Violation};
use crate::{
    is_supported_protocol_version, Attachment, Cancel, ClientHello, ClientMessage, ProtocolError, Request, RequestId,
    Response, RpcTarget, ServerId, ServerMessage, ServiceUpdate, SessionTarget, SubscriptionId,
};

pub use inspect::{CallEffect, CallInspector};
pub use options::{
    Refusal, RouterOptions, DEFAULT_FRAME_TIMEOUT, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_FRAME_BEFORE_HELLO,
    DEFAULT_MAX_HELD_BYTES, DEFAULT_MAX_IN_FLIGHT_PER_SHARED_UPSTREAM, DEFAULT_MAX_QUEUE_BYTES,
    DEFAULT_MAX_SUBSCRIPTIONS, DEFAULT_MAX_TOTAL_QUEUE_BYTES, DEFAULT_WRITE_TIMEOUT,
};

/// One client connection of a [`Router`], from [`Router::add_client`]. Keys are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientKey(u64);

/// One upstream (server) connection of a [`Router`], from [`Router::add_upstream`] or
/// [`Router::add_dedicated_upstream`]. Keys are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UpstreamKey(u64);

impl ClientKey {
    /// The key as a number: 1 for the first client, counting up.
    #[must_use]
    pub fn get(self) -> u64 {
        self.0
    }
}

impl UpstreamKey {
    /// The key as a number: 1 for the first upstream, counting up.
    #[must_use]
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client {}", self.0)
    }
}

impl fmt::Display for UpstreamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "upstream {}", self.0)
    }
}

/// A message the router wants written: to a client, or to an upstream. Transmits come out of
/// [`Router::poll_transmit`] in the order the router produced them, so each connection's
/// messages are in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transmit {
    /// Write `message` to client `client`.
    ToClient {
        /// The client.
        client: ClientKey,
        /// A message from an upstream (payload untouched, id mapped back) or the router's own.
        message: ServerMessage,
    },
    /// Write `message` to upstream `upstream`.
    ToUpstream {
        /// The upstream.
        upstream: UpstreamKey,
        /// A client's request or cancel under the router's upstream id, or the router's `hello`.
        message: ClientMessage,
    },
}

impl Transmit {
    /// The bytes the router counts this message for in its queue budgets
    /// ([`RouterOptions::max_client_queue_bytes`] and friends) from the moment it produces it
    /// until the driver reports it written ([`Router::client_written`],
    /// [`Router::upstream_written`]): its payload and identifiers plus a fixed 64 for the
    /// envelope. A driver sums this over the messages it wrote; it is cheap (no encoding).
    #[must_use]
    pub fn queued_bytes(&self) -> usize {
        match self {
            Transmit::ToClient { message, .. } => envelope::server_message_bytes(message),
            Transmit::ToUpstream { message, .. } => envelope::client_message_bytes(message),
        }
    }
}

/// The bytes the router counts for `message` on its way to an upstream, as
/// [`Transmit::queued_bytes`] does: a driver bounds its own inbound queues with the same count.
#[must_use]
pub fn client_message_bytes(message: &ClientMessage) -> usize {
    envelope::client_message_bytes(message)
}

/// The bytes the router counts for `message` on its way to a client, as
/// [`Transmit::queued_bytes`] does.
#[must_use]
pub fn server_message_bytes(message: &ServerMessage) -> usize {
    envelope::server_message_bytes(message)
}

/// What a [`Router`] reports to its driver, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RouterEvent {
    /// The client's `hello` offered version 8 and was answered (rule 1).
    ClientReady {
        /// The client.
        client: ClientKey,
    },
    /// The client is closed: write what is queued for it, then close its transport. Its key is
    /// never used again (rules 1 and 7).
    ClientClosed {
        /// The client.
        client: ClientKey,
        /// Why: [`CloseReason::Local`] after [`Router::disconnect_client`],
        /// [`CloseReason::PeerClosed`] after [`Router::client_peer_closed`],
        /// [`CloseReason::Transport`] after [`Router::client_transport_failed`],
        /// [`CloseReason::UnsupportedVersion`], [`CloseReason::Violation`],
        /// [`CloseReason::Timeout`] (a deadline of rule 10) or
        /// [`CloseReason::TransmitQueueFull`] or [`CloseReason::BudgetExceeded`] (a byte budget
        /// of rule 11). When
        /// [`CloseReason::drops_queue`] holds, drop what is queued for it instead of
        /// writing it.
        reason: CloseReason,
    },
    /// The upstream announced `server_id` and now serves it (rule 2).
    UpstreamReady {
        /// The upstream.
        upstream: UpstreamKey,
        /// The `serverId` of its `hello`.
        server_id: ServerId,
        /// The upstream that served this `serverId` before (for the same client, when
        /// dedicated), which now only finishes what it holds.
        replaced: Option<UpstreamKey>,
    },
    /// The upstream is closed: write what is queued for it, then close its transport (rule 9).
    UpstreamClosed {
        /// The upstream.
        upstream: UpstreamKey,
        /// Why: [`CloseReason::Local`] after [`Router::disconnect_upstream`] or when its client
        /// left, [`CloseReason::PeerClosed`] or [`CloseReason::Transport`] when its transport
        /// ended, [`CloseReason::Rejected`] for a `hello_error`, [`CloseReason::Violation`],
        /// [`CloseReason::Timeout`], [`CloseReason::TransmitQueueFull`] or
        /// [`CloseReason::BudgetExceeded`] (rules 10 and 11; drop
        /// its queue when [`CloseReason::drops_queue`] holds).
        reason: CloseReason,
        /// How many pending requests were answered with [`RouterOptions::server_departed`].
        failed: usize,
    },
    /// The router answered a request with an error of its own instead of forwarding it (rule 3).
    Refused {
        /// The client that sent it.
        client: ClientKey,
        /// The client's id of the request.
        id: RequestId,
        /// Which rule refused it.
        reason: Refusal,
    },
    /// A client that held the current route of a shared upstream went away and every call it
    /// had pending there settled: the server process should release `route` (rule 7).
    Release {
        /// The upstream whose route it is.
        upstream: UpstreamKey,
        /// The route to release.
        route: SessionTarget,
    },
    /// A `service_update` no client holds was dropped (rule 5).
    UnroutedUpdate {
        /// The upstream that sent it.
        upstream: UpstreamKey,
        /// Its subscription id.
        subscription_id: SubscriptionId,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientStage {
    AwaitingHello,
    Open,
    /// Gone; kept only while requests it sent are pending upstream.
    Departed,
}

/// Where a client's pending request went.
#[derive(Debug)]
struct Pending {
    upstream: UpstreamKey,
    /// The counter of its upstream id.
    sequence: u64,
    /// What its id and target count in [`Client::held`].
    held: usize,
}

/// The byte queue of one connection, as the router counts it (rule 11).
#[derive(Debug, Default)]
struct Queue {
    /// Bytes produced for the connection and not yet reported written.
    bytes: usize,
    /// Since when bytes have waited with none written; `None` while the queue is empty.
    stalled_since: Option<Instant>,
    /// Whether a write timer of this connection is in the heap.
    timer_armed: bool,
}

/// A deadline of one connection (rule 10). Timers are checked when they fire: a stale one
/// does nothing, or re-arms itself at the deadline it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    ClientHandshake(ClientKey),
    ClientIdle(ClientKey),
    ClientWrite(ClientKey),
    UpstreamHandshake(UpstreamKey),
    UpstreamWrite(UpstreamKey),
}

#[derive(Debug)]
struct Client {
    stage: ClientStage,
    /// Pending requests by the client's id.
    pending: HashMap<RequestId, Pending>,
    /// How many of them each upstream holds.
    pending_per_upstream: KeyMap<UpstreamKey, usize>,
    /// The subscriptions it holds on shared upstreams.
    subscriptions: HashSet<(UpstreamKey, SubscriptionId)>,
    /// Every dedicated upstream added for it.
    dedicated: Vec<UpstreamKey>,
    /// The dedicated upstreams that announced a `serverId`.
    routes: KeyMap<ServerId, UpstreamKey>,
    /// What is queued for it.
    queue: Queue,
    /// The last frame in either direction (idle timeout).
    last_activity: Instant,
    /// Bytes of ids and targets held for its pending requests.
    held: usize,
}

/// What a forwarded request does to subscriptions, once answered.
#[derive(Debug)]
enum Effect {
    None,
    /// It registered the subscription: a failure unregisters it.
    Opened(SubscriptionId),
    /// It closes the subscription: a success unregisters it.
    Closes(SubscriptionId),
}

/// Who holds a subscription id on a shared upstream (rule 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Holding {
    client: ClientKey,
    /// The upstream counter of the holder's latest `subscribe` of it: an answer to a call
    /// forwarded before that one (an earlier `unsubscribe`, a failed earlier `subscribe`) does
    /// not free it, since the upstream handles calls in order.
    subscribed: u64,
}

/// A request forwarded to an upstream and not answered yet.
#[derive(Debug)]
struct Flight {
    client: ClientKey,
    /// The client's id; `None` for a call the router sent on a departed client's behalf.
    client_id: Option<RequestId>,
    target: RpcTarget,
    sequence: u64,
    cancel_sent: bool,
    effect: Effect,
}

#[derive(Debug)]
struct Upstream {
    /// The client of a dedicated upstream.
    owner: Option<ClientKey>,
    /// The `serverId` of its `hello`; `None` until then.
    server_id: Option<ServerId>,
    next_id: u64,
    /// Forwarded requests by the counter of their upstream id.
    flights: KeyMap<u64, Flight>,
    /// Subscription holders (shared upstreams).
    subscriptions: HashMap<SubscriptionId, Holding>,
    /// An attachment waiting for the next response (shared upstreams, rule 6).
    held_attachment: Option<Attachment>,
    /// The client holding the current route, and the route (shared upstreams).
    holder: Option<(ClientKey, SessionTarget)>,
    /// What is queued for it.
    queue: Queue,
}

/// The coordinator's routing rules as a sans-IO state machine: see the [module docs](self) for
/// the rules and an example.
///
/// Every method is deterministic and returns at once; nothing is written anywhere but the
/// transmit and event queues. Memory is bounded by the options: per client,
/// [`RouterOptions::max_in_flight`] pending requests and
/// [`RouterOptions::max_subscriptions`] subscriptions; per upstream, one held attachment.
pub struct Router {
    home: ServerId,
    options: RouterOptions,
    inspector: Option<Box<dyn CallInspector>>,
    clients: KeyMap<ClientKey, Client>,
    upstreams: KeyMap<UpstreamKey, Upstream>,
    /// The shared upstream serving each `serverId`.
    shared: KeyMap<ServerId, UpstreamKey>,
    next_client: u64,
    next_upstream: u64,
    transmits: VecDeque<Transmit>,
    events: VecDeque<RouterEvent>,
    /// The router's clock: the latest `now` given to [`Router::handle_timeout`].
    now: Instant,
    timers: BinaryHeap<Reverse<(Instant, Timer)>>,
    /// Bytes queued for every connection together.
    total_queued: usize,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field("home", &self.home)
            .field("options", &self.options)
            .field("inspector", &self.inspector.is_some())
            .field("clients", &self.clients.len())
            .field("upstreams", &self.upstreams.len())
            .field("transmits", &self.transmits.len())
            .field("events", &self.events.len())
            .field("timers", &self.timers.len())
            .field("total_queued", &self.total_queued)
            .finish()
    }
}

impl Router {
    /// A router with no client and no upstream, whose handshake names `home` (rule 1). Its
    /// clock starts at the instant it is created and moves only with
    /// [`handle_timeout`](Self::handle_timeout).
    ///
    /// Without an inspector ([`with_inspector`](Self::with_inspector)), updates from shared
    /// upstreams are not routed (rule 5).
    pub fn new(home: ServerId, options: RouterOptions) -> Self {
        Router {
            home,
            options,
            inspector: None,
            clients: KeyMap::default(),
            upstreams: KeyMap::default(),
            shared: KeyMap::default(),
            next_client: 1,
            next_upstream: 1,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            now: Instant::now(),
            timers: BinaryHeap::new(),
            total_queued: 0,
        }
    }

    /// The same router, learning which calls open and close subscriptions from `inspector`
    /// (rule 5).
    #[must_use]
    pub fn with_inspector(mut self, inspector: impl CallInspector + 'static) -> Self {
        self.inspector = Some(Box::new(inspector));
        self
    }

    /// The `serverId` the router's `hello` names.
    pub fn home(&self) -> &ServerId {
        &self.home
    }

    /// The options in force.
    pub fn options(&self) -> &RouterOptions {
        &self.options
    }

    // ---- Clients.

    /// Registers a new client connection, waiting for its `hello` until
    /// [`RouterOptions::handshake_timeout`] after the router's clock (rule 10).
    pub fn add_client(&mut self) -> ClientKey {
        let key = ClientKey(self.next_client);
        self.next_client += 1;
        let client = Client {
            stage: ClientStage::AwaitingHello,
            pending: HashMap::new(),
            pending_per_upstream: KeyMap::default(),
            subscriptions: HashSet::new(),
            dedicated: Vec::new(),
            routes: KeyMap::default(),
            queue: Queue::default(),
            last_activity: self.now,
            held: 0,
        };
        self.clients.insert(key, client);
        self.arm(self.now + self.options.handshake_timeout, Timer::ClientHandshake(key));
        key
    }

    /// Handles one message the client sent: its handshake (rule 1), a request (rules 3-5) or a
    /// cancel (rule 3). Messages of a closed or unknown client are ignored: the driver should
    /// have stopped reading it at [`RouterEvent::ClientClosed`].
    pub fn client_message(&mut self, client: ClientKey, message: ClientMessage) {
        let now = self.now;
        let Some(stage) = self.clients.get_mut(&client).map(|c| {
            c.last_activity = now;
            c.stage
        }) else {
            return;
        };
        match (stage, message) {
            (ClientStage::Departed, _) => {}
            (ClientStage::AwaitingHello, ClientMessage::Hello(hello)) => self.client_hello(client, &hello),
            (ClientStage::AwaitingHello, _) => {
                self.close_client(client, CloseReason::Violation(Violation::ExpectedHello))
            }
            (ClientStage::Open, ClientMessage::Request(request)) => self.route_request(client, request),
            (ClientStage::Open, ClientMessage::Cancel(cancel)) => self.route_cancel(client, cancel),
            (ClientStage::Open, other) => self.unexpected_client_message(client, &other),
        }
    }

    /// The driver drops the client: the departure rules apply (rule 7). Reports
    /// [`RouterEvent::ClientClosed`] with [`CloseReason::Local`] unless already closed.
    pub fn disconnect_client(&mut self, client: ClientKey) {
        self.close_client(client, CloseReason::Local);
    }

    /// The client ended its stream between two frames (end of file): as
    /// [`disconnect_client`](Self::disconnect_client), reported as [`CloseReason::PeerClosed`].
    pub fn client_peer_closed(&mut self, client: ClientKey) {
        self.close_client(client, CloseReason::PeerClosed);
    }

    /// The client's transport failed with `error`: as
    /// [`disconnect_client`](Self::disconnect_client), reported as [`CloseReason::Transport`].
    pub fn client_transport_failed(&mut self, client: ClientKey, error: &std::io::Error) {
        self.close_client(client, CloseReason::Transport(TransportError::new(error)));
    }

    /// The client's bytes failed to decode (a bad frame, a frame past the limit, a stream that
    /// ended inside a frame): as [`disconnect_client`](Self::disconnect_client), reported as
    /// [`Violation::Decode`].
    pub fn client_decode_failed(&mut self, client: ClientKey, error: ProtocolError) {
        self.close_client(client, CloseReason::Violation(Violation::Decode(error)));
    }

    /// A frame of the client did not complete within [`RouterOptions::frame_timeout`] (the
    /// driver watches its bytes): closes it with [`Deadline::Frame`].
    pub fn client_frame_timed_out(&mut self, client: ClientKey) {
        self.close_client(client, CloseReason::Timeout(Deadline::Frame));
    }

    /// The client held more than a byte budget of `limit` bytes allows (its driver enforces it:
    /// a partly received frame past a process-wide budget, say): closes it with
    /// [`CloseReason::BudgetExceeded`], dropping what was queued for it.
    pub fn client_budget_exceeded(&mut self, client: ClientKey, limit: usize) {
        self.close_client(client, CloseReason::BudgetExceeded { limit });
    }

    /// The driver wrote `bytes` of what was queued for the client (the sum of
    /// [`Transmit::queued_bytes`] of the messages written): they leave its queue budget, and
    /// its write deadline starts over (rule 11). Ignored for a closed or unknown client.
    pub fn client_written(&mut self, client: ClientKey, bytes: usize) {
        let now = self.now;
        if let Some(c) = self.clients.get_mut(&client) {
            self.total_queued -= written(&mut c.queue, bytes, now);
        }
    }

    /// The bytes queued for the client now, as the router counts them (rule 11).
    pub fn client_queued_bytes(&self, client: ClientKey) -> usize {
        self.clients.get(&client).map_or(0, |c| c.queue.bytes)
    }

    /// The bytes of ids and targets the router holds for the client's pending requests.
    pub fn client_held_bytes(&self, client: ClientKey) -> usize {
        self.clients.get(&client).map_or(0, |c| c.held)
    }

    /// Whether the client completed its handshake and is not closed.
    pub fn is_client_ready(&self, client: ClientKey) -> bool {
        self.clients.get(&client).is_some_and(|c| c.stage == ClientStage::Open)
    }

    /// How many requests of the client are pending upstream (0 for an unknown client).
    pub fn client_pending_len(&self, client: ClientKey) -> usize {
        self.clients.get(&client).map_or(0, |c| c.pending.len())
    }

    // ---- Upstreams.

    /// Registers a new upstream shared by every client, and queues the router's `hello` to it
    /// (rule 2).
    pub fn add_upstream(&mut self) -> UpstreamKey {
        self.new_upstream(None)
    }

    /// Registers a new upstream serving only `client`, and queues the router's `hello` to it
    /// (rule 2). It is closed when the client goes away (rule 7).
    ///
    /// # Errors
    /// [`ConnectionError::Closed`] when the client is unknown or closed; nothing is registered.
    pub fn add_dedicated_upstream(&mut self, client: ClientKey) -> Result<UpstreamKey, ConnectionError> {
        match self.clients.get(&client) {
            Some(c) if c.stage != ClientStage::Departed => {}
            _ => return Err(ConnectionError::Closed),
        }
        let key = self.new_upstream(Some(client));
        if let Some(c) = self.clients.get_mut(&client) {
            c.dedicated.push(key);
        }
        Ok(key)
    }

    /// Handles one message the upstream sent: its handshake (rule 2), a response (rule 4), an
    /// update (rule 5) or an attachment (rule 6). Messages of a closed or unknown upstream are
    /// ignored.
    pub fn upstream_message(&mut self, upstream: UpstreamKey, message: ServerMessage) {
        let Some(ready) = self.upstreams.get(&upstream).map(|u| u.server_id.is_some()) else { return };
        match (ready, message) {
            (false, ServerMessage::Hello(hello)) => self.register(upstream, envelope::hello_server(hello)),
            (false, ServerMessage::HelloError(rejection)) => {
                self.close_upstream(upstream, CloseReason::Rejected(envelope::hello_error_body(rejection)));
            }
            (false, _) => self.close_upstream(upstream, CloseReason::Violation(Violation::ExpectedHello)),
            (true, ServerMessage::Response(response)) => self.route_response(upstream, response),
            (true, ServerMessage::ServiceUpdate(update)) => self.route_update(upstream, update),
            (true, ServerMessage::Attachment(attachment)) => self.route_attachment(upstream, attachment),
            (true, other) => self.unexpected_upstream_message(upstream, &other),
        }
    }

    /// The driver drops the upstream: its pending requests are answered with
    /// [`RouterOptions::server_departed`] (rule 9). Reports [`RouterEvent::UpstreamClosed`]
    /// with [`CloseReason::Local`] unless already closed.
    pub fn disconnect_upstream(&mut self, upstream: UpstreamKey) {
        self.close_upstream(upstream, CloseReason::Local);
    }

    /// The upstream ended its stream between two frames: as
    /// [`disconnect_upstream`](Self::disconnect_upstream), reported as [`CloseReason::PeerClosed`].
    pub fn upstream_peer_closed(&mut self, upstream: UpstreamKey) {
        self.close_upstream(upstream, CloseReason::PeerClosed);
    }

    /// The upstream's transport failed (or never connected) with `error`: as
    /// [`disconnect_upstream`](Self::disconnect_upstream), reported as [`CloseReason::Transport`].
    pub fn upstream_transport_failed(&mut self, upstream: UpstreamKey, error: &std::io::Error) {
        self.close_upstream(upstream, CloseReason::Transport(TransportError::new(error)));
    }

    /// The upstream's bytes failed to decode: as
    /// [`disconnect_upstream`](Self::disconnect_upstream), reported as [`Violation::Decode`].
    pub fn upstream_decode_failed(&mut self, upstream: UpstreamKey, error: ProtocolError) {
        self.close_upstream(upstream, CloseReason::Violation(Violation::Decode(error)));
    }

    /// A frame of the upstream did not complete within [`RouterOptions::frame_timeout`]:
    /// closes it with [`Deadline::Frame`].
    pub fn upstream_frame_timed_out(&mut self, upstream: UpstreamKey) {
        self.close_upstream(upstream, CloseReason::Timeout(Deadline::Frame));
    }

    /// The upstream held more than a byte budget of `limit` bytes allows: as
    /// [`client_budget_exceeded`](Self::client_budget_exceeded).
    pub fn upstream_budget_exceeded(&mut self, upstream: UpstreamKey, limit: usize) {
        self.close_upstream(upstream, CloseReason::BudgetExceeded { limit });
    }

    /// The driver wrote `bytes` of what was queued for the upstream: as
    /// [`client_written`](Self::client_written).
    pub fn upstream_written(&mut self, upstream: UpstreamKey, bytes: usize) {
        let now = self.now;
        if let Some(u) = self.upstreams.get_mut(&upstream) {
            self.total_queued -= written(&mut u.queue, bytes, now);
        }
    }

    /// The bytes queued for the upstream now, as the router counts them (rule 11).
    pub fn upstream_queued_bytes(&self, upstream: UpstreamKey) -> usize {
        self.upstreams.get(&upstream).map_or(0, |u| u.queue.bytes)
    }

    /// The bytes queued for every connection together (rule 11).
    pub fn total_queued_bytes(&self) -> usize {
        self.total_queued
    }

    // ---- Time.

    /// Advances the router's clock to `now` (never backwards) and acts on every deadline that
    /// passed (rule 10): a client without `hello` is answered
    /// [`RouterOptions::handshake_timeout_error`] and closed, an upstream without `hello` is
    /// closed, a peer that read nothing for [`RouterOptions::write_timeout`] is closed with its
    /// queue dropped, an idle client is closed.
    ///
    /// The driver calls it when [`poll_timeout`](Self::poll_timeout)'s instant comes, and also
    /// before it feeds input after a pause, so that deadlines armed by that input count from
    /// the right instant (a call per batch of input is enough; it costs a comparison when no
    /// deadline passed).
    pub fn handle_timeout(&mut self, now: Instant) {
        if now > self.now {
            self.now = now;
        }
        while let Some(Reverse((at, timer))) = self.timers.peek().copied() {
            if at > self.now {
                break;
            }
            self.timers.pop();
            self.fire(timer);
        }
    }

    /// The next instant at which [`handle_timeout`](Self::handle_timeout) has something to
    /// check, or `None` when no deadline is armed. It may come early (a deadline that moved
    /// since); calling `handle_timeout` then does nothing harmful.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((at, _))| *at)
    }

    /// The `serverId` the upstream announced (`None` before its `hello`, or once closed).
    pub fn upstream_server_id(&self, upstream: UpstreamKey) -> Option<&ServerId> {
        self.upstreams.get(&upstream).and_then(|u| u.server_id.as_ref())
    }

    /// How many forwarded requests the upstream has not answered (0 once closed): a replaced
    /// upstream can be closed without failing anything when this is 0.
    pub fn upstream_in_flight_len(&self, upstream: UpstreamKey) -> usize {
        self.upstreams.get(&upstream).map_or(0, |u| u.flights.len())
    }

    /// The shared upstream that serves `server_id` now, if any.
    pub fn shared_upstream(&self, server_id: &ServerId) -> Option<UpstreamKey> {
        self.shared.get(server_id).copied()
    }

    // ---- Output.

    /// The next message to write, in order, or `None` when there is none.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next event, in order, or `None` when there is none.
    pub fn poll_event(&mut self) -> Option<RouterEvent> {
        self.events.pop_front()
    }

    // ---- Client side.

    fn client_hello(&mut self, client: ClientKey, hello: &ClientHello) {
        let version = envelope::hello_version(hello);
        if is_supported_protocol_version(version) {
            self.send_to_client(client, envelope::server_hello(self.home.clone()));
            let Some(c) = self.clients.get_mut(&client) else { return };
            if c.stage == ClientStage::Departed {
                return;
            }
            c.stage = ClientStage::Open;
            self.events.push_back(RouterEvent::ClientReady { client });
            if let Some(idle) = self.options.idle_timeout {
                self.arm(self.now + idle, Timer::ClientIdle(client));
            }
        } else {
            self.send_to_client(client, envelope::hello_error(self.options.unsupported_version.clone()));
            self.close_client(client, CloseReason::UnsupportedVersion(version));
        }
    }

    /// A message an open client may not send here: a second `hello`, or a message type this
    /// router does not know how to route (ignored).
    fn unexpected_client_message(&mut self, client: ClientKey, message: &ClientMessage) {
        if let ClientMessage::Hello(_) = message {
            self.close_client(client, CloseReason::Violation(Violation::UnexpectedHello));
        }
    }

    /// Rules 3-5 for one request of an open client.
    fn route_request(&mut self, client: ClientKey, request: Request) {
        let Some(c) = self.clients.get(&client) else { return };
        let (id, target) = envelope::request_head(&request);
        let upstream = c
            .routes
            .get(envelope::target_server(target))
            .or_else(|| self.shared.get(envelope::target_server(target)))
            .copied();
        let held = envelope::held_bytes(id, target);
        let refusal = if c.pending.contains_key(id) {
            Some(Refusal::DuplicateId)
        } else if c.pending.len() >= self.options.max_in_flight {
            Some(Refusal::TooManyRequests)
        } else if c.held + held > self.options.max_held_bytes {
            Some(Refusal::TooManyHeldBytes)
        } else {
            match upstream.and_then(|key| self.upstreams.get(&key).map(|u| (key, u))) {
                None => Some(Refusal::UnknownServer),
                Some((_, u)) if u.flights.len() >= self.options.upstream_max_in_flight => Some(Refusal::UpstreamFull),
                Some((key, u))
                    if u.owner.is_none()
                        && c.pending_per_upstream
                            .get(&key)
                            .is_some_and(|n| *n >= self.options.max_in_flight_per_shared_upstream) =>
                {
                    Some(Refusal::TooManyOnSharedUpstream)
                }
                Some(_) => None,
            }
        };
        if let Some(reason) = refusal {
            let id = id.clone();
            return self.refuse(client, id, reason);
        }
        let Some(upstream) = upstream else { return };
        let effect = match self.subscription_effect(client, upstream, &request) {
            Ok(effect) => effect,
            Err(reason) => {
                let id = id.clone();
                return self.refuse(client, id, reason);
            }
        };
        let target = target.clone();
        let Some((upstream_id, sequence)) = self.next_upstream_id(upstream) else { return };
        let (client_id, message) = envelope::readdress_request(request, upstream_id);
        let flight =
            Flight { client, client_id: Some(client_id.clone()), target, sequence, cancel_sent: false, effect };
        if let Some(u) = self.upstreams.get_mut(&upstream) {
            u.flights.insert(sequence, flight);
        }
        if let Some(c) = self.clients.get_mut(&client) {
            c.pending.insert(client_id, Pending { upstream, sequence, held });
            c.held += held;
            *c.pending_per_upstream.entry(upstream).or_insert(0) += 1;
        }
        self.send_to_upstream(upstream, message);
    }

    /// The next request id of `upstream` (rule 4), and its counter.
    fn next_upstream_id(&mut self, upstream: UpstreamKey) -> Option<(RequestId, u64)> {
        let u = self.upstreams.get_mut(&upstream)?;
        let sequence = u.next_id;
        u.next_id += 1;
        Some((upstream_id(&self.options.request_id_prefix, sequence), sequence))
    }

    /// Asks the inspector what `request` does on a shared upstream and registers a subscription
    /// it opens (rule 5).
    fn subscription_effect(
        &mut self,
        client: ClientKey,
        upstream: UpstreamKey,
        request: &Request,
    ) -> Result<Effect, Refusal> {
        let Some(inspector) = self.inspector.as_mut() else { return Ok(Effect::None) };
        let Some(u) = self.upstreams.get_mut(&upstream) else { return Ok(Effect::None) };
        if u.owner.is_some() {
            return Ok(Effect::None);
        }
        match inspector.inspect(request) {
            CallEffect::Subscribe(subscription) => {
                let Some(c) = self.clients.get_mut(&client) else { return Ok(Effect::None) };
                // The counter the call is about to be forwarded under.
                let subscribed = u.next_id;
                match u.subscriptions.get_mut(&subscription) {
                    Some(holding) if holding.client == client => {
                        holding.subscribed = subscribed;
                        Ok(Effect::None)
                    }
                    Some(_) => Err(Refusal::SubscriptionInUse),
                    None if c.subscriptions.len() >= self.options.max_subscriptions => {
                        Err(Refusal::TooManySubscriptions)
                    }
                    None => {
                        u.subscriptions.insert(subscription.clone(), Holding { client, subscribed });
                        c.subscriptions.insert((upstream, subscription.clone()));
                        Ok(Effect::Opened(subscription))
                    }
                }
            }
            CallEffect::Unsubscribe(subscription) => match u.subscriptions.get(&subscription) {
                Some(holding) if holding.client != client => Err(Refusal::SubscriptionInUse),
                _ => Ok(Effect::Closes(subscription)),
            },
            _ => Ok(Effect::None),
        }
    }

    fn refuse(&mut self, client: ClientKey, id: RequestId, reason: Refusal) {
        let error = self.options.refusal(reason).clone();
        self.send_to_client(client, envelope::error_response(id.clone(), error));
        self.events.push_back(RouterEvent::Refused { client, id, reason });
    }

    /// Rule 3 for a cancel: it follows its request, once, with the request's target.
    fn route_cancel(&mut self, client: ClientKey, cancel: Cancel) {
        let (id, target) = envelope::cancel_parts(cancel);
        let Some(pending) = self.clients.get(&client).and_then(|c| c.pending.get(&id)) else { return };
        let (upstream, sequence) = (pending.upstream, pending.sequence);
        let Some(flight) = self.upstreams.get_mut(&upstream).and_then(|u| u.flights.get_mut(&sequence)) else {
            return;
        };
        if flight.cancel_sent || flight.target != target {
            return;
        }
        flight.cancel_sent = true;
        let message = envelope::cancel(upstream_id(&self.options.request_id_prefix, sequence), target);
        self.send_to_upstream(upstream, message);
    }

    /// Rule 7: closes `client` and applies the departure rules.
    fn close_client(&mut self, client: ClientKey, reason: CloseReason) {
        let Some(c) = self.clients.get_mut(&client) else { return };
        if c.stage == ClientStage::Departed {
            return;
        }
        c.stage = ClientStage::Departed;
        let dedicated = std::mem::take(&mut c.dedicated);
        let subscriptions = std::mem::take(&mut c.subscriptions);
        // What is queued leaves the budgets now: dropped by the driver at once when the client
        // does not read, written within the write timeout otherwise (rule 11).
        self.total_queued -= std::mem::take(&mut c.queue).bytes;
        if reason.drops_queue() {
            self.transmits.retain(|t| !matches!(t, Transmit::ToClient { client: to, .. } if *to == client));
        }
        self.events.push_back(RouterEvent::ClientClosed { client, reason });
        for upstream in dedicated {
            self.close_upstream(upstream, CloseReason::Local);
        }
        let mut subscriptions: Vec<_> = subscriptions.into_iter().collect();
        subscriptions.sort_unstable();
        for (upstream, subscription) in subscriptions {
            self.release_subscription(client, upstream, subscription);
        }
        // Cancels for what is still pending upstream, in the order it was sent.
        let mut pending: Vec<(UpstreamKey, u64)> = self
            .clients
            .get(&client)
            .map(|c| c.pending.values().map(|p| (p.upstream, p.sequence)).collect())
            .unwrap_or_default();
        pending.sort_unstable();
        for (upstream, sequence) in pending {
            let Some(flight) = self.upstreams.get_mut(&upstream).and_then(|u| u.flights.get_mut(&sequence)) else {
                continue;
            };
            if !flight.cancel_sent {
                flight.cancel_sent = true;
                let id = upstream_id(&self.options.request_id_prefix, sequence);
                let message = envelope::cancel(id, flight.target.clone());
                self.send_to_upstream(upstream, message);
            }
        }
        let mut held: Vec<UpstreamKey> = self
            .upstreams
            .iter()
            .filter(|(_, u)| u.holder.as_ref().is_some_and(|(holder, _)| *holder == client))
            .map(|(key, _)| *key)
            .collect();
        held.sort_unstable();
        for upstream in held {
            self.release_if_settled(client, upstream);
        }
        self.forget_if_settled(client);
    }

    /// A departed client's subscription: closed upstream on its behalf with the inspector's
    /// call, the id staying reserved until the answer, or freed at once (rule 7).
    fn release_subscription(&mut self, client: ClientKey, upstream: UpstreamKey, subscription: SubscriptionId) {
        let Some(u) = self.upstreams.get_mut(&upstream) else { return };
        if u.subscriptions.get(&subscription).map(|h| h.client) != Some(client) {
            return;
        }
        let call = self.inspector.as_mut().and_then(|inspector| inspector.unsubscribe_call(&subscription));
        let (Some(call), Some(server_id)) = (call, u.server_id.clone()) else {
            u.subscriptions.remove(&subscription);
            return;
        };
        let Some((upstream_id, sequence)) = self.next_upstream_id(upstream) else { return };
        let target = envelope::server_target(server_id);
        let effect = Effect::Closes(subscription);
        let flight = Flight { client, client_id: None, target: target.clone(), sequence, cancel_sent: false, effect };
        if let Some(u) = self.upstreams.get_mut(&upstream) {
            u.flights.insert(sequence, flight);
        }
        let message = envelope::request(upstream_id, target, call);
        self.send_to_upstream(upstream, message);
    }

    /// Reports the route `client` (departed) holds on `upstream` once nothing of it is pending
    /// there (rule 7).
    fn release_if_settled(&mut self, client: ClientKey, upstream: UpstreamKey) {
        // A client without a record left with nothing pending.
        let settled = self.clients.get(&client).is_none_or(|c| {
            c.stage == ClientStage::Departed && c.pending_per_upstream.get(&upstream).is_none_or(|n| *n == 0)
        });
        if !settled {
            return;
        }
        let Some(u) = self.upstreams.get_mut(&upstream) else { return };
        if u.holder.as_ref().is_some_and(|(holder, _)| *holder == client) {
            if let Some((_, route)) = u.holder.take() {
                self.events.push_back(RouterEvent::Release { upstream, route });
            }
        }
    }

    /// Drops a departed client's record once nothing of it is pending.
    fn forget_if_settled(&mut self, client: ClientKey) {
        if self.clients.get(&client).is_some_and(|c| c.stage == ClientStage::Departed && c.pending.is_empty()) {
            self.clients.remove(&client);
        }
    }

    /// Queues `message` for `client` within its byte budgets (rule 11): past
    /// [`RouterOptions::max_client_queue_bytes`] the client is closed instead, and past
    /// [`RouterOptions::max_total_queue_bytes`] the longest queue's connection is.
    fn send_to_client(&mut self, client: ClientKey, message: ServerMessage) {
        let bytes = envelope::server_message_bytes(&message);
        let (now, limit) = (self.now, self.options.max_client_queue_bytes);
        let Some(c) = self.clients.get_mut(&client) else { return };
        if c.stage == ClientStage::Departed {
            return;
        }
        c.last_activity = now;
        if c.queue.bytes + bytes > limit {
            return self.close_client(client, CloseReason::TransmitQueueFull { limit });
        }
        let arm = queued(&mut c.queue, bytes, now);
        self.total_queued += bytes;
        if arm {
            self.arm(now + self.options.write_timeout, Timer::ClientWrite(client));
        }
        self.transmits.push_back(Transmit::ToClient { client, message });
        self.keep_total_budget();
    }

    /// Queues `message` for `upstream` within its byte budgets, as
    /// [`send_to_client`](Self::send_to_client).
    fn send_to_upstream(&mut self, upstream: UpstreamKey, message: ClientMessage) {
        let bytes = envelope::client_message_bytes(&message);
        let (now, limit) = (self.now, self.options.max_upstream_queue_bytes);
        let Some(u) = self.upstreams.get_mut(&upstream) else { return };
        if u.queue.bytes + bytes > limit {
            return self.close_upstream(upstream, CloseReason::TransmitQueueFull { limit });
        }
        let arm = queued(&mut u.queue, bytes, now);
        self.total_queued += bytes;
        if arm {
            self.arm(now + self.options.write_timeout, Timer::UpstreamWrite(upstream));
        }
        self.transmits.push_back(Transmit::ToUpstream { upstream, message });
        self.keep_total_budget();
    }

    /// Past [`RouterOptions::max_total_queue_bytes`], closes the connection with the longest
    /// queue, dropping that queue (rule 11).
    fn keep_total_budget(&mut self) {
        let limit = self.options.max_total_queue_bytes;
        while self.total_queued > limit {
            let client = self
                .clients
                .iter()
                .filter(|(_, c)| c.stage != ClientStage::Departed)
                .max_by_key(|(_, c)| c.queue.bytes)
                .map(|(key, c)| (*key, c.queue.bytes));
            let upstream =
                self.upstreams.iter().max_by_key(|(_, u)| u.queue.bytes).map(|(key, u)| (*key, u.queue.bytes));
            let reason = CloseReason::TransmitQueueFull { limit };
            match (client, upstream) {
                (Some((_, c)), Some((upstream, u))) if u > c => self.close_upstream(upstream, reason),
                (Some((client, bytes)), _) if bytes > 0 => self.close_client(client, reason),
                (_, Some((upstream, bytes))) if bytes > 0 => self.close_upstream(upstream, reason),
                _ => break,
            }
        }
    }

    fn arm(&mut self, at: Instant, timer: Timer) {
        self.timers.push(Reverse((at, timer)));
    }

    /// Rule 10 for one timer that came due.
    fn fire(&mut self, timer: Timer) {
        let now = self.now;
        let write_timeout = self.options.write_timeout;
        match timer {
            Timer::ClientHandshake(client) => {
                if self.clients.get(&client).is_some_and(|c| c.stage == ClientStage::AwaitingHello) {
                    let error = self.options.handshake_timeout_error.clone();
                    self.send_to_client(client, envelope::hello_error(error));
                    self.close_client(client, CloseReason::Timeout(Deadline::Handshake));
                }
            }
            Timer::ClientIdle(client) => {
                let Some(idle) = self.options.idle_timeout else { return };
                let Some(c) = self.clients.get(&client).filter(|c| c.stage == ClientStage::Open) else { return };
                let due = c.last_activity + idle;
                if !c.pending.is_empty() {
                    // Idle time counts from the last frame once nothing is pending: check again
                    // a whole timeout later at the earliest.
                    self.arm(now.max(due) + idle, Timer::ClientIdle(client));
                } else if due <= now {
                    self.close_client(client, CloseReason::Timeout(Deadline::Idle));
                } else {
                    self.arm(due, Timer::ClientIdle(client));
                }
            }
            Timer::ClientWrite(client) => {
                let Some(c) = self.clients.get_mut(&client) else { return };
                match write_due(&mut c.queue, write_timeout, now) {
                    Some(due) if due <= now => self.close_client(client, CloseReason::Timeout(Deadline::Write)),
                    Some(due) => self.arm(due, timer),
                    None => {}
                }
            }
            Timer::UpstreamHandshake(upstream) => {
                if self.upstreams.get(&upstream).is_some_and(|u| u.server_id.is_none()) {
                    self.close_upstream(upstream, CloseReason::Timeout(Deadline::Handshake));
                }
            }
            Timer::UpstreamWrite(upstream) => {
                let Some(u) = self.upstreams.get_mut(&upstream) else { return };
                match write_due(&mut u.queue, write_timeout, now) {
                    Some(due) if due <= now => self.close_upstream(upstream, CloseReason::Timeout(Deadline::Write)),
                    Some(due) => self.arm(due, timer),
                    None => {}
                }
            }
        }
    }

    fn client_is_open(&self, client: ClientKey) -> bool {
        self.clients.get(&client).is_some_and(|c| c.stage == ClientStage::Open)
    }

    // ---- Upstream side.

    fn new_upstream(&mut self, owner: Option<ClientKey>) -> UpstreamKey {
        let key = UpstreamKey(self.next_upstream);
        self.next_upstream += 1;
        let upstream = Upstream {
            owner,
            server_id: None,
            next_id: 1,
            flights: KeyMap::default(),
            subscriptions: HashMap::new(),
            held_attachment: None,
            holder: None,
            queue: Queue::default(),
        };
        self.upstreams.insert(key, upstream);
        self.arm(self.now + self.options.upstream_handshake_timeout, Timer::UpstreamHandshake(key));
        self.send_to_upstream(key, envelope::client_hello());
        key
    }

    /// Rule 2: the upstream's `hello` named `server_id`.
    fn register(&mut self, upstream: UpstreamKey, server_id: ServerId) {
        let Some(u) = self.upstreams.get_mut(&upstream) else { return };
        u.server_id = Some(server_id.clone());
        let replaced = match u.owner {
            None => self.shared.insert(server_id.clone(), upstream),
            Some(owner) => self.clients.get_mut(&owner).and_then(|c| c.routes.insert(server_id.clone(), upstream)),
        };
        self.events.push_back(RouterEvent::UpstreamReady { upstream, server_id, replaced });
    }

    /// A message an upstream may not send after its handshake: `hello` or `hello_error` close
    /// it, a message type this router does not know how to route is ignored.
    fn unexpected_upstream_message(&mut self, upstream: UpstreamKey, message: &ServerMessage) {
        match message {
            ServerMessage::Hello(_) => {
                self.close_upstream(upstream, CloseReason::Violation(Violation::UnexpectedHello))
            }
            ServerMessage::HelloError(_) => {
                self.close_upstream(upstream, CloseReason::Violation(Violation::UnexpectedHelloError));
            }
            _ => {}
        }
    }

    /// Rules 4-7 for one response.
    fn route_response(&mut self, upstream: UpstreamKey, response: Response) {
        let Some(u) = self.upstreams.get_mut(&upstream) else { return };
        let (upstream_id, ok) = envelope::response_head(&response);
        let flight = upstream_sequence(&self.options.request_id_prefix, upstream_id)
            .and_then(|sequence| u.flights.remove(&sequence));
        let Some(flight) = flight else {
            let violation = Violation::UnknownResponse(upstream_id.clone());
            return self.close_upstream(upstream, CloseReason::Violation(violation));
        };
        let attachment = u.held_attachment.take();
        // A failed subscribe frees its id, so does a successful unsubscribe, and so does any
        // answer to one the router sent for a departed client.
        match &flight.effect {
            Effect::Opened(subscription) if !ok => {
                self.unsubscribe(upstream, flight.client, subscription, flight.sequence);
            }
            Effect::Closes(subscription) if ok || flight.client_id.is_none() => {
                self.unsubscribe(upstream, flight.client, subscription, flight.sequence);
            }
            _ => {}
        }
        let client = flight.client;
        if let (Some(c), Some(client_id)) = (self.clients.get_mut(&client), &flight.client_id) {
            if let Some(pending) = c.pending.remove(client_id) {
                c.held -= pending.held;
            }
            if let Some(count) = c.pending_per_upstream.get_mut(&upstream) {
                *count -= 1;
                if *count == 0 {
                    c.pending_per_upstream.remove(&upstream);
                }
            }
        }
        if let Some(attachment) = attachment {
            self.hand_attachment(upstream, client, attachment);
        }
        match flight.client_id {
            Some(client_id) if self.client_is_open(client) => {
                self.send_to_client(client, envelope::readdress_response(response, client_id));
            }
            _ => {
                self.release_if_settled(client, upstream);
                self.forget_if_settled(client);
            }
        }
    }

    /// Gives a held attachment to `client`, which becomes the holder of the upstream's route
    /// (or clears it), even when it left (rule 6; its route is then released, rule 7).
    fn hand_attachment(&mut self, upstream: UpstreamKey, client: ClientKey, attachment: Attachment) {
        if let Some(u) = self.upstreams.get_mut(&upstream) {
            u.holder = envelope::attachment_route(&attachment).map(|route| (client, route.clone()));
        }
        if self.client_is_open(client) {
            self.send_to_client(client, envelope::forward_attachment(attachment));
        }
    }

    /// Frees `subscription` of `client` on `upstream` after the answer to the call forwarded
    /// under counter `sequence`, unless the client subscribed it again after that call.
    fn unsubscribe(&mut self, upstream: UpstreamKey, client: ClientKey, subscription: &SubscriptionId, sequence: u64) {
        if let Some(u) = self.upstreams.get_mut(&upstream) {
            if u.subscriptions.get(subscription).is_some_and(|h| h.client == client && h.subscribed <= sequence) {
                u.subscriptions.remove(subscription);
                if let Some(c) = self.clients.get_mut(&client) {
                    c.subscriptions.remove(&(upstream, subscription.clone()));
                }
            }
        }
    }

    /// Rule 5 for one update.
    fn route_update(&mut self, upstream: UpstreamKey, update: ServiceUpdate) {
        let Some(u) = self.upstreams.get(&upstream) else { return };
        let subscription = envelope::update_subscription(&update);
        let holder = u.owner.or_else(|| u.subscriptions.get(subscription).map(|h| h.client));
        match holder {
            Some(client) if self.client_is_open(client) => {
                self.send_to_client(client, envelope::forward_update(update))
            }
            _ => {
                let subscription_id = subscription.clone();
                self.events.push_back(RouterEvent::UnroutedUpdate { upstream, subscription_id });
            }
        }
    }

    /// Rule 6 for one attachment message.
    fn route_attachment(&mut self, upstream: UpstreamKey, attachment: Attachment) {
        let Some(u) = self.upstreams.get_mut(&upstream) else { return };
        match u.owner {
            Some(client) => self.send_to_client(client, envelope::forward_attachment(attachment)),
            None => u.held_attachment = Some(attachment),
        }
    }

    /// Rule 9: closes `upstream` and fails what it held.
    fn close_upstream(&mut self, upstream: UpstreamKey, reason: CloseReason) {
        let Some(u) = self.upstreams.remove(&upstream) else { return };
        self.total_queued -= u.queue.bytes;
        if reason.drops_queue() {
            self.transmits.retain(|t| !matches!(t, Transmit::ToUpstream { upstream: to, .. } if *to == upstream));
        }
        match (u.owner, &u.server_id) {
            (None, Some(server_id)) => {
                if self.shared.get(server_id) == Some(&upstream) {
                    self.shared.remove(server_id);
                }
            }
            (Some(owner), server_id) => {
                if let Some(c) = self.clients.get_mut(&owner) {
                    c.dedicated.retain(|key| *key != upstream);
                    if let Some(server_id) = server_id {
                        if c.routes.get(server_id) == Some(&upstream) {
                            c.routes.remove(server_id);
                        }
                    }
                }
            }
            (None, None) => {}
        }
        for (subscription, holding) in u.subscriptions {
            if let Some(c) = self.clients.get_mut(&holding.client) {
                c.subscriptions.remove(&(upstream, subscription));
            }
        }
        let mut flights: Vec<Flight> = u.flights.into_values().collect();
        flights.sort_unstable_by_key(|flight| flight.sequence);
        let mut failed = 0;
        let mut departed = Vec::new();
        for flight in flights {
            let (Some(c), Some(client_id)) = (self.clients.get_mut(&flight.client), flight.client_id) else { continue };
            if let Some(pending) = c.pending.remove(&client_id) {
                c.held -= pending.held;
            }
            c.pending_per_upstream.remove(&upstream);
            if c.stage == ClientStage::Open {
                failed += 1;
                let error = self.options.server_departed.clone();
                self.send_to_client(flight.client, envelope::error_response(client_id, error));
            } else {
                departed.push(flight.client);
            }
        }
        self.events.push_back(RouterEvent::UpstreamClosed { upstream, reason, failed });
        for client in departed {
            self.forget_if_settled(client);
        }
    }
}

/// Adds `bytes` to `queue` at `now`; whether a write timer must be armed for it.
fn queued(queue: &mut Queue, bytes: usize, now: Instant) -> bool {
    queue.bytes += bytes;
    if queue.stalled_since.is_none() {
        queue.stalled_since = Some(now);
    }
    !std::mem::replace(&mut queue.timer_armed, true)
}

/// Takes `bytes` written out of `queue` at `now` (progress restarts the write deadline); how
/// many it took.
fn written(queue: &mut Queue, bytes: usize, now: Instant) -> usize {
    let taken = bytes.min(queue.bytes);
    queue.bytes -= taken;
    queue.stalled_since = (queue.bytes > 0).then_some(now);
    taken
}

/// A write timer of `queue` came due: the instant its deadline is now (`None`: nothing waits,
/// the timer is dropped). The caller re-arms it when that instant is still to come.
fn write_due(queue: &mut Queue, timeout: std::time::Duration, now: Instant) -> Option<Instant> {
    let due = queue.stalled_since.map(|since| since + timeout);
    queue.timer_armed = due.is_some_and(|due| due > now);
    due
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClientHello, ClientMessage, Payload, Request, RequestId, ServerHello, ServerTarget, SuccessResponse};

    const HOME: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

    #[test]
    fn a_departed_client_with_nothing_pending_is_forgotten() {
        let mut router = Router::new(ServerId::new(HOME).unwrap(), RouterOptions::default());
        let waiting = router.add_client();
        let ready = router.add_client();
        router.client_message(ready, ClientMessage::Hello(ClientHello::new(8)));
        assert_eq!(router.clients.len(), 2);
        router.disconnect_client(ready);
        assert_eq!(router.clients.keys().collect::<Vec<_>>(), [&waiting]);
        router.disconnect_client(waiting);
        assert!(router.clients.is_empty(), "no record of a client outlives it");
    }

    #[test]
    fn a_departed_client_is_remembered_until_its_last_request_is_answered() {
        let home = ServerId::new(HOME).unwrap();
        let mut router = Router::new(home.clone(), RouterOptions::default());
        let upstream = router.add_upstream();
        router.upstream_message(upstream, ServerMessage::Hello(ServerHello::new(home.clone())));
        let client = router.add_client();
        router.client_message(client, ClientMessage::Hello(ClientHello::new(8)));
        for id in ["1", "2"] {
            let target = RpcTarget::Server(ServerTarget::new(home.clone()));
            let request = Request::new(RequestId::new(id).unwrap(), target, Payload::null());
            router.client_message(client, ClientMessage::Request(request));
        }
        router.disconnect_client(client);
        assert!(router.clients.contains_key(&client), "two requests are still pending");
        let answer =
            |id: &str| ServerMessage::Response(Response::Success(SuccessResponse::new(RequestId::new(id).unwrap())));
        router.upstream_message(upstream, answer("req-1"));
        assert!(router.clients.contains_key(&client), "one request is still pending");
        router.upstream_message(upstream, answer("req-2"));
        assert!(!router.clients.contains_key(&client));
    }
}
