//! `cargo xtask growth`: proves that schema growth needs no hand edit anywhere.
//!
//! Copies the workspace (the files git tracks) into `target/growth-check/`, grows its schema as
//! a protocol revision would — an optional property on every object, a new message type in each
//! direction — regenerates, builds every crate, example, test and benchmark with every feature,
//! and runs the conformance and capture tests there. The build shares this workspace's target
//! directory, so only the workspace's own crates are rebuilt.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

/// Runs the check.
///
/// # Errors
/// A message naming the step that failed.
pub fn run(args: &[&str]) -> Result<(), String> {
    if !args.is_empty() {
        return Err(format!("growth takes no arguments, got {}", args.join(" ")));
    }
    let root = crate::codegen::project_root();
    let copy = root.join("target/growth-check");
    if copy.exists() {
        std::fs::remove_dir_all(&copy).map_err(|e| format!("cannot clear {}: {e}", copy.display()))?;
    }
    copy_tracked_files(&root, &copy)?;
    let schema_path = copy.join("schema/pi-protocol.v8.json");
    let text = std::fs::read_to_string(&schema_path).map_err(|e| format!("read the schema: {e}"))?;
    let mut schema: Value = serde_json::from_str(&text).map_err(|e| format!("parse the schema: {e}"))?;
    let grown = grow(&mut schema)?;
    std::fs::write(&schema_path, serde_json::to_string_pretty(&schema).expect("JSON"))
        .map_err(|e| format!("write the grown schema: {e}"))?;
    eprintln!("growth: {grown} objects got an optional property; a message type was added to each direction");

    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let cargo = |args: &[&str]| -> Result<(), String> {
        eprintln!("growth: cargo {}", args.join(" "));
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(args)
            .current_dir(&copy)
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "`cargo {}` failed in the grown workspace ({status}); it is left in {}",
                args.join(" "),
                copy.display()
            ))
        }
    };
    cargo(&["xtask", "gen"])?;
    cargo(&["build", "--workspace", "--all-targets", "--all-features", "--quiet"])?;
    cargo(&["test", "--quiet", "-p", "pi-protocol", "--all-features", "--test", "conformance", "--test", "captures"])?;
    std::fs::remove_dir_all(&copy).map_err(|e| format!("cannot remove {}: {e}", copy.display()))?;
    eprintln!("growth: the grown workspace builds and passes the conformance tests");
    Ok(())
}

/// Adds an optional property to every object and a message type to each direction; returns
/// how many objects grew.
fn grow(schema: &mut Value) -> Result<usize, String> {
    let defs = schema.get_mut("$defs").and_then(Value::as_object_mut).ok_or("the schema has no $defs")?;
    let mut grown = 0;
    for def in defs.values_mut() {
        if let Some(properties) = def.get_mut("properties").and_then(Value::as_object_mut) {
            properties.insert(
                "growthNote".into(),
                json!({ "description": "Added by the growth check.", "type": "string", "maxLength": 100 }),
            );
            grown += 1;
        }
    }
    let message = |tag: &str, extra: Value| {
        json!({
            "description": "A message type added by the growth check.",
            "type": "object",
            "properties": { "type": { "type": "string", "const": tag }, "detail": extra },
            "required": ["type", "detail"],
            "additionalProperties": false
        })
    };
    defs.insert(
        "GrowthClientMessage".into(),
        message("growth_probe", json!({ "type": "array", "items": { "type": "integer" } })),
    );
    defs.insert("GrowthServerMessage".into(), message("growth_notice", json!({ "enum": ["low", "high"] })));
    for (union, added) in [("ClientMessage", "GrowthClientMessage"), ("ServerMessage", "GrowthServerMessage")] {
        let members = defs
            .get_mut(union)
            .and_then(|u| u.get_mut("anyOf"))
            .and_then(Value::as_array_mut)
            .ok_or(format!("{union} is not an anyOf"))?;
        members.push(json!({ "$ref": format!("#/$defs/{added}") }));
    }
    Ok(grown)
}

/// Copies every file git tracks under `root` into `dest`.
fn copy_tracked_files(root: &Path, dest: &Path) -> Result<(), String> {
    let output = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        return Err("git ls-files failed".into());
    }
    for name in output.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name);
        let to = dest.join(&*name);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        match std::fs::copy(root.join(&*name), &to) {
            Ok(_) => {}
            // A tracked file deleted in the working tree is not part of the workspace.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot copy {name}: {e}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_adds_a_property_to_every_object_and_a_message_each_way() {
        let mut schema = json!({ "$defs": {
            "A": { "type": "object", "properties": { "a": {} }, "additionalProperties": false },
            "S": { "type": "string" },
            "ClientMessage": { "anyOf": [{ "$ref": "#/$defs/A" }] },
            "ServerMessage": { "anyOf": [{ "$ref": "#/$defs/A" }] }
        }});
        assert_eq!(grow(&mut schema).unwrap(), 1);
        assert!(schema["$defs"]["A"]["properties"]["growthNote"].is_object());
        assert!(schema["$defs"]["S"].get("properties").is_none());
        assert_eq!(schema["$defs"]["ClientMessage"]["anyOf"][1]["$ref"], "#/$defs/GrowthClientMessage");
        assert_eq!(schema["$defs"]["ServerMessage"]["anyOf"][1]["$ref"], "#/$defs/GrowthServerMessage");
        let model = pi_protocol_gen::Model::from_value(&schema).expect("the grown schema generates");
        assert!(model.by_rust_name("GrowthClientMessage").is_some());
    }
}
