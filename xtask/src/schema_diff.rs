//! `cargo xtask schema-diff OLD NEW [--format text|json] [--require backward|forward|both]`:
//! runs `pi-protocol schema diff` (the CLI's one implementation, `pi-protocol-cli`), built
//! with the same cargo, and passes its exit status on: 0 when the required directions hold
//! (always without `--require`), 1 when one breaks, 2 on bad arguments or an unusable schema.

use std::process::{Command, ExitCode};

/// Runs the CLI's `schema diff` with `args`.
pub fn run(args: &[&str]) -> ExitCode {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["run", "--quiet", "--package", "pi-protocol-cli", "--", "schema", "diff"])
        .args(args)
        .status();
    match status {
        Ok(status) => match status.code() {
            Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            None => ExitCode::FAILURE,
        },
        Err(e) => {
            eprintln!("error: cannot run cargo: {e}");
            ExitCode::FAILURE
        }
    }
}
