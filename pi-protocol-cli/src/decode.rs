//! `pi-protocol decode`: a framed byte stream in, one JSON line per message out.

use std::io::{self, BufWriter, Read, Write};

use clap::Args;
use pi_protocol::runtime::FRAME_HEADER_LENGTH;
use pi_protocol::{ErrorKind, ProtocolError};

use crate::{describe, io_failure, open_input, CommonArgs, Failure};

#[derive(Args, Debug)]
pub struct DecodeArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Bytes read and pushed to the decoder at a time (at least 1).
    #[arg(long, value_name = "N", default_value_t = 64 * 1024, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub chunk_size: u64,
}

/// Feeds the input to the decoder in chunks, printing messages as they complete; exit status 1
/// at the first bad frame, after the messages before it.
pub fn run(args: &DecodeArgs) -> Result<(), Failure> {
    let (protocol, options) = args.common.protocol()?;
    let side = args.common.side.model();
    let mut input = open_input(&args.common.input)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut buf = vec![0u8; args.chunk_size as usize];
    let mut sink = Sink { out: &mut out, messages: 0, error: None, io: None };
    let mut decoder = protocol.stream_decoder(side, &options);
    let mut first = FirstFrame::new(options.frame_limit());
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_failure(e)),
        };
        if sink.messages == 0 {
            first.keep(&buf[..n]);
        }
        decoder.push(&buf[..n], &mut sink);
        if sink.messages > 0 {
            first.forget();
        }
        if sink.error.is_some() || sink.io.is_some() {
            break;
        }
    }
    if sink.error.is_none() && sink.io.is_none() {
        sink.error = decoder.end().err();
    }
    if let Some(e) = sink.io.take() {
        return Err(io_failure(e));
    }
    let (error, delivered) = (sink.error.take(), sink.messages);
    out.flush().map_err(io_failure)?;
    match error {
        Some(e) => {
            let hint = match (delivered, e.offset(), e.kind(), first.payload()) {
                (0, Some(0), ErrorKind::Schema, Some(payload)) => {
                    protocol.wrong_side_hint(side, payload, options.limits())
                }
                _ => None,
            };
            Err(Failure::input(describe(&e)).with_hint(hint))
        }
        None => Ok(()),
    }
}

/// Collects decoded messages into the output, remembering the first error.
pub struct Sink<'a, W: Write> {
    out: &'a mut W,
    messages: u64,
    error: Option<ProtocolError>,
    io: Option<io::Error>,
}

impl<W: Write> Sink<'_, W> {
    /// Writes a message as one JSON line (a built-in message is streamed from its wire
    /// encoding, so a huge payload never becomes a value tree), or remembers the first error.
    pub fn take<M: serde::Serialize>(&mut self, message: Result<M, ProtocolError>) {
        match message {
            Ok(message) => {
                self.messages += 1;
                if self.io.is_none() {
                    let written = serde_json::to_writer(&mut *self.out, &message)
                        .map_err(io::Error::from)
                        .and_then(|()| self.out.write_all(b"\n"));
                    if let Err(e) = written {
                        self.io = Some(e);
                    }
                }
            }
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(e);
                }
            }
        }
    }
}

/// The bytes of the stream's first frame, kept until a message is delivered, so that a first
/// frame the decoder refuses can be tried as the other side's message. It holds at most one
/// frame (header included) under the frame limit, as the decoder itself may.
struct FirstFrame {
    bytes: Vec<u8>,
    cap: usize,
}

impl FirstFrame {
    fn new(frame_limit: u32) -> Self {
        FirstFrame { bytes: Vec::new(), cap: FRAME_HEADER_LENGTH.saturating_add(frame_limit as usize) }
    }

    /// Keeps what `chunk` adds to the first frame.
    fn keep(&mut self, chunk: &[u8]) {
        let room = self.frame_end().unwrap_or(self.cap).min(self.cap).saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&chunk[..room.min(chunk.len())]);
    }

    /// Drops what was kept (a message was delivered: the side is right).
    fn forget(&mut self) {
        self.bytes = Vec::new();
    }

    /// Where the first frame ends, once its header arrived.
    fn frame_end(&self) -> Option<usize> {
        let header: [u8; 4] = self.bytes.get(..FRAME_HEADER_LENGTH)?.try_into().ok()?;
        Some(FRAME_HEADER_LENGTH.saturating_add(u32::from_be_bytes(header) as usize))
    }

    /// The first frame's payload, when all of it arrived.
    fn payload(&self) -> Option<&[u8]> {
        self.bytes.get(FRAME_HEADER_LENGTH..self.frame_end()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_frame_is_kept_whole_and_no_more() {
        let mut first = FirstFrame::new(16);
        first.keep(&[0, 0]);
        assert_eq!(first.payload(), None);
        first.keep(&[0, 3, 0xa0]);
        assert_eq!(first.payload(), None, "two payload bytes missing");
        first.keep(&[0xf6, 0xf6, 0, 0, 0, 1, 0xf6]);
        assert_eq!(first.payload(), Some(&[0xa0, 0xf6, 0xf6][..]));
        assert_eq!(first.bytes.len(), 7, "the second frame is not kept");
        // A header beyond the limit keeps no more than the limit allows.
        let mut big = FirstFrame::new(2);
        big.keep(&[0, 0, 0, 9, 1, 2, 3, 4]);
        assert_eq!((big.payload(), big.bytes.len()), (None, 6));
    }
}
