//! Our schema means what the reference's schema means.
//!
//! `tests/vectors/reference-schema.json` is the reference package's envelope schemas, dumped as
//! data. Both sides are normalized (every `$ref` inlined; `x-*`, `description`, `$schema`,
//! `$id`, `title` and `$comment` dropped), then compared: `required` and `anyOf` as sets, every
//! other keyword exactly. The mutation tests at the end show the comparison is not vacuous.

use std::path::Path;

use serde_json::{Map, Value};

/// Keywords that only annotate and do not change what a schema accepts.
const ANNOTATIONS: &[&str] = &["description", "$schema", "$id", "title", "$comment"];

fn read_json(relative: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

fn ours() -> Value {
    read_json("schema/pi-protocol.v8.json")
}

fn reference() -> Value {
    read_json("tests/vectors/reference-schema.json")
}

/// `value` with every `$ref` into `defs` inlined and annotations and `x-` keywords dropped.
fn normalize(value: &Value, defs: &Map<String, Value>, depth: usize) -> Value {
    assert!(depth < 64, "reference cycle while inlining $refs");
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, v) in map {
                if key.starts_with("x-") || ANNOTATIONS.contains(&key.as_str()) {
                    continue;
                }
                let v = if key == "properties" {
                    // Keys here are property names, not keywords: keep them all.
                    let props = v.as_object().expect("properties is an object");
                    Value::Object(props.iter().map(|(k, p)| (k.clone(), normalize(p, defs, depth + 1))).collect())
                } else {
                    normalize(v, defs, depth + 1)
                };
                out.insert(key.clone(), v);
            }
            if let Some(target) = out.remove("$ref") {
                assert!(out.is_empty(), "$ref with constraining siblings: {out:?}");
                let name = target.as_str().and_then(|t| t.strip_prefix("#/$defs/")).expect("a #/$defs/ reference");
                let def = defs.get(name).unwrap_or_else(|| panic!("missing definition {name}"));
                return normalize(def, defs, depth + 1);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| normalize(v, defs, depth + 1)).collect()),
        other => other.clone(),
    }
}

/// Our definition `name`, normalized.
fn our_def(schema: &Value, name: &str) -> Value {
    let defs = schema["$defs"].as_object().expect("$defs");
    normalize(&defs[name], defs, 0)
}

/// Every difference between two normalized schemas, as `path: what` lines.
fn differences(ours: &Value, reference: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff(ours, reference, "#", &mut out);
    out
}

fn diff(ours: &Value, reference: &Value, path: &str, out: &mut Vec<String>) {
    match (ours, reference) {
        (Value::Object(a), Value::Object(b)) => {
            for key in a.keys().filter(|k| !b.contains_key(*k)) {
                out.push(format!("{path}/{key}: only in ours"));
            }
            for key in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{path}/{key}: only in the reference"));
            }
            for (key, va) in a {
                let Some(vb) = b.get(key) else { continue };
                let at = format!("{path}/{key}");
                match key.as_str() {
                    "required" => diff_required(va, vb, &at, out),
                    "anyOf" => diff_any_of(va, vb, &at, out),
                    _ => diff(va, vb, &at, out),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                diff(va, vb, &format!("{path}/{i}"), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{path}: ours {a} != reference {b}")),
    }
}

fn diff_required(ours: &Value, reference: &Value, path: &str, out: &mut Vec<String>) {
    let set = |v: &Value| {
        let mut names: Vec<String> = v
            .as_array()
            .expect("required is an array")
            .iter()
            .map(|s| s.as_str().expect("a name").to_owned())
            .collect();
        names.sort();
        names
    };
    let (a, b) = (set(ours), set(reference));
    if a != b {
        out.push(format!("{path}: ours {a:?} != reference {b:?}"));
    }
}

/// Each of our members must equal a distinct reference member, and none may be left over.
fn diff_any_of(ours: &Value, reference: &Value, path: &str, out: &mut Vec<String>) {
    let (Some(a), Some(b)) = (ours.as_array(), reference.as_array()) else {
        out.push(format!("{path}: not an array"));
        return;
    };
    let mut unmatched: Vec<&Value> = b.iter().collect();
    for (i, member) in a.iter().enumerate() {
        match unmatched.iter().position(|r| differences(member, r).is_empty()) {
            Some(j) => {
                unmatched.remove(j);
            }
            None => {
                // Report the closest reference member's differences to make the failure readable.
                let closest = unmatched.iter().map(|r| differences(member, r)).min_by_key(Vec::len);
                out.push(format!("{path}/{i}: matches no reference member; closest differs in {closest:?}"));
            }
        }
    }
    if !unmatched.is_empty() {
        out.push(format!("{path}: {} reference member(s) unmatched", unmatched.len()));
    }
}

fn assert_same(schema: &Value, ours_name: &str, reference_key: &str) {
    let reference = reference();
    let found = differences(&our_def(schema, ours_name), &reference[reference_key]);
    assert!(found.is_empty(), "{ours_name} differs from the reference's {reference_key}:\n{}", found.join("\n"));
}

#[test]
fn client_message_matches_the_reference() {
    assert_same(&ours(), "ClientMessage", "clientMessage");
}

#[test]
fn server_message_matches_the_reference() {
    assert_same(&ours(), "ServerMessage", "serverMessage");
}

#[test]
fn version_and_limits_match_the_reference() {
    let (ours, reference) = (ours(), reference());
    assert_eq!(ours["x-protocol-version"], reference["protocolVersion"]);
    assert_eq!(ours["x-protocol-version"], 8);
    assert_eq!(ours["x-limits"], reference["limits"]);
}

#[test]
fn schema_declares_2020_12_and_every_named_definition() {
    let ours = ours();
    assert_eq!(ours["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert!(ours["$id"].is_string());
    let defs = ours["$defs"].as_object().expect("$defs");
    for name in [
        "ServerId",
        "Id",
        "SessionId",
        "AttachmentId",
        "SubscriptionId",
        "ErrorCode",
        "ServerTarget",
        "SessionTarget",
        "RpcTarget",
        "ProtocolError",
        "ClientHello",
        "RequestEnvelope",
        "CancelEnvelope",
        "ClientMessage",
        "ServerHello",
        "ServerHelloError",
        "SuccessResponse",
        "ErrorResponse",
        "Response",
        "ServiceUpdate",
        "Attachment",
        "ServerMessage",
    ] {
        assert!(defs.contains_key(name), "missing #/$defs/{name}");
        assert!(defs[name]["description"].is_string(), "#/$defs/{name} has no description");
    }
}

/// Applies `edit` to a copy of our schema and returns the differences of both message unions.
fn mutated(edit: impl FnOnce(&mut Value)) -> Vec<String> {
    let mut schema = ours();
    edit(&mut schema);
    let reference = reference();
    let mut found = differences(&our_def(&schema, "ClientMessage"), &reference["clientMessage"]);
    found.extend(differences(&our_def(&schema, "ServerMessage"), &reference["serverMessage"]));
    found
}

#[test]
fn dropping_a_min_length_is_caught() {
    let found = mutated(|s| {
        s["$defs"]["SessionId"].as_object_mut().unwrap().remove("minLength");
    });
    assert!(!found.is_empty());
    assert!(found.iter().any(|d| d.contains("minLength") || d.contains("matches no reference member")), "{found:?}");
}

#[test]
fn changing_the_server_id_pattern_is_caught() {
    let found = mutated(|s| {
        s["$defs"]["ServerId"]["pattern"] = Value::from("^[0-9a-f]{36}$");
    });
    assert!(!found.is_empty());
}

#[test]
fn a_wrong_const_is_caught() {
    let found = mutated(|s| {
        s["$defs"]["ServerHello"]["properties"]["version"]["const"] = Value::from(7);
    });
    assert!(!found.is_empty());
}

#[test]
fn an_optional_required_key_is_caught() {
    let found = mutated(|s| {
        let required = s["$defs"]["RequestEnvelope"]["required"].as_array_mut().unwrap();
        required.retain(|k| k != "call");
    });
    assert!(!found.is_empty());
}

#[test]
fn allowing_additional_properties_is_caught() {
    let found = mutated(|s| {
        s["$defs"]["ProtocolError"]["additionalProperties"] = Value::Bool(true);
    });
    assert!(!found.is_empty());
}

#[test]
fn an_extra_union_member_is_caught() {
    let found = mutated(|s| {
        s["$defs"]["ClientMessage"]["anyOf"].as_array_mut().unwrap().push(serde_json::json!({"type": "null"}));
    });
    assert!(!found.is_empty());
}

#[test]
fn a_missing_union_member_is_caught() {
    let found = mutated(|s| {
        s["$defs"]["ServerMessage"]["anyOf"].as_array_mut().unwrap().pop();
    });
    assert!(!found.is_empty());
}

#[test]
fn required_and_any_of_order_does_not_matter() {
    let found = mutated(|s| {
        s["$defs"]["SessionTarget"]["required"].as_array_mut().unwrap().reverse();
        s["$defs"]["ClientMessage"]["anyOf"].as_array_mut().unwrap().reverse();
        s["$defs"]["RpcTarget"]["anyOf"].as_array_mut().unwrap().reverse();
    });
    assert!(found.is_empty(), "{found:?}");
}
