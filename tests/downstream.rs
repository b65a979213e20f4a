//! A downstream crate's own schema, generated the way its `build.rs` would with
//! `pi_protocol_gen::Builder` (checked in as `tests/downstream/chat.rs`, kept current by
//! `cargo xtask gen`), compiles and works with nothing but the `pi-protocol` facade: the code
//! names `pi_protocol::Codec` and `pi_protocol::runtime`, never the runtime or derive crates.

#[allow(dead_code)]
mod chat {
    include!("downstream/chat.rs");
}

use chat::{ChatMessage, Leave, Mood, RoomId, Say};
use pi_protocol::runtime::{decode_message, encode_message, MessageDecoder};
use pi_protocol::{CborLimits, CodecOptions, ErrorKind, Integer, Null, Number, Record, Rule};
use serde_json::json;

fn say() -> Say {
    let reactions: Record<Integer> = [("wave", Integer::from(2u8)), ("tada", Integer::from(1u8))].into_iter().collect();
    Say::new(RoomId::new("lobby").unwrap(), "hello", None)
        .with_mood(Mood::Happy)
        .with_weight(Number::new(0.5).unwrap())
        .with_reactions(reactions)
}

#[test]
fn generated_types_round_trip_through_frames() {
    let messages = vec![
        ChatMessage::from(say()),
        ChatMessage::from(Leave::new(RoomId::new("lobby").unwrap()).with_farewell(Null)),
    ];
    let mut stream = Vec::new();
    for message in &messages {
        stream.extend(encode_message(message, &CodecOptions::default()).unwrap());
    }
    let mut decoder = MessageDecoder::<ChatMessage>::with_options(&CodecOptions::default());
    let (decoded, error) = decoder.decode_all(stream.chunks(3));
    assert!(error.is_none(), "{error:?}");
    assert_eq!(decoded, messages);
}

#[test]
fn the_json_view_is_the_wire_shape() {
    let expected = json!({
        "type": "say", "room": "lobby", "text": "hello", "mood": "happy", "weight": 0.5,
        "reactions": {"wave": 2, "tada": 1}, "replyTo": null
    });
    assert_eq!(ChatMessage::from(say()).to_json(), expected);
    assert_eq!(serde_json::from_value::<ChatMessage>(expected).unwrap(), ChatMessage::from(say()));
    let leave: ChatMessage = serde_json::from_str(r#"{"type":"leave","room":"r1","farewell":null}"#).unwrap();
    assert!(matches!(&leave, ChatMessage::Leave(l) if l.farewell == Some(Null)));
}

#[test]
fn schema_constraints_apply_on_decode_and_encode() {
    let error =
        ChatMessage::from_json(&json!({"type": "say", "room": "Lobby", "text": "x", "replyTo": null})).unwrap_err();
    assert_eq!((error.kind(), error.rule(), error.path_string().as_str()), (ErrorKind::Schema, Rule::Pattern, "room"));
    let error = ChatMessage::from_json(&json!({"type": "say", "room": "r", "text": "x", "replyTo": null, "weight": 0}))
        .unwrap_err();
    assert_eq!((error.rule(), error.path_string()), (Rule::ExclusiveMinimum { min: Number::from(0) }, "weight".into()));
    let error =
        ChatMessage::from_json(&json!({"type": "say", "room": "r", "text": "x", "replyTo": null, "mood": "meh"}))
            .unwrap_err();
    assert_eq!((error.rule(), error.path_string()), (Rule::NotInEnum, "mood".into()));
    // A value built in memory is validated before it is encoded.
    let mut bad = say();
    bad.reactions = Some([("wave", Integer::from(0u8))].into_iter().collect());
    let error = encode_message(&ChatMessage::from(bad), &CodecOptions::default()).unwrap_err();
    assert_eq!((error.rule(), error.path_string()), (Rule::Minimum { min: Number::from(1) }, "reactions{0}".into()));
    let error = decode_message::<RoomId>(&[0x61, b'A'], CborLimits::default()).unwrap_err();
    assert_eq!(error.rule(), Rule::Pattern);
}

#[test]
fn the_generated_code_names_only_the_facade() {
    let code = include_str!("downstream/chat.rs");
    assert!(code.contains("use pi_protocol::Codec;"));
    assert!(!code.contains("pi_protocol_runtime") && !code.contains("pi_protocol_derive"));
    // Every derived type tells the derive where the runtime is.
    assert_eq!(code.matches("#[derive(").count(), code.matches("crate = \"pi_protocol::runtime\"").count());
}
