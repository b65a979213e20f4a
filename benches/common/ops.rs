//! The operations the benches time, as plain functions shared by `benches/codec.rs` and the
//! profiling driver `examples/bench_driver.rs`, so a profile measures exactly what the bench does.
//!
//! Each function runs one operation over a whole workload and returns a count derived from its
//! output (messages, bytes) so that the work cannot be optimised away and callers can check it.

#![allow(dead_code)]

use bytes::Bytes;
use pi_protocol::{
    encode_client_message, encode_client_message_vectored, encode_server_message, encode_server_message_vectored,
    ClientMessage, ClientMessageDecoder, MessageDecoder, Payload, Response, ServerMessage, ServerMessageDecoder,
    SharedClientMessageDecoder, SharedServerMessageDecoder,
};

use super::baseline;
use super::workloads::{split_frames, Side, Workload};

/// Messages decoded by this crate.
#[derive(Debug, Clone, PartialEq)]
pub enum Ours {
    /// From a client stream.
    Client(Vec<ClientMessage>),
    /// From a server stream.
    Server(Vec<ServerMessage>),
}

impl Ours {
    /// How many messages.
    pub fn len(&self) -> usize {
        match self {
            Ours::Client(ms) => ms.len(),
            Ours::Server(ms) => ms.len(),
        }
    }
}

impl Theirs {
    /// How many messages.
    pub fn len(&self) -> usize {
        match self {
            Theirs::Client(ms) => ms.len(),
            Theirs::Server(ms) => ms.len(),
        }
    }
}

/// Messages decoded by the serde + ciborium baseline.
#[derive(Debug, Clone, PartialEq)]
pub enum Theirs {
    /// From a client stream.
    Client(Vec<baseline::ClientMessage>),
    /// From a server stream.
    Server(Vec<baseline::ServerMessage>),
}

fn chunks<'a>(w: &'a Workload, stream: &'a [u8]) -> std::slice::Chunks<'a, u8> {
    stream.chunks(w.chunk.unwrap_or(stream.len().max(1)))
}

/// Decodes the workload with `ClientMessageDecoder`/`ServerMessageDecoder`, in the workload's
/// chunking, keeping the messages.
pub fn decode_ours(w: &Workload) -> Ours {
    match w.side {
        Side::Client => {
            let mut out = Vec::with_capacity(w.messages);
            let mut d = ClientMessageDecoder::new();
            for chunk in chunks(w, &w.stream) {
                d.push_each(chunk, |m| out.push(m.expect("valid workload")));
            }
            d.end().expect("complete stream");
            Ours::Client(out)
        }
        Side::Server => {
            let mut out = Vec::with_capacity(w.messages);
            let mut d = ServerMessageDecoder::new();
            for chunk in chunks(w, &w.stream) {
                d.push_each(chunk, |m| out.push(m.expect("valid workload")));
            }
            d.end().expect("complete stream");
            Ours::Server(out)
        }
    }
}

/// Like [`decode_ours`], pull style (`MessageDecoder::messages`, which allocates nothing per
/// chunk) instead of `push_each`.
pub fn decode_ours_pull(w: &Workload) -> Ours {
    fn pull<T: for<'de> pi_protocol::runtime::Decode<'de>>(w: &Workload) -> Vec<T> {
        let mut out = Vec::with_capacity(w.messages);
        let mut d = MessageDecoder::<T>::new();
        for chunk in chunks(w, &w.stream) {
            for m in d.messages(chunk) {
                out.push(m.expect("valid workload"));
            }
        }
        d.end().expect("complete stream");
        out
    }
    match w.side {
        Side::Client => Ours::Client(pull(w)),
        Side::Server => Ours::Server(pull(w)),
    }
}

/// Like [`decode_ours`] with the zero-copy decoders, from chunks already held as [`Bytes`]
/// (as a network stack such as tokio hands them out).
pub fn decode_ours_shared(w: &Workload, chunks: &[Bytes]) -> Ours {
    match w.side {
        Side::Client => {
            let mut out = Vec::with_capacity(w.messages);
            let mut d = SharedClientMessageDecoder::new();
            for chunk in chunks {
                d.push_each(chunk, |m| out.push(m.expect("valid workload")));
            }
            d.end().expect("complete stream");
            Ours::Client(out)
        }
        Side::Server => {
            let mut out = Vec::with_capacity(w.messages);
            let mut d = SharedServerMessageDecoder::new();
            for chunk in chunks {
                d.push_each(chunk, |m| out.push(m.expect("valid workload")));
            }
            d.end().expect("complete stream");
            Ours::Server(out)
        }
    }
}

/// The workload's chunks as [`Bytes`], built outside the timed loop.
pub fn shared_chunks(w: &Workload) -> Vec<Bytes> {
    chunks(w, &w.stream).map(Bytes::copy_from_slice).collect()
}

/// Decodes the workload with the serde + ciborium baseline, in the workload's chunking.
pub fn decode_theirs(w: &Workload) -> Theirs {
    let mut d = baseline::StreamDecoder::new();
    match w.side {
        Side::Client => {
            let mut out = Vec::with_capacity(w.messages);
            for chunk in chunks(w, &w.stream) {
                d.push(chunk, |p| baseline::decode_client(p).map(|m| out.push(m))).expect("valid workload");
            }
            Theirs::Client(out)
        }
        Side::Server => {
            let mut out = Vec::with_capacity(w.messages);
            for chunk in chunks(w, &w.stream) {
                d.push(chunk, |p| baseline::decode_server(p).map(|m| out.push(m))).expect("valid workload");
            }
            Theirs::Server(out)
        }
    }
}

/// Encodes every message as a frame; returns the bytes written.
pub fn encode_ours(messages: &Ours) -> usize {
    match messages {
        Ours::Client(ms) => ms.iter().map(|m| encode_client_message(m).expect("valid").len()).sum(),
        Ours::Server(ms) => ms.iter().map(|m| encode_server_message(m).expect("valid").len()).sum(),
    }
}

/// Encodes every message as a vectored frame, the form handed to `write_vectored`: envelope
/// bytes plus payloads of 4 KiB or more shared, not copied; returns the bytes the frames hold.
pub fn encode_ours_vectored(messages: &Ours) -> usize {
    match messages {
        Ours::Client(ms) => ms.iter().map(|m| encode_client_message_vectored(m).expect("valid").len()).sum(),
        Ours::Server(ms) => ms.iter().map(|m| encode_server_message_vectored(m).expect("valid").len()).sum(),
    }
}

/// Encodes every message as a frame with the baseline; returns the bytes written.
pub fn encode_theirs(messages: &Theirs) -> usize {
    match messages {
        Theirs::Client(ms) => ms.iter().map(|m| baseline::encode_client(m).expect("valid").len()).sum(),
        Theirs::Server(ms) => ms.iter().map(|m| baseline::encode_server(m).expect("valid").len()).sum(),
    }
}

/// Relay: decode the stream, re-encode every message unchanged; returns the bytes written.
pub fn relay_ours(w: &Workload) -> usize {
    encode_ours(&decode_ours(w))
}

/// Relay with the baseline.
pub fn relay_theirs(w: &Workload) -> usize {
    encode_theirs(&decode_theirs(w))
}

fn payloads_of_server(m: &ServerMessage) -> Option<&Payload> {
    match m {
        ServerMessage::Response(Response::Success(r)) => r.result.as_ref(),
        ServerMessage::ServiceUpdate(u) => Some(&u.update),
        _ => None,
    }
}

/// The opaque payloads of the workload's messages (calls, results, updates), decoded.
pub fn payloads(w: &Workload) -> Vec<Payload> {
    match decode_ours(w) {
        Ours::Client(ms) => ms
            .into_iter()
            .filter_map(|m| match m {
                ClientMessage::Request(r) => Some(r.call),
                _ => None,
            })
            .collect(),
        Ours::Server(ms) => ms.iter().filter_map(payloads_of_server).cloned().collect(),
    }
}

/// Decode, then convert every opaque payload to `serde_json::Value` (what a user who wants
/// values pays); returns how many payloads were converted.
pub fn decode_to_value(w: &Workload) -> usize {
    let mut converted = 0;
    match decode_ours(w) {
        Ours::Client(ms) => {
            for m in &ms {
                if let ClientMessage::Request(r) = m {
                    std::hint::black_box(r.call.to_value());
                    converted += 1;
                }
            }
        }
        Ours::Server(ms) => {
            for p in ms.iter().filter_map(payloads_of_server) {
                std::hint::black_box(p.to_value());
                converted += 1;
            }
        }
    }
    converted
}

/// Floor: one copy of the stream into a buffer allocated beforehand.
pub fn memcpy(stream: &[u8], into: &mut [u8]) -> u8 {
    into.copy_from_slice(stream);
    into[into.len() / 2]
}

/// Floor: append the stream to a fresh `Vec` one byte at a time.
pub fn append_bytewise(stream: &[u8]) -> usize {
    let mut v = Vec::new();
    for &b in stream {
        v.push(std::hint::black_box(b));
    }
    v.len()
}

/// Checks, once before timing, that both implementations decode the workload fully and that
/// re-encoding our messages gives back the stream byte for byte.
pub fn check(w: &Workload) {
    let ours = decode_ours(w);
    assert_eq!(ours.len(), w.messages, "{}: messages decoded", w.name);
    assert_eq!(ours, decode_ours_shared(w, &shared_chunks(w)), "{}: shared decoder agrees", w.name);
    assert_eq!(ours, decode_ours_pull(w), "{}: pulled messages agree", w.name);
    let reencoded: Vec<u8> = match &ours {
        Ours::Client(ms) => ms.iter().flat_map(|m| encode_client_message(m).unwrap()).collect(),
        Ours::Server(ms) => ms.iter().flat_map(|m| encode_server_message(m).unwrap()).collect(),
    };
    assert!(reencoded == w.stream, "{}: relay must reproduce the stream byte for byte", w.name);
    let vectored: Vec<u8> = match &ours {
        Ours::Client(ms) => ms.iter().flat_map(|m| encode_client_message_vectored(m).unwrap().to_vec()).collect(),
        Ours::Server(ms) => ms.iter().flat_map(|m| encode_server_message_vectored(m).unwrap().to_vec()).collect(),
    };
    assert!(vectored == w.stream, "{}: vectored frames must hold the stream byte for byte", w.name);
    assert_eq!(decode_theirs(w).len(), w.messages, "{}: baseline messages decoded", w.name);
    assert_eq!(split_frames(&w.stream).len(), w.messages, "{}: frames", w.name);
}
