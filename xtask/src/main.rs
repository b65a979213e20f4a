//! Project automation for the pi-protocol workspace, run as `cargo xtask <task>` (the alias is
//! in `.cargo/config.toml`).
//!
//! Tasks:
//! - `gen`: regenerates every checked-in generated file from its source of truth
//!   (`src/generated/v8.rs` from `schema/pi-protocol.v8.json`).
//! - `gen --check`: regenerates in memory and fails, naming the stale file and the command to
//!   run, when a checked-in file differs. CI runs this.

use std::process::ExitCode;

mod codegen;

const USAGE: &str = "usage: cargo xtask gen [--check]

  gen          regenerate src/generated/v8.rs from schema/pi-protocol.v8.json
  gen --check  fail if a checked-in generated file is stale";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["gen"] => codegen::generate(false),
        ["gen", "--check"] | ["--check", "gen"] => codegen::generate(true),
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
