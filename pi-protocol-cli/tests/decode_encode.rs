//! The `decode` and `encode` subcommands as scripts drive them: output, exit status, stderr.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

fn capture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/captures").join(name)
}

/// The CLI started with `args`, its stdout and stderr piped, its stdin piped or empty.
fn spawn(args: &[&str], stdin: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_pi-protocol"))
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs")
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = spawn(args, if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    if let Some(input) = stdin {
        // The command may stop reading early (at a bad frame): a broken pipe is expected then.
        let _ = child.stdin.take().unwrap().write_all(input);
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
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "pi-protocol: frame at byte 161: invalid message at target.serverId: string does not match the required \
         pattern\n",
        "one line; no hint about the side, since messages came before"
    );
}

#[test]
fn decode_with_the_wrong_side_says_whose_stream_it_looks_like() {
    for (side, name, other) in [("client", "session-server", "server"), ("server", "session-client", "client")] {
        let bin = capture(&format!("{name}.bin"));
        let out = run(&["decode", "--side", side, bin.to_str().unwrap()], None);
        assert_eq!(out.status.code(), Some(1));
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8(out.stderr).unwrap();
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{stderr}");
        assert!(lines[0].starts_with("pi-protocol: frame at byte 0: invalid message"), "{stderr}");
        assert_eq!(
            lines[1],
            format!(
                "pi-protocol: hint: the stream looks like the {other}'s: its first frame is a valid {other} message, \
                 not a {side} one (try --side {other})"
            )
        );
    }
    // Read from stdin in one-byte chunks, the first frame is kept until it is whole.
    let bytes = std::fs::read(capture("session-server.bin")).unwrap();
    let out = run(&["decode", "--side", "client", "--chunk-size", "1", "-"], Some(&bytes));
    assert!(String::from_utf8(out.stderr).unwrap().contains("try --side server"));
    // A first frame that is no valid message of either side gets no hint.
    let out = run(&["decode", "--side", "client", "-"], Some(&[0, 0, 0, 1, 0xa0]));
    assert_eq!(String::from_utf8(out.stderr).unwrap().lines().count(), 1);
}

#[test]
fn decode_reports_a_truncated_stream_at_its_end() {
    let bin = capture("damaged-truncated-server.bin");
    let out = run(&["decode", "--side", "server", bin.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(!lines(&out.stdout).is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "pi-protocol: frame at byte 2740: invalid frame: stream ended inside a frame\n",
        "a framing error has no field path to name"
    );
}

#[test]
fn decode_applies_the_frame_limit() {
    let bin = capture("session-server.bin");
    let out = run(&["decode", "--side", "server", "--max-frame-length", "100", bin.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "pi-protocol: frame at byte 72: invalid frame: frame length 134 exceeds the limit of 100 bytes\n"
    );
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
        vec!["decode", "--side", "server", "--schema", "/nonexistent/schema.json", path],
        vec!["decode", "--side", "server", "--schema", path, path],
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
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "pi-protocol: line 3: invalid message at target.serverId: string does not match the required pattern\n"
    );
}

/// Runs `encode` on one line and returns its stderr, checking the exit status is 1.
fn encode_error(side: &str, line: &str) -> String {
    let out = run(&["encode", "--side", side], Some(format!("{line}\n").as_bytes()));
    assert_eq!(out.status.code(), Some(1), "{line}");
    assert!(out.stdout.is_empty());
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn encode_names_the_keys_of_the_line_at_fault() {
    let server_id = "3b241101-e2bb-4255-8caf-4136c566a962";
    assert_eq!(
        encode_error("client", r#"{"type":"hello","version":8,"verison":8}"#),
        "pi-protocol: line 1: invalid message: unknown key \"verison\" (allowed: type, version)\n"
    );
    assert_eq!(
        encode_error("client", &format!(r#"{{"type":"request","id":"r","target":{{"serverId":"{server_id}"}}}}"#)),
        "pi-protocol: line 1: invalid message: missing required key \"call\"\n"
    );
    assert_eq!(
        encode_error(
            "server",
            &format!(r#"{{"type":"attachment","attachment":{{"serverId":"{server_id}","sessionId":"s"}}}}"#)
        ),
        "pi-protocol: line 1: invalid message at attachment: missing required key \"attachmentId\"\n"
    );
    assert_eq!(
        encode_error("server", r#"{"type":"respons","id":"r","ok":true}"#),
        "pi-protocol: line 1: invalid message at type: \"respons\" is not an allowed value (allowed: \"hello\", \
         \"hello_error\", \"response\", \"service_update\", \"attachment\")\n"
    );
}

#[test]
fn encode_gives_the_line_and_column_of_invalid_json() {
    assert_eq!(
        encode_error("server", r#"{"type":"hello","version":8,}"#),
        "pi-protocol: line 1, column 29: not JSON: trailing comma\n"
    );
    let out = run(&["encode", "--side", "client"], Some(b"{\"type\":\"hello\",\"version\":8}\n{not json\n"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stdout.len(), 25, "the frame of the first line");
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "pi-protocol: line 2, column 2: not JSON: key must be a string\n"
    );
}

#[test]
fn a_reader_that_stops_early_ends_the_run_quietly() {
    // `pi-protocol decode ... | head -1`: once the reader has gone, the rest of the output has
    // nowhere to go; the run ends without an error message, as a filter's does.
    let session = std::fs::read(capture("session-server.bin")).unwrap();
    let stream = session.repeat(400);
    for args in [&["decode", "--side", "server"][..], &["inspect", "--side", "server", "--no-diag"][..]] {
        let mut child = spawn(args, Stdio::piped());
        let mut stdin = child.stdin.take().unwrap();
        let input = stream.clone();
        // The command may stop reading once its output is gone: a broken pipe is expected here.
        let writer = std::thread::spawn(move || drop(stdin.write_all(&input)));
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 64];
        std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
        // Far more output than a pipe holds is still to come when the reader leaves.
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
        assert!(out.status.success(), "{args:?}: {:?}", out.status);
    }
}
