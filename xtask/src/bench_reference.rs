//! `cargo xtask bench-reference [--seconds S]`: times the reference TypeScript package on the
//! frames of the Rust benchmarks (baseline (b) of `docs/PERFORMANCE.md`).
//!
//! Steps:
//! 1. `cargo run --release --example bench_driver -- frames <target>/bench-frames` writes every
//!    workload's frames (built by the Rust encoder, byte-exact with the reference) and a
//!    manifest;
//! 2. `xtask/bench/package.json` (pinning `@earendil-works/pi-protocol` 0.85.1) and
//!    `xtask/bench/bench.mjs` are copied to `<target>/bench-node/`, where `npm install` runs
//!    once (again only when package.json changes);
//! 3. `node bench.mjs` times decode and encode of every workload, prints time per iteration,
//!    MB/s and messages/s, checks that re-encoding reproduces every frame byte for byte, and
//!    writes the figures to `<target>/bench-node/results.json` (read by
//!    `bench_driver report`).
//!
//! Needs node and npm on the PATH and access to the npm registry for the first install.

use std::path::{Path, PathBuf};
use std::process::Command;

const USAGE: &str = "usage: cargo xtask bench-reference [--seconds S]";

/// Runs the task with the arguments after `bench-reference`.
///
/// # Errors
/// A message naming the step that failed (bad arguments, a failing command, a missing tool).
pub fn run(args: &[&str]) -> Result<(), String> {
    let seconds = match args {
        [] => "2".to_owned(),
        ["--seconds", s] if s.parse::<f64>().is_ok_and(|v| v > 0.0) => (*s).to_owned(),
        _ => return Err(USAGE.to_owned()),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().ok_or("xtask has no parent directory")?.to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let target = if target.is_absolute() { target } else { root.join(target) };
    let frames = target.join("bench-frames");
    let node_dir = target.join("bench-node");

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut driver = Command::new(cargo);
    driver.current_dir(&root).args(["run", "--quiet", "--release", "--example", "bench_driver", "--", "frames"]);
    status(driver.arg(&frames), "writing the benchmark frames")?;

    std::fs::create_dir_all(&node_dir).map_err(|e| format!("{}: {e}", node_dir.display()))?;
    let package = read(&root.join("xtask/bench/package.json"))?;
    let installed = node_dir.join("node_modules/@earendil-works/pi-protocol/package.json");
    let fresh = read(&node_dir.join("package.json")).ok().as_ref() == Some(&package) && installed.is_file();
    write(&node_dir.join("package.json"), &package)?;
    write(&node_dir.join("bench.mjs"), &read(&root.join("xtask/bench/bench.mjs"))?)?;
    if !fresh {
        let mut npm = Command::new("npm");
        npm.current_dir(&node_dir).args(["install", "--no-audit", "--no-fund", "--ignore-scripts", "--silent"]);
        status(&mut npm, "npm install in the bench-node directory")?;
    }

    let results = node_dir.join("results.json");
    let mut node = Command::new("node");
    node.current_dir(&node_dir).arg("bench.mjs").arg(&frames).arg("--json").arg(&results);
    status(node.args(["--seconds", &seconds]), "node bench.mjs")?;
    println!("results: {}", results.display());
    Ok(())
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn status(command: &mut Command, what: &str) -> Result<(), String> {
    let status = command.status().map_err(|e| format!("{what}: cannot start {:?}: {e}", command.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}
