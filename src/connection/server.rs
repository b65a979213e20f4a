//! [`ServerConnection`]: the server half of a Pi connection.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::inbox::{self, Inbox, Receiver};
use super::options::{default_error, option_setters};
use super::service_call::{call_layout, is_service_call, CallLayout};
use super::{CloseReason, ConnectionError, Deadline, Outbox, QueueError, Violation, DEFAULT_MAX_PENDING_TRANSMIT};
use crate::{
    is_supported_protocol_version, Attachment, ClientMessage, CodecOptions, ErrorBody, ErrorCode, ErrorKind,
    ErrorResponse, Payload, ProtocolError, Request, RequestId, Response, RpcTarget, Rule, ServerHello,
    ServerHelloError, ServerId, ServerMessage, ServiceUpdate, SessionTarget, SubscriptionId, PROTOCOL_VERSION,
};

/// The default of [`ServerOptions::max_in_flight`]: admitted requests one connection may have
/// unanswered at once.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 4096;

/// The default of [`ServerOptions::handshake_timeout`]: 5 s, as the reference server.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// The default of [`ServerOptions::max_hello_frame_length`]: 1 KiB (a `hello` frame is about
/// 25 bytes).
pub const DEFAULT_MAX_HELLO_FRAME_LENGTH: u32 = 1024;

/// The default of [`ServerOptions::max_in_flight_id_bytes`]: 1 MiB of request ids held for the
/// admitted requests of one connection.
pub const DEFAULT_MAX_IN_FLIGHT_ID_BYTES: usize = 1024 * 1024;

/// The placeholder of [`ServerOptions::unsupported_version`]'s message replaced by the offered
/// version.
const VERSION_PLACEHOLDER: &str = "{version}";

/// How a [`ServerConnection`] behaves, and the errors it answers with on its own.
///
/// Error codes are opaque strings to the protocol (docs/PROTOCOL.md section 4), so every error the
/// connection sends by itself is configurable here. The defaults are the reference server's
/// (`@earendil-works/pi-server` 0.85.1), with their codes:
///
/// | field | code | message | sent when |
/// |---|---|---|---|
/// | `handshake_timeout_error` | `invalid_request` | Handshake timeout | no `hello` within [`handshake_timeout`](Self::handshake_timeout) (as `hello_error`) |
/// | `expected_hello` | `invalid_request` | The first client message must be hello | another message first (as `hello_error`) |
/// | `unexpected_hello` | `invalid_request` | hello may only be sent as the first message | a second `hello` (as `hello_error`) |
/// | `malformed_frame_code` | `invalid_request` | Invalid client protocol frame: (what is wrong) | a frame that is not strict CBOR (as `hello_error`) |
/// | `malformed_message` | `invalid_request` | Invalid client protocol message | CBOR that is no client message (as `hello_error`) |
/// | `unsupported_version` | `version` | Unsupported protocol version 7; expected 8 | a `hello` offering another version (as `hello_error`) |
/// | `duplicate_id` | `invalid_request` | Request ID is already active | a request reuses the id of one still in flight |
/// | `invalid_call` | `invalid_request` | Invalid service call | the call is not `{serviceId, member, args, instance?}` |
/// | `wrong_server` | `wrong_server` | Request was addressed to another server | a request's `serverId` is not this server's |
/// | `stale_route` | `session_not_attached` | Session is not attached to this client | a session target is not the current attachment route |
/// | `too_many_requests` | `too_many_requests` | Too many requests in flight | [`max_in_flight`](Self::max_in_flight) requests (or [`max_in_flight_id_bytes`](Self::max_in_flight_id_bytes) of ids) are already in flight |
///
/// The bounds, with their defaults: [`handshake_timeout`](Self::handshake_timeout) 5 s,
/// [`max_hello_frame_length`](Self::max_hello_frame_length) 1 KiB,
/// [`max_in_flight`](Self::max_in_flight) 4,096, [`max_in_flight_id_bytes`](Self::max_in_flight_id_bytes)
/// 1 MiB, [`max_pending_transmit`](Self::max_pending_transmit) 64 MiB.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Frame and CBOR limits for both directions (default: [`CodecOptions::default`]).
    pub codec: CodecOptions,
    /// The `hello_error` for an unsupported version (default code `version`, message
    /// "Unsupported protocol version {version}; expected 8"): every `{version}` in the message is
    /// replaced by the version the client offered.
    pub unsupported_version: ErrorBody,
    /// How long the client may take to send its `hello`, from the connection's start
    /// ([`ServerConnection::new_at`]); `None`: forever. Default [`DEFAULT_HANDSHAKE_TIMEOUT`], 5 s.
    pub handshake_timeout: Option<Duration>,
    /// The `hello_error` sent when the handshake deadline passes (default code
    /// `invalid_request`, message "Handshake timeout").
    pub handshake_timeout_error: ErrorBody,
    /// The largest first frame (the `hello`) accepted, in payload bytes, far below the frame
    /// limit of [`codec`](Self::codec): a header announcing more is refused as soon as its 4 bytes
    /// arrive (default [`DEFAULT_MAX_HELLO_FRAME_LENGTH`], 1 KiB).
    pub max_hello_frame_length: u32,
    /// Whether a protocol violation is answered with a `hello_error` before closing, as the
    /// reference server does (default `true`): [`expected_hello`](Self::expected_hello),
    /// [`unexpected_hello`](Self::unexpected_hello), or for a frame that does not decode
    /// [`malformed_frame_code`](Self::malformed_frame_code) with the decoder's error as message.
    pub hello_error_on_violation: bool,
    /// The `hello_error` for a first message other than `hello` (default code
    /// `invalid_request`, message "The first client message must be hello").
    pub expected_hello: ErrorBody,
    /// The `hello_error` for a second `hello` (default code `invalid_request`, message "hello
    /// may only be sent as the first message").
    pub unexpected_hello: ErrorBody,
    /// The `hello_error` code for a frame that is not a well-formed frame of strict CBOR
    /// (default `invalid_request`); its message is "Invalid client protocol frame: " and what
    /// is wrong, as the reference words it ("Frame length 16777217 exceeds configured limit of
    /// 16777216") or in this decoder's words.
    pub malformed_frame_code: ErrorCode,
    /// The `hello_error` for well-formed CBOR that is no client message of the schema (default
    /// code `invalid_request`, message "Invalid client protocol message").
    pub malformed_message: ErrorBody,
    /// The error response for a call that is not a service call `{serviceId, member, args,
    /// instance?}` (default code `invalid_request`, message "Invalid service call"); `None`
    /// admits any call.
    pub invalid_call: Option<ErrorBody>,
    /// Whether an admitted request whose call passed the [`invalid_call`](Self::invalid_call)
    /// check is reported as [`ServerEvent::ServiceRequest`], with where the call's parts lie
    /// ([`CallLayout`]), instead of [`ServerEvent::Request`] (default `false`). The check reads
    /// the call once either way; with this, the application reads the parts without walking
    /// the call again. No effect while `invalid_call` is `None`.
    pub report_call_layouts: bool,
    /// The error response for a target naming another server (default code `wrong_server`,
    /// message "Request was addressed to another server").
    pub wrong_server: ErrorBody,
    /// The error response for a session target that is not the current route, including any
    /// session target while no route is published (default code `session_not_attached`,
    /// message "Session is not attached to this client").
    pub stale_route: ErrorBody,
    /// The error response for an id already in flight (default code `invalid_request`, message
    /// "Request ID is already active"); the first request with that id is still answered.
    pub duplicate_id: ErrorBody,
    /// The error response once `max_in_flight` requests are in flight (default code
    /// `too_many_requests`).
    pub too_many_requests: ErrorBody,
    /// How many admitted requests may be in flight at once (default
    /// [`DEFAULT_MAX_IN_FLIGHT`]); bounds the memory a client can make the connection hold.
    pub max_in_flight: usize,
    /// How many bytes of request ids the admitted requests in flight may hold together (default
    /// [`DEFAULT_MAX_IN_FLIGHT_ID_BYTES`], 1 MiB): a request whose id would pass it is answered
    /// with [`too_many_requests`](Self::too_many_requests), so long ids on held calls cost at
    /// most this much per connection.
    pub max_in_flight_id_bytes: usize,
    /// The most bytes the connection keeps queued for the transport (default
    /// [`DEFAULT_MAX_PENDING_TRANSMIT`], 64 MiB): [`ServerConnection::pending_transmit_len`]
    /// never exceeds it, so a client that keeps sending but stops reading (fencing errors are
    /// queued without the application) cannot make the server buffer without bound. Set it with
    /// [`max_pending_transmit`](Self::max_pending_transmit); see there for what happens when it
    /// is reached.
    pub max_pending_transmit: usize,
}

option_setters! {
    ServerOptions {
        /// Sets [`codec`](Self::codec): the frame and CBOR limits of both directions.
        codec: CodecOptions;
        /// Sets [`unsupported_version`](Self::unsupported_version) (`{version}` in its message
        /// names the offered version).
        unsupported_version: ErrorBody;
        /// Sets [`handshake_timeout`](Self::handshake_timeout).
        handshake_timeout: Option<Duration>;
        /// Sets [`handshake_timeout_error`](Self::handshake_timeout_error).
        handshake_timeout_error: ErrorBody;
        /// Sets [`max_hello_frame_length`](Self::max_hello_frame_length), in bytes.
        max_hello_frame_length: u32;
        /// Sets [`hello_error_on_violation`](Self::hello_error_on_violation).
        hello_error_on_violation: bool;
        /// Sets [`expected_hello`](Self::expected_hello).
        expected_hello: ErrorBody;
        /// Sets [`unexpected_hello`](Self::unexpected_hello).
        unexpected_hello: ErrorBody;
        /// Sets [`malformed_frame_code`](Self::malformed_frame_code).
        malformed_frame_code: ErrorCode;
        /// Sets [`malformed_message`](Self::malformed_message).
        malformed_message: ErrorBody;
        /// Sets [`invalid_call`](Self::invalid_call).
        invalid_call: Option<ErrorBody>;
        /// Sets [`report_call_layouts`](Self::report_call_layouts).
        report_call_layouts: bool;
        /// Sets [`wrong_server`](Self::wrong_server).
        wrong_server: ErrorBody;
        /// Sets [`stale_route`](Self::stale_route).
        stale_route: ErrorBody;
        /// Sets [`duplicate_id`](Self::duplicate_id).
        duplicate_id: ErrorBody;
        /// Sets [`too_many_requests`](Self::too_many_requests).
        too_many_requests: ErrorBody;
        /// Sets [`max_in_flight`](Self::max_in_flight).
        max_in_flight: usize;
        /// Sets [`max_in_flight_id_bytes`](Self::max_in_flight_id_bytes), in bytes.
        max_in_flight_id_bytes: usize;
        /// Sets [`max_pending_transmit`](Self::max_pending_transmit), in bytes.
        ///
        /// When a frame would take the queued bytes past it, the frame is not queued and the
        /// connection begins closing with [`CloseReason::TransmitQueueFull`]
        /// ([`ServerEvent::Closing`]: it stops reading and sends nothing new). The call that
        /// queued the frame then behaves as on a closing connection:
        /// [`ServerConnection::respond`] settles the request without sending and returns `Ok`,
        /// [`ServerConnection::set_attachment`] only changes the route to release,
        /// [`ServerConnection::publish_update`] returns [`ConnectionError::Closed`]; a fencing
        /// error or a `hello` the connection could not queue is simply not sent. The queue empties
        /// as the driver takes it ([`ServerConnection::poll_transmit`],
        /// [`ServerConnection::advance_transmit`]), so a driver should take bytes only as fast as
        /// it can write them. Keep the limit at or above the
        /// frame limit of [`codec`](Self::codec), or frames between the two can never be sent.
        ///
        /// ```
        /// use pi_protocol::connection::{ServerOptions, DEFAULT_MAX_PENDING_TRANSMIT};
        /// assert_eq!(ServerOptions::default().max_pending_transmit, DEFAULT_MAX_PENDING_TRANSMIT);
        /// let options = ServerOptions::default().max_pending_transmit(1 << 20);
        /// assert_eq!(options.max_pending_transmit, 1 << 20);
        /// ```
        max_pending_transmit: usize;
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            codec: CodecOptions::default(),
            unsupported_version: default_error(
                "version",
                &format!("Unsupported protocol version {VERSION_PLACEHOLDER}; expected {PROTOCOL_VERSION}"),
            ),
            handshake_timeout: Some(DEFAULT_HANDSHAKE_TIMEOUT),
            handshake_timeout_error: default_error("invalid_request", "Handshake timeout"),
            max_hello_frame_length: DEFAULT_MAX_HELLO_FRAME_LENGTH,
            hello_error_on_violation: true,
            expected_hello: default_error("invalid_request", "The first client message must be hello"),
            unexpected_hello: default_error("invalid_request", "hello may only be sent as the first message"),
            malformed_frame_code: ErrorCode::new("invalid_request").expect("a non-empty code"),
            malformed_message: default_error("invalid_request", "Invalid client protocol message"),
            invalid_call: Some(default_error("invalid_request", "Invalid service call")),
            report_call_layouts: false,
            wrong_server: default_error("wrong_server", "Request was addressed to another server"),
            stale_route: default_error("session_not_attached", "Session is not attached to this client"),
            duplicate_id: default_error("invalid_request", "Request ID is already active"),
            too_many_requests: default_error("too_many_requests", "Too many requests in flight"),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_in_flight_id_bytes: DEFAULT_MAX_IN_FLIGHT_ID_BYTES,
            max_pending_transmit: DEFAULT_MAX_PENDING_TRANSMIT,
        }
    }
}

/// Why the connection answered a request itself instead of admitting it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FenceReason {
    /// The id is already in flight ([`ServerOptions::duplicate_id`]).
    ///
    /// Responses correlate by id alone, so a client takes this error as the answer to its
    /// first request with that id; a correct client (such as [`ClientConnection`](super::ClientConnection),
    /// whose ids are never reused) never triggers it.
    DuplicateId,
    /// The call is not a service call `{serviceId, member, args, instance?}`
    /// ([`ServerOptions::invalid_call`]).
    InvalidCall,
    /// The target's `serverId` is another server's ([`ServerOptions::wrong_server`]).
    WrongServer,
    /// The session target is not the current attachment route ([`ServerOptions::stale_route`]).
    StaleRoute,
    /// Too many requests, or too many bytes of request ids, are in flight
    /// ([`ServerOptions::too_many_requests`]).
    TooManyRequests,
}

/// What a [`ServerConnection`] reports to the application, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The client's `hello` offered version 8 and was answered with `hello`.
    Ready,
    /// An admitted request: answer it exactly once with [`ServerConnection::respond`].
    Request(Request),
    /// An admitted request, as [`Request`](Self::Request), reported with where its service
    /// call's parts lie, when [`ServerOptions::report_call_layouts`] is on.
    ServiceRequest {
        /// The request, as decoded.
        request: Request,
        /// Where `request.call`'s `serviceId`, `member`, `args` and `instance` lie.
        layout: CallLayout,
    },
    /// The client cancelled the in-flight request `id` (reported once per request). The
    /// application decides how to stop the work, and still responds.
    Cancel {
        /// The request to stop.
        id: RequestId,
    },
    /// The connection answered request `id` with an error itself; the application never sees
    /// the request.
    Fenced {
        /// The fenced request.
        id: RequestId,
        /// Which fence it hit.
        reason: FenceReason,
    },
    /// The connection stopped reading and sends nothing new; in-flight requests must still be
    /// settled with [`ServerConnection::respond`] before it closes.
    Closing {
        /// Why.
        reason: CloseReason,
    },
    /// Every admitted request settled after [`Closing`](Self::Closing); this is the last event.
    Closed {
        /// The attachment route this connection held at that moment, which the application
        /// now releases (`None`: nothing to release).
        release: Option<SessionTarget>,
    },
    /// After the handshake, a client message of a type this connection has no rule for: one the
    /// schema gained after the connection logic was written (every type of protocol version 8
    /// has its own event). It is passed on as decoded; the connection keeps no state for it,
    /// answers nothing, and does not fence it.
    Other(ClientMessage),
}

#[derive(Debug)]
struct InFlight {
    target: RpcTarget,
    cancelled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    AwaitingHello,
    Open,
    Closing,
    Closed,
}

/// The server half of a Pi connection as a sans-IO state machine.
///
/// Feed it what the transport reads with [`receive`](Self::receive), answer the
/// [`ServerEvent::Request`]s it reports with [`respond`](Self::respond), publish routes with
/// [`set_attachment`](Self::set_attachment) and updates with
/// [`publish_update`](Self::publish_update), then drain [`poll_event`](Self::poll_event) and
/// [`poll_transmit`](Self::poll_transmit).
///
/// Rules (see the [module docs](super)): the first frame must be `hello`, within the handshake
/// deadline and the pre-hello frame limit; a violation is answered with `hello_error` before
/// closing; requests are fenced (duplicate id, invalid service call, wrong server, stale route,
/// too many in flight, checked in that order) before the application sees them; each admitted
/// request is answered once; closing reports the route to release only after every admitted
/// request settled.
///
/// The connection has no clock: it is told when it starts ([`new_at`](Self::new_at)), says when
/// it next needs to be woken ([`poll_timeout`](Self::poll_timeout)), and is told when that time
/// has come ([`handle_timeout`](Self::handle_timeout)).
///
/// ```
/// use pi_protocol::connection::{ServerConnection, ServerEvent, ServerOptions};
/// use pi_protocol::{encode_client_message, ClientHello, ClientMessage, ServerId};
///
/// let mut server = ServerConnection::new(ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?, ServerOptions::default());
/// server.receive(&encode_client_message(&ClientMessage::from(ClientHello::new(7)))?);
/// assert!(matches!(server.poll_event(), Some(ServerEvent::Closing { .. })));
/// assert_eq!(server.poll_event(), Some(ServerEvent::Closed { release: None }));
/// assert!(server.poll_transmit().is_some()); // the hello_error
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ServerConnection {
    server_id: ServerId,
    options: ServerOptions,
    inbox: Inbox,
    state: State,
    attachment: Option<SessionTarget>,
    in_flight: HashMap<RequestId, InFlight>,
    events: VecDeque<ServerEvent>,
    outgoing: Outbox,
    /// When the handshake must be done by (`None`: no deadline).
    handshake_deadline: Option<Instant>,
    /// The first 4 bytes of the stream (the `hello` frame's header) while they arrive, checked
    /// against the pre-hello frame limit.
    hello_header: [u8; 4],
    hello_header_len: u8,
    /// The bytes of the ids of the admitted requests in flight.
    in_flight_id_bytes: usize,
}

impl ServerConnection {
    /// A connection for the logical server `server_id`, waiting for the client's `hello`; its
    /// handshake deadline counts from now ([`Instant::now`]). A driver on a virtual clock (tokio's
    /// paused time) uses [`new_at`](Self::new_at) instead.
    pub fn new(server_id: ServerId, options: ServerOptions) -> Self {
        Self::new_at(server_id, options, Instant::now())
    }

    /// A connection that started at `now`: its handshake deadline is `now +`
    /// [`ServerOptions::handshake_timeout`].
    pub fn new_at(server_id: ServerId, options: ServerOptions, now: Instant) -> Self {
        let inbox = Inbox::new(&options.codec);
        let outgoing = Outbox::new(options.max_pending_transmit);
        let handshake_deadline = options.handshake_timeout.and_then(|timeout| now.checked_add(timeout));
        ServerConnection {
            server_id,
            options,
            inbox,
            state: State::AwaitingHello,
            attachment: None,
            in_flight: HashMap::new(),
            events: VecDeque::new(),
            outgoing,
            handshake_deadline,
            hello_header: [0; 4],
            hello_header_len: 0,
            in_flight_id_bytes: 0,
        }
    }

    /// When the connection next needs [`handle_timeout`](Self::handle_timeout): the handshake
    /// deadline while no `hello` has arrived, else `None`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::AwaitingHello => self.handshake_deadline,
            _ => None,
        }
    }

    /// Tells the connection the time is `now`: once the handshake deadline has passed without a
    /// `hello`, it queues a `hello_error` ([`ServerOptions::handshake_timeout_error`]) and begins
    /// closing with [`CloseReason::Timeout`]`(`[`Deadline::Handshake`]`)`. Earlier, and in any
    /// other state, nothing happens.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state == State::AwaitingHello && self.handshake_deadline.is_some_and(|deadline| now >= deadline) {
            let error = self.options.handshake_timeout_error.clone();
            self.refuse(error, CloseReason::Timeout(Deadline::Handshake));
        }
    }

    /// A deadline the driver keeps passed (the rest of a frame, idle, write: docs/PROTOCOL.md
    /// section 8, "Deadlines and budgets"): the connection begins closing with
    /// [`CloseReason::Timeout`]. For [`Deadline::Write`] (the peer does not read), what is
    /// queued for the transport is dropped.
    pub fn timed_out(&mut self, deadline: Deadline) {
        if deadline == Deadline::Write {
            self.outgoing.clear();
        }
        self.begin_close(CloseReason::Timeout(deadline));
    }

    /// The connection holds more than the byte budget `limit` a driver enforces: what is queued
    /// for the transport is dropped and the connection begins closing with
    /// [`CloseReason::BudgetExceeded`].
    pub fn exceeded_budget(&mut self, limit: usize) {
        self.outgoing.clear();
        self.begin_close(CloseReason::BudgetExceeded { limit });
    }

    /// The bytes of memory the connection holds for its peer: the transmit queue's buffer, a
    /// partly received frame, and the ids of the requests in flight. What a driver charges to a
    /// byte budget.
    pub fn held_bytes(&self) -> usize {
        self.outgoing.capacity() + self.inbox.buffered_capacity() + self.in_flight_id_bytes
    }

    /// Whether a frame (or its header) is partly received: a driver's deadline for the rest of
    /// a frame runs while this is true.
    pub fn receiving_frame(&self) -> bool {
        self.reading() && self.inbox.has_partial()
    }

    /// Feeds bytes read from the transport (any split of the stream) and processes every
    /// message they complete: the handshake, fencing, admitted requests and cancels.
    ///
    /// The outcome is in [`poll_event`](Self::poll_event) and
    /// [`poll_transmit`](Self::poll_transmit). Bytes after the connection began closing are
    /// ignored.
    pub fn receive(&mut self, bytes: &[u8]) {
        if self.check_hello_header(bytes) {
            inbox::receive(self, bytes);
        }
    }

    /// [`receive`](Self::receive) for a chunk held in a [`Bytes`]: the opaque payloads of the
    /// frames that lie wholly inside `chunk` (beyond 46 bytes) become slices of it instead of
    /// copies, as with [`SharedClientMessageDecoder`](crate::SharedClientMessageDecoder). The
    /// same messages, events and errors as `receive`; the two may be mixed on one stream.
    pub fn receive_shared(&mut self, chunk: &Bytes) {
        if self.check_hello_header(chunk) {
            inbox::receive_shared(self, chunk);
        }
    }

    /// The pre-hello frame limit: while the first frame's header is arriving, gathers its 4
    /// bytes and refuses a header announcing more than [`ServerOptions::max_hello_frame_length`].
    /// Only the first frame is ever read before the handshake (the connection answers `hello`
    /// as soon as it is decoded), so only the first 4 bytes of the stream are looked at.
    /// `false` when the connection refused it.
    fn check_hello_header(&mut self, bytes: &[u8]) -> bool {
        if self.hello_header_len >= 4 || self.state != State::AwaitingHello {
            return true;
        }
        let have = usize::from(self.hello_header_len);
        let take = bytes.len().min(4 - have);
        self.hello_header[have..have + take].copy_from_slice(&bytes[..take]);
        self.hello_header_len += take as u8;
        if self.hello_header_len < 4 {
            return true;
        }
        let length = u32::from_be_bytes(self.hello_header);
        let limit = self.options.max_hello_frame_length;
        if length <= limit {
            return true;
        }
        let error = ProtocolError::new(
            ErrorKind::Frame,
            Rule::FrameTooLong { length: u64::from(length), limit: u64::from(limit) },
        )
        .with_offset(0);
        self.violation(Violation::Decode(error));
        false
    }

    pub(crate) fn reading(&self) -> bool {
        matches!(self.state, State::AwaitingHello | State::Open)
    }

    fn handle(&mut self, message: ClientMessage) {
        // The state alone is matched first: the message moves only into the arm that takes it.
        match self.state {
            State::Open => match message {
                ClientMessage::Request(request) => self.admit(request),
                ClientMessage::Cancel(cancel) => {
                    if let Some(in_flight) = self.in_flight.get_mut(&cancel.id) {
                        if in_flight.target == cancel.target && !in_flight.cancelled {
                            in_flight.cancelled = true;
                            self.events.push_back(ServerEvent::Cancel { id: cancel.id });
                        }
                    }
                }
                ClientMessage::Hello(_) => self.violation(Violation::UnexpectedHello),
                // A message type added to the schema after these rules were written: it decoded,
                // so it is valid protocol, but the connection knows no rule for it. It goes to the
                // application untouched rather than closing the connection on a valid frame.
                #[allow(unreachable_patterns)]
                other => self.events.push_back(ServerEvent::Other(other)),
            },
            State::AwaitingHello => match message {
                ClientMessage::Hello(hello) => self.answer_hello(hello.version.get()),
                _ => self.violation(Violation::ExpectedHello),
            },
            State::Closing | State::Closed => {}
        }
    }

    /// Answers the client's `hello` offering `version`: `hello`, or `hello_error` and closing.
    fn answer_hello(&mut self, version: i64) {
        if is_supported_protocol_version(version) {
            let reply = ServerMessage::from(ServerHello::new(self.server_id.clone()));
            match self.queue(&reply) {
                Ok(()) => {
                    self.state = State::Open;
                    self.events.push_back(ServerEvent::Ready);
                }
                Err(error) => self.begin_close(error.into_close_reason()),
            }
        } else {
            let template = &self.options.unsupported_version;
            let error = if template.message.contains(VERSION_PLACEHOLDER) {
                ErrorBody::new(
                    template.code.clone(),
                    template.message.replace(VERSION_PLACEHOLDER, &version.to_string()),
                )
            } else {
                template.clone()
            };
            self.refuse(error, CloseReason::UnsupportedVersion(version));
        }
    }

    /// The peer broke a rule: a `hello_error` saying so (unless
    /// [`ServerOptions::hello_error_on_violation`] is off), then closing.
    fn violation(&mut self, violation: Violation) {
        if !self.options.hello_error_on_violation {
            return self.begin_close(CloseReason::Violation(violation));
        }
        let error = match &violation {
            Violation::ExpectedHello => self.options.expected_hello.clone(),
            Violation::UnexpectedHello => self.options.unexpected_hello.clone(),
            Violation::Decode(error) if error.kind() == ErrorKind::Schema => self.options.malformed_message.clone(),
            // The reference server's words: its decoder's text for the failure
            // (docs/PROTOCOL.md section 6, `ProtocolError::reference_text`).
            Violation::Decode(error) => {
                let message = format!("Invalid client protocol frame: {}", error.reference_text());
                ErrorBody::new(self.options.malformed_frame_code.clone(), message)
            }
            other => ErrorBody::new(self.options.malformed_frame_code.clone(), other.to_string()),
        };
        self.refuse(error, CloseReason::Violation(violation));
    }

    /// Queues `hello_error` with `error` and begins closing with `reason` (with the queue's
    /// error instead, when the frame cannot be queued).
    fn refuse(&mut self, error: ErrorBody, reason: CloseReason) {
        if !self.reading() {
            return;
        }
        let reply = ServerMessage::from(ServerHelloError::new(error));
        match self.queue(&reply) {
            Ok(()) => self.begin_close(reason),
            Err(error) => self.begin_close(error.into_close_reason()),
        }
    }

    /// Fences `request` or admits it (docs/PROTOCOL.md section 8, fencing; checks in the documented order).
    fn admit(&mut self, request: Request) {
        // One lookup of the id serves the duplicate check and the insertion.
        let id_len = request.id.as_str().len();
        let full = self.in_flight.len() >= self.options.max_in_flight
            || self.in_flight_id_bytes + id_len > self.options.max_in_flight_id_bytes;
        let check_call = self.options.invalid_call.is_some();
        let mut layout = None;
        let fence = match self.in_flight.entry(request.id.clone()) {
            Entry::Occupied(_) => Some(FenceReason::DuplicateId),
            Entry::Vacant(slot) => {
                // The shape check, keeping where the parts lie when the application asked.
                let not_a_call = check_call
                    && if self.options.report_call_layouts {
                        layout = call_layout(&request.call);
                        layout.is_none()
                    } else {
                        !is_service_call(&request.call)
                    };
                let fence = match &request.target {
                    _ if not_a_call => Some(FenceReason::InvalidCall),
                    RpcTarget::Server(target) if target.server_id != self.server_id => Some(FenceReason::WrongServer),
                    RpcTarget::Session(target) if target.server_id != self.server_id => Some(FenceReason::WrongServer),
                    RpcTarget::Session(target) if self.attachment.as_ref() != Some(target) => {
                        Some(FenceReason::StaleRoute)
                    }
                    // A target shape the schema gains later has no fence here: only the in-flight
                    // limit applies, and the application sees the target as decoded.
                    _ if full => Some(FenceReason::TooManyRequests),
                    _ => None,
                };
                if fence.is_none() {
                    slot.insert(InFlight { target: request.target.clone(), cancelled: false });
                    self.in_flight_id_bytes += id_len;
                }
                fence
            }
        };
        let Some(reason) = fence else {
            self.events.push_back(match layout {
                Some(layout) => ServerEvent::ServiceRequest { request, layout },
                None => ServerEvent::Request(request),
            });
            return;
        };
        let error = match reason {
            FenceReason::DuplicateId => &self.options.duplicate_id,
            FenceReason::InvalidCall => self.options.invalid_call.as_ref().expect("checked only when set"),
            FenceReason::WrongServer => &self.options.wrong_server,
            FenceReason::StaleRoute => &self.options.stale_route,
            FenceReason::TooManyRequests => &self.options.too_many_requests,
        };
        let reply = ServerMessage::from(Response::from(ErrorResponse::new(request.id.clone(), error.clone())));
        match self.queue(&reply) {
            Ok(()) => self.events.push_back(ServerEvent::Fenced { id: request.id, reason }),
            Err(error) => self.begin_close(error.into_close_reason()),
        }
    }

    /// Settles the admitted request `id`: `Ok(result)` sends `ok: true` (no `result` key for
    /// `None`), `Err(error)` sends `ok: false`.
    ///
    /// Accepted once per admitted id. While the connection is closing, the call settles without
    /// sending anything, and settling the last one reports [`ServerEvent::Closed`].
    ///
    /// # Errors
    /// [`ConnectionError::NotInFlight`] when `id` is not an admitted request awaiting its answer;
    /// [`ConnectionError::Encode`] when the response cannot be encoded (for example a result
    /// beyond the frame limit): the request then stays in flight, so answer it again, with an
    /// error for instance. A response that would take the transmit queue past
    /// [`ServerOptions::max_pending_transmit`] is not an error: the connection begins closing
    /// ([`CloseReason::TransmitQueueFull`]) and the request settles without sending.
    pub fn respond(
        &mut self,
        id: &RequestId,
        result: Result<Option<Payload>, ErrorBody>,
    ) -> Result<(), ConnectionError> {
        // One lookup: the request leaves the table at once, and comes back if its answer cannot
        // be encoded.
        let Some(in_flight) = self.in_flight.remove(id) else {
            return Err(ConnectionError::NotInFlight(id.clone()));
        };
        if self.state == State::Open {
            let response = match result {
                Ok(result) => Response::success(id.clone(), result),
                Err(error) => Response::failure(id.clone(), error),
            };
            if let Err(error) = self.queue_for_application(&ServerMessage::Response(response)) {
                self.in_flight.insert(id.clone(), in_flight);
                return Err(error);
            }
        }
        self.in_flight_id_bytes -= id.as_str().len();
        self.finish_if_settled();
        Ok(())
    }

    /// Publishes the current Session route (`Some`) or clears it (`None`) with an `attachment`
    /// message, and fences later session calls against it.
    ///
    /// Attach and detach results carry no routing identifiers, so the route travels out of band:
    /// call this before responding to the call that attached or detached. While the connection
    /// is closing, this only changes which route [`ServerEvent::Closed`] releases.
    ///
    /// # Errors
    /// [`ConnectionError::ForeignRoute`] for a route naming another server,
    /// [`ConnectionError::NotReady`] before the handshake, [`ConnectionError::Closed`] after
    /// close, [`ConnectionError::Encode`] if the frame breaks the codec limits. The route is
    /// unchanged on error. A frame that would take the transmit queue past
    /// [`ServerOptions::max_pending_transmit`] is not an error: the connection begins closing
    /// ([`CloseReason::TransmitQueueFull`]) and the route becomes the one to release.
    pub fn set_attachment(&mut self, route: Option<SessionTarget>) -> Result<(), ConnectionError> {
        if let Some(route) = &route {
            if route.server_id != self.server_id {
                return Err(ConnectionError::ForeignRoute(route.server_id.clone()));
            }
        }
        match self.state {
            State::AwaitingHello => return Err(ConnectionError::NotReady),
            State::Closed => return Err(ConnectionError::Closed),
            State::Open => {
                let message = ServerMessage::from(Attachment::new(route.clone()));
                match self.queue(&message) {
                    Ok(()) => {}
                    Err(QueueError::Encode(error)) => return Err(ConnectionError::Encode(error)),
                    Err(full @ QueueError::Full { .. }) => {
                        // The application holds the new route now: it is the one closing releases.
                        self.attachment = route;
                        self.begin_close(full.into_close_reason());
                        return Ok(());
                    }
                }
            }
            State::Closing => {}
        }
        self.attachment = route;
        Ok(())
    }

    /// Queues a `service_update` of subscription `subscription_id`.
    ///
    /// # Errors
    /// [`ConnectionError::NotReady`] before the handshake, [`ConnectionError::Closed`] once
    /// closing, [`ConnectionError::Encode`] if the frame breaks the codec limits. An update
    /// that would take the transmit queue past [`ServerOptions::max_pending_transmit`] begins
    /// closing the connection ([`CloseReason::TransmitQueueFull`]) and returns
    /// [`ConnectionError::Closed`].
    pub fn publish_update(&mut self, subscription_id: SubscriptionId, update: Payload) -> Result<(), ConnectionError> {
        match self.state {
            State::AwaitingHello => Err(ConnectionError::NotReady),
            State::Closing | State::Closed => Err(ConnectionError::Closed),
            State::Open => {
                let message = ServerMessage::from(ServiceUpdate::new(subscription_id, update));
                if self.queue_for_application(&message)? {
                    Ok(())
                } else {
                    Err(ConnectionError::Closed)
                }
            }
        }
    }

    /// The transport went away, or the application drops the client: stop reading and sending.
    ///
    /// Reports [`ServerEvent::Closing`] (unless already closing) with [`CloseReason::Local`] —
    /// or, when the bytes received so far end inside a frame, with [`CloseReason::Violation`]
    /// holding the `Frame`/`TruncatedFrame` error (offset of the cut frame), since that partial
    /// frame is discarded. [`ServerEvent::Closed`] with the route to release follows once every
    /// admitted request has been settled with [`respond`](Self::respond) — at once if none is
    /// in flight.
    pub fn disconnect(&mut self) {
        self.end_stream(CloseReason::Local);
    }

    /// The client ended the stream (end of file): stops as [`disconnect`](Self::disconnect)
    /// does, with [`CloseReason::PeerClosed`] (or the truncated frame's violation).
    pub fn peer_closed(&mut self) {
        self.end_stream(CloseReason::PeerClosed);
    }

    /// The transport failed with `error`: stops as [`disconnect`](Self::disconnect) does, with
    /// [`CloseReason::Transport`] (or the truncated frame's violation).
    pub fn transport_failed(&mut self, error: &std::io::Error) {
        self.end_stream(CloseReason::Transport(super::TransportError::new(error)));
    }

    fn end_stream(&mut self, clean: CloseReason) {
        if !self.reading() {
            return;
        }
        let reason = super::end_of_stream_reason(self.inbox.end(), clean);
        self.begin_close(reason);
    }

    /// The next event, in order, or `None` when there is none yet.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    /// Every byte queued for the transport and not written yet (whole frames, in order), handed
    /// over in a `Vec`, or `None` when nothing is queued. A driver that writes in place uses
    /// [`pending_transmit`](Self::pending_transmit) instead, which keeps the buffer.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.outgoing.take()
    }

    /// The bytes queued for the transport and not written yet (whole frames, except that the
    /// first may have been written in part), borrowed: a driver writes them in place and then
    /// calls [`advance_transmit`](Self::advance_transmit) with what the transport accepted,
    /// which reuses one buffer from write to write. Empty when nothing is queued.
    ///
    /// ```
    /// use pi_protocol::connection::{ServerConnection, ServerOptions};
    /// use pi_protocol::{encode_client_message, ClientHello, ClientMessage, ServerId};
    ///
    /// let mut server = ServerConnection::new(ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?, ServerOptions::default());
    /// server.receive(&encode_client_message(&ClientMessage::from(ClientHello::new(8u32)))?);
    /// let hello_len = server.pending_transmit().len();
    /// server.advance_transmit(3); // the transport took 3 bytes
    /// assert_eq!(server.pending_transmit().len(), hello_len - 3);
    /// server.advance_transmit(hello_len - 3);
    /// assert!(server.pending_transmit().is_empty());
    /// assert_eq!(server.poll_transmit(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pending_transmit(&self) -> &[u8] {
        self.outgoing.pending()
    }

    /// Marks the first `written` bytes of [`pending_transmit`](Self::pending_transmit) as
    /// handed to the transport.
    ///
    /// # Panics
    /// When `written` is more than `pending_transmit().len()`.
    pub fn advance_transmit(&mut self, written: usize) {
        self.outgoing.advance(written);
    }

    /// How many bytes are queued for the transport; a driver can stop reading while this is
    /// large (fencing errors are queued without the application's involvement).
    pub fn pending_transmit_len(&self) -> usize {
        self.outgoing.len()
    }

    /// The logical server this connection serves.
    pub fn server_id(&self) -> &ServerId {
        &self.server_id
    }

    /// The current attachment route (`None` after [`ServerEvent::Closed`] released it).
    pub fn attachment(&self) -> Option<&SessionTarget> {
        self.attachment.as_ref()
    }

    /// Whether `id` is an admitted request still awaiting [`respond`](Self::respond).
    pub fn is_in_flight(&self, id: &RequestId) -> bool {
        self.in_flight.contains_key(id)
    }

    /// The admitted requests awaiting [`respond`](Self::respond), in no particular order: after
    /// [`ServerEvent::Closing`], the calls whose work the application should stop and settle.
    pub fn in_flight(&self) -> impl Iterator<Item = &RequestId> + '_ {
        self.in_flight.keys()
    }

    /// How many admitted requests await [`respond`](Self::respond).
    pub fn in_flight_len(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether the handshake completed and the connection is reading.
    pub fn is_ready(&self) -> bool {
        self.state == State::Open
    }

    /// Whether [`ServerEvent::Closed`] has been reported.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    fn queue(&mut self, message: &ServerMessage) -> Result<(), QueueError> {
        self.outgoing.queue(message, &self.options.codec)
    }

    /// Queues a frame the application asked for: `Ok(true)` when queued; `Ok(false)` when it
    /// would have passed the transmit limit, so the connection began closing and the call goes
    /// on as on a closing connection.
    fn queue_for_application(&mut self, message: &ServerMessage) -> Result<bool, ConnectionError> {
        match self.queue(message) {
            Ok(()) => Ok(true),
            Err(QueueError::Encode(error)) => Err(ConnectionError::Encode(error)),
            Err(full @ QueueError::Full { .. }) => {
                self.begin_close(full.into_close_reason());
                Ok(false)
            }
        }
    }

    fn begin_close(&mut self, reason: CloseReason) {
        if !self.reading() {
            return;
        }
        self.state = State::Closing;
        self.events.push_back(ServerEvent::Closing { reason });
        self.finish_if_settled();
    }

    fn finish_if_settled(&mut self) {
        if self.state == State::Closing && self.in_flight.is_empty() {
            self.state = State::Closed;
            self.events.push_back(ServerEvent::Closed { release: self.attachment.take() });
        }
    }
}

impl Receiver for ServerConnection {
    type Message = ClientMessage;

    fn inbox(&mut self) -> &mut Inbox {
        &mut self.inbox
    }

    fn reading(&self) -> bool {
        ServerConnection::reading(self)
    }

    fn receive_message(&mut self, message: Result<ClientMessage, ProtocolError>) {
        match message {
            Ok(message) => self.handle(message),
            Err(error) => self.violation(Violation::Decode(error)),
        }
    }
}
