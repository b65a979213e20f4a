//! `pi-protocol inspect`: every frame with its offset, length, message type and CBOR in
//! diagnostic notation, the offending bytes marked when a frame is bad.

use std::io::{self, BufReader, BufWriter, Write};

use clap::Args;
use pi_protocol::{ErrorKind, ProtocolError};

use crate::diag::{self, Diagnosis, MARK_OPEN};
use crate::resolve::tag_key;
use crate::summary::summarise;
use crate::{io_failure, open_input, CommonArgs, Failure};
use pi_protocol::runtime::{FrameReader, RawFrame};

#[derive(Args, Debug)]
pub struct InspectArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Print only the line per frame (offset, length, type), without the diagnostic notation.
    #[arg(long)]
    pub no_diag: bool,
    /// Longest diagnostic text printed per frame, in characters; longer text is clipped around
    /// the marked item (0 = no limit).
    #[arg(long, value_name = "N", default_value_t = 4000)]
    pub max_diag_chars: usize,
}

/// Runs `inspect`: exit status 1 when any frame is bad, truncated or over the limit.
pub fn run(args: &InspectArgs) -> Result<(), Failure> {
    let (protocol, options) = args.common.protocol()?;
    let side = args.common.side.model();
    let tag = protocol.model.message_type(side).and_then(tag_key);
    let input = BufReader::new(open_input(&args.common.input)?);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut frames = FrameReader::new(input, options.frame_limit());
    let mut index = 0u64;
    let mut bad = 0u64;
    let mut hint = None;
    while let Some(frame) = frames.next_frame().map_err(io_failure)? {
        let frame_error = frame.error();
        match frame {
            RawFrame::Complete { offset, payload } => {
                let result = protocol.check(side, &payload, options.limits());
                let ok = result.is_ok();
                let (label, error) = match result {
                    Ok(()) => (summarise(&protocol.model, side, &payload).label(), None),
                    Err(e) => {
                        if index == 0 && e.kind() == ErrorKind::Schema {
                            hint = protocol.wrong_side_hint(side, &payload, options.limits());
                        }
                        (String::from("INVALID"), Some(e.with_offset(offset)))
                    }
                };
                // Mark the item at the error's field path (the whole message when the path is empty).
                let target = error.as_ref().map(|e| e.path().collect());
                // Keep the text in proportion to what will be printed, not to the frame.
                let budget = if args.max_diag_chars == 0 { usize::MAX } else { (args.max_diag_chars * 8).max(1 << 20) };
                let diagnosis = diag::diagnose_within(&payload, target, budget, tag);
                let label = match (&error, &diagnosis.message_type) {
                    (Some(_), Some(t)) => format!("INVALID ({t})"),
                    _ => label,
                };
                writeln!(out, "frame {index}  offset {offset}  length {}  {label}", payload.len())
                    .map_err(io_failure)?;
                if !args.no_diag || !ok {
                    writeln!(out, "  {}", clip(&diagnosis.text, args.max_diag_chars)).map_err(io_failure)?;
                }
                if let Some(error) = error {
                    bad += 1;
                    report_error(&mut out, &error, offset, &payload, &diagnosis).map_err(io_failure)?;
                }
            }
            RawFrame::Truncated { offset, announced, present } => {
                bad += 1;
                let what = match announced {
                    Some(n) => {
                        format!("header announces {n} payload bytes, the stream holds {present} bytes of the frame")
                    }
                    None => format!("the stream ends after {present} of the 4 header bytes"),
                };
                writeln!(out, "frame {index}  offset {offset}  TRUNCATED: {what}").map_err(io_failure)?;
                if let Some(error) = frame_error {
                    writeln!(out, "  error: {error}").map_err(io_failure)?;
                }
            }
            RawFrame::TooLong { offset, announced, error } => {
                bad += 1;
                writeln!(out, "frame {index}  offset {offset}  TOO LONG: header announces {announced} bytes")
                    .map_err(io_failure)?;
                writeln!(out, "  error: {error}").map_err(io_failure)?;
                writeln!(out, "  offending bytes: stream {offset}..{} (the header)", offset + 4).map_err(io_failure)?;
                writeln!(out, "    {:08x}  {}", offset, spaced(&announced.to_be_bytes())).map_err(io_failure)?;
                writeln!(out, "              {}", "^^ ".repeat(4).trim_end()).map_err(io_failure)?;
                writeln!(out, "  (frames after this one cannot be located)").map_err(io_failure)?;
            }
        }
        index += 1;
    }
    out.flush().map_err(io_failure)?;
    if bad > 0 {
        return Err(Failure::input(format!("{bad} bad frame(s) among {index}")).with_hint(hint));
    }
    Ok(())
}

/// Prints the error and a hex dump of the offending bytes with `^^` under them.
fn report_error(
    out: &mut impl Write,
    error: &ProtocolError,
    offset: u64,
    payload: &[u8],
    diagnosis: &Diagnosis,
) -> io::Result<()> {
    writeln!(out, "  error: {error}")?;
    // CBOR problems are located by the walker; schema problems by the field path.
    let span = match error.kind() {
        ErrorKind::Schema => diagnosis.marked.or(diagnosis.offence.as_ref().map(|o| (o.start, o.end))),
        _ => diagnosis.offence.as_ref().map(|o| (o.start, o.end)).or(diagnosis.marked),
    };
    if let (Some(offence), false) = (&diagnosis.offence, error.kind() == ErrorKind::Schema) {
        writeln!(out, "  at payload byte {}: {}", offence.start, offence.reason)?;
    }
    let Some((start, end)) = span else {
        return Ok(());
    };
    let end = end.max(start + 1);
    let base = offset + 4;
    writeln!(out, "  offending bytes: stream {}..{} (payload {start}..{end})", base + start as u64, base + end as u64)?;
    // Up to four lines of 16 bytes, from the line holding the first offending byte.
    let first_line = start / 16 * 16;
    let dump_end = end.min(first_line + 64).min(payload.len());
    let mut line = first_line;
    while line < dump_end {
        let stop = (line + 16).min(payload.len());
        writeln!(out, "    {:08x}  {}", base + line as u64, spaced(&payload[line..stop]))?;
        let marks: Vec<&str> = (line..stop).map(|i| if (start..end).contains(&i) { "^^" } else { "  " }).collect();
        writeln!(out, "              {}", marks.join(" ").trim_end())?;
        line += 16;
    }
    if end > first_line + 64 {
        writeln!(out, "    ... {} more offending bytes", end - (first_line + 64))?;
    }
    Ok(())
}

fn spaced(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

/// Clips `text` to about `max` characters, keeping the marked item in view.
fn clip(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if max == 0 || count <= max {
        return text.to_owned();
    }
    let mark = text.find(MARK_OPEN).map(|byte| text[..byte].chars().count()).unwrap_or(0);
    let from = mark.saturating_sub(max / 4).min(count - max);
    let body: String = text.chars().skip(from).take(max).collect();
    let before = if from > 0 { format!("...({from} chars) ") } else { String::new() };
    let after = count - from - max;
    let after = if after > 0 { format!(" ...({after} chars)") } else { String::new() };
    format!("{before}{body}{after}")
}
