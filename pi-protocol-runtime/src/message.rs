//! Schema-agnostic message codecs: one frame payload to a typed message and back, and the
//! streaming [`MessageDecoder`] that the facade's client and server decoders are made of.

use std::marker::PhantomData;

use bytes::Bytes;

use crate::cbor::value::check_item_length;
use crate::cbor::{Reader, Writer};
use crate::codec::{Decode, Encode, Validate};
use crate::error::{ErrorKind, ProtocolError};
use crate::frame::{check_encoded_length, FrameDecoder, FrameHeader, Frames, FRAME_HEADER_LENGTH};
use crate::limits::{check_length, CborLimits, DEFAULT_MAX_FRAME_LENGTH};
use crate::vectored::EncodedFrame;

/// Options of message encoders and decoders: the frame limit and the CBOR limits.
///
/// ```
/// use pi_protocol_runtime::CodecOptions;
/// let options = CodecOptions::new().max_frame_length(1024 * 1024).unwrap();
/// assert_eq!(options.frame_limit(), 1024 * 1024);
/// assert!(CodecOptions::new().max_frame_length(1 << 32).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CodecOptions {
    max_frame_length: u32,
    limits: CborLimits,
}

impl Default for CodecOptions {
    fn default() -> Self {
        CodecOptions { max_frame_length: DEFAULT_MAX_FRAME_LENGTH, limits: CborLimits::default() }
    }
}

impl CodecOptions {
    /// The defaults: 16 MiB frames, [`CborLimits::default`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `maxFrameLength` in bytes (docs/PROTOCOL.md section 1). Like the reference, this also
    /// becomes the CBOR `maxByteLength` of each payload, so a frame the limit admits is never
    /// refused for its size by the CBOR layer.
    ///
    /// # Errors
    /// `Options` when `bytes` exceeds `u32::MAX`.
    pub fn max_frame_length(mut self, bytes: u64) -> Result<Self, ProtocolError> {
        self.max_frame_length = check_length("maxFrameLength", bytes)?;
        self.limits = self.limits.with_max_byte_length(bytes)?;
        Ok(self)
    }

    /// Sets the CBOR limits applied to each payload.
    pub fn cbor_limits(mut self, limits: CborLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The frame limit in bytes.
    pub fn frame_limit(&self) -> u32 {
        self.max_frame_length
    }

    /// The CBOR limits.
    pub fn limits(&self) -> CborLimits {
        self.limits
    }
}

/// Decodes one frame payload as a `T`.
///
/// When the typed decoder refuses the payload, the payload is scanned as raw CBOR too, and the
/// first CBOR-level error in wire order is reported instead, as the reference does (it decodes
/// the CBOR fully before it looks at the schema).
///
/// # Errors
/// `Cbor` errors, then `Schema` errors.
pub fn decode_message<T>(payload: &[u8], limits: CborLimits) -> Result<T, ProtocolError>
where
    T: for<'de> Decode<'de>,
{
    decode_with(Reader::new(payload, limits), payload, limits, T::decode)
}

/// Like [`decode_message`], with `decode` reading the item instead of a [`Decode`] type: for
/// decoders that are values rather than types (the schema interpreter of `pi-protocol-gen`).
///
/// `decode` reads one item at the reader's position; the payload length check before it, the
/// trailing data check after it and the rescan for the first CBOR-level error when it fails are
/// exactly those of [`decode_message`], so a decoder that reads what a derived type reads
/// reports what the derived type reports.
///
/// ```
/// use pi_protocol_runtime::{decode_message_with, CborLimits, Rule};
/// let text = decode_message_with(&[0x62, b'h', b'i'], CborLimits::default(), |r| r.read_text().map(str::to_owned));
/// assert_eq!(text.unwrap(), "hi");
/// // A wrong type is a schema error, unless the payload also breaks a CBOR rule (here: trailing data).
/// let err = decode_message_with(&[0xf6, 0xf6], CborLimits::default(), |r| r.read_text().map(str::to_owned));
/// assert_eq!(err.unwrap_err().rule(), Rule::TrailingData);
/// ```
///
/// # Errors
/// As [`decode_message`].
pub fn decode_message_with<'de, T, F>(payload: &'de [u8], limits: CborLimits, decode: F) -> Result<T, ProtocolError>
where
    F: FnOnce(&mut Reader<'de>) -> Result<T, ProtocolError>,
{
    decode_with(Reader::new(payload, limits), payload, limits, decode)
}

/// Like [`decode_message`], with opaque payloads as zero-copy slices of `payload`.
///
/// # Errors
/// As [`decode_message`].
pub fn decode_message_shared<T>(payload: &Bytes, limits: CborLimits) -> Result<T, ProtocolError>
where
    T: for<'de> Decode<'de>,
{
    decode_with(Reader::new_shared(payload, limits), payload, limits, T::decode)
}

fn decode_with<'de, T, F>(
    mut reader: Reader<'de>,
    payload: &[u8],
    limits: CborLimits,
    decode: F,
) -> Result<T, ProtocolError>
where
    F: FnOnce(&mut Reader<'de>) -> Result<T, ProtocolError>,
{
    check_item_length(payload.len(), limits, ErrorKind::Cbor)?;
    // The decoded result is returned as it is (never unpacked and wrapped again), so the
    // message is written once, into the caller's slot.
    let result = decode(&mut reader);
    let error = match result {
        Ok(_) => match reader.finish() {
            Ok(()) => return result,
            Err(error) => error,
        },
        Err(error) => error,
    };
    // The typed decoder stops at the first problem on its path, which may lie after a CBOR error
    // it passed over (peeks skip strings by length) or met in another order. The reference reads
    // the whole item as CBOR first, so its first CBOR error in wire order is the one to report.
    // The typed error stands when the scan finds none, or the same rule (the typed error also
    // names the field's path).
    match cbor_error_in(payload, limits) {
        Some(first) if !(error.kind() == ErrorKind::Cbor && error.rule() == first.rule()) => Err(first),
        _ => Err(error),
    }
}

/// The first CBOR-level error of `payload` read as one raw item, if any.
fn cbor_error_in(payload: &[u8], limits: CborLimits) -> Option<ProtocolError> {
    let mut scan = Reader::new(payload, limits).allow_byte_strings(true);
    scan.skip().and_then(|()| scan.finish()).err()
}

/// Validates `message` and encodes it as a complete frame (header and payload).
///
/// # Errors
/// `Schema` errors from validation; `Encode` errors when an opaque payload breaks the CBOR
/// limits in its place; `Frame`/`EncodedFrameTooLong` past `maxFrameLength`.
pub fn encode_message<T>(message: &T, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError>
where
    T: Encode + Validate,
{
    let mut writer = Writer::from_vec(Vec::with_capacity(INITIAL_FRAME_CAPACITY));
    write_frame(message, options, &mut writer, 0)?;
    Ok(writer.into_vec())
}

/// Like [`encode_message`], appending the frame to `out` (a transmit buffer holding earlier
/// frames, say) instead of returning a new buffer. When the message is refused, `out` is left
/// as it was.
///
/// # Errors
/// As [`encode_message`].
pub fn encode_message_into<T>(message: &T, options: &CodecOptions, out: &mut Vec<u8>) -> Result<(), ProtocolError>
where
    T: Encode + Validate,
{
    let start = out.len();
    let mut writer = Writer::from_vec(std::mem::take(out));
    let result = write_frame(message, options, &mut writer, start);
    *out = writer.into_vec();
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Like [`encode_message`], without copying large opaque payloads: the frame comes back as
/// segments (docs/PROTOCOL.md section 1), owned bytes for the header and the envelope, and each
/// payload of at least [`MIN_PAYLOAD_SEGMENT_LENGTH`](crate::MIN_PAYLOAD_SEGMENT_LENGTH) bytes
/// as a shared reference to its own memory. Read in order, the segments are the bytes
/// [`encode_message`] returns; validation, limits and errors are the same.
///
/// Hand the result to [`EncodedFrame::write_to`] (a blocking writer, with `write_vectored`) or
/// to any consumer of a [`bytes::Buf`] (`write_all_buf` of tokio, say).
///
/// ```
/// use pi_protocol_runtime::{encode_message, encode_message_vectored, CodecOptions, Payload};
/// let small = Payload::from_value(&serde_json::json!({"member": "catalogue"}))?;
/// let frame = encode_message_vectored(&small, &CodecOptions::default())?;
/// assert_eq!(frame.segments().count(), 1); // small payloads are copied in
/// assert_eq!(frame.to_vec(), encode_message(&small, &CodecOptions::default())?);
/// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
/// ```
///
/// # Errors
/// As [`encode_message`].
pub fn encode_message_vectored<T>(message: &T, options: &CodecOptions) -> Result<EncodedFrame, ProtocolError>
where
    T: Encode + Validate,
{
    let mut writer = Writer::vectored(Vec::with_capacity(INITIAL_FRAME_CAPACITY));
    write_frame(message, options, &mut writer, 0)?;
    let (inline, payloads) = writer.into_parts();
    Ok(EncodedFrame::from_parts(inline, payloads))
}

/// The encoders' common part: validates `message`, appends a header and the message's CBOR to
/// `writer` (whose bytes before `start` are not part of the frame), checks the limits and fills
/// in the header. On error the writer holds a partial frame, which the caller drops.
#[inline]
fn write_frame<T>(message: &T, options: &CodecOptions, writer: &mut Writer, start: usize) -> Result<(), ProtocolError>
where
    T: Encode + Validate,
{
    message.validate()?;
    writer.raw(&[0; FRAME_HEADER_LENGTH]);
    message.encode(writer);
    finish_frame(writer, start, options)
}

/// Checks the frame written into `writer` from byte `start` on (header placeholder included)
/// against the limits of `options`, then fills in its header.
fn finish_frame(writer: &mut Writer, start: usize, options: &CodecOptions) -> Result<(), ProtocolError> {
    let payload_start = start + FRAME_HEADER_LENGTH;
    check_payload_limits(writer, payload_start, options.limits)?;
    let len = writer.written_len() - payload_start;
    check_encoded_length(len, options.max_frame_length)?;
    writer.as_mut_vec()[start..payload_start].copy_from_slice(&FrameHeader::new(len as u32).to_bytes());
    Ok(())
}

/// Initial capacity of an encoder's buffer, in bytes.
const INITIAL_FRAME_CAPACITY: usize = 512;

/// Levels an envelope may add above its deepest opaque payload before the exact check runs.
const ENVELOPE_DEPTH_MARGIN: u32 = 4;

/// Entries an envelope's own maps may have (a request has 4) before the exact check runs.
const ENVELOPE_WIDTH_MARGIN: u32 = 8;

/// Checks the payload written into `writer` from byte `start` on against the CBOR limits.
/// Envelopes are shallow and small, so only when an opaque payload comes near a limit is the
/// output scanned to decide exactly.
#[inline]
fn check_payload_limits(writer: &Writer, start: usize, limits: CborLimits) -> Result<(), ProtocolError> {
    let len = writer.written_len() - start;
    let near_limit = writer.payload_depth() + ENVELOPE_DEPTH_MARGIN > limits.max_depth()
        || writer.payload_widest().max(ENVELOPE_WIDTH_MARGIN) > limits.max_container_length()
        || len > limits.max_byte_length() as usize;
    if near_limit {
        return scan_payload(writer, start, limits);
    }
    Ok(())
}

/// The exact check of [`check_payload_limits`]: the length, then a scan of the payload. A
/// writer that set payloads aside has them copied back in place for the scan (a rare case,
/// where exactness matters more than the copy).
#[cold]
#[inline(never)]
fn scan_payload(writer: &Writer, start: usize, limits: CborLimits) -> Result<(), ProtocolError> {
    check_item_length(writer.written_len() - start, limits, ErrorKind::Encode)?;
    let payload = writer.contiguous_from(start);
    let mut scan = Reader::new(&payload, limits);
    scan.skip().map_err(|e| ProtocolError::new(ErrorKind::Encode, e.rule()))
}

/// Encodes `message` as a bare CBOR item (no frame header), after validating it.
///
/// # Errors
/// As [`encode_message`], without the frame limit.
pub fn encode_item<T>(message: &T, limits: CborLimits) -> Result<Vec<u8>, ProtocolError>
where
    T: Encode + Validate,
{
    message.validate()?;
    let mut writer = Writer::new();
    message.encode(&mut writer);
    check_payload_limits(&writer, 0, limits)?;
    Ok(writer.into_vec())
}

/// Where the messages of a [`MessageDecoder`] keep their opaque payloads, and so what the
/// decoder is fed: [`Copied`] (the default: chunks are `&[u8]`, payloads are copied out of
/// them) or [`Shared`] (chunks are [`Bytes`], payloads beyond
/// [`MAX_INLINE_PAYLOAD_LENGTH`](crate::MAX_INLINE_PAYLOAD_LENGTH) bytes are slices of them).
/// Sealed: these two are the only kinds.
pub trait ChunkStorage: sealed::Sealed {
    /// The chunks the decoder is fed.
    type Chunk: ?Sized + AsRef<[u8]>;

    /// Decodes the payload of one frame, which lies inside `chunk` or in the frame decoder's
    /// own buffer (a frame split across chunks).
    #[doc(hidden)]
    fn decode<T>(chunk: &Self::Chunk, payload: &[u8], limits: CborLimits) -> Result<T, ProtocolError>
    where
        T: for<'de> Decode<'de>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Copied {}
    impl Sealed for super::Shared {}
}

/// [`ChunkStorage`] of the copying decoders: chunks are byte slices, and decoded messages own
/// their payloads ([`decode_message`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Copied;

/// [`ChunkStorage`] of the zero-copy decoders: chunks are [`Bytes`], and the opaque payloads of
/// decoded messages (beyond 46 bytes) are slices of them ([`decode_message_shared`]); a frame
/// split across chunks is gathered by the frame decoder, then copied into a buffer of its own,
/// which its payloads share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shared;

impl ChunkStorage for Copied {
    type Chunk = [u8];

    #[inline(always)]
    fn decode<T>(_chunk: &[u8], payload: &[u8], limits: CborLimits) -> Result<T, ProtocolError>
    where
        T: for<'de> Decode<'de>,
    {
        decode_message::<T>(payload, limits)
    }
}

impl ChunkStorage for Shared {
    type Chunk = Bytes;

    #[inline(always)]
    fn decode<T>(chunk: &Bytes, payload: &[u8], limits: CborLimits) -> Result<T, ProtocolError>
    where
        T: for<'de> Decode<'de>,
    {
        decode_message_shared::<T>(&Shared::slice_of(chunk, payload), limits)
    }
}

impl Shared {
    /// `frame` as [`Bytes`]: a slice of `chunk` when it lies inside it, else a copy.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use pi_protocol_runtime::message::Shared;
    /// let chunk = Bytes::from_static(b"0123456789");
    /// let inside = Shared::slice_of(&chunk, &chunk[2..5]);
    /// assert_eq!((inside.as_ptr(), &inside[..]), (chunk[2..].as_ptr(), &b"234"[..]));
    /// assert_eq!(&Shared::slice_of(&chunk, b"elsewhere")[..], b"elsewhere");
    /// ```
    pub fn slice_of(chunk: &Bytes, frame: &[u8]) -> Bytes {
        let base = chunk.as_ptr() as usize;
        let start = frame.as_ptr() as usize;
        if start >= base && start + frame.len() <= base + chunk.len() {
            chunk.slice_ref(frame)
        } else {
            Bytes::copy_from_slice(frame)
        }
    }
}

/// A streaming decoder of `T` messages from a framed byte stream (docs/PROTOCOL.md sections 1 and 7).
///
/// Three ways to feed it a chunk, which may be mixed on one stream: [`push`](Self::push)
/// returns the messages the chunk completes, in order, in a new `Vec`;
/// [`push_each`](Self::push_each) hands each to a closure; [`messages`](Self::messages) is
/// pull style, an iterator over them that allocates nothing of its own. When a frame is bad,
/// every message before it is still delivered, then the error; the decoder then stays failed.
///
/// It works for any message type with a [`Decode`] implementation: the built-in envelopes
/// (`pi_protocol::ClientMessageDecoder` is `MessageDecoder<ClientMessage>`) and the types a
/// crate generates from its own schema. The storage `S` says where decoded payloads live:
/// [`Copied`] (the default; chunks are `&[u8]`) or [`Shared`] (chunks are [`Bytes`] and
/// payloads slices of them: `pi_protocol::SharedMessageDecoder<T>` is
/// `MessageDecoder<T, Shared>`). Both accept and reject exactly the same streams, with the same
/// errors and offsets.
pub struct MessageDecoder<T, S = Copied> {
    frames: FrameDecoder,
    limits: CborLimits,
    _message: PhantomData<fn() -> (T, S)>,
}

impl<T, S> std::fmt::Debug for MessageDecoder<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageDecoder").field("frames", &self.frames).field("limits", &self.limits).finish()
    }
}

impl<T, S> Default for MessageDecoder<T, S>
where
    T: for<'de> Decode<'de>,
    S: ChunkStorage,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T, S> MessageDecoder<T, S>
where
    T: for<'de> Decode<'de>,
    S: ChunkStorage,
{
    /// A decoder with the default options.
    pub fn new() -> Self {
        Self::with_options(&CodecOptions::default())
    }

    /// A decoder with `options`.
    pub fn with_options(options: &CodecOptions) -> Self {
        let frames =
            FrameDecoder::with_max_frame_length(u64::from(options.max_frame_length)).expect("checked when built");
        MessageDecoder { frames, limits: options.limits, _message: PhantomData }
    }

    /// A decoder accepting frames of at most `max_frame_length` bytes, default CBOR limits.
    ///
    /// # Errors
    /// `Options` when `max_frame_length` exceeds `u32::MAX`.
    pub fn with_max_frame_length(max_frame_length: u64) -> Result<Self, ProtocolError> {
        Ok(Self::with_options(&CodecOptions::new().max_frame_length(max_frame_length)?))
    }

    /// Feeds `chunk` (any size, empty included) and returns the messages it completes.
    ///
    /// The returned vector holds `Ok` messages in stream order, possibly followed by one `Err`;
    /// after an `Err` the decoder is failed and every later call returns a `State` error. The
    /// vector is allocated for every chunk that completes a message: [`messages`](Self::messages)
    /// and [`push_each`](Self::push_each) avoid that.
    pub fn push(&mut self, chunk: &S::Chunk) -> Vec<Result<T, ProtocolError>> {
        let mut out = Vec::new();
        self.push_each(chunk, |result| out.push(result));
        out
    }

    /// Like [`push`](Self::push), calling `on_message` for each result instead of collecting them.
    #[inline]
    pub fn push_each<F>(&mut self, chunk: &S::Chunk, mut on_message: F)
    where
        F: FnMut(Result<T, ProtocolError>),
    {
        let limits = self.limits;
        // The decoded result goes to `on_message` as it is (not unpacked and wrapped again), so
        // the message is not copied on the way.
        let result =
            self.frames.push_with(chunk.as_ref(), |payload, offset| match S::decode::<T>(chunk, payload, limits) {
                Err(error) => Err(error.with_offset(offset)),
                message => {
                    on_message(message);
                    Ok(())
                }
            });
        if let Err(error) = result {
            on_message(Err(error));
        }
    }

    /// Feeds `chunk` (any size, empty included), pull style: the iterator decodes the
    /// messages the chunk completes one at a time, as it is advanced, with the same results as
    /// [`push`](Self::push) (messages in stream order, then possibly one error, after which the
    /// decoder is failed and the iterator ends).
    ///
    /// Nothing is allocated for the chunk: frames inside it are decoded in place, and a frame
    /// split across chunks is gathered in the decoder's buffer, which is kept from frame to
    /// frame (the messages themselves allocate what their fields need). Read the iterator to
    /// its end (`None`), which keeps the chunk's tail for the next chunk. When it is dropped
    /// earlier (a `break`, a `?`), the decoder keeps a copy of the bytes it did not read, and
    /// the next `messages`, `push` or `push_each` delivers their messages first;
    /// [`end`](Self::end) refuses to end the stream before that.
    ///
    /// ```
    /// use pi_protocol_runtime::MessageDecoder;
    /// # #[derive(Debug, PartialEq)] struct Null;
    /// # impl<'de> pi_protocol_runtime::Decode<'de> for Null {
    /// #     fn decode(r: &mut pi_protocol_runtime::Reader<'de>) -> Result<Self, pi_protocol_runtime::ProtocolError> {
    /// #         r.read_null().map(|()| Null)
    /// #     }
    /// # }
    /// // Three frames holding `null`, the second split across the chunks.
    /// let chunks: [&[u8]; 2] = [&[0, 0, 0, 1, 0xf6, 0, 0], &[0, 1, 0xf6, 0, 0, 0, 1, 0xf6]];
    /// let mut decoder = MessageDecoder::<Null>::new();
    /// let mut count = 0;
    /// for chunk in chunks {
    ///     for message in decoder.messages(chunk) {
    ///         assert_eq!(message?, Null);
    ///         count += 1;
    ///     }
    /// }
    /// decoder.end()?;
    /// assert_eq!(count, 3);
    /// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
    /// ```
    pub fn messages<'d, 'c>(&'d mut self, chunk: &'c S::Chunk) -> Messages<'d, 'c, T, S> {
        Messages { frames: self.frames.frames(chunk.as_ref()), chunk, limits: self.limits, _message: PhantomData }
    }

    /// Signals the end of the stream.
    ///
    /// # Errors
    /// `Frame`/`TruncatedFrame` when a frame is incomplete; `State`/`UnreadFrames` while a
    /// [`messages`](Self::messages) iterator dropped early left bytes unread; `State` errors
    /// once failed or ended.
    pub fn end(&mut self) -> Result<(), ProtocolError> {
        self.frames.end()
    }

    /// Pushes every chunk in order, then ends the stream: the messages delivered, and the first
    /// error if any (after an error no further chunk is pushed and `end` is not called).
    ///
    /// ```
    /// use pi_protocol_runtime::MessageDecoder;
    /// # #[derive(Debug)] struct Null;
    /// # impl<'de> pi_protocol_runtime::Decode<'de> for Null {
    /// #     fn decode(r: &mut pi_protocol_runtime::Reader<'de>) -> Result<Self, pi_protocol_runtime::ProtocolError> {
    /// #         r.read_null().map(|()| Null)
    /// #     }
    /// # }
    /// let stream = [0, 0, 0, 1, 0xf6, 0, 0];
    /// let (messages, error) = MessageDecoder::<Null>::new().decode_all(stream.chunks(3));
    /// assert_eq!(messages.len(), 1);
    /// assert!(error.is_some()); // the stream ends inside a header
    /// ```
    pub fn decode_all<'c, I>(&mut self, chunks: I) -> (Vec<T>, Option<ProtocolError>)
    where
        I: IntoIterator<Item = &'c S::Chunk>,
        S::Chunk: 'c,
    {
        let mut messages = Vec::new();
        for chunk in chunks {
            for result in self.push(chunk) {
                match result {
                    Ok(message) => messages.push(message),
                    Err(error) => return (messages, Some(error)),
                }
            }
        }
        let error = self.end().err();
        (messages, error)
    }

    /// Stream offset of the first byte not yet part of a delivered message.
    pub fn offset(&self) -> u64 {
        self.frames.offset()
    }
}

/// The messages of one chunk, decoded as the iterator is advanced: see
/// [`MessageDecoder::messages`].
#[must_use = "the messages of the chunk are only decoded as the iterator is advanced"]
pub struct Messages<'d, 'c, T, S: ChunkStorage = Copied> {
    frames: Frames<'d, 'c>,
    chunk: &'c S::Chunk,
    limits: CborLimits,
    _message: PhantomData<fn() -> T>,
}

impl<T, S: ChunkStorage> std::fmt::Debug for Messages<'_, '_, T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Messages").field("frames", &self.frames).finish_non_exhaustive()
    }
}

impl<T, S> Iterator for Messages<'_, '_, T, S>
where
    T: for<'de> Decode<'de>,
    S: ChunkStorage,
{
    type Item = Result<T, ProtocolError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (chunk, limits) = (self.chunk, self.limits);
        self.frames.next_message(|payload| S::decode::<T>(chunk, payload, limits))
    }
}

impl<T, S> std::iter::FusedIterator for Messages<'_, '_, T, S>
where
    T: for<'de> Decode<'de>,
    S: ChunkStorage,
{
}
