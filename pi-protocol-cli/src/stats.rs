//! `pi-protocol stats`: a summary of a stream (frames, sizes, messages by type, largest payload).

use std::collections::BTreeMap;
use std::io::{self, BufReader, Write};

use clap::Args;
use pi_protocol::{ErrorKind, ProtocolError};
use serde_json::json;

use crate::summary::{bytes, quoted, summarise};
use crate::{describe, io_failure, open_input, CommonArgs, Failure};
use pi_protocol::runtime::{FrameReader, RawFrame};

#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Print the summary as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Default)]
struct Totals {
    frames: u64,
    stream_bytes: u64,
    min_len: Option<u64>,
    max_len: u64,
    payload_total: u64,
    by_type: BTreeMap<String, u64>,
    /// (size, field path, frame index, frame offset, id)
    largest: Option<(usize, String, u64, u64, Option<String>)>,
}

/// Runs `stats`: exit status 1 when the stream holds a bad frame (the summary covers the frames
/// before it).
pub fn run(args: &StatsArgs) -> Result<(), Failure> {
    let (protocol, options) = args.common.protocol()?;
    let side = args.common.side.model();
    let input = BufReader::new(open_input(&args.common.input)?);
    let mut frames = FrameReader::new(input, options.frame_limit());
    let mut totals = Totals::default();
    let mut error: Option<ProtocolError> = None;
    let mut hint = None;
    while let Some(frame) = frames.next_frame().map_err(io_failure)? {
        match frame {
            RawFrame::Complete { offset, payload } => match protocol.check(side, &payload, options.limits()) {
                Ok(()) => {
                    let summary = summarise(&protocol.model, side, &payload);
                    let len = payload.len() as u64;
                    totals.stream_bytes += len + 4;
                    totals.min_len = Some(totals.min_len.map_or(len, |m| m.min(len)));
                    totals.max_len = totals.max_len.max(len);
                    totals.payload_total += len;
                    *totals.by_type.entry(summary.kind).or_default() += 1;
                    for (field, size) in summary.payloads {
                        if totals.largest.as_ref().is_none_or(|l| size > l.0) {
                            let id = summary.id.as_ref().map(|(_, id)| id.clone());
                            totals.largest = Some((size, field, totals.frames, offset, id));
                        }
                    }
                    totals.frames += 1;
                }
                Err(e) => {
                    if totals.frames == 0 && e.kind() == ErrorKind::Schema {
                        hint = protocol.wrong_side_hint(side, &payload, options.limits());
                    }
                    error = Some(e.with_offset(offset));
                    break;
                }
            },
            bad => error = bad.error(),
        }
    }
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let largest = totals.largest.as_ref().map(|(size, field, frame, offset, id)| {
            json!({"bytes": size, "field": field, "frame": frame, "offset": offset, "id": id})
        });
        let value = json!({
            "frames": totals.frames,
            "streamBytes": totals.stream_bytes,
            "frameLength": {"min": totals.min_len, "max": totals.max_len, "total": totals.payload_total},
            "byType": totals.by_type,
            "largestPayload": largest,
            "error": error.as_ref().map(describe),
        });
        writeln!(out, "{value}").map_err(io_failure)?;
    } else {
        write_text(&mut out, &totals).map_err(io_failure)?;
    }
    out.flush().map_err(io_failure)?;
    match error {
        Some(e) => Err(Failure::input(describe(&e)).with_hint(hint)),
        None => Ok(()),
    }
}

fn write_text(out: &mut impl Write, t: &Totals) -> io::Result<()> {
    writeln!(out, "frames: {} ({} bytes on the wire, headers included)", t.frames, t.stream_bytes)?;
    if let Some(min) = t.min_len {
        let mean = t.payload_total as f64 / t.frames as f64;
        writeln!(
            out,
            "frame payload length: min {min}, max {}, mean {mean:.1}, total {} bytes",
            t.max_len, t.payload_total
        )?;
    }
    writeln!(out, "messages by type:")?;
    let width = t.by_type.keys().map(|k| k.chars().count()).max().unwrap_or(0) + 2;
    for (kind, count) in &t.by_type {
        writeln!(out, "  {kind:<width$}{count}")?;
    }
    match &t.largest {
        Some((size, field, frame, offset, id)) => {
            let id = id.as_ref().map(|id| format!(", id {}", quoted(id))).unwrap_or_default();
            writeln!(out, "largest payload: {} ({field} of frame {frame}{id}, at byte {offset})", bytes(*size))
        }
        None => writeln!(out, "largest payload: none"),
    }
}
