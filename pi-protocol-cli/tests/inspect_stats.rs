//! `pi-protocol inspect` and `pi-protocol stats` on the captured streams and on hand-made bad
//! input.

use std::path::PathBuf;
use std::process::{Command, Output};

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/captures").join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi-protocol")).args(args).output().expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Writes `bytes` to a fresh file in the temp directory.
fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("pi-protocol-cli-{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn inspect_marks_the_bad_server_id_and_goes_on() {
    let output = run(&["inspect", "--side", "client", capture("damaged-badframe-client.bin").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("frame 0  offset 0  length 21  hello\n  {\"type\": \"hello\", \"version\": 8}\n"), "{text}");
    assert!(text.contains("frame 2  offset 161  length 84  INVALID (request)"), "{text}");
    assert!(text.contains(r#""target": {"serverId": >>>"3B241101-E2BB-4255-8CAF-4136C566A962"<<<}"#), "{text}");
    assert!(text.contains("error: invalid message at target.serverId: string does not match the required pattern"));
    // The 38 bytes of the text string (head 78 24 and 36 characters) start at payload byte 40.
    assert!(text.contains("offending bytes: stream 205..243 (payload 40..78)"), "{text}");
    assert!(text.contains("    000000c5  73 65 72 76 65 72 49 64 78 24 33 42 32 34 31 31\n"), "{text}");
    assert!(text.contains("frame 3  offset 249  length 164  request  id \"req-2\"  call 81 bytes\n"), "{text}");
}

#[test]
fn inspect_prints_every_frame_of_a_good_stream() {
    let output = run(&["inspect", "--side", "client", "--no-diag", capture("session-client.bin").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 13);
    assert_eq!(lines[0], "frame 0  offset 0  length 21  hello");
    assert_eq!(lines[7], "frame 7  offset 1141  length 114  cancel  id \"req-6\"");
}

#[test]
fn inspect_locates_a_cbor_tag() {
    // {"type": "hello", "version": 0(8)}: the tag sits at payload byte 20.
    let mut payload = vec![0xa2, 0x64];
    payload.extend_from_slice(b"type");
    payload.push(0x65);
    payload.extend_from_slice(b"hello");
    payload.push(0x67);
    payload.extend_from_slice(b"version");
    payload.extend_from_slice(&[0xc0, 0x08]);
    let mut stream = (payload.len() as u32).to_be_bytes().to_vec();
    stream.extend_from_slice(&payload);
    let path = temp_file("tag.bin", &stream);
    let output = run(&["inspect", "--side", "client", path.to_str().unwrap()]);
    std::fs::remove_file(&path).ok();
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains(r#"{"type": "hello", "version": >>>0(8)<<<}"#), "{text}");
    assert!(text.contains("error: invalid CBOR at version: CBOR tags are not supported (frame at byte 0)"), "{text}");
    assert!(text.contains("at payload byte 20: CBOR tag"), "{text}");
    assert!(text.contains("offending bytes: stream 24..25 (payload 20..21)"), "{text}");
    assert!(text.contains("    00000014  73 69 6f 6e c0 08\n                          ^^\n"), "{text}");
}

#[test]
fn inspect_stops_at_an_oversized_header() {
    let path = temp_file("big.bin", &[0, 0, 0, 11, 1, 2, 3]);
    let output = run(&["inspect", "--side", "server", "--max-frame-length", "10", path.to_str().unwrap()]);
    std::fs::remove_file(&path).ok();
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.starts_with("frame 0  offset 0  TOO LONG: header announces 11 bytes\n"), "{text}");
    assert!(text.contains("frame length 11 exceeds the limit of 10 bytes"), "{text}");
}

#[test]
fn stats_summarises_the_captured_session() {
    let output = run(&["stats", "--side", "server", "--json", capture("session-server.bin").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["frames"], 24);
    assert_eq!(value["streamBytes"], 228793);
    assert_eq!(value["frameLength"], serde_json::json!({"min": 29, "max": 225942, "total": 228697}));
    assert_eq!(
        value["byType"],
        serde_json::json!({"attachment": 2, "hello": 1, "response ok=false": 3, "response ok=true": 8,
                           "service_update": 10})
    );
    assert_eq!(value["largestPayload"]["bytes"], 225907);
    assert_eq!(value["largestPayload"]["id"], "req-9");
    assert_eq!(value["largestPayload"]["field"], "result");
    assert_eq!(value["error"], serde_json::Value::Null);

    let text = stdout(&run(&["stats", "--side", "server", capture("session-server.bin").to_str().unwrap()]));
    assert!(text.contains("frames: 24 (228793 bytes on the wire, headers included)"), "{text}");
    assert!(text.contains("  service_update     10\n"), "{text}");
    assert!(text.contains("largest payload: 225907 bytes (result of frame 20, id \"req-9\", at byte 2740)"), "{text}");
}

#[test]
fn stats_on_a_truncated_stream_covers_the_frames_before_the_cut() {
    let output =
        run(&["stats", "--side", "server", "--json", capture("damaged-truncated-server.bin").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["frames"], 20);
    let error = value["error"].as_str().unwrap();
    assert_eq!(error, "frame at byte 2740: invalid frame: stream ended inside a frame");
    assert!(String::from_utf8_lossy(&output.stderr).contains("frame at byte 2740"));
}

#[test]
fn inspect_and_stats_with_the_wrong_side_say_whose_stream_it_looks_like() {
    let bin = capture("session-server.bin");
    let hint = "pi-protocol: hint: the stream looks like the server's: its first frame is a valid server message, \
                not a client one (try --side server)\n";
    let output = run(&["inspect", "--side", "client", "--no-diag", bin.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(String::from_utf8(output.stderr).unwrap(), format!("pi-protocol: 24 bad frame(s) among 24\n{hint}"));
    let output = run(&["stats", "--side", "client", bin.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        format!("pi-protocol: frame at byte 0: invalid message: unknown field\n{hint}")
    );
    // A bad frame after good ones: no hint.
    let output = run(&["stats", "--side", "client", capture("damaged-badframe-client.bin").to_str().unwrap()]);
    assert_eq!(String::from_utf8(output.stderr).unwrap().lines().count(), 1);
}
