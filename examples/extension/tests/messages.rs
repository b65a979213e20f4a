//! This crate's messages get what the facade's built-in ones have: the JSON view and serde in
//! the wire shape, the strict codec (every schema rule checked on decode and before encode), the
//! facade's decoders (push and pull, copying and shared) and blocking I/O, named with this
//! crate's types.

use pi_metrics_extension::metrics::ClientHello;
use pi_metrics_extension::{
    ClientMessage, ClientMessageDecoder, MetricName, Origin, Report, ReportAck, ServerMessage, Unit,
};
use pi_protocol::io::{write_message, MessageReader};
use pi_protocol::{
    decode_message, encode_message, encode_message_json, CborLimits, CodecOptions, ErrorKind, Integer, Number, Record,
    Rule, SharedMessageDecoder,
};
use serde_json::{json, Value};

fn report() -> Report {
    let number = |value: f64| Number::new(value).unwrap();
    let labels: Record<String> = [("region", "eu-west".to_owned())].into_iter().collect();
    Report::new(
        MetricName::new("queue.depth").unwrap(),
        number(7.0),
        vec![number(6.0), number(8.0)],
        Unit::Count,
        labels,
    )
    .with_origin(Origin::new("node-7").with_pid(Integer::from(4242u16)))
}

fn report_json() -> Value {
    json!({
        "type": "report", "name": "queue.depth", "value": 7, "samples": [6, 8], "unit": "count",
        "labels": {"region": "eu-west"}, "origin": {"host": "node-7", "pid": 4242}
    })
}

#[test]
fn the_json_view_and_serde_are_the_wire_shape() {
    let message = ClientMessage::from(report());
    assert_eq!(message.to_json(), report_json());
    assert_eq!(ClientMessage::from_json(&report_json()).unwrap(), message);
    assert_eq!(serde_json::to_value(&message).unwrap(), report_json());
    assert_eq!(serde_json::from_value::<ClientMessage>(report_json()).unwrap(), message);
    // The optional nested object is absent from the JSON when it is `None`.
    let mut plain = report();
    plain.origin = None;
    assert_eq!(serde_json::to_value(&plain).unwrap().get("origin"), None);
    let ack = ServerMessage::from(ReportAck::new(MetricName::new("queue.depth").unwrap(), Integer::from(2u8)));
    assert_eq!(ack.to_json(), json!({"type": "report_ack", "name": "queue.depth", "accepted": 2}));
    // Decoding JSON validates like decoding CBOR.
    let error = serde_json::from_value::<ClientMessage>(json!({"type": "report"})).unwrap_err();
    assert!(error.to_string().contains("name"), "{error}");
}

#[test]
fn every_rule_of_the_new_messages_is_checked() {
    let cases: [(&str, Value, Rule, &str); 7] = [
        ("unit", json!("minutes"), Rule::NotInEnum, "unit"),
        ("samples", json!([1, "two"]), Rule::WrongType { expected: "number" }, "samples[1]"),
        ("labels", json!({"region": 1}), Rule::WrongType { expected: "string" }, "labels{0}"),
        ("origin", json!({"host": "node-7", "port": 80}), Rule::UnknownField, "origin"),
        ("origin", json!({"host": ""}), Rule::MinLength { min: 1 }, "origin.host"),
        ("origin", json!({"host": "h", "pid": 0}), Rule::Minimum { min: Number::from(1) }, "origin.pid"),
        ("name", json!("Queue"), Rule::Pattern, "name"),
    ];
    for (key, value, rule, path) in cases {
        let mut bad = report_json();
        bad[key] = value;
        let error = ClientMessage::from_json(&bad).unwrap_err();
        assert_eq!(
            (error.kind(), error.rule(), error.path_string().as_str()),
            (ErrorKind::Schema, rule, path),
            "{bad}"
        );
        // The same verdict on the wire.
        let frame =
            pi_protocol::runtime::json::encode_json_frame(&bad, &CodecOptions::default(), |_, _| Ok(())).unwrap();
        let wire = decode_message::<ClientMessage>(&frame[4..], CborLimits::default()).unwrap_err();
        assert_eq!((wire.rule(), wire.path_string()), (rule, path.to_owned()), "{bad}");
    }
    let mut missing = report_json();
    missing.as_object_mut().unwrap().remove("unit");
    let error = ClientMessage::from_json(&missing).unwrap_err();
    assert_eq!((error.rule(), error.path_string()), (Rule::MissingField, "unit".into()));
    // A value built in memory is validated before it is encoded.
    let mut too_many = report();
    too_many.samples = vec![Number::from(1u8); 1025];
    let error = encode_message(&ClientMessage::from(too_many), &CodecOptions::default()).unwrap_err();
    assert_eq!((error.rule(), error.path_string()), (Rule::MaxItems { max: 1024 }, "samples".into()));
}

#[test]
fn a_version_8_peer_refuses_a_report_by_its_type() {
    let error = pi_protocol::ClientMessage::from_json(&report_json()).unwrap_err();
    assert_eq!((error.kind(), error.path_string()), (ErrorKind::Schema, "type".into()), "{error}");
    // And takes every version 8 message this crate builds.
    let hello = ClientMessage::from(ClientHello::new(Integer::from(8u8)));
    let frame = encode_message(&hello, &CodecOptions::default()).unwrap();
    assert_eq!(pi_protocol::ClientMessageDecoder::new().push(&frame)[0].as_ref().unwrap().to_json(), hello.to_json());
}

#[test]
fn decoders_push_pull_and_share() {
    let messages = [ClientMessage::from(report()), ClientMessage::from(ClientHello::new(Integer::from(8u8)))];
    let stream: Vec<u8> = messages.iter().flat_map(|m| encode_message(m, &CodecOptions::default()).unwrap()).collect();
    let mut pulled = Vec::new();
    let mut decoder = ClientMessageDecoder::new();
    for chunk in stream.chunks(5) {
        for message in decoder.messages(chunk) {
            pulled.push(message.unwrap());
        }
    }
    decoder.end().unwrap();
    assert_eq!(pulled, messages);
    let pushed: Vec<_> = ClientMessageDecoder::new().push(&stream).into_iter().map(Result::unwrap).collect();
    assert_eq!(pushed, messages);
    let shared = SharedMessageDecoder::<ClientMessage>::new().push(&stream.clone().into());
    assert_eq!(shared.into_iter().map(Result::unwrap).collect::<Vec<_>>(), messages);
    // Given as JSON, in the JSON's key order, validated as this crate's message.
    let frame = encode_message_json::<ClientMessage>(&report_json(), &CodecOptions::default()).unwrap();
    assert_eq!(decode_message::<ClientMessage>(&frame[4..], CborLimits::default()).unwrap(), messages[0]);
}

#[test]
fn blocking_io_writes_and_reads_the_new_messages() {
    let ack = ServerMessage::from(ReportAck::new(MetricName::new("queue.depth").unwrap(), Integer::from(2u8)));
    let mut wire = Vec::new();
    write_message(&mut wire, &ack).unwrap();
    write_message(&mut wire, &ack).unwrap();
    let reader = MessageReader::<_, ServerMessage>::new(&wire[..]);
    let read: Vec<ServerMessage> = reader.map(Result::unwrap).collect();
    assert_eq!(read, vec![ack.clone(), ack]);
    // A refused message writes nothing.
    let bad = ServerMessage::from(ReportAck::new(MetricName::new("queue.depth").unwrap(), Integer::new(-1).unwrap()));
    let mut nothing = Vec::new();
    let error = write_message(&mut nothing, &bad).unwrap_err();
    assert_eq!(error.protocol().map(|e| e.rule()), Some(Rule::Minimum { min: Number::from(0) }));
    assert!(nothing.is_empty());
}
