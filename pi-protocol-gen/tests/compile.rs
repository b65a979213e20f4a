//! Generated code compiles against the real runtime and derive.
//!
//! The test writes a throwaway crate under Cargo's per-test temporary directory (inside the
//! target directory) holding (1) the real schema plus a new optional `extra` property on
//! `ClientHello`, and (2) one module with every shape the generator emits (newtypes, literals
//! placed after fields, nested tagged unions, key-set unions, nullable and optional fields,
//! negative minimums, keyword field names), then runs `cargo check` on it with
//! `#![deny(warnings)]`, with path dependencies on `pi-protocol-runtime` and
//! `pi-protocol-derive`.
//!
//! The nested cargo uses its own target directory (it cannot share the lock of the running one),
//! so the first run builds syn and the derive once more: about 20 seconds on a 2-core machine,
//! incremental afterwards. The workspace's `Cargo.lock` is copied in, so no new versions are
//! resolved.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A schema exercising every shape of the emitter in one module.
fn samples() -> Value {
    let object = |properties: Value, required: &[&str]| json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false });
    json!({
        "title": "Samples",
        "x-protocol-version": 1,
        "$defs": {
            "Code": { "type": "string", "minLength": 3, "pattern": "^[A-Z]{3}$" },
            "Plain": { "type": "string" },
            "Item": object(json!({
                "kind": { "type": "string", "const": "item" },
                "itemId": { "type": "string", "minLength": 1, "pattern": "^[a-z]{2}$" },
                "count": { "type": "integer", "minimum": 1 },
                "note": { "type": "string" },
                "flag": { "type": "boolean" },
                "data": {},
                "type": { "x-rust-name": "item_type", "type": "string" },
                "match": { "type": "integer", "minimum": -5 },
                "code": { "$ref": "#/$defs/Code" }
            }), &["kind", "itemId", "count", "match", "code"]),
            "Ping": object(json!({ "type": { "type": "string", "const": "ping" }, "v": { "type": "number", "const": 8 } }), &["type", "v"]),
            "Yes": object(json!({
                "type": { "type": "string", "const": "answer" },
                "id": { "type": "string" },
                "ok": { "type": "boolean", "const": true },
                "result": {}
            }), &["type", "id", "ok"]),
            "No": object(json!({
                "type": { "type": "string", "const": "answer" },
                "id": { "type": "string" },
                "ok": { "type": "boolean", "const": false },
                "why": { "type": "string" }
            }), &["type", "id", "ok", "why"]),
            "Answer": { "anyOf": [ { "$ref": "#/$defs/Yes", "x-rust-variant": "Yes" }, { "$ref": "#/$defs/No", "x-rust-variant": "No" } ] },
            "Message": { "anyOf": [ { "$ref": "#/$defs/Ping" }, { "$ref": "#/$defs/Answer" }, { "$ref": "#/$defs/Holder" } ] },
            "Small": object(json!({ "a": { "type": "string" } }), &["a"]),
            "Big": object(json!({ "a": { "type": "string" }, "b": { "type": "string" }, "c": {} }), &["a", "b"]),
            "Either": { "anyOf": [ { "$ref": "#/$defs/Small" }, { "$ref": "#/$defs/Big" } ] },
            "Holder": object(json!({
                "type": { "type": "string", "const": "holder" },
                "target": { "anyOf": [ { "$ref": "#/$defs/Either" }, { "type": "null" } ] },
                "name": { "anyOf": [ { "type": "null" }, { "type": "string", "minLength": 2 } ] }
            }), &["type", "target", "name"])
        }
    })
}

fn write(path: &Path, contents: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

#[test]
fn generated_code_compiles() {
    let mut schema: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("schema/pi-protocol.v8.json")).unwrap()).unwrap();
    schema["$defs"]["ClientHello"]["properties"]["extra"] = json!({ "type": "string" });
    let v8 = pi_protocol_gen::generate(&schema.to_string(), "schema/pi-protocol.v8.json").unwrap();
    let samples = pi_protocol_gen::generate(&samples().to_string(), "samples.json").unwrap();

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gen-compile-check");
    let root = root().canonicalize().unwrap();
    write(
        &dir.join("Cargo.toml"),
        &format!(
            "[package]\nname = \"gen-compile-check\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             [workspace]\n\n[dependencies]\npi-protocol-runtime = {{ path = {:?} }}\npi-protocol-derive = {{ path = {:?} }}\n",
            root.join("pi-protocol-runtime"),
            root.join("pi-protocol-derive"),
        ),
    );
    if let Ok(lock) = std::fs::read_to_string(root.join("Cargo.lock")) {
        // Same dependency versions as the workspace, so nothing new is resolved or downloaded.
        write(&dir.join("Cargo.lock"), &lock);
    }
    write(&dir.join("src/v8.rs"), &v8);
    write(&dir.join("src/samples.rs"), &samples);
    write(
        &dir.join("src/lib.rs"),
        "#![deny(warnings)]\n\
         pub mod samples;\n\
         pub mod v8;\n\
         /// The new optional property is a plain `Option<String>` field.\n\
         pub fn extra(hello: &v8::ClientHello) -> Option<&str> {\n    hello.extra.as_deref()\n}\n",
    );

    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .arg("check")
        .arg("--quiet")
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .expect("run cargo check");
    assert!(
        output.status.success(),
        "generated code does not compile:\n{}\n(crate left in {})",
        String::from_utf8_lossy(&output.stderr),
        dir.display()
    );
}
