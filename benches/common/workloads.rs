//! The benchmark workloads, defined once and shared by the criterion benches (`benches/codec.rs`),
//! the profiling and memory driver (`examples/bench_driver.rs`) and, through the frame files
//! that driver writes, the TypeScript timing script (`xtask/bench/bench.mjs`).
//!
//! Every workload is a byte stream of complete frames as the reference encoder writes them:
//! the Rust encoder is byte-exact with it (checked by the conformance tests, and again by
//! `cargo xtask bench-reference`, which re-encodes every frame with the TypeScript package).
//! Calls are built from the typed values of `typed.rs` with `Payload::from_serialize`, so
//! their keys are in the order written there (`serviceId`, `member`, `args`; `id`, `role`,
//! ...) whatever `serde_json` features are on.

#![allow(dead_code)]

use pi_protocol::{
    encode_client_message, AttachmentId, ClientMessage, Payload, Request, RequestId, RpcTarget, ServerId, SessionId,
    SessionTarget,
};
use serde::Serialize;
use serde_json::{json, Value};

use super::typed::{AppendItems, AppendItemsCall, Item, PromptCall, Role, WriteCall};

/// Which side sent the stream, and so which decoder reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `ClientMessage`s (requests): read with `ClientMessageDecoder`.
    Client,
    /// `ServerMessage`s: read with `ServerMessageDecoder`.
    Server,
}

impl Side {
    /// `"client"` or `"server"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// One workload: a stream of complete frames.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Short name used in benchmark ids and frame file names.
    pub name: &'static str,
    /// The sending side.
    pub side: Side,
    /// The frames, back to back.
    pub stream: Vec<u8>,
    /// How many messages the stream holds.
    pub messages: usize,
    /// Bytes pushed to the decoder per call (`None`: the whole stream in one call).
    pub chunk: Option<usize>,
}

/// The server id every generated request targets (a lowercase version 4 UUID).
pub const SERVER_ID: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

/// Length of the blob workload's string: 1 MiB.
pub const BLOB_LENGTH: usize = 1 << 20;

/// The recorded server half of a session (24 messages, about 229 KB).
pub const SESSION_SERVER: &[u8] = include_bytes!("../../tests/captures/session-server.bin");

/// The frame of a request `id` to the session target, whose call is `call` (keys in the order
/// its type serializes them).
fn request_frame(id: &str, call: &impl Serialize) -> Vec<u8> {
    let message = ClientMessage::Request(Request::new(
        RequestId::new(id).expect("valid id"),
        RpcTarget::Session(SessionTarget::new(
            ServerId::new(SERVER_ID).expect("valid server id"),
            SessionId::new("s-7f2a").expect("valid session id"),
            AttachmentId::new("att-01").expect("valid attachment id"),
        )),
        Payload::from_serialize(call).expect("workload calls are strict JSON"),
    ));
    encode_client_message(&message).expect("workload messages are encodable")
}

/// Item `i` of the medium and large requests: id, role, text, integers, a float, flags.
fn item(i: usize) -> Item {
    Item {
        id: format!("item-{i:05}"),
        role: if i % 2 == 0 { Role::User } else { Role::Assistant },
        text: format!("Line {i}: the quick brown fox jumps over."),
        tokens: ((i * 37) % 1000) as u32,
        score: (i as f64 + 1.0) / 7.0,
        pinned: i % 3 == 0,
        parent: None,
    }
}

/// The call of the medium and large requests, with `count` items.
pub fn items_call(count: usize) -> AppendItemsCall {
    AppendItemsCall {
        service_id: "session".into(),
        member: "appendItems".into(),
        args: (AppendItems { items: (0..count).map(item).collect(), cursor: None },),
    }
}

/// The call of the small request.
pub fn prompt_call() -> PromptCall {
    PromptCall { service_id: "session".into(), member: "prompt".into(), args: vec!["hi".into()] }
}

/// The call of the blob request.
pub fn write_call() -> WriteCall {
    WriteCall { service_id: "files".into(), member: "write".into(), args: ("notes.txt".into(), blob_text()) }
}

/// A tiny call to a Session target (about 150 bytes).
pub fn small() -> Workload {
    let stream = request_frame("req-42", &prompt_call());
    Workload { name: "small", side: Side::Client, stream, messages: 1, chunk: None }
}

/// A request carrying 10 items (about 1.3 KB).
pub fn medium() -> Workload {
    let stream = request_frame("req-43", &items_call(10));
    Workload { name: "medium", side: Side::Client, stream, messages: 1, chunk: None }
}

/// A request carrying 5,000 items (about 600 KB).
pub fn large() -> Workload {
    let stream = request_frame("req-44", &items_call(5000));
    Workload { name: "large", side: Side::Client, stream, messages: 1, chunk: None }
}

/// The 1 MiB string: printable ASCII text.
pub fn blob_text() -> String {
    let line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ the quick brown fox.\n";
    line.chars().cycle().take(BLOB_LENGTH).collect()
}

/// A request whose call carries one 1 MiB string.
pub fn blob() -> Workload {
    Workload {
        name: "blob",
        side: Side::Client,
        stream: request_frame("req-45", &write_call()),
        messages: 1,
        chunk: None,
    }
}

/// The blob frame pushed to the decoder one byte per call.
pub fn blob_bytewise() -> Workload {
    Workload { name: "blob_bytewise", chunk: Some(1), ..blob() }
}

/// The recorded server stream, pushed in one call.
pub fn session() -> Workload {
    Workload { name: "session", side: Side::Server, stream: SESSION_SERVER.to_vec(), messages: 24, chunk: None }
}

/// Every workload, in report order.
pub fn all() -> Vec<Workload> {
    vec![small(), medium(), large(), blob(), session(), blob_bytewise()]
}

/// The frames of `stream`, each with its 4-byte header.
pub fn split_frames(stream: &[u8]) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    let mut rest = stream;
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let (frame, tail) = rest.split_at(4 + len);
        frames.push(frame);
        rest = tail;
    }
    frames
}

/// Writes `<name>.bin` for every workload and `manifest.json` (name, side, messages, bytes,
/// chunk) into `dir`, for the TypeScript timing script.
pub fn write_frames(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut manifest = Vec::new();
    for w in all() {
        std::fs::write(dir.join(format!("{}.bin", w.name)), &w.stream)?;
        manifest.push(json!({
            "name": w.name,
            "side": w.side.as_str(),
            "file": format!("{}.bin", w.name),
            "messages": w.messages,
            "bytes": w.stream.len(),
            "chunk": w.chunk,
        }));
    }
    let text = serde_json::to_string_pretty(&Value::Array(manifest)).expect("plain JSON");
    std::fs::write(dir.join("manifest.json"), text + "\n")
}
