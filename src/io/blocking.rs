//! Blocking transport helpers over [`std::io::Read`] and [`std::io::Write`].

use std::io::{Read, Write};
use std::marker::PhantomData;

use pi_protocol_runtime::{
    decode_message, encode_message_vectored, Decode, Encode, ErrorKind, FrameReader, Rule, Validate,
};

use super::Error;
use crate::{ClientMessage, CodecOptions, ProtocolError, ServerMessage};

/// Reads framed messages of type `M` from a blocking reader (docs/PROTOCOL.md sections 1 and 7).
///
/// Each call to [`read_message`](Self::read_message) reads exactly one frame: the 4-byte
/// big-endian header, then its payload. The header is checked against `maxFrameLength` before
/// any payload byte is read, and the payload buffer grows with the bytes received (a header's
/// announced length is never allocated up front). A clean end of the stream between frames
/// yields `Ok(None)`; an end inside a frame is a `Frame`/`TruncatedFrame` error. Errors carry
/// the stream offset of the failing frame. After an error the reader is failed: later calls
/// return a `State`/`DecoderFailed` error, and the iterator ends.
///
/// The reader does no buffering of its own and reads only the bytes of the frames it returns,
/// so wrap an unbuffered source in [`std::io::BufReader`] to save system calls.
///
/// Use the aliases [`ClientMessageReader`] (on a server) and [`ServerMessageReader`] (on a
/// client), or name the message type: `MessageReader<R, my::ClientMessage>` for types a crate
/// generates from its own schema (any `M` with a [`Decode`] implementation).
///
/// ```
/// use pi_protocol::io::ClientMessageReader;
/// use pi_protocol::{encode_client_message, ClientHello, ClientMessage, Integer};
///
/// let hello = ClientMessage::Hello(ClientHello::new(Integer::from(8u8)));
/// let bytes = encode_client_message(&hello)?;
/// let mut reader = ClientMessageReader::new(&bytes[..]);
/// assert_eq!(reader.read_message()?, Some(hello));
/// assert_eq!(reader.read_message()?, None); // clean end of stream
/// # Ok::<(), pi_protocol::io::Error>(())
/// ```
pub struct MessageReader<R, M> {
    frames: FrameReader<R>,
    options: CodecOptions,
    failed: bool,
    _message: PhantomData<fn() -> M>,
}

/// Reads the messages a client sends ([`ClientMessage`]s): the server side's reader.
pub type ClientMessageReader<R> = MessageReader<R, ClientMessage>;

/// Reads the messages a server sends ([`ServerMessage`]s): the client side's reader.
pub type ServerMessageReader<R> = MessageReader<R, ServerMessage>;

impl<R, M> std::fmt::Debug for MessageReader<R, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageReader")
            .field("options", &self.options)
            .field("offset", &self.frames.offset())
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl<R: Read, M: for<'de> Decode<'de>> MessageReader<R, M> {
    /// A reader over `inner` with the default options (16 MiB frames, default CBOR limits).
    pub fn new(inner: R) -> Self {
        Self::with_options(inner, &CodecOptions::default())
    }

    /// A reader over `inner` applying `options`.
    pub fn with_options(inner: R, options: &CodecOptions) -> Self {
        MessageReader {
            frames: FrameReader::new(inner, options.frame_limit()),
            options: *options,
            failed: false,
            _message: PhantomData,
        }
    }

    /// Reads the next message; `Ok(None)` at a clean end of the stream (no byte of a next frame).
    ///
    /// # Errors
    /// [`Error::Io`] when the reader fails (interrupted reads are retried);
    /// [`Error::Protocol`] with `Frame`/`FrameTooLong` for a header above the limit,
    /// `Frame`/`TruncatedFrame` when the stream ends inside a frame, `Cbor`/`Schema` errors for
    /// a bad payload (all with the frame's stream offset), and `State`/`DecoderFailed` once an
    /// earlier call failed.
    pub fn read_message(&mut self) -> Result<Option<M>, Error> {
        if self.failed {
            return Err(ProtocolError::new(ErrorKind::State, Rule::DecoderFailed).into());
        }
        let result = self.read_inner();
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn read_inner(&mut self) -> Result<Option<M>, Error> {
        let Some(frame) = self.frames.next_frame()? else { return Ok(None) };
        let (offset, payload) = frame.into_payload()?;
        Ok(Some(decode_message::<M>(&payload, self.options.limits()).map_err(|e| e.with_offset(offset))?))
    }

    /// Stream offset, in bytes, of the next frame to read (the bytes of every frame read so far,
    /// including one whose payload failed to decode).
    pub fn offset(&self) -> u64 {
        self.frames.offset()
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        self.frames.get_ref()
    }

    /// The underlying reader, mutably (reading from it directly desynchronises the framing).
    pub fn get_mut(&mut self) -> &mut R {
        self.frames.get_mut()
    }

    /// Gives the underlying reader back.
    pub fn into_inner(self) -> R {
        self.frames.into_inner()
    }
}

/// Yields each message, then `None` at the end of the stream. An error is yielded once, and the
/// iterator ends after it.
impl<R: Read, M: for<'de> Decode<'de>> Iterator for MessageReader<R, M> {
    type Item = Result<M, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        self.read_message().transpose()
    }
}

/// Validates `message`, encodes it as one frame with the default options and writes it to
/// `writer` (docs/PROTOCOL.md sections 1 and 3): for any message type, the built-in envelopes
/// ([`write_client_message`], [`write_server_message`]) or the types a crate generates from its
/// own schema. Nothing is written when the message is refused. The writer is not flushed.
///
/// The frame is written with [`EncodedFrame::write_to`](crate::EncodedFrame::write_to): an
/// opaque payload of 4 KiB or more goes to `write_vectored` straight from its own memory
/// instead of being copied into the frame first. A small message is one buffer, written with
/// one call when the writer takes it whole; a writer without real vectored I/O gets one call per
/// segment (at most three), so put an unbuffered one behind a [`std::io::BufWriter`].
///
/// # Errors
/// [`Error::Protocol`] as [`encode_message`](crate::encode_message) (`Schema` errors for a
/// value that breaks the schema, `Encode` and `Frame` errors past the limits); [`Error::Io`]
/// when writing fails.
///
/// ```
/// use pi_protocol::io::{write_message, MessageReader};
/// use pi_protocol::{ClientHello, ClientMessage, Integer};
///
/// let hello = ClientMessage::Hello(ClientHello::new(Integer::from(8u8)));
/// let mut wire = Vec::new();
/// write_message(&mut wire, &hello)?;
/// let mut reader = MessageReader::<_, ClientMessage>::new(&wire[..]);
/// assert_eq!(reader.read_message()?, Some(hello));
/// # Ok::<(), pi_protocol::io::Error>(())
/// ```
pub fn write_message<W, M>(writer: &mut W, message: &M) -> Result<(), Error>
where
    W: Write + ?Sized,
    M: Encode + Validate,
{
    write_message_with(writer, message, &CodecOptions::default())
}

/// [`write_message`] with explicit options (frame and CBOR limits).
///
/// # Errors
/// As [`write_message`], against `options`.
pub fn write_message_with<W, M>(writer: &mut W, message: &M, options: &CodecOptions) -> Result<(), Error>
where
    W: Write + ?Sized,
    M: Encode + Validate,
{
    encode_message_vectored(message, options)?.write_to(writer)?;
    Ok(())
}

/// [`write_message`] for a [`ClientMessage`].
///
/// # Errors
/// As [`write_message`].
///
/// ```
/// use pi_protocol::io::{write_client_message, ClientMessageReader};
/// use pi_protocol::{ClientHello, ClientMessage, Integer};
///
/// let hello = ClientMessage::Hello(ClientHello::new(Integer::from(8u8)));
/// let mut wire = Vec::new();
/// write_client_message(&mut wire, &hello)?;
/// assert_eq!(wire.len(), 4 + 0x15);
/// assert_eq!(ClientMessageReader::new(&wire[..]).next().transpose()?, Some(hello));
/// # Ok::<(), pi_protocol::io::Error>(())
/// ```
pub fn write_client_message<W: Write + ?Sized>(writer: &mut W, message: &ClientMessage) -> Result<(), Error> {
    write_message(writer, message)
}

/// [`write_client_message`] with explicit options (frame and CBOR limits).
///
/// # Errors
/// As [`write_message`], against `options`.
pub fn write_client_message_with<W: Write + ?Sized>(
    writer: &mut W,
    message: &ClientMessage,
    options: &CodecOptions,
) -> Result<(), Error> {
    write_message_with(writer, message, options)
}

/// [`write_message`] for a [`ServerMessage`].
///
/// # Errors
/// As [`write_message`].
pub fn write_server_message<W: Write + ?Sized>(writer: &mut W, message: &ServerMessage) -> Result<(), Error> {
    write_message(writer, message)
}

/// [`write_server_message`] with explicit options.
///
/// # Errors
/// As [`write_message`], against `options`.
pub fn write_server_message_with<W: Write + ?Sized>(
    writer: &mut W,
    message: &ServerMessage,
    options: &CodecOptions,
) -> Result<(), Error> {
    write_message_with(writer, message, options)
}

#[cfg(test)]
mod tests {
    use std::io::{self, Read};

    use super::*;
    use crate::Attachment;

    /// Hands out one byte per read, and fails any read past `limit` bytes.
    struct Trickle<'a> {
        data: &'a [u8],
        pos: usize,
        limit: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            assert!(self.pos < self.limit, "read past byte {}", self.limit);
            if self.pos >= self.data.len() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.data[self.pos];
            self.pos += 1;
            Ok(1)
        }
    }

    #[test]
    fn oversized_header_is_refused_before_its_payload_is_read() {
        let mut data = vec![0, 0, 0x01, 0x00]; // announces 256 bytes
        data.extend(std::iter::repeat_n(0xf6, 256));
        let options = CodecOptions::new().max_frame_length(255).unwrap();
        let mut reader = ClientMessageReader::with_options(Trickle { data: &data, pos: 0, limit: 4 }, &options);
        let error = reader.read_message().unwrap_err();
        assert_eq!(error.protocol().unwrap().rule(), Rule::FrameTooLong { length: 256, limit: 255 });
        assert_eq!(error.protocol().unwrap().offset(), Some(0));
    }

    #[test]
    fn end_inside_a_header_is_truncated_and_empty_stream_is_clean() {
        let mut reader = ClientMessageReader::new(&[0u8, 0][..]);
        assert_eq!(reader.read_message().unwrap_err().protocol().unwrap().rule(), Rule::TruncatedFrame);
        assert!(ClientMessageReader::new(&[][..]).read_message().unwrap().is_none());
    }

    #[test]
    fn io_errors_pass_through() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
            }
        }
        let error = ServerMessageReader::new(Broken).read_message().unwrap_err();
        assert_eq!(error.io().map(io::Error::kind), Some(io::ErrorKind::ConnectionReset));
    }

    #[test]
    fn writers_validate_and_round_trip() {
        let message = ServerMessage::Attachment(Attachment::new(None));
        let mut wire = Vec::new();
        write_server_message(&mut wire, &message).unwrap();
        assert_eq!(wire, crate::encode_server_message(&message).unwrap());
        let small = CodecOptions::new().max_frame_length(10).unwrap();
        let mut refused = Vec::new();
        assert!(write_server_message_with(&mut refused, &message, &small).is_err());
        assert!(refused.is_empty());
        let bad = ClientMessage::Hello(crate::ClientHello::new(crate::Integer::new(-3).unwrap()));
        let error = write_client_message(&mut refused, &bad).unwrap_err();
        assert_eq!(error.protocol().unwrap().kind(), ErrorKind::Schema);
        assert!(refused.is_empty());
        let mut reader = ServerMessageReader::new(&wire[..]);
        assert_eq!(reader.read_message().unwrap(), Some(message));
        assert_eq!(reader.offset(), wire.len() as u64);
    }
}
