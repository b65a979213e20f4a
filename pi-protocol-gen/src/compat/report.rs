//! Rendering a compatibility [`Report`]: a readable text, or JSON for tools.

use std::fmt::Write;

use serde_json::{json, Value};

use super::{Direction, MessageReport, Reason, Report, Verdict, Witness};

/// How a report is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Text for a person: every message, every reason with its pointers, witnesses in JSON and
    /// hex, the Rust changes.
    Text,
    /// One JSON document (see [`Report::to_json`]).
    Json,
}

impl Report {
    /// The report in `format`.
    #[must_use]
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => self.to_text(),
            Format::Json => serde_json::to_string_pretty(&self.to_json()).unwrap_or_default(),
        }
    }

    /// The report as JSON: `{ "oldVersion", "newVersion", "backward", "forward", "sides": [ {
    /// "side", "messages": [ { "name", "oldType", "newType", "backward": verdict, "forward":
    /// verdict } ] } ], "rust": [ { "kind", "item", "detail", "breaking" } ], "rustBreaking" }`,
    /// where a verdict is `{ "holds", "reasons": [ { "change", "old", "new", "detail" } ],
    /// "witness": { "message", "frame" (hex), "refusedBecause" } | null }`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "oldVersion": self.old_version,
            "newVersion": self.new_version,
            "backward": self.holds(Direction::Backward),
            "forward": self.holds(Direction::Forward),
            "sides": self.sides.iter().map(|side| json!({
                "side": side.side.as_str(),
                "messages": side.messages.iter().map(message_json).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "rust": self.rust.iter().map(|c| json!({
                "kind": c.kind.as_str(),
                "item": c.item,
                "detail": c.detail,
                "breaking": c.is_breaking(),
            })).collect::<Vec<_>>(),
            "rustBreaking": self.breaks_rust(),
        })
    }

    fn to_text(&self) -> String {
        let mut out = String::new();
        let version =
            |v: Option<u32>| v.map_or_else(|| "no protocol version".to_string(), |v| format!("protocol version {v}"));
        let _ = writeln!(out, "old schema: {}; new schema: {}", version(self.old_version), version(self.new_version));
        for side in &self.sides {
            let _ = writeln!(out, "\n{} messages", side.side.as_str());
            let width = side.messages.iter().map(|m| m.name.len()).max().unwrap_or(0);
            for message in &side.messages {
                let _ = writeln!(
                    out,
                    "  {:width$}  backward (old writers -> new readers): {:6}  forward (new writers -> old readers): {}",
                    message.name,
                    word(&message.backward),
                    word(&message.forward),
                );
                for direction in [Direction::Backward, Direction::Forward] {
                    let verdict = message.verdict(direction);
                    for reason in &verdict.reasons {
                        let _ = writeln!(
                            out,
                            "      {} breaks: {}: {}",
                            direction.as_str(),
                            reason.change.as_str(),
                            reason.detail
                        );
                        let _ = writeln!(out, "        old: {}", reason.old_pointer.as_deref().unwrap_or("-"));
                        let _ = writeln!(out, "        new: {}", reason.new_pointer.as_deref().unwrap_or("-"));
                    }
                    if let Some(witness) = &verdict.witness {
                        write_witness(&mut out, direction, witness);
                    } else if !verdict.holds() {
                        let _ = writeln!(out, "      {} witness: none found", direction.as_str());
                    }
                }
            }
        }
        let _ = writeln!(out, "\nRust changes{}", if self.breaks_rust() { " (breaking: a major version)" } else { "" });
        if self.rust.is_empty() {
            let _ = writeln!(out, "  none");
        }
        for change in &self.rust {
            let mark = if change.is_breaking() { "breaking" } else { "compatible" };
            let _ = writeln!(out, "  {:10}  {:22}  {}  {}", mark, change.kind.as_str(), change.item, change.detail);
        }
        let _ = writeln!(
            out,
            "\nbackward (old writers -> new readers): {}; forward (new writers -> old readers): {}",
            if self.holds(Direction::Backward) { "holds" } else { "BREAKS" },
            if self.holds(Direction::Forward) { "holds" } else { "BREAKS" },
        );
        out
    }
}

fn word(verdict: &Verdict) -> &'static str {
    if verdict.holds() {
        "holds"
    } else {
        "BREAKS"
    }
}

fn write_witness(out: &mut String, direction: Direction, witness: &Witness) {
    let (writer, reader) = match direction {
        Direction::Backward => ("old", "new"),
        Direction::Forward => ("new", "old"),
    };
    let _ = writeln!(out, "      {} witness, valid for the {writer} schema: {}", direction.as_str(), witness.message);
    let _ = writeln!(out, "        frame: {}", hex(&witness.frame));
    let _ = writeln!(out, "        {reader} readers refuse it: {}", witness.refused_because);
}

fn message_json(message: &MessageReport) -> Value {
    json!({
        "name": message.name,
        "oldType": message.old_type,
        "newType": message.new_type,
        "backward": verdict_json(&message.backward),
        "forward": verdict_json(&message.forward),
    })
}

fn verdict_json(verdict: &Verdict) -> Value {
    json!({
        "holds": verdict.holds(),
        "reasons": verdict.reasons.iter().map(reason_json).collect::<Vec<_>>(),
        "witness": verdict.witness.as_ref().map(|w| json!({
            "message": w.message,
            "frame": hex(&w.frame),
            "refusedBecause": w.refused_because,
        })),
    })
}

fn reason_json(reason: &Reason) -> Value {
    json!({ "change": reason.change.as_str(), "old": reason.old_pointer, "new": reason.new_pointer, "detail": reason.detail })
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
