//! `cargo xtask schema-guard`: a wire-breaking schema change needs a new protocol version.
//!
//! Compares `schema/pi-protocol.v8.json` with `schema/released/pi-protocol.v8.json`, the copy
//! of the schema as last released, with `pi_protocol_gen::compat` (rules and witnesses). When
//! the change breaks the wire in either direction and `x-protocol-version` did not change, it
//! fails and prints the report. `--record` makes the current schema the released one (run it
//! when cutting a release).

use std::fs;

use pi_protocol_gen::compat::{compat, Format, WitnessSearch};
use pi_protocol_gen::Model;

const CURRENT: &str = "schema/pi-protocol.v8.json";
const RELEASED: &str = "schema/released/pi-protocol.v8.json";

/// Runs the guard (or, with `--record`, records the current schema as released).
///
/// # Errors
/// A message with the report when a wire-breaking change keeps the protocol version.
pub fn run(args: &[&str]) -> Result<(), String> {
    let root = crate::codegen::project_root();
    let read = |path: &str| fs::read_to_string(root.join(path)).map_err(|e| format!("cannot read {path}: {e}"));
    match args {
        ["--record"] => {
            fs::write(root.join(RELEASED), read(CURRENT)?).map_err(|e| format!("cannot write {RELEASED}: {e}"))?;
            eprintln!("recorded {CURRENT} as the released schema ({RELEASED})");
            Ok(())
        }
        [] => {
            let released = Model::from_json(&read(RELEASED)?, RELEASED).map_err(|e| e.to_string())?;
            let current = Model::from_json(&read(CURRENT)?, CURRENT).map_err(|e| e.to_string())?;
            let verdict = guard(&released, &current)?;
            eprintln!("{verdict}");
            Ok(())
        }
        _ => Err(format!("schema-guard takes no arguments but --record, got {}", args.join(" "))),
    }
}

/// The guard's verdict on `released` -> `current`: a line when it holds, the report when not.
fn guard(released: &Model, current: &Model) -> Result<String, String> {
    let mut report = compat(released, current);
    report.find_witnesses(released, current, &WitnessSearch::new()).map_err(|e| e.to_string())?;
    let same_version = released.protocol_version() == current.protocol_version();
    if report.breaks_wire() && same_version {
        return Err(format!(
            "{CURRENT} breaks the wire against {RELEASED} but keeps x-protocol-version {}: bump the version \
             (and record the release with `cargo xtask schema-guard --record` when you cut it)\n\n{}",
            current.protocol_version().map_or_else(|| "(none)".to_string(), |v| v.to_string()),
            report.render(Format::Text)
        ));
    }
    Ok(match (report.breaks_wire(), same_version) {
        (false, _) => format!("schema-guard: {CURRENT} is wire-compatible with {RELEASED} both ways"),
        (true, _) => format!(
            "schema-guard: {CURRENT} breaks the wire against {RELEASED}, with a new protocol version ({:?} -> {:?})",
            released.protocol_version(),
            current.protocol_version()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model(version: u32, extra: Option<serde_json::Value>) -> Model {
        let mut properties = json!({ "type": { "const": "ping" } });
        if let Some(extra) = extra {
            properties["extra"] = extra;
        }
        let schema = json!({
            "x-protocol-version": version,
            "$defs": { "ClientMessage": { "type": "object", "properties": properties, "required": ["type"], "additionalProperties": false } }
        });
        Model::from_value(&schema).unwrap()
    }

    #[test]
    fn a_break_without_a_new_version_fails_and_with_one_passes() {
        let released = model(1, None);
        assert!(guard(&released, &model(1, None)).unwrap().contains("wire-compatible"));
        let error = guard(&released, &model(1, Some(json!({ "type": "string" })))).unwrap_err();
        assert!(error.contains("keeps x-protocol-version 1"), "{error}");
        assert!(error.contains("forward witness"), "{error}");
        assert!(guard(&released, &model(2, Some(json!({ "type": "string" }))))
            .unwrap()
            .contains("new protocol version"));
    }

    #[test]
    fn the_repository_schema_passes_the_guard() {
        run(&[]).unwrap();
    }
}
