//! What the [`Client`](super::Client)'s calls fail with.

use std::time::Duration;

use crate::connection::CloseReason;
use crate::{ErrorBody, ProtocolError, ServerId};

/// Why a request made through a [`Client`](super::Client) has no result.
///
/// The three ways a connection ends under a pending call stay apart in
/// [`Disconnected`](Self::Disconnected): [`CloseReason::PeerClosed`] (the server hung up),
/// [`CloseReason::Local`] (this application's [`disconnect`](super::Client::disconnect), or
/// every handle dropped), [`CloseReason::Transport`] (an I/O error).
///
/// ```
/// use pi_protocol::client::RequestError;
/// use pi_protocol::{ErrorBody, ErrorCode};
/// let error = RequestError::Server(ErrorBody::new(ErrorCode::new("session_not_found")?, "No such session"));
/// assert_eq!(error.to_string(), "the server answered session_not_found: No such session");
/// assert_eq!(error.server_error().map(|e| e.code.as_str()), Some("session_not_found"));
/// # Ok::<(), pi_protocol::ProtocolError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The server answered the request with `ok: false`: its code and message.
    #[error("the server answered {}: {}", .0.code.as_str(), .0.message)]
    Server(ErrorBody),
    /// The request was cancelled by the application's signal
    /// ([`Client::request_with_cancel`](super::Client::request_with_cancel)); a `cancel` went to
    /// the server, whose late answer is dropped.
    #[error("the request was cancelled")]
    Cancelled,
    /// A Session call while no Session is attached (no `attachment` route published, or the
    /// last one was `null`). Nothing was sent.
    #[error("no Session is attached")]
    NoAttachment,
    /// The client had no open connection when the call was made (after a disconnect, before a
    /// reconnect): nothing was sent. The last connection's end is in
    /// [`Client::state`](super::Client::state).
    #[error("not connected")]
    NotConnected,
    /// The connection ended while the request was pending; its answer will never come, and the
    /// request is not sent again on a new connection.
    #[error("disconnected before the answer: {0}")]
    Disconnected(CloseReason),
    /// The call could not be encoded under the connection's limits (for example a payload
    /// beyond the frame limit). Nothing was sent.
    #[error("cannot encode the request: {0}")]
    Encode(ProtocolError),
    /// The server's answer does not have the shape the call's protocol says (for example a
    /// catalogue or snapshot Chord refuses); the message says what is wrong.
    #[error("invalid answer: {0}")]
    Invalid(String),
}

impl RequestError {
    /// The server's error body, when the server answered `ok: false`.
    pub fn server_error(&self) -> Option<&ErrorBody> {
        match self {
            RequestError::Server(error) => Some(error),
            _ => None,
        }
    }

    /// Why the connection ended under the request, when it did.
    pub fn close_reason(&self) -> Option<&CloseReason> {
        match self {
            RequestError::Disconnected(reason) => Some(reason),
            _ => None,
        }
    }
}

/// Why [`Client::connect_unix`](super::Client::connect_unix) and the other ways of connecting
/// (and [`Client::reconnect`](super::Client::reconnect)) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The transport could not be opened (no such socket, connection refused, ...).
    #[error("cannot open the transport: {0}")]
    Io(#[from] std::io::Error),
    /// The server refused the handshake with `hello_error` (for example `version`).
    #[error("the server refused the handshake: {}: {}", .0.code.as_str(), .0.message)]
    Rejected(ErrorBody),
    /// The server's `hello` named another server than the expected one.
    #[error("the server is {}, not the expected {}", .actual.as_str(), .expected.as_str())]
    ServerIdMismatch {
        /// The `serverId` the client expected.
        expected: ServerId,
        /// The one the server's `hello` named.
        actual: ServerId,
    },
    /// No `hello` came within [`ClientBuilder::handshake_timeout`](super::ClientBuilder::handshake_timeout).
    #[error("no server hello within {0:?}")]
    Timeout(Duration),
    /// The connection ended during the handshake for another reason (the server hung up, a
    /// protocol violation, an I/O error).
    #[error("the connection ended during the handshake: {0}")]
    Closed(CloseReason),
    /// [`Client::reconnect`](super::Client::reconnect) while connected: as pi-client, a
    /// connected client is disconnected first.
    #[error("the client is already connected")]
    AlreadyConnected,
    /// The client was made over one given byte stream
    /// ([`ClientBuilder::connect_stream`](super::ClientBuilder::connect_stream)), which cannot be
    /// opened again.
    #[error("the client was made over a single byte stream, which cannot be opened again")]
    NotReconnectable,
}

impl ConnectError {
    /// The error of a connection that closed during the handshake, by its reason.
    pub(crate) fn from_close(reason: CloseReason) -> ConnectError {
        match reason {
            CloseReason::Rejected(error) => ConnectError::Rejected(error),
            CloseReason::ServerIdMismatch { expected, actual } => ConnectError::ServerIdMismatch { expected, actual },
            other => ConnectError::Closed(other),
        }
    }
}
