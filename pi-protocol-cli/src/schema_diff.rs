//! `pi-protocol schema diff OLD NEW`: what a schema change breaks, by message type and
//! direction, with a witness message for every break, and in the generated Rust
//! (`pi_protocol_gen::compat`); `cargo xtask schema-diff` runs the same command.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use pi_protocol_gen::compat::{compat, Direction, Format, Report, WitnessSearch};

use crate::protocol::read_model;
use crate::{io_failure, Failure};

#[derive(Args, Debug)]
pub struct SchemaArgs {
    #[command(subcommand)]
    command: SchemaCommand,
}

#[derive(Subcommand, Debug)]
enum SchemaCommand {
    /// Compare two revisions of a schema: for every message type, whether old writers still
    /// reach new readers (backward) and new writers old readers (forward), why not (the edit,
    /// its JSON pointer in both files, a message that shows it), and the changes of the
    /// generated Rust.
    ///
    /// Exit status 0 when the directions --require names hold (always, without --require), 1
    /// when one breaks, 2 on bad arguments or a file that is not a usable schema.
    Diff(DiffArgs),
}

#[derive(Args, Debug)]
struct DiffArgs {
    /// The old revision: a schema in this project's form or the reference's published form.
    #[arg(value_name = "OLD")]
    old: PathBuf,
    /// The new revision, in either form.
    #[arg(value_name = "NEW")]
    new: PathBuf,
    /// How the report is printed on stdout.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
    /// Exit with status 1 unless this compatibility holds for every message type (default:
    /// report only).
    #[arg(long, value_enum, value_name = "DIRECTION")]
    require: Option<Require>,
    /// Messages drawn per message type and direction when looking for a witness of a break
    /// (and for a counterexample to a "holds"); 0 gives the rules' verdicts alone.
    #[arg(long, value_name = "N", default_value_t = WitnessSearch::new().attempts_per_verdict())]
    attempts: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum ReportFormat {
    /// Text for a person.
    Text,
    /// One JSON document, for tools.
    Json,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Require {
    /// Old writers, new readers: every old message decodes under the new schema.
    Backward,
    /// New writers, old readers: every new message decodes under the old schema.
    Forward,
    /// Both directions.
    Both,
}

impl Require {
    fn directions(self) -> &'static [Direction] {
        match self {
            Require::Backward => &[Direction::Backward],
            Require::Forward => &[Direction::Forward],
            Require::Both => &[Direction::Backward, Direction::Forward],
        }
    }
}

/// Runs `schema diff` (the only `schema` subcommand so far).
pub fn run(args: &SchemaArgs) -> Result<(), Failure> {
    let SchemaCommand::Diff(args) = &args.command;
    let old = read_model(&args.old)?;
    let new = read_model(&args.new)?;
    let mut report = compat(&old, &new);
    // Every "breaks" backed by a message one schema accepts and the other refuses, every "holds"
    // tested by sampling.
    if args.attempts > 0 {
        report
            .find_witnesses(&old, &new, &WitnessSearch::new().attempts(args.attempts))
            .map_err(|e| Failure::usage(format!("the schemas cannot be interpreted: {e}")))?;
    }
    let format = match args.format {
        ReportFormat::Text => Format::Text,
        ReportFormat::Json => Format::Json,
    };
    let mut text = report.render(format);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let stdout = io::stdout();
    let mut out = stdout.lock();
    // The verdict is the point: a reader that went away does not change the exit status.
    let written = out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(io_failure);
    match args.require.map(|r| broken(&report, r.directions())) {
        Some(broken) if !broken.is_empty() => Err(Failure::input(broken.join("; "))),
        _ => written,
    }
}

/// One line per direction of `directions` that breaks, naming the message types that break it.
fn broken(report: &Report, directions: &[Direction]) -> Vec<String> {
    let mut lines = Vec::new();
    for &direction in directions {
        let names: Vec<String> = report
            .sides
            .iter()
            .flat_map(|side| {
                side.messages
                    .iter()
                    .filter(move |m| !m.verdict(direction).holds())
                    .map(move |m| format!("{} {}", side.side.as_str(), m.name))
            })
            .collect();
        if !names.is_empty() {
            let readers = match direction {
                Direction::Backward => "old writers -> new readers",
                _ => "new writers -> old readers",
            };
            lines.push(format!("{} compatibility ({readers}) breaks for {}", direction.as_str(), names.join(", ")));
        }
    }
    lines
}
