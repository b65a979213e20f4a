//! The hand-written generator target `src/generated/v8.rs` compiles with this derive, and its
//! types decode and encode the protocol's messages (docs/PROTOCOL.md section 4).

mod common;

// `rustfmt::skip`: `cargo fmt` of this crate must not reach into the generator's output.
#[rustfmt::skip]
#[allow(dead_code)]
#[path = "../../src/generated/v8.rs"]
mod v8;

use common::{assert_error, boolean, decode, encode, float, int, map, null, text};
use pi_protocol_runtime::{ErrorKind, Integer, Number, Payload, Rule, Validate};
use v8::*;

const SERVER: &str = "7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b";

#[test]
fn client_hello_accepts_any_nonnegative_version() {
    let bytes = map(&[("type", text("hello")), ("version", int(8))]);
    let msg = decode::<ClientMessage>(&bytes).unwrap();
    assert_eq!(msg, ClientMessage::Hello(ClientHello::new(Integer::from(8u8))));
    assert_eq!(encode(&msg), bytes);
    assert_eq!(hex::encode(encode(&msg)), "a264747970656568656c6c6f6776657273696f6e08");
    assert!(decode::<ClientMessage>(&map(&[("version", int(99)), ("type", text("hello"))])).is_ok());
    assert_error(
        decode::<ClientMessage>(&map(&[("type", text("hello")), ("version", int(-1))])),
        ErrorKind::Schema,
        Rule::Minimum { min: Number::from(0) },
        "version",
    );
}

#[test]
fn server_hello_version_is_the_literal_eight() {
    let bytes = map(&[("type", text("hello")), ("version", int(8)), ("serverId", text(SERVER))]);
    let msg = decode::<ServerMessage>(&bytes).unwrap();
    let ServerMessage::Hello(hello) = &msg else { panic!("wrong variant") };
    assert_eq!(hello.server_id, SERVER);
    assert_eq!(encode(&msg), bytes);
    let as_float = map(&[("type", text("hello")), ("version", float(8.0)), ("serverId", text(SERVER))]);
    assert_eq!(decode::<ServerMessage>(&as_float).unwrap(), msg);
    let other = map(&[("type", text("hello")), ("version", int(7)), ("serverId", text(SERVER))]);
    assert_error(decode::<ServerMessage>(&other), ErrorKind::Schema, Rule::Literal, "version");
    let upper = map(&[("type", text("hello")), ("version", int(8)), ("serverId", text(&SERVER.to_uppercase()))]);
    assert_error(decode::<ServerMessage>(&upper), ErrorKind::Schema, Rule::Pattern, "serverId");
}

#[test]
fn request_with_both_target_kinds() {
    let session = map(&[("serverId", text(SERVER)), ("sessionId", text("s")), ("attachmentId", text("a"))]);
    let bytes = map(&[("type", text("request")), ("id", text("1")), ("target", session), ("call", null())]);
    let msg = decode::<ClientMessage>(&bytes).unwrap();
    let ClientMessage::Request(request) = &msg else { panic!("wrong variant") };
    assert!(matches!(request.target, RpcTarget::Session(_)));
    assert!(request.call.is_null());
    assert_eq!(encode(&msg), bytes);

    let server = map(&[("serverId", text(SERVER))]);
    let cancel = map(&[("target", server), ("id", text("1")), ("type", text("cancel"))]);
    let msg = decode::<ClientMessage>(&cancel).unwrap();
    let ClientMessage::Cancel(c) = &msg else { panic!("wrong variant") };
    assert_eq!(c.target, RpcTarget::Server(ServerTarget::new(ServerId::new(SERVER).unwrap())));

    let partial = map(&[("serverId", text(SERVER)), ("sessionId", text("s"))]);
    let bad = map(&[("type", text("cancel")), ("id", text("1")), ("target", partial)]);
    assert_error(decode::<ClientMessage>(&bad), ErrorKind::Schema, Rule::NoVariant, "target");
    let bad_id = map(&[("type", text("cancel")), ("id", text("")), ("target", map(&[("serverId", text(SERVER))]))]);
    assert_error(decode::<ClientMessage>(&bad_id), ErrorKind::Schema, Rule::MinLength { min: 1 }, "id");
    let bad_server = map(&[("type", text("cancel")), ("id", text("1")), ("target", map(&[("serverId", text("nil"))]))]);
    assert_error(decode::<ClientMessage>(&bad_server), ErrorKind::Schema, Rule::Pattern, "target.serverId");
}

#[test]
fn responses_nest_inside_server_messages() {
    let ok = map(&[("type", text("response")), ("id", text("1")), ("ok", boolean(true)), ("result", int(5))]);
    let msg = decode::<ServerMessage>(&ok).unwrap();
    assert!(matches!(&msg, ServerMessage::Response(Response::Success(s)) if s.result.is_some()));
    assert_eq!(encode(&msg), ok);
    let no_result = map(&[("type", text("response")), ("id", text("1")), ("ok", boolean(true))]);
    assert!(matches!(
        decode::<ServerMessage>(&no_result).unwrap(),
        ServerMessage::Response(Response::Success(SuccessResponse { result: None, .. }))
    ));
    let error = map(&[("code", text("E")), ("message", text(""))]);
    let failed = map(&[("ok", boolean(false)), ("error", error), ("type", text("response")), ("id", text("1"))]);
    let msg = decode::<ServerMessage>(&failed).unwrap();
    let ServerMessage::Response(Response::Failure(f)) = &msg else { panic!("wrong variant") };
    assert_eq!(f.error.code, "E");
    let bad_code = map(&[
        ("type", text("response")),
        ("id", text("1")),
        ("ok", boolean(false)),
        ("error", map(&[("code", text("")), ("message", text("m"))])),
    ]);
    assert_error(decode::<ServerMessage>(&bad_code), ErrorKind::Schema, Rule::MinLength { min: 1 }, "error.code");
    let both = map(&[
        ("type", text("response")),
        ("id", text("1")),
        ("ok", boolean(false)),
        ("result", null()),
        ("error", map(&[("code", text("E")), ("message", text(""))])),
    ]);
    assert_error(decode::<ServerMessage>(&both), ErrorKind::Schema, Rule::UnknownField, "");
}

#[test]
fn attachment_is_nullable() {
    let none = map(&[("type", text("attachment")), ("attachment", null())]);
    let msg = decode::<ServerMessage>(&none).unwrap();
    assert_eq!(msg, ServerMessage::Attachment(Attachment::new(None)));
    assert_eq!(encode(&msg), none);
    let missing = map(&[("type", text("attachment"))]);
    assert_error(decode::<ServerMessage>(&missing), ErrorKind::Schema, Rule::MissingField, "attachment");
    let target = map(&[("serverId", text(SERVER)), ("sessionId", text("s")), ("attachmentId", text("a"))]);
    let some = map(&[("type", text("attachment")), ("attachment", target)]);
    let msg = decode::<ServerMessage>(&some).unwrap();
    assert!(matches!(msg, ServerMessage::Attachment(Attachment { attachment: Some(_), .. })));
    assert_eq!(encode(&msg), some);
}

#[test]
fn service_update_and_validate() {
    let update = map(&[("type", text("service_update")), ("subscriptionId", text("sub")), ("update", int(1))]);
    let msg = decode::<ServerMessage>(&update).unwrap();
    assert!(msg.validate().is_ok());
    assert_eq!(encode(&msg), update);
    let built = ServerMessage::from(ServiceUpdate::new(
        SubscriptionId::new("sub").unwrap(),
        Payload::from_json_str("1").unwrap(),
    ));
    assert_eq!(built, msg);
    let hello = ClientMessage::from(ClientHello::new(Integer::new(-1).unwrap()));
    let err = hello.validate().unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::Minimum { min: Number::from(0) }, "version".to_owned()));
}

#[test]
fn newtype_api_of_generated_ids() {
    assert!(ServerId::is_valid(SERVER));
    assert!(!ServerId::is_valid("00000000-0000-0000-0000-000000000000"));
    assert!(!ServerId::is_valid(&format!("{SERVER}\n")));
    assert!(!ServerId::is_valid(&format!("{{{SERVER}}}")));
    assert_eq!(RequestId::new("").unwrap_err().rule(), Rule::MinLength { min: 1 });
    assert_eq!(SessionId::try_from("s").unwrap().as_str(), "s");
}
