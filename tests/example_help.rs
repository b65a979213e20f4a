//! Every example's `--help`: printed on stdout with exit status 0; unknown arguments go to
//! stderr with status 2.
#![cfg(feature = "tokio")]

use std::process::Command;

#[path = "support/processes.rs"]
mod processes;

const EXAMPLES: [&str; 4] = ["server", "client", "router", "bench_driver"];

#[test]
fn every_example_prints_its_help_on_stdout() {
    let examples = processes::build_examples(&EXAMPLES);
    for name in EXAMPLES {
        for flag in ["--help", "-h"] {
            let out = Command::new(examples.join(name)).arg(flag).output().unwrap();
            let text = String::from_utf8(out.stdout).unwrap();
            assert_eq!(out.status.code(), Some(0), "{name} {flag}: {}", String::from_utf8_lossy(&out.stderr));
            assert!(out.stderr.is_empty(), "{name} {flag}: {}", String::from_utf8_lossy(&out.stderr));
            assert!(text.contains(&format!("usage: {name}")) && text.contains("-h, --help"), "{name} {flag}: {text}");
        }
        let out = Command::new(examples.join(name)).arg("--frobnicate").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name} --frobnicate");
        assert!(out.stdout.is_empty() && String::from_utf8_lossy(&out.stderr).contains("usage:"), "{name}");
    }
}
