//! The transports of `pi_protocol::io` against the sans-IO decoders on every decode vector of
//! `tests/vectors/vectors.jsonl`: the tokio codecs (fed the vector's chunks as a socket would
//! deliver them) and the blocking readers (over the whole stream) return the same messages and
//! the same first error (kind, rule, field path, offset).
#![cfg(feature = "tokio")]

use bytes::BytesMut;
use pi_protocol::io::{MessageCodec, MessageReader};
use pi_protocol::runtime::{Decode, MessageDecoder};
use pi_protocol::{CodecOptions, ProtocolError};
use serde_json::Value;
use tokio_util::codec::Decoder;

struct Case {
    id: String,
    chunks: Vec<Vec<u8>>,
    end: bool,
    options: CodecOptions,
}

fn cases(side: &str) -> Vec<Case> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/vectors.jsonl")).unwrap();
    let mut out = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let request = &v["request"];
        if request["op"] != "decode" || request["side"] != side {
            continue;
        }
        let options = match request["maxFrameLength"].as_u64() {
            Some(n) => match CodecOptions::new().max_frame_length(n) {
                Ok(options) => options,
                Err(_) => continue,
            },
            None if request["maxFrameLength"].is_null() => CodecOptions::default(),
            None => continue, // a non-integer option: refused when options are built
        };
        let chunks =
            request["chunks"].as_array().unwrap().iter().map(|c| hex::decode(c.as_str().unwrap()).unwrap()).collect();
        out.push(Case { id: v["id"].as_str().unwrap().to_owned(), chunks, end: request["end"] != false, options });
    }
    out
}

type Outcome<M> = (Vec<M>, Option<ProtocolError>);

fn sans_io<M: for<'de> Decode<'de>>(case: &Case) -> Outcome<M> {
    let mut decoder = MessageDecoder::<M>::with_options(&case.options);
    let mut messages = Vec::new();
    for chunk in &case.chunks {
        for result in decoder.push(chunk) {
            match result {
                Ok(m) => messages.push(m),
                Err(e) => return (messages, Some(e)),
            }
        }
    }
    let error = if case.end { decoder.end().err() } else { None };
    (messages, error)
}

fn codec<M: for<'de> Decode<'de>, Out>(case: &Case) -> Outcome<M> {
    let mut codec = MessageCodec::<M, Out>::with_options(&case.options);
    let mut buf = BytesMut::new();
    let mut messages = Vec::new();
    for chunk in &case.chunks {
        buf.extend_from_slice(chunk);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(m)) => messages.push(m),
                Ok(None) => break,
                Err(e) => return (messages, Some(e.protocol().unwrap().clone())),
            }
        }
    }
    if case.end {
        loop {
            match codec.decode_eof(&mut buf) {
                Ok(Some(m)) => messages.push(m),
                Ok(None) => break,
                Err(e) => return (messages, Some(e.protocol().unwrap().clone())),
            }
        }
    }
    (messages, None)
}

fn blocking<M: for<'de> Decode<'de>>(case: &Case) -> Outcome<M> {
    let stream: Vec<u8> = case.chunks.concat();
    let mut reader = MessageReader::<_, M>::with_options(&stream[..], &case.options);
    let mut messages = Vec::new();
    loop {
        match reader.read_message() {
            Ok(Some(m)) => messages.push(m),
            Ok(None) => return (messages, None),
            Err(e) => return (messages, Some(e.protocol().unwrap().clone())),
        }
    }
}

fn check<M, Out>(side: &str)
where
    M: for<'de> Decode<'de> + PartialEq + std::fmt::Debug,
{
    let cases = cases(side);
    assert!(cases.len() > 100, "{side}: only {} cases", cases.len());
    let mut failed = 0;
    for case in &cases {
        let expected = sans_io::<M>(case);
        if expected.1.is_some() {
            failed += 1;
        }
        assert_eq!(codec::<M, Out>(case), expected, "codec, {}", case.id);
        if case.end {
            // The reader sees one whole stream, so it reports the same first error.
            assert_eq!(blocking::<M>(case), expected, "reader, {}", case.id);
        }
    }
    assert!(failed > 50, "{side}: only {failed} failing cases");
}

#[test]
fn server_codec_and_client_message_reader_match_the_sans_io_decoder() {
    check::<pi_protocol::ClientMessage, pi_protocol::ServerMessage>("client");
}

#[test]
fn client_codec_and_server_message_reader_match_the_sans_io_decoder() {
    check::<pi_protocol::ServerMessage, pi_protocol::ClientMessage>("server");
}
