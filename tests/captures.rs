//! The real streams recorded from the reference (`tests/captures/`): each decodes to exactly its
//! `.jsonl`, whole and one byte at a time; re-encoding reproduces the recorded bytes; the damaged
//! streams fail the way the capture notes say.

mod common;

use common::repo_file;
use pi_protocol::{
    encode_client_message, encode_server_message, ClientMessage, ClientMessageDecoder, ErrorKind, ProtocolError, Rule,
    ServerMessage, ServerMessageDecoder,
};
use serde_json::Value;

fn expected(name: &str) -> Vec<Value> {
    String::from_utf8(repo_file(&format!("tests/captures/{name}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn decode_client(bytes: &[u8], chunk: usize) -> (Vec<ClientMessage>, Option<ProtocolError>) {
    ClientMessageDecoder::new().decode_all(bytes.chunks(chunk))
}

fn decode_server(bytes: &[u8], chunk: usize) -> (Vec<ServerMessage>, Option<ProtocolError>) {
    ServerMessageDecoder::new().decode_all(bytes.chunks(chunk))
}

#[test]
fn client_captures_decode_to_their_jsonl_whole_and_bytewise() {
    for name in ["session-client", "handshake-rejected-client"] {
        let bytes = repo_file(&format!("tests/captures/{name}.bin"));
        let want = expected(name);
        for chunk in [bytes.len(), 1, 7, 4096] {
            let (messages, error) = decode_client(&bytes, chunk);
            assert!(error.is_none(), "{name} chunk {chunk}: {error:?}");
            let got: Vec<Value> = messages.iter().map(ClientMessage::to_json).collect();
            assert_eq!(got, want, "{name} chunk {chunk}");
        }
        // Re-encoding every message reproduces the recorded stream byte for byte.
        let (messages, _) = decode_client(&bytes, bytes.len());
        let again: Vec<u8> = messages.iter().flat_map(|m| encode_client_message(m).unwrap()).collect();
        assert_eq!(again, bytes, "{name}: re-encoded stream differs");
    }
}

#[test]
fn server_captures_decode_to_their_jsonl_whole_and_bytewise() {
    for name in ["session-server", "handshake-rejected-server"] {
        let bytes = repo_file(&format!("tests/captures/{name}.bin"));
        let want = expected(name);
        for chunk in [bytes.len(), 1, 13, 65536] {
            let (messages, error) = decode_server(&bytes, chunk);
            assert!(error.is_none(), "{name} chunk {chunk}: {error:?}");
            let got: Vec<Value> = messages.iter().map(ServerMessage::to_json).collect();
            assert_eq!(got, want, "{name} chunk {chunk}");
        }
        let (messages, _) = decode_server(&bytes, bytes.len());
        let again: Vec<u8> = messages.iter().flat_map(|m| encode_server_message(m).unwrap()).collect();
        assert_eq!(again, bytes, "{name}: re-encoded stream differs");
    }
}

#[test]
fn session_capture_holds_every_server_message_kind() {
    let bytes = repo_file("tests/captures/session-server.bin");
    let (messages, error) = decode_server(&bytes, bytes.len());
    assert!(error.is_none());
    assert_eq!(messages.len(), 24);
    // A message's kind is its wire `type`, and for responses its `ok` as well.
    let kinds: std::collections::BTreeSet<String> = messages
        .iter()
        .map(|m| {
            let json = m.to_json();
            let kind = json["type"].as_str().expect("every server message has a type").to_owned();
            match json.get("ok").and_then(Value::as_bool) {
                Some(true) => kind + "-ok",
                Some(false) => kind + "-error",
                None => kind,
            }
        })
        .collect();
    for kind in ["hello", "response-ok", "response-error", "service_update", "attachment"] {
        assert!(kinds.contains(kind), "missing {kind}: {kinds:?}");
    }
}

/// How many frames of `bytes` are complete, and where the first incomplete one starts.
fn complete_frames(bytes: &[u8]) -> (usize, usize) {
    let (mut count, mut at) = (0, 0);
    while at + 4 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        if at + 4 + len > bytes.len() {
            break;
        }
        at += 4 + len;
        count += 1;
    }
    (count, at)
}

#[test]
fn truncated_server_capture_delivers_every_complete_frame_then_fails_at_end() {
    let bytes = repo_file("tests/captures/damaged-truncated-server.bin");
    let full = expected("session-server");
    for chunk in [bytes.len(), 1, 1000] {
        let (messages, error) = decode_server(&bytes, chunk);
        let error = error.expect("end() must report the truncated frame");
        assert_eq!(error.kind(), ErrorKind::Frame);
        assert_eq!(error.rule(), Rule::TruncatedFrame);
        // Every frame that lies wholly before the cut decodes; the error names the first cut one.
        let (complete, cut_at) = complete_frames(&bytes);
        assert!(complete > 0 && complete < full.len());
        assert_eq!(messages.len(), complete, "chunk {chunk}");
        let got: Vec<Value> = messages.iter().map(ServerMessage::to_json).collect();
        assert_eq!(got[..], full[..complete]);
        assert_eq!(error.offset(), Some(cut_at as u64));
    }
}

#[test]
fn bad_frame_capture_delivers_the_two_good_messages_then_names_the_field() {
    let bytes = repo_file("tests/captures/damaged-badframe-client.bin");
    for chunk in [bytes.len(), 1, 5] {
        let (messages, error) = decode_client(&bytes, chunk);
        assert_eq!(messages.len(), 2, "chunk {chunk}");
        assert!(matches!(messages[0], ClientMessage::Hello(_)));
        let error = error.expect("the third frame is invalid");
        assert_eq!(error.kind(), ErrorKind::Schema);
        assert_eq!(error.rule(), Rule::Pattern);
        assert_eq!(error.path_string(), "target.serverId");
        // The offset is the third frame's header: right after the first two frames.
        let first = u32::from_be_bytes(bytes[0..4].try_into().unwrap()) as usize + 4;
        let second = u32::from_be_bytes(bytes[first..first + 4].try_into().unwrap()) as usize + 4;
        assert_eq!(error.offset(), Some((first + second) as u64));
    }
    // The decoder stays failed after the error, even though a good frame follows.
    let mut d = ClientMessageDecoder::new();
    let results = d.push(&bytes);
    assert_eq!(results.len(), 3);
    assert!(results[2].is_err());
    assert_eq!(d.push(&[]).pop().unwrap().unwrap_err().kind(), ErrorKind::State);
    assert_eq!(d.end().unwrap_err().kind(), ErrorKind::State);
}
