//! The accessors generated on v8 unions and the constructors of common messages, as an
//! application reaches for them.

use pi_protocol::{
    Cancel, ClientHello, ClientMessage, ErrorBody, Integer, Payload, Request, RequestId, Response, RpcTarget, ServerId,
    ServerTarget, SessionTarget,
};

const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

fn server() -> ServerId {
    ServerId::new(SERVER).unwrap()
}

#[test]
fn a_target_names_its_server_whichever_kind_it_is() {
    let server_target = RpcTarget::Server(ServerTarget::new(server()));
    let session_target = RpcTarget::Session(SessionTarget::new(
        server(),
        "s-1".parse::<pi_protocol::SessionId>().unwrap(),
        "a-1".parse::<pi_protocol::AttachmentId>().unwrap(),
    ));
    assert_eq!(server_target.server_id().as_str(), SERVER);
    assert_eq!(session_target.server_id(), &server());
}

#[test]
fn client_messages_give_the_request_id_and_target_they_carry() {
    let target = RpcTarget::Server(ServerTarget::new(server()));
    let request = ClientMessage::from(Request::new(RequestId::new("req-1").unwrap(), target.clone(), Payload::null()));
    let cancel = ClientMessage::from(Cancel::new(RequestId::new("req-2").unwrap(), target.clone()));
    let hello = ClientMessage::from(ClientHello::new(Integer::from(8u8)));
    assert_eq!(request.id().map(RequestId::as_str), Some("req-1"));
    assert_eq!(cancel.id().map(RequestId::as_str), Some("req-2"));
    assert_eq!(hello.id(), None);
    assert_eq!(request.target(), Some(&target));
    assert_eq!(cancel.target(), Some(&target));
    assert_eq!(hello.target(), None);
}

#[test]
fn responses_are_built_from_a_result_or_a_code_and_keep_their_id() {
    let id = RequestId::new("req-3").unwrap();
    let ok = Response::success(id.clone(), Some(Payload::from_value(&serde_json::json!({ "n": 1 })).unwrap()));
    let empty = Response::success(id.clone(), None);
    let failed = Response::failure(id.clone(), ErrorBody::from_code("not_found", "No such session").unwrap());
    assert_eq!(
        ok.to_json(),
        serde_json::json!({ "type": "response", "id": "req-3", "ok": true, "result": { "n": 1 } })
    );
    assert_eq!(empty.to_json(), serde_json::json!({ "type": "response", "id": "req-3", "ok": true }));
    assert_eq!(
        failed.to_json(),
        serde_json::json!({
            "type": "response", "id": "req-3", "ok": false,
            "error": { "code": "not_found", "message": "No such session" }
        })
    );
    for response in [&ok, &empty, &failed] {
        assert_eq!(response.id(), &id);
    }
    assert_eq!(ErrorBody::from_code("", "x").unwrap_err().kind(), pi_protocol::ErrorKind::Schema);
}
