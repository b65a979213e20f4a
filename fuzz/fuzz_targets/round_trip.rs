//! Round trip of arbitrary typed messages: a message built from the fuzzer's bytes encodes,
//! decodes back equal, re-encodes to the same bytes, and its JSON view parses back to it.
#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use pi_protocol::{
    encode_client_json, encode_client_message, encode_server_json, encode_server_message, parse_client_message,
    parse_server_message, Attachment, AttachmentId, Cancel, ClientHello, ClientMessage, ClientMessageDecoder,
    CodecOptions, ErrorBody, ErrorCode, ErrorResponse, Integer, Payload, Request, RequestId, Response, RpcTarget,
    ServerHello, ServerHelloError, ServerId, ServerMessage, ServerMessageDecoder, ServerTarget, ServiceUpdate,
    SessionId, SessionTarget, SubscriptionId, SuccessResponse,
};
use serde_json::{Map, Number, Value};

const MAX_SAFE: i64 = (1 << 53) - 1;

fn json(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 5 } else { 7 };
    Ok(match u.int_in_range(0..=kinds - 1)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::Number(u.int_in_range(-MAX_SAFE..=MAX_SAFE)?.into()),
        3 => {
            let f: f64 = u.arbitrary()?;
            if f.is_finite() && (f.fract() != 0.0 || f.abs() <= MAX_SAFE as f64) {
                Value::Number(Number::from_f64(f).expect("finite"))
            } else {
                Value::Null
            }
        }
        4 => Value::String(u.arbitrary()?),
        5 => {
            let n = u.int_in_range(0..=5)?;
            Value::Array((0..n).map(|_| json(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0..=5)?;
            let mut map = Map::new();
            for _ in 0..n {
                map.insert(u.arbitrary()?, json(u, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}

fn payload(u: &mut Unstructured) -> Result<Payload> {
    Ok(Payload::from_value(&json(u, 4)?).expect("strict JSON encodes"))
}

fn non_empty(u: &mut Unstructured) -> Result<String> {
    let s: String = u.arbitrary()?;
    Ok(if s.is_empty() { "x".to_owned() } else { s })
}

fn server_id(u: &mut Unstructured) -> Result<ServerId> {
    let mut b: [u8; 16] = u.arbitrary()?;
    b[6] = 0x40 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    let text = format!(
        "{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    );
    Ok(ServerId::new(text).expect("a v4 UUID"))
}

fn session_target(u: &mut Unstructured) -> Result<SessionTarget> {
    Ok(SessionTarget::new(
        server_id(u)?,
        SessionId::new(non_empty(u)?).unwrap(),
        AttachmentId::new(non_empty(u)?).unwrap(),
    ))
}

fn target(u: &mut Unstructured) -> Result<RpcTarget> {
    Ok(if u.arbitrary()? {
        RpcTarget::Server(ServerTarget::new(server_id(u)?))
    } else {
        RpcTarget::Session(session_target(u)?)
    })
}

fn error_body(u: &mut Unstructured) -> Result<ErrorBody> {
    Ok(ErrorBody::new(ErrorCode::new(non_empty(u)?).unwrap(), u.arbitrary::<String>()?))
}

fn client(u: &mut Unstructured) -> Result<ClientMessage> {
    Ok(match u.int_in_range(0..=2)? {
        0 => ClientMessage::Hello(ClientHello::new(Integer::new(u.int_in_range(0..=MAX_SAFE)?).unwrap())),
        1 => ClientMessage::Request(Request::new(RequestId::new(non_empty(u)?).unwrap(), target(u)?, payload(u)?)),
        _ => ClientMessage::Cancel(Cancel::new(RequestId::new(non_empty(u)?).unwrap(), target(u)?)),
    })
}

fn server(u: &mut Unstructured) -> Result<ServerMessage> {
    Ok(match u.int_in_range(0..=5)? {
        0 => ServerMessage::Hello(ServerHello::new(server_id(u)?)),
        1 => ServerMessage::HelloError(ServerHelloError::new(error_body(u)?)),
        2 => {
            let success = SuccessResponse::new(RequestId::new(non_empty(u)?).unwrap());
            let success = if u.arbitrary()? { success.with_result(payload(u)?) } else { success };
            ServerMessage::Response(Response::Success(success))
        }
        3 => ServerMessage::Response(Response::Failure(ErrorResponse::new(
            RequestId::new(non_empty(u)?).unwrap(),
            error_body(u)?,
        ))),
        4 => ServerMessage::ServiceUpdate(ServiceUpdate::new(SubscriptionId::new(non_empty(u)?).unwrap(), payload(u)?)),
        _ => ServerMessage::Attachment(Attachment::new(if u.arbitrary()? { Some(session_target(u)?) } else { None })),
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(is_client) = u.arbitrary::<bool>() else { return };
    if is_client {
        let Ok(m) = client(&mut u) else { return };
        let frame = encode_client_message(&m).expect("a valid message encodes");
        let decoded = ClientMessageDecoder::new().push(&frame).pop().unwrap().expect("decodes");
        assert_eq!(decoded, m);
        assert_eq!(encode_client_message(&decoded).unwrap(), frame);
        let json = m.to_json();
        assert_eq!(parse_client_message(&json).expect("the JSON view parses"), m);
        let from_json = encode_client_json(&json, &CodecOptions::new()).expect("the JSON view encodes");
        let again = ClientMessageDecoder::new().push(&from_json).pop().unwrap().expect("decodes");
        assert_eq!(again.to_json(), json);
    } else {
        let Ok(m) = server(&mut u) else { return };
        let frame = encode_server_message(&m).expect("a valid message encodes");
        let decoded = ServerMessageDecoder::new().push(&frame).pop().unwrap().expect("decodes");
        assert_eq!(decoded, m);
        assert_eq!(encode_server_message(&decoded).unwrap(), frame);
        let json = m.to_json();
        assert_eq!(parse_server_message(&json).expect("the JSON view parses"), m);
        let from_json = encode_server_json(&json, &CodecOptions::new()).expect("the JSON view encodes");
        let again = ServerMessageDecoder::new().push(&from_json).pop().unwrap().expect("decodes");
        assert_eq!(again.to_json(), json);
    }
});
