//! The `decode` and `encode` subcommands as scripts drive them: output, exit status, stderr.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/captures").join(name)
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pi-protocol"))
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn lines(bytes: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8(bytes.to_vec()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn decode_prints_each_message_of_the_session_in_every_chunk_size() {
    for (side, name) in [("client", "session-client"), ("server", "session-server")] {
        let want = lines(&std::fs::read(capture(&format!("{name}.jsonl"))).unwrap());
        for chunk in ["1", "3", "65536"] {
            let bin = capture(&format!("{name}.bin"));
            let out = run(&["decode", "--side", side, "--chunk-size", chunk, bin.to_str().unwrap()], None);
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(lines(&out.stdout), want, "{name} chunk {chunk}");
        }
    }
}

#[test]
fn decode_reads_stdin_with_a_dash() {
    let bytes = std::fs::read(capture("handshake-rejected-server.bin")).unwrap();
    let out = run(&["decode", "--side", "server", "-"], Some(&bytes));
    assert!(out.status.success());
    assert_eq!(lines(&out.stdout), lines(&std::fs::read(capture("handshake-rejected-server.jsonl")).unwrap()));
}

#[test]
fn decode_stops_at_the_bad_frame_with_offset_path_and_rule() {
    let bin = capture("damaged-badframe-client.bin");
    let out = run(&["decode", "--side", "client", bin.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(lines(&out.stdout).len(), 2, "the two good messages come first");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("frame at byte 161"), "{stderr}");
    assert!(stderr.contains("target.serverId"), "{stderr}");
    assert!(stderr.contains("pattern"), "{stderr}");
}

#[test]
fn decode_reports_a_truncated_stream_at_its_end() {
    let bin = capture("damaged-truncated-server.bin");
    let out = run(&["decode", "--side", "server", bin.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(!lines(&out.stdout).is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("stream ended inside a frame"), "{stderr}");
}

#[test]
fn decode_applies_the_frame_limit() {
    let bin = capture("session-server.bin");
    let out = run(&["decode", "--side", "server", "--max-frame-length", "100", bin.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains("exceeds the limit of 100 bytes"));
}

#[test]
fn bad_arguments_exit_2() {
    let bin = capture("session-server.bin");
    let path = bin.to_str().unwrap();
    for args in [
        vec!["decode", "--side", "both", path],
        vec!["decode", "--side", "server", "--max-frame-length", "4294967296", path],
        vec!["decode", "--side", "server", "--max-frame-length", "-1", path],
        vec!["decode", "--side", "server", "--chunk-size", "0", path],
        vec!["decode", "--side", "server", "/nonexistent/file"],
        vec!["decode", path],
        vec!["frobnicate"],
    ] {
        let out = run(&args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn encode_reproduces_the_recorded_frames() {
    for (side, name) in [("client", "session-client"), ("server", "session-server")] {
        let jsonl = std::fs::read(capture(&format!("{name}.jsonl"))).unwrap();
        let out = run(&["encode", "--side", side], Some(&jsonl));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.stdout, std::fs::read(capture(&format!("{name}.bin"))).unwrap(), "{name}");
    }
}

#[test]
fn encode_follows_the_key_order_of_the_json_like_the_reference() {
    // Measured with the reference: {"version":8,"type":"hello"} encodes with version first.
    let out = run(&["encode", "--side", "client"], Some(b"{\"version\":8,\"type\":\"hello\"}\n"));
    assert!(out.status.success());
    assert_eq!(hex::encode(out.stdout), "00000015a26776657273696f6e0864747970656568656c6c6f");
}

#[test]
fn encode_stops_at_an_invalid_line_with_its_number_and_path() {
    let input = b"{\"type\":\"hello\",\"version\":8}\n\n{\"type\":\"cancel\",\"id\":\"r\",\"target\":{\"serverId\":\"nope\"}}\n{\"type\":\"hello\",\"version\":8}\n";
    let out = run(&["encode", "--side", "client"], Some(input));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(hex::encode(&out.stdout), "00000015a264747970656568656c6c6f6776657273696f6e08", "first line only");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("line 3"), "{stderr}");
    assert!(stderr.contains("target.serverId"), "{stderr}");
    let out = run(&["encode", "--side", "server"], Some(b"{not json\n"));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains("line 1: not JSON"));
}
