//! `pi-protocol encode`: JSON lines in, frames out.

use std::io::{self, BufRead, BufReader, BufWriter, Write};

use clap::Args;

use crate::explain::explain;
use crate::{io_failure, open_input, CommonArgs, Failure};

#[derive(Args, Debug)]
pub struct EncodeArgs {
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Encodes every non-blank line; exit status 1 at the first line that is not JSON or not a
/// valid message, after the frames of the lines before it.
pub fn run(args: &EncodeArgs) -> Result<(), Failure> {
    let (protocol, options) = args.common.protocol()?;
    let side = args.common.side.model();
    let input = BufReader::new(open_input(&args.common.input)?);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for (index, line) in input.lines().enumerate() {
        let line_number = index + 1;
        let line = line.map_err(io_failure)?;
        if line.trim().is_empty() {
            continue;
        }
        // serde_json says where text that is not JSON goes wrong; the line itself is encoded
        // from its text, keys in its order and numbers exact, as the reference would.
        let failure = match serde_json::from_str::<serde::de::IgnoredAny>(&line) {
            Err(e) => {
                // Read as a value, serde_json names more mistakes (a trailing comma as such).
                let e = serde_json::from_str::<serde_json::Value>(&line).err().unwrap_or(e);
                Failure::input(format!("line {line_number}, column {}: not JSON: {}", e.column(), syntax(&e)))
            }
            Ok(_) => match protocol.encode_json(side, &line, &options) {
                Ok(frame) => {
                    out.write_all(&frame).map_err(io_failure)?;
                    continue;
                }
                Err(e) => {
                    // Only a refused line is read as a value, to name its keys.
                    let described = match serde_json::from_str::<serde_json::Value>(&line) {
                        Ok(value) => explain(&protocol.model, side, &value, &e),
                        Err(_) => crate::describe(&e),
                    };
                    Failure::input(format!("line {line_number}: {described}"))
                }
            },
        };
        out.flush().map_err(io_failure)?;
        return Err(failure);
    }
    out.flush().map_err(io_failure)
}

/// What serde_json says is wrong, without the position it appends (given separately).
fn syntax(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}
