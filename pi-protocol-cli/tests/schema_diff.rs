//! `pi-protocol schema diff OLD NEW`: the verdicts for three edits of the version 8 schema, and
//! the exit statuses `--require` gives them.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn v8() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schema/pi-protocol.v8.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Writes `schema` to a fresh file in the temp directory.
fn write(name: &str, schema: &Value) -> PathBuf {
    let path = std::env::temp_dir().join(format!("pi-protocol-diff-{}-{name}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_string_pretty(schema).unwrap()).unwrap();
    path
}

fn diff(old: &PathBuf, new: &PathBuf, extra: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pi-protocol"));
    command.args(["schema", "diff"]).arg(old).arg(new).args(extra);
    if !extra.contains(&"--attempts") {
        // A few hundred draws find the witnesses of these edits; the default 2,000 take longer.
        command.args(["--attempts", "300"]);
    }
    command.output().expect("the binary runs")
}

/// The version 8 schema with an optional `note` on requests.
fn optional_added() -> Value {
    let mut schema = v8();
    schema["$defs"]["RequestEnvelope"]["properties"]["note"] = json!({ "type": "string" });
    schema
}

/// The version 8 schema with a client message `ping`.
fn message_added() -> Value {
    let mut schema = v8();
    schema["$defs"]["PingEnvelope"] = json!({
        "type": "object",
        "properties": { "type": { "type": "string", "const": "ping" } },
        "required": ["type"],
        "additionalProperties": false
    });
    schema["$defs"]["ClientMessage"]["anyOf"].as_array_mut().unwrap().push(json!({ "$ref": "#/$defs/PingEnvelope" }));
    schema
}

/// The version 8 schema with request ids of at most 64 characters.
fn bound_tightened() -> Value {
    let mut schema = v8();
    schema["$defs"]["Id"]["maxLength"] = json!(64);
    schema
}

#[test]
fn verdicts_and_exit_statuses_follow_the_direction_required() {
    let old = write("v8", &v8());
    // (name, new schema, backward holds, forward holds)
    let cases = [
        ("optional-added", optional_added(), true, false),
        ("message-added", message_added(), true, false),
        ("bound-tightened", bound_tightened(), false, true),
        ("unchanged", v8(), true, true),
    ];
    for (name, schema, backward, forward) in cases {
        let new = write(name, &schema);
        let report = diff(&old, &new, &["--format", "json"]);
        assert_eq!(report.status.code(), Some(0), "{name}: without --require the report is all");
        let value: Value = serde_json::from_slice(&report.stdout).unwrap();
        assert_eq!(
            (value["backward"].as_bool(), value["forward"].as_bool()),
            (Some(backward), Some(forward)),
            "{name}"
        );
        for (require, holds) in [("backward", backward), ("forward", forward), ("both", backward && forward)] {
            let out = diff(&old, &new, &["--require", require]);
            assert_eq!(out.status.code(), Some(if holds { 0 } else { 1 }), "{name} --require {require}");
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert_eq!(stderr.is_empty(), holds, "{name} --require {require}: {stderr}");
            assert!(String::from_utf8(out.stdout).unwrap().starts_with("old schema: protocol version 8"));
        }
        std::fs::remove_file(new).ok();
    }
    std::fs::remove_file(old).ok();
}

#[test]
fn the_report_names_the_message_and_the_edit() {
    let old = write("v8-names", &v8());
    let new = write("ping", &message_added());
    let out = diff(&old, &new, &["--require", "forward"]);
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "pi-protocol: forward compatibility (new writers -> old readers) breaks for client ping\n"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("forward breaks: message type added: `ping` messages are refused by old readers"), "{text}");

    let new = write("ids", &bound_tightened());
    let out = diff(&old, &new, &["--require", "both"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("pi-protocol: backward compatibility (old writers -> new readers) breaks for client request, client cancel, server response ok=true"),
        "{stderr}"
    );
    let value: Value = serde_json::from_slice(&diff(&old, &new, &["--format", "json"]).stdout).unwrap();
    let request = &value["sides"][0]["messages"][1];
    assert_eq!(request["name"], "request");
    assert_eq!(request["backward"]["reasons"][0]["change"], "bound tightened");
    assert_eq!(request["backward"]["reasons"][0]["new"], "#/$defs/Id");
    assert_eq!(request["backward"]["reasons"][0]["detail"], "maxLength: none -> 64");
    // The witness of a bound added where there was none: an id beyond it, which new readers refuse.
    let witness = &request["backward"]["witness"];
    let id = witness["message"]["id"].as_str().unwrap_or_else(|| panic!("a witness: {request}"));
    assert!(id.chars().count() > 64, "{witness}");
    assert_eq!(witness["refusedBecause"], "invalid message at id: string longer than 64 characters");

    // The break of an added optional property is shown by a message holding it.
    let new = write("note", &optional_added());
    let value: Value = serde_json::from_slice(&diff(&old, &new, &["--format", "json"]).stdout).unwrap();
    let witness = &value["sides"][0]["messages"][1]["forward"]["witness"];
    assert!(witness["message"]["note"].is_string(), "{witness}");
    assert_eq!(witness["refusedBecause"], "invalid message: unknown field");
    let text = String::from_utf8(diff(&old, &new, &["--attempts", "0"]).stdout).unwrap();
    assert!(text.contains("forward witness: none found"), "{text}");
    for file in [old, new] {
        std::fs::remove_file(file).ok();
    }
}

#[test]
fn unusable_schemas_and_bad_arguments_exit_2() {
    let old = write("v8-bad", &v8());
    let not_schema = write("not-a-schema", &json!({ "$defs": { "X": { "type": "frobnicate" } } }));
    let missing = PathBuf::from("/nonexistent/schema.json");
    for (new, extra) in
        [(&missing, &[][..]), (&not_schema, &[]), (&old, &["--require", "sideways"]), (&old, &["--format", "xml"])]
    {
        let out = diff(&old, new, extra);
        assert_eq!(out.status.code(), Some(2), "{new:?} {extra:?}");
        assert!(out.stdout.is_empty());
    }
    let stderr = String::from_utf8(diff(&old, &not_schema, &[]).stderr).unwrap();
    assert!(stderr.starts_with("pi-protocol: ") && stderr.contains("not-a-schema"), "{stderr}");
    for file in [old, not_schema] {
        std::fs::remove_file(file).ok();
    }
}

#[test]
fn a_reader_that_stops_early_leaves_the_verdict_in_the_exit_status() {
    // `pi-protocol schema diff OLD NEW --require backward | head -1` under `pipefail`: the
    // report's reader going away must not turn a broken requirement into success.
    use std::process::Stdio;
    let old = write("v8-pipe", &v8());
    let new = write("tightened-pipe", &bound_tightened());
    let mut child = Command::new(env!("CARGO_BIN_EXE_pi-protocol"))
        .args(["schema", "diff"])
        .arg(&old)
        .arg(&new)
        .args(["--require", "backward", "--attempts", "300"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("backward compatibility"), "{stderr}");
}
