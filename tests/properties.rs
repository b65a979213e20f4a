//! Properties of the codec over arbitrary valid messages (proptest):
//! - decode(encode(m)) == m for every message kind, on both sides;
//! - encode(decode(b)) == b for canonical bytes b (typed messages and opaque payloads);
//! - chunking invariance: any split of a stream, damaged or not, yields the same messages and
//!   the same error as one push;
//! - the JSON path (`parse_*_message`, `encode_*_json`) and the CBOR path agree.

use pi_protocol::runtime::json::to_javascript_key_order;
use pi_protocol::{
    encode_client_json, encode_client_message, encode_server_json, encode_server_message, parse_client_message,
    parse_server_message, AttachmentId, Cancel, CborLimits, ClientHello, ClientMessage, ClientMessageDecoder,
    CodecOptions, ErrorBody, ErrorCode, ErrorKind, ErrorResponse, Integer, Payload, ProtocolError, Request, RequestId,
    Response, RpcTarget, Rule, ServerHello, ServerHelloError, ServerId, ServerMessage, ServerMessageDecoder,
    ServerTarget, ServiceUpdate, SessionId, SessionTarget, SubscriptionId, SuccessResponse,
};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

const MAX_SAFE: i64 = (1 << 53) - 1;

// ------------------------------------------------------------------ payload JSON

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "",
            "0",
            "1",
            "10",
            "01",
            "-1",
            "4294967294",
            "4294967295",
            "__proto__",
            "constructor",
            "type",
            "id",
            "é",
            "😀",
            "\u{feff}",
            "a\u{0}b",
        ])
        .prop_map(str::to_owned),
        "[a-z]{1,8}",
        any::<String>(),
        (0u32..100_000).prop_map(|n| n.to_string()),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-MAX_SAFE..=MAX_SAFE).prop_map(|n| Value::Number(n.into())),
        (-300i64..300).prop_map(|n| Value::Number(n.into())),
        any::<f64>()
            .prop_filter("finite and, when integral, safe", |f| {
                f.is_finite() && (f.fract() != 0.0 || f.abs() <= MAX_SAFE as f64)
            })
            .prop_map(|f| Value::Number(Number::from_f64(f).expect("finite"))),
        Just(Value::Number(Number::from_f64(-0.0).unwrap())),
    ]
}

/// Arbitrary strict JSON: every value kind, awkward keys, nested a few levels.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        any::<String>().prop_map(Value::String)
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec((key(), inner), 0..6).prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn payload() -> impl Strategy<Value = Payload> {
    json().prop_map(|v| Payload::from_value(&v).expect("strict JSON encodes"))
}

// ------------------------------------------------------------------ envelopes

fn non_empty() -> impl Strategy<Value = String> {
    prop_oneof!["[a-zA-Z0-9_-]{1,12}", any::<String>().prop_filter("non-empty", |s| !s.is_empty())]
}

fn server_id() -> impl Strategy<Value = ServerId> {
    "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}".prop_map(|s| ServerId::new(s).unwrap())
}

fn session_target() -> impl Strategy<Value = SessionTarget> {
    (server_id(), non_empty(), non_empty()).prop_map(|(server_id, s, a)| {
        SessionTarget::new(server_id, SessionId::new(s).unwrap(), AttachmentId::new(a).unwrap())
    })
}

fn target() -> impl Strategy<Value = RpcTarget> {
    prop_oneof![
        server_id().prop_map(|server_id| RpcTarget::Server(ServerTarget::new(server_id))),
        session_target().prop_map(RpcTarget::Session),
    ]
}

fn request_id() -> impl Strategy<Value = RequestId> {
    non_empty().prop_map(|s| RequestId::new(s).unwrap())
}

fn error_body() -> impl Strategy<Value = ErrorBody> {
    (non_empty(), any::<String>()).prop_map(|(code, message)| ErrorBody::new(ErrorCode::new(code).unwrap(), message))
}

fn version() -> impl Strategy<Value = Integer> {
    prop_oneof![Just(8i64), 0..=MAX_SAFE].prop_map(|n| Integer::new(n).unwrap())
}

/// Every client message kind.
fn client_message() -> impl Strategy<Value = ClientMessage> {
    prop_oneof![
        version().prop_map(|version| ClientMessage::Hello(ClientHello::new(version))),
        (request_id(), target(), payload())
            .prop_map(|(id, target, call)| ClientMessage::Request(Request::new(id, target, call))),
        (request_id(), target()).prop_map(|(id, target)| ClientMessage::Cancel(Cancel::new(id, target))),
    ]
}

/// Every server message kind.
fn server_message() -> impl Strategy<Value = ServerMessage> {
    prop_oneof![
        server_id().prop_map(|server_id| ServerMessage::Hello(ServerHello::new(server_id))),
        error_body().prop_map(|error| ServerMessage::HelloError(ServerHelloError::new(error))),
        (request_id(), prop::option::of(payload())).prop_map(|(id, result)| {
            let mut success = SuccessResponse::new(id);
            success.result = result;
            ServerMessage::Response(Response::Success(success))
        }),
        (request_id(), error_body())
            .prop_map(|(id, error)| ServerMessage::Response(Response::Failure(ErrorResponse::new(id, error)))),
        (non_empty(), payload()).prop_map(|(s, update)| ServerMessage::ServiceUpdate(ServiceUpdate::new(
            SubscriptionId::new(s).unwrap(),
            update
        ))),
        prop::option::of(session_target())
            .prop_map(|attachment| ServerMessage::Attachment(pi_protocol::Attachment::new(attachment))),
    ]
}

// ------------------------------------------------------------------ helpers

fn decode_client(chunks: &[&[u8]]) -> (Vec<ClientMessage>, Option<ProtocolError>) {
    ClientMessageDecoder::new().decode_all(chunks.iter().copied())
}

fn decode_server(chunks: &[&[u8]]) -> (Vec<ServerMessage>, Option<ProtocolError>) {
    ServerMessageDecoder::new().decode_all(chunks.iter().copied())
}

/// Splits `stream` at the given cut points (taken modulo its length + 1, sorted; repeated
/// points give empty chunks).
fn split<'a>(stream: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut from = 0;
    for p in points {
        chunks.push(&stream[from..p]);
        from = p;
    }
    chunks.push(&stream[from..]);
    chunks
}

/// Damage to a stream: (position, kind, byte) with kind 0 = overwrite, 1 = insert,
/// 2 = delete, 3 = truncate.
fn damage(stream: &mut Vec<u8>, (at, kind, byte): (usize, u8, u8)) {
    if stream.is_empty() {
        stream.push(byte);
        return;
    }
    let at = at % stream.len();
    match kind % 4 {
        0 => stream[at] = byte,
        1 => stream.insert(at, byte),
        2 => {
            stream.remove(at);
        }
        _ => stream.truncate(at),
    }
}

/// Whether a decode of some chunking (`chunked`) agrees with the decode one byte at a time
/// (`bytewise`): the same messages and error, or, where the bytewise error is a frame that does
/// not decode, a `FrameTooLong` of a later header (the reference reports a header over the limit
/// anywhere in a pushed chunk before a frame of that chunk that does not decode,
/// docs/PROTOCOL.md section 6).
fn agrees_but_for_later_headers<M: PartialEq>(
    chunked: &(Vec<M>, Option<ProtocolError>),
    bytewise: &(Vec<M>, Option<ProtocolError>),
) -> bool {
    if chunked.0 != bytewise.0 {
        return false;
    }
    match (&chunked.1, &bytewise.1) {
        (a, b) if a == b => true,
        (Some(a), Some(b)) => {
            matches!(a.rule(), Rule::FrameTooLong { .. })
                && matches!(b.kind(), ErrorKind::Cbor | ErrorKind::Schema)
                && a.offset() > b.offset()
        }
        _ => false,
    }
}

fn in_javascript_order(value: &Value) -> bool {
    let mut ordered = value.clone();
    to_javascript_key_order(&mut ordered);
    serde_json::to_string(&ordered).unwrap() == serde_json::to_string(value).unwrap()
}

#[test]
fn javascript_key_order_reaches_objects_in_arrays_and_objects() {
    // Index-like keys first, ascending, the others in their order: at every depth.
    let mut value: Value = serde_json::from_str(r#"[{"b":1,"1":2},{"x":{"z":0,"10":1,"2":2}}]"#).unwrap();
    to_javascript_key_order(&mut value);
    assert_eq!(serde_json::to_string(&value).unwrap(), r#"[{"1":2,"b":1},{"x":{"2":2,"10":1,"z":0}}]"#);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn client_messages_round_trip(m in client_message()) {
        let frame = encode_client_message(&m).unwrap();
        let (decoded, error) = decode_client(&[&frame]);
        prop_assert_eq!(error, None);
        prop_assert_eq!(&decoded, &vec![m]);
        // And the bytes again: encode(decode(b)) == b.
        prop_assert_eq!(encode_client_message(&decoded[0]).unwrap(), frame);
    }

    #[test]
    fn server_messages_round_trip(m in server_message()) {
        let frame = encode_server_message(&m).unwrap();
        let (decoded, error) = decode_server(&[&frame]);
        prop_assert_eq!(error, None);
        prop_assert_eq!(&decoded, &vec![m]);
        prop_assert_eq!(encode_server_message(&decoded[0]).unwrap(), frame);
    }

    /// A payload's canonical bytes survive a trip through `serde_json::Value`.
    #[test]
    fn payload_bytes_survive_json(v in json()) {
        let payload = Payload::from_value(&v).unwrap();
        let again = Payload::from_value(&payload.to_value()).unwrap();
        prop_assert_eq!(again.as_cbor(), payload.as_cbor());
        let reread = Payload::from_cbor(payload.to_bytes(), CborLimits::default()).unwrap();
        prop_assert_eq!(reread.as_cbor(), payload.as_cbor());
        prop_assert_eq!(reread.depth(), payload.depth());
        prop_assert_eq!(reread.widest_container(), payload.widest_container());
    }

    /// Any split of a stream of valid frames, optionally damaged, gives the same messages and
    /// the same error (kind, rule, path and offset) as pushing it one byte at a time, but for
    /// the reference's chunk rule: a header over the limit later in the chunk holding a frame
    /// that does not decode is reported instead (`agrees_but_for_later_headers`).
    #[test]
    fn client_chunking_is_invariant(
        messages in vec(client_message(), 0..4),
        damaged in prop::option::of((any::<usize>(), any::<u8>(), any::<u8>())),
        cuts in vec(any::<usize>(), 0..8),
    ) {
        let mut stream: Vec<u8> = messages.iter().flat_map(|m| encode_client_message(m).unwrap()).collect();
        if let Some(d) = damaged {
            damage(&mut stream, d);
        } else {
            prop_assert_eq!(&decode_client(&[&stream]).0, &messages);
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        let whole = decode_client(&bytes);
        let chunked = decode_client(&split(&stream, &cuts));
        prop_assert!(agrees_but_for_later_headers(&chunked, &whole), "{:?} / {:?}", chunked, whole);
        let once = decode_client(&[&stream]);
        prop_assert!(agrees_but_for_later_headers(&once, &whole), "{:?} / {:?}", once, whole);
        // push_each delivers what push returns.
        let mut decoder = ClientMessageDecoder::new();
        let mut each = Vec::new();
        for chunk in split(&stream, &cuts) {
            decoder.push_each(chunk, |r| each.push(r));
            if each.iter().any(Result::is_err) {
                break;
            }
        }
        let first_error = each.iter().position(Result::is_err).map_or(each.len(), |i| i + 1);
        each.truncate(first_error);
        let delivered: Vec<ClientMessage> = each.iter().filter_map(|r| r.as_ref().ok().cloned()).collect();
        prop_assert_eq!(&delivered, &whole.0);
        if damaged.is_none() {
            prop_assert_eq!(decoder.offset(), stream.len() as u64);
        }
    }

    #[test]
    fn server_chunking_is_invariant(
        messages in vec(server_message(), 0..4),
        damaged in prop::option::of((any::<usize>(), any::<u8>(), any::<u8>())),
        cuts in vec(any::<usize>(), 0..8),
    ) {
        let mut stream: Vec<u8> = messages.iter().flat_map(|m| encode_server_message(m).unwrap()).collect();
        if let Some(d) = damaged {
            damage(&mut stream, d);
        } else {
            prop_assert_eq!(&decode_server(&[&stream]).0, &messages);
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        let whole = decode_server(&bytes);
        let chunked = decode_server(&split(&stream, &cuts));
        prop_assert!(agrees_but_for_later_headers(&chunked, &whole), "{:?} / {:?}", chunked, whole);
        let once = decode_server(&[&stream]);
        prop_assert!(agrees_but_for_later_headers(&once, &whole), "{:?} / {:?}", once, whole);
    }

    /// The JSON view of a message parses back to it, and encodes to the typed bytes when its
    /// payloads are already in JavaScript key order (the envelope is in schema order).
    #[test]
    fn client_json_and_cbor_paths_agree(m in client_message()) {
        let json = m.to_json();
        prop_assert_eq!(parse_client_message(&json).unwrap(), m.clone());
        let typed = encode_client_message(&m).unwrap();
        let from_json = encode_client_json(&json, &CodecOptions::new()).unwrap();
        if in_javascript_order(&json) {
            prop_assert_eq!(from_json, typed);
        } else {
            let (decoded, error) = decode_client(&[&from_json]);
            prop_assert_eq!(error, None);
            // serde_json's map equality ignores key order.
            prop_assert_eq!(decoded[0].to_json(), json);
        }
    }

    #[test]
    fn server_json_and_cbor_paths_agree(m in server_message()) {
        let json = m.to_json();
        prop_assert_eq!(parse_server_message(&json).unwrap(), m.clone());
        let typed = encode_server_message(&m).unwrap();
        let from_json = encode_server_json(&json, &CodecOptions::new()).unwrap();
        if in_javascript_order(&json) {
            prop_assert_eq!(from_json, typed);
        } else {
            let (decoded, error) = decode_server(&[&from_json]);
            prop_assert_eq!(error, None);
            // serde_json's map equality ignores key order.
            prop_assert_eq!(decoded[0].to_json(), json);
        }
    }

    /// For arbitrary JSON in roughly the shape of a message (a real message with one field
    /// replaced, removed or added), the JSON path and the CBOR path reach the same verdict
    /// and the same message.
    #[test]
    fn json_and_cbor_verdicts_agree_on_mutated_messages(
        m in client_message(),
        s in server_message(),
        field in key(),
        replacement in prop::option::of(json()),
        nested in any::<bool>(),
    ) {
        for (client, mut value) in [(true, m.to_json()), (false, s.to_json())] {
            {
                let object = value.as_object_mut().unwrap();
                let inner = object.values_mut().find(|v| v.is_object());
                let target = match (nested, inner) {
                    (true, Some(Value::Object(inner))) => inner,
                    _ => value.as_object_mut().unwrap(),
                };
                let field = target.keys().find(|k| k.len() % 3 == field.len() % 3).cloned().unwrap_or_else(|| field.clone());
                match replacement.clone() {
                    Some(v) => { target.insert(field, v); }
                    None => { target.remove(&field); }
                }
            }
            let frame = pi_protocol::encode_frame(Payload::from_value(&value).unwrap().as_cbor(), u32::MAX).unwrap();
            if client {
                let by_json = parse_client_message(&value);
                let (by_cbor, error) = decode_client(&[&frame]);
                prop_assert_eq!(by_json.is_ok(), error.is_none(), "{} {:?} {:?}", value, by_json, error);
                if let Ok(m) = by_json { prop_assert_eq!(vec![m], by_cbor); }
            } else {
                let by_json = parse_server_message(&value);
                let (by_cbor, error) = decode_server(&[&frame]);
                prop_assert_eq!(by_json.is_ok(), error.is_none(), "{} {:?} {:?}", value, by_json, error);
                if let Ok(m) = by_json { prop_assert_eq!(vec![m], by_cbor); }
            }
        }
    }
}
