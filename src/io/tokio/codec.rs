//! [`tokio_util::codec`] framing of Pi messages (feature `tokio`).

use std::marker::PhantomData;

use bytes::{BufMut, BytesMut};
use pi_protocol_runtime::{decode_message_shared, encode_message_vectored, Decode, Encode, ErrorKind, Rule, Validate};
use pi_protocol_runtime::{undecoded_frame_error, FrameHeader, FRAME_HEADER_LENGTH};
use tokio_util::codec::{Decoder, Encoder};

use crate::io::Error;
use crate::{ClientMessage, CodecOptions, ProtocolError, ServerMessage};

/// A [`Decoder`] of `In` messages and [`Encoder`] of `Out` messages over Pi framing
/// (docs/PROTOCOL.md sections 1, 3 and 7), for `tokio_util::codec::{Framed, FramedRead, FramedWrite}`.
///
/// Use the aliases [`ServerCodec`] (a server: reads client messages, writes server messages) and
/// [`ClientCodec`] (the mirror). A crate that generates its own message types from a schema
/// (`pi_protocol_gen::Builder`) names them: `MessageCodec<my::ClientMessage,
/// my::ServerMessage>` (`In` needs [`Decode`], `Out` [`Encode`] and [`Validate`], which every
/// generated type has).
///
/// Decoding applies the same rules as [`ClientMessageDecoder`](crate::ClientMessageDecoder):
/// the 4-byte header is checked against `maxFrameLength` as soon as it is in the buffer, before
/// any of the payload is waited for; the codec never reserves buffer space for an announced
/// length, so the read buffer grows only with the bytes that arrive; payloads decode zero-copy
/// out of the read buffer; errors carry the stream offset of the failing frame, and when a frame
/// does not decode, a header over the limit after it in the read buffer is the error instead
/// ([`undecoded_frame_error`](pi_protocol_runtime::undecoded_frame_error)). After an error
/// the codec is failed and every later `decode` returns a `State`/`DecoderFailed` error (the
/// `Framed` stream itself ends after yielding the first error). At end of stream, a partial
/// frame is a `Frame`/`TruncatedFrame` error.
///
/// Encoding validates the message and writes one frame; a refused message writes nothing. The
/// codec is an [`Encoder`] of `Out` alone, so `framed.flush()` and `framed.close()` work
/// without naming an item type.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), pi_protocol::io::Error> {
/// use futures_util::{SinkExt, StreamExt};
/// use pi_protocol::io::{ClientCodec, ServerCodec};
/// use pi_protocol::{ClientHello, ClientMessage, Integer};
/// use tokio_util::codec::Framed;
///
/// let (client_io, server_io) = tokio::io::duplex(1024);
/// let mut client = Framed::new(client_io, ClientCodec::new());
/// let mut server = Framed::new(server_io, ServerCodec::new());
/// let hello = ClientMessage::Hello(ClientHello::new(Integer::from(8u8)));
/// client.send(hello.clone()).await?;
/// client.flush().await?;
/// assert_eq!(server.next().await.transpose()?, Some(hello));
/// client.close().await?;
/// assert!(server.next().await.is_none());
/// # Ok(()) }
/// ```
///
/// To send messages you keep (by reference) or share between connections (in an
/// [`Arc`](std::sync::Arc)), make that the codec's `Out`: references and `Arc`s of a message
/// encode as the message.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), pi_protocol::io::Error> {
/// use futures_util::SinkExt;
/// use pi_protocol::io::MessageCodec;
/// use pi_protocol::{encode_client_message, ClientHello, ClientMessage, Integer, ServerMessage};
/// use tokio_util::codec::FramedWrite;
///
/// let hello = ClientMessage::Hello(ClientHello::new(Integer::from(8u8)));
/// let mut sink = FramedWrite::new(Vec::new(), MessageCodec::<ServerMessage, &ClientMessage>::new());
/// sink.send(&hello).await?;
/// sink.send(&hello).await?;
/// assert_eq!(sink.get_ref().len(), 2 * encode_client_message(&hello)?.len());
/// # Ok(()) }
/// ```
pub struct MessageCodec<In, Out> {
    options: CodecOptions,
    /// Stream offset of the first byte in the read buffer (the next frame's header).
    offset: u64,
    failed: bool,
    _messages: PhantomData<fn(Out) -> In>,
}

/// The server side's codec: decodes [`ClientMessage`]s, encodes [`ServerMessage`]s.
pub type ServerCodec = MessageCodec<ClientMessage, ServerMessage>;

/// The client side's codec: decodes [`ServerMessage`]s, encodes [`ClientMessage`]s.
pub type ClientCodec = MessageCodec<ServerMessage, ClientMessage>;

impl<In, Out> std::fmt::Debug for MessageCodec<In, Out> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageCodec")
            .field("options", &self.options)
            .field("offset", &self.offset)
            .field("failed", &self.failed)
            .finish()
    }
}

impl<In, Out> Default for MessageCodec<In, Out> {
    fn default() -> Self {
        Self::with_options(&CodecOptions::default())
    }
}

impl<In, Out> Clone for MessageCodec<In, Out> {
    /// A fresh codec with the same options (decoding state is not copied).
    fn clone(&self) -> Self {
        Self::with_options(&self.options)
    }
}

impl<In, Out> MessageCodec<In, Out> {
    /// A codec with the default options (16 MiB frames, default CBOR limits).
    pub fn new() -> Self {
        Self::default()
    }

    /// A codec applying `options` in both directions.
    pub fn with_options(options: &CodecOptions) -> Self {
        MessageCodec { options: *options, offset: 0, failed: false, _messages: PhantomData }
    }

    /// The options in force.
    pub fn options(&self) -> &CodecOptions {
        &self.options
    }

    /// Stream offset, in bytes, of the first byte not yet part of a decoded message.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn fail(&mut self, error: ProtocolError) -> Error {
        self.failed = true;
        error.into()
    }
}

impl<In: for<'de> Decode<'de>, Out> Decoder for MessageCodec<In, Out> {
    type Item = In;
    type Error = Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<In>, Error> {
        if self.failed {
            return Err(ProtocolError::new(ErrorKind::State, Rule::DecoderFailed).into());
        }
        if src.len() < FRAME_HEADER_LENGTH {
            return Ok(None);
        }
        let header = FrameHeader::from_bytes([src[0], src[1], src[2], src[3]]);
        let len = match header.check(self.options.frame_limit(), self.offset) {
            Ok(len) => len,
            Err(error) => return Err(self.fail(error)),
        };
        let total = FRAME_HEADER_LENGTH + len;
        if src.len() < total {
            // Deliberately no `src.reserve(total)`: the buffer grows only as bytes arrive.
            return Ok(None);
        }
        let frame = src.split_to(total).freeze();
        let payload = frame.slice(FRAME_HEADER_LENGTH..);
        match decode_message_shared::<In>(&payload, self.options.limits()) {
            Ok(message) => {
                self.offset += total as u64;
                Ok(Some(message))
            }
            Err(error) => {
                // What follows in the read buffer is this frame's chunk: the runtime's rule
                // says which error that makes (a header over the limit in it wins).
                let rest_offset = self.offset + total as u64;
                let error =
                    undecoded_frame_error(error.with_offset(self.offset), src, self.options.frame_limit(), rest_offset);
                Err(self.fail(error))
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<In>, Error> {
        match self.decode(src)? {
            Some(message) => Ok(Some(message)),
            None if src.is_empty() => Ok(None),
            None => {
                let error = ProtocolError::new(ErrorKind::Frame, Rule::TruncatedFrame).with_offset(self.offset);
                src.clear();
                Err(self.fail(error))
            }
        }
    }
}

/// Encodes `Out` messages. This is the codec's only [`Encoder`], so that a `Framed`'s
/// `flush()` and `close()` need no item type named. To send messages without giving them up,
/// make the codec's `Out` a reference or an `Arc` (`MessageCodec<ClientMessage,
/// &ServerMessage>`; see [`MessageCodec`]).
impl<In, Out: Encode + Validate> Encoder<Out> for MessageCodec<In, Out> {
    type Error = Error;

    fn encode(&mut self, item: Out, dst: &mut BytesMut) -> Result<(), Error> {
        // Built as segments, so that a large payload is copied once, straight into `dst`.
        let frame = encode_message_vectored(&item, &self.options)?;
        dst.reserve(frame.len());
        dst.put(frame);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use futures_util::{SinkExt, StreamExt};
    use pi_protocol_runtime::Payload;
    use serde_json::json;
    use tokio::io::AsyncWriteExt;
    use tokio_util::codec::{FramedRead, FramedWrite};

    use super::*;
    use crate::*;

    const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

    fn request(id: &str) -> ClientMessage {
        ClientMessage::Request(Request::new(
            RequestId::new(id).unwrap(),
            RpcTarget::Server(ServerTarget::new(ServerId::new(SERVER).unwrap())),
            Payload::from_value(&json!({"serviceId": "$chord.service", "member": "catalogue", "args": []})).unwrap(),
        ))
    }

    fn protocol(error: &Error) -> &ProtocolError {
        error.protocol().expect("a protocol error")
    }

    #[tokio::test]
    async fn duplex_with_one_byte_writes() {
        let (mut tx, rx) = tokio::io::duplex(3);
        let messages = vec![request("a"), request("b"), ClientMessage::Hello(ClientHello::new(Integer::from(7u8)))];
        let mut wire = Vec::new();
        for m in &messages {
            wire.extend(encode_client_message(m).unwrap());
        }
        let writer = tokio::spawn(async move {
            for byte in wire {
                tx.write_all(&[byte]).await.unwrap();
            }
        });
        let got: Vec<ClientMessage> = FramedRead::new(rx, ServerCodec::new()).map(Result::unwrap).collect().await;
        writer.await.unwrap();
        assert_eq!(got, messages);
    }

    #[tokio::test]
    async fn oversized_header_fails_before_the_payload_arrives() {
        let (mut tx, rx) = tokio::io::duplex(4096);
        let options = CodecOptions::new().max_frame_length(1000).unwrap();
        let mut framed = FramedRead::new(rx, ServerCodec::with_options(&options));
        let good = encode_client_message(&request("a")).unwrap();
        tx.write_all(&good).await.unwrap();
        tx.write_all(&[0, 0, 3, 0xe9]).await.unwrap(); // 1001: header only; the writer stays open
        assert_eq!(framed.next().await.unwrap().unwrap(), request("a"));
        let error = framed.next().await.unwrap().unwrap_err();
        assert_eq!(protocol(&error).rule(), Rule::FrameTooLong { length: 1001, limit: 1000 });
        assert_eq!(protocol(&error).offset(), Some(good.len() as u64));
        assert!(framed.next().await.is_none(), "the stream ends after an error");
    }

    /// A frame that does not decode, a frame that does, then a header over the limit, all in
    /// the read buffer at once: the header's error wins, at its own offset, as it does in the
    /// runtime's decoder fed the same bytes as one chunk (docs/PROTOCOL.md section 6).
    #[test]
    fn later_oversized_header_in_the_buffer_wins_over_a_frame_that_does_not_decode() {
        let options = CodecOptions::new().max_frame_length(1000).unwrap();
        let good = encode_client_message(&request("a")).unwrap();
        let bad = [0, 0, 0, 1, 0xff]; // a lone CBOR break byte
        let stream = [&good[..], &bad, &good, &[0, 0, 3, 0xe9]].concat(); // 1001: header only
        let at = (2 * good.len() + bad.len()) as u64;
        let mut codec = ServerCodec::with_options(&options);
        let mut buf = BytesMut::from(&stream[..]);
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(request("a")));
        let error = codec.decode(&mut buf).unwrap_err();
        assert_eq!(protocol(&error).kind(), ErrorKind::Frame);
        assert_eq!(protocol(&error).rule(), Rule::FrameTooLong { length: 1001, limit: 1000 });
        assert_eq!(protocol(&error).offset(), Some(at));
        let (messages, runtime) = ClientMessageDecoder::with_options(&options).decode_all([&stream[..]]);
        assert_eq!(messages, [request("a")]);
        assert_eq!(runtime.as_ref(), Some(protocol(&error)));
        // Without the header, the frame's own error stands, at the frame's offset.
        let mut codec = ServerCodec::with_options(&options);
        let mut buf = BytesMut::from(&stream[..stream.len() - 4]);
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(request("a")));
        let error = codec.decode(&mut buf).unwrap_err();
        assert_eq!(protocol(&error).kind(), ErrorKind::Cbor);
        assert_eq!(protocol(&error).offset(), Some(good.len() as u64));
        let (_, runtime) = ClientMessageDecoder::with_options(&options).decode_all([&stream[..stream.len() - 4]]);
        assert_eq!(runtime.as_ref(), Some(protocol(&error)));
    }

    #[test]
    fn huge_announced_length_reserves_nothing() {
        let mut codec = ServerCodec::new();
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&[0, 0xff, 0xff, 0xff, 0xa1]); // announces 16 MiB - 1 bytes
        let before = buf.capacity();
        assert!(codec.decode(&mut buf).unwrap().is_none());
        assert_eq!(buf.capacity(), before);
        assert!(buf.capacity() < 1024);
    }

    #[test]
    fn truncated_frame_at_eof_and_failed_state() {
        let mut codec = ClientCodec::new();
        let frame = encode_server_message(&ServerMessage::Attachment(Attachment::new(None))).unwrap();
        let mut buf = BytesMut::from(&frame[..]);
        buf.extend_from_slice(&frame[..frame.len() - 1]);
        assert!(codec.decode_eof(&mut buf).unwrap().is_some());
        let error = codec.decode_eof(&mut buf).unwrap_err();
        assert_eq!(protocol(&error).rule(), Rule::TruncatedFrame);
        assert_eq!(protocol(&error).offset(), Some(frame.len() as u64));
        let again = codec.decode(&mut BytesMut::from(&frame[..])).unwrap_err();
        assert_eq!(protocol(&again).rule(), Rule::DecoderFailed);
    }

    #[tokio::test]
    async fn encoder_refuses_invalid_messages_and_writes_nothing() {
        let mut sink = FramedWrite::new(Vec::new(), ClientCodec::new());
        let bad = ClientMessage::Hello(ClientHello::new(Integer::new(-1).unwrap()));
        let error = sink.send(bad).await.unwrap_err();
        assert_eq!(protocol(&error).kind(), ErrorKind::Schema);
        sink.send(request("x")).await.unwrap();
        assert_eq!(sink.get_ref(), &encode_client_message(&request("x")).unwrap());
    }

    #[tokio::test]
    async fn encoder_honours_the_frame_limit() {
        // The frame limit alone (maxFrameLength also lowers maxByteLength; restore that).
        let options = CodecOptions::new().max_frame_length(10).unwrap().cbor_limits(CborLimits::default());
        let mut sink = FramedWrite::new(Vec::new(), ServerCodec::with_options(&options));
        let message = ServerMessage::Attachment(Attachment::new(None));
        let error = sink.send(message).await.unwrap_err();
        assert!(matches!(protocol(&error).rule(), Rule::EncodedFrameTooLong { length: 29, limit: 10 }));
        assert!(sink.get_ref().is_empty());
    }
}
