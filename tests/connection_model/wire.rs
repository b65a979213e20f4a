//! [`ExpectedFrames`]: the frames a probe expects its connection to have queued for the
//! transport, checked when the bytes are taken.

use std::collections::VecDeque;
use std::fmt::Debug;

use pi_protocol::ProtocolError;

/// The messages a connection should have queued, in order, and their encoded length.
#[derive(Debug)]
pub struct ExpectedFrames<M> {
    messages: VecDeque<M>,
    len: usize,
}

impl<M> Default for ExpectedFrames<M> {
    fn default() -> Self {
        ExpectedFrames { messages: VecDeque::new(), len: 0 }
    }
}

impl<M: PartialEq + Debug> ExpectedFrames<M> {
    /// Expects `message`, a frame of `frame_len` bytes, if it fits under `limit` queued bytes;
    /// returns whether it did.
    pub fn queue(&mut self, message: M, frame_len: usize, limit: usize) -> bool {
        if self.len + frame_len > limit {
            return false;
        }
        self.len += frame_len;
        self.messages.push_back(message);
        true
    }

    /// The expected queued length, in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Checks that the bytes taken (`taken` long, decoded into `decoded`) are exactly the
    /// expected frames, whole and valid, then expects nothing more.
    pub fn check_taken(&mut self, taken: usize, decoded: Vec<Result<M, ProtocolError>>) {
        assert_eq!(taken, self.len, "taken bytes differ from the model");
        for message in decoded {
            let message = message.expect("a connection transmits only valid frames");
            assert_eq!(Some(message), self.messages.pop_front(), "a frame the model did not expect");
        }
        assert!(self.messages.is_empty(), "frames the model expected were not transmitted");
        self.len = 0;
    }
}
