//! The checks a client makes of the server that the real pi-client makes too (issue 22 point 1,
//! docs/PROTOCOL.md section 8): the hello names the server that was dialled, an `attachment`
//! names this server, and a `hello_error` after the handshake keeps its code and message.

use pi_protocol::connection::{CallTarget, ClientConnection, ClientEvent, ClientOptions, CloseReason, Violation};
use pi_protocol::{
    encode_server_message, Attachment, AttachmentId, ErrorBody, ErrorCode, Payload, RequestId, ServerHello,
    ServerHelloError, ServerId, ServerMessage, SessionId, SessionTarget,
};

const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
const OTHER: &str = "9c858901-8a57-4791-81fe-4c455b099bc9";

fn id(text: &str) -> ServerId {
    ServerId::new(text).unwrap()
}

fn frame(message: ServerMessage) -> Vec<u8> {
    encode_server_message(&message).unwrap()
}

fn hello(server: &str) -> Vec<u8> {
    frame(ServerMessage::Hello(ServerHello::new(id(server))))
}

fn events(client: &mut ClientConnection) -> Vec<ClientEvent> {
    std::iter::from_fn(|| client.poll_event()).collect()
}

fn route(server: &str) -> SessionTarget {
    SessionTarget::new(id(server), SessionId::new("session-1").unwrap(), AttachmentId::new("att-1").unwrap())
}

fn ready(options: ClientOptions) -> ClientConnection {
    let mut client = ClientConnection::new(options);
    client.poll_transmit();
    client.receive(&hello(SERVER));
    assert_eq!(events(&mut client), vec![ClientEvent::Ready { server_id: id(SERVER) }]);
    client
}

#[test]
fn the_expected_server_id_defaults_to_none() {
    assert_eq!(ClientOptions::default().expected_server_id, None);
    let options = ClientOptions::default().expected_server_id(Some(id(SERVER)));
    assert_eq!(options.expected_server_id, Some(id(SERVER)));
}

#[test]
fn a_hello_naming_the_expected_server_makes_the_connection_ready() {
    let client = ready(ClientOptions::default().expected_server_id(Some(id(SERVER))));
    assert!(client.is_ready());
}

#[test]
fn a_hello_naming_another_server_closes_with_its_own_reason() {
    let mut client = ClientConnection::new(ClientOptions::default().expected_server_id(Some(id(OTHER))));
    client.poll_transmit();
    client.receive(&hello(SERVER));
    assert_eq!(
        events(&mut client),
        vec![ClientEvent::Closed {
            reason: CloseReason::ServerIdMismatch { expected: id(OTHER), actual: id(SERVER) },
            unsettled: vec![]
        }]
    );
    assert!(client.is_closed());
    assert_eq!(client.server_id(), None);
    let reason = CloseReason::ServerIdMismatch { expected: id(OTHER), actual: id(SERVER) };
    assert_eq!(reason.to_string(), format!("the server is {SERVER}, not the expected {OTHER}"));
}

#[test]
fn without_an_expected_server_id_any_hello_is_taken() {
    let client = ready(ClientOptions::default());
    assert_eq!(client.server_id(), Some(&id(SERVER)));
}

#[test]
fn an_attachment_naming_another_server_is_a_violation() {
    let mut client = ready(ClientOptions::default());
    let pending = client.request(CallTarget::Server, Payload::null()).unwrap();
    client.receive(&frame(ServerMessage::Attachment(Attachment::new(Some(route(OTHER))))));
    assert_eq!(
        events(&mut client),
        vec![ClientEvent::Closed {
            reason: CloseReason::Violation(Violation::ForeignAttachment(id(OTHER))),
            unsettled: vec![pending]
        }]
    );
    assert_eq!(client.route(), None, "the foreign route was not taken");
    assert_eq!(
        Violation::ForeignAttachment(id(OTHER)).to_string(),
        format!("an attachment names another server ({OTHER})")
    );
}

#[test]
fn an_attachment_naming_this_server_or_none_is_taken() {
    let mut client = ready(ClientOptions::default());
    client.receive(&frame(ServerMessage::Attachment(Attachment::new(Some(route(SERVER))))));
    client.receive(&frame(ServerMessage::Attachment(Attachment::new(None))));
    assert_eq!(
        events(&mut client),
        vec![ClientEvent::Attachment { route: Some(route(SERVER)) }, ClientEvent::Attachment { route: None }]
    );
}

#[test]
fn a_hello_error_after_the_handshake_keeps_its_code_and_message() {
    let mut client = ready(ClientOptions::default());
    let pending = client.request(CallTarget::Server, Payload::null()).unwrap();
    assert_eq!(pending, RequestId::new("req-1").unwrap());
    let body = ErrorBody::new(ErrorCode::new("invalid_request").unwrap(), "Invalid protocol frame");
    client.receive(&frame(ServerMessage::HelloError(ServerHelloError::new(body.clone()))));
    assert_eq!(
        events(&mut client),
        vec![ClientEvent::Closed { reason: CloseReason::HelloError(body.clone()), unsettled: vec![pending] }]
    );
    assert_eq!(
        CloseReason::HelloError(body).to_string(),
        "the server ended the connection with hello_error invalid_request: Invalid protocol frame"
    );
}
