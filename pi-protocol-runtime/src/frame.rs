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
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
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
    Failed,
    Ended,
}

/// Splits a byte stream into frame payloads (see the module documentation).
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

    #[inline]
    fn check_state(&self) -> Result<(), ProtocolError> {
        match self.state {
            State::Open => Ok(()),
            State::Failed => Err(ProtocolError::new(ErrorKind::State, Rule::DecoderFailed)),
            State::Ended => Err(ProtocolError::new(ErrorKind::State, Rule::DecoderEnded)),
        }
    }

    fn check_header(&self, header: [u8; 4], offset: u64) -> Result<usize, ProtocolError> {
        let len = u32::from_be_bytes(header);
        if len > self.max_frame_length {
            return Err(ProtocolError::new(
                ErrorKind::Frame,
                Rule::FrameTooLong { length: u64::from(len), limit: u64::from(self.max_frame_length) },
            )
            .with_offset(offset));
        }
        Ok(len as usize)
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
        // Fast path: the chunk continues a frame whose header is known and does not complete it
        // (a stream arriving in small pieces). Nothing to check: append and return.
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
            return Ok(());
        }
        self.push_slow(chunk, on_frame)
    }

    /// Everything but the fast path of [`push_with`](Self::push_with), kept out of line so that
    /// the fast path inlines into the caller.
    #[inline(never)]
    fn push_slow<F>(&mut self, chunk: &[u8], mut on_frame: F) -> Result<(), ProtocolError>
    where
        F: FnMut(&[u8], u64) -> Result<(), ProtocolError>,
    {
        self.check_state()?;
        let result = self.push_inner(chunk, &mut on_frame);
        if result.is_err() {
            self.state = State::Failed;
            self.partial = Vec::new();
            self.pending_total = 0;
        }
        result
    }

    fn push_inner<F>(&mut self, mut chunk: &[u8], on_frame: &mut F) -> Result<(), ProtocolError>
    where
        F: FnMut(&[u8], u64) -> Result<(), ProtocolError>,
    {
        // 1. Complete a frame left partial by earlier chunks.
        if !self.partial.is_empty() {
            if self.partial.len() < FRAME_HEADER_LENGTH {
                let take = (FRAME_HEADER_LENGTH - self.partial.len()).min(chunk.len());
                self.partial.extend_from_slice(&chunk[..take]);
                chunk = &chunk[take..];
                if self.partial.len() < FRAME_HEADER_LENGTH {
                    return Ok(());
                }
            }
            let header = [self.partial[0], self.partial[1], self.partial[2], self.partial[3]];
            let total = FRAME_HEADER_LENGTH + self.check_header(header, self.offset)?;
            self.pending_total = total;
            let take = (total - self.partial.len()).min(chunk.len());
            self.reserve_partial(take, total);
            self.partial.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if self.partial.len() < total {
                return Ok(());
            }
            self.pending_total = 0;
            let frame = std::mem::take(&mut self.partial);
            let offset = self.offset;
            self.offset += total as u64;
            on_frame(&frame[FRAME_HEADER_LENGTH..], offset)?;
            // Keep the allocation for the next partial frame when it is small.
            if frame.capacity() <= 64 * 1024 {
                self.partial = frame;
                self.partial.clear();
            }
        }
        // 2. Frames wholly inside the chunk go out without a copy.
        while chunk.len() >= FRAME_HEADER_LENGTH {
            let header = [chunk[0], chunk[1], chunk[2], chunk[3]];
            let len = self.check_header(header, self.offset)?;
            let total = FRAME_HEADER_LENGTH + len;
            if chunk.len() < total {
                break;
            }
            let offset = self.offset;
            self.offset += total as u64;
            on_frame(&chunk[FRAME_HEADER_LENGTH..total], offset)?;
            chunk = &chunk[total..];
        }
        // 3. Keep the tail (a partial header or frame), checking a complete header at once.
        if !chunk.is_empty() {
            if chunk.len() >= FRAME_HEADER_LENGTH {
                let header = [chunk[0], chunk[1], chunk[2], chunk[3]];
                let total = FRAME_HEADER_LENGTH + self.check_header(header, self.offset)?;
                self.pending_total = total;
                self.reserve_partial(chunk.len(), total);
            }
            self.partial.extend_from_slice(chunk);
        }
        Ok(())
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
    /// `State` errors once failed or ended.
    pub fn end(&mut self) -> Result<(), ProtocolError> {
        self.check_state()?;
        if !self.partial.is_empty() {
            self.state = State::Failed;
            self.partial = Vec::new();
            self.pending_total = 0;
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
    }
}
