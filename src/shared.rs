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
//! decoder and copied once into its own buffer, which its payloads then share.

use std::marker::PhantomData;

use bytes::Bytes;
use pi_protocol_runtime::{
    decode_message_shared, CborLimits, CodecOptions, Decode, FrameDecoder, Frames, ProtocolError,
};

use crate::{ClientMessage, ServerMessage};

/// [`MessageDecoder`](crate::MessageDecoder) over shared chunks, for any message type (the
/// built-in envelopes through [`SharedClientMessageDecoder`] and [`SharedServerMessageDecoder`],
/// or the types a crate generates from its own schema): the opaque payloads of decoded messages
/// (beyond 46 bytes) are slices of the pushed [`Bytes`], not copies (docs/PROTOCOL.md sections
/// 1, 5 and 7).
///
/// Chunks go in with [`push`](Self::push) (a `Vec` of results per chunk),
/// [`push_each`](Self::push_each) (a closure) or [`messages`](Self::messages) (pull style,
/// allocating nothing of its own per chunk); they may be mixed.
pub struct SharedMessageDecoder<T> {
    frames: FrameDecoder,
    limits: CborLimits,
    _message: PhantomData<fn() -> T>,
}

/// [`ClientMessageDecoder`](crate::ClientMessageDecoder) over shared chunks: the `call`
/// payloads of decoded requests (beyond 46 bytes) are slices of the pushed [`Bytes`], not copies.
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
/// `update` payloads (beyond 46 bytes) are slices of the pushed [`Bytes`], not copies.
pub type SharedServerMessageDecoder = SharedMessageDecoder<ServerMessage>;

impl<T> std::fmt::Debug for SharedMessageDecoder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMessageDecoder").field("frames", &self.frames).field("limits", &self.limits).finish()
    }
}

/// `frame` as a [`Bytes`]: a slice of `chunk` when it lies inside it, else a copy.
pub(crate) fn share(chunk: &Bytes, frame: &[u8]) -> Bytes {
    let base = chunk.as_ptr() as usize;
    let start = frame.as_ptr() as usize;
    if start >= base && start + frame.len() <= base + chunk.len() {
        chunk.slice_ref(frame)
    } else {
        Bytes::copy_from_slice(frame)
    }
}

impl<T> Default for SharedMessageDecoder<T>
where
    T: for<'de> Decode<'de>,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> SharedMessageDecoder<T>
where
    T: for<'de> Decode<'de>,
{
    /// A decoder with the default limits (16 MiB frames, [`CborLimits::default`]).
    pub fn new() -> Self {
        Self::with_options(&CodecOptions::default())
    }

    /// A decoder with `options`.
    pub fn with_options(options: &CodecOptions) -> Self {
        let frames =
            FrameDecoder::with_max_frame_length(u64::from(options.frame_limit())).expect("checked by CodecOptions");
        SharedMessageDecoder { frames, limits: options.limits(), _message: PhantomData }
    }

    /// Feeds `chunk` (any size, empty included) and returns the messages it completes,
    /// in order; their payloads share `chunk`'s buffer when the frame lies inside it.
    ///
    /// A bad frame yields the messages before it, then its error (with the frame's
    /// stream offset, the field path and the rule); the decoder is then failed and every
    /// later call returns an `ErrorKind::State` error.
    pub fn push(&mut self, chunk: &Bytes) -> Vec<Result<T, ProtocolError>> {
        let mut out = Vec::new();
        self.push_each(chunk, |m| out.push(m));
        out
    }

    /// Like [`push`](Self::push), handing each result to `on_message` instead of
    /// collecting them.
    #[inline]
    pub fn push_each<F: FnMut(Result<T, ProtocolError>)>(&mut self, chunk: &Bytes, mut on_message: F) {
        let limits = self.limits;
        // As in the copying decoder: the decoded result goes to `on_message` as it is.
        let result = self.frames.push_with(chunk, |payload, offset| {
            match decode_message_shared::<T>(&share(chunk, payload), limits) {
                Err(error) => Err(error.with_offset(offset)),
                message => {
                    on_message(message);
                    Ok(())
                }
            }
        });
        if let Err(error) = result {
            on_message(Err(error));
        }
    }

    /// Feeds `chunk`, pull style: the messages it completes, decoded as the iterator is
    /// advanced, with the results of [`push`](Self::push) and the rules of
    /// [`MessageDecoder::messages`](crate::MessageDecoder::messages) (read it to its end; bytes
    /// it leaves unread when dropped early come first from the next call).
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
    pub fn messages<'d, 'c>(&'d mut self, chunk: &'c Bytes) -> SharedMessages<'d, 'c, T> {
        SharedMessages { frames: self.frames.frames(chunk), chunk, limits: self.limits, _message: PhantomData }
    }

    /// Signals the end of the stream.
    ///
    /// # Errors
    /// `Frame`/`TruncatedFrame` when a frame is incomplete; `State`/`UnreadFrames` while a
    /// [`messages`](Self::messages) iterator dropped early left bytes unread; `State` when
    /// already failed or ended.
    pub fn end(&mut self) -> Result<(), ProtocolError> {
        self.frames.end()
    }

    /// Stream offset, in bytes, of the first byte not yet part of a delivered message.
    pub fn offset(&self) -> u64 {
        self.frames.offset()
    }
}

/// The messages of one shared chunk, decoded as the iterator is advanced: see
/// [`SharedMessageDecoder::messages`].
#[must_use = "the messages of the chunk are only decoded as the iterator is advanced"]
pub struct SharedMessages<'d, 'c, T> {
    frames: Frames<'d, 'c>,
    chunk: &'c Bytes,
    limits: CborLimits,
    _message: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for SharedMessages<'_, '_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMessages").field("frames", &self.frames).finish_non_exhaustive()
    }
}

impl<T> Iterator for SharedMessages<'_, '_, T>
where
    T: for<'de> Decode<'de>,
{
    type Item = Result<T, ProtocolError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (chunk, limits) = (self.chunk, self.limits);
        self.frames.next_message(|payload| decode_message_shared::<T>(&share(chunk, payload), limits))
    }
}

impl<T> std::iter::FusedIterator for SharedMessages<'_, '_, T> where T: for<'de> Decode<'de> {}
