//! Raw frame splitting for `inspect` and `stats`: one frame at a time from any reader, checking
//! each header against the frame limit before reading the payload (docs/PROTOCOL.md section 1).

use std::io::{self, Read};

use pi_protocol::runtime::FRAME_HEADER_LENGTH;

/// One unit of a framed stream.
#[derive(Debug)]
pub enum RawFrame {
    /// A complete frame.
    Complete {
        /// Stream offset of its header.
        offset: u64,
        /// The payload bytes.
        payload: Vec<u8>,
    },
    /// The stream ended inside a frame.
    Truncated {
        /// Stream offset of its header.
        offset: u64,
        /// Announced payload length, when the whole header arrived.
        announced: Option<u32>,
        /// Bytes present after the offset (header included).
        present: u64,
    },
    /// A header announcing more than the limit; the stream cannot be followed past it.
    TooLong {
        /// Stream offset of the header.
        offset: u64,
        /// Announced payload length.
        announced: u32,
    },
}

/// Splits a stream into [`RawFrame`]s; ends after a truncated or oversized frame.
pub struct FrameSplitter<R> {
    inner: R,
    limit: u32,
    offset: u64,
    done: bool,
}

impl<R: Read> FrameSplitter<R> {
    pub fn new(inner: R, limit: u32) -> Self {
        FrameSplitter { inner, limit, offset: 0, done: false }
    }

    /// The next frame, `None` at a clean end.
    pub fn next_frame(&mut self) -> io::Result<Option<RawFrame>> {
        if self.done {
            return Ok(None);
        }
        let offset = self.offset;
        // `take` + `read_to_end` reads until the header is complete or the stream ends (retrying
        // interrupted reads), and says how much arrived.
        let mut header = Vec::with_capacity(FRAME_HEADER_LENGTH);
        let got = (&mut self.inner).take(FRAME_HEADER_LENGTH as u64).read_to_end(&mut header)?;
        if got == 0 {
            self.done = true;
            return Ok(None);
        }
        if got < FRAME_HEADER_LENGTH {
            self.done = true;
            return Ok(Some(RawFrame::Truncated { offset, announced: None, present: got as u64 }));
        }
        let announced = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        if announced > self.limit {
            self.done = true;
            return Ok(Some(RawFrame::TooLong { offset, announced }));
        }
        let mut payload = Vec::new();
        let read = (&mut self.inner).take(u64::from(announced)).read_to_end(&mut payload)?;
        if read < announced as usize {
            self.done = true;
            let present = (FRAME_HEADER_LENGTH + read) as u64;
            return Ok(Some(RawFrame::Truncated { offset, announced: Some(announced), present }));
        }
        self.offset += (FRAME_HEADER_LENGTH + read) as u64;
        Ok(Some(RawFrame::Complete { offset, payload }))
    }
}
