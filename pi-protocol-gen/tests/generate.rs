//! Generation from small schemas: the exact output for each shape (snapshots in
//! `tests/snapshots/`, reviewed in diffs; `UPDATE_SNAPSHOTS=1 cargo test -p pi-protocol-gen`
//! rewrites them). Snapshots hold the output after `rustfmt`, as `cargo xtask gen` writes it
//! (and as rustfmt leaves it: the formatting settles in one pass).

use pi_protocol_gen::{generate, generate_with, GenError, Options};
use serde_json::{json, Value};

/// A schema document with `defs` as its `$defs` (no title, version or limits).
fn schema(defs: Value) -> String {
    json!({ "$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": defs }).to_string()
}

/// An object definition with the given properties, all required.
fn object(properties: Value) -> Value {
    let required: Vec<String> = properties.as_object().unwrap().keys().cloned().collect();
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// Compares `code`, formatted, with `tests/snapshots/<name>.rs` (or writes it with
/// `UPDATE_SNAPSHOTS=1`).
fn assert_snapshot(name: &str, code: &str) {
    let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rustfmt.toml");
    let code = pi_protocol_gen::rustfmt(code, Some(&config)).expect("rustfmt formats generated code");
    assert_rustfmt_stable(&code);
    let code = code.as_str();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(format!("{name}.rs"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, code).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(code == expected, "generated code differs from {}:\n{code}", path.display());
}

fn assert_generates(name: &str, defs: Value) {
    let code = generate(&schema(defs), "test.json").unwrap_or_else(|e| panic!("generation failed: {e}"));
    assert_snapshot(name, &code);
}

/// `cargo fmt` with the workspace's `rustfmt.toml` leaves `code` as it is (skipped, with a
/// note, where rustfmt is not installed).
fn assert_rustfmt_stable(code: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rustfmt.toml");
    let mut command = Command::new("rustfmt");
    command.args(["--edition", "2021", "--emit", "stdout"]);
    if config.exists() {
        command.arg("--config-path").arg(&config);
    }
    let Ok(mut child) = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() else {
        eprintln!("note: rustfmt not found; formatting stability not checked");
        return;
    };
    child.stdin.take().unwrap().write_all(code.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "rustfmt failed: {}", String::from_utf8_lossy(&output.stderr));
    let formatted = String::from_utf8(output.stdout).unwrap();
    assert!(formatted == code, "rustfmt changes the generated code:\n{formatted}");
}

#[test]
fn newtypes_of_every_value_kind() {
    assert_generates(
        "newtypes",
        json!({
            "Code": { "description": "A three-letter code.", "type": "string", "minLength": 3, "pattern": "^[A-Z]{3}$" },
            "Plain": { "type": "string" },
            "Slug": { "type": "string", "maxLength": 40, "pattern": "^[a-z]+(-[a-z]+)*$" },
            "Timestamp": { "type": "integer", "minimum": 0 },
            "Ratio": { "type": "number", "exclusiveMinimum": 0, "maximum": 1.5 },
            "Tags": { "type": "array", "items": { "$ref": "#/$defs/Slug" }, "minItems": 1, "maxItems": 8 },
            "Labels": { "type": "object", "patternProperties": { "^[a-z]+$": { "type": "string", "minLength": 1 } } },
            "Maybe": { "type": ["string", "null"] }
        }),
    );
}

#[test]
fn struct_fields_optional_renamed_nullable_and_nested() {
    assert_generates(
        "struct_fields",
        json!({
            "Item": {
                "description": "An item.",
                "type": "object",
                "properties": {
                    "kind": { "type": "string", "const": "item" },
                    "itemId": { "description": "Which item.", "type": "string", "minLength": 1 },
                    "count": { "type": "integer", "minimum": 1, "maximum": 10 },
                    "note": { "description": "A note, when there is one.", "type": "string", "maxLength": 80 },
                    "data": {},
                    "type": { "x-rust-name": "item_type", "type": "string" },
                    "match": { "type": "integer", "minimum": -5 },
                    "parent": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
                    "cleared": { "type": ["integer", "null"], "minimum": 0 },
                    "size": {
                        "type": "object",
                        "properties": { "w": { "type": "number" }, "h": { "type": "number" } },
                        "required": ["w", "h"],
                        "additionalProperties": false
                    },
                    "grid": { "type": "array", "items": { "type": "array", "items": { "type": ["string", "null"], "minLength": 1 } } },
                    "scores": { "type": "object", "additionalProperties": { "type": "number", "minimum": 0 } }
                },
                "required": ["kind", "itemId", "count", "match", "parent", "grid"],
                "additionalProperties": false
            }
        }),
    );
}

#[test]
fn unions_by_tag_tags_key_set_and_type() {
    assert_generates(
        "unions",
        json!({
            "Ping": object(json!({ "type": { "type": "string", "const": "ping" }, "v": { "type": "number", "const": 8 } })),
            "Yes": object(json!({
                "type": { "type": "string", "const": "answer" },
                "id": { "type": "string" },
                "ok": { "type": "boolean", "const": true }
            })),
            "No": object(json!({
                "type": { "type": "string", "const": "answer" },
                "id": { "type": "string" },
                "ok": { "type": "boolean", "const": false },
                "why": { "type": "string" }
            })),
            "Answer": {
                "description": "An answer.",
                "anyOf": [ { "$ref": "#/$defs/Yes", "x-rust-variant": "Yes" }, { "$ref": "#/$defs/No", "description": "Said no." } ]
            },
            "Message": { "anyOf": [ { "$ref": "#/$defs/Ping" }, { "$ref": "#/$defs/Answer" } ] },
            "Small": object(json!({ "a": { "type": "string" } })),
            "Big": {
                "type": "object",
                "properties": { "a": { "type": "string" }, "b": { "type": "string" }, "c": {} },
                "required": ["a", "b"],
                "additionalProperties": false
            },
            "Either": { "anyOf": [ { "$ref": "#/$defs/Small", "x-rust-variant": "Small" }, { "$ref": "#/$defs/Big" } ] },
            "Done": { "oneOf": [
                object(json!({ "role": { "const": "tool" }, "status": { "const": "done" }, "failed": { "const": false }, "out": {} })),
                object(json!({ "role": { "const": "tool" }, "status": { "const": "done" }, "failed": { "const": true } })),
                object(json!({ "role": { "const": "bot" }, "status": { "const": "done" } }))
            ] },
            "Scalar": { "type": ["string", "number", "boolean", "null"], "minLength": 1 },
            "Level": { "enum": ["off", "low-ish", 3, true, null] },
            "Color": { "anyOf": [{ "const": "red" }, { "const": "green" }] }
        }),
    );
}

#[test]
fn recursion_is_boxed_and_cyclic_ids_are_named() {
    assert_generates(
        "recursion",
        json!({
            "Tree": {
                "type": "object",
                "properties": {
                    "children": { "type": "array", "items": { "$ref": "#/$defs/Tree" } },
                    "parent": { "anyOf": [{ "$ref": "#/$defs/Tree" }, { "type": "null" }] }
                },
                "required": ["children"],
                "additionalProperties": false
            },
            "Holder": object(json!({
                "value": {
                    "$defs": { "JsonValue": { "$id": "JsonValue", "anyOf": [
                        { "type": "null" }, { "type": "boolean" }, { "type": "number" }, { "type": "string" },
                        { "type": "array", "items": { "$ref": "JsonValue" } },
                        { "type": "object", "patternProperties": { "^.*$": { "$ref": "JsonValue" } } }
                    ] } },
                    "$ref": "JsonValue"
                }
            }))
        }),
    );
}

#[test]
fn root_facts_become_module_docs_and_the_version_constant() {
    let document = json!({
        "title": "Toy protocol",
        "description": "A second paragraph.",
        "x-protocol-version": 3,
        "x-limits": { "maxDepth": 7 },
        "$defs": { "Name": { "type": "string" } }
    });
    let code = generate(&document.to_string(), "toy.json").unwrap();
    assert_snapshot("root_facts", &code);
    let model = pi_protocol_gen::Model::from_json(&document.to_string(), "toy.json").unwrap();
    assert_eq!(model.limits().get("maxDepth"), Some(&7));
    assert_eq!(model.limits().len(), 1);
    assert_eq!(model.protocol_version(), Some(3));
}

#[test]
fn options_change_preamble_paths_attributes_and_docs() {
    let options = Options::default()
        .command("build.rs of my-crate")
        .runtime_path("my_crate::runtime")
        .derive_path("my_crate::derive")
        .json(false)
        .inner_docs(false)
        .type_attribute("N", "#[derive(Default)]")
        .type_attribute("*", "#[allow(missing_docs)]")
        .field_attribute("N.n", "#[doc(alias = \"number\")]");
    let document = schema(json!({ "N": object(json!({ "n": { "type": "integer" } })) }));
    let code = generate_with(&document, "x.json", &options).unwrap();
    assert_snapshot("options", &code);
    assert!(!code.contains("//!"), "include! refuses inner doc comments:\n{code}");
    let bad = Options::default().runtime_path("not a path");
    let error = generate_with(&document, "x.json", &bad).unwrap_err();
    assert!(matches!(error, GenError::Option { option: "runtime_path", .. }), "{error}");
    let bad = Options::default().type_attribute("N", "not an attribute");
    assert!(matches!(
        generate_with(&document, "x.json", &bad).unwrap_err(),
        GenError::Option { option: "type_attribute", .. }
    ));
    let bad = Options::default().field_attribute("no-dot", "#[allow(unused)]");
    assert!(matches!(
        generate_with(&document, "x.json", &bad).unwrap_err(),
        GenError::Option { option: "field_attribute", .. }
    ));
}

#[test]
fn the_reference_form_folds_repeated_schemas_into_types() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/reference-v8.json");
    let text = std::fs::read_to_string(path).unwrap();
    let code = generate(&text, "reference-v8.json").unwrap();
    assert_snapshot("reference_v8", &code);
}

/// Accessors on unions: a field two variants share with one type gets one (`&T` when every
/// variant holds it required, else `Option<&T>`), through nested unions too; a field of two
/// types, or of one variant, gets none; strings and boxes are handed out dereferenced.
#[test]
fn unions_get_accessors_for_the_fields_their_variants_share() {
    let tagged = |tag: &str, extra: Value| {
        let mut properties = json!({ "kind": { "const": tag } });
        properties.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        object(properties)
    };
    let mut maybe = tagged("maybe", json!({ "name": { "type": "string" }, "note": { "type": ["string", "null"] } }));
    maybe["required"] = json!(["kind"]);
    assert_generates(
        "accessors",
        json!({
            "Shape": { "anyOf": [
                { "$ref": "#/$defs/Circle" },
                { "$ref": "#/$defs/Square" },
                { "$ref": "#/$defs/Maybe" },
                { "$ref": "#/$defs/Group" }
            ] },
            "Circle": tagged("circle", json!({
                "name": { "type": "string" },
                "size": { "type": "integer" },
                "note": { "type": ["string", "null"] },
                "only": { "type": "boolean" }
            })),
            "Square": tagged("square", json!({
                "name": { "type": "string" },
                "size": { "type": "number" },
                "note": { "type": ["string", "null"] }
            })),
            "Maybe": maybe,
            "Group": { "anyOf": [
                tagged("group", json!({ "mode": { "const": "pair" }, "name": { "type": "string" } })),
                tagged("group", json!({ "mode": { "const": "many" }, "name": { "type": "string" } }))
            ] }
        }),
    );
}
