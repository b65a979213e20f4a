//! Frames as lists of segments (docs/PROTOCOL.md section 1), so that large opaque payloads reach the
//! transport without being copied: see [`EncodedFrame`] and
//! [`encode_message_vectored`](crate::encode_message_vectored).

use std::fmt;
use std::io::{self, IoSlice, Write};

use bytes::{Buf, Bytes};

/// Shortest opaque payload, in bytes, that [`encode_message_vectored`](crate::encode_message_vectored)
/// keeps as a segment of its own; shorter payloads are copied in with the envelope.
///
/// A separate segment saves copying the payload, but it costs a reference-count update, an
/// `IoSlice` in every vectored write and, with a writer that has no real vectored I/O, a write
/// call of its own. Copying 4 KiB takes a fraction of a microsecond, less than a system call, so
/// below this size one contiguous buffer is the cheaper frame to send, and ordinary messages
/// stay a single segment. The value is one memory page, a round figure rather than a measured
/// optimum.
pub const MIN_PAYLOAD_SEGMENT_LENGTH: usize = 4096;

/// One encoded frame (docs/PROTOCOL.md section 1: a 4-byte big-endian payload length, then the
/// payload) held as an ordered list of byte segments instead of one buffer.
///
/// The 4-byte header and the envelope's CBOR are owned bytes; every opaque payload of at least
/// [`MIN_PAYLOAD_SEGMENT_LENGTH`] bytes is a segment of its own that shares the payload's
/// memory (a [`Bytes`] clone: a reference-count increment, no copy). Read in order, the
/// segments are exactly the bytes [`encode_message`](crate::encode_message) returns for the same
/// message; a frame without large payloads is a single segment.
///
/// The frame is a [`Buf`]: [`len`](Self::len), [`segments`](Self::segments),
/// [`to_vec`](Self::to_vec) and [`write_to`](Self::write_to) see the bytes not yet consumed
/// through [`Buf::advance`] (all of them, for a fresh frame), so it can be handed to
/// `tokio::io::AsyncWriteExt::write_all_buf`, chained with [`Buf::chain`], or gathered into
/// `IoSlice`s with [`Buf::chunks_vectored`].
///
/// ```
/// use bytes::Buf;
/// use pi_protocol_runtime::{encode_message, encode_message_vectored, CodecOptions, Payload};
///
/// // A message whose whole item is a 10,000-character string.
/// let message = Payload::from_value(&serde_json::json!("x".repeat(10_000)))?;
/// let options = CodecOptions::default();
/// let mut frame = encode_message_vectored(&message, &options)?;
/// let contiguous = encode_message(&message, &options)?;
/// assert_eq!(frame.len(), contiguous.len());
/// assert_eq!(frame.to_vec(), contiguous);
///
/// // Two segments: the header, then the payload's own memory.
/// let segments: Vec<&[u8]> = frame.segments().collect();
/// assert_eq!(segments[0], &[0x00, 0x00, 0x27, 0x13][..]); // 10,003 payload bytes
/// assert_eq!(segments[1].as_ptr(), message.as_cbor().as_ptr());
///
/// // As a `Buf`, consumed as it is written.
/// let mut wire = Vec::new();
/// frame.write_to(&mut wire)?;
/// assert_eq!(wire, contiguous);
/// assert!(!frame.has_remaining());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct EncodedFrame {
    /// Header and envelope bytes; the payloads in `payloads` go between them.
    inline: Vec<u8>,
    /// The payloads kept as segments, in order, each with the offset in `inline` it goes at.
    payloads: Vec<(usize, Bytes)>,
    /// Bytes of `inline` consumed.
    inline_pos: usize,
    /// Index of the first payload not wholly consumed (consumed parts are advanced away).
    next: usize,
    /// Bytes not yet consumed.
    remaining: usize,
}

impl EncodedFrame {
    /// The frame made of `inline` with each payload inserted at its offset (payloads not empty,
    /// offsets in increasing order, at most `inline.len()`).
    #[inline]
    pub(crate) fn from_parts(inline: Vec<u8>, payloads: Vec<(usize, Bytes)>) -> Self {
        debug_assert!(payloads.iter().all(|(_, payload)| !payload.is_empty()));
        debug_assert!(payloads.windows(2).all(|w| w[0].0 <= w[1].0));
        debug_assert!(payloads.last().is_none_or(|(at, _)| *at <= inline.len()));
        let remaining = inline.len() + payloads.iter().map(|(_, payload)| payload.len()).sum::<usize>();
        EncodedFrame { inline, payloads, inline_pos: 0, next: 0, remaining }
    }

    /// Length in bytes of what is left of the frame (the whole frame, header included, until
    /// something is consumed).
    pub fn len(&self) -> usize {
        self.remaining
    }

    /// Whether the whole frame has been consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining == 0
    }

    /// What is left of the frame as its segments, in order; none is empty. A fresh frame
    /// without payloads of [`MIN_PAYLOAD_SEGMENT_LENGTH`] bytes or more has one segment.
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let pending = &self.payloads[self.next..];
        let tail_from = pending.last().map_or(self.inline_pos, |(at, _)| *at);
        pending
            .iter()
            .enumerate()
            .flat_map(move |(i, (at, payload))| {
                let from = if i == 0 { self.inline_pos } else { pending[i - 1].0 };
                [&self.inline[from..*at], &payload[..]]
            })
            .chain(std::iter::once(&self.inline[tail_from..]))
            .filter(|segment| !segment.is_empty())
    }

    /// What is left of the frame copied into one contiguous buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.remaining);
        for segment in self.segments() {
            out.extend_from_slice(segment);
        }
        out
    }

    /// Writes what is left of the frame to `writer` with [`Write::write_vectored`], calling it
    /// until everything is written and consuming the frame as bytes are accepted. Interrupted
    /// writes are retried. The writer is not flushed.
    ///
    /// A writer without real vectored I/O (the default `write_vectored`) writes one segment per
    /// call, so such a writer sees one write per segment; put it behind a
    /// [`std::io::BufWriter`] to merge them.
    ///
    /// # Errors
    /// The first error of `writer` other than `Interrupted`, and `WriteZero` when it accepts
    /// nothing. The frame then holds the bytes not yet written, so a caller can resume (after
    /// `WouldBlock`, say).
    pub fn write_to<W: Write + ?Sized>(&mut self, writer: &mut W) -> io::Result<()> {
        // An envelope carries at most one opaque payload, so a frame has at most three
        // segments; any beyond these slots would go out in later rounds.
        const MAX_SLICES: usize = 16;
        while self.has_remaining() {
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            let count = self.chunks_vectored(&mut slices);
            match writer.write_vectored(&slices[..count]) {
                Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "failed to write the whole frame")),
                Ok(written) => self.advance(written),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl Buf for EncodedFrame {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        self.segments().next().unwrap_or(&[])
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut filled = 0;
        for (slot, segment) in dst.iter_mut().zip(self.segments()) {
            *slot = IoSlice::new(segment);
            filled += 1;
        }
        filled
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(cnt <= self.remaining, "cannot advance {cnt} bytes: {} remain in the frame", self.remaining);
        self.remaining -= cnt;
        while cnt > 0 {
            match self.payloads.get_mut(self.next) {
                Some((at, payload)) if *at == self.inline_pos => {
                    let n = cnt.min(payload.len());
                    payload.advance(n);
                    cnt -= n;
                    if payload.is_empty() {
                        self.next += 1;
                    }
                }
                next => {
                    let end = next.map_or(self.inline.len(), |(at, _)| *at);
                    let n = cnt.min(end - self.inline_pos);
                    self.inline_pos += n;
                    cnt -= n;
                }
            }
        }
    }
}

impl fmt::Debug for EncodedFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncodedFrame")
            .field("len", &self.remaining)
            .field("segments", &self.segments().map(<[u8]>::len).collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> EncodedFrame {
        // "ab" + P1 + "cd" + P2 + P3 + "e", with P2 and P3 adjacent.
        let payloads =
            vec![(2, Bytes::from_static(b"11111")), (4, Bytes::from_static(b"222")), (4, Bytes::from_static(b"33"))];
        EncodedFrame::from_parts(b"abcde".to_vec(), payloads)
    }

    #[test]
    fn segments_interleave_owned_bytes_and_payloads() {
        let f = frame();
        let segments: Vec<&[u8]> = f.segments().collect();
        assert_eq!(segments, vec![&b"ab"[..], b"11111", b"cd", b"222", b"33", b"e"]);
        assert_eq!(f.len(), 15);
        assert_eq!(f.to_vec(), b"ab11111cd22233e");
    }

    #[test]
    fn every_split_of_advance_reaches_the_same_bytes() {
        let whole = frame().to_vec();
        for step in 1..=whole.len() {
            let mut f = frame();
            let mut got = Vec::new();
            while f.has_remaining() {
                let n = step.min(f.chunk().len());
                got.extend_from_slice(&f.chunk()[..n]);
                f.advance(n);
                assert_eq!(f.to_vec(), whole[got.len()..], "step {step}");
                assert_eq!(f.len(), whole.len() - got.len());
            }
            assert_eq!(got, whole);
            assert!(f.chunk().is_empty());
            assert_eq!(f.segments().count(), 0);
        }
    }

    #[test]
    fn advancing_across_segments_at_once() {
        let mut f = frame();
        f.advance(8); // "ab", "11111", "c"
        assert_eq!(f.to_vec(), b"d22233e");
        f.advance(4); // "d", "222"
        assert_eq!(f.chunk(), b"33");
        f.advance(3);
        assert!(f.is_empty());
    }

    #[test]
    #[should_panic(expected = "cannot advance")]
    fn advancing_past_the_end_panics() {
        frame().advance(16);
    }
}
