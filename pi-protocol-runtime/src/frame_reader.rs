//! [`FrameReader`]: frames read one at a time from a blocking [`std::io::Read`]
//! (docs/PROTOCOL.md section 1), each header checked by [`FrameHeader`] before any payload byte
//! is read, and the payload buffer grown with the bytes that arrive (never to the length a
//! header announces up front).

use std::io::{self, Read};

use crate::error::{ErrorKind, ProtocolError, Rule};
use crate::frame::{FrameHeader, FRAME_HEADER_LENGTH};

/// What [`FrameReader::next_frame`] found at the reader's position: the three outcomes of
/// reading a frame (exhaustive: framing has no other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawFrame {
    /// A complete frame.
    Complete {
        /// Stream offset of its header, in bytes.
        offset: u64,
        /// Its payload.
        payload: Vec<u8>,
    },
    /// The stream ended inside a frame: inside its header (`announced` is `None`) or inside its
    /// payload.
    Truncated {
        /// Stream offset of its header, in bytes.
        offset: u64,
        /// The payload length its header announced, when the whole header arrived.
        announced: Option<u32>,
        /// The bytes of the frame that arrived, header included.
        present: u64,
    },
    /// A header announcing more than the frame limit: the stream cannot be followed past it.
    TooLong {
        /// Stream offset of the header, in bytes.
        offset: u64,
        /// The payload length it announced.
        announced: u32,
        /// The error a decoder reports for it (`Frame`/`FrameTooLong`, with the offset).
        error: ProtocolError,
    },
}

impl RawFrame {
    /// The error a decoder reports for this frame: `Frame`/`TruncatedFrame` for a truncated one,
    /// `Frame`/`FrameTooLong` for an oversized one, both at the frame's offset; `None` for a
    /// complete frame (its payload may still fail to decode).
    #[must_use]
    pub fn error(&self) -> Option<ProtocolError> {
        match self {
            RawFrame::Complete { .. } => None,
            RawFrame::Truncated { offset, .. } => Some(truncated_frame(*offset)),
            RawFrame::TooLong { error, .. } => Some(error.clone()),
        }
    }

    /// The payload of a complete frame with the frame's offset, or the [`error`](Self::error) of
    /// any other.
    ///
    /// # Errors
    /// `Frame`/`TruncatedFrame` or `Frame`/`FrameTooLong`, as [`error`](Self::error) says.
    pub fn into_payload(self) -> Result<(u64, Vec<u8>), ProtocolError> {
        match self {
            RawFrame::Complete { offset, payload } => Ok((offset, payload)),
            RawFrame::Truncated { offset, .. } => Err(truncated_frame(offset)),
            RawFrame::TooLong { error, .. } => Err(error),
        }
    }
}

/// The error of a frame the stream ends inside, at the frame's `offset`.
fn truncated_frame(offset: u64) -> ProtocolError {
    ProtocolError::new(ErrorKind::Frame, Rule::TruncatedFrame).with_offset(offset)
}

/// Splits a blocking byte stream into [`RawFrame`]s, one per call. After a truncated or oversized
/// frame, or the end of the stream, it yields nothing more.
///
/// ```
/// use pi_protocol_runtime::{FrameReader, RawFrame};
/// let stream: &[u8] = &[0, 0, 0, 1, 0xf6, 0, 0, 0, 9, 1];
/// let mut reader = FrameReader::new(stream, 16);
/// assert_eq!(reader.next_frame().unwrap(), Some(RawFrame::Complete { offset: 0, payload: vec![0xf6] }));
/// assert_eq!(
///     reader.next_frame().unwrap(),
///     Some(RawFrame::Truncated { offset: 5, announced: Some(9), present: 5 })
/// );
/// assert_eq!(reader.next_frame().unwrap(), None);
/// ```
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    max_frame_length: u32,
    offset: u64,
    done: bool,
}

impl<R> FrameReader<R> {
    /// A reader of the frames of `inner`, refusing headers that announce more than
    /// `max_frame_length` payload bytes.
    #[must_use]
    pub fn new(inner: R, max_frame_length: u32) -> Self {
        FrameReader { inner, max_frame_length, offset: 0, done: false }
    }

    /// The stream offset of the next frame's header, in bytes.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The reader it reads from.
    #[must_use]
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The reader it reads from, mutably (reading from it directly desynchronises the framing).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The reader it reads from, given back.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read> FrameReader<R> {
    /// Reads the next frame: `None` at a clean end of the stream (no byte of a next frame), and
    /// after a truncated or oversized frame. Interrupted reads are retried.
    ///
    /// # Errors
    /// The reader's I/O errors, as they are.
    pub fn next_frame(&mut self) -> io::Result<Option<RawFrame>> {
        if self.done {
            return Ok(None);
        }
        let offset = self.offset;
        let mut header = [0u8; FRAME_HEADER_LENGTH];
        let got = read_up_to(&mut self.inner, &mut header)?;
        if got == 0 {
            self.done = true;
            return Ok(None);
        }
        if got < FRAME_HEADER_LENGTH {
            self.done = true;
            return Ok(Some(RawFrame::Truncated { offset, announced: None, present: got as u64 }));
        }
        let header = FrameHeader::from_bytes(header);
        let announced = header.payload_length();
        if let Err(error) = header.check(self.max_frame_length, offset) {
            self.done = true;
            return Ok(Some(RawFrame::TooLong { offset, announced, error }));
        }
        // `take` + `read_to_end` grows the buffer as bytes arrive and stops at the frame's end.
        let mut payload = Vec::new();
        let read = (&mut self.inner).take(u64::from(announced)).read_to_end(&mut payload)?;
        let present = (FRAME_HEADER_LENGTH + read) as u64;
        if read < announced as usize {
            self.done = true;
            return Ok(Some(RawFrame::Truncated { offset, announced: Some(announced), present }));
        }
        self.offset += present;
        Ok(Some(RawFrame::Complete { offset, payload }))
    }
}

/// Fills `buf` from `reader` until it is full or the stream ends; the bytes read.
fn read_up_to<R: Read>(reader: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out one byte per call and fails with `Interrupted` before each.
    struct Trickle<'a> {
        bytes: &'a [u8],
        interrupt: bool,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.interrupt = !self.interrupt;
            if self.interrupt {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let Some((&first, rest)) = self.bytes.split_first() else { return Ok(0) };
            buf[0] = first;
            self.bytes = rest;
            Ok(1)
        }
    }

    #[test]
    fn frames_come_with_their_offsets_through_interrupted_one_byte_reads() {
        let stream = [0, 0, 0, 2, 0x61, 0x62, 0, 0, 0, 0, 0, 0, 0, 1, 0xf6];
        let mut reader = FrameReader::new(Trickle { bytes: &stream, interrupt: false }, 8);
        assert_eq!(reader.next_frame().unwrap(), Some(RawFrame::Complete { offset: 0, payload: vec![0x61, 0x62] }));
        assert_eq!(reader.offset(), 6);
        assert_eq!(reader.next_frame().unwrap(), Some(RawFrame::Complete { offset: 6, payload: vec![] }));
        assert_eq!(reader.next_frame().unwrap(), Some(RawFrame::Complete { offset: 10, payload: vec![0xf6] }));
        assert_eq!(reader.offset(), 15);
        assert_eq!(reader.next_frame().unwrap(), None);
    }

    #[test]
    fn an_end_inside_the_header_is_truncated_with_no_length() {
        let mut reader = FrameReader::new(&[0u8, 0, 0, 1, 0xf6, 0, 0][..], 8);
        assert!(matches!(reader.next_frame().unwrap(), Some(RawFrame::Complete { .. })));
        let truncated = reader.next_frame().unwrap().unwrap();
        assert_eq!(truncated, RawFrame::Truncated { offset: 5, announced: None, present: 2 });
        let error = truncated.error().unwrap();
        assert_eq!((error.kind(), error.rule(), error.offset()), (ErrorKind::Frame, Rule::TruncatedFrame, Some(5)));
        assert_eq!(truncated.into_payload().unwrap_err(), error);
        assert_eq!(reader.next_frame().unwrap(), None);
    }

    #[test]
    fn a_header_over_the_limit_is_refused_before_its_payload_and_ends_the_stream() {
        let stream = [0u8, 0, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9];
        let mut source = &stream[..];
        let mut reader = FrameReader::new(&mut source, 8);
        let frame = reader.next_frame().unwrap().unwrap();
        assert_eq!(
            frame.error().as_ref(),
            match &frame {
                RawFrame::TooLong { error, .. } => Some(error),
                _ => None,
            }
        );
        let RawFrame::TooLong { offset, announced, error } = frame else { panic!("expected TooLong") };
        assert_eq!((offset, announced), (0, 9));
        assert_eq!(error.kind(), ErrorKind::Frame);
        assert_eq!(error.rule(), Rule::FrameTooLong { length: 9, limit: 8 });
        assert_eq!(error.offset(), Some(0));
        assert_eq!(reader.next_frame().unwrap(), None);
        // Nothing of the payload was read.
        assert_eq!(source.len(), 9);
    }

    #[test]
    fn a_header_at_the_limit_is_read() {
        let mut reader = FrameReader::new(&[0u8, 0, 0, 2, 7, 8][..], 2);
        let frame = reader.next_frame().unwrap().unwrap();
        assert_eq!(frame.error(), None);
        assert_eq!(frame.into_payload().unwrap(), (0, vec![7, 8]));
    }

    #[test]
    fn i_o_errors_pass_through() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::ErrorKind::ConnectionReset.into())
            }
        }
        let error = FrameReader::new(Broken, 8).next_frame().unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::ConnectionReset);
    }
}
