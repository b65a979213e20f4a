//! Vectored frame encoding (docs/PROTOCOL.md section 1): an `EncodedFrame` holds the same bytes, in
//! the same order, as the contiguous encoder writes, however it is read (copied out, walked as a
//! `Buf`, gathered into `IoSlice`s, written through `write_vectored` in pieces); it refuses
//! exactly the messages the contiguous encoder refuses, with the same errors; and a large payload
//! is the payload's own memory, not a copy.

mod common;

use std::io::{self, IoSlice, Write};

use bytes::{Buf, Bytes};
use common::repo_file;
use pi_protocol::runtime::{encode_message, encode_message_vectored, Encode, Validate, Writer};
use pi_protocol::{
    encode_client_message, encode_client_message_vectored, encode_client_message_vectored_with, encode_server_message,
    encode_server_message_vectored, encode_server_message_vectored_with, CborLimits, ClientMessage,
    ClientMessageDecoder, CodecOptions, EncodedFrame, ErrorKind, Payload, ProtocolError, Request, RequestId, Response,
    RpcTarget, Rule, ServerMessage, ServerMessageDecoder, ServerTarget, ServiceUpdate, SubscriptionId, SuccessResponse,
    MIN_PAYLOAD_SEGMENT_LENGTH,
};
use serde_json::{json, Value};

const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

fn request(call: Payload) -> ClientMessage {
    ClientMessage::Request(Request::new(
        RequestId::new("req-1").unwrap(),
        RpcTarget::Server(ServerTarget::new(pi_protocol::ServerId::new(SERVER).unwrap())),
        call,
    ))
}

/// A call carrying one string of `len` characters (about `len` bytes of payload).
fn call_with_string(len: usize) -> Payload {
    Payload::from_value(&json!({"serviceId": "$chord.service", "member": "upload", "args": ["y".repeat(len)]})).unwrap()
}

/// A string payload of exactly `len` bytes of CBOR (`len` from 259 to 65,537).
fn payload_of_length(len: usize) -> Payload {
    // A text head of 3 bytes: the major type, then a 2-byte length.
    let payload = Payload::from_value(&Value::String("z".repeat(len - 3))).unwrap();
    assert_eq!(payload.as_cbor().len(), len);
    payload
}

/// Accepts at most `max` bytes per call, taken across as many slices as needed, and reports
/// `Interrupted` on every third call.
struct Dribble {
    out: Vec<u8>,
    max: usize,
    calls: usize,
}

impl Dribble {
    fn new(max: usize) -> Self {
        Dribble { out: Vec::new(), max, calls: 0 }
    }
}

impl Write for Dribble {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls % 3 == 0 {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "signal"));
        }
        let mut taken = 0;
        for buf in bufs {
            let n = buf.len().min(self.max - taken);
            self.out.extend_from_slice(&buf[..n]);
            taken += n;
            if taken == self.max {
                break;
            }
        }
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads `frame` back in every supported way and checks each against `expected`.
fn assert_same_bytes(frame: &EncodedFrame, expected: &[u8], what: &str) {
    assert_eq!(frame.len(), expected.len(), "{what}: len");
    assert_eq!(frame.remaining(), expected.len(), "{what}: remaining");
    assert_eq!(frame.to_vec(), expected, "{what}: to_vec");
    assert_eq!(frame.segments().collect::<Vec<_>>().concat(), expected, "{what}: segments");
    assert!(frame.segments().all(|s| !s.is_empty()), "{what}: no empty segment");

    let mut slices = [IoSlice::new(&[]); 8];
    let n = frame.chunks_vectored(&mut slices);
    assert_eq!(n, frame.segments().count(), "{what}: chunks_vectored fills one slice per segment");
    let gathered: Vec<u8> = slices[..n].iter().flat_map(|s| s.iter().copied()).collect();
    assert_eq!(gathered, expected, "{what}: chunks_vectored");

    // `Buf` traversal chunk by chunk, then in 5-byte steps that straddle segment boundaries.
    let mut walk = frame.clone();
    let mut got = Vec::new();
    while walk.has_remaining() {
        let chunk = walk.chunk();
        assert!(!chunk.is_empty());
        got.extend_from_slice(chunk);
        let n = chunk.len();
        walk.advance(n);
    }
    assert_eq!(got, expected, "{what}: chunk/advance");
    let mut walk = frame.clone();
    let mut got = Vec::new();
    while walk.has_remaining() {
        let n = walk.remaining().min(5);
        got.extend_from_slice(&walk.copy_to_bytes(n));
    }
    assert_eq!(got, expected, "{what}: copy_to_bytes(5)");
    let mut whole = frame.clone();
    assert_eq!(whole.copy_to_bytes(expected.len()), Bytes::copy_from_slice(expected), "{what}: copy_to_bytes");

    let mut into_vec = Vec::new();
    let mut consumed = frame.clone();
    consumed.write_to(&mut into_vec).unwrap();
    assert_eq!(into_vec, expected, "{what}: write_to(Vec)");
    assert!(consumed.is_empty() && consumed.segments().next().is_none(), "{what}: write_to consumes");

    let mut dribble = Dribble::new(3);
    frame.clone().write_to(&mut dribble).unwrap();
    assert_eq!(dribble.out, expected, "{what}: write_to(3 bytes per call)");
    let writes = dribble.calls - dribble.calls / 3;
    assert_eq!(writes, expected.len().div_ceil(3), "{what}: every call but the interrupted ones took 3 bytes");
}

#[test]
fn every_captured_server_message_encodes_to_the_same_bytes() {
    let stream = repo_file("tests/captures/session-server.bin");
    let (messages, error) = ServerMessageDecoder::new().decode_all([&stream[..]]);
    assert!(error.is_none());
    assert_eq!(messages.len(), 24);
    let mut rebuilt = Vec::new();
    let mut multi_segment = 0;
    for (i, message) in messages.iter().enumerate() {
        let expected = encode_server_message(message).unwrap();
        let frame = encode_server_message_vectored(message).unwrap();
        assert_same_bytes(&frame, &expected, &format!("server message {i}"));
        let big = payload_len(message).is_some_and(|len| len >= MIN_PAYLOAD_SEGMENT_LENGTH);
        assert_eq!(frame.segments().count(), if big { 2 } else { 1 }, "server message {i}");
        multi_segment += usize::from(big);
        rebuilt.extend(frame.to_vec());
    }
    assert_eq!(rebuilt, stream, "the frames rebuild the recorded stream");
    assert!(multi_segment > 0, "the capture holds payloads above the threshold");
}

fn payload_len(message: &ServerMessage) -> Option<usize> {
    match message {
        ServerMessage::Response(Response::Success(r)) => r.result.as_ref().map(|p| p.as_cbor().len()),
        ServerMessage::ServiceUpdate(u) => Some(u.update.as_cbor().len()),
        _ => None,
    }
}

#[test]
fn every_captured_client_message_encodes_to_the_same_bytes() {
    let stream = repo_file("tests/captures/session-client.bin");
    let (messages, error) = ClientMessageDecoder::new().decode_all([&stream[..]]);
    assert!(error.is_none());
    assert!(!messages.is_empty());
    let mut rebuilt = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let expected = encode_client_message(message).unwrap();
        let frame = encode_client_message_vectored(message).unwrap();
        assert_same_bytes(&frame, &expected, &format!("client message {i}"));
        rebuilt.extend(frame.to_vec());
    }
    assert_eq!(rebuilt, stream);
}

#[test]
fn a_large_payload_is_its_own_segment_sharing_the_payloads_memory() {
    let call = call_with_string(1 << 20);
    let message = request(call.clone());
    let expected = encode_client_message(&message).unwrap();
    let frame = encode_client_message_vectored(&message).unwrap();
    assert_same_bytes(&frame, &expected, "blob");

    let segments: Vec<&[u8]> = frame.segments().collect();
    assert_eq!(segments.len(), 2);
    // The envelope up to the call (header included), then the call itself, in place.
    assert_eq!(segments[0].len(), expected.len() - call.as_cbor().len());
    assert_eq!(&segments[0][..4], &((expected.len() - 4) as u32).to_be_bytes());
    assert_eq!(segments[1].as_ptr(), call.as_cbor().as_ptr(), "no copy: the same allocation");
    assert_eq!(segments[1].len(), call.as_cbor().len());
    // The message's own payload too (the clone above shares it).
    let ClientMessage::Request(r) = &message else { unreachable!() };
    assert_eq!(segments[1].as_ptr(), r.call.as_cbor().as_ptr());

    // Decodes back to the message.
    let decoded = ClientMessageDecoder::new().push(&frame.to_vec()).pop().unwrap().unwrap();
    assert_eq!(decoded, message);
}

#[test]
fn a_server_payload_is_shared_as_well() {
    let update = Payload::from_value(&json!({"chunk": "q".repeat(10_000)})).unwrap();
    let message = ServerMessage::ServiceUpdate(ServiceUpdate::new(SubscriptionId::new("sub-1").unwrap(), update));
    let frame = encode_server_message_vectored(&message).unwrap();
    assert_same_bytes(&frame, &encode_server_message(&message).unwrap(), "service_update");
    let ServerMessage::ServiceUpdate(u) = &message else { unreachable!() };
    assert_eq!(frame.segments().nth(1).unwrap().as_ptr(), u.update.as_cbor().as_ptr());

    let result = payload_of_length(MIN_PAYLOAD_SEGMENT_LENGTH);
    let message = ServerMessage::Response(Response::Success(
        SuccessResponse::new(RequestId::new("r").unwrap()).with_result(result),
    ));
    let frame = encode_server_message_vectored_with(&message, &CodecOptions::new()).unwrap();
    assert_same_bytes(&frame, &encode_server_message(&message).unwrap(), "response");
    assert_eq!(frame.segments().count(), 2);
}

#[test]
fn payloads_below_the_threshold_are_copied_into_one_segment() {
    let below = request(payload_of_length(MIN_PAYLOAD_SEGMENT_LENGTH - 1));
    let frame = encode_client_message_vectored(&below).unwrap();
    assert_eq!(frame.segments().count(), 1);
    assert_same_bytes(&frame, &encode_client_message(&below).unwrap(), "below");

    let at = request(payload_of_length(MIN_PAYLOAD_SEGMENT_LENGTH));
    let frame = encode_client_message_vectored(&at).unwrap();
    assert_eq!(frame.segments().map(<[u8]>::len).nth(1), Some(MIN_PAYLOAD_SEGMENT_LENGTH));
    assert_same_bytes(&frame, &encode_client_message(&at).unwrap(), "at");
}

/// Not an envelope: two payloads side by side, then more CBOR after them, to exercise segments
/// that are adjacent and an owned tail.
struct TwoPayloads(Payload, Payload);

impl Encode for TwoPayloads {
    fn encode(&self, writer: &mut Writer) {
        writer.array_header(3);
        self.0.encode(writer);
        self.1.encode(writer);
        writer.text("tail");
    }
}

impl Validate for TwoPayloads {
    fn validate(&self) -> Result<(), ProtocolError> {
        Ok(())
    }
}

#[test]
fn adjacent_payloads_and_a_tail_after_them() {
    let message = TwoPayloads(call_with_string(5_000), payload_of_length(MIN_PAYLOAD_SEGMENT_LENGTH));
    let options = CodecOptions::new();
    let expected = encode_message(&message, &options).unwrap();
    let frame = encode_message_vectored(&message, &options).unwrap();
    assert_same_bytes(&frame, &expected, "two payloads");
    let lengths: Vec<usize> = frame.segments().map(<[u8]>::len).collect();
    assert_eq!(lengths, vec![5, message.0.as_cbor().len(), MIN_PAYLOAD_SEGMENT_LENGTH, 5]);
    assert_eq!(frame.segments().last(), Some(&b"\x64tail"[..]));
}

fn assert_same_error(message: &ClientMessage, options: &CodecOptions) -> ProtocolError {
    let contiguous = pi_protocol::encode_client_message_with(message, options).unwrap_err();
    let vectored = encode_client_message_vectored_with(message, options).unwrap_err();
    assert_eq!(vectored, contiguous);
    vectored
}

#[test]
fn refused_messages_fail_with_the_same_errors() {
    let blob = request(call_with_string(100_000));
    let len = encode_client_message(&blob).unwrap().len() as u64 - 4;

    // Frame limit alone (maxFrameLength also lowers maxByteLength; restore that).
    let frame_only = CodecOptions::new().max_frame_length(len - 1).unwrap().cbor_limits(CborLimits::default());
    let error = assert_same_error(&blob, &frame_only);
    assert_eq!(
        (error.kind(), error.rule()),
        (ErrorKind::Frame, Rule::EncodedFrameTooLong { length: len, limit: len - 1 })
    );
    // One byte more and it fits.
    let fits = CodecOptions::new().max_frame_length(len).unwrap();
    let frame = encode_client_message_vectored_with(&blob, &fits).unwrap();
    assert_same_bytes(&frame, &encode_client_message(&blob).unwrap(), "at the frame limit");

    // The frame limit is also the CBOR byte limit, met first.
    let error = assert_same_error(&blob, &CodecOptions::new().max_frame_length(len - 1).unwrap());
    assert_eq!((error.kind(), error.rule()), (ErrorKind::Encode, Rule::ByteLengthLimit { limit: len - 1 }));

    // Depth: a large payload nested 63 arrays deep fits the default 64 levels (the exact scan
    // runs, over a copy), 64 deep does not.
    let nested = |levels: usize| {
        let mut v = Value::String("d".repeat(10_000));
        for _ in 0..levels {
            v = Value::Array(vec![v]);
        }
        request(Payload::from_value(&v).unwrap())
    };
    let ok = nested(63);
    let frame = encode_client_message_vectored(&ok).unwrap();
    assert_eq!(frame.segments().count(), 2);
    assert_same_bytes(&frame, &encode_client_message(&ok).unwrap(), "63 levels");
    let error = assert_same_error(&nested(64), &CodecOptions::new());
    assert_eq!((error.kind(), error.rule()), (ErrorKind::Encode, Rule::DepthLimit { limit: 64 }));

    // Container length, with a lowered limit: 2,000 entries of an array over 4 KiB.
    let limits = CborLimits::new(1 << 24, 1_999, 64).unwrap();
    let wide = request(Payload::from_value(&json!(vec!["ab"; 2_000])).unwrap());
    let error = assert_same_error(&wide, &CodecOptions::new().cbor_limits(limits));
    assert_eq!((error.kind(), error.rule()), (ErrorKind::Encode, Rule::ContainerLengthLimit { limit: 1_999 }));

    // Validation comes first.
    let bad = ClientMessage::Hello(pi_protocol::ClientHello::new(pi_protocol::Integer::from(-1)));
    let error = assert_same_error(&bad, &CodecOptions::new());
    assert_eq!(error.kind(), ErrorKind::Schema);
}

#[test]
fn blocking_writer_sends_the_same_bytes_in_pieces() {
    let message = request(call_with_string(50_000));
    let mut dribble = Dribble::new(3);
    pi_protocol::io::write_client_message(&mut dribble, &message).unwrap();
    assert_eq!(dribble.out, encode_client_message(&message).unwrap());
}

#[test]
fn write_to_reports_a_writer_that_takes_nothing() {
    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Ok(0)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut frame = encode_client_message_vectored(&request(call_with_string(10))).unwrap();
    let len = frame.len();
    assert_eq!(frame.write_to(&mut Full).unwrap_err().kind(), io::ErrorKind::WriteZero);
    assert_eq!(frame.len(), len, "nothing was consumed");
}

#[tokio::test]
async fn tokio_write_all_buf_and_chain() {
    use tokio::io::AsyncWriteExt;
    let first = request(call_with_string(70_000));
    let second = request(call_with_string(3));
    let mut expected = encode_client_message(&first).unwrap();
    expected.extend(encode_client_message(&second).unwrap());

    let mut chained =
        encode_client_message_vectored(&first).unwrap().chain(encode_client_message_vectored(&second).unwrap());
    let mut out = Vec::new();
    out.write_all_buf(&mut chained).await.unwrap();
    assert_eq!(out, expected);
    assert!(!chained.has_remaining());
}

#[cfg(feature = "tokio")]
#[test]
fn tokio_encoder_writes_the_same_bytes() {
    use tokio_util::codec::Encoder;
    let message = request(call_with_string(70_000));
    let mut dst = bytes::BytesMut::from(&b"earlier"[..]);
    // The codec encodes `Out` alone; a reference as `Out` sends a message that is kept.
    pi_protocol::io::MessageCodec::<pi_protocol::ServerMessage, &pi_protocol::ClientMessage>::new()
        .encode(&message, &mut dst)
        .unwrap();
    assert_eq!(&dst[..7], b"earlier");
    assert_eq!(&dst[7..], &encode_client_message(&message).unwrap()[..]);
}
