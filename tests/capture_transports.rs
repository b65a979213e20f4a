//! The recorded captures (`tests/captures/`) read every other way this crate offers — the
//! zero-copy decoders, the blocking readers, the tokio codecs, serde — give exactly what the
//! sans-IO decoders give: the same messages, the same error with the same offset
//! (docs/PROTOCOL.md sections 1, 5 and 7).
//!
//! These tests read the repository's captures, which the published crate does not ship, so they
//! live here rather than next to the code in `src/`.

mod common;

use std::io::Read;

use bytes::Bytes;
use common::repo_file;
use pi_protocol::io::{ClientMessageReader, ServerMessageReader};
use pi_protocol::{
    ClientMessage, ClientMessageDecoder, Rule, ServerMessage, ServerMessageDecoder, SharedClientMessageDecoder,
    SharedServerMessageDecoder,
};
use serde_json::Value;

fn capture(name: &str) -> Vec<u8> {
    repo_file(&format!("tests/captures/{name}"))
}

/// Every message of a capture, decoded by the sans-IO decoder (which must accept all of it).
fn server_messages(bytes: &[u8]) -> Vec<ServerMessage> {
    let expected: Vec<ServerMessage> =
        ServerMessageDecoder::new().push(bytes).into_iter().map(Result::unwrap).collect();
    assert_eq!(expected.len(), 24, "the session capture holds 24 server messages");
    expected
}

/// A reader that hands out one byte per `read`.
struct OneByte<'a>(&'a [u8]);

impl Read for OneByte<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some((&first, rest)) = self.0.split_first() else { return Ok(0) };
        let Some(slot) = buf.first_mut() else { return Ok(0) };
        *slot = first;
        self.0 = rest;
        Ok(1)
    }
}

// ---- zero-copy decoders ----

#[test]
fn shared_decoders_give_the_same_messages_for_any_split() {
    let session = capture("session-server.bin");
    let expected = server_messages(&session);
    for chunk_len in [1, 7, 4096, session.len()] {
        let mut shared = SharedServerMessageDecoder::new();
        let mut got = Vec::new();
        for chunk in session.chunks(chunk_len) {
            got.extend(shared.push(&Bytes::copy_from_slice(chunk)).into_iter().map(Result::unwrap));
        }
        shared.end().unwrap();
        assert_eq!(got, expected, "chunks of {chunk_len}");
        assert_eq!(shared.offset(), session.len() as u64);
    }
}

#[test]
fn shared_decoder_payloads_of_whole_frames_point_into_the_chunk() {
    let stream = Bytes::from(capture("session-server.bin"));
    let mut inside = 0;
    SharedServerMessageDecoder::new().push_each(&stream, |m| {
        if let Ok(ServerMessage::ServiceUpdate(u)) = m {
            let at = u.update.as_cbor().as_ptr() as usize;
            let in_chunk = at >= stream.as_ptr() as usize && at < stream.as_ptr() as usize + stream.len();
            // Short payloads are held inline; the others point into the chunk.
            let len = u.update.as_cbor().len();
            assert_eq!(in_chunk, len > pi_protocol::runtime::MAX_INLINE_PAYLOAD_LENGTH, "{len} bytes");
            inside += usize::from(in_chunk);
        }
    });
    assert!(inside > 0);
}

#[test]
fn shared_decoder_gives_the_same_error_and_offset() {
    let damaged = Bytes::from(capture("damaged-badframe-client.bin"));
    let expected = ClientMessageDecoder::new().push(&damaged);
    let got = SharedClientMessageDecoder::new().push(&damaged);
    assert_eq!(got.len(), expected.len());
    let (Some(Err(want)), Some(Err(have))) = (expected.last(), got.last()) else {
        panic!("the damaged capture ends in an error: {expected:?}");
    };
    assert_eq!(have.to_string(), want.to_string());
    assert_eq!(have.offset(), want.offset());
    let mut decoder = SharedClientMessageDecoder::new();
    decoder.push(&damaged);
    assert!(decoder.push(&Bytes::new())[0].is_err(), "failed for good");
}

// ---- blocking readers ----

#[test]
fn blocking_reader_reads_the_session_byte_by_byte() {
    let session = capture("session-server.bin");
    let expected = server_messages(&session);
    let got: Vec<ServerMessage> = ServerMessageReader::new(OneByte(&session)).map(Result::unwrap).collect();
    assert_eq!(got, expected);
}

#[test]
fn blocking_reader_reports_the_offset_of_the_cut_frame() {
    let bytes = capture("damaged-truncated-server.bin");
    let mut decoder = ServerMessageDecoder::new();
    let complete = decoder.push(&bytes).len();
    let expected = decoder.end().unwrap_err();
    let mut reader = ServerMessageReader::new(&bytes[..]);
    for _ in 0..complete {
        assert!(reader.read_message().unwrap().is_some());
    }
    let error = reader.read_message().unwrap_err();
    assert_eq!(error.protocol(), Some(&expected));
    assert_eq!(error.protocol().unwrap().rule(), Rule::TruncatedFrame);
    let again = reader.read_message().unwrap_err();
    assert_eq!(again.protocol().unwrap().rule(), Rule::DecoderFailed);
    assert!(reader.next().is_none());
}

#[test]
fn blocking_reader_fails_on_the_bad_frame_like_the_sans_io_decoder() {
    let bytes = capture("damaged-badframe-client.bin");
    let expected = ClientMessageDecoder::new().push(&bytes).pop().unwrap().unwrap_err();
    let results: Vec<_> = ClientMessageReader::new(&bytes[..]).collect();
    assert_eq!(results.len(), 3, "two messages, then the error, then nothing");
    assert_eq!(results[2].as_ref().unwrap_err().protocol(), Some(&expected));
}

// ---- serde ----

fn json_lines(name: &str) -> Vec<Value> {
    let text = String::from_utf8(capture(name)).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn serde_round_trips_the_captured_sessions_in_wire_shape() {
    for value in json_lines("session-client.jsonl") {
        let message: ClientMessage = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap(), value);
        assert_eq!(serde_json::to_string(&message).unwrap(), serde_json::to_string(&value).unwrap());
    }
    let server = json_lines("session-server.jsonl");
    assert_eq!(server.len(), 24);
    for value in server {
        let message: ServerMessage = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap(), value);
    }
}

// ---- tokio codecs ----

#[cfg(feature = "tokio")]
mod tokio_codecs {
    use bytes::BytesMut;
    use futures_util::StreamExt;
    use pi_protocol::io::{ClientCodec, ServerCodec};
    use pi_protocol::{ClientMessageDecoder, ServerMessage};
    use tokio_util::codec::{Decoder, FramedRead};

    use super::{capture, server_messages};

    #[tokio::test]
    async fn framed_read_decodes_the_captured_session() {
        let bytes = capture("session-server.bin");
        let expected = server_messages(&bytes);
        let framed = FramedRead::new(&bytes[..], ClientCodec::new());
        let got: Vec<ServerMessage> = framed.map(Result::unwrap).collect().await;
        assert_eq!(got, expected);
    }

    #[test]
    fn codec_schema_error_matches_the_sans_io_decoder() {
        let bytes = capture("damaged-badframe-client.bin");
        let reference: Vec<_> = ClientMessageDecoder::new().push(&bytes);
        let expected_error = reference.last().unwrap().clone().unwrap_err();
        let mut codec = ServerCodec::new();
        let mut buf = BytesMut::from(&bytes[..]);
        let mut got = Vec::new();
        let error = loop {
            match codec.decode(&mut buf) {
                Ok(Some(m)) => got.push(m),
                Ok(None) => panic!("the capture holds a bad frame"),
                Err(e) => break e,
            }
        };
        assert_eq!(got.len(), 2);
        let error = error.protocol().expect("a protocol error");
        assert_eq!(error, &expected_error);
        assert_eq!(error.path_string(), "target.serverId");
    }
}
