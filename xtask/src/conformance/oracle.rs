//! Installs and runs the reference oracle (`xtask/oracle/oracle.mjs` under node, with the
//! reference package pinned by `xtask/oracle/package-lock.json`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The pinned reference version; the installed copy is checked against it.
pub const REFERENCE_VERSION: &str = "0.85.1";

const FILES: [&str; 3] = ["package.json", "package-lock.json", "oracle.mjs"];

/// Copies the oracle into `dir` and installs the pinned package there (`npm ci`) unless it is
/// already installed at the pinned version. Returns the script's path.
pub fn install(source: &Path, dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut lock_changed = false;
    for file in FILES {
        let from = source.join(file);
        let to = dir.join(file);
        let content = std::fs::read(&from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        if std::fs::read(&to).ok().as_deref() != Some(content.as_slice()) {
            lock_changed |= file != "oracle.mjs";
            std::fs::write(&to, content).map_err(|e| format!("cannot write {}: {e}", to.display()))?;
        }
    }
    let installed = dir.join("node_modules/@earendil-works/pi-protocol/package.json");
    let version = std::fs::read_to_string(&installed)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned));
    if lock_changed || version.as_deref() != Some(REFERENCE_VERSION) {
        eprintln!("conformance: installing @earendil-works/pi-protocol@{REFERENCE_VERSION} into {}", dir.display());
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"])
            .current_dir(dir)
            .status()
            .map_err(|e| format!("cannot run npm (is node installed?): {e}"))?;
        if !status.success() {
            return Err(format!("npm ci failed in {} ({status})", dir.display()));
        }
    }
    Ok(dir.join("oracle.mjs"))
}

/// Sends every request to one node process and returns the verdicts, in order.
pub fn ask(script: &Path, requests: &[Value]) -> Result<Vec<Value>, String> {
    let mut child = Command::new("node")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start node: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let verdicts = std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> std::io::Result<()> {
            let mut out = std::io::BufWriter::new(&mut stdin);
            for r in requests {
                serde_json::to_writer(&mut out, r)?;
                out.write_all(b"\n")?;
            }
            out.flush()
            // stdin is dropped here, so the oracle sees end of input.
        });
        let mut verdicts = Vec::with_capacity(requests.len());
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|e| format!("reading the oracle: {e}"))?;
            verdicts.push(serde_json::from_str::<Value>(&line).map_err(|e| format!("bad verdict {line:?}: {e}"))?);
        }
        writer
            .join()
            .map_err(|_| "writer thread panicked".to_owned())?
            .map_err(|e| format!("writing to the oracle: {e}"))?;
        Ok::<_, String>(verdicts)
    })?;
    let status = child.wait().map_err(|e| format!("waiting for node: {e}"))?;
    if !status.success() || verdicts.len() != requests.len() {
        return Err(format!("the oracle answered {} of {} requests ({status})", verdicts.len(), requests.len()));
    }
    Ok(verdicts)
}
