//! [`ServerConnection`]: the server half of a Pi connection.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};

use bytes::Bytes;

use super::inbox::{self, Inbox, Receiver};
use super::options::{default_error, option_setters};
use super::{CloseReason, ConnectionError, Outbox, QueueError, Violation, DEFAULT_MAX_PENDING_TRANSMIT};
use crate::{
    is_supported_protocol_version, Attachment, ClientMessage, CodecOptions, ErrorBody, ErrorResponse, Payload,
    ProtocolError, Request, RequestId, Response, RpcTarget, ServerHello, ServerHelloError, ServerId, ServerMessage,
    ServiceUpdate, SessionTarget, SubscriptionId, PROTOCOL_VERSION,
};

/// The default of [`ServerOptions::max_in_flight`]: admitted requests one connection may have
/// unanswered at once.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 4096;

/// How a [`ServerConnection`] behaves, and the errors it answers with on its own.
///
/// Error codes are opaque strings to the protocol (docs/PROTOCOL.md section 4), so every error the
/// connection sends by itself is configurable here. The defaults, with their codes:
///
/// | field | code | sent when |
/// |---|---|---|
/// | `unsupported_version` | `unsupported_version` | the client's `hello` offers a version other than 8 (as `hello_error`) |
/// | `wrong_server` | `wrong_server` | a request's `serverId` is not this server's |
/// | `stale_route` | `stale_attachment` | a session target is not the current attachment route |
/// | `duplicate_id` | `duplicate_request` | a request reuses the id of a request still in flight |
/// | `too_many_requests` | `too_many_requests` | [`max_in_flight`](Self::max_in_flight) requests are already in flight |
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Frame and CBOR limits for both directions (default: [`CodecOptions::default`]).
    pub codec: CodecOptions,
    /// The `hello_error` for an unsupported version (default code `unsupported_version`,
    /// message "This server speaks protocol version 8").
    pub unsupported_version: ErrorBody,
    /// The error response for a target naming another server (default code `wrong_server`).
    pub wrong_server: ErrorBody,
    /// The error response for a session target that is not the current route, including any
    /// session target while no route is published (default code `stale_attachment`, message
    /// "The attachment is no longer current").
    pub stale_route: ErrorBody,
    /// The error response for an id already in flight (default code `duplicate_request`).
    pub duplicate_id: ErrorBody,
    /// The error response once `max_in_flight` requests are in flight (default code
    /// `too_many_requests`).
    pub too_many_requests: ErrorBody,
    /// How many admitted requests may be in flight at once (default
    /// [`DEFAULT_MAX_IN_FLIGHT`]); bounds the memory a client can make the connection hold.
    pub max_in_flight: usize,
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
        /// Sets [`unsupported_version`](Self::unsupported_version).
        unsupported_version: ErrorBody;
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
                "unsupported_version",
                &format!("This server speaks protocol version {PROTOCOL_VERSION}"),
            ),
            wrong_server: default_error("wrong_server", "The target names another server"),
            stale_route: default_error("stale_attachment", "The attachment is no longer current"),
            duplicate_id: default_error("duplicate_request", "A request with this id is already in flight"),
            too_many_requests: default_error("too_many_requests", "Too many requests in flight"),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
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
    /// The target's `serverId` is another server's ([`ServerOptions::wrong_server`]).
    WrongServer,
    /// The session target is not the current attachment route ([`ServerOptions::stale_route`]).
    StaleRoute,
    /// Too many requests are in flight ([`ServerOptions::too_many_requests`]).
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
/// Rules (see the [module docs](super)): the first frame must be `hello`; requests are fenced
/// (duplicate id, wrong server, stale route, too many in flight, checked in that order) before
/// the application sees them; each admitted request is answered once; closing reports the route
/// to release only after every admitted request settled.
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
}

impl ServerConnection {
    /// A connection for the logical server `server_id`, waiting for the client's `hello`.
    pub fn new(server_id: ServerId, options: ServerOptions) -> Self {
        let inbox = Inbox::new(&options.codec);
        let outgoing = Outbox::new(options.max_pending_transmit);
        ServerConnection {
            server_id,
            options,
            inbox,
            state: State::AwaitingHello,
            attachment: None,
            in_flight: HashMap::new(),
            events: VecDeque::new(),
            outgoing,
        }
    }

    /// Feeds bytes read from the transport (any split of the stream) and processes every
    /// message they complete: the handshake, fencing, admitted requests and cancels.
    ///
    /// The outcome is in [`poll_event`](Self::poll_event) and
    /// [`poll_transmit`](Self::poll_transmit). Bytes after the connection began closing are
    /// ignored.
    pub fn receive(&mut self, bytes: &[u8]) {
        inbox::receive(self, bytes);
    }

    /// [`receive`](Self::receive) for a chunk held in a [`Bytes`]: the opaque payloads of the
    /// frames that lie wholly inside `chunk` (beyond 46 bytes) become slices of it instead of
    /// copies, as with [`SharedClientMessageDecoder`](crate::SharedClientMessageDecoder). The
    /// same messages, events and errors as `receive`; the two may be mixed on one stream.
    pub fn receive_shared(&mut self, chunk: &Bytes) {
        inbox::receive_shared(self, chunk);
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
                ClientMessage::Hello(_) => self.begin_close(CloseReason::Violation(Violation::UnexpectedHello)),
                // A message type added to the schema after these rules were written: it decoded,
                // so it is valid protocol, but the connection knows no rule for it. It goes to the
                // application untouched rather than closing the connection on a valid frame.
                #[allow(unreachable_patterns)]
                other => self.events.push_back(ServerEvent::Other(other)),
            },
            State::AwaitingHello => match message {
                ClientMessage::Hello(hello) => self.answer_hello(hello.version.get()),
                _ => self.begin_close(CloseReason::Violation(Violation::ExpectedHello)),
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
            let reply = ServerMessage::from(ServerHelloError::new(self.options.unsupported_version.clone()));
            match self.queue(&reply) {
                Ok(()) => self.begin_close(CloseReason::UnsupportedVersion(version)),
                Err(error) => self.begin_close(error.into_close_reason()),
            }
        }
    }

    /// Fences `request` or admits it (docs/PROTOCOL.md section 8, fencing; checks in the documented order).
    fn admit(&mut self, request: Request) {
        // One lookup of the id serves the duplicate check and the insertion.
        let full = self.in_flight.len() >= self.options.max_in_flight;
        let fence = match self.in_flight.entry(request.id.clone()) {
            Entry::Occupied(_) => Some(FenceReason::DuplicateId),
            Entry::Vacant(slot) => {
                let fence = match &request.target {
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
                }
                fence
            }
        };
        let Some(reason) = fence else {
            self.events.push_back(ServerEvent::Request(request));
            return;
        };
        let error = match reason {
            FenceReason::DuplicateId => &self.options.duplicate_id,
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
            Err(error) => self.begin_close(CloseReason::Violation(Violation::Decode(error))),
        }
    }
}
