//! [`FrameCursor`]: where the frames of a byte stream begin and end, seen from the end that
//! reads it, to know what closing that end reports (docs/PROTOCOL.md section 1, framing).

use pi_protocol::connection::{CloseReason, Violation};
use pi_protocol::{ErrorKind, ProtocolError, Rule};

/// Follows the frame headers of a stream as it is received.
#[derive(Debug, Default)]
pub struct FrameCursor {
    /// Stream offset of the frame being received.
    frame_start: u64,
    /// Bytes of that frame received so far (0: between frames).
    seen: u64,
    header: [u8; 4],
}

impl FrameCursor {
    /// Takes the next bytes of the stream.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.seen < 4 {
                let at = usize::try_from(self.seen).expect("under 4");
                let n = (4 - at).min(bytes.len());
                self.header[at..at + n].copy_from_slice(&bytes[..n]);
                self.seen += n as u64;
                bytes = &bytes[n..];
            } else {
                let n = (self.frame_length() - self.seen).min(bytes.len() as u64);
                self.seen += n;
                bytes = &bytes[usize::try_from(n).expect("at most the slice length")..];
            }
            if self.seen >= 4 && self.seen == self.frame_length() {
                self.frame_start += self.seen;
                self.seen = 0;
            }
        }
    }

    fn frame_length(&self) -> u64 {
        4 + u64::from(u32::from_be_bytes(self.header))
    }

    /// Whether the bytes so far end inside a frame.
    pub fn inside_a_frame(&self) -> bool {
        self.seen != 0
    }

    /// What closing the reading end now reports, when nothing went wrong before: `Local`
    /// between frames, the truncation of the frame it is inside otherwise.
    pub fn close_reason(&self) -> CloseReason {
        if self.inside_a_frame() {
            let error = ProtocolError::new(ErrorKind::Frame, Rule::TruncatedFrame).with_offset(self.frame_start);
            CloseReason::Violation(Violation::Decode(error))
        } else {
            CloseReason::Local
        }
    }
}
