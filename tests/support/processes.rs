//! Running the example binaries from tests and benches (included with `#[path]`): building them,
//! reading the address they listen on, collecting their JSON lines, and killing whatever is left
//! running when a `Process` is dropped. Not every includer uses every part.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a process may take to listen or to exit.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// The folder of the example binaries, built first with `cargo build` in the profile of the
/// running test or bench (a no-op when they are fresh).
///
/// They are built as the README's `cargo test --workspace --all-features` builds them (every
/// package's features unified, every feature on), so after that command the build here has
/// nothing to do; building them for this package alone would unify `serde_json`'s features
/// differently and rebuild the facade and its dependencies once more (about 40 s of a first run).
pub fn built_examples() -> PathBuf {
    build_examples(&["server", "client", "router"])
}

/// [`built_examples`] for the examples `names`.
pub fn build_examples(names: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap().to_path_buf();
    let target_dir = profile_dir.parent().unwrap();
    let mut build = Command::new(env!("CARGO"));
    build.current_dir(env!("CARGO_MANIFEST_DIR")).args(["build", "--quiet", "--workspace", "--all-features"]);
    for name in names {
        build.args(["--example", name]);
    }
    build.arg("--target-dir").arg(target_dir);
    // The examples are built with the profile this test was built with: `debug` is the dev
    // profile's directory, any other is named after its profile (`cargo xtask mutants` builds
    // with `mutants`).
    match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") | None => {}
        Some(profile) => {
            build.arg("--profile").arg(profile);
        }
    }
    let status = build.status().expect("cargo runs");
    assert!(status.success(), "building the examples failed");
    profile_dir.join("examples")
}

/// A running example: killed when dropped; its stdout lines are collected by a thread.
pub struct Process {
    name: String,
    child: Child,
    first_line: mpsc::Receiver<String>,
    lines: Option<JoinHandle<Vec<String>>>,
}

impl Process {
    /// Starts example `name` with `args`.
    pub fn spawn(examples: &Path, name: &str, args: &[&str]) -> Process {
        let mut child = Command::new(examples.join(name))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (first, first_line) = mpsc::channel();
        let lines = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines.is_empty() {
                    let _ = first.send(line.clone());
                }
                lines.push(line);
            }
            lines
        });
        Process { name: name.to_owned(), child, first_line, lines: Some(lines) }
    }

    /// The address of its `listening on ADDR` line.
    pub fn address(&self) -> String {
        let line = self.first_line.recv_timeout(DEADLINE).unwrap_or_else(|_| panic!("{} never listened", self.name));
        line.strip_prefix("listening on ").unwrap_or_else(|| panic!("{}: {line}", self.name)).to_owned()
    }

    /// Waits for it to exit (killing it past the deadline) and returns its JSON lines.
    pub fn finish(mut self) -> Vec<Value> {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("{} did not exit in time", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let lines = self.lines.take().unwrap().join().unwrap();
        assert!(status.success(), "{} failed ({status}): {lines:?}", self.name);
        lines.iter().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

impl Process {
    /// Stops a process that serves until stopped, and returns its JSON lines.
    pub fn stop(mut self) -> Vec<Value> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let lines = self.lines.take().unwrap().join().unwrap();
        lines.iter().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
