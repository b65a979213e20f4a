//! `cargo xtask fuzz [--check] [--seconds N] [--jobs J] [--target T]...`: runs the cargo-fuzz
//! targets of `fuzz/` for a bounded time each, seeded from the committed corpora
//! (`fuzz/corpus/<target>/`).
//!
//! Two modes:
//! - default (grow the corpora): each target runs with a scratch corpus, then libFuzzer's
//!   `-merge=1` rebuilds `fuzz/corpus/<target>/` as the smallest set of inputs that covers
//!   everything the committed corpus and the run's new inputs cover (files are named by the
//!   SHA-1 of their content). Commit the result.
//! - `--check` (CI): the same runs, but nothing is written outside `fuzz/target/`: new inputs
//!   go to a scratch corpus and are dropped, and the task fails if `git status` of `fuzz/`
//!   changed.
//!
//! In both modes a crash, a timeout (10 s for one input) or a memory blow-up fails the task;
//! the input is kept in `fuzz/target/xtask-fuzz/<target>/artifacts/` and its path printed.
//!
//! Needs `cargo fuzz` (`cargo install cargo-fuzz --locked`). The targets are built with
//! `cargo fuzz build -s none -O -a` (optimised, with debug assertions and overflow checks, no
//! sanitizer: the crate has no `unsafe`), which works on the stable toolchain.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask fuzz [--check] [--seconds N] [--jobs J] [--target T]...";

/// Seconds per target when `--seconds` is not given.
const DEFAULT_SECONDS: u64 = 60;

struct Settings {
    check: bool,
    seconds: u64,
    jobs: usize,
    targets: Vec<String>,
}

fn parse(args: &[&str]) -> Result<Settings, String> {
    let mut settings = Settings { check: false, seconds: DEFAULT_SECONDS, jobs: 1, targets: Vec::new() };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().copied().ok_or_else(|| format!("{name} needs a value\n{USAGE}"));
        match *arg {
            "--check" => settings.check = true,
            "--seconds" => {
                settings.seconds = value("--seconds")?.parse().map_err(|e| format!("--seconds: {e}"))?;
            }
            "--jobs" => settings.jobs = value("--jobs")?.parse().map_err(|e| format!("--jobs: {e}"))?,
            "--target" => settings.targets.push(value("--target")?.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if settings.seconds == 0 || settings.jobs == 0 {
        return Err(format!("--seconds and --jobs must be at least 1\n{USAGE}"));
    }
    Ok(settings)
}

/// Runs the task with the arguments after `fuzz`.
///
/// # Errors
/// A message naming what failed: bad arguments, a missing `cargo fuzz`, a failed build, the
/// targets that crashed (with their inputs), a merge that failed, or (with `--check`) a
/// checkout the run changed.
pub fn run(args: &[&str]) -> Result<(), String> {
    let settings = parse(args)?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().ok_or("xtask has no parent directory")?.to_path_buf();
    let fuzz = root.join("fuzz");
    let before = if settings.check { Some(git_status(&fuzz)?) } else { None };

    let all = list_targets(&fuzz)?;
    let targets = if settings.targets.is_empty() { all.clone() } else { settings.targets.clone() };
    if let Some(unknown) = targets.iter().find(|t| !all.contains(t)) {
        return Err(format!("no fuzz target {unknown} (targets: {})", all.join(", ")));
    }

    let started = Instant::now();
    // The build directory is named explicitly: a CARGO_TARGET_DIR in the environment would
    // otherwise move the binaries.
    let target_dir = fuzz.join("target");
    build(&fuzz, &target_dir)?;
    let built = started.elapsed();
    let binaries = target_dir.join(host_triple()?).join("release");
    let scratch = target_dir.join("xtask-fuzz");

    let mut queue: Vec<Run> = Vec::new();
    for target in &targets {
        queue.push(Run::prepare(target, &fuzz, &binaries, &scratch)?);
    }
    let runs = run_all(queue, settings.seconds, settings.jobs)?;

    let mut failures = Vec::new();
    for run in &runs {
        println!("{}", run.summary());
        if !run.ok {
            failures.push(run.failure());
        }
    }
    if failures.is_empty() && !settings.check {
        for run in &runs {
            run.merge()?;
        }
    }
    println!(
        "fuzz: {} targets, {} s each on {} jobs; build {:.0} s, total {:.0} s",
        runs.len(),
        settings.seconds,
        settings.jobs,
        built.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    if let Some(before) = before {
        let after = git_status(&fuzz)?;
        if after != before {
            return Err(format!("the fuzz run changed the checkout:\n{after}"));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// One target's run: its command, scratch directories and, once finished, its statistics.
struct Run {
    target: String,
    binary: PathBuf,
    corpus: PathBuf,
    scratch_corpus: PathBuf,
    artifacts: PathBuf,
    log: PathBuf,
    ok: bool,
    stats: Vec<(String, String)>,
}

impl Run {
    fn prepare(target: &str, fuzz: &Path, binaries: &Path, scratch: &Path) -> Result<Self, String> {
        let dir = scratch.join(target);
        let _ = std::fs::remove_dir_all(&dir);
        let scratch_corpus = dir.join("corpus");
        let artifacts = dir.join("artifacts");
        for d in [&scratch_corpus, &artifacts] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let corpus = fuzz.join("corpus").join(target);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        Ok(Run {
            target: target.to_owned(),
            binary: binaries.join(target),
            corpus,
            scratch_corpus,
            artifacts,
            log: dir.join("fuzz.log"),
            ok: false,
            stats: Vec::new(),
        })
    }

    /// The libFuzzer run: new inputs go to the scratch corpus, the committed one only seeds.
    fn spawn(&self, seconds: u64) -> Result<Child, String> {
        let log = std::fs::File::create(&self.log).map_err(|e| format!("{}: {e}", self.log.display()))?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        Command::new(&self.binary)
            .arg(format!("-max_total_time={seconds}"))
            .arg("-timeout=10")
            .arg("-rss_limit_mb=2048")
            .arg("-print_final_stats=1")
            .arg(format!("-artifact_prefix={}/", self.artifacts.display()))
            .arg(&self.scratch_corpus)
            .arg(&self.corpus)
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.binary.display()))
    }

    fn finish(&mut self, ok: bool) {
        self.ok = ok;
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        self.stats = log
            .lines()
            .filter_map(|line| line.strip_prefix("stat::"))
            .filter_map(|line| line.split_once(':'))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect();
    }

    fn stat(&self, name: &str) -> &str {
        self.stats.iter().find(|(k, _)| k == name).map_or("?", |(_, v)| v.as_str())
    }

    fn summary(&self) -> String {
        format!(
            "{:<16} {:>4}  {:>10} runs  {:>7} runs/s  {:>5} new inputs  peak {} MB",
            self.target,
            if self.ok { "ok" } else { "FAIL" },
            self.stat("number_of_executed_units"),
            self.stat("average_exec_per_sec"),
            self.stat("new_units_added"),
            self.stat("peak_rss_mb"),
        )
    }

    /// What to tell about a failed run: the end of its log and the inputs it left.
    fn failure(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        let inputs: Vec<String> = std::fs::read_dir(&self.artifacts)
            .map(|dir| dir.filter_map(Result::ok).map(|e| e.path().display().to_string()).collect())
            .unwrap_or_default();
        format!(
            "fuzz target {} failed (log {}):\n{tail}\ninputs: {}\nreplay: {} <input>",
            self.target,
            self.log.display(),
            inputs.join(" "),
            self.binary.display()
        )
    }

    /// Rebuilds the committed corpus as the smallest set covering it and the new inputs.
    fn merge(&self) -> Result<(), String> {
        let merged = self.scratch_corpus.with_file_name("merged");
        let _ = std::fs::remove_dir_all(&merged);
        std::fs::create_dir_all(&merged).map_err(|e| format!("{}: {e}", merged.display()))?;
        let before = count(&self.corpus);
        let status = Command::new(&self.binary)
            .arg("-merge=1")
            .arg("-timeout=10")
            .arg(&merged)
            .arg(&self.corpus)
            .arg(&self.scratch_corpus)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("cannot start {}: {e}", self.binary.display()))?;
        if !status.success() || count(&merged) == 0 {
            return Err(format!("merging the {} corpus failed ({status})", self.target));
        }
        std::fs::remove_dir_all(&self.corpus).map_err(|e| format!("{}: {e}", self.corpus.display()))?;
        std::fs::rename(&merged, &self.corpus).map_err(|e| format!("{}: {e}", self.corpus.display()))?;
        println!("{:<16} corpus {before} -> {} inputs", self.target, count(&self.corpus));
        Ok(())
    }
}

fn count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, Iterator::count)
}

/// Runs every target, `jobs` at a time, and returns them finished.
fn run_all(mut queue: Vec<Run>, seconds: u64, jobs: usize) -> Result<Vec<Run>, String> {
    queue.reverse();
    let mut running: Vec<(Run, Child)> = Vec::new();
    let mut done = Vec::new();
    while !queue.is_empty() || !running.is_empty() {
        while running.len() < jobs {
            let Some(run) = queue.pop() else { break };
            let child = run.spawn(seconds)?;
            running.push((run, child));
        }
        let mut still = Vec::new();
        for (mut run, mut child) in running {
            match child.try_wait().map_err(|e| e.to_string())? {
                Some(status) => {
                    run.finish(status.success());
                    done.push(run);
                }
                None => still.push((run, child)),
            }
        }
        running = still;
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(done)
}

/// The `[[bin]]` targets of `fuzz/Cargo.toml`, in file order.
fn list_targets(fuzz: &Path) -> Result<Vec<String>, String> {
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).map_err(|e| format!("fuzz/Cargo.toml: {e}"))?;
    let mut targets = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if let Some(name) = line.strip_prefix("name = ").filter(|_| in_bin) {
            targets.push(name.trim_matches('"').to_owned());
        }
    }
    if targets.is_empty() {
        return Err("fuzz/Cargo.toml declares no [[bin]] target".to_owned());
    }
    Ok(targets)
}

fn build(fuzz: &Path, target_dir: &Path) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let version = Command::new(&cargo).args(["fuzz", "--version"]).output();
    if !version.is_ok_and(|out| out.status.success()) {
        return Err("`cargo fuzz` is not installed: run `cargo install cargo-fuzz --locked`".to_owned());
    }
    let status = Command::new(&cargo)
        .current_dir(fuzz)
        .args(["fuzz", "build", "-s", "none", "-O", "-a", "--target-dir"])
        .arg(target_dir)
        .status()
        .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo fuzz build failed ({status})"))
    }
}

/// The host's target triple, where `cargo fuzz` puts the binaries (`rustc -vV`).
fn host_triple() -> Result<String, String> {
    let out = Command::new("rustc").arg("-vV").output().map_err(|e| format!("cannot run rustc: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(str::to_owned)
        .ok_or_else(|| "rustc -vV names no host".to_owned())
}

/// `git status --porcelain` of `dir`, ignored files included, without the build directory.
fn git_status(dir: &Path) -> Result<String, String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["status", "--porcelain", "--ignored", "--", ".", ":!target"])
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!("git status failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
