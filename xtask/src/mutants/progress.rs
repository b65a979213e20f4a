//! The progress file of `cargo xtask mutants --next` (`docs/mutants-progress.json`): each area
//! split into shards, each shard a list of files (and, for a large file, one round-robin part of
//! its mutants), with the figure of its last measurement.
//!
//! A shard's record names the commit it was measured at and a hash of the contents of the files
//! it covers; the shard is *stale* when that hash no longer matches the working tree (the code it
//! covers changed since), *unmeasured* when it has no record. `--next` runs the first shard that
//! is either, so that nothing is measured twice.
//!
//! The file is JSON: `{"format": 1, "areas": {"<area>": [<shard>, ...]}}`, a shard being
//! `{"files": [...], "part": "K/N" (optional), "result": null | {...}}`. A file of an area that
//! no shard covers (a new source file) gets a shard of its own, appended at the end.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

/// Where the progress file lives, from the workspace root.
pub const PATH: &str = "docs/mutants-progress.json";

/// One shard as the progress file defines it.
pub struct Shard {
    pub files: Vec<String>,
    /// `K/N`: only the K-th round-robin part of the files' mutants.
    pub part: Option<String>,
    /// The hash of the covered files when the shard was last measured (`None`: never).
    pub measured_hash: Option<String>,
}

/// The measured figure of one shard.
pub struct Figure {
    pub caught: usize,
    pub timeout: usize,
    pub missed: Vec<String>,
    pub unviable: usize,
    pub equivalent: usize,
    pub seconds: u64,
    /// Per tier: its label, the mutants it caught, its seconds.
    pub tiers: Vec<(String, usize, u64)>,
}

/// The progress file, as read.
pub struct Progress {
    value: Value,
}

impl Progress {
    /// Reads the progress file.
    ///
    /// # Errors
    /// When it cannot be read or is not the expected JSON.
    pub fn load(root: &Path) -> Result<Self, String> {
        let path = root.join(PATH);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if value.get("format") != Some(&json!(1)) || !value.get("areas").is_some_and(Value::is_object) {
            return Err(format!("{}: not a format-1 progress file", path.display()));
        }
        Ok(Progress { value })
    }

    /// Writes the progress file back.
    ///
    /// # Errors
    /// When it cannot be written.
    pub fn save(&self, root: &Path) -> Result<(), String> {
        let path = root.join(PATH);
        let mut text = serde_json::to_string_pretty(&self.value).map_err(|e| e.to_string())?;
        text.push('\n');
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn area_mut(&mut self, area: &str) -> &mut Vec<Value> {
        let areas = self.value["areas"].as_object_mut().expect("checked in load");
        let entry = areas.entry(area.to_owned()).or_insert_with(|| json!([]));
        if !entry.is_array() {
            *entry = json!([]);
        }
        entry.as_array_mut().expect("made an array")
    }

    /// The shards of `area`, in order.
    pub fn shards(&self, area: &str) -> Vec<Shard> {
        let Some(list) = self.value["areas"].get(area).and_then(Value::as_array) else { return Vec::new() };
        list.iter()
            .map(|s| Shard {
                files: s["files"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                part: s.get("part").and_then(Value::as_str).map(str::to_owned),
                measured_hash: s.get("result").and_then(|r| r.get("hash")).and_then(Value::as_str).map(str::to_owned),
            })
            .collect()
    }

    /// Appends a shard for the files of `with_mutants` (the area's files that have mutants) that
    /// no shard covers; returns them.
    pub fn cover(&mut self, area: &str, with_mutants: &[String]) -> Vec<String> {
        let covered: Vec<String> = self.shards(area).into_iter().flat_map(|s| s.files).collect();
        let new: Vec<String> = with_mutants.iter().filter(|f| !covered.contains(f)).cloned().collect();
        if !new.is_empty() {
            self.area_mut(area).push(json!({ "files": new, "result": null }));
        }
        new
    }

    /// The figure recorded for shard `index` of `area`, as one line.
    pub fn describe(&self, area: &str, index: usize) -> Option<String> {
        let r = self.value["areas"].get(area)?.get(index)?.get("result")?;
        if r.is_null() {
            return None;
        }
        Some(format!(
            "{} caught, {} timeout, {} missed, {} unviable, {} equivalent: {} (at {})",
            r["caught"], r["timeout"], r["missed"], r["unviable"], r["equivalent"], r["score"], r["commit"]
        ))
    }

    /// Records the figure of shard `index` of `area`, measured at `commit` with the files
    /// hashing to `hash`.
    pub fn record(&mut self, area: &str, index: usize, commit: &str, hash: &str, figure: &Figure) {
        let judged = figure.caught + figure.timeout + figure.missed.len();
        let score = if judged == 0 {
            Value::Null
        } else {
            json!(format!("{:.1}%", (figure.caught + figure.timeout) as f64 * 100.0 / judged as f64))
        };
        let tiers: Vec<Value> = figure
            .tiers
            .iter()
            .map(|(label, caught, seconds)| json!({ "tier": label, "caught": caught, "seconds": seconds }))
            .collect();
        let result = json!({
            "commit": commit,
            "hash": hash,
            "caught": figure.caught,
            "timeout": figure.timeout,
            "missed": figure.missed.len(),
            "unviable": figure.unviable,
            "equivalent": figure.equivalent,
            "score": score,
            "seconds": figure.seconds,
            "tiers": tiers,
            "missed_mutants": figure.missed,
        });
        if let Some(shard) = self.area_mut(area).get_mut(index) {
            shard["result"] = result;
        }
    }
}

/// A hash of the contents of `files` (paths from `root`) as the working tree has them: git's
/// blob hashes of each, hashed together. A missing file hashes as `missing`.
///
/// # Errors
/// When git cannot be run.
pub fn hash(root: &Path, files: &[String]) -> Result<String, String> {
    let mut blobs = String::new();
    for file in files {
        let blob =
            if root.join(file).exists() { git(root, &["hash-object", "--", file])? } else { "missing".to_owned() };
        blobs.push_str(&format!("{file} {}\n", blob.trim()));
    }
    let mut child = Command::new("git")
        .current_dir(root)
        .args(["hash-object", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().ok_or("git hash-object: no stdin")?;
        stdin.write_all(blobs.as_bytes()).map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err("git hash-object --stdin failed".to_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `HEAD`'s commit hash.
///
/// # Errors
/// When git cannot be run.
pub fn head(root: &Path) -> Result<String, String> {
    Ok(git(root, &["rev-parse", "HEAD"])?.trim().to_owned())
}

fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git").current_dir(root).args(args).output().map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!("git {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress() -> Progress {
        Progress {
            value: json!({"format": 1, "areas": {"runtime": [
                {"files": ["a.rs"], "result": null},
                {"files": ["b.rs"], "part": "1/2", "result": {"hash": "h1"}},
            ]}}),
        }
    }

    #[test]
    fn shards_read_their_files_part_and_measured_hash() {
        let shards = progress().shards("runtime");
        assert_eq!(shards.len(), 2);
        assert_eq!(shards[0].files, ["a.rs"]);
        assert_eq!((shards[0].part.as_deref(), shards[0].measured_hash.as_deref()), (None, None));
        assert_eq!((shards[1].part.as_deref(), shards[1].measured_hash.as_deref()), (Some("1/2"), Some("h1")));
        assert!(progress().shards("gen").is_empty());
    }

    #[test]
    fn uncovered_files_get_a_shard_of_their_own_once() {
        let mut p = progress();
        let files = ["a.rs".to_owned(), "b.rs".to_owned(), "c.rs".to_owned()];
        assert_eq!(p.cover("runtime", &files), ["c.rs"]);
        assert!(p.cover("runtime", &files).is_empty());
        assert_eq!(p.shards("runtime")[2].files, ["c.rs"]);
    }

    #[test]
    fn a_record_scores_timeouts_as_caught_and_keeps_the_missed_names() {
        let mut p = progress();
        let figure = Figure {
            caught: 17,
            timeout: 1,
            missed: vec!["a.rs:1:1: replace f with ()".to_owned(), "a.rs:2:1: replace g with ()".to_owned()],
            unviable: 3,
            equivalent: 1,
            seconds: 90,
            tiers: vec![("one".to_owned(), 17, 90)],
        };
        p.record("runtime", 0, "abc", "h0", &figure);
        let r = &p.value["areas"]["runtime"][0]["result"];
        assert_eq!(r["score"], "90.0%");
        assert_eq!((r["missed"].as_u64(), r["hash"].as_str()), (Some(2), Some("h0")));
        assert_eq!(p.shards("runtime")[0].measured_hash.as_deref(), Some("h0"));
        assert!(p.describe("runtime", 0).unwrap().starts_with("17 caught, 1 timeout, 2 missed, 3 unviable"));
        assert_eq!(p.describe("runtime", 1).map(|_| ()), Some(()));
    }
}
