//! Project automation for the pi-protocol workspace, run as `cargo xtask <task>` (the alias is
//! in `.cargo/config.toml`).
//!
//! Tasks:
//! - `gen`: regenerates every checked-in generated file from its source of truth
//!   (`src/generated/v8.rs` from `schema/pi-protocol.v8.json`; what `pi_protocol_gen::Builder`
//!   writes for a downstream crate is not checked in: `tests/schema-suite` builds it).
//! - `gen --check`: regenerates in memory and fails, naming the stale file and the command to
//!   run, when a checked-in file differs. CI runs this.
//! - `growth`: schema growth needs no hand edit (see `growth.rs`). CI runs this.
//! - `schema-guard [--record]`: a wire-breaking schema change needs a new protocol version (see
//!   `schema_guard.rs`). CI runs this.
//! - `conformance [--cases N] [--seed S]`: differential test of the decoders and encoders
//!   against the reference package, run by node (see `conformance.rs`).
//! - `bench-reference [--seconds S]`: times the reference package on the benchmark frames
//!   (see `bench_reference.rs` and `docs/PERFORMANCE.md`).
//! - `schema-diff OLD NEW [--format text|json] [--require backward|forward|both]`: what a
//!   schema change breaks, by message type and direction (`pi-protocol schema diff`, see
//!   `schema_diff.rs`); exit status 1 when a required direction breaks.
//! - `load [--short] [--connections N,N,...] [--seconds S] [--faults-seconds S] [--no-reference]
//!   [--baseline REV]`: load and faults over real sockets: the example server, a server on the
//!   codec alone and one on the reference package under a thousand connections, and the example
//!   server of an older revision beside today's (see `load/mod.rs` and `docs/PERFORMANCE.md`);
//!   `--short` is CI's pass.
//! - `fuzz [--check] [--seconds N] [--jobs J] [--target T]...`: runs the cargo-fuzz targets for
//!   a bounded time each and merges what they find into the committed corpora; `--check` (CI)
//!   leaves the checkout untouched (see `fuzz.rs` and `fuzz/README.md`).
//! - `mutants [--area A] [--package P] [--file F]... [--changed [BASE]] [--lines] [--re R]...
//!   [--shard K/N] [--max-seconds N] [--iterate] [--report-only] [--list]`: mutation testing
//!   with cargo-mutants, area by area; fails on a missed mutant not recorded as equivalent in
//!   `docs/TESTING.md` unless `--report-only` (see `mutants.rs` and `docs/TESTING.md`).

use std::process::ExitCode;

mod bench_reference;
mod codegen;
mod conformance;
mod fuzz;
mod growth;
mod load;
mod mutants;
mod schema_diff;
mod schema_guard;

const USAGE: &str = "usage: cargo xtask gen [--check] | conformance [--cases N] [--seed S]
       cargo xtask bench-reference [--seconds S]
       cargo xtask fuzz [--check] [--seconds N] [--jobs J] [--target T]...
       cargo xtask load [--short] [--connections N,N,...] [--seconds S] [--faults-seconds S] [--no-reference]
                        [--no-pi-server | --pi-server] [--baseline REV [--baseline-features F]]
       cargo xtask mutants [--area A]... [--package P]... [--file F]... [--changed [BASE]] [--lines]
                           [--re REGEX]... [--shard K/N] [--max-seconds N] [--iterate] [--report-only] [--list]
       cargo xtask schema-diff OLD NEW [--format text|json] [--require backward|forward|both]

  gen          regenerate src/generated/v8.rs from schema/pi-protocol.v8.json
  gen --check  fail if a checked-in generated file is stale
  schema-guard [--record]
               fail when schema/pi-protocol.v8.json breaks the wire against
               schema/released/ without a new x-protocol-version (--record: release it)
  growth       grow the schema in a copy of the workspace (an optional property on every
               object, a message each way), regenerate, build everything, run conformance
  conformance [--cases N] [--seed S]
               differential test against the reference package (needs node and npm)
  bench-reference [--seconds S]
               time the reference package on the benchmark frames (needs node and npm)
  fuzz [--check] [--seconds N] [--jobs J] [--target T]...
               run the fuzz targets N seconds each (default 60), J at a time (default 1), and
               minimise what they found into fuzz/corpus/; --check writes nothing (CI)
               (needs cargo fuzz: cargo install cargo-fuzz --locked)
  load [--short] [--connections N,N,...] [--seconds S] [--faults-seconds S] [--no-reference]
               drive the example server, a server on the codec alone and one on the reference
               package (node + npm) with 16, 256 and 1,000 connections, then a thousand faulty
               clients; report messages/s, latency, CPU and memory per connection, fail on any
               lost, duplicated or misrouted message (--short: CI's pass, debug build, ~30 s);
               --baseline REV measures REV's example server beside today's in the same run
  mutants      mutation testing of the runtime, the pattern engine, the connection layer, the
               derive and the generator (areas runtime, pattern, connection, derive, gen), tier
               by tier; --file and --changed [BASE] (default main) scope it to files, --lines
               to changed lines, --re and --shard K/N narrow it, --max-seconds bounds it,
               --report-only never fails; otherwise fails on a missed mutant that docs/TESTING.md does
               not record as equivalent (needs cargo mutants: see docs/TESTING.md)
  schema-diff OLD NEW [--format text|json] [--require backward|forward|both]
               what the change from schema OLD to NEW breaks, by message type and direction
               (pi-protocol schema diff); exit status 1 when a required direction breaks";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["gen"] => codegen::generate(false),
        ["gen", "--check"] | ["--check", "gen"] => codegen::generate(true),
        ["conformance", rest @ ..] => conformance::run(rest),
        ["growth", rest @ ..] => growth::run(rest),
        ["schema-guard", rest @ ..] => schema_guard::run(rest),
        ["bench-reference", rest @ ..] => bench_reference::run(rest),
        ["fuzz", rest @ ..] => fuzz::run(rest),
        ["load", rest @ ..] => load::run(rest),
        ["mutants", rest @ ..] => mutants::run(rest),
        ["schema-diff", rest @ ..] => return schema_diff::run(rest),
        [] | ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("unknown arguments: {}\n\n{USAGE}", args.join(" "));
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
