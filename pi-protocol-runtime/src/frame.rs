//! Framing (docs/PROTOCOL.md section 1): a 4-byte big-endian payload length, then the payload.
//!
//! [`FrameDecoder`] accepts the byte stream in arbitrary chunks. Frames that lie wholly inside a
//! pushed chunk are handed out straight from it; only a frame split across chunks is copied into
//! the decoder's buffer, and that buffer grows with the bytes that actually arrived (never to
//! the length a header announces up front).

use crate::error::{ErrorKind, ProtocolError, Rule};
use crate::limits::{check_length, DEFAULT_MAX_FRAME_LENGTH};

/// Length of the frame header in bytes.
pub const FRAME_HEADER_LENGTH: usize = 4;

/// A frame header: the 4-byte big-endian length of the payload that follows
/// (docs/PROTOCOL.md section 1). [`check`](Self::check) is the one place the header rule is
/// written; every reader of frames (the [`FrameDecoder`], the blocking
/// [`FrameReader`](crate::FrameReader), the facade's tokio codec) asks it.
///
/// ```
/// use pi_protocol_runtime::FrameHeader;
/// let header = FrameHeader::from_bytes([0, 0, 3, 0xe9]);
/// assert_eq!(header.payload_length(), 1001);
/// assert_eq!(header.check(2000, 0).unwrap(), 1001);
/// assert!(header.check(1000, 0).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    payload_length: u32,
}

impl FrameHeader {
    /// The header of a frame whose payload is `payload_length` bytes.
    #[must_use]
    pub const fn new(payload_length: u32) -> Self {
        FrameHeader { payload_length }
    }

    /// The 4 bytes of the header.
    #[must_use]
    pub const fn to_bytes(self) -> [u8; FRAME_HEADER_LENGTH] {
        self.payload_length.to_be_bytes()
    }

    /// The header these 4 bytes are.
    #[must_use]
    #[inline]
    pub fn from_bytes(bytes: [u8; FRAME_HEADER_LENGTH]) -> FrameHeader {
        FrameHeader { payload_length: u32::from_be_bytes(bytes) }
    }

    /// The payload length the header announces, in bytes (not yet checked).
    #[must_use]
    pub fn payload_length(self) -> u32 {
        self.payload_length
    }

    /// The announced payload length, if it is within `max_frame_length` bytes.
    ///
    /// # Errors
    /// `Frame`/`FrameTooLong` at stream offset `offset` (the header's) when the header announces
    /// more than `max_frame_length` bytes: the frame is refused before any of its payload is read.
    #[inline]
    pub fn check(self, max_frame_length: u32, offset: u64) -> Result<usize, ProtocolError> {
        if self.payload_length > max_frame_length {
            return Err(ProtocolError::new(
                ErrorKind::Frame,
                Rule::FrameTooLong { length: u64::from(self.payload_length), limit: u64::from(max_frame_length) },
            )
            .with_offset(offset));
        }
        Ok(self.payload_length as usize)
    }
}

/// The error a reader of frames reports for a frame whose payload did not decode (`error`, at
/// that frame's offset), where `rest` is what follows the frame in the same pushed chunk (or
/// read buffer) and starts at stream offset `offset`; offsets and `max_frame_length` are in
/// bytes, the limit counting the payload without its 4-byte header.
///
/// The reference splits every frame of a chunk before it decodes any, so a header announcing
/// more than `max_frame_length` further on in the chunk is reported instead, with its
/// `Frame`/`FrameTooLong` at its own offset (docs/PROTOCOL.md sections 1 and 6). The headers of
/// the complete frames in `rest` are looked at in order, then the header of its tail when all
/// four bytes of it are there; nothing is buffered or decoded. With no such header, the result
/// is `error` itself, unchanged. This is the one place the rule is written: the
/// [`FrameDecoder`] (both ways of feeding it) and the facade's tokio codec ask it.
///
/// ```
/// use pi_protocol_runtime::{undecoded_frame_error, ErrorKind, ProtocolError, Rule};
/// let refused = ProtocolError::new(ErrorKind::Schema, Rule::ByteString).with_offset(0);
/// // After the refused frame (say 6 bytes): a frame of 1 byte, then a header announcing 9.
/// let rest = [0, 0, 0, 1, 0xf6, 0, 0, 0, 9];
/// let error = undecoded_frame_error(refused.clone(), &rest, 8, 6);
/// assert_eq!(error.rule(), Rule::FrameTooLong { length: 9, limit: 8 });
/// assert_eq!(error.offset(), Some(11));
/// // Under a limit of 9 the refused frame's own error stands.
/// assert_eq!(undecoded_frame_error(refused.clone(), &rest, 9, 6), refused);
/// ```
#[cold]
#[inline(never)]
#[must_use]
pub fn undecoded_frame_error(
    error: ProtocolError,
    mut rest: &[u8],
    max_frame_length: u32,
    mut offset: u64,
) -> ProtocolError {
    while let [a, b, c, d, ..] = *rest {
        let total = match FrameHeader::from_bytes([a, b, c, d]).check(max_frame_length, offset) {
            Ok(length) => FRAME_HEADER_LENGTH + length,
            Err(header_error) => return header_error,
        };
        let Some(after) = rest.get(total..) else { break };
        rest = after;
        offset += total as u64;
    }
    error
}

/// Prepends the 4-byte big-endian length header to `payload`.
///
/// # Errors
/// `Frame`/`EncodedFrameTooLong` when `payload` is longer than `max_frame_length` bytes.
///
/// ```
/// use pi_protocol_runtime::encode_frame;
/// assert_eq!(encode_frame(&[0xf6], 16).unwrap(), vec![0, 0, 0, 1, 0xf6]);
/// assert!(encode_frame(&[0xf6, 0xf6], 1).is_err());
/// ```
pub fn encode_frame(payload: &[u8], max_frame_length: u32) -> Result<Vec<u8>, ProtocolError> {
    check_encoded_length(payload.len(), max_frame_length)?;
    let mut out = Vec::with_capacity(FRAME_HEADER_LENGTH + payload.len());
    out.extend_from_slice(&FrameHeader::new(payload.len() as u32).to_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// Checks an encoded payload length against `max_frame_length`.
///
/// # Errors
/// `Frame`/`EncodedFrameTooLong`.
pub fn check_encoded_length(len: usize, max_frame_length: u32) -> Result<(), ProtocolError> {
    if len as u64 > u64::from(max_frame_length) {
        return Err(ProtocolError::new(
            ErrorKind::Frame,
            Rule::EncodedFrameTooLong { length: len as u64, limit: u64::from(max_frame_length) },
        ));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    /// Open, with bytes in `backlog`: they come before the next chunk (and keep the fast path
    /// of `push_with`, which checks for `Open`, from appending a chunk ahead of them).
    Backlog,
    Failed,
    Ended,
}

/// Where [`FrameDecoder::next_in`] found a complete frame.
enum Found<'c> {
    /// In the decoder's own buffer, gathered from several chunks; the value is its offset.
    Buffered(u64),
    /// Inside the chunk: the payload and the frame's offset.
    InChunk(&'c [u8], u64),
}

/// Largest buffer kept for the next partial frame once the frame in it has been delivered.
const KEPT_BUFFER_CAPACITY: usize = 64 * 1024;

/// Splits a byte stream into frame payloads (see the module documentation).
///
/// Two ways to feed it: [`push_with`](Self::push_with) calls a closure for each frame a chunk
/// completes; [`frames`](Self::frames) hands them out one at a time (pull style). They may be
/// mixed on one stream.
///
/// After any error the decoder is failed for good; after a successful [`end`](Self::end) it is
/// ended. Both refuse every later call.
///
/// ```
/// use pi_protocol_runtime::FrameDecoder;
/// let mut d = FrameDecoder::new();
/// let mut frames = Vec::new();
/// d.push_with(&[0, 0, 0, 1], |payload, _offset| { frames.push(payload.to_vec()); Ok(()) }).unwrap();
/// d.push_with(&[0xf6, 0, 0], |payload, _offset| { frames.push(payload.to_vec()); Ok(()) }).unwrap();
/// assert_eq!(frames, vec![vec![0xf6]]);
/// assert!(d.end().is_err()); // two bytes of a header are pending
/// ```
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    max_frame_length: u32,
    /// Bytes of a frame split across chunks (header included).
    partial: Vec<u8>,
    /// Stream offset of the first byte of `partial` (or of the next frame when it is empty).
    offset: u64,
    /// Total length (header included) of the frame in `partial` once its header is complete and
    /// checked; 0 while unknown. Lets a chunk that does not complete the frame be appended
    /// without looking at the header again.
    pending_total: usize,
    /// Bytes of a chunk that a [`Frames`] dropped early had not read yet (see
    /// [`frames`](Self::frames)): they come after those in `partial` and before the next
    /// chunk. Not empty only in the `Backlog` state.
    backlog: Vec<u8>,
    state: State,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameDecoder {
    /// A decoder with the default `maxFrameLength` of 16 MiB.
    pub fn new() -> Self {
        FrameDecoder {
            max_frame_length: DEFAULT_MAX_FRAME_LENGTH,
            partial: Vec::new(),
            offset: 0,
            pending_total: 0,
            backlog: Vec::new(),
            state: State::Open,
        }
    }

    /// A decoder accepting payloads of at most `max_frame_length` bytes.
    ///
    /// # Errors
    /// `Options` when `max_frame_length` exceeds `u32::MAX`.
    pub fn with_max_frame_length(max_frame_length: u64) -> Result<Self, ProtocolError> {
        Ok(FrameDecoder { max_frame_length: check_length("maxFrameLength", max_frame_length)?, ..Self::new() })
    }

    /// The configured limit in bytes.
    pub fn max_frame_length(&self) -> u32 {
        self.max_frame_length
    }

    /// Stream offset of the next byte that is not yet part of a delivered frame.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes of memory the decoder holds for a partly received frame (its buffer's capacity):
    /// at most twice what has arrived of that frame, whatever its header announced.
    pub fn buffered_capacity(&self) -> usize {
        self.partial.capacity()
    }

    /// Whether a frame (or header) is partly received.
    pub fn has_partial(&self) -> bool {
        !self.partial.is_empty()
    }

    /// Bytes received but not yet read: those a [`Frames`] dropped before its end left behind
    /// (delivered first by the next call). 0 in every other case.
    pub fn unread_len(&self) -> usize {
        self.backlog.len()
    }

    #[inline]
    fn check_state(&self) -> Result<(), ProtocolError> {
        match self.state {
            State::Open | State::Backlog => Ok(()),
            State::Failed => Err(ProtocolError::new(ErrorKind::State, Rule::DecoderFailed)),
            State::Ended => Err(ProtocolError::new(ErrorKind::State, Rule::DecoderEnded)),
        }
    }

    fn check_header(&self, header: [u8; 4], offset: u64) -> Result<usize, ProtocolError> {
        FrameHeader::from_bytes(header).check(self.max_frame_length, offset)
    }

    /// Feeds `chunk`, calling `on_frame(payload, offset)` for every frame it completes, in order,
    /// where `offset` is the stream offset of the frame's header. An error returned by
    /// `on_frame` stops the push and fails the decoder.
    ///
    /// # Errors
    /// `Frame`/`FrameTooLong` as soon as a header announces too much (before its payload is
    /// buffered); `State` errors once failed or ended; whatever `on_frame` returns.
    #[inline]
    pub fn push_with<F>(&mut self, chunk: &[u8], on_frame: F) -> Result<(), ProtocolError>
    where
        F: FnMut(&[u8], u64) -> Result<(), ProtocolError>,
    {
        if self.append_to_partial(chunk) {
            return Ok(());
        }
        self.push_slow(chunk, on_frame)
    }

    /// The fast path of both ways of feeding: when `chunk` continues a frame whose header is
    /// known and does not complete it (a stream arriving in small pieces), there is nothing to
    /// check: it is appended, and the result is `true`.
    #[inline(always)]
    fn append_to_partial(&mut self, chunk: &[u8]) -> bool {
        if self.state == State::Open
            && self.pending_total != 0
            && self.partial.len() + chunk.len() < self.pending_total
            && self.partial.len() + chunk.len() <= self.partial.capacity()
        {
            if let [byte] = chunk {
                self.partial.push(*byte);
            } else {
                self.partial.extend_from_slice(chunk);
            }
            return true;
        }
        false
    }

    /// Everything but the fast path of [`push_with`](Self::push_with), kept out of line so that
    /// the fast path inlines into the caller.
    #[inline(never)]
    fn push_slow<F>(&mut self, chunk: &[u8], mut on_frame: F) -> Result<(), ProtocolError>
    where
        F: FnMut(&[u8], u64) -> Result<(), ProtocolError>,
    {
        if self.state != State::Open {
            return self.push_not_open(chunk, &mut on_frame);
        }
        let result = self.push_inner(chunk, &mut on_frame);
        if result.is_err() {
            self.fail();
        }
        result
    }

    /// [`push_slow`](Self::push_slow) in the other states: the backlog goes first; failed and
    /// ended decoders refuse.
    #[cold]
    fn push_not_open<F>(&mut self, chunk: &[u8], on_frame: &mut F) -> Result<(), ProtocolError>
    where
        F: FnMut(&[u8], u64) -> Result<(), ProtocolError>,
    {
        self.check_state()?;
        let backlog = std::mem::take(&mut self.backlog);
        self.state = State::Open;
        let result = self.push_inner(&backlog, on_frame).and_then(|()| self.push_inner(chunk, on_frame));
        if result.is_err() {
            self.fail();
        }
        result
    }

    #[inline(always)]
    fn push_inner<F>(&mut self, mut chunk: &[u8], on_frame: &mut F) -> Result<(), ProtocolError>
    where
        F: FnMut(&[u8], u64) -> Result<(), ProtocolError>,
    {
        // The steps of `next_in`, each in its own loop.
        if !self.partial.is_empty() {
            let Some(offset) = self.complete_partial(&mut chunk)? else {
                return Ok(());
            };
            if let Err(error) = on_frame(&self.partial[FRAME_HEADER_LENGTH..], offset) {
                return Err(self.header_error_after(chunk, error));
            }
            self.release_buffer();
        }
        while let Some((payload, offset)) = self.frame_in_chunk(&mut chunk)? {
            if let Err(error) = on_frame(payload, offset) {
                return Err(self.header_error_after(chunk, error));
            }
        }
        self.keep_tail(chunk);
        Ok(())
    }

    /// The error to report when a frame failed to decode with `error` and `rest` is what follows
    /// it in the pushed chunk: [`undecoded_frame_error`] under this decoder's limit, `rest`
    /// starting at the decoder's offset (just past the frame).
    fn header_error_after(&self, rest: &[u8], error: ProtocolError) -> ProtocolError {
        undecoded_frame_error(error, rest, self.max_frame_length, self.offset)
    }

    /// Takes the bytes of the next frame from the front of `chunk` (advancing it): the frame
    /// when one is complete (the decoder's offset then counts it), `None` when `chunk` has run
    /// out, its tail kept for the next chunk. In order: a frame left partial by earlier chunks
    /// is completed first; a frame wholly inside the chunk is returned in place, without a copy;
    /// a tail (a partial header or frame) is copied into the buffer, a complete header in it
    /// checked at once.
    fn next_in<'c>(&mut self, chunk: &mut &'c [u8]) -> Result<Option<Found<'c>>, ProtocolError> {
        if !self.partial.is_empty() {
            return Ok(self.complete_partial(chunk)?.map(Found::Buffered));
        }
        if let Some((payload, offset)) = self.frame_in_chunk(chunk)? {
            return Ok(Some(Found::InChunk(payload, offset)));
        }
        self.keep_tail(chunk);
        *chunk = &[];
        Ok(None)
    }

    /// The frame at the front of `chunk` when the chunk holds all of it (`chunk` then starts
    /// after it): its payload and offset. When the chunk holds its header but not all of it,
    /// the frame's length is checked and noted and the buffer made ready for the tail.
    #[inline(always)]
    fn frame_in_chunk<'c>(&mut self, chunk: &mut &'c [u8]) -> Result<Option<(&'c [u8], u64)>, ProtocolError> {
        if chunk.len() < FRAME_HEADER_LENGTH {
            return Ok(None);
        }
        let header = [chunk[0], chunk[1], chunk[2], chunk[3]];
        let total = FRAME_HEADER_LENGTH + self.check_header(header, self.offset)?;
        if chunk.len() < total {
            self.pending_total = total;
            self.reserve_partial(chunk.len(), total);
            return Ok(None);
        }
        let offset = self.offset;
        self.offset += total as u64;
        let (frame, rest) = chunk.split_at(total);
        *chunk = rest;
        Ok(Some((&frame[FRAME_HEADER_LENGTH..], offset)))
    }

    /// Keeps the tail of a chunk (a partial header or frame) in the buffer.
    #[inline]
    fn keep_tail(&mut self, tail: &[u8]) {
        if !tail.is_empty() {
            self.partial.extend_from_slice(tail);
        }
    }

    /// Adds the front of `chunk` to the frame in `partial`: the frame's offset once it is
    /// complete.
    fn complete_partial(&mut self, chunk: &mut &[u8]) -> Result<Option<u64>, ProtocolError> {
        if self.partial.len() < FRAME_HEADER_LENGTH {
            let take = (FRAME_HEADER_LENGTH - self.partial.len()).min(chunk.len());
            self.partial.extend_from_slice(&chunk[..take]);
            *chunk = &chunk[take..];
            if self.partial.len() < FRAME_HEADER_LENGTH {
                return Ok(None);
            }
        }
        let header = [self.partial[0], self.partial[1], self.partial[2], self.partial[3]];
        let total = FRAME_HEADER_LENGTH + self.check_header(header, self.offset)?;
        self.pending_total = total;
        let take = (total - self.partial.len()).min(chunk.len());
        self.reserve_partial(take, total);
        self.partial.extend_from_slice(&chunk[..take]);
        *chunk = &chunk[take..];
        if self.partial.len() < total {
            return Ok(None);
        }
        self.pending_total = 0;
        let offset = self.offset;
        self.offset += total as u64;
        Ok(Some(offset))
    }

    /// Empties the buffer after its frame was delivered, keeping the allocation for the next
    /// partial frame when it is small.
    fn release_buffer(&mut self) {
        if self.partial.capacity() <= KEPT_BUFFER_CAPACITY {
            self.partial.clear();
        } else {
            self.partial = Vec::new();
        }
    }

    /// Pull-style feeding: the frames of `chunk` one at a time, from
    /// [`Frames::next_frame`], each payload borrowed from `chunk` when the frame lies inside
    /// it (from the decoder's buffer when earlier chunks hold its start). Nothing is allocated
    /// but the buffer of a frame split across chunks, which is kept from frame to frame.
    ///
    /// Read it to its end (`None`): that is when a chunk's tail is kept for the next one. A
    /// `Frames` dropped before its end keeps the bytes it did not read (a copy, the one case in
    /// which this allocates for a chunk); their frames come first from the next call of
    /// `frames` or [`push_with`](Self::push_with), and [`end`](Self::end) refuses to end the
    /// stream before they are read. For the rule that a header over the limit later in a chunk
    /// wins over a frame that does not decode ([`undecoded_frame_error`]), the bytes left behind
    /// are one chunk of their own: read before the next chunk, they give what pushing their chunk
    /// gave; left behind by several iterators in a row, they count as one.
    ///
    /// ```
    /// use pi_protocol_runtime::FrameDecoder;
    /// let mut decoder = FrameDecoder::new();
    /// let mut payloads = Vec::new();
    /// for chunk in [&[0, 0, 0, 1, 0xf6, 0, 0][..], &[0, 2, 0x61, b'a']] {
    ///     let mut frames = decoder.frames(chunk);
    ///     while let Some(frame) = frames.next_frame() {
    ///         let (payload, offset) = frame?;
    ///         payloads.push((payload.to_vec(), offset));
    ///     }
    /// }
    /// decoder.end()?;
    /// assert_eq!(payloads, vec![(vec![0xf6], 0), (vec![0x61, b'a'], 5)]);
    /// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
    /// ```
    #[inline]
    pub fn frames<'d, 'c>(&'d mut self, chunk: &'c [u8]) -> Frames<'d, 'c> {
        if self.append_to_partial(chunk) {
            // Nothing to hand out, nothing left unread.
            return Frames {
                decoder: self,
                backlog: Vec::new(),
                backlog_read: 0,
                chunk: &[],
                delivered: false,
                done: true,
                from_backlog: false,
            };
        }
        let backlog = std::mem::take(&mut self.backlog);
        if self.state == State::Backlog {
            self.state = State::Open;
        }
        Frames { decoder: self, backlog, backlog_read: 0, chunk, delivered: false, done: false, from_backlog: false }
    }

    /// One step of [`Frames::next_frame`] over `chunk`.
    fn pull<'c>(&mut self, chunk: &mut &'c [u8]) -> Result<Option<Found<'c>>, ProtocolError> {
        self.check_state()?;
        let found = self.next_in(chunk);
        if found.is_err() {
            self.fail();
        }
        found
    }

    /// Makes room in the partial buffer for `more` bytes of a frame of `total` bytes.
    #[inline]
    fn reserve_partial(&mut self, more: usize, total: usize) {
        if self.partial.len() + more > self.partial.capacity() {
            self.grow_partial(more, total);
        }
    }

    /// Grows the partial buffer for `more` bytes of a frame of `total` bytes: capacity at most
    /// doubles what has arrived, and never exceeds the frame.
    #[cold]
    fn grow_partial(&mut self, more: usize, total: usize) {
        let needed = self.partial.len() + more;
        {
            let target = needed.max(self.partial.capacity().saturating_mul(2)).min(total).max(needed);
            self.partial.reserve_exact(target - self.partial.len());
        }
    }

    /// Signals the end of the stream.
    ///
    /// # Errors
    /// `Frame`/`TruncatedFrame` when a header or payload is partly received (the decoder fails);
    /// `State`/`UnreadFrames` while bytes a dropped [`Frames`] left behind are not read yet (the
    /// decoder stays usable: read them, then end); `State` errors once failed or ended.
    pub fn end(&mut self) -> Result<(), ProtocolError> {
        self.check_state()?;
        if self.state == State::Backlog {
            return Err(ProtocolError::new(ErrorKind::State, Rule::UnreadFrames).with_offset(self.offset));
        }
        if !self.partial.is_empty() {
            self.fail();
            return Err(ProtocolError::new(ErrorKind::Frame, Rule::TruncatedFrame).with_offset(self.offset));
        }
        self.state = State::Ended;
        Ok(())
    }

    /// Marks the decoder failed (used by message decoders when a frame's content is invalid).
    pub fn fail(&mut self) {
        self.state = State::Failed;
        self.partial = Vec::new();
        self.pending_total = 0;
        self.backlog = Vec::new();
    }
}

/// The frames of one chunk, handed out one at a time: see [`FrameDecoder::frames`].
///
/// Not an [`Iterator`]: each payload may borrow the decoder's buffer, so it must be let go
/// before the next call of [`next_frame`](Self::next_frame).
#[derive(Debug)]
#[must_use = "the frames of the chunk are only read by next_frame"]
pub struct Frames<'d, 'c> {
    decoder: &'d mut FrameDecoder,
    /// Unread bytes an earlier `Frames` left behind, read before `chunk`.
    backlog: Vec<u8>,
    /// How much of `backlog` has been read.
    backlog_read: usize,
    /// What is left of the chunk.
    chunk: &'c [u8],
    /// The last frame returned was the one in the decoder's buffer, which is emptied when the
    /// next frame is asked for or when this is dropped (not before: the payload borrows it).
    delivered: bool,
    /// Nothing more is returned (an error was, or the chunk went to the buffer at once).
    done: bool,
    /// The last frame returned came whole from `backlog`: what follows it in its own chunk is
    /// the rest of the backlog, not `chunk` (a later one).
    from_backlog: bool,
}

impl Frames<'_, '_> {
    /// The next complete frame: its payload and the stream offset of its header; `None` once
    /// the chunk is read (its tail kept for the next chunk). After an error (which fails the
    /// decoder; a decoder failed or ended earlier gives a `State` error) it returns `None`.
    ///
    /// # Errors
    /// As [`FrameDecoder::push_with`].
    #[inline]
    pub fn next_frame(&mut self) -> Option<Result<(&[u8], u64), ProtocolError>> {
        if self.done {
            return None;
        }
        if std::mem::take(&mut self.delivered) {
            self.decoder.release_buffer();
        }
        // The backlog first; when it runs out (its tail now in the decoder's buffer), the chunk.
        let found = if self.backlog_read < self.backlog.len() {
            let mut rest = &self.backlog[self.backlog_read..];
            let found = self.decoder.pull(&mut rest);
            self.backlog_read = self.backlog.len() - rest.len();
            self.from_backlog = !matches!(found, Ok(None));
            match found {
                Ok(None) => self.decoder.pull(&mut self.chunk),
                found => found,
            }
        } else {
            self.from_backlog = false;
            self.decoder.pull(&mut self.chunk)
        };
        match found {
            Ok(None) => None,
            Ok(Some(Found::InChunk(payload, offset))) => Some(Ok((payload, offset))),
            Ok(Some(Found::Buffered(offset))) => {
                self.delivered = true;
                Some(Ok((&self.decoder.partial[FRAME_HEADER_LENGTH..], offset)))
            }
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }

    /// The next frame as a message: [`next_frame`](Self::next_frame), then `decode` of its
    /// payload. An error of `decode` gets the frame's stream offset and fails the decoder, as
    /// an error of `on_frame` does in [`FrameDecoder::push_with`].
    ///
    /// # Errors
    /// As [`next_frame`](Self::next_frame), and what `decode` returns.
    #[inline]
    pub fn next_message<T, F>(&mut self, decode: F) -> Option<Result<T, ProtocolError>>
    where
        F: FnOnce(&[u8]) -> Result<T, ProtocolError>,
    {
        let (payload, offset) = match self.next_frame()? {
            Ok(frame) => frame,
            Err(error) => return Some(Err(error)),
        };
        match decode(payload) {
            Err(error) => {
                self.done = true;
                // A header over the limit later in the frame's own chunk wins, as in
                // `push_with`: for a frame of the backlog, later in the backlog.
                let rest = if self.from_backlog { &self.backlog[self.backlog_read..] } else { self.chunk };
                let error = self.decoder.header_error_after(rest, error.with_offset(offset));
                self.decoder.fail();
                Some(Err(error))
            }
            message => Some(message),
        }
    }

    /// Bytes of the chunk (and of an earlier backlog) not read yet.
    pub fn unread_len(&self) -> usize {
        self.backlog.len() - self.backlog_read + self.chunk.len()
    }
}

impl Frames<'_, '_> {
    /// Hands the unread bytes to the decoder (see [`FrameDecoder::frames`]).
    #[cold]
    #[inline(never)]
    fn keep_unread(&mut self) {
        if self.decoder.state != State::Open {
            return;
        }
        let mut backlog = std::mem::take(&mut self.backlog);
        backlog.drain(..self.backlog_read);
        backlog.extend_from_slice(self.chunk);
        self.decoder.backlog = backlog;
        self.decoder.state = State::Backlog;
    }
}

impl Drop for Frames<'_, '_> {
    /// Empties the buffer of a frame it handed out, and keeps the unread bytes in the decoder
    /// (see [`FrameDecoder::frames`]).
    #[inline]
    fn drop(&mut self) {
        if self.delivered {
            self.decoder.release_buffer();
        }
        if !self.done && self.unread_len() != 0 {
            self.keep_unread();
        }
    }
}
