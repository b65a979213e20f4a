//! The schema language: what the checked model says of each construct, and every rejection with
//! its JSON pointer (the constructs are listed in `pi-protocol-gen/SCHEMA.md`).

use pi_protocol_gen::model::{Dispatch, LiteralValue, Member, Side, TypeExpr, TypeKind, Union, VariantKind};
use pi_protocol_gen::{generate, GenError, Model};
use serde_json::{json, Value};

fn schema(defs: Value) -> String {
    json!({ "$defs": defs }).to_string()
}

fn object(properties: Value) -> Value {
    let required: Vec<String> = properties.as_object().unwrap().keys().cloned().collect();
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

fn model(defs: Value) -> Model {
    Model::from_json(&schema(defs), "t.json").unwrap_or_else(|e| panic!("{e}"))
}

fn reject(defs: Value) -> String {
    reject_document(&schema(defs))
}

fn reject_document(document: &str) -> String {
    match generate(document, "t.json") {
        Ok(code) => panic!("expected a rejection, got:\n{code}"),
        Err(e) => e.to_string(),
    }
}

fn union<'m>(model: &'m Model, name: &str) -> &'m Union {
    match &model.by_rust_name(name).unwrap_or_else(|| panic!("no type {name}")).kind {
        TypeKind::Union(u) => u,
        other => panic!("{name} is not a union: {other:?}"),
    }
}

fn file(name: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas").join(name)).unwrap()
}

// ---- the model of each construct ----

#[test]
fn v8_unions_are_classified_and_named() {
    let model = Model::from_json(&file("../../../schema/pi-protocol.v8.json"), "v8").unwrap();
    assert_eq!(union(&model, "RpcTarget").dispatch, Dispatch::KeySet);
    assert_eq!(union(&model, "ClientMessage").dispatch, Dispatch::Tag("type".into()));
    assert_eq!(union(&model, "Response").dispatch, Dispatch::Tag("ok".into()));
    let server = union(&model, "ServerMessage");
    let names: Vec<&str> = server.variants.iter().map(|v| v.rust_name.as_str()).collect();
    assert_eq!(names, ["Hello", "HelloError", "Response", "ServiceUpdate", "Attachment"]);
    assert_eq!(server.variants[2].tags, [("type".to_string(), LiteralValue::String("response".into()))]);
    assert_eq!(model.message_type_name(pi_protocol_gen::model::Side::Client), Some("ClientMessage"));
    assert_eq!(model.message_type(Side::Server).unwrap().rust_name, "ServerMessage");
}

#[test]
fn constructs_of_the_language_become_the_documented_shapes() {
    let model = Model::from_json(&file("constructs.json"), "constructs").unwrap();
    assert_eq!(model.protocol_version(), Some(3));
    assert_eq!(union(&model, "Item").dispatch, Dispatch::Tag("role".into()));
    assert_eq!(union(&model, "AssistantItem").dispatch, Dispatch::Tag("status".into()));
    assert_eq!(union(&model, "Finished").dispatch, Dispatch::Tags(vec!["role".into(), "failed".into()]));
    assert_eq!(union(&model, "Route").dispatch, Dispatch::KeySet);
    assert_eq!(union(&model, "Scalar").dispatch, Dispatch::ByType);
    assert!(union(&model, "Level").is_enumeration());
    assert!(union(&model, "Color").is_enumeration() && union(&model, "Shape").is_enumeration());
    // The TypeBox cyclic value: named by its key, recursive through an array and a record.
    let json_value = union(&model, "JsonValue");
    assert_eq!(json_value.variants.len(), 6);
    assert!(matches!(json_value.variants[0].kind, VariantKind::Literal(LiteralValue::Null)));
    // Its record variant's key pattern (`^.*$`) has no `additionalProperties: false`, so it
    // constrains no key: a plain record of JSON values in place.
    let VariantKind::Value(record) = &json_value.variants[5].kind else { panic!("a value variant") };
    let TypeExpr::Record(record) = &record.ty else { panic!("a record in place: {record:?}") };
    assert_eq!(record.keys.pattern, None);
    assert_eq!(record.values.ty, TypeExpr::Named { name: "JsonValue".into(), boxed: false });
    // A struct that contains itself directly is boxed; through an array it is not.
    let TypeKind::Struct(tree) = &model.by_rust_name("Tree").unwrap().kind else { panic!("a struct") };
    let field = |key: &str| tree.fields().find(|f| f.key == key).unwrap().shape.ty.clone();
    assert!(
        matches!(field("parent"), TypeExpr::Nullable(inner) if matches!(inner.ty, TypeExpr::Named { boxed: true, .. }))
    );
    assert!(
        matches!(field("children"), TypeExpr::Array(inner) if matches!(inner.ty, TypeExpr::Named { boxed: false, .. }))
    );
    // Literals of every JSON scalar type are members, not fields.
    let TypeKind::Struct(post) = &model.by_rust_name("Post").unwrap().kind else { panic!("a struct") };
    let literals: Vec<(&str, String)> = post.literals().map(|l| (l.key.as_str(), l.value.to_string())).collect();
    assert_eq!(literals, [("type", "\"post\"".to_string()), ("weight", "1.5".into()), ("draft", "false".into())]);
    let x_ray = post.fields().find(|f| f.key == "x-ray").unwrap();
    assert_eq!(x_ray.rust_name, "x_ray");
    // Inline objects are named after their place.
    assert!(model.by_rust_name("Size").is_some(), "ImagePart.size");
    assert!(model.by_rust_name("Attachment").is_some(), "Post.attachment");
}

#[test]
fn the_inlined_form_folds_repeated_schemas_and_names_them_by_place() {
    let model = Model::from_json(&file("chat-inlined.json"), "chat").unwrap();
    assert_eq!(model.protocol_version(), Some(2));
    assert_eq!(model.limits().get("maxFrameLength"), Some(&1_048_576));
    // The session schema appears a dozen times inline; it is one type.
    let sessions = model
        .types()
        .iter()
        .filter(|t| matches!(&t.kind, TypeKind::Struct(s) if s.keys().any(|k| k == "transcript")))
        .count();
    assert_eq!(sessions, 1);
    let jsons = model.types().iter().filter(|t| t.rust_name.starts_with("JsonValue")).count();
    assert_eq!(jsons, 1, "the cyclic JSON value is one type");
    // `item_finished.item` is told apart by role and status together.
    let finished = model
        .types()
        .iter()
        .find(|t| t.pointer.ends_with("item_finished/properties/item") || t.pointer.contains("/properties/item/anyOf"))
        .map(|t| t.rust_name.clone());
    let multi = model.types().iter().filter(|t| matches!(&t.kind, TypeKind::Union(u) if u.dispatch == Dispatch::Tags(vec!["role".into(), "status".into()]))).count();
    assert_eq!(multi, 1, "{finished:?}");
}

#[test]
fn optional_nullable_and_records_keep_their_meaning() {
    let m = model(json!({
        "A": {
            "type": "object",
            "properties": {
                "n": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
                "o": { "type": ["integer", "null"] },
                "r": { "type": "object", "patternProperties": { "^[a-z]+$": { "type": "boolean" } } },
                "closed": {
                    "type": "object",
                    "patternProperties": { "^[a-z]+$": { "type": "boolean" } },
                    "additionalProperties": false
                },
                "free": { "type": "object", "additionalProperties": {} },
                "any": { "type": "object" }
            },
            "required": ["n", "r"],
            "additionalProperties": false
        }
    }));
    let TypeKind::Struct(a) = &m.by_rust_name("A").unwrap().kind else { panic!() };
    let f = |k: &str| a.fields().find(|f| f.key == k).unwrap();
    assert!(!f("n").optional && matches!(f("n").shape.ty, TypeExpr::Nullable(_)));
    assert!(f("o").optional && matches!(f("o").shape.ty, TypeExpr::Nullable(_)));
    // A key pattern constrains the keys only with `additionalProperties: false`; either way it
    // gives the values' schema.
    let TypeExpr::Record(r) = &f("r").shape.ty else { panic!("a record") };
    assert_eq!((r.keys.pattern.as_deref(), &r.values.ty), (None, &TypeExpr::Boolean));
    let TypeExpr::Record(closed) = &f("closed").shape.ty else { panic!("a record") };
    assert_eq!((closed.keys.pattern.as_deref(), &closed.values.ty), (Some("^[a-z]+$"), &TypeExpr::Boolean));
    assert!(matches!(&f("free").shape.ty, TypeExpr::Record(r) if r.values.ty == TypeExpr::Payload));
    assert!(matches!(&f("any").shape.ty, TypeExpr::Record(r) if r.values.ty == TypeExpr::Payload));
}

#[test]
fn references_by_pointer_and_aliases_resolve() {
    let m = model(json!({
        "A": object(json!({ "b": { "$ref": "#/$defs/B" }, "c": { "$ref": "#/$defs/A/properties/b" } })),
        "B": { "$ref": "#/$defs/C" },
        "C": object(json!({ "x": { "type": "string" } }))
    }));
    let TypeKind::Struct(a) = &m.by_rust_name("A").unwrap().kind else { panic!() };
    for field in a.fields() {
        assert_eq!(field.shape.ty, TypeExpr::Named { name: "C".into(), boxed: false }, "{}", field.key);
    }
    assert!(m.by_rust_name("B").is_none(), "an alias defines no type");
}

#[test]
fn a_new_optional_property_is_an_option_field_and_a_setter() {
    let mut v8: Value = serde_json::from_str(&file("../../../schema/pi-protocol.v8.json")).unwrap();
    v8["$defs"]["ClientHello"]["properties"]["extra"] = json!({ "type": "string" });
    let code = generate(&v8.to_string(), "v8").unwrap();
    assert!(code.contains("pub extra: Option<String>,"), "{code}");
    assert!(code.contains("pub fn with_extra(mut self, extra: impl Into<String>) -> Self"), "{code}");
    assert!(code.contains("pub fn new(version: impl Into<Integer>) -> Self"), "the constructor is unchanged");
    let m = Model::from_value(&v8).unwrap();
    let TypeKind::Struct(hello) = &m.by_rust_name("ClientHello").unwrap().kind else { panic!() };
    let extra = hello.fields().find(|f| f.key == "extra").unwrap();
    assert!(extra.optional && extra.shape.ty == TypeExpr::String);
    assert!(hello.members.iter().any(|m| matches!(m, Member::Literal(l) if l.key == "type")));
}

// ---- rejections, each with its JSON pointer ----

#[test]
fn keywords_outside_the_language_say_what_to_do() {
    let cases = [
        (json!({ "A": { "type": "string", "format": "uuid" } }), "#/$defs/A/format: keyword outside the schema language: formats are not checked by the protocol; use a pattern"),
        (json!({ "A": { "allOf": [{ "type": "string" }] } }), "#/$defs/A/allOf: keyword outside the schema language: merge the schemas into one object (intersections are not supported)"),
        (json!({ "A": { "type": "number", "multipleOf": 2 } }), "#/$defs/A/multipleOf: keyword outside the schema language: multipleOf is not supported; use an integer type or bounds"),
        (json!({ "A": { "type": "array", "uniqueItems": true } }), "#/$defs/A/uniqueItems: keyword outside the schema language: uniqueItems is not supported; use a record keyed by the unique value"),
        (json!({ "A": { "type": "string", "nullable": true } }), "#/$defs/A/nullable: keyword outside the schema language: write anyOf [<schema>, {\"type\": \"null\"}] or type [<type>, \"null\"]"),
        (json!({ "A": { "type": "string", "frobnicate": 1 } }), "#/$defs/A/frobnicate: unsupported keyword"),
        (json!({ "A": { "type": "integer", "minLength": 1 } }), "#/$defs/A/minLength: keyword not allowed in a schema of type integer"),
    ];
    for (defs, expected) in cases {
        assert_eq!(reject(defs), expected);
    }
}

#[test]
fn objects_must_refuse_unknown_keys() {
    assert_eq!(
        reject(json!({ "A": { "type": "object", "properties": { "a": { "type": "string" } }, "required": ["a"] } })),
        "#/$defs/A/additionalProperties: missing: every object with properties must set additionalProperties to false (the protocol rejects unknown keys)"
    );
    assert_eq!(
        reject(json!({ "A": { "type": "object", "properties": { "a": {} }, "additionalProperties": { "type": "string" } } })),
        "#/$defs/A/additionalProperties: must be false: an object has either properties or free keys (a record), not both"
    );
    assert_eq!(
        reject(json!({ "A": { "type": "object", "patternProperties": { "^a": {}, "^b": {} } } })),
        "#/$defs/A/patternProperties: a record takes exactly one key pattern"
    );
    assert_eq!(
        reject(
            json!({ "A": object(json!({ "t": { "type": "string", "const": "a" } })).as_object().map(|o| { let mut o = o.clone(); o.insert("required".into(), json!([])); Value::Object(o) }).unwrap() })
        ),
        "#/$defs/A/properties/t: a const property must be listed in required"
    );
    assert_eq!(
        reject(
            json!({ "A": { "type": "object", "properties": { "a": {} }, "required": ["a", "zz"], "additionalProperties": false } })
        ),
        "#/$defs/A/required/1: names no property of this object: \"zz\""
    );
}

#[test]
fn values_must_be_well_formed() {
    assert!(reject(json!({ "A": { "type": "string", "pattern": "x{" } })).starts_with("#/$defs/A/pattern: "));
    assert!(
        reject(json!({ "A": { "type": "string", "pattern": "^a\\-b$" } })).starts_with("#/$defs/A/pattern: "),
        "JavaScript refuses \\- with the u flag"
    );
    assert_eq!(
        reject(json!({ "A": { "type": "string", "minLength": -1 } })),
        "#/$defs/A/minLength: must be a non-negative integer below 2^32"
    );
    assert_eq!(
        reject(json!({ "A": { "type": "number", "maximum": "1" } })),
        "#/$defs/A/maximum: must be a finite number (within +-(2^53 - 1) when integral)"
    );
    assert_eq!(
        reject(json!({ "A": { "type": "integer", "const": 1.5 } })),
        "#/$defs/A/const: the value does not have type \"integer\""
    );
    assert_eq!(
        reject(json!({ "A": { "minLength": 1 } })),
        "#/$defs/A: a schema with constraints needs a type (or $ref, anyOf, oneOf, enum, const; {} for any value)"
    );
    assert_eq!(reject(json!({ "A": { "type": "strin" } })), "#/$defs/A/type: unknown type \"strin\"");
    assert_eq!(
        reject(json!({ "A": object(json!({ "a": false })) })),
        "#/$defs/A/properties/a: the schema `false` accepts nothing; remove the property or the member"
    );
    assert_eq!(reject(json!({ "A": { "enum": ["a", "a"] } })), "#/$defs/A/enum/1: the value \"a\" is listed twice");
}

#[test]
fn references_must_lead_somewhere() {
    assert_eq!(
        reject(json!({ "A": object(json!({ "b": { "$ref": "#/$defs/Nope" } })) })),
        "#/$defs/A/properties/b/$ref: reference to missing schema \"#/$defs/Nope\""
    );
    assert_eq!(
        reject(json!({ "A": object(json!({ "b": { "$ref": "Nope" } })) })),
        "#/$defs/A/properties/b/$ref: reference to unknown schema \"Nope\": use #/$defs/<name> or the $id of a schema"
    );
    assert_eq!(
        reject(
            json!({ "A": { "$ref": "#/$defs/B" }, "B": { "$ref": "#/$defs/A" }, "C": object(json!({ "a": { "$ref": "#/$defs/A" } })) })
        ),
        "#/$defs/B/$ref: the reference leads back to itself"
    );
    assert_eq!(
        reject(json!({ "A": { "$id": "X", "type": "string" }, "B": { "$id": "X", "type": "integer" } })),
        "#/$defs/B/$id: the $id \"X\" already names a different schema"
    );
}

#[test]
fn unions_a_decoder_cannot_tell_apart_are_refused_with_the_reason() {
    let overlapping_objects = json!({
        "A": object(json!({ "a": { "type": "string" } })),
        "B": { "type": "object", "properties": { "a": { "type": "string" }, "b": { "type": "string" } }, "required": ["a"], "additionalProperties": false },
        "U": { "anyOf": [ { "$ref": "#/$defs/A" }, { "$ref": "#/$defs/B" } ] }
    });
    assert_eq!(reject(overlapping_objects), "#/$defs/U: members 0 and 1 can match the same map: no const property tells them apart and their key sets overlap");
    assert_eq!(
        reject(json!({ "U": { "anyOf": [{ "type": "string" }, { "type": "string", "minLength": 2 }] } })),
        "#/$defs/U: members 0 and 1 can both hold a string: a decoder could not tell them apart"
    );
    assert_eq!(
        reject(json!({ "U": { "anyOf": [{ "type": "integer" }, { "type": "number" }] } })),
        "#/$defs/U: members 0 and 1 can both hold a number: a decoder could not tell them apart"
    );
    assert_eq!(
        reject(json!({ "U": { "anyOf": [{ "const": "a" }, { "type": "string" }] } })),
        "#/$defs/U: members 0 and 1 can both hold a string: a decoder could not tell them apart"
    );
    assert_eq!(
        reject(json!({ "U": { "anyOf": [{}, { "type": "string" }] } })),
        "#/$defs/U: members 0 and 1 can both hold a string: a decoder could not tell them apart"
    );
    assert_eq!(
        reject(json!({ "U": { "anyOf": [ { "$ref": "#/$defs/U" }, { "type": "string" } ] } })),
        "#/$defs/U: the union contains itself"
    );
    let record_among_objects = json!({ "A": object(json!({ "t": { "const": "a" } })), "U": { "anyOf": [ { "$ref": "#/$defs/A" }, { "type": "object", "additionalProperties": {} } ] } });
    assert_eq!(
        reject(record_among_objects),
        "#/$defs/U/anyOf/1: a record cannot share a union with other objects: no key tells them apart"
    );
}

#[test]
fn names_must_not_clash() {
    assert_eq!(
        reject(json!({ "A": { "type": "string", "x-rust-name": "B" }, "B": { "type": "string" } })),
        "#/$defs/B: the Rust name B is already used by another type; set x-rust-name"
    );
    assert_eq!(
        reject(json!({ "Payload": { "type": "string" } })),
        "#/$defs/Payload: the Rust name Payload is used by the generated module itself; set x-rust-name"
    );
    assert_eq!(
        reject(json!({ "A": object(json!({ "serverId": { "type": "string" }, "server_id": { "type": "string" } })) })),
        "#/$defs/A/properties/server_id: the Rust field name server_id is already used by property \"serverId\"; set x-rust-name"
    );
    assert_eq!(
        reject(json!({ "A": { "type": "string", "x-rust-name": "not a name" } })),
        "#/$defs/A/x-rust-name: \"not a name\" is not a Rust identifier"
    );
    assert_eq!(
        reject(
            json!({ "A": object(json!({ "t": { "const": "a" } })), "U": { "anyOf": [ { "$ref": "#/$defs/A", "x-rust-variant": "X" }, { "const": 1, "x-rust-variant": "X" } ] } })
        ),
        "#/$defs/U/anyOf/1: the variant name X is used twice; set x-rust-variant"
    );
}

#[test]
fn the_root_and_extension_keywords_are_checked() {
    assert_eq!(
        reject_document(r#"{ "$defs": {}, "properties": {} }"#),
        "#/properties: keyword not allowed in the schema root"
    );
    assert_eq!(
        reject_document(r#"{ "x-limits": { "maxWidth": 1 }, "$defs": {} }"#),
        "#/x-limits/maxWidth: unknown limit"
    );
    assert_eq!(
        reject_document(r#"{ "x-protocol-version": -1, "$defs": {} }"#),
        "#/x-protocol-version: must be an integer in 0..=4294967295"
    );
    assert_eq!(
        reject_document(r##"{ "x-client-message": "#/$defs/Nope", "$defs": {} }"##),
        "#/x-client-message: no definition #/$defs/Nope"
    );
    assert_eq!(
        reject(json!({ "A": { "type": "string", "x-rust-derive": "Copy" } })),
        "#/$defs/A/x-rust-derive: unsupported keyword"
    );
    assert_eq!(
        reject_document(r#"{ "clientMessage": {}, "extra": 1 }"#),
        "#/extra: unknown key in the reference's form (source, protocolVersion, limits, clientMessage, serverMessage)"
    );
    assert_eq!(
        reject_document(r#"{ "$defs": { "ClientMessage": { "type": "string" } } }"#),
        "#/$defs/ClientMessage: the client message type must be an object or a union of objects"
    );
}

#[test]
fn errors_expose_their_path() {
    let error = generate(&schema(json!({ "A": { "type": "string", "format": "x" } })), "t.json").unwrap_err();
    assert_eq!(error.path(), Some("#/$defs/A/format"));
    let error = generate("{ not json", "t.json").unwrap_err();
    assert!(matches!(error, GenError::Json { .. }));
    assert_eq!(error.path(), None);
    assert!(error.to_string().starts_with("t.json: not valid JSON"), "{error}");
}
