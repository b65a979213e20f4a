//! Comparing the schema interpreter with generated types, shared by the interpreter tests of
//! `pi-protocol-gen` (`tests/interpret_v8.rs`, against the facade's types) and of the schema
//! suite (`tests/schema-suite/tests/interpret.rs`, against the suite's types, which includes
//! this file by path): one payload or one stream decoded by both as comparable verdicts, frames,
//! byte mutations of frames for property tests.
//!
//! It names the runtime through the facade (`pi_protocol::runtime`), which both crates have.

#![allow(dead_code)]

use pi_protocol::runtime::wire_json::to_json;
use pi_protocol::runtime::{
    decode_message, CborLimits, CodecOptions, Decode, Encode, FrameDecoder, MessageDecoder, ProtocolError,
};
use pi_protocol_gen::interpret::Interpreter;
use pi_protocol_gen::model::Side;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::Value;

/// What a decoder made of one frame: the message as JSON text (keys in the order produced), or
/// the error's kind, rule, field path and offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The message, as JSON text.
    Message(String),
    /// The error, as `kind rule path offset`.
    Error(String),
}

impl Verdict {
    pub fn is_message(&self) -> bool {
        matches!(self, Verdict::Message(_))
    }
}

fn error_verdict(error: &ProtocolError) -> Verdict {
    let path: Vec<_> = error.path().collect();
    Verdict::Error(format!("{:?} {:?} {:?} {:?}", error.kind(), error.rule(), path, error.offset()))
}

fn verdict_of(result: Result<Value, ProtocolError>) -> Verdict {
    match result {
        Ok(value) => Verdict::Message(serde_json::to_string(&value).expect("JSON")),
        Err(error) => error_verdict(&error),
    }
}

/// One payload through the generated type `T` (`decode_message`, then its JSON view).
pub fn typed<T: for<'de> Decode<'de> + Encode>(payload: &[u8], limits: CborLimits) -> Verdict {
    verdict_of(decode_message::<T>(payload, limits).map(|m| to_json(&m)))
}

/// One payload through the interpreter.
pub fn interpreted(interpreter: &Interpreter, side: Side, payload: &[u8], limits: CborLimits) -> Verdict {
    verdict_of(interpreter.decode(side, payload, limits))
}

/// A stream through the generated type's `MessageDecoder`, then `end`.
pub fn typed_stream<T: for<'de> Decode<'de> + Encode>(stream: &[u8], options: &CodecOptions) -> Vec<Verdict> {
    let mut decoder = MessageDecoder::<T>::with_options(options);
    let mut out: Vec<Verdict> = decoder.push(stream).into_iter().map(|r| verdict_of(r.map(|m| to_json(&m)))).collect();
    if !matches!(out.last(), Some(Verdict::Error(_))) {
        if let Err(error) = decoder.end() {
            out.push(error_verdict(&error));
        }
    }
    out
}

/// A stream through frames and the interpreter, as `MessageDecoder` does it: each frame's error
/// carries the frame's offset and ends the stream.
pub fn interpreted_stream(
    interpreter: &Interpreter,
    side: Side,
    stream: &[u8],
    options: &CodecOptions,
) -> Vec<Verdict> {
    let mut frames = FrameDecoder::with_max_frame_length(u64::from(options.frame_limit())).expect("valid limit");
    let mut out = Vec::new();
    let result =
        frames.push_with(stream, |payload, offset| match interpreter.decode(side, payload, options.limits()) {
            Err(error) => Err(error.with_offset(offset)),
            message => {
                out.push(verdict_of(message));
                Ok(())
            }
        });
    match result {
        Err(error) => out.push(error_verdict(&error)),
        Ok(()) => {
            if let Err(error) = frames.end() {
                out.push(error_verdict(&error));
            }
        }
    }
    out
}

/// The frames of a stream (payloads only), cut by a frame decoder with `options`; a damaged
/// stream gives the frames before the damage.
pub fn payloads_of(stream: &[u8], options: &CodecOptions) -> Vec<Vec<u8>> {
    let mut frames = FrameDecoder::with_max_frame_length(u64::from(options.frame_limit())).expect("valid limit");
    let mut out = Vec::new();
    let _ = frames.push_with(stream, |payload, _| {
        out.push(payload.to_vec());
        Ok(())
    });
    out
}

/// A frame holding `payload`.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    [&(payload.len() as u32).to_be_bytes()[..], payload].concat()
}

/// Whether two errors have the same kind, rule, field path and offset.
pub fn same_error(a: &ProtocolError, b: &ProtocolError) -> bool {
    a.kind() == b.kind() && a.rule() == b.rule() && a.path().eq(b.path()) && a.offset() == b.offset()
}

/// Whether two encodings agree: the same bytes, or the same error.
pub fn same_encoding(a: &Result<Vec<u8>, ProtocolError>, b: &Result<Vec<u8>, ProtocolError>) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => a == b,
        (Err(a), Err(b)) => same_error(a, b),
        _ => false,
    }
}

/// A change to a byte string.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Flip one bit of the byte at a position (taken modulo the length).
    Flip { at: usize, bit: u8 },
    /// Keep only the first bytes (a fraction of the length, in 256ths).
    Truncate { keep: u8 },
    /// Insert a byte.
    Insert { at: usize, byte: u8 },
    /// Remove a byte.
    Remove { at: usize },
    /// Overwrite a byte.
    Set { at: usize, byte: u8 },
}

/// Any mutation, with interesting bytes (heads of every major type, breaks, floats) favoured.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![
        any::<u8>(),
        prop::sample::select(vec![
            0x00u8, 0x17, 0x18, 0x1b, 0x20, 0x38, 0x40, 0x5f, 0x60, 0x61, 0x78, 0x7f, 0x80, 0x81, 0x9f, 0xa0, 0xa1,
            0xbf, 0xc0, 0xd9, 0xf4, 0xf5, 0xf6, 0xf7, 0xf9, 0xfa, 0xfb, 0xff,
        ]),
    ];
    prop_oneof![
        4 => (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        1 => any::<u8>().prop_map(|keep| Mutation::Truncate { keep }),
        2 => (any::<usize>(), byte.clone()).prop_map(|(at, byte)| Mutation::Insert { at, byte }),
        1 => any::<usize>().prop_map(|at| Mutation::Remove { at }),
        2 => (any::<usize>(), byte).prop_map(|(at, byte)| Mutation::Set { at, byte }),
    ]
}

/// `bytes` after `mutations`, in order.
pub fn mutate(bytes: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for m in mutations {
        let len = out.len();
        match *m {
            Mutation::Flip { at, bit } if len > 0 => out[at % len] ^= 1 << bit,
            Mutation::Truncate { keep } => out.truncate(len * usize::from(keep) / 256),
            Mutation::Insert { at, byte } => out.insert(at % (len + 1), byte),
            Mutation::Remove { at } if len > 0 => {
                out.remove(at % len);
            }
            Mutation::Set { at, byte } if len > 0 => out[at % len] = byte,
            _ => {}
        }
    }
    out
}

/// The property tests' configuration: `cases` cases, failures saved beside the test's source.
pub fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    }
}

/// The first difference between two verdict lists, if any.
pub fn difference(what: &str, typed: &[Verdict], interpreted: &[Verdict]) -> Option<String> {
    (typed != interpreted).then(|| format!("{what}:\n  generated:   {typed:?}\n  interpreter: {interpreted:?}"))
}
