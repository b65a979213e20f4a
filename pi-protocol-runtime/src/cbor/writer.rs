//! The canonical CBOR writer (docs/PROTOCOL.md section 3): shortest arguments, definite lengths,
//! JSON number rules.

use std::borrow::Cow;

use bytes::Bytes;

use super::reader::major;
pub use crate::number::is_encodable_number;
use crate::number::MAX_SAFE_INTEGER;
use crate::vectored::MIN_PAYLOAD_SEGMENT_LENGTH;

/// Appends canonical CBOR items to a byte buffer.
///
/// The writer never fails: callers guarantee that numbers are finite and within the safe range
/// (see [`is_encodable_number`]). It also records the shape of the opaque payloads written into
/// it, so an encoder can check the nesting and container limits without rescanning.
///
/// ```
/// use pi_protocol_runtime::Writer;
/// let mut w = Writer::new();
/// w.map_header(1);
/// w.text("a");
/// w.number(1.0);
/// assert_eq!(w.as_bytes(), &[0xa1, 0x61, b'a', 0x01]);
/// ```
#[derive(Debug, Default, Clone)]
pub struct Writer {
    buf: Vec<u8>,
    payload_depth: u32,
    payload_widest: u32,
    /// Whether payloads of at least [`MIN_PAYLOAD_SEGMENT_LENGTH`] bytes are set aside in
    /// `segments` instead of being copied into `buf`. Only the vectored frame encoder makes
    /// such a writer, and it takes the result apart with [`into_parts`](Self::into_parts).
    vectored: bool,
    /// The payloads set aside, in order, each with the offset in `buf` where it belongs.
    segments: Vec<(usize, Bytes)>,
    /// Total length of `segments`, in bytes.
    segments_len: usize,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// A writer appending to `buf` (which may already hold bytes, such as a frame header).
    #[inline]
    pub fn from_vec(buf: Vec<u8>) -> Self {
        Writer { buf, ..Self::default() }
    }

    /// A writer appending to `buf` that sets large payloads aside instead of copying them
    /// (see [`payload_shared`](Self::payload_shared)).
    #[inline]
    pub(crate) fn vectored(buf: Vec<u8>) -> Self {
        Writer { buf, vectored: true, ..Self::default() }
    }

    /// The bytes written so far.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Mutable access to the buffer (for patching a frame header in place).
    #[inline]
    pub fn as_mut_vec(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// The buffer.
    #[inline]
    pub fn into_vec(self) -> Vec<u8> {
        debug_assert!(self.segments.is_empty(), "a vectored writer is taken apart with into_parts");
        self.buf
    }

    /// The bytes written, in order, and the payloads set aside with the offset in those bytes
    /// where each belongs.
    #[inline]
    pub(crate) fn into_parts(self) -> (Vec<u8>, Vec<(usize, Bytes)>) {
        (self.buf, self.segments)
    }

    /// Length of everything written, set-aside payloads included, in bytes.
    #[inline]
    pub(crate) fn written_len(&self) -> usize {
        self.buf.len() + self.segments_len
    }

    /// Everything written from byte `start` on, set-aside payloads in their place: borrowed
    /// when none was set aside, else a copy. `start` must not lie after a set-aside payload.
    pub(crate) fn contiguous_from(&self, start: usize) -> Cow<'_, [u8]> {
        if self.segments.is_empty() {
            return Cow::Borrowed(&self.buf[start..]);
        }
        debug_assert!(self.segments[0].0 >= start);
        let mut out = Vec::with_capacity(self.written_len() - start);
        let mut from = start;
        for (at, payload) in &self.segments {
            out.extend_from_slice(&self.buf[from..*at]);
            out.extend_from_slice(payload);
            from = *at;
        }
        out.extend_from_slice(&self.buf[from..]);
        Cow::Owned(out)
    }

    /// Deepest nesting found inside any opaque payload written so far (levels below the payload).
    pub fn payload_depth(&self) -> u32 {
        self.payload_depth
    }

    /// Widest container found inside any opaque payload written so far (entries).
    pub fn payload_widest(&self) -> u32 {
        self.payload_widest
    }

    #[inline]
    fn head(&mut self, m: u8, n: u64) {
        let m = m << 5;
        if n < 24 {
            self.buf.push(m | n as u8);
        } else if n <= 0xff {
            self.buf.extend_from_slice(&[m | 24, n as u8]);
        } else if n <= 0xffff {
            let b = (n as u16).to_be_bytes();
            self.buf.extend_from_slice(&[m | 25, b[0], b[1]]);
        } else if n <= 0xffff_ffff {
            let b = (n as u32).to_be_bytes();
            self.buf.extend_from_slice(&[m | 26, b[0], b[1], b[2], b[3]]);
        } else {
            self.buf.push(m | 27);
            self.buf.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// A map head for `len` entries.
    #[inline]
    pub fn map_header(&mut self, len: usize) {
        self.head(major::MAP, len as u64);
    }

    /// An array head for `len` elements.
    #[inline]
    pub fn array_header(&mut self, len: usize) {
        self.head(major::ARRAY, len as u64);
    }

    /// A text string.
    #[inline]
    pub fn text(&mut self, s: &str) {
        if s.len() < 24 {
            // Keys and most values: a one-byte head, written inline.
            self.buf.push(0x60 | s.len() as u8);
        } else {
            self.head(major::TEXT, s.len() as u64);
        }
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// A byte string (valid in raw CBOR, never inside a message).
    #[inline]
    pub fn byte_string(&mut self, b: &[u8]) {
        self.head(major::BYTES, b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// `true` or `false`.
    #[inline]
    pub fn bool(&mut self, b: bool) {
        self.buf.push(if b { 0xf5 } else { 0xf4 });
    }

    /// `null`.
    #[inline]
    pub fn null(&mut self) {
        self.buf.push(0xf6);
    }

    /// An integer in its shortest form (major type 0 or 1).
    #[inline]
    pub fn integer(&mut self, n: i64) {
        if n >= 0 {
            self.head(major::UNSIGNED, n as u64);
        } else {
            self.head(major::NEGATIVE, !(n as u64));
        }
    }

    /// A JSON number: integral values within +-(2^53 - 1) as integers, `-0.0` and every other
    /// finite value as float64. The caller guarantees [`is_encodable_number`].
    #[inline]
    pub fn number(&mut self, n: f64) {
        if n.abs() <= MAX_SAFE_INTEGER as f64 && (n as i64) as f64 == n && !(n == 0.0 && n.is_sign_negative()) {
            self.integer(n as i64);
        } else {
            self.buf.push(0xfb);
            self.buf.extend_from_slice(&n.to_bits().to_be_bytes());
        }
    }

    /// Already-encoded CBOR, copied as is.
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// An opaque payload's validated CBOR, copied as is; its shape is recorded for limit checks.
    #[inline]
    pub fn payload(&mut self, bytes: &[u8], depth: u32, widest: u32) {
        self.buf.extend_from_slice(bytes);
        self.payload_depth = self.payload_depth.max(depth);
        self.payload_widest = self.payload_widest.max(widest);
    }

    /// Like [`payload`](Self::payload) for a payload held in shared memory: a vectored writer
    /// keeps a payload of at least [`MIN_PAYLOAD_SEGMENT_LENGTH`] bytes as a reference (a
    /// reference-count increment) instead of copying it.
    #[inline]
    pub(crate) fn payload_shared(&mut self, bytes: &Bytes, depth: u32, widest: u32) {
        if self.vectored && bytes.len() >= MIN_PAYLOAD_SEGMENT_LENGTH {
            self.segments.push((self.buf.len(), bytes.clone()));
            self.segments_len += bytes.len();
            self.payload_depth = self.payload_depth.max(depth);
            self.payload_widest = self.payload_widest.max(widest);
        } else {
            self.payload(bytes, depth, widest);
        }
    }
}
