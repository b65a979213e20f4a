//! The CLI under the amplification frame of issue 3: one valid 16 MiB frame whose request
//! `call` holds 16 arrays of 1,000,000 nulls, streamed in the default 64 KiB chunks. Every
//! command must stay under 400 MiB of resident memory (the reference needs about 930 MiB to
//! decode it), with `--schema` too. And `decode --schema` (the interpreter) on a 16 MiB frame
//! of 16,000,000 empty arrays (issue 18: 1.1 GiB when each became a JSON value) stays within
//! five times the frame: each message is written from the frame, its payloads streamed.
//!
//! The child's peak resident set is read from `VmHWM` in `/proc/<pid>/status` while it runs
//! (Linux only; elsewhere the test only checks the exit status).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIMIT_KIB: u64 = 400 * 1024;

fn text(s: &str) -> Vec<u8> {
    let mut out = vec![0x60 | s.len() as u8];
    out.extend_from_slice(s.as_bytes());
    out
}

/// A request whose `call` holds 16 arrays of 1,000,000 copies of the one-byte item `item`.
fn amplification_frame() -> Vec<u8> {
    frame_of(0xf6)
}

fn frame_of(item: u8) -> Vec<u8> {
    let server_id = "3b241101-e2bb-4255-8caf-4136c566a962";
    let mut payload = vec![0xa4];
    for part in [text("type"), text("request"), text("id"), text("r"), text("target")] {
        payload.extend_from_slice(&part);
    }
    payload.push(0xa1);
    payload.extend_from_slice(&text("serverId"));
    payload.extend_from_slice(&[0x78, server_id.len() as u8]);
    payload.extend_from_slice(server_id.as_bytes());
    payload.extend_from_slice(&text("call"));
    payload.push(0x90);
    for _ in 0..16 {
        payload.extend_from_slice(&[0x9a, 0x00, 0x0f, 0x42, 0x40]);
        payload.resize(payload.len() + 1_000_000, item);
    }
    let mut frame = (payload.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&payload);
    frame
}

fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs the CLI with `args` on the frame (from a file), discarding its output; returns the
/// exit status's success and the largest peak resident set seen, in KiB.
fn run(args: &[&str], input: &std::path::Path) -> (bool, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pi-protocol"))
        .args(args)
        .arg(input)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut peak = 0;
    loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status.success(), peak);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn every_command_streams_the_amplification_frame_under_400_mib() {
    let path = std::env::temp_dir().join(format!("pi-protocol-amplification-{}.bin", std::process::id()));
    std::fs::File::create(&path).unwrap().write_all(&amplification_frame()).unwrap();
    let mut over = Vec::new();
    // The built-in schema as a file (this test ships with the crate, without the repository).
    let schema_path = std::env::temp_dir().join(format!("pi-protocol-v8-schema-{}.json", std::process::id()));
    std::fs::write(&schema_path, pi_protocol::SCHEMA_JSON).unwrap();
    let schema = schema_path.to_str().unwrap();
    for args in [
        &["stats", "--side", "client"][..],
        &["inspect", "--side", "client"],
        &["decode", "--side", "client"],
        &["stats", "--side", "client", "--schema", schema],
        &["inspect", "--side", "client", "--schema", schema],
        &["decode", "--side", "client", "--schema", schema],
    ] {
        let (ok, peak) = run(args, &path);
        println!("pi-protocol {}: peak resident {:.1} MiB", args.join(" "), peak as f64 / 1024.0);
        assert!(ok, "pi-protocol {} failed", args.join(" "));
        if peak > LIMIT_KIB {
            over.push(format!("{}: {:.1} MiB", args.join(" "), peak as f64 / 1024.0));
        }
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&schema_path);
    assert!(over.is_empty(), "over 400 MiB: {}", over.join(", "));
}

#[test]
fn decode_with_a_schema_streams_a_frame_of_tiny_containers_within_five_times_the_frame() {
    let frame = frame_of(0x80);
    let path = std::env::temp_dir().join(format!("pi-protocol-tiny-containers-{}.bin", std::process::id()));
    std::fs::File::create(&path).unwrap().write_all(&frame).unwrap();
    let schema_path = std::env::temp_dir().join(format!("pi-protocol-v8-schema-tiny-{}.json", std::process::id()));
    std::fs::write(&schema_path, pi_protocol::SCHEMA_JSON).unwrap();
    let (ok, peak) = run(&["decode", "--side", "client", "--schema", schema_path.to_str().unwrap()], &path);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&schema_path);
    println!("pi-protocol decode --schema, 16 MiB of empty arrays: peak resident {:.1} MiB", peak as f64 / 1024.0);
    assert!(ok, "decode --schema failed");
    let bound_kib = 5 * frame.len() as u64 / 1024;
    assert!(peak <= bound_kib, "peak {:.1} MiB, above five times the frame", peak as f64 / 1024.0);
}
