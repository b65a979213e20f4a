//! Sans-IO connection state machines: the protocol rules every Pi client and server applies on
//! top of the codec, as plain values you drive with bytes.
//!
//! A [`ClientConnection`] and a [`ServerConnection`] own no socket, no clock and no task. The
//! transport hands them the bytes it read ([`ClientConnection::receive`],
//! [`ServerConnection::receive`]), the application calls methods for what it wants to do
//! (send a request, respond, publish a route), and both sides poll what came out:
//! `poll_event` for what the application must see, `poll_transmit` for the bytes to write.
//! Every call is deterministic, so tests drive the machines directly, byte by byte if they like.
//!
//! The rules they implement (docs/PROTOCOL.md section 8), on top of the envelopes of section 4:
//!
//! - **Handshake.** The client's first frame is `hello` with its version, and it sends nothing
//!   else until the server's `hello` names the logical `serverId` (the one it expects, when
//!   [`ClientOptions::expected_server_id`] is set). The server answers a
//!   supported version with `hello`, any other with `hello_error`, and closes on any other
//!   first frame. The server waits for the `hello` at most
//!   [`ServerOptions::handshake_timeout`] (the machine keeps no clock:
//!   [`ServerConnection::poll_timeout`], [`ServerConnection::handle_timeout`]), reads a first
//!   frame of at most [`ServerOptions::max_hello_frame_length`], and answers every violation
//!   with `hello_error` before closing, as the reference server does.
//! - **Correlation.** Request ids are assigned by the client connection and never reused; each
//!   `response` settles exactly one pending request; a response for an unknown or settled id is
//!   a protocol violation.
//! - **Cancellation.** A `cancel` carries the target of the request it cancels; cancelling a
//!   settled or unknown request does nothing. The server surfaces a cancel to the application,
//!   which still responds.
//! - **Routes.** Session calls go through the route the server last published with an
//!   `attachment` message; server calls carry the handshake's `serverId`.
//! - **Fencing.** The server answers a request reusing an id still in flight, whose call is not
//!   a service call `{serviceId, member, args, instance?}`, for another server, or for a route
//!   that is not the current attachment with an error response of its own, before the
//!   application sees it ([`ServerOptions`] holds the codes, the reference server's by default).
//! - **Release.** A server connection reports the route to release only once every admitted
//!   call has settled ([`ServerEvent::Closed`]).
//! - **Message types added later.** After the handshake, a message of a type the schema gained
//!   after these rules were written (every type of version 8 has a rule) is valid protocol
//!   without a rule here: it is passed to the application as [`ClientEvent::Other`] or
//!   [`ServerEvent::Other`], and the connection stays open. Before the handshake it is a
//!   violation, like any frame that does not answer or start the handshake.
//! - **What closing leaves behind.** Closing while a frame is only partly received reports
//!   that frame as truncated ([`Violation::Decode`]), not as a clean [`CloseReason::Local`].
//!   The bytes queued for the transport are capped (`max_pending_transmit` of
//!   [`ClientOptions`] and [`ServerOptions`], 64 MiB by default): a peer that stops reading
//!   makes the connection close with [`CloseReason::TransmitQueueFull`] instead of buffering
//!   without bound.
//!
//! The third role, the coordinator that routes many clients to many server processes, is the
//! [`Router`], with rules of its own: see the [`router`] module.
//!
//! # Example: a client and a server talking through memory
//!
//! ```
//! use pi_protocol::connection::{
//!     CallTarget, ClientConnection, ClientEvent, ClientOptions, ServerConnection, ServerEvent, ServerOptions,
//! };
//! use pi_protocol::{Payload, ServerId};
//! use serde_json::json;
//!
//! let server_id = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?;
//! let mut client = ClientConnection::new(ClientOptions::default());
//! let mut server = ServerConnection::new(server_id.clone(), ServerOptions::default());
//!
//! // Handshake: the client's hello goes out, the server's hello comes back.
//! server.receive(&client.poll_transmit().unwrap());
//! assert_eq!(server.poll_event(), Some(ServerEvent::Ready));
//! client.receive(&server.poll_transmit().unwrap());
//! assert_eq!(client.poll_event(), Some(ClientEvent::Ready { server_id: server_id.clone() }));
//!
//! // A server call, answered by the application on the server side.
//! let call = Payload::from_value(&json!({"serviceId": "$chord.service", "member": "catalogue", "args": []}))?;
//! let id = client.request(CallTarget::Server, call)?;
//! server.receive(&client.poll_transmit().unwrap());
//! let Some(ServerEvent::Request(request)) = server.poll_event() else { panic!("expected a request") };
//! assert_eq!(request.id, id);
//! server.respond(&request.id, Ok(Some(Payload::from_value(&json!([]))?)))?;
//! client.receive(&server.poll_transmit().unwrap());
//! assert_eq!(client.poll_event(), Some(ClientEvent::Response { id, result: Ok(Some(Payload::from_value(&json!([]))?)) }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod client;
mod inbox;
pub(crate) mod options;
pub mod router;
mod server;
pub(crate) mod service_call;
pub use service_call::CallLayout;

use std::fmt;

use pi_protocol_runtime::{encode_message_into, CodecOptions, Encode, Validate};

use crate::{ErrorBody, ProtocolError, RequestId, ServerId};

pub use client::{CallTarget, ClientConnection, ClientEvent, ClientOptions, DEFAULT_REQUEST_ID_PREFIX};
pub use router::{
    CallEffect, CallInspector, ClientKey, Refusal, Router, RouterEvent, RouterOptions, Transmit, UpstreamKey,
    DEFAULT_MAX_SUBSCRIPTIONS,
};
pub use server::{
    FenceReason, ServerConnection, ServerEvent, ServerOptions, DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_MAX_HELLO_FRAME_LENGTH, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT_ID_BYTES,
};

/// The default of [`ClientOptions::max_pending_transmit`] and
/// [`ServerOptions::max_pending_transmit`]: 64 MiB, four frames of the default frame limit.
pub const DEFAULT_MAX_PENDING_TRANSMIT: usize = 64 * 1024 * 1024;

/// Why a connection stopped, carried by [`ClientEvent::Closed`] and [`ServerEvent::Closing`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The application closed it ([`ClientConnection::close`], [`ServerConnection::disconnect`])
    /// between two frames. Closing while a frame is only partly received is a
    /// [`Violation::Decode`] with the `Frame`/`TruncatedFrame` error instead.
    Local,
    /// The peer ended the stream between two frames (end of file on the socket):
    /// [`ClientConnection::peer_closed`], [`ServerConnection::peer_closed`]. A stream that ends
    /// inside a frame is a [`Violation::Decode`] instead.
    PeerClosed,
    /// The transport failed (a read, write, flush or shutdown error):
    /// [`ClientConnection::transport_failed`], [`ServerConnection::transport_failed`].
    Transport(TransportError),
    /// Client side: the server answered `hello` with `hello_error` carrying this error.
    Rejected(ErrorBody),
    /// Client side: the server's `hello` named another logical server than
    /// [`ClientOptions::expected_server_id`] (the one that was dialled, as a Unix socket's name
    /// announces it). Nothing was sent after `hello`.
    ServerIdMismatch {
        /// The `serverId` the client expected.
        expected: ServerId,
        /// The `serverId` the server's `hello` named.
        actual: ServerId,
    },
    /// Client side: after the handshake the server sent `hello_error` with this error, its
    /// word that it is ending the connection (the real pi-server does so when it sees a second
    /// `hello` or a malformed frame: docs/PROTOCOL.md section 8). The code and message are the
    /// server's.
    HelloError(ErrorBody),
    /// Server side: the client offered this protocol version, which the server does not speak;
    /// a `hello_error` with [`ServerOptions::unsupported_version`] was queued.
    UnsupportedVersion(i64),
    /// The peer broke a protocol rule.
    Violation(Violation),
    /// A frame the connection itself had to send (a `hello`, a fencing error) could not be
    /// encoded under the configured codec limits.
    Encode(ProtocolError),
    /// Queuing a frame would have taken the bytes waiting for the transport past `limit`
    /// ([`ClientOptions::max_pending_transmit`], [`ServerOptions::max_pending_transmit`]): the
    /// peer stopped reading, or the driver stopped writing. The frame was not queued.
    TransmitQueueFull {
        /// The configured limit, in bytes.
        limit: usize,
    },
    /// A deadline passed (the handshake did not complete in time, a peer stopped reading, ...):
    /// see [`Deadline`].
    Timeout(Deadline),
    /// The connection held more bytes than its byte budget allows (`limit`, in bytes: a
    /// per-connection or process-wide budget a driver enforces,
    /// [`ServerConnection::exceeded_budget`], [`Router::client_budget_exceeded`],
    /// [`Router::upstream_budget_exceeded`]); what was queued for it was dropped.
    BudgetExceeded {
        /// The budget, in bytes.
        limit: usize,
    },
}

impl CloseReason {
    /// Whether the peer stopped reading: the bytes queued for it may be dropped at once instead
    /// of written ([`CloseReason::TransmitQueueFull`], [`Deadline::Write`]). A driver closes such
    /// a transport without flushing; after any other reason it writes what is queued first.
    #[must_use]
    pub fn peer_not_reading(&self) -> bool {
        matches!(self, CloseReason::TransmitQueueFull { .. } | CloseReason::Timeout(Deadline::Write))
    }

    /// Whether what is queued for the peer is dropped and its transport closed without
    /// flushing: the peer stopped reading ([`peer_not_reading`](Self::peer_not_reading)), or
    /// held more than its byte budget ([`CloseReason::BudgetExceeded`]).
    #[must_use]
    pub fn drops_queue(&self) -> bool {
        self.peer_not_reading() || matches!(self, CloseReason::BudgetExceeded { .. })
    }
}

/// Which deadline closed a connection ([`CloseReason::Timeout`]). Each is a named option of
/// the machine that enforces it (for the coordinator, [`RouterOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Deadline {
    /// The handshake did not complete in time (on a client connection of a server or router,
    /// no `hello`; on an upstream, no answer to the router's `hello`).
    Handshake,
    /// A frame whose header arrived was not completed in time.
    Frame,
    /// Nothing was sent or received, and nothing was pending, for the idle timeout.
    Idle,
    /// Bytes waited for the transport and none of them was written for the write timeout: the
    /// peer does not read.
    Write,
}

impl fmt::Display for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Deadline::Handshake => "the handshake did not complete in time",
            Deadline::Frame => "a frame was not completed in time",
            Deadline::Idle => "the connection was idle too long",
            Deadline::Write => "the peer read nothing for the write timeout",
        })
    }
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::Local => f.write_str("closed by the application"),
            CloseReason::PeerClosed => f.write_str("the peer closed the connection"),
            CloseReason::Transport(error) => write!(f, "the transport failed: {error}"),
            CloseReason::Rejected(error) => write!(f, "handshake rejected by the server ({})", error.code.as_str()),
            CloseReason::ServerIdMismatch { expected, actual } => {
                write!(f, "the server is {}, not the expected {}", actual.as_str(), expected.as_str())
            }
            CloseReason::HelloError(error) => {
                write!(f, "the server ended the connection with hello_error {}: {}", error.code.as_str(), error.message)
            }
            CloseReason::UnsupportedVersion(version) => write!(f, "client offered unsupported version {version}"),
            CloseReason::Violation(violation) => write!(f, "protocol violation: {violation}"),
            CloseReason::Encode(error) => write!(f, "cannot encode a connection frame: {error}"),
            CloseReason::TransmitQueueFull { limit } => {
                write!(f, "more than {limit} bytes would be waiting for the transport")
            }
            CloseReason::Timeout(deadline) => write!(f, "timeout: {deadline}"),
            CloseReason::BudgetExceeded { limit } => write!(f, "held more than its byte budget of {limit} bytes"),
        }
    }
}

impl std::error::Error for CloseReason {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CloseReason::Violation(violation) => Some(violation),
            CloseReason::Encode(error) => Some(error),
            CloseReason::Transport(error) => Some(error),
            _ => None,
        }
    }
}

/// How the transport under a connection failed, as [`CloseReason::Transport`] carries it: the
/// I/O error's kind and text (a sans-IO connection keeps no `std::io::Error`, which is neither
/// `Clone` nor `Eq`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportError {
    kind: std::io::ErrorKind,
    message: String,
}

impl TransportError {
    /// The kind and text of `error`.
    pub fn new(error: &std::io::Error) -> Self {
        TransportError { kind: error.kind(), message: error.to_string() }
    }

    /// The I/O error's kind.
    pub fn kind(&self) -> std::io::ErrorKind {
        self.kind
    }

    /// The I/O error's text.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TransportError {}

/// Why a connection whose stream ends stops: `clean` (the application's close, the peer's
/// hang-up, a transport failure), unless `end` (the decoder's verdict on the stream received so
/// far) says the stream stopped inside a frame.
fn end_of_stream_reason(end: Result<(), ProtocolError>, clean: CloseReason) -> CloseReason {
    match end {
        Ok(()) => clean,
        Err(error) => CloseReason::Violation(Violation::Decode(error)),
    }
}

/// A protocol rule the peer broke. The connection closes when it sees one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// A frame failed to decode (framing, CBOR subset, envelope schema: docs/PROTOCOL.md sections 1-4),
    /// or the connection was closed with a frame only partly received (`Frame`/`TruncatedFrame`,
    /// as a decoder reports at the end of the stream).
    Decode(ProtocolError),
    /// The first frame was not `hello` (client side: anything before the server's `hello` or
    /// `hello_error`; server side: anything before the client's `hello`).
    ExpectedHello,
    /// A second `hello` after the handshake completed.
    UnexpectedHello,
    /// A `hello_error` after the handshake completed, where it is not expected: the router's
    /// upstreams. (A [`ClientConnection`] closes with [`CloseReason::HelloError`] instead,
    /// keeping the server's code and message.)
    UnexpectedHelloError,
    /// Client side: a `response` whose id is not a pending request (never sent, or already
    /// settled).
    UnknownResponse(RequestId),
    /// Client side: an `attachment` whose route names another logical server (this one) than
    /// the handshake's; the route is not taken (the real pi-client refuses it alike).
    ForeignAttachment(ServerId),
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Decode(error) => write!(f, "{error}"),
            Violation::ExpectedHello => f.write_str("the first frame must be hello"),
            Violation::UnexpectedHello => f.write_str("hello after the handshake"),
            Violation::UnexpectedHelloError => f.write_str("hello_error after the handshake"),
            Violation::UnknownResponse(_) => f.write_str("response for an unknown or settled request id"),
            Violation::ForeignAttachment(server_id) => {
                write!(f, "an attachment names another server ({})", server_id.as_str())
            }
        }
    }
}

impl std::error::Error for Violation {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Violation::Decode(error) => Some(error),
            _ => None,
        }
    }
}

/// An application call the connection refused. The connection's state is unchanged by it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionError {
    /// The handshake has not completed yet: nothing but `hello` may be sent before it.
    NotReady,
    /// The connection is closed (or, server side, closing).
    Closed,
    /// Client side: a session call was asked for while the server has published no route
    /// (no `attachment` yet, or the last one was `null`).
    NoRoute,
    /// Server side: `respond` for an id that is not in flight (never admitted, fenced, or
    /// already answered).
    NotInFlight(RequestId),
    /// Server side: `set_attachment` with a route naming another server.
    ForeignRoute(ServerId),
    /// The frame could not be encoded (for example a payload beyond the frame limit); nothing
    /// was queued.
    Encode(ProtocolError),
}

impl fmt::Display for ConnectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectionError::NotReady => f.write_str("the handshake has not completed"),
            ConnectionError::Closed => f.write_str("the connection is closed"),
            ConnectionError::NoRoute => f.write_str("no session route is published"),
            ConnectionError::NotInFlight(_) => f.write_str("no admitted request in flight has this id"),
            ConnectionError::ForeignRoute(_) => f.write_str("the route names another server"),
            ConnectionError::Encode(error) => write!(f, "cannot encode: {error}"),
        }
    }
}

impl std::error::Error for ConnectionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectionError::Encode(error) => Some(error),
            _ => None,
        }
    }
}

/// The bytes a connection has queued for its transport: whole frames, in order, encoded straight
/// into one buffer that never holds more than `limit` bytes waiting to be written.
///
/// A driver either takes every queued byte at once ([`take`](Self::take)) or writes them in
/// place ([`pending`](Self::pending), then [`advance`](Self::advance) past what the transport
/// accepted), which reuses the buffer from write to write.
#[derive(Debug)]
pub(crate) struct Outbox {
    bytes: Vec<u8>,
    /// How many bytes at the front of `bytes` were written already.
    written: usize,
    limit: usize,
}

/// Largest buffer an [`Outbox`] keeps for the next frames once everything queued was written:
/// enough for the answers to a few dozen small requests, little for a connection that idles.
const KEPT_OUTBOX_CAPACITY: usize = 4 * 1024;

/// Why [`Outbox::queue`] queued nothing.
#[derive(Debug)]
pub(crate) enum QueueError {
    /// The message could not be encoded under the codec options.
    Encode(ProtocolError),
    /// The frame would have taken the queue past its limit.
    Full {
        /// The limit, in bytes.
        limit: usize,
    },
}

impl QueueError {
    /// The reason a connection closes with when a frame of its own cannot be queued.
    pub(crate) fn into_close_reason(self) -> CloseReason {
        match self {
            QueueError::Encode(error) => CloseReason::Encode(error),
            QueueError::Full { limit } => CloseReason::TransmitQueueFull { limit },
        }
    }
}

impl Outbox {
    /// An empty queue holding at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Outbox { bytes: Vec::new(), written: 0, limit }
    }

    /// Validates and encodes `message`, appending its frame; nothing is queued when it is refused
    /// or when the frame would take the queue past its limit.
    pub(crate) fn queue<M: Encode + Validate>(
        &mut self,
        message: &M,
        options: &CodecOptions,
    ) -> Result<(), QueueError> {
        // Bytes written from the front are dropped once they are at least half the buffer, so a
        // queue that is never quite empty (a slow reader) does not grow for them.
        if self.written > 0 && self.written * 2 >= self.bytes.len() {
            self.bytes.drain(..self.written);
            self.written = 0;
        }
        let start = self.bytes.len();
        encode_message_into(message, options, &mut self.bytes).map_err(QueueError::Encode)?;
        // The frame is checked once encoded: it is at most the frame limit, so the buffer never
        // exceeds the queue limit by more than one frame, and only until this truncation.
        if self.len() > self.limit {
            self.bytes.truncate(start);
            return Err(QueueError::Full { limit: self.limit });
        }
        Ok(())
    }

    /// Every queued byte, or `None` when nothing is queued.
    pub(crate) fn take(&mut self) -> Option<Vec<u8>> {
        if self.len() == 0 {
            return None;
        }
        let mut bytes = std::mem::take(&mut self.bytes);
        bytes.drain(..std::mem::take(&mut self.written));
        Some(bytes)
    }

    /// The queued bytes not written yet (whole frames, except that the first may have been
    /// written in part).
    pub(crate) fn pending(&self) -> &[u8] {
        &self.bytes[self.written..]
    }

    /// Marks the first `written` bytes of [`pending`](Self::pending) as written.
    ///
    /// # Panics
    /// When `written` is more than the pending bytes.
    pub(crate) fn advance(&mut self, written: usize) {
        assert!(written <= self.len(), "advanced past the queued bytes ({written} > {})", self.len());
        self.written += written;
        if self.written == self.bytes.len() {
            self.written = 0;
            if self.bytes.capacity() > KEPT_OUTBOX_CAPACITY {
                self.bytes = Vec::new();
            } else {
                self.bytes.clear();
            }
        }
    }

    /// How many bytes are queued and not written yet.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len() - self.written
    }

    /// The bytes of memory the queue holds (its buffer's capacity).
    pub(crate) fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// Drops every queued byte and the buffer.
    pub(crate) fn clear(&mut self) {
        self.bytes = Vec::new();
        self.written = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use pi_protocol_runtime::{ErrorKind, Rule};

    use super::*;

    fn encode_error() -> ProtocolError {
        ProtocolError::new(ErrorKind::Encode, Rule::Pattern)
    }

    #[test]
    fn close_reasons_violations_and_connection_errors_say_what_happened() {
        let error = encode_error();
        assert_eq!(CloseReason::Local.to_string(), "closed by the application");
        assert_eq!(CloseReason::UnsupportedVersion(7).to_string(), "client offered unsupported version 7");
        assert_eq!(
            CloseReason::TransmitQueueFull { limit: 64 }.to_string(),
            "more than 64 bytes would be waiting for the transport"
        );
        assert_eq!(
            CloseReason::Violation(Violation::ExpectedHello).to_string(),
            "protocol violation: the first frame must be hello"
        );
        assert_eq!(Violation::Decode(error.clone()).to_string(), error.to_string());
        assert_eq!(Violation::UnexpectedHello.to_string(), "hello after the handshake");
        assert_eq!(ConnectionError::NotReady.to_string(), "the handshake has not completed");
        assert_eq!(ConnectionError::Encode(error.clone()).to_string(), format!("cannot encode: {error}"));
    }

    #[test]
    fn the_sources_lead_to_the_codec_error() {
        let error = encode_error();
        let decode = Violation::Decode(error.clone());
        let reason = CloseReason::Violation(decode.clone());
        let violation = reason.source().and_then(|s| s.downcast_ref::<Violation>());
        assert_eq!(violation, Some(&decode));
        let codec = violation.and_then(|v| v.source()).and_then(|s| s.downcast_ref::<ProtocolError>());
        assert_eq!(codec, Some(&error));
        let encode = CloseReason::Encode(error.clone());
        assert_eq!(encode.source().and_then(|s| s.downcast_ref::<ProtocolError>()), Some(&error));
        let refused = ConnectionError::Encode(error.clone());
        assert_eq!(refused.source().and_then(|s| s.downcast_ref::<ProtocolError>()), Some(&error));
        assert!(CloseReason::Local.source().is_none());
        assert!(Violation::ExpectedHello.source().is_none());
        assert!(ConnectionError::Closed.source().is_none());
    }

    /// A response frame carrying a text result of `len` bytes.
    fn response(len: usize) -> crate::ServerMessage {
        let result = crate::Payload::from_value(&serde_json::Value::String("r".repeat(len))).expect("a payload");
        crate::Response::success(RequestId::new("a").expect("an id"), Some(result)).into()
    }

    fn frame(len: usize) -> Vec<u8> {
        pi_protocol_runtime::encode_message(&response(len), &CodecOptions::default()).expect("encodes")
    }

    #[test]
    fn the_default_transmit_cap_is_four_frames_of_the_default_frame_limit() {
        assert_eq!(DEFAULT_MAX_PENDING_TRANSMIT, 64 << 20);
        assert_eq!(DEFAULT_MAX_PENDING_TRANSMIT, 4 * pi_protocol_runtime::DEFAULT_MAX_FRAME_LENGTH as usize);
    }

    #[test]
    fn an_outbox_holds_its_frames_in_order_until_written() {
        let options = CodecOptions::default();
        let mut outbox = Outbox::new(1 << 20);
        assert_eq!(outbox.pending(), b"");
        outbox.queue(&response(10), &options).expect("queued");
        outbox.queue(&response(20), &options).expect("queued");
        let both = [frame(10), frame(20)].concat();
        assert_eq!(outbox.pending(), &both[..]);
        outbox.advance(3);
        assert_eq!(outbox.pending(), &both[3..]);
        assert_eq!(outbox.len(), both.len() - 3);
        assert_eq!(outbox.take().as_deref(), Some(&both[3..]));
        assert_eq!(outbox.take(), None);
    }

    #[test]
    fn written_bytes_are_dropped_once_they_are_half_the_buffer() {
        let options = CodecOptions::default();
        let (first, second) = (frame(100), frame(30));
        // Less than half written: queuing keeps the buffer as it is.
        let mut outbox = Outbox::new(1 << 20);
        outbox.queue(&response(100), &options).expect("queued");
        outbox.advance(first.len() / 2 - 1);
        outbox.queue(&response(30), &options).expect("queued");
        assert_eq!((outbox.written, outbox.bytes.len()), (first.len() / 2 - 1, first.len() + second.len()));
        // Half written: the written bytes go before the next frame is appended.
        let mut outbox = Outbox::new(1 << 20);
        outbox.queue(&response(100), &options).expect("queued");
        let half = first.len().div_ceil(2);
        outbox.advance(half);
        outbox.queue(&response(30), &options).expect("queued");
        assert_eq!(outbox.written, 0);
        assert_eq!(outbox.bytes, [&first[half..], &second[..]].concat());
    }

    #[test]
    fn a_written_outbox_keeps_a_small_buffer_and_frees_a_large_one() {
        let options = CodecOptions::default();
        let mut outbox = Outbox::new(1 << 20);
        outbox.queue(&response(2_000), &options).expect("queued");
        let capacity = outbox.bytes.capacity();
        assert!((2_000..=KEPT_OUTBOX_CAPACITY).contains(&capacity), "{capacity}");
        outbox.advance(outbox.len());
        assert_eq!(outbox.bytes.capacity(), capacity, "kept for the next frames");
        outbox.queue(&response(KEPT_OUTBOX_CAPACITY), &options).expect("queued");
        outbox.advance(outbox.len());
        assert_eq!(outbox.bytes.capacity(), 0, "freed");
        assert_eq!(KEPT_OUTBOX_CAPACITY, 4_096);
        // A buffer of exactly the kept capacity is kept.
        outbox.bytes = Vec::with_capacity(KEPT_OUTBOX_CAPACITY);
        outbox.queue(&response(10), &options).expect("queued");
        outbox.advance(outbox.len());
        assert_eq!(outbox.bytes.capacity(), KEPT_OUTBOX_CAPACITY, "kept at the bound");
    }

    #[test]
    fn a_frame_past_the_cap_is_not_queued() {
        let options = CodecOptions::default();
        let mut outbox = Outbox::new(frame(10).len() * 2);
        outbox.queue(&response(10), &options).expect("queued");
        outbox.queue(&response(10), &options).expect("queued: exactly at the cap");
        match outbox.queue(&response(10), &options) {
            Err(QueueError::Full { limit }) => assert_eq!(limit, frame(10).len() * 2),
            other => panic!("expected Full, got {other:?}"),
        }
        assert_eq!(outbox.pending(), &[frame(10), frame(10)].concat()[..]);
    }
}
