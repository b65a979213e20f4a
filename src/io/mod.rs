//! Byte-stream transports for Pi messages: blocking [`std::io`] helpers and, behind the `tokio`
//! feature, [`tokio_util::codec`][codec] framing (docs/PROTOCOL.md sections 1 and 7).
//!
//! [codec]: https://docs.rs/tokio-util/latest/tokio_util/codec/index.html
//!
//! Both apply the same [`CodecOptions`](crate::CodecOptions) as the sans-IO decoders
//! ([`ClientMessageDecoder`](crate::ClientMessageDecoder) and friends): a frame header announcing
//! more than `maxFrameLength` bytes is refused as soon as its 4 bytes have arrived, before any
//! of its payload is buffered, and buffers grow only with bytes that actually arrived. They
//! deliver the same [`ProtocolError`]s (with the failing frame's stream offset), wrapped in
//! [`Error`] next to the transport's own I/O errors.
//!
//! - Blocking: [`ClientMessageReader`] / [`ServerMessageReader`] read from any
//!   [`std::io::Read`]; [`write_client_message`] / [`write_server_message`] write to any
//!   [`std::io::Write`].
//! - Async (feature `tokio`): `ServerCodec` (decodes [`ClientMessage`](crate::ClientMessage)s,
//!   encodes [`ServerMessage`](crate::ServerMessage)s) and its mirror `ClientCodec`, for
//!   `tokio_util::codec::Framed`.
//! - Accepting (feature `tokio`): `Acceptor`, an accept loop for TCP and Unix listeners with a
//!   connection limit and backoff on accept errors such as `EMFILE`.
//!
//! Each is an alias or a thin wrapper of a generic item that serves any message types, such as
//! the ones a crate generates from its own schema with `pi_protocol_gen::Builder`:
//! [`MessageReader<R, M>`](MessageReader), [`write_message`] / [`write_message_with`], and
//! `MessageCodec<In, Out>` (feature `tokio`). `examples/extension` in the repository extends the
//! protocol that way.

#[cfg(feature = "tokio")]
mod accept;
mod blocking;
#[cfg(feature = "tokio")]
mod tokio;
#[cfg(unix)]
pub mod unix;

#[cfg(feature = "tokio")]
pub use self::tokio::{
    ByteBudget, ByteCharge, ClientCodec, ClientDriver, Driver, DriverOptions, Endpoint, MessageCodec, ServerCodec,
    ServerDriver, DEFAULT_FRAME_TIMEOUT, DEFAULT_WRITE_TIMEOUT,
};
#[cfg(feature = "tokio")]
pub use accept::{
    Accept, AcceptErrorClass, AcceptOptions, AcceptReport, Accepted, Acceptor, ConnectionPermit,
    DEFAULT_ACCEPT_BACKOFF_MAX, DEFAULT_ACCEPT_BACKOFF_MIN, DEFAULT_MAX_CONNECTIONS,
};
pub use blocking::{
    write_client_message, write_client_message_with, write_message, write_message_with, write_server_message,
    write_server_message_with, ClientMessageReader, MessageReader, ServerMessageReader,
};

use crate::ProtocolError;

/// Compiles the code of `docs/ASYNC.md` as a doctest.
#[cfg(all(doctest, feature = "tokio"))]
#[doc = include_str!("../../docs/ASYNC.md")]
pub struct AsyncUsageDoc;

/// What reading or writing messages over a transport can fail with: a protocol error (bad
/// framing, bad CBOR, a schema violation, an unencodable message, a decoder used after it failed)
/// or an I/O error of the transport.
///
/// ```
/// use pi_protocol::io::Error;
/// use pi_protocol::{ErrorKind, ProtocolError, Rule};
/// let error: Error = ProtocolError::new(ErrorKind::Frame, Rule::TruncatedFrame).into();
/// assert_eq!(error.protocol().map(|e| e.rule()), Some(Rule::TruncatedFrame));
/// assert_eq!(error.to_string(), "invalid frame: stream ended inside a frame");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes (or the message to send) break the protocol; see [`ProtocolError`].
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The transport failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// The protocol error, when this is one.
    pub fn protocol(&self) -> Option<&ProtocolError> {
        match self {
            Error::Protocol(e) => Some(e),
            Error::Io(_) => None,
        }
    }

    /// The I/O error, when this is one.
    pub fn io(&self) -> Option<&std::io::Error> {
        match self {
            Error::Io(e) => Some(e),
            Error::Protocol(_) => None,
        }
    }
}
