//! The checked-in `src/generated/v8.rs` must be exactly what the schema generates (the same
//! check as `cargo xtask gen --check`, run as a test so `cargo test` catches a stale file).

use std::path::Path;

#[test]
fn generated_v8_is_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let schema = std::fs::read_to_string(root.join("schema/pi-protocol.v8.json")).expect("read the schema");
    let expected = pi_protocol_gen::generate(&schema, "schema/pi-protocol.v8.json").expect("the schema generates");
    let expected = pi_protocol_gen::rustfmt(&expected, Some(&root.join("rustfmt.toml"))).expect("rustfmt formats it");
    let actual = std::fs::read_to_string(root.join("src/generated/v8.rs")).expect("read src/generated/v8.rs");
    if actual != expected {
        let line = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .map_or_else(|| actual.lines().count().min(expected.lines().count()) + 1, |i| i + 1);
        panic!(
            "src/generated/v8.rs is stale (first difference at line {line}): run `cargo xtask gen`\n\
             checked in: {:?}\n generated: {:?}",
            actual.lines().nth(line - 1).unwrap_or("<end of file>"),
            expected.lines().nth(line - 1).unwrap_or("<end of file>"),
        );
    }
}

#[test]
fn model_carries_protocol_facts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let schema = std::fs::read_to_string(root.join("schema/pi-protocol.v8.json")).expect("read the schema");
    let model = pi_protocol_gen::Model::from_json(&schema, "schema/pi-protocol.v8.json").expect("the schema is valid");
    assert_eq!(model.protocol_version(), Some(8));
    assert_eq!(model.limits().get("maxFrameLength"), Some(&16_777_216));
    assert_eq!(model.limits().get("maxByteLength"), Some(&16_777_216));
    assert_eq!(model.limits().get("maxContainerLength"), Some(&1_000_000));
    assert_eq!(model.limits().get("maxDepth"), Some(&64));
    assert_eq!(model.limits().get("maxConfigurableDepth"), Some(&512));
    assert_eq!(model.limits().get("maxConfigurableLength"), Some(&4_294_967_295));
    let names: Vec<&str> = model.types().iter().filter_map(|t| t.schema_name.as_deref()).collect();
    assert_eq!(
        names,
        [
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
        ]
    );
    assert_eq!(model.by_schema_name("Id").map(|t| t.rust_name.as_str()), Some("RequestId"));
    assert_eq!(model.by_schema_name("ProtocolError").map(|t| t.rust_name.as_str()), Some("ErrorBody"));
    assert_eq!(model.by_schema_name("RequestEnvelope").map(|t| t.rust_name.as_str()), Some("Request"));
    assert_eq!(model.by_schema_name("CancelEnvelope").map(|t| t.rust_name.as_str()), Some("Cancel"));
}
