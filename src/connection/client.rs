//! [`ClientConnection`]: the client half of a Pi connection.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;

use super::inbox::{self, Inbox, Receiver};
use super::options::option_setters;
use super::{CloseReason, ConnectionError, Outbox, QueueError, Violation, DEFAULT_MAX_PENDING_TRANSMIT};
use crate::{
    Cancel, ClientHello, ClientMessage, CodecOptions, ErrorBody, Integer, Payload, ProtocolError, Request, RequestId,
    Response, RpcTarget, ServerId, ServerMessage, ServerTarget, SessionTarget, SubscriptionId, PROTOCOL_VERSION,
};

/// The prefix of the request ids a client connection assigns by default: ids are `req-1`,
/// `req-2`, ... in the order requests are made. The real pi-client 0.85.1 names them
/// `request-1`, `request-2`, ...: set [`ClientOptions::request_id_prefix`] to `"request-"` for
/// the same ids on the wire (servers correlate by id alone, so either works).
pub const DEFAULT_REQUEST_ID_PREFIX: &str = "req-";

/// How a [`ClientConnection`] behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Frame and CBOR limits for both directions (default: [`CodecOptions::default`]).
    pub codec: CodecOptions,
    /// The version offered in `hello` (default: [`PROTOCOL_VERSION`], 8). Offering anything
    /// else is only useful to test a server's rejection.
    pub version: u32,
    /// Request ids are this prefix followed by a decimal counter starting at 1 (default:
    /// [`DEFAULT_REQUEST_ID_PREFIX`]).
    pub request_id_prefix: String,
    /// The most bytes the connection keeps queued for the transport (default
    /// [`DEFAULT_MAX_PENDING_TRANSMIT`], 64 MiB): [`ClientConnection::pending_transmit_len`]
    /// never exceeds it, so a server that stops reading cannot make the client buffer without
    /// bound. Set it with [`max_pending_transmit`](Self::max_pending_transmit); see there for
    /// what happens when it is reached.
    pub max_pending_transmit: usize,
    /// The logical server the client means to reach (default `None`: any). When set, a `hello`
    /// naming another `serverId` closes the connection with [`CloseReason::ServerIdMismatch`]
    /// before anything but `hello` was sent, as the real pi-client does: the server behind a
    /// socket named `<serverId>.sock` must be that server.
    pub expected_server_id: Option<ServerId>,
}

option_setters! {
    ClientOptions {
        /// Sets [`codec`](Self::codec): the frame and CBOR limits of both directions.
        codec: CodecOptions;
        /// Sets [`version`](Self::version), the version offered in `hello`.
        version: u32;
        /// Sets [`max_pending_transmit`](Self::max_pending_transmit), in bytes.
        ///
        /// When a frame would take the queued bytes past it, the frame is not queued and the
        /// connection closes with [`CloseReason::TransmitQueueFull`] ([`ClientEvent::Closed`]
        /// lists the pending requests): [`ClientConnection::request`] returns
        /// [`ConnectionError::Closed`] and [`ClientConnection::cancel`] `false`. The queue empties
        /// each time the driver takes it with [`ClientConnection::poll_transmit`], so a driver
        /// should take bytes only as fast as it can write them. Keep the limit at or above the
        /// frame limit of [`codec`](Self::codec), or frames between the two can never be sent; a
        /// limit below the `hello` frame (15 bytes) starts the connection closed.
        ///
        /// ```
        /// use pi_protocol::connection::{ClientOptions, DEFAULT_MAX_PENDING_TRANSMIT};
        /// assert_eq!(ClientOptions::default().max_pending_transmit, DEFAULT_MAX_PENDING_TRANSMIT);
        /// let options = ClientOptions::default().max_pending_transmit(1 << 20);
        /// assert_eq!(options.max_pending_transmit, 1 << 20);
        /// ```
        max_pending_transmit: usize;
        /// Sets [`expected_server_id`](Self::expected_server_id).
        ///
        /// ```
        /// use pi_protocol::{connection::ClientOptions, ServerId};
        /// let id = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?;
        /// let options = ClientOptions::default().expected_server_id(Some(id.clone()));
        /// assert_eq!(options.expected_server_id, Some(id));
        /// # Ok::<(), pi_protocol::ProtocolError>(())
        /// ```
        expected_server_id: Option<ServerId>;
    }
}

impl ClientOptions {
    /// Sets [`request_id_prefix`](Self::request_id_prefix).
    ///
    /// ```
    /// use pi_protocol::connection::ClientOptions;
    /// let options = ClientOptions::default().request_id_prefix("tab-1-").version(8);
    /// assert_eq!(options.request_id_prefix, "tab-1-");
    /// ```
    #[must_use]
    pub fn request_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.request_id_prefix = prefix.into();
        self
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            codec: CodecOptions::default(),
            version: PROTOCOL_VERSION,
            request_id_prefix: DEFAULT_REQUEST_ID_PREFIX.to_owned(),
            max_pending_transmit: DEFAULT_MAX_PENDING_TRANSMIT,
            expected_server_id: None,
        }
    }
}

/// Where [`ClientConnection::request`] sends a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallTarget {
    /// The logical server as a whole: `{ serverId }` with the `serverId` of the handshake.
    Server,
    /// The Session the server last published a route for: the current `attachment`
    /// (`{ serverId, sessionId, attachmentId }`).
    Session,
}

/// What a [`ClientConnection`] reports to the application, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The server accepted the handshake and names the logical server; requests may be made.
    Ready {
        /// The `serverId` of the server's `hello`; every server call carries it.
        server_id: ServerId,
    },
    /// A `response` settled the pending request `id` (exactly once per request).
    Response {
        /// The request this settles.
        id: RequestId,
        /// `Ok(result)` for `ok: true` (`None` when the response has no `result` key),
        /// `Err(error)` for `ok: false`.
        result: Result<Option<Payload>, ErrorBody>,
    },
    /// A `service_update` for a subscription.
    Update {
        /// The subscription it belongs to.
        subscription_id: SubscriptionId,
        /// The opaque update.
        update: Payload,
    },
    /// An `attachment` message replaced the current Session route (`None`: no route now).
    ///
    /// A route naming another server than the handshake's is not taken: the connection closes
    /// with [`Violation::ForeignAttachment`].
    Attachment {
        /// The new current route.
        route: Option<SessionTarget>,
    },
    /// The connection closed; this is the last event. Requests still pending will never settle.
    Closed {
        /// Why it closed.
        reason: CloseReason,
        /// The requests that were pending, in the order they were made.
        unsettled: Vec<RequestId>,
    },
    /// After the handshake, a server message of a type (or a `response` of a shape) this
    /// connection has no rule for: one the schema gained after the connection logic was written
    /// (every type of protocol version 8 has its own event). It is passed on as decoded; the
    /// connection keeps no state for it, and a pending request it may answer stays pending.
    Other(ServerMessage),
}

#[derive(Debug)]
struct Pending {
    sequence: u64,
    target: RpcTarget,
    cancel_sent: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    AwaitingHello,
    Ready(ServerId),
    Closed,
}

/// The client half of a Pi connection as a sans-IO state machine.
///
/// Feed it what the transport reads with [`receive`](Self::receive), make requests with
/// [`request`](Self::request) and [`cancel`](Self::cancel), then drain
/// [`poll_event`](Self::poll_event) and [`poll_transmit`](Self::poll_transmit).
///
/// Rules (see the [module docs](super)): the `hello` frame is queued at construction and nothing
/// else is sent before the server's `hello`; ids are fresh for the connection's life; a session
/// call uses the route of the last `attachment` message; a response settles exactly one pending
/// request; a bad or unexpected frame closes the connection with [`CloseReason::Violation`]. As
/// the real pi-client, it checks the server: a `hello` naming another server than
/// [`ClientOptions::expected_server_id`] closes with [`CloseReason::ServerIdMismatch`], an
/// `attachment` naming another server than the handshake's is [`Violation::ForeignAttachment`],
/// and a `hello_error` after the handshake closes with [`CloseReason::HelloError`] holding the
/// server's code and message.
///
/// ```
/// use pi_protocol::connection::{CallTarget, ClientConnection, ClientOptions, ConnectionError};
/// use pi_protocol::{ClientMessage, ClientMessageDecoder, Payload};
///
/// let mut client = ClientConnection::new(ClientOptions::default());
/// // Only hello may leave before the server's hello.
/// assert_eq!(client.request(CallTarget::Server, Payload::null()), Err(ConnectionError::NotReady));
/// let bytes = client.poll_transmit().unwrap();
/// let messages = ClientMessageDecoder::new().push(&bytes);
/// assert!(matches!(&messages[..], [Ok(ClientMessage::Hello(h))] if h.version.get() == 8));
/// ```
#[derive(Debug)]
pub struct ClientConnection {
    options: ClientOptions,
    inbox: Inbox,
    state: State,
    route: Option<SessionTarget>,
    pending: HashMap<RequestId, Pending>,
    next_id: u64,
    events: VecDeque<ClientEvent>,
    outgoing: Outbox,
}

impl ClientConnection {
    /// A connection that has queued its `hello` (offering [`ClientOptions::version`]).
    ///
    /// If even `hello` cannot be encoded under `options.codec` (a frame limit below 15 bytes),
    /// the connection starts closed with [`CloseReason::Encode`]; if it does not fit under
    /// [`ClientOptions::max_pending_transmit`], with [`CloseReason::TransmitQueueFull`].
    pub fn new(options: ClientOptions) -> Self {
        let inbox = Inbox::new(&options.codec);
        let outgoing = Outbox::new(options.max_pending_transmit);
        let mut connection = ClientConnection {
            options,
            inbox,
            state: State::AwaitingHello,
            route: None,
            pending: HashMap::new(),
            next_id: 1,
            events: VecDeque::new(),
            outgoing,
        };
        let hello = ClientMessage::from(ClientHello::new(Integer::from(connection.options.version)));
        if let Err(error) = connection.queue(&hello) {
            connection.close_with(error.into_close_reason());
        }
        connection
    }

    /// Feeds bytes read from the transport (any split of the stream) and processes every
    /// message they complete.
    ///
    /// Nothing is returned: the outcome is in [`poll_event`](Self::poll_event). Bytes after
    /// the connection closed are ignored.
    pub fn receive(&mut self, bytes: &[u8]) {
        inbox::receive(self, bytes);
    }

    /// [`receive`](Self::receive) for a chunk held in a [`Bytes`]: the `result` and `update`
    /// payloads (beyond 46 bytes) of the frames that lie wholly inside `chunk` become slices of
    /// it instead of copies. The same messages, events and errors as `receive`; the two may be
    /// mixed on one stream.
    pub fn receive_shared(&mut self, chunk: &Bytes) {
        inbox::receive_shared(self, chunk);
    }

    fn handle(&mut self, message: ServerMessage) {
        match (&self.state, message) {
            (State::AwaitingHello, ServerMessage::Hello(hello)) => {
                if let Some(expected) = &self.options.expected_server_id {
                    if *expected != hello.server_id {
                        let expected = expected.clone();
                        self.close_with(CloseReason::ServerIdMismatch { expected, actual: hello.server_id });
                        return;
                    }
                }
                self.state = State::Ready(hello.server_id.clone());
                self.events.push_back(ClientEvent::Ready { server_id: hello.server_id });
            }
            (State::AwaitingHello, ServerMessage::HelloError(rejection)) => {
                self.close_with(CloseReason::Rejected(rejection.error));
            }
            (State::AwaitingHello, _) => self.close_with(CloseReason::Violation(Violation::ExpectedHello)),
            (State::Ready(_), ServerMessage::Hello(_)) => {
                self.close_with(CloseReason::Violation(Violation::UnexpectedHello))
            }
            (State::Ready(_), ServerMessage::HelloError(ending)) => {
                self.close_with(CloseReason::HelloError(ending.error))
            }
            (State::Ready(_), ServerMessage::Response(response)) => {
                let (id, result) = match response {
                    Response::Success(success) => (success.id, Ok(success.result)),
                    Response::Failure(failure) => (failure.id, Err(failure.error)),
                    // A response shape the schema gains later: this connection cannot tell which
                    // request it settles, so the application gets it as decoded and the
                    // request stays pending.
                    #[allow(unreachable_patterns)]
                    other => {
                        self.events.push_back(ClientEvent::Other(ServerMessage::Response(other)));
                        return;
                    }
                };
                if self.pending.remove(&id).is_some() {
                    self.events.push_back(ClientEvent::Response { id, result });
                } else {
                    self.close_with(CloseReason::Violation(Violation::UnknownResponse(id)));
                }
            }
            (State::Ready(_), ServerMessage::ServiceUpdate(update)) => {
                self.events
                    .push_back(ClientEvent::Update { subscription_id: update.subscription_id, update: update.update });
            }
            (State::Ready(server_id), ServerMessage::Attachment(attachment)) => {
                if let Some(route) = &attachment.attachment {
                    if route.server_id != *server_id {
                        self.close_with(CloseReason::Violation(Violation::ForeignAttachment(route.server_id.clone())));
                        return;
                    }
                }
                self.route = attachment.attachment.clone();
                self.events.push_back(ClientEvent::Attachment { route: attachment.attachment });
            }
            // A message type added to the schema after these rules were written: it decoded, so
            // it is valid protocol, but the connection knows no rule for it. It goes to the
            // application untouched rather than closing the connection on a valid frame.
            #[allow(unreachable_patterns)]
            (State::Ready(_), other) => self.events.push_back(ClientEvent::Other(other)),
            (State::Closed, _) => {}
        }
    }

    /// Sends `call` to `target` under a fresh request id, and returns the id.
    ///
    /// [`CallTarget::Server`] addresses `{ serverId }` with the handshake's `serverId`;
    /// [`CallTarget::Session`] addresses the current route, as last published by the server's
    /// `attachment` message. The id is the prefix of [`ClientOptions::request_id_prefix`]
    /// followed by a counter, never reused on this connection.
    ///
    /// # Errors
    /// [`ConnectionError::NotReady`] before the server's `hello`, [`ConnectionError::Closed`]
    /// after close, [`ConnectionError::NoRoute`] for a session call with no current route,
    /// [`ConnectionError::Encode`] when the frame breaks the codec limits. Nothing is queued
    /// and no id is used up on error. A frame that would take the transmit queue past
    /// [`ClientOptions::max_pending_transmit`] closes the connection
    /// ([`CloseReason::TransmitQueueFull`]) and returns [`ConnectionError::Closed`].
    pub fn request(&mut self, target: CallTarget, call: Payload) -> Result<RequestId, ConnectionError> {
        let server_id = match &self.state {
            State::AwaitingHello => return Err(ConnectionError::NotReady),
            State::Closed => return Err(ConnectionError::Closed),
            State::Ready(server_id) => server_id,
        };
        let target = match target {
            CallTarget::Server => RpcTarget::from(ServerTarget::new(server_id.clone())),
            CallTarget::Session => RpcTarget::from(self.route.clone().ok_or(ConnectionError::NoRoute)?),
        };
        let sequence = self.next_id;
        let id = RequestId::new(format!("{}{sequence}", self.options.request_id_prefix))
            .expect("a prefix followed by digits is never empty");
        let message = ClientMessage::from(Request::new(id.clone(), target.clone(), call));
        match self.queue(&message) {
            Ok(()) => {}
            Err(QueueError::Encode(error)) => return Err(ConnectionError::Encode(error)),
            Err(full @ QueueError::Full { .. }) => {
                self.close_with(full.into_close_reason());
                return Err(ConnectionError::Closed);
            }
        }
        self.next_id += 1;
        self.pending.insert(id.clone(), Pending { sequence, target, cancel_sent: false });
        Ok(id)
    }

    /// Asks the server to stop the pending request `id`, with the same target the request was
    /// sent to (even if the route changed since).
    ///
    /// Returns whether a `cancel` was queued: cancelling an unknown or settled request, or one
    /// already cancelled, does nothing. The request stays pending until its response arrives.
    /// A `cancel` that would take the transmit queue past
    /// [`ClientOptions::max_pending_transmit`] closes the connection
    /// ([`CloseReason::TransmitQueueFull`]) and returns `false`.
    pub fn cancel(&mut self, id: &RequestId) -> bool {
        if self.state == State::Closed {
            return false;
        }
        let Some(pending) = self.pending.get(id) else { return false };
        if pending.cancel_sent {
            return false;
        }
        let message = ClientMessage::from(Cancel::new(id.clone(), pending.target.clone()));
        // The request frame with this id and target was encodable, so its cancel (smaller) is.
        match self.queue(&message) {
            Ok(()) => {
                if let Some(pending) = self.pending.get_mut(id) {
                    pending.cancel_sent = true;
                }
                true
            }
            Err(full @ QueueError::Full { .. }) => {
                self.close_with(full.into_close_reason());
                false
            }
            Err(QueueError::Encode(_)) => false,
        }
    }

    /// Closes the connection: call it when the transport ends or the application stops.
    ///
    /// Queues [`ClientEvent::Closed`] with the pending requests and [`CloseReason::Local`] —
    /// or, when the bytes received so far end inside a frame, with
    /// [`CloseReason::Violation`] holding the `Frame`/`TruncatedFrame` error (offset of the cut
    /// frame), since that partial frame is discarded. Later calls do nothing. Bytes already
    /// queued stay available from [`poll_transmit`](Self::poll_transmit).
    pub fn close(&mut self) {
        self.end_stream(CloseReason::Local);
    }

    /// The peer ended the stream (end of file): closes as [`close`](Self::close) does, with
    /// [`CloseReason::PeerClosed`] (or the truncated frame's violation).
    pub fn peer_closed(&mut self) {
        self.end_stream(CloseReason::PeerClosed);
    }

    /// The transport failed with `error`: closes as [`close`](Self::close) does, with
    /// [`CloseReason::Transport`] (or the truncated frame's violation).
    pub fn transport_failed(&mut self, error: &std::io::Error) {
        self.end_stream(CloseReason::Transport(super::TransportError::new(error)));
    }

    fn end_stream(&mut self, clean: CloseReason) {
        if self.state == State::Closed {
            return;
        }
        let reason = super::end_of_stream_reason(self.inbox.end(), clean);
        self.close_with(reason);
    }

    /// The next event, in order, or `None` when there is none yet.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// Every byte queued for the transport and not written yet (whole frames, in order), handed
    /// over in a `Vec`, or `None` when nothing is queued. A driver that writes in place uses
    /// [`pending_transmit`](Self::pending_transmit) instead, which keeps the buffer.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.outgoing.take()
    }

    /// The bytes queued for the transport and not written yet, borrowed: write them in place,
    /// then call [`advance_transmit`](Self::advance_transmit) with what the transport accepted
    /// (see [`ServerConnection::pending_transmit`](super::ServerConnection::pending_transmit)).
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

    /// How many bytes are queued for the transport; a driver can stop reading while this is large.
    pub fn pending_transmit_len(&self) -> usize {
        self.outgoing.len()
    }

    /// The logical server named by the handshake, once it completed (and until close).
    pub fn server_id(&self) -> Option<&ServerId> {
        match &self.state {
            State::Ready(server_id) => Some(server_id),
            _ => None,
        }
    }

    /// The current Session route: the last `attachment` the server published.
    pub fn route(&self) -> Option<&SessionTarget> {
        self.route.as_ref()
    }

    /// Whether the handshake completed and the connection is open.
    pub fn is_ready(&self) -> bool {
        matches!(self.state, State::Ready(_))
    }

    /// Whether the connection is closed.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Whether `id` was sent and has not settled yet.
    pub fn is_pending(&self, id: &RequestId) -> bool {
        self.pending.contains_key(id)
    }

    /// How many requests are pending.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    fn queue(&mut self, message: &ClientMessage) -> Result<(), QueueError> {
        self.outgoing.queue(message, &self.options.codec)
    }

    fn close_with(&mut self, reason: CloseReason) {
        if self.state == State::Closed {
            return;
        }
        self.state = State::Closed;
        let mut unsettled: Vec<(u64, RequestId)> =
            self.pending.drain().map(|(id, pending)| (pending.sequence, id)).collect();
        unsettled.sort_unstable_by_key(|(sequence, _)| *sequence);
        let unsettled = unsettled.into_iter().map(|(_, id)| id).collect();
        self.events.push_back(ClientEvent::Closed { reason, unsettled });
    }
}

impl Receiver for ClientConnection {
    type Message = ServerMessage;

    fn inbox(&mut self) -> &mut Inbox {
        &mut self.inbox
    }

    fn reading(&self) -> bool {
        self.state != State::Closed
    }

    fn receive_message(&mut self, message: Result<ServerMessage, ProtocolError>) {
        match message {
            Ok(message) => self.handle(message),
            Err(error) => self.close_with(CloseReason::Violation(Violation::Decode(error))),
        }
    }
}
