//! `cargo xtask load [--short] [--connections N,N,...] [--seconds S] [--faults-seconds S] [--no-reference]
//! [--no-pi-server | --pi-server] [--baseline REV [--baseline-features F]]`:
//! load and faults over real sockets, on loopback (docs/PERFORMANCE.md, section "Load and
//! faults over real sockets").
//!
//! Four servers, one at a time, each on a core of its own (`taskset -c 0`), the load
//! generator (`examples/load`) on the other (`taskset -c 1`), when the machine has two:
//! - `driver`: the example server (`examples/server.rs`, `--quiet`), written the documented way
//!   (`ServerConnection` run by `io::ServerDriver`);
//! - `bare`: `load serve-bare`, the same answers written straight on `io::ServerCodec` (the
//!   baseline of the CPU cost);
//! - `reference`: `xtask/load/reference-server.mjs` on the published TypeScript package, under
//!   node (installed with npm into `<target>/load-node/` once);
//! - `pi-server`: the real `@earendil-works/pi-server` 0.85.1 (its testing host, with a Chord
//!   provider of the services the generator calls), `tests/realpeer/real-server.mjs --listen
//!   ADDR --services load`, on node 22 (`tests/realpeer/install.sh` installs both into
//!   `<repo>/target/realpeer-node` once). Bench only: its codes differ from the example
//!   server's, which the faults run checks.
//!
//! For every server and number of connections, `load bench` connects them all (the server's
//! resident memory is sampled while they idle), then keeps 16 requests in flight on each;
//! the server's CPU time and memory are sampled at the start and end of the measured window.
//! Then `load faults` runs a thousand clients of every kind (see `examples/load/faults.rs`)
//! against the example server, whose log is checked line by line (`server_log.rs`), and
//! against the reference server; after it, the example server must still answer.
//!
//! `--baseline REV` adds a fifth server, `baseline`: the example server as it was at the git
//! revision `REV`, exported with `git archive` into `<target>/load-baseline/<commit>/` and built
//! there (release, `--features` `--baseline-features`, default `tokio`, its own target directory
//! `<target>/load-baseline/target`), measured in the same run right after `driver` at every
//! number of connections, so that "the normal path loses nothing" is one run side by side
//! (issue 18). The ratios gain the driver's messages per second and CPU per message over the
//! baseline's.
//!
//! `--short` (CI): debug builds, the example server only (`--pi-server` adds the real one), 256 connections for 2 seconds, then
//! the faults run for 12 seconds. Figures are reported, never judged: only correctness fails
//! the run (errors of the clients, of the server's log, a server that dies or stops
//! answering, or whose memory grows past a bound no bounded buffering reaches). The full run
//! writes `<target>/load/results.json`.

mod process;
mod server_log;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use process::{clock_ticks, sample, Pinning, Running, Sample};
use server_log::ServerLog;

const USAGE: &str =
    "usage: cargo xtask load [--short] [--connections N,N,...] [--seconds S] [--faults-seconds S] [--no-reference] [--no-pi-server | --pi-server] [--baseline REV [--baseline-features F]]";

/// How long the generator may take for one run before it is declared stuck.
const RUN_DEADLINE: Duration = Duration::from_secs(300);

/// Requests in flight per connection (the measurement).
const IN_FLIGHT: usize = 16;

/// Connections of the faults run.
const FAULT_CONNECTIONS: usize = 1000;

/// The most resident memory the example server may gain per connection of the faults run, at
/// its peak: a connection holds at most `DriverOptions::pause_reading_at` (64 KiB) of answers
/// waiting for a slow reader, and far less in every other case, so this is not a figure but a
/// bound that holds unless something buffers without limit.
const MEMORY_BOUND: usize = 64 * 1024;

struct Settings {
    short: bool,
    connections: Vec<usize>,
    seconds: f64,
    warmup: f64,
    idle: f64,
    faults_seconds: f64,
    reference: bool,
    /// Whether the real pi-server is measured too (bench only).
    pi_server: bool,
    /// The git revision whose example server is measured beside today's.
    baseline: Option<String>,
    /// The features the baseline's example server is built with.
    baseline_features: String,
}

fn parse(args: &[&str]) -> Result<Settings, String> {
    let short = args.contains(&"--short");
    let mut settings = Settings {
        short,
        connections: if short { vec![256] } else { vec![16, 256, 1000] },
        seconds: if short { 2.0 } else { 5.0 },
        warmup: if short { 0.5 } else { 1.0 },
        idle: if short { 0.5 } else { 1.0 },
        faults_seconds: if short { 12.0 } else { 20.0 },
        reference: !short,
        pi_server: !short,
        baseline: None,
        baseline_features: "tokio".to_owned(),
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut number = |name: &str| -> Result<f64, String> {
            let text = it.next().ok_or(format!("{name} needs a value"))?;
            text.parse().ok().filter(|v: &f64| *v > 0.0).ok_or(format!("{name}: {text} is not a positive number"))
        };
        match *arg {
            "--short" => {}
            "--no-reference" => settings.reference = false,
            "--no-pi-server" => settings.pi_server = false,
            "--pi-server" => settings.pi_server = true,
            "--baseline" => {
                let rev = it.next().ok_or("--baseline needs a git revision")?;
                settings.baseline = Some((*rev).to_owned());
            }
            "--baseline-features" => {
                settings.baseline_features = (*it.next().ok_or("--baseline-features needs a value")?).to_owned();
            }
            "--seconds" => settings.seconds = number("--seconds")?,
            "--faults-seconds" => settings.faults_seconds = number("--faults-seconds")?,
            "--connections" => {
                let text = it.next().ok_or("--connections needs a value")?;
                settings.connections = text
                    .split(',')
                    .map(|n| n.parse().ok().filter(|n| *n > 0).ok_or(format!("--connections: {n} is not a count")))
                    .collect::<Result<_, _>>()?;
            }
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(settings)
}

/// The servers measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    Driver,
    Bare,
    Reference,
    /// The real pi-server (tests/realpeer/real-server.mjs).
    Pi,
    /// The example server built from `--baseline REV`.
    Baseline,
}

impl Server {
    fn name(self) -> &'static str {
        match self {
            Server::Driver => "driver",
            Server::Bare => "bare",
            Server::Reference => "reference",
            Server::Pi => "pi-server",
            Server::Baseline => "baseline",
        }
    }
}

/// Paths and tools of the run.
struct Harness {
    examples: PathBuf,
    node_dir: PathBuf,
    /// node 22 and the real pi-server's script, when it is measured.
    pi_server: Option<(PathBuf, PathBuf)>,
    /// The baseline's example server binary, when one is measured.
    baseline: Option<PathBuf>,
    pinning: Pinning,
    ticks: f64,
}

impl Harness {
    fn start(&self, server: Server, quiet: bool) -> Result<Running, String> {
        let mut args = vec!["--listen", "127.0.0.1:0"];
        let command = match server {
            Server::Driver | Server::Baseline => {
                if quiet {
                    args.push("--quiet");
                }
                let binary = match server {
                    Server::Baseline => self.baseline.clone().ok_or("no baseline was built")?,
                    _ => self.examples.join("server"),
                };
                self.pinning.command(0, &binary, &args)
            }
            Server::Bare => {
                args.insert(0, "serve-bare");
                self.pinning.command(0, &self.examples.join("load"), &args)
            }
            Server::Reference => {
                let script = self.node_dir.join("reference-server.mjs");
                let script = script.to_str().ok_or("the target directory's path is not UTF-8")?;
                args.insert(0, script);
                let mut command = self.pinning.command(0, Path::new("node"), &args);
                command.current_dir(&self.node_dir);
                command
            }
            Server::Pi => {
                let (node, script) = self.pi_server.as_ref().ok_or("the real pi-server is not installed")?;
                let script = script.to_str().ok_or("the repository's path is not UTF-8")?;
                args.splice(0..0, [script]);
                args.extend(["--services", "load", "--quiet"]);
                self.pinning.command(0, node, &args)
            }
        };
        Running::start(server.name(), command)
    }

    fn generator(&self, args: &[&str]) -> Result<Running, String> {
        Running::start("load", self.pinning.command(1, &self.examples.join("load"), args))
    }

    fn sample(&self, process: &Running) -> Result<Sample, String> {
        sample(process.pid(), self.ticks).ok_or_else(|| format!("{} is gone", process.name))
    }
}

/// Runs the task with the arguments after `load`.
///
/// # Errors
/// A message naming what failed: a build, a process, or a check (with the errors found).
pub fn run(args: &[&str]) -> Result<(), String> {
    let mut settings = parse(args)?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().ok_or("xtask has no parent directory")?.to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let target = if target.is_absolute() { target } else { root.join(target) };
    build(&root, &target, settings.short)?;
    let node_dir = target.join("load-node");
    if settings.reference {
        match missing_node() {
            Some(tool) => {
                println!("load: {tool} is not installed: the reference column is skipped (the reference server runs under node, installed with npm)");
                settings.reference = false;
            }
            None => install_reference(&root, &node_dir)?,
        }
    }
    let pi_server = if settings.pi_server {
        match install_pi_server(&root) {
            Ok(node) => Some((node, root.join("tests/realpeer/real-server.mjs"))),
            Err(why) => {
                println!("load: the pi-server column is skipped: {why}");
                settings.pi_server = false;
                None
            }
        }
    } else {
        None
    };
    let baseline = match &settings.baseline {
        Some(rev) => Some(build_baseline(&root, &target, rev, &settings.baseline_features, settings.short)?),
        None => None,
    };
    check_open_files(FAULT_CONNECTIONS.max(settings.connections.iter().copied().max().unwrap_or(0)))?;
    let harness = Harness {
        examples: target.join(if settings.short { "debug" } else { "release" }).join("examples"),
        node_dir,
        pi_server,
        baseline,
        pinning: Pinning::detect(),
        ticks: clock_ticks(),
    };
    println!(
        "load: {} build, {}",
        if settings.short { "debug" } else { "release" },
        if harness.pinning.enabled {
            "server on core 0, generator on core 1"
        } else {
            "not pinned (fewer than two cores, or no taskset)"
        }
    );

    let mut servers = vec![Server::Driver];
    if settings.baseline.is_some() {
        servers.push(Server::Baseline);
    }
    if !settings.short {
        servers.push(Server::Bare);
    }
    if settings.reference {
        servers.push(Server::Reference);
    }
    if settings.pi_server {
        servers.push(Server::Pi);
    }
    let mut bench = Vec::new();
    let mut failures = Vec::new();
    for &connections in &settings.connections {
        for &server in &servers {
            let figures = bench_run(&harness, &settings, server, connections)?;
            print_bench(&figures);
            if figures["error_count"].as_u64() != Some(0) {
                failures.push(format!("{} with {connections} connections: {}", server.name(), figures["errors"]));
            }
            bench.push(figures);
        }
    }

    let mut faults = Vec::new();
    let fault_servers: &[Server] =
        if settings.reference { &[Server::Driver, Server::Reference] } else { &[Server::Driver] };
    for &server in fault_servers {
        let verdict = faults_run(&harness, &settings, server)?;
        print_faults(&verdict);
        let per_connection = verdict["peak_bytes_per_connection"].as_f64().unwrap_or(f64::NAN);
        if server == Server::Driver && (per_connection.is_nan() || per_connection > MEMORY_BOUND as f64) {
            failures.push(format!(
                "faults against the example server: {per_connection:.0} bytes per connection at the peak, over {MEMORY_BOUND}"
            ));
        }
        for (what, errors) in
            [("clients", &verdict["clients"]), ("server log", &verdict["server_log"]), ("after", &verdict["after"])]
        {
            if errors["error_count"].as_u64().is_some_and(|n| n > 0) {
                failures.push(format!("faults against {} ({what}): {}", server.name(), errors["errors"]));
            }
        }
        faults.push(verdict);
    }

    let ratios = ratios(&bench);
    print_ratios(&ratios);
    print_table(&bench, &ratios);
    if !settings.short {
        let baseline =
            settings.baseline.as_ref().map(|rev| json!({"revision": rev, "features": settings.baseline_features}));
        let results = json!({
            "bench": bench,
            "faults": faults,
            "ratios": ratios,
            "pinned": harness.pinning.enabled,
            "baseline": baseline,
        });
        let dir = target.join("load");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join("results.json");
        std::fs::write(&path, serde_json::to_string_pretty(&results).expect("JSON"))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!("results: {}", path.display());
    }
    if failures.is_empty() {
        println!("load: every check held");
        Ok(())
    } else {
        Err(format!("load: {} checks failed:\n  {}", failures.len(), failures.join("\n  ")))
    }
}

/// Builds the example server and the generator.
fn build(root: &Path, target: &Path, short: bool) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    // The features and packages of the README's test command's build, so that CI, which ran it
    // first, finds both binaries fresh.
    command.current_dir(root).args(["build", "--quiet", "-p", "pi-protocol", "--features", "tokio,uuid,chord"]);
    command.args(["--example", "server", "--example", "load", "--target-dir"]).arg(target);
    if !short {
        command.arg("--release");
    }
    let status = command.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("building the example server and the generator failed ({status})"))
    }
}

/// Exports the tree of `rev` into `<target>/load-baseline/<commit>/` (once) and builds its
/// example server there; returns the binary's path.
fn build_baseline(root: &Path, target: &Path, rev: &str, features: &str, short: bool) -> Result<PathBuf, String> {
    let git = |args: &[&str]| -> Result<std::process::Output, String> {
        Command::new("git").current_dir(root).args(args).output().map_err(|e| format!("cannot run git: {e}"))
    };
    let output = git(&["rev-parse", "--verify", &format!("{rev}^{{commit}}")])?;
    if !output.status.success() {
        return Err(format!("--baseline {rev}: not a revision of this repository"));
    }
    let commit = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let base = target.join("load-baseline");
    let tree = base.join(&commit);
    if !tree.join("Cargo.toml").is_file() {
        let partial = base.join(format!("{commit}.partial"));
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir_all(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
        let tarball = base.join(format!("{commit}.tar"));
        let tarball_arg = tarball.to_str().ok_or("the target directory's path is not UTF-8")?;
        let archive = git(&["archive", "--format=tar", "--output", tarball_arg, &commit])?;
        if !archive.status.success() {
            return Err(format!("git archive {commit} failed ({})", archive.status));
        }
        let status = Command::new("tar")
            .arg("-xf")
            .arg(&tarball)
            .arg("-C")
            .arg(&partial)
            .status()
            .map_err(|e| format!("cannot run tar: {e}"))?;
        let _ = std::fs::remove_file(&tarball);
        if !status.success() {
            return Err(format!("unpacking {commit} failed ({status})"));
        }
        std::fs::rename(&partial, &tree).map_err(|e| format!("{}: {e}", tree.display()))?;
    }
    let baseline_target = base.join("target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.current_dir(&tree).args(["build", "--quiet", "-p", "pi-protocol", "--features", features]);
    command.args(["--example", "server", "--target-dir"]).arg(&baseline_target);
    if !short {
        command.arg("--release");
    }
    let status = command.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building the example server of {rev} ({commit}) failed ({status})"));
    }
    println!("load: baseline {rev} = {commit}");
    Ok(baseline_target.join(if short { "debug" } else { "release" }).join("examples").join("server"))
}

/// The first of `node` and `npm` that does not run, if any (the reference server needs both).
fn missing_node() -> Option<&'static str> {
    ["node", "npm"]
        .into_iter()
        .find(|tool| !Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// Copies the reference server beside its package, installed once with npm.
fn install_reference(root: &Path, node_dir: &Path) -> Result<(), String> {
    let read = |path: &Path| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()));
    let write = |path: &Path, bytes: &[u8]| std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()));
    std::fs::create_dir_all(node_dir).map_err(|e| format!("{}: {e}", node_dir.display()))?;
    let package = read(&root.join("xtask/load/package.json"))?;
    let installed = node_dir.join("node_modules/@earendil-works/pi-protocol/package.json");
    let fresh = read(&node_dir.join("package.json")).ok().as_ref() == Some(&package) && installed.is_file();
    write(&node_dir.join("package.json"), &package)?;
    write(&node_dir.join("reference-server.mjs"), &read(&root.join("xtask/load/reference-server.mjs"))?)?;
    if !fresh {
        let status = Command::new("npm")
            .current_dir(node_dir)
            .args(["install", "--no-audit", "--no-fund", "--ignore-scripts", "--silent"])
            .status()
            .map_err(|e| {
                format!("cannot run npm (the reference server needs node and npm; --no-reference skips it): {e}")
            })?;
        if !status.success() {
            return Err(format!("npm install in {} failed ({status})", node_dir.display()));
        }
    }
    Ok(())
}

/// Installs node 22 and the real pi programs (`tests/realpeer/install.sh`, which skips what is
/// already there) and returns node 22's path.
fn install_pi_server(root: &Path) -> Result<PathBuf, String> {
    let output = Command::new("bash")
        .arg(root.join("tests/realpeer/install.sh"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run bash tests/realpeer/install.sh: {e}"))?;
    if !output.status.success() {
        return Err(format!("tests/realpeer/install.sh failed ({})", output.status));
    }
    let node = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if node.is_empty() {
        return Err("tests/realpeer/install.sh printed no node path".to_owned());
    }
    Ok(PathBuf::from(node))
}

/// Fails early when a process may not open a socket per connection (and some to spare).
fn check_open_files(connections: usize) -> Result<(), String> {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse::<usize>().ok());
    match soft {
        Some(soft) if soft < connections + 256 => Err(format!(
            "at most {soft} open files per process; {connections} connections need {} (ulimit -n {})",
            connections + 256,
            connections + 256
        )),
        _ => Ok(()),
    }
}

/// Waits for the generator's next line, a mark or its result.
fn next_line(generator: &Running) -> Result<Value, String> {
    let line =
        generator.lines.recv_timeout(RUN_DEADLINE).map_err(|_| "the generator stopped or got stuck".to_owned())?;
    serde_json::from_str(&line).map_err(|_| format!("the generator printed {line}"))
}

/// One bench run: `connections` clients against a fresh `server`.
fn bench_run(harness: &Harness, settings: &Settings, server: Server, connections: usize) -> Result<Value, String> {
    let mut process = harness.start(server, true)?;
    let address = process.address()?;
    std::thread::sleep(Duration::from_millis(300));
    let base = harness.sample(&process)?;
    let n = connections.to_string();
    let (idle, warmup, seconds) =
        (settings.idle.to_string(), settings.warmup.to_string(), settings.seconds.to_string());
    let generator = harness.generator(&[
        "bench",
        "--connect",
        &address,
        "--connections",
        &n,
        "--in-flight",
        &IN_FLIGHT.to_string(),
        "--idle",
        &idle,
        "--warmup",
        &warmup,
        "--seconds",
        &seconds,
    ])?;
    let (mut idle_sample, mut start, mut end) = (None, None, None);
    let result = loop {
        let line = next_line(&generator)?;
        match line["mark"].as_str() {
            Some("idle") => {
                std::thread::sleep(Duration::from_secs_f64(settings.idle / 2.0));
                idle_sample = Some(harness.sample(&process)?);
            }
            Some("measure-start") => {
                start = Some((harness.sample(&process)?, harness.sample(&generator)?, Instant::now()));
            }
            Some("measure-end") => end = Some((harness.sample(&process)?, harness.sample(&generator)?, Instant::now())),
            Some(_) => {}
            None => break line["result"].clone(),
        }
    };
    if !generator.wait() {
        return Err(format!("the generator failed against {}", server.name()));
    }
    if !process.alive() {
        return Err(format!("the {} server died", server.name()));
    }
    let (Some(idle_sample), Some((start, generator_start, t0)), Some((end, generator_end, t1))) =
        (idle_sample, start, end)
    else {
        return Err("the generator skipped a phase".to_owned());
    };
    let responses = result["responses"].as_f64().unwrap_or(0.0);
    let cpu = end.cpu_seconds - start.cpu_seconds;
    let generator_cpu = generator_end.cpu_seconds - generator_start.cpu_seconds;
    let per_connection = |sample: Sample| (sample.rss_bytes as f64 - base.rss_bytes as f64) / connections as f64;
    Ok(json!({
        "server": server.name(),
        "connections": connections,
        "in_flight": IN_FLIGHT,
        "messages_per_second": result["messages_per_second"],
        "latency_us": result["latency_us"],
        "server_cpu_us_per_message": if responses > 0.0 { cpu * 1e6 / responses } else { f64::NAN },
        "server_cpu_share": cpu / (t1 - t0).as_secs_f64(),
        "server_capacity_per_cpu_second": if cpu > 0.0 { responses / cpu } else { f64::NAN },
        "generator_cpu_share": generator_cpu / (t1 - t0).as_secs_f64(),
        // Runnable but not running, over the window: the share of the time a process waited
        // for its core, which other work on the machine took.
        "server_wait_share": (end.wait_seconds - start.wait_seconds) / (t1 - t0).as_secs_f64(),
        "generator_wait_share": (generator_end.wait_seconds - generator_start.wait_seconds) / (t1 - t0).as_secs_f64(),
        "rss_base_bytes": base.rss_bytes,
        "idle_bytes_per_connection": per_connection(idle_sample),
        "busy_bytes_per_connection": per_connection(end),
        "connected": result["connected"],
        "load_average": load_average(),
        "error_count": result["error_count"],
        "errors": result["errors"],
    }))
}

/// The faults run against `server`, its memory sampled all along; then a short bench to show
/// that it still answers.
fn faults_run(harness: &Harness, settings: &Settings, server: Server) -> Result<Value, String> {
    let mut process = harness.start(server, false)?;
    let address = process.address()?;
    std::thread::sleep(Duration::from_millis(300));
    let base = harness.sample(&process)?;
    // The example server's log, checked as it arrives.
    let log = Arc::new(Mutex::new(ServerLog::default()));
    let lines = std::mem::replace(&mut process.lines, std::sync::mpsc::channel().1);
    let reader = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines {
                log.lock().expect("the log lock").line(&line);
            }
        })
    };
    // Resident memory every 100 ms.
    let (stop, peak) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(base.rss_bytes)));
    let sampler = {
        let (stop, peak, pid, ticks) = (Arc::clone(&stop), Arc::clone(&peak), process.pid(), harness.ticks);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(sample) = sample(pid, ticks) {
                    peak.fetch_max(sample.rss_bytes, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let connections = FAULT_CONNECTIONS.to_string();
    let seconds = settings.faults_seconds.to_string();
    let generator =
        harness.generator(&["faults", "--connect", &address, "--connections", &connections, "--seconds", &seconds])?;
    let clients = loop {
        let line = next_line(&generator)?;
        if line.get("mark").is_none() {
            break line["result"].clone();
        }
    };
    let generator_ok = generator.wait();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    // Every connection the server saw must close (their clients are gone).
    let all_closed = || {
        let deadline = Instant::now() + Duration::from_secs(15);
        while server == Server::Driver && log.lock().expect("the log lock").open() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    all_closed();
    let end = harness.sample(&process)?;
    let after = after_faults(harness, &address)?;
    all_closed();
    if !process.alive() {
        return Err(format!("the {} server died in the faults run", server.name()));
    }
    drop(process);
    let _ = reader.join();
    let server_log = match server {
        Server::Driver => {
            Arc::try_unwrap(log).map_err(|_| "the log is still read")?.into_inner().expect("the log lock").finish()
        }
        _ => json!({"checked": false}),
    };
    if !generator_ok {
        return Err(format!("the faults generator failed against {}", server.name()));
    }
    let peak = peak.load(Ordering::Relaxed);
    Ok(json!({
        "server": server.name(),
        "clients": clients,
        "server_log": server_log,
        "after": after,
        "rss_base_bytes": base.rss_bytes,
        "rss_peak_bytes": peak,
        "rss_end_bytes": end.rss_bytes,
        "peak_bytes_per_connection": (peak as f64 - base.rss_bytes as f64) / FAULT_CONNECTIONS as f64,
        "server_cpu_seconds": end.cpu_seconds - base.cpu_seconds,
    }))
}

/// Sixteen clients for one second against a server that went through the faults run.
fn after_faults(harness: &Harness, address: &str) -> Result<Value, String> {
    let generator = harness.generator(&[
        "bench",
        "--connect",
        address,
        "--connections",
        "16",
        "--idle",
        "0",
        "--warmup",
        "0.2",
        "--seconds",
        "1",
    ])?;
    let mut result = loop {
        let line = next_line(&generator)?;
        if line.get("mark").is_none() {
            break line["result"].clone();
        }
    };
    if !generator.wait() {
        return Err("the generator failed after the faults run".to_owned());
    }
    if result["responses"].as_u64() == Some(0) {
        result["error_count"] = json!(1);
        result["errors"] = json!(["no answer after the faults run"]);
    }
    Ok(result)
}

/// Each ratio of [`ratios`]: the other server, the figure compared, and the ratio's name (the
/// driver's figure over the other's).
const RATIOS: &[(&str, &str, &str)] = &[
    ("bare", "server_cpu_us_per_message", "cpu_per_message_driver_over_bare"),
    ("reference", "messages_per_second", "messages_per_second_driver_over_reference"),
    ("reference", "server_capacity_per_cpu_second", "capacity_driver_over_reference"),
    ("baseline", "messages_per_second", "messages_per_second_driver_over_baseline"),
    ("baseline", "server_cpu_us_per_message", "cpu_per_message_driver_over_baseline"),
    ("pi-server", "messages_per_second", "messages_per_second_driver_over_pi_server"),
    ("pi-server", "server_capacity_per_cpu_second", "capacity_driver_over_pi_server"),
];

/// The ratios the targets are stated in, per number of connections: the driver's CPU per
/// message over the bare server's, its messages per second (and per CPU second) over the
/// reference's and the real pi-server's, and its messages per second and CPU per message over
/// the baseline's.
fn ratios(bench: &[Value]) -> Value {
    let find = |server: &str, connections: &Value| {
        bench.iter().find(|b| b["server"] == server && b["connections"] == *connections)
    };
    let figure = |run: &Value, key: &str| run[key].as_f64().unwrap_or(f64::NAN);
    let mut ratios = Vec::new();
    for driver in bench.iter().filter(|b| b["server"] == "driver") {
        let connections = &driver["connections"];
        let mut entry = json!({"connections": connections});
        for &(other, key, name) in RATIOS {
            if let Some(run) = find(other, connections) {
                entry[name] = json!(figure(driver, key) / figure(run, key));
            }
        }
        ratios.push(entry);
    }
    Value::Array(ratios)
}

fn print_bench(figures: &Value) {
    let f = |key: &str| figures[key].as_f64().unwrap_or(f64::NAN);
    println!(
        "bench {:>9} {:>5} conns: {:>9.0} msg/s  p50 {:>8.0} us  p99 {:>8.0} us  server {:>5.2} us/msg ({:>3.0}% of a core, waited {:>3.0}%)  \
         generator {:>3.0}% (waited {:>3.0}%)  idle {:>6.0} B/conn  busy {:>6.0} B/conn  errors {}",
        figures["server"].as_str().unwrap_or_default(),
        figures["connections"],
        f("messages_per_second"),
        figures["latency_us"]["p50"].as_f64().unwrap_or(f64::NAN),
        figures["latency_us"]["p99"].as_f64().unwrap_or(f64::NAN),
        f("server_cpu_us_per_message"),
        f("server_cpu_share") * 100.0,
        f("server_wait_share") * 100.0,
        f("generator_cpu_share") * 100.0,
        f("generator_wait_share") * 100.0,
        f("idle_bytes_per_connection"),
        f("busy_bytes_per_connection"),
        figures["error_count"],
    );
}

fn print_faults(verdict: &Value) {
    let clients = &verdict["clients"];
    println!(
        "faults {:>9}: {} connections over {:.1} s (open: mean {:.0}, max {}), canary latency p50 {:.0} us p99 {:.0} us max {:.0} us, \
         server peak {:.1} MiB ({:.0} B/conn over its start), errors: clients {}, server log {}, after {}",
        verdict["server"].as_str().unwrap_or_default(),
        clients["connections_opened"],
        clients["seconds"].as_f64().unwrap_or(f64::NAN),
        clients["open_mean"].as_f64().unwrap_or(f64::NAN),
        clients["open_max"],
        clients["canary_latency_us"]["p50"].as_f64().unwrap_or(f64::NAN),
        clients["canary_latency_us"]["p99"].as_f64().unwrap_or(f64::NAN),
        clients["canary_latency_us"]["max"].as_f64().unwrap_or(f64::NAN),
        verdict["rss_peak_bytes"].as_f64().unwrap_or(f64::NAN) / 1048576.0,
        verdict["peak_bytes_per_connection"].as_f64().unwrap_or(f64::NAN),
        clients["error_count"],
        verdict["server_log"]["error_count"],
        verdict["after"]["error_count"],
    );
    println!("  kinds: {}", clients["kinds"]);
    if verdict["server_log"]["closing_reasons"].is_object() {
        println!("  server: {}", verdict["server_log"]);
    }
}

fn print_ratios(ratios: &Value) {
    for entry in ratios.as_array().into_iter().flatten() {
        println!("ratios at {} connections: {}", entry["connections"], entry);
    }
}

/// The machine's load average over the last minute (`/proc/loadavg`), `NaN` where unknown.
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(f64::NAN)
}

/// The bench figures as a Markdown table (the one in docs/PERFORMANCE.md), one row per server
/// and number of connections, the ratios on the driver's rows.
fn print_table(bench: &[Value], ratios: &Value) {
    println!(
        "\n| connections | server | messages/s | p50 latency | p99 latency | server CPU/message | server busy / waiting for its core | idle bytes/conn | busy bytes/conn | driver/bare CPU | driver/reference messages/s | driver/reference messages per CPU second | driver/pi-server messages per CPU second | driver/baseline messages/s | driver/baseline CPU/message | load average |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let ratio = |connections: &Value, key: &str| {
        ratios
            .as_array()
            .into_iter()
            .flatten()
            .find(|entry| entry["connections"] == *connections)
            .and_then(|entry| entry[key].as_f64())
            .map_or_else(String::new, |r| format!("{r:.2}x"))
    };
    for figures in bench {
        let f = |key: &str| figures[key].as_f64().unwrap_or(f64::NAN);
        let latency = |key: &str| figures["latency_us"][key].as_f64().unwrap_or(f64::NAN) / 1000.0;
        let connections = &figures["connections"];
        let driver = figures["server"] == "driver";
        let on_driver = |key: &str| if driver { ratio(connections, key) } else { String::new() };
        println!(
            "| {connections} | {} | {:.0} | {:.2} ms | {:.2} ms | {:.2} us | {:.0}% / {:.0}% | {:.0} | {:.0} | {} | {} | {} | {} | {} | {} | {:.1} |",
            figures["server"].as_str().unwrap_or_default(),
            f("messages_per_second"),
            latency("p50"),
            latency("p99"),
            f("server_cpu_us_per_message"),
            f("server_cpu_share") * 100.0,
            f("server_wait_share") * 100.0,
            f("idle_bytes_per_connection"),
            f("busy_bytes_per_connection"),
            on_driver("cpu_per_message_driver_over_bare"),
            on_driver("messages_per_second_driver_over_reference"),
            on_driver("capacity_driver_over_reference"),
            on_driver("capacity_driver_over_pi_server"),
            on_driver("messages_per_second_driver_over_baseline"),
            on_driver("cpu_per_message_driver_over_baseline"),
            f("load_average"),
        );
    }
}
