//! Zero-copy streaming decoders: chunks arrive as [`bytes::Bytes`], and the opaque payloads of
//! the messages decoded from them ([`Payload`](crate::Payload)) are slices of those chunks
//! instead of copies (docs/PROTOCOL.md sections 1, 5 and 7). Payloads of 46 bytes or less are the
//! exception: every decoder copies those into the `Payload` itself, which costs less than
//! counting a reference to the chunk.
//!
//! They accept and reject exactly what [`ClientMessageDecoder`](crate::ClientMessageDecoder)
//! and [`ServerMessageDecoder`](crate::ServerMessageDecoder) accept and reject, with the same
//! errors and offsets; only where payload bytes live differs. A frame that lies wholly inside a
//! pushed chunk is decoded in place; a frame split across chunks is gathered by the frame
//! decoder, then copied into a buffer of its own, which its payloads share.

use pi_protocol_runtime::message::{Messages, Shared};
use pi_protocol_runtime::MessageDecoder;

use crate::{ClientMessage, ServerMessage};

/// [`MessageDecoder`](crate::MessageDecoder) over shared chunks, for any message type (the
/// built-in envelopes through [`SharedClientMessageDecoder`] and [`SharedServerMessageDecoder`],
/// or the types a crate generates from its own schema): the opaque payloads of decoded messages
/// (beyond 46 bytes) are slices of the pushed [`Bytes`](bytes::Bytes), not copies (docs/PROTOCOL.md sections
/// 1, 5 and 7). It is the one message decoder with the [`Shared`] storage.
///
/// Chunks go in with `push` (a `Vec` of results per chunk), `push_each` (a closure) or
/// `messages` (pull style, allocating nothing of its own per chunk); they may be mixed.
///
/// ```
/// use bytes::Bytes;
/// use pi_protocol::{encode_server_message, Attachment, ServerMessage, SharedServerMessageDecoder};
///
/// let message = ServerMessage::from(Attachment::new(None));
/// let frame = encode_server_message(&message)?;
/// let mut decoder = SharedServerMessageDecoder::new();
/// let mut received = Vec::new();
/// for chunk in frame.chunks(5).map(Bytes::copy_from_slice) {
///     for result in decoder.messages(&chunk) {
///         received.push(result?);
///     }
/// }
/// decoder.end()?;
/// assert_eq!(received, vec![message]);
/// # Ok::<(), pi_protocol::ProtocolError>(())
/// ```
pub type SharedMessageDecoder<T> = MessageDecoder<T, Shared>;

/// The messages of one shared chunk, decoded as the iterator is advanced: see
/// [`MessageDecoder::messages`].
pub type SharedMessages<'d, 'c, T> = Messages<'d, 'c, T, Shared>;

/// [`ClientMessageDecoder`](crate::ClientMessageDecoder) over shared chunks: the `call`
/// payloads of decoded requests (beyond 46 bytes) are slices of the pushed [`Bytes`](bytes::Bytes), not copies.
///
/// ```
/// use bytes::Bytes;
/// use pi_protocol::{encode_client_message, parse_client_message, ClientMessage, SharedClientMessageDecoder};
///
/// let request = parse_client_message(&serde_json::json!({
///     "type": "request", "id": "req-1",
///     "target": {"serverId": "3b241101-e2bb-4255-8caf-4136c566a962"},
///     "call": {"member": "write", "args": ["a text long enough to stay in the frame"]},
/// }))?;
/// let frame = Bytes::from(encode_client_message(&request)?);
///
/// let mut decoder = SharedClientMessageDecoder::new();
/// let messages = decoder.push(&frame);
/// let Ok(ClientMessage::Request(decoded)) = &messages[0] else { panic!("a request") };
/// // The payload points into `frame`.
/// let range = frame.as_ptr() as usize..frame.as_ptr() as usize + frame.len();
/// assert!(range.contains(&(decoded.call.as_cbor().as_ptr() as usize)));
/// assert_eq!(messages[0].as_ref().ok(), Some(&request));
/// decoder.end()?;
/// # Ok::<(), pi_protocol::ProtocolError>(())
/// ```
pub type SharedClientMessageDecoder = SharedMessageDecoder<ClientMessage>;

/// [`ServerMessageDecoder`](crate::ServerMessageDecoder) over shared chunks: `result` and
/// `update` payloads (beyond 46 bytes) are slices of the pushed [`Bytes`](bytes::Bytes), not copies.
pub type SharedServerMessageDecoder = SharedMessageDecoder<ServerMessage>;
