//! The load and fault generator of `cargo xtask load` (docs/PERFORMANCE.md, section "Load and
//! faults over real sockets"), and the baseline server it is compared with. It runs one thread:
//! the harness pins it to a core of its own, the server under test to another.
//!
//! ```text
//! load bench --connect ADDR [--connections N] [--in-flight K] [--idle S] [--warmup S] [--seconds S]
//!     N clients (default 16) keep K requests (default 16) in flight each; prints {"mark": ...}
//!     lines as the phases begin (idle, busy, measure-start, measure-end, drained), then one
//!     {"result": ...} line: answers and messages per second in the measured window, latency
//!     percentiles, errors
//! load faults --connect ADDR [--connections N] [--canaries C] [--seconds S] [--seed X]
//!     N clients at once (default 1000) of every kind (sessions ending in every way, slow
//!     writers and readers, stalled, idle, garbage) for S seconds, C of them canaries; prints
//!     its marks, then {"result": ...} with the counts, the canaries' latencies and every error
//! load serve-bare [--listen ADDR] [--server-id UUID]
//!     the baseline server on io::ServerCodec; prints `listening on ADDR`
//! ```

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use pi_protocol::ServerId;
use serde_json::{json, Value};

mod bare;
mod bench;
mod faults;
mod ledger;
mod stats;
mod wire;

const USAGE: &str =
    "usage: load bench --connect ADDR [--connections N] [--in-flight K] [--idle S] [--warmup S] [--seconds S]
       load faults --connect ADDR [--connections N] [--canaries C] [--seconds S] [--seed X]
       load serve-bare [--listen ADDR] [--server-id UUID]";

const HELP: &str = "The load and fault generator of `cargo xtask load`, and its baseline server.

usage: load bench --connect ADDR [--connections N] [--in-flight K] [--idle S] [--warmup S] [--seconds S]
       load faults --connect ADDR [--connections N] [--canaries C] [--seconds S] [--seed X]
       load serve-bare [--listen ADDR] [--server-id UUID]

  bench        N clients (default 16) keep K requests (default 16) in flight for S seconds (default 5)
               after a warm-up (default 1) and an idle pause (default 0.5)
  faults       N clients at once (default 1000, C of them canaries, default 20) of every kind for
               S seconds (default 20), seeded with X
  serve-bare   a server written on io::ServerCodec alone (default 127.0.0.1:0)
  -h, --help   print this help

Prints {\"mark\": ...} lines as phases begin, then one {\"result\": ...} line.";

/// Prints a phase mark at once (the harness samples the server when it reads it).
pub fn mark(name: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", json!({"mark": name}));
    let _ = out.flush();
}

/// `--flag value` pairs after the subcommand.
struct Flags(Vec<(String, String)>);

impl Flags {
    fn parse(args: &[String], known: &[&str]) -> Result<Flags, String> {
        let mut pairs = Vec::new();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            if !known.contains(&flag.as_str()) {
                return Err(format!("unknown argument {flag}\n{USAGE}"));
            }
            let value = it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
            pairs.push((flag.clone(), value.clone()));
        }
        Ok(Flags(pairs))
    }

    fn text(&self, flag: &str) -> Option<&str> {
        self.0.iter().rev().find(|(f, _)| f == flag).map(|(_, v)| v.as_str())
    }

    fn number<T: std::str::FromStr>(&self, flag: &str, default: T) -> Result<T, String> {
        match self.text(flag) {
            None => Ok(default),
            Some(text) => text.parse().map_err(|_| format!("{flag} needs a number, not {text}")),
        }
    }

    fn seconds(&self, flag: &str, default: f64) -> Result<Duration, String> {
        let seconds: f64 = self.number(flag, default)?;
        Duration::try_from_secs_f64(seconds).map_err(|_| format!("{flag}: {seconds} is not a duration"))
    }

    fn address(&self, flag: &str) -> Result<String, String> {
        self.text(flag).map(str::to_owned).ok_or_else(|| format!("{flag} is required\n{USAGE}"))
    }
}

enum Command {
    Bench(bench::Settings),
    Faults(faults::Settings),
    ServeBare { listen: String, server_id: ServerId },
}

fn parse(args: &[String]) -> Result<Option<Command>, String> {
    let Some((command, rest)) = args.split_first() else { return Err(USAGE.to_owned()) };
    let command = match command.as_str() {
        "-h" | "--help" => return Ok(None),
        "bench" => {
            let flags =
                Flags::parse(rest, &["--connect", "--connections", "--in-flight", "--idle", "--warmup", "--seconds"])?;
            Command::Bench(bench::Settings {
                address: flags.address("--connect")?,
                connections: flags.number("--connections", 16)?,
                in_flight: flags.number("--in-flight", 16)?,
                idle: flags.seconds("--idle", 0.5)?,
                warmup: flags.seconds("--warmup", 1.0)?,
                measure: flags.seconds("--seconds", 5.0)?,
            })
        }
        "faults" => {
            let flags = Flags::parse(rest, &["--connect", "--connections", "--canaries", "--seconds", "--seed"])?;
            Command::Faults(faults::Settings {
                address: flags.address("--connect")?,
                connections: flags.number("--connections", 1000)?,
                canaries: flags.number("--canaries", 20)?,
                duration: flags.seconds("--seconds", 20.0)?,
                seed: flags.number("--seed", 2026)?,
            })
        }
        "serve-bare" => {
            let flags = Flags::parse(rest, &["--listen", "--server-id"])?;
            let server_id = flags.text("--server-id").unwrap_or(ledger::SERVER_ID);
            Command::ServeBare {
                listen: flags.text("--listen").unwrap_or("127.0.0.1:0").to_owned(),
                server_id: ServerId::new(server_id).map_err(|e| format!("--server-id: {e}"))?,
            }
        }
        other => return Err(format!("unknown command {other}\n{USAGE}")),
    };
    Ok(Some(command))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match parse(&args) {
        Ok(Some(command)) => command,
        Ok(None) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    // The generator runs on one thread; the bare server on the runtime `#[tokio::main]` builds,
    // as the example server does.
    let runtime = match command {
        Command::ServeBare { .. } => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
        _ => tokio::runtime::Builder::new_current_thread().enable_all().build(),
    }
    .expect("a tokio runtime");
    let result: Value = runtime.block_on(async {
        match command {
            Command::Bench(settings) => bench::run(settings).await,
            Command::Faults(settings) => faults::run(settings).await,
            Command::ServeBare { listen, server_id } => {
                let listener = match tokio::net::TcpListener::bind(&listen).await {
                    Ok(listener) => listener,
                    Err(e) => return json!({"error": format!("cannot listen on {listen}: {e}")}),
                };
                match listener.local_addr() {
                    Ok(address) => println!("listening on {address}"),
                    Err(e) => return json!({"error": e.to_string()}),
                }
                bare::serve(listener, server_id).await;
                Value::Null
            }
        }
    });
    println!("{}", json!({"result": result}));
    if result.get("error").is_some() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
