//! The compatibility rules, each edit checked in both directions: which direction breaks, the
//! reason the report gives (with pointers into both schemas), and the evidence: every break has
//! a witness (a message valid for the writer's schema that the reader's refuses, checked again
//! here), and sampling finds no counterexample to any "holds".

use pi_protocol_gen::compat::{compat, Change, Direction, Report, RustChangeKind, WitnessSearch};
use pi_protocol_gen::interpret::Interpreter;
use pi_protocol_gen::Model;
use serde_json::{json, Value};

/// A small protocol: client `note` and `ping` messages, server `ack`.
fn base() -> Value {
    json!({
        "x-protocol-version": 1,
        "$defs": {
            "Id": { "type": "string", "minLength": 1, "maxLength": 10 },
            "Level": { "enum": ["low", "high"] },
            "Note": {
                "type": "object",
                "properties": {
                    "type": { "type": "string", "const": "note" },
                    "id": { "$ref": "#/$defs/Id" },
                    "count": { "type": "integer", "minimum": 0, "maximum": 100 },
                    "tags": { "type": "array", "items": { "type": "string", "pattern": "^[a-z]+$" }, "maxItems": 3 },
                    "level": { "$ref": "#/$defs/Level" },
                    "score": { "type": "integer" },
                    "meta": { "type": "object", "additionalProperties": { "type": "string" } },
                    "parent": { "anyOf": [{ "$ref": "#/$defs/Id" }, { "type": "null" }] },
                    "note": { "description": "A note.", "type": "string" }
                },
                "required": ["type", "id", "count", "level", "parent"],
                "additionalProperties": false
            },
            "Ping": {
                "type": "object",
                "properties": { "type": { "type": "string", "const": "ping" } },
                "required": ["type"],
                "additionalProperties": false
            },
            "Ack": {
                "type": "object",
                "properties": { "type": { "type": "string", "const": "ack" }, "id": { "$ref": "#/$defs/Id" } },
                "required": ["type", "id"],
                "additionalProperties": false
            },
            "ClientMessage": { "anyOf": [{ "$ref": "#/$defs/Note" }, { "$ref": "#/$defs/Ping" }] },
            "ServerMessage": { "anyOf": [{ "$ref": "#/$defs/Ack" }] }
        }
    })
}

fn model(value: &Value) -> Model {
    Model::from_value(value).unwrap_or_else(|e| panic!("{e}"))
}

/// The report for `edit` applied to the base schema.
fn diff(edit: impl FnOnce(&mut Value)) -> Report {
    let old = base();
    let mut new = base();
    edit(&mut new);
    compare(&old, &new)
}

/// The report of `old` -> `new`, with its evidence checked: a witness for every break, valid for
/// the writer and refused by the reader, and no counterexample to a "holds".
fn compare(old: &Value, new: &Value) -> Report {
    let (old, new) = (model(old), model(new));
    let mut report = compat(&old, &new);
    report.find_witnesses(&old, &new, &WitnessSearch::new().attempts(3000)).unwrap();
    let (old_reader, new_reader) = (Interpreter::new(&old).unwrap(), Interpreter::new(&new).unwrap());
    for side in &report.sides {
        for message in &side.messages {
            for direction in [Direction::Backward, Direction::Forward] {
                let verdict = message.verdict(direction);
                assert!(
                    verdict.reasons.iter().all(|r| r.change != Change::Undetected),
                    "{} {}: sampling contradicts the rules: {:?}",
                    message.name,
                    direction.as_str(),
                    verdict
                );
                let Some(witness) = &verdict.witness else {
                    assert!(
                        verdict.holds(),
                        "{} {}: a break without a witness: {:?}",
                        message.name,
                        direction.as_str(),
                        verdict.reasons
                    );
                    continue;
                };
                let (writer, reader) = match direction {
                    Direction::Backward => (&old_reader, &new_reader),
                    Direction::Forward => (&new_reader, &old_reader),
                };
                assert!(
                    writer.validate_json(side.side, &witness.message).is_ok(),
                    "the witness is not valid for its writer"
                );
                assert!(
                    reader.validate_json(side.side, &witness.message).is_err(),
                    "the witness is accepted by the reader"
                );
                assert_eq!(&witness.frame[..4], &(witness.frame.len() as u32 - 4).to_be_bytes());
            }
        }
    }
    report
}

fn note(report: &Report) -> &pi_protocol_gen::compat::MessageReport {
    report.sides[0].messages.iter().find(|m| m.name == "note").expect("the note message")
}

/// `edit` breaks exactly `breaks` (or nothing) for the note message, with a reason of `change`.
fn assert_breaks(edit: impl FnOnce(&mut Value), breaks: Option<Direction>, change: Option<Change>) {
    let report = diff(edit);
    let note = note(&report);
    for direction in [Direction::Backward, Direction::Forward] {
        let verdict = note.verdict(direction);
        if Some(direction) == breaks {
            assert!(
                !verdict.holds(),
                "{} should break:\n{}",
                direction.as_str(),
                report.render(pi_protocol_gen::compat::Format::Text)
            );
            let change = change.expect("a break names its change");
            assert!(
                verdict.reasons.iter().any(|r| r.change == change),
                "{:?} expected among {:?}",
                change,
                verdict.reasons
            );
            assert!(
                verdict.reasons.iter().all(|r| r.old_pointer.is_some() && r.new_pointer.is_some()),
                "{:?}",
                verdict.reasons
            );
        } else {
            assert!(verdict.holds(), "{} should hold: {:?}", direction.as_str(), verdict.reasons);
        }
    }
}

fn props(v: &mut Value) -> &mut serde_json::Map<String, Value> {
    v["$defs"]["Note"]["properties"].as_object_mut().unwrap()
}

fn required(v: &mut Value) -> &mut Vec<Value> {
    v["$defs"]["Note"]["required"].as_array_mut().unwrap()
}

#[test]
fn optional_property_added_breaks_forward_and_removed_breaks_backward() {
    assert_breaks(
        |v| {
            props(v).insert("extra".into(), json!({ "type": "string" }));
        },
        Some(Direction::Forward),
        Some(Change::OptionalPropertyAdded),
    );
    assert_breaks(
        |v| {
            props(v).remove("note");
        },
        Some(Direction::Backward),
        Some(Change::OptionalPropertyRemoved),
    );
}

#[test]
fn required_property_added_breaks_both_and_removed_breaks_both() {
    // Added: old messages lack it (backward), new messages carry a key old readers refuse (forward).
    let report = diff(|v| {
        props(v).insert("extra".into(), json!({ "type": "string" }));
        required(v).push(json!("extra"));
    });
    let added = note(&report);
    assert!(added.backward.reasons.iter().any(|r| r.change == Change::RequiredPropertyAdded));
    assert!(added
        .forward
        .reasons
        .iter()
        .any(|r| r.change == Change::OptionalPropertyAdded || r.change == Change::RequiredPropertyAdded));
    let report = diff(|v| {
        props(v).remove("count");
        required(v).retain(|k| k != "count");
    });
    let removed = note(&report);
    assert!(
        removed.backward.reasons.iter().any(|r| r.change == Change::RequiredPropertyRemoved),
        "{:?}",
        removed.backward
    );
    assert!(
        removed.forward.reasons.iter().any(|r| r.change == Change::RequiredPropertyRemoved),
        "{:?}",
        removed.forward
    );
}

#[test]
fn made_required_breaks_backward_and_made_optional_breaks_forward() {
    assert_breaks(|v| required(v).push(json!("note")), Some(Direction::Backward), Some(Change::MadeRequired));
    assert_breaks(|v| required(v).retain(|k| k != "count"), Some(Direction::Forward), Some(Change::MadeOptional));
}

#[test]
fn a_changed_literal_breaks_both_ways() {
    let report = diff(|v| props(v)["type"] = json!({ "type": "string", "const": "memo" }));
    // The message is matched by its tag, so `note` disappeared and `memo` appeared.
    let names: Vec<&str> = report.sides[0].messages.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["note", "ping", "memo"]);
    assert_eq!(report.sides[0].messages[0].backward.reasons[0].change, Change::MessageRemoved);
    assert_eq!(report.sides[0].messages[2].forward.reasons[0].change, Change::MessageAdded);
    // A literal that is not the tag changes in place.
    let mut old = base();
    props(&mut old).insert("kind".into(), json!({ "const": 1 }));
    required(&mut old).push(json!("kind"));
    let mut new = old.clone();
    props(&mut new)["kind"] = json!({ "const": 2 });
    let report = compare(&old, &new);
    for direction in [Direction::Backward, Direction::Forward] {
        assert_eq!(note(&report).verdict(direction).reasons[0].change, Change::LiteralChanged);
    }
}

#[test]
fn message_types_added_and_removed() {
    let report = diff(|v| {
        v["$defs"]["Pong"] = json!({ "type": "object", "properties": { "type": { "const": "pong" } }, "required": ["type"], "additionalProperties": false });
        v["$defs"]["ClientMessage"]["anyOf"].as_array_mut().unwrap().push(json!({ "$ref": "#/$defs/Pong" }));
    });
    let pong = report.sides[0].messages.iter().find(|m| m.name == "pong").unwrap();
    assert!(pong.backward.holds() && !pong.forward.holds());
    assert!(report.holds(Direction::Backward) && !report.holds(Direction::Forward));
    let report = diff(|v| {
        v["$defs"]["ClientMessage"]["anyOf"].as_array_mut().unwrap().pop();
    });
    let ping = report.sides[0].messages.iter().find(|m| m.name == "ping").unwrap();
    assert!(!ping.backward.holds() && ping.forward.holds());
    assert_eq!(ping.new_type, None);
}

#[test]
fn union_members_and_enum_values_added_and_removed() {
    assert_breaks(
        |v| v["$defs"]["Level"] = json!({ "enum": ["low", "high", "max"] }),
        Some(Direction::Forward),
        Some(Change::ValueAdded),
    );
    let mut three = base();
    three["$defs"]["Level"] = json!({ "enum": ["low", "high", "max"] });
    let report = compare(&three, &base());
    assert_eq!(note(&report).backward.reasons[0].change, Change::ValueRemoved);
    assert!(note(&report).forward.holds());
    let with_union = |v: &mut Value, members: Value| props(v)["note"] = json!({ "anyOf": members });
    let mut old = base();
    with_union(&mut old, json!([{ "type": "string" }, { "type": "integer" }]));
    let mut new = base();
    with_union(&mut new, json!([{ "type": "string" }, { "type": "integer" }, { "type": "boolean" }]));
    let report = compare(&old, &new);
    assert!(note(&report).backward.holds());
    assert_eq!(note(&report).forward.reasons[0].change, Change::VariantAdded);
    let report = compare(&new, &old);
    assert_eq!(note(&report).backward.reasons[0].change, Change::VariantRemoved);
}

/// An edit of a schema document in place.
type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn bounds_tightened_break_backward_and_loosened_break_forward() {
    let edits: Vec<(&str, Edit, Edit)> = vec![
        (
            "minLength",
            Box::new(|v| v["$defs"]["Id"]["minLength"] = json!(2)),
            Box::new(|v| v["$defs"]["Id"]["minLength"] = json!(0)),
        ),
        (
            "maxLength",
            Box::new(|v| v["$defs"]["Id"]["maxLength"] = json!(5)),
            Box::new(|v| v["$defs"]["Id"]["maxLength"] = json!(20)),
        ),
        (
            "minimum",
            Box::new(|v| props(v)["count"]["minimum"] = json!(1)),
            Box::new(|v| props(v)["count"]["minimum"] = json!(-1)),
        ),
        (
            "maximum",
            Box::new(|v| props(v)["count"]["maximum"] = json!(50)),
            Box::new(|v| {
                props(v)["count"].as_object_mut().unwrap().remove("maximum");
            }),
        ),
        ("minItems", Box::new(|v| props(v)["tags"]["minItems"] = json!(1)), Box::new(|_| {})),
        (
            "maxItems",
            Box::new(|v| props(v)["tags"]["maxItems"] = json!(2)),
            Box::new(|v| props(v)["tags"]["maxItems"] = json!(4)),
        ),
        (
            "exclusiveMinimum",
            Box::new(|v| {
                let c = props(v)["count"].as_object_mut().unwrap();
                c.remove("minimum");
                c.insert("exclusiveMinimum".into(), json!(0));
            }),
            Box::new(|_| {}),
        ),
    ];
    let mut details = Vec::new();
    for (name, tighten, loosen) in edits {
        let report = diff(|v| tighten(v));
        assert!(!note(&report).backward.holds() && note(&report).forward.holds(), "{name} tightened");
        assert_eq!(note(&report).backward.reasons[0].change, Change::BoundTightened, "{name}");
        details.push(note(&report).backward.reasons[0].detail.clone());
        let mut new = base();
        loosen(&mut new);
        if new != base() {
            let report = compare(&base(), &new);
            assert!(note(&report).backward.holds() && !note(&report).forward.holds(), "{name} loosened");
            assert_eq!(note(&report).forward.reasons[0].change, Change::BoundLoosened, "{name}");
            details.push(note(&report).forward.reasons[0].detail.clone());
        }
    }
    // Each reason gives the bound in the old schema, then in the new one.
    assert_eq!(
        details,
        [
            "minLength: 1 -> 2",
            "minLength: 1 -> 0",
            "maxLength: 10 -> 5",
            "maxLength: 10 -> 20",
            "lower bound: >= 0 -> >= 1",
            "lower bound: >= 0 -> >= -1",
            "upper bound: <= 100 -> <= 50",
            "upper bound: <= 100 -> none",
            "minItems: none -> 1",
            "maxItems: 3 -> 2",
            "maxItems: 3 -> 4",
            "lower bound: >= 0 -> > 0",
        ]
    );
    // A changed pattern breaks where a witness shows it: tightened, old values fail; loosened,
    // every old value still matches (the rule alone could not tell), new ones may not.
    let report = diff(|v| props(v)["tags"]["items"]["pattern"] = json!("^[a-c]+$"));
    assert_eq!(note(&report).backward.reasons[0].change, Change::PatternChanged);
    assert!(note(&report).backward.witness.is_some());
    let report = diff(|v| props(v)["tags"]["items"]["pattern"] = json!("^[a-z0-9]+$"));
    assert!(note(&report).backward.holds(), "{:?}", note(&report).backward);
    assert_eq!(note(&report).forward.reasons[0].change, Change::PatternChanged);
}

#[test]
fn integer_to_number_widens_and_back_narrows() {
    assert_breaks(
        |v| props(v)["score"] = json!({ "type": "number" }),
        Some(Direction::Forward),
        Some(Change::TypeWidened),
    );
    let mut number = base();
    props(&mut number)["score"] = json!({ "type": "number" });
    let report = compare(&number, &base());
    assert_eq!(note(&report).backward.reasons[0].change, Change::TypeNarrowed);
    assert!(note(&report).forward.holds());
    let report = diff(|v| props(v)["score"] = json!({ "type": "string" }));
    for direction in [Direction::Backward, Direction::Forward] {
        assert_eq!(note(&report).verdict(direction).reasons[0].change, Change::TypeChanged);
    }
}

#[test]
fn nullable_added_and_removed() {
    assert_breaks(
        |v| props(v)["count"] = json!({ "type": ["integer", "null"], "minimum": 0, "maximum": 100 }),
        Some(Direction::Forward),
        Some(Change::NullableAdded),
    );
    assert_breaks(
        |v| props(v)["parent"] = json!({ "$ref": "#/$defs/Id" }),
        Some(Direction::Backward),
        Some(Change::NullableRemoved),
    );
}

#[test]
fn record_value_type_changed() {
    let report = diff(|v| props(v)["meta"]["additionalProperties"] = json!({ "type": "integer" }));
    assert_eq!(note(&report).backward.reasons[0].change, Change::TypeChanged);
    assert_eq!(note(&report).forward.reasons[0].change, Change::TypeChanged);
    assert!(note(&report).backward.reasons[0].old_pointer.as_deref().unwrap().contains("meta"));
}

#[test]
fn renames_and_descriptions_change_nothing_on_the_wire() {
    // A definition renamed (and every reference to it).
    let text = base().to_string().replace("#/$defs/Id", "#/$defs/Identifier").replace("\"Id\":", "\"Identifier\":");
    let renamed: Value = serde_json::from_str(&text).unwrap();
    let report = compare(&base(), &renamed);
    assert!(!report.breaks_wire(), "{}", report.render(pi_protocol_gen::compat::Format::Text));
    // In Rust it is a rename, and the fields that named the type changed type.
    assert_eq!(report.rust[0].kind, RustChangeKind::TypeRenamed);
    assert_eq!((report.rust[0].item.as_str(), report.rust[0].detail.as_str()), ("Identifier", "was Id"));
    assert!(report.rust[1..].iter().all(|c| c.kind == RustChangeKind::FieldRetyped), "{:?}", report.rust);
    assert!(report.rust.iter().any(|c| c.item == "Note.id" && c.detail == "Id -> Identifier"), "{:?}", report.rust);
    assert!(report.breaks_rust());
    // Descriptions only.
    let report = diff(|v| {
        props(v)["note"]["description"] = json!("Another text.");
        v["$defs"]["Note"]["description"] = json!("A note message.");
    });
    assert!(!report.breaks_wire() && report.rust.is_empty());
}

#[test]
fn rust_changes_are_classified() {
    let report = diff(|v| {
        props(v).insert("extra".into(), json!({ "type": "string" }));
        props(v).remove("note");
        props(v)["score"] = json!({ "type": "number" });
        required(v).push(json!("tags"));
        v["$defs"]["Level"] = json!({ "enum": ["low", "high", "max"] });
    });
    let kinds: Vec<(RustChangeKind, &str, bool)> =
        report.rust.iter().map(|c| (c.kind, c.item.as_str(), c.is_breaking())).collect();
    assert!(kinds.contains(&(RustChangeKind::OptionalFieldAdded, "Note.extra", false)), "{kinds:?}");
    assert!(kinds.contains(&(RustChangeKind::FieldRemoved, "Note.note", true)), "{kinds:?}");
    assert!(kinds.contains(&(RustChangeKind::FieldRetyped, "Note.score", true)), "{kinds:?}");
    assert!(kinds.contains(&(RustChangeKind::FieldPresenceChanged, "Note.tags", true)), "{kinds:?}");
    assert!(kinds.contains(&(RustChangeKind::VariantAdded, "Level::Max", false)), "{kinds:?}");
}

#[test]
fn the_report_renders_as_text_and_json() {
    let report = diff(|v| {
        props(v).insert("extra".into(), json!({ "type": "string" }));
    });
    let text = report.render(pi_protocol_gen::compat::Format::Text);
    assert!(text.contains("forward breaks: optional property added: `extra` is refused as unknown"), "{text}");
    assert!(text.contains("new: #/$defs/Note/properties/extra"), "{text}");
    let json: Value = serde_json::from_str(&report.render(pi_protocol_gen::compat::Format::Json)).unwrap();
    assert_eq!(json["backward"], true);
    assert_eq!(json["forward"], false);
    assert_eq!(json["sides"][0]["messages"][0]["forward"]["reasons"][0]["change"], "optional property added");
}
