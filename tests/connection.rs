//! The sans-IO connection layer (`pi_protocol::connection`): one test per rule of the client
//! and server state machines, then a property test driving both against each other.

use std::collections::{HashMap, HashSet};

use pi_protocol::connection::{
    CallTarget, ClientConnection, ClientEvent, ClientOptions, CloseReason, ConnectionError, FenceReason,
    ServerConnection, ServerEvent, ServerOptions, Violation,
};
use pi_protocol::{
    encode_client_message, encode_server_message, Attachment, AttachmentId, Cancel, ClientHello, ClientMessage,
    ClientMessageDecoder, CodecOptions, ErrorBody, ErrorCode, ErrorKind, ErrorResponse, Payload, Request, RequestId,
    Response, RpcTarget, Rule, ServerHello, ServerHelloError, ServerId, ServerMessage, ServerMessageDecoder,
    ServerTarget, ServiceUpdate, SessionId, SessionTarget, SubscriptionId, SuccessResponse,
};
use proptest::prelude::*;
use serde_json::json;

#[path = "connection_model/frames.rs"]
mod frames;
use frames::FrameCursor;

const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
const OTHER_SERVER: &str = "9c858901-8a57-4791-81fe-4c455b099bc9";

fn server_id() -> ServerId {
    ServerId::new(SERVER).unwrap()
}

fn rid(s: &str) -> RequestId {
    RequestId::new(s).unwrap()
}

fn route(attachment: &str) -> SessionTarget {
    SessionTarget::new(server_id(), SessionId::new("s-7f2a").unwrap(), AttachmentId::new(attachment).unwrap())
}

fn server_target() -> RpcTarget {
    RpcTarget::Server(ServerTarget::new(server_id()))
}

/// A server target naming [`OTHER_SERVER`].
fn foreign_target() -> RpcTarget {
    RpcTarget::Server(ServerTarget::new(ServerId::new(OTHER_SERVER).unwrap()))
}

fn payload(value: serde_json::Value) -> Payload {
    Payload::from_value(&value).unwrap()
}

fn err(code: &str, message: &str) -> ErrorBody {
    ErrorBody::new(ErrorCode::new(code).unwrap(), message.to_owned())
}

/// Every message in a client's output.
fn client_messages(bytes: Option<Vec<u8>>) -> Vec<ClientMessage> {
    let Some(bytes) = bytes else { return Vec::new() };
    let mut decoder = ClientMessageDecoder::new();
    let messages = decoder.push(&bytes).into_iter().map(Result::unwrap).collect();
    decoder.end().unwrap();
    messages
}

/// Every message in a server's output.
fn server_messages(bytes: Option<Vec<u8>>) -> Vec<ServerMessage> {
    let Some(bytes) = bytes else { return Vec::new() };
    let mut decoder = ServerMessageDecoder::new();
    let messages = decoder.push(&bytes).into_iter().map(Result::unwrap).collect();
    decoder.end().unwrap();
    messages
}

fn events<E>(mut poll: impl FnMut() -> Option<E>) -> Vec<E> {
    std::iter::from_fn(&mut poll).collect()
}

fn client_events(client: &mut ClientConnection) -> Vec<ClientEvent> {
    events(|| client.poll_event())
}

fn server_events(server: &mut ServerConnection) -> Vec<ServerEvent> {
    events(|| server.poll_event())
}

fn server_frame(message: ServerMessage) -> Vec<u8> {
    encode_server_message(&message).unwrap()
}

fn client_frame(message: ClientMessage) -> Vec<u8> {
    encode_client_message(&message).unwrap()
}

fn server_hello() -> Vec<u8> {
    server_frame(ServerMessage::Hello(ServerHello::new(server_id())))
}

fn attachment(route: Option<SessionTarget>) -> Vec<u8> {
    server_frame(ServerMessage::Attachment(Attachment::new(route)))
}

fn update_frame(subscription_id: SubscriptionId, update: Payload) -> Vec<u8> {
    server_frame(ServerMessage::ServiceUpdate(ServiceUpdate::new(subscription_id, update)))
}

fn success(id: &str, result: Option<Payload>) -> Vec<u8> {
    let mut success = SuccessResponse::new(rid(id));
    success.result = result;
    server_frame(ServerMessage::Response(Response::Success(success)))
}

fn failure(id: &str, error: ErrorBody) -> Vec<u8> {
    server_frame(ServerMessage::Response(Response::Failure(ErrorResponse::new(rid(id), error))))
}

/// A client whose handshake completed, with its output and events drained.
fn ready_client() -> ClientConnection {
    let mut client = ClientConnection::new(ClientOptions::default());
    client.poll_transmit().unwrap();
    client.receive(&server_hello());
    assert_eq!(client_events(&mut client), vec![ClientEvent::Ready { server_id: server_id() }]);
    client
}

fn hello_frame(version: u32) -> Vec<u8> {
    client_frame(ClientMessage::Hello(ClientHello::new(version)))
}

fn request_frame(id: &str, target: RpcTarget, call: Payload) -> Vec<u8> {
    client_frame(ClientMessage::Request(Request::new(rid(id), target, call)))
}

fn cancel_frame(id: &str, target: RpcTarget) -> Vec<u8> {
    client_frame(ClientMessage::Cancel(Cancel::new(rid(id), target)))
}

/// The default options, except that any payload is admitted as a call (the service-call shape
/// check is tested in `tests/server_rules.rs`): these tests send small stand-in calls.
fn any_call() -> ServerOptions {
    ServerOptions::default().invalid_call(None)
}

/// A server whose handshake completed, with its output and events drained.
fn ready_server(options: ServerOptions) -> ServerConnection {
    let mut server = ServerConnection::new(server_id(), options);
    server.receive(&hello_frame(8));
    assert_eq!(server_events(&mut server), vec![ServerEvent::Ready]);
    server.poll_transmit().unwrap();
    server
}

fn closed_reason(events: &[ClientEvent]) -> Option<&CloseReason> {
    events.iter().find_map(|e| match e {
        ClientEvent::Closed { reason, .. } => Some(reason),
        _ => None,
    })
}

// ---------------------------------------------------------------------------------------------
// Client: handshake

#[test]
fn client_queues_hello_first_and_nothing_else_before_the_server_hello() {
    let mut client = ClientConnection::new(ClientOptions::default());
    assert!(!client.is_ready());
    assert_eq!(client.request(CallTarget::Server, Payload::null()), Err(ConnectionError::NotReady));
    assert_eq!(client.request(CallTarget::Session, Payload::null()), Err(ConnectionError::NotReady));
    assert!(!client.cancel(&rid("req-1")));
    let out = client.poll_transmit().unwrap();
    assert_eq!(out, hello_frame(8), "exactly one hello frame, version 8");
    assert_eq!(client.poll_transmit(), None);
    assert_eq!(client.poll_event(), None);
}

#[test]
fn client_offers_the_configured_version() {
    let mut client = ClientConnection::new(ClientOptions::default().version(7));
    assert_eq!(client.poll_transmit().unwrap(), hello_frame(7));
}

#[test]
fn client_hello_yields_ready_with_the_server_id() {
    let mut client = ClientConnection::new(ClientOptions::default());
    // Byte by byte: any split of the stream works.
    for byte in server_hello() {
        client.receive(&[byte]);
    }
    assert_eq!(client_events(&mut client), vec![ClientEvent::Ready { server_id: server_id() }]);
    assert_eq!(client.server_id(), Some(&server_id()));
    assert!(client.is_ready());
}

#[test]
fn client_hello_error_yields_rejected_and_closes() {
    let mut client = ClientConnection::new(ClientOptions::default().version(7));
    client.poll_transmit();
    let rejection = err("unsupported_version", "This server speaks protocol version 8");
    let mut bytes = server_frame(ServerMessage::HelloError(ServerHelloError::new(rejection.clone())));
    bytes.extend(server_hello()); // ignored: the connection is closed
    client.receive(&bytes);
    assert_eq!(
        client_events(&mut client),
        vec![ClientEvent::Closed { reason: CloseReason::Rejected(rejection), unsettled: vec![] }]
    );
    assert!(client.is_closed());
    assert_eq!(client.request(CallTarget::Server, Payload::null()), Err(ConnectionError::Closed));
    client.receive(&server_hello());
    assert_eq!(client.poll_event(), None);
}

#[test]
fn client_rejects_anything_but_hello_first() {
    let mut client = ClientConnection::new(ClientOptions::default());
    client.receive(&attachment(None));
    let events = client_events(&mut client);
    assert_eq!(closed_reason(&events), Some(&CloseReason::Violation(Violation::ExpectedHello)));
    assert_eq!(events.len(), 1);
}

#[test]
fn client_second_hello_is_a_violation_and_a_late_hello_error_keeps_its_body() {
    let mut client = ready_client();
    client.receive(&server_hello());
    assert_eq!(closed_reason(&client_events(&mut client)), Some(&CloseReason::Violation(Violation::UnexpectedHello)));

    let mut client = ready_client();
    client.receive(&server_frame(ServerMessage::HelloError(ServerHelloError::new(err("x", "why")))));
    assert_eq!(closed_reason(&client_events(&mut client)), Some(&CloseReason::HelloError(err("x", "why"))));
}

#[test]
fn client_undecodable_frame_is_a_violation_after_the_good_frames_before_it() {
    let mut client = ready_client();
    let mut bytes = attachment(Some(route("att-01")));
    // A frame holding the CBOR text "x": not an envelope.
    bytes.extend([0, 0, 0, 2, 0x61, b'x']);
    bytes.extend(attachment(None));
    client.receive(&bytes);
    let events = client_events(&mut client);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0], ClientEvent::Attachment { route: Some(route("att-01")) });
    match &events[1] {
        ClientEvent::Closed { reason: CloseReason::Violation(Violation::Decode(error)), .. } => {
            assert_eq!(error.kind(), ErrorKind::Schema);
            // The stream offset of the bad frame: after the server's hello and the attachment.
            let before = server_hello().len() + attachment(Some(route("att-01"))).len();
            assert_eq!(error.offset(), Some(u64::try_from(before).unwrap()));
        }
        other => panic!("expected a decode violation, got {other:?}"),
    }
    assert_eq!(client.route(), Some(&route("att-01")), "the frame after the bad one is not processed");
}

#[test]
fn client_failing_to_encode_its_hello_starts_closed() {
    let codec = CodecOptions::new().max_frame_length(4).unwrap();
    let mut client = ClientConnection::new(ClientOptions::default().codec(codec));
    assert!(client.is_closed());
    assert_eq!(client.poll_transmit(), None);
    assert!(matches!(client_events(&mut client)[..], [ClientEvent::Closed { reason: CloseReason::Encode(_), .. }]));
}

// ---------------------------------------------------------------------------------------------
// Client: requests and routes

#[test]
fn client_server_calls_carry_the_handshake_server_id_under_fresh_ids() {
    let mut client = ready_client();
    let call = payload(json!({"serviceId": "$chord.service", "member": "catalogue", "args": []}));
    let first = client.request(CallTarget::Server, call.clone()).unwrap();
    let second = client.request(CallTarget::Server, Payload::null()).unwrap();
    assert_eq!(first, rid("req-1"));
    assert_eq!(second, rid("req-2"));
    assert_eq!(
        client_messages(client.poll_transmit()),
        vec![
            ClientMessage::Request(Request::new(rid("req-1"), server_target(), call)),
            ClientMessage::Request(Request::new(rid("req-2"), server_target(), Payload::null())),
        ]
    );
    assert_eq!(client.pending_len(), 2);
}

#[test]
fn client_ids_are_never_reused_even_after_settling() {
    let mut client = ClientConnection::new(ClientOptions::default().request_id_prefix("c"));
    client.receive(&server_hello());
    let mut seen = HashSet::new();
    for n in 1..=50 {
        let id = client.request(CallTarget::Server, Payload::null()).unwrap();
        assert_eq!(id.as_str(), format!("c{n}"));
        assert!(seen.insert(id.clone()));
        client.receive(&success(id.as_str(), None));
    }
    assert_eq!(client.pending_len(), 0);
}

#[test]
fn client_session_call_without_a_route_is_refused_at_once() {
    let mut client = ready_client();
    assert_eq!(client.request(CallTarget::Session, Payload::null()), Err(ConnectionError::NoRoute));
    assert_eq!(client.poll_transmit(), None, "nothing queued");
    // The failed call used up no id.
    assert_eq!(client.request(CallTarget::Server, Payload::null()), Ok(rid("req-1")));
}

#[test]
fn client_session_calls_follow_the_latest_attachment() {
    let mut client = ready_client();
    client.receive(&attachment(Some(route("att-01"))));
    assert_eq!(client_events(&mut client), vec![ClientEvent::Attachment { route: Some(route("att-01")) }]);
    let a = client.request(CallTarget::Session, Payload::null()).unwrap();
    client.receive(&attachment(Some(route("att-02"))));
    let b = client.request(CallTarget::Session, Payload::null()).unwrap();
    client.receive(&attachment(None));
    assert_eq!(client.request(CallTarget::Session, Payload::null()), Err(ConnectionError::NoRoute));
    assert_eq!(client.route(), None);
    let targets: Vec<_> = client_messages(client.poll_transmit())
        .into_iter()
        .map(|m| match m {
            ClientMessage::Request(r) => (r.id, r.target),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(targets, vec![(a, RpcTarget::Session(route("att-01"))), (b, RpcTarget::Session(route("att-02")))]);
}

#[test]
fn client_request_that_cannot_be_encoded_is_refused_and_uses_no_id() {
    let codec = CodecOptions::new().max_frame_length(200).unwrap();
    let mut client = ClientConnection::new(ClientOptions::default().codec(codec));
    client.poll_transmit();
    client.receive(&server_hello());
    let big = payload(json!("x".repeat(300)));
    assert!(matches!(client.request(CallTarget::Server, big), Err(ConnectionError::Encode(_))));
    assert_eq!(client.poll_transmit(), None);
    assert_eq!(client.pending_len(), 0);
    assert_eq!(client.request(CallTarget::Server, Payload::null()), Ok(rid("req-1")));
}

// ---------------------------------------------------------------------------------------------
// Client: cancellation

#[test]
fn client_cancel_carries_the_request_target_even_after_the_route_changed() {
    let mut client = ready_client();
    client.receive(&attachment(Some(route("att-01"))));
    let id = client.request(CallTarget::Session, Payload::null()).unwrap();
    client.poll_transmit();
    client.receive(&attachment(Some(route("att-02"))));
    assert!(client.cancel(&id));
    assert_eq!(
        client_messages(client.poll_transmit()),
        vec![ClientMessage::Cancel(Cancel::new(id.clone(), RpcTarget::Session(route("att-01"))))]
    );
    // A second cancel of the same request does nothing; the request is still pending.
    assert!(!client.cancel(&id));
    assert_eq!(client.poll_transmit(), None);
    assert!(client.is_pending(&id));
}

#[test]
fn client_cancel_of_settled_or_unknown_request_does_nothing() {
    let mut client = ready_client();
    let id = client.request(CallTarget::Server, Payload::null()).unwrap();
    client.poll_transmit();
    client.receive(&success(id.as_str(), None));
    assert!(!client.cancel(&id));
    assert!(!client.cancel(&rid("req-99")));
    assert_eq!(client.poll_transmit(), None);
    assert!(!client.is_closed());
}

#[test]
fn client_cancelled_request_still_settles_with_its_response() {
    let mut client = ready_client();
    let id = client.request(CallTarget::Server, Payload::null()).unwrap();
    assert!(client.cancel(&id));
    client.receive(&failure(id.as_str(), err("cancelled", "Request was cancelled by the client")));
    assert_eq!(
        client_events(&mut client),
        vec![ClientEvent::Response { id, result: Err(err("cancelled", "Request was cancelled by the client")) }]
    );
}

// ---------------------------------------------------------------------------------------------
// Client: responses, updates, close

#[test]
fn client_response_settles_exactly_one_request() {
    let mut client = ready_client();
    let a = client.request(CallTarget::Server, Payload::null()).unwrap();
    let b = client.request(CallTarget::Server, Payload::null()).unwrap();
    let result = payload(json!({"stopReason": "stop"}));
    client.receive(&success("req-2", Some(result.clone())));
    client.receive(&success("req-1", None));
    assert_eq!(
        client_events(&mut client),
        vec![
            ClientEvent::Response { id: b.clone(), result: Ok(Some(result)) },
            ClientEvent::Response { id: a.clone(), result: Ok(None) },
        ]
    );
    assert!(!client.is_pending(&a) && !client.is_pending(&b));
}

#[test]
fn client_second_response_for_an_id_is_a_violation_and_closes() {
    let mut client = ready_client();
    let a = client.request(CallTarget::Server, Payload::null()).unwrap();
    let b = client.request(CallTarget::Server, Payload::null()).unwrap();
    let c = client.request(CallTarget::Server, Payload::null()).unwrap();
    let mut bytes = success(a.as_str(), None);
    bytes.extend(failure(a.as_str(), err("late", "")));
    bytes.extend(success(b.as_str(), None)); // after the violation: ignored
    client.receive(&bytes);
    assert_eq!(
        client_events(&mut client),
        vec![
            ClientEvent::Response { id: a.clone(), result: Ok(None) },
            ClientEvent::Closed {
                reason: CloseReason::Violation(Violation::UnknownResponse(a)),
                unsettled: vec![b, c]
            },
        ]
    );
}

#[test]
fn client_response_for_an_id_never_sent_is_a_violation() {
    let mut client = ready_client();
    client.receive(&success("req-1", None));
    assert_eq!(
        client_events(&mut client),
        vec![ClientEvent::Closed {
            reason: CloseReason::Violation(Violation::UnknownResponse(rid("req-1"))),
            unsettled: vec![]
        }]
    );
}

#[test]
fn client_service_updates_and_attachments_surface_as_events() {
    let mut client = ready_client();
    let update = payload(json!({"type": "state", "member": "directory", "sequence": 4}));
    let mut bytes = server_frame(ServerMessage::ServiceUpdate(ServiceUpdate::new(
        SubscriptionId::new("sub-sessions").unwrap(),
        update.clone(),
    )));
    bytes.extend(attachment(Some(route("att-01"))));
    bytes.extend(attachment(None));
    client.receive(&bytes);
    assert_eq!(
        client_events(&mut client),
        vec![
            ClientEvent::Update { subscription_id: SubscriptionId::new("sub-sessions").unwrap(), update },
            ClientEvent::Attachment { route: Some(route("att-01")) },
            ClientEvent::Attachment { route: None },
        ]
    );
}

#[test]
fn client_close_lists_unsettled_requests_in_order_once() {
    let mut client = ready_client();
    let ids: Vec<_> = (0..12).map(|_| client.request(CallTarget::Server, Payload::null()).unwrap()).collect();
    client.receive(&success(ids[3].as_str(), None));
    client_events(&mut client);
    client.close();
    client.close();
    let mut expected = ids.clone();
    expected.remove(3);
    assert_eq!(
        client_events(&mut client),
        vec![ClientEvent::Closed { reason: CloseReason::Local, unsettled: expected }]
    );
    assert_eq!(client.request(CallTarget::Server, Payload::null()), Err(ConnectionError::Closed));
    assert!(!client.cancel(&ids[0]));
}

// ---------------------------------------------------------------------------------------------
// Server: handshake

#[test]
fn server_answers_a_supported_hello_with_its_server_id() {
    let mut server = ServerConnection::new(server_id(), any_call());
    assert!(!server.is_ready());
    for byte in hello_frame(8) {
        server.receive(&[byte]);
    }
    assert_eq!(server_events(&mut server), vec![ServerEvent::Ready]);
    assert_eq!(server_messages(server.poll_transmit()), vec![ServerMessage::Hello(ServerHello::new(server_id()))]);
    assert!(server.is_ready());
}

#[test]
fn server_answers_another_version_with_hello_error_and_closes() {
    let mut server = ServerConnection::new(server_id(), any_call());
    let mut bytes = hello_frame(7);
    bytes.extend(request_frame("req-1", server_target(), Payload::null())); // ignored
    server.receive(&bytes);
    assert_eq!(
        server_events(&mut server),
        vec![
            ServerEvent::Closing { reason: CloseReason::UnsupportedVersion(7) },
            ServerEvent::Closed { release: None },
        ]
    );
    assert_eq!(
        server_messages(server.poll_transmit()),
        vec![ServerMessage::HelloError(ServerHelloError::new(err(
            "version",
            "Unsupported protocol version 7; expected 8"
        )))]
    );
    assert!(server.is_closed());
}

#[test]
fn server_hello_error_uses_the_configured_body() {
    let options = any_call().unsupported_version(err("version", "speak 8"));
    let mut server = ServerConnection::new(server_id(), options);
    server.receive(&hello_frame(9));
    assert_eq!(
        server_messages(server.poll_transmit()),
        vec![ServerMessage::HelloError(ServerHelloError::new(err("version", "speak 8")))]
    );
}

#[test]
fn server_closes_on_a_first_frame_other_than_hello() {
    let mut server = ServerConnection::new(server_id(), any_call());
    server.receive(&request_frame("req-1", server_target(), Payload::null()));
    assert_eq!(
        server_events(&mut server),
        vec![
            ServerEvent::Closing { reason: CloseReason::Violation(Violation::ExpectedHello) },
            ServerEvent::Closed { release: None },
        ]
    );
    // As the reference server: a hello_error saying why, then the close.
    assert_eq!(
        server_messages(server.poll_transmit()),
        vec![ServerMessage::HelloError(ServerHelloError::new(err(
            "invalid_request",
            "The first client message must be hello"
        )))]
    );
}

#[test]
fn server_closes_on_a_second_hello_or_a_bad_frame() {
    let mut server = ready_server(any_call());
    server.receive(&hello_frame(8));
    assert_eq!(
        server_events(&mut server)[0],
        ServerEvent::Closing { reason: CloseReason::Violation(Violation::UnexpectedHello) }
    );

    let mut server = ready_server(any_call());
    // Uppercase serverId: the request fails its schema.
    let mut bytes = request_frame("req-1", server_target(), Payload::null());
    let at = bytes.windows(SERVER.len()).position(|w| w == SERVER.as_bytes()).unwrap();
    bytes[at..at + SERVER.len()].copy_from_slice(SERVER.to_uppercase().as_bytes());
    server.receive(&bytes);
    let events = server_events(&mut server);
    match &events[0] {
        ServerEvent::Closing { reason: CloseReason::Violation(Violation::Decode(error)) } => {
            assert_eq!(error.path_string(), "target.serverId");
        }
        other => panic!("expected a decode violation, got {other:?}"),
    }
    assert_eq!(events[1], ServerEvent::Closed { release: None });
}

// ---------------------------------------------------------------------------------------------
// Server: fencing

fn fenced(server: &mut ServerConnection, frame: Vec<u8>) -> (Vec<ServerEvent>, Vec<ServerMessage>) {
    server.receive(&frame);
    (server_events(server), server_messages(server.poll_transmit()))
}

fn error_response(id: &str, error: ErrorBody) -> ServerMessage {
    ServerMessage::Response(Response::Failure(ErrorResponse::new(rid(id), error)))
}

#[test]
fn server_fences_a_request_for_another_server() {
    let mut server = ready_server(any_call());
    let other = ServerId::new(OTHER_SERVER).unwrap();
    let wrong = err("wrong_server", "Request was addressed to another server");
    let (events, out) =
        fenced(&mut server, request_frame("r1", RpcTarget::Server(ServerTarget::new(other.clone())), Payload::null()));
    assert_eq!(events, vec![ServerEvent::Fenced { id: rid("r1"), reason: FenceReason::WrongServer }]);
    assert_eq!(out, vec![error_response("r1", wrong.clone())]);

    // A session target naming another server, even when the rest matches the route.
    server.set_attachment(Some(route("att-01"))).unwrap();
    server.poll_transmit();
    let mut foreign = route("att-01");
    foreign.server_id = other;
    let (events, out) = fenced(&mut server, request_frame("r2", RpcTarget::Session(foreign), Payload::null()));
    assert_eq!(events, vec![ServerEvent::Fenced { id: rid("r2"), reason: FenceReason::WrongServer }]);
    assert_eq!(out, vec![error_response("r2", wrong)]);
    assert_eq!(server.in_flight_len(), 0);
}

#[test]
fn server_fences_a_session_call_on_a_stale_or_absent_route() {
    let mut server = ready_server(any_call());
    let stale = err("session_not_attached", "Session is not attached to this client");
    // No route published yet.
    let (events, out) = fenced(&mut server, request_frame("r1", RpcTarget::Session(route("att-01")), Payload::null()));
    assert_eq!(events, vec![ServerEvent::Fenced { id: rid("r1"), reason: FenceReason::StaleRoute }]);
    assert_eq!(out, vec![error_response("r1", stale.clone())]);

    server.set_attachment(Some(route("att-01"))).unwrap();
    server.poll_transmit();
    let (events, out) =
        fenced(&mut server, request_frame("r2", RpcTarget::Session(route("att-stale")), Payload::null()));
    assert_eq!(events, vec![ServerEvent::Fenced { id: rid("r2"), reason: FenceReason::StaleRoute }]);
    assert_eq!(out, vec![error_response("r2", stale.clone())]);

    // The current route is admitted; after a detach it is stale again.
    let (events, out) = fenced(&mut server, request_frame("r3", RpcTarget::Session(route("att-01")), Payload::null()));
    assert!(matches!(&events[..], [ServerEvent::Request(r)] if r.id == rid("r3")));
    assert!(out.is_empty());
    server.set_attachment(None).unwrap();
    server.poll_transmit();
    let (events, _) = fenced(&mut server, request_frame("r4", RpcTarget::Session(route("att-01")), Payload::null()));
    assert_eq!(events, vec![ServerEvent::Fenced { id: rid("r4"), reason: FenceReason::StaleRoute }]);
}

#[test]
fn server_fences_an_id_already_in_flight_and_admits_it_again_once_settled() {
    let mut server = ready_server(any_call());
    let (events, _) = fenced(&mut server, request_frame("r1", server_target(), payload(json!(1))));
    assert_eq!(events.len(), 1);
    let (events, out) = fenced(&mut server, request_frame("r1", server_target(), payload(json!(2))));
    assert_eq!(events, vec![ServerEvent::Fenced { id: rid("r1"), reason: FenceReason::DuplicateId }]);
    assert_eq!(out, vec![error_response("r1", err("invalid_request", "Request ID is already active"))]);
    assert!(server.is_in_flight(&rid("r1")), "the original stays in flight");
    server.respond(&rid("r1"), Ok(None)).unwrap();
    server.poll_transmit();
    let (events, _) = fenced(&mut server, request_frame("r1", server_target(), payload(json!(3))));
    assert!(matches!(&events[..], [ServerEvent::Request(r)] if r.call == payload(json!(3))));
}

#[test]
fn server_fences_in_the_documented_order_with_configured_codes() {
    let options = any_call()
        .wrong_server(err("E_SERVER", "a"))
        .stale_route(err("E_ROUTE", "b"))
        .duplicate_id(err("E_DUP", "c"))
        .too_many_requests(err("E_BUSY", "d"))
        .max_in_flight(1);
    let mut server = ready_server(options);
    let other = RpcTarget::Server(ServerTarget::new(ServerId::new(OTHER_SERVER).unwrap()));
    fenced(&mut server, request_frame("r1", server_target(), Payload::null()));
    // Duplicate id beats wrong server.
    let (_, out) = fenced(&mut server, request_frame("r1", other.clone(), Payload::null()));
    assert_eq!(out, vec![error_response("r1", err("E_DUP", "c"))]);
    // Wrong server beats too many.
    let (_, out) = fenced(&mut server, request_frame("r2", other, Payload::null()));
    assert_eq!(out, vec![error_response("r2", err("E_SERVER", "a"))]);
    // Stale route beats too many.
    let (_, out) = fenced(&mut server, request_frame("r3", RpcTarget::Session(route("att-x")), Payload::null()));
    assert_eq!(out, vec![error_response("r3", err("E_ROUTE", "b"))]);
    // Too many in flight.
    let (events, out) = fenced(&mut server, request_frame("r4", server_target(), Payload::null()));
    assert_eq!(events, vec![ServerEvent::Fenced { id: rid("r4"), reason: FenceReason::TooManyRequests }]);
    assert_eq!(out, vec![error_response("r4", err("E_BUSY", "d"))]);
    assert_eq!(server.in_flight_len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Server: responding and cancels

#[test]
fn server_respond_is_accepted_once_per_admitted_id() {
    let mut server = ready_server(any_call());
    let mut bytes = request_frame("a", server_target(), Payload::null());
    bytes.extend(request_frame("b", server_target(), Payload::null()));
    bytes.extend(request_frame("c", server_target(), Payload::null()));
    server.receive(&bytes);
    assert_eq!(server_events(&mut server).len(), 3);
    assert_eq!(server.respond(&rid("zzz"), Ok(None)), Err(ConnectionError::NotInFlight(rid("zzz"))));
    server.respond(&rid("a"), Ok(None)).unwrap();
    server.respond(&rid("b"), Ok(Some(Payload::null()))).unwrap();
    server.respond(&rid("c"), Err(err("not_found", "No session with that id"))).unwrap();
    assert_eq!(server.respond(&rid("a"), Ok(None)), Err(ConnectionError::NotInFlight(rid("a"))));
    assert_eq!(
        server_messages(server.poll_transmit()),
        vec![
            ServerMessage::Response(Response::Success(SuccessResponse::new(rid("a")))),
            ServerMessage::Response(Response::Success(SuccessResponse::new(rid("b")).with_result(Payload::null()))),
            error_response("c", err("not_found", "No session with that id")),
        ]
    );
}

#[test]
fn server_respond_that_cannot_be_encoded_keeps_the_call_in_flight() {
    let codec = CodecOptions::new().max_frame_length(200).unwrap();
    let mut server = ready_server(any_call().codec(codec));
    server.receive(&request_frame("a", server_target(), Payload::null()));
    server_events(&mut server);
    let big = payload(json!("y".repeat(300)));
    assert!(matches!(server.respond(&rid("a"), Ok(Some(big))), Err(ConnectionError::Encode(_))));
    assert!(server.is_in_flight(&rid("a")));
    assert_eq!(server.poll_transmit(), None);
    server.respond(&rid("a"), Err(err("too_large", ""))).unwrap();
    assert_eq!(server_messages(server.poll_transmit()), vec![error_response("a", err("too_large", ""))]);
}

#[test]
fn server_surfaces_a_cancel_for_an_in_flight_request_once() {
    let mut server = ready_server(any_call());
    server.set_attachment(Some(route("att-01"))).unwrap();
    server.poll_transmit();
    let target = RpcTarget::Session(route("att-01"));
    let mut bytes = request_frame("r6", target.clone(), Payload::null());
    bytes.extend(cancel_frame("r6", target.clone()));
    bytes.extend(cancel_frame("r6", target.clone())); // repeated: reported once
    bytes.extend(cancel_frame("r6", server_target())); // another target: not this request
    bytes.extend(cancel_frame("unknown", target.clone())); // unknown: ignored
    server.receive(&bytes);
    let events = server_events(&mut server);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1], ServerEvent::Cancel { id: rid("r6") });
    assert!(server.is_in_flight(&rid("r6")), "the application still responds");
    assert_eq!(server.poll_transmit(), None, "a cancel is never answered by the connection");
    server.respond(&rid("r6"), Err(err("cancelled", "Request was cancelled by the client"))).unwrap();
    server.receive(&cancel_frame("r6", target)); // after settling: ignored
    assert_eq!(server.poll_event(), None);
    assert!(!server.is_closed());
}

// ---------------------------------------------------------------------------------------------
// Server: attachment, updates

#[test]
fn server_publishes_attachments_and_updates() {
    let mut server = ServerConnection::new(server_id(), any_call());
    assert_eq!(server.set_attachment(Some(route("att-01"))), Err(ConnectionError::NotReady));
    let sub = SubscriptionId::new("sub-session").unwrap();
    assert_eq!(server.publish_update(sub.clone(), Payload::null()), Err(ConnectionError::NotReady));
    server.receive(&hello_frame(8));
    server.poll_transmit();
    let mut foreign = route("att-01");
    foreign.server_id = ServerId::new(OTHER_SERVER).unwrap();
    assert_eq!(
        server.set_attachment(Some(foreign)),
        Err(ConnectionError::ForeignRoute(ServerId::new(OTHER_SERVER).unwrap()))
    );
    assert_eq!(server.attachment(), None);
    server.set_attachment(Some(route("att-01"))).unwrap();
    server.publish_update(sub.clone(), payload(json!({"sequence": 2}))).unwrap();
    server.set_attachment(None).unwrap();
    assert_eq!(
        server_messages(server.poll_transmit()),
        vec![
            ServerMessage::Attachment(Attachment::new(Some(route("att-01")))),
            ServerMessage::ServiceUpdate(ServiceUpdate::new(sub, payload(json!({"sequence": 2})))),
            ServerMessage::Attachment(Attachment::new(None)),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Server: disconnect and release

#[test]
fn server_releases_the_route_only_after_admitted_calls_settle() {
    let mut server = ready_server(any_call());
    server.set_attachment(Some(route("att-01"))).unwrap();
    let mut bytes = request_frame("a", RpcTarget::Session(route("att-01")), Payload::null());
    bytes.extend(request_frame("b", server_target(), Payload::null()));
    server.receive(&bytes);
    server_events(&mut server);
    server.poll_transmit();

    server.disconnect();
    assert_eq!(server_events(&mut server), vec![ServerEvent::Closing { reason: CloseReason::Local }]);
    assert!(!server.is_closed());
    let mut in_flight: Vec<RequestId> = server.in_flight().cloned().collect();
    in_flight.sort();
    assert_eq!(in_flight, vec![rid("a"), rid("b")]);
    // Reading stopped: a request after disconnect is neither admitted nor fenced.
    server.receive(&request_frame("c", server_target(), Payload::null()));
    assert_eq!(server.poll_event(), None);
    assert_eq!(server.publish_update(SubscriptionId::new("s").unwrap(), Payload::null()), Err(ConnectionError::Closed));

    server.respond(&rid("a"), Ok(None)).unwrap();
    assert_eq!(server.poll_event(), None, "b is still in flight: nothing is released yet");
    assert_eq!(server.attachment(), Some(&route("att-01")));
    server.respond(&rid("b"), Ok(None)).unwrap();
    assert_eq!(server_events(&mut server), vec![ServerEvent::Closed { release: Some(route("att-01")) }]);
    assert_eq!(server.poll_transmit(), None, "nothing is sent once closing");
    assert!(server.is_closed());
    assert_eq!(server.attachment(), None);
    assert_eq!(server.set_attachment(None), Err(ConnectionError::Closed));
    server.disconnect();
    assert_eq!(server.poll_event(), None);
}

#[test]
fn server_disconnect_with_nothing_in_flight_releases_at_once() {
    let mut server = ready_server(any_call());
    server.set_attachment(Some(route("att-01"))).unwrap();
    server.disconnect();
    assert_eq!(
        server_events(&mut server),
        vec![
            ServerEvent::Closing { reason: CloseReason::Local },
            ServerEvent::Closed { release: Some(route("att-01")) }
        ]
    );
}

#[test]
fn server_detach_while_closing_changes_what_is_released() {
    let mut server = ready_server(any_call());
    server.set_attachment(Some(route("att-01"))).unwrap();
    server.receive(&request_frame("a", server_target(), Payload::null()));
    server.disconnect();
    server_events(&mut server);
    server.set_attachment(None).unwrap();
    server.respond(&rid("a"), Ok(None)).unwrap();
    assert_eq!(server_events(&mut server), vec![ServerEvent::Closed { release: None }]);
}

#[test]
fn server_violation_also_waits_for_admitted_calls() {
    let mut server = ready_server(any_call());
    server.set_attachment(Some(route("att-01"))).unwrap();
    let mut bytes = request_frame("a", server_target(), Payload::null());
    bytes.extend([0, 0, 0, 1, 0xff]); // a break byte: not CBOR
    server.receive(&bytes);
    let events = server_events(&mut server);
    assert!(
        matches!(
            &events[..],
            [ServerEvent::Request(_), ServerEvent::Closing { reason: CloseReason::Violation(Violation::Decode(_)) }]
        ),
        "{events:?}"
    );
    server.respond(&rid("a"), Ok(None)).unwrap();
    assert_eq!(server_events(&mut server), vec![ServerEvent::Closed { release: Some(route("att-01")) }]);
}

#[test]
fn server_disconnect_releases_only_its_own_attachment() {
    let mut one = ready_server(any_call());
    let mut two = ready_server(any_call());
    one.set_attachment(Some(route("att-01"))).unwrap();
    two.set_attachment(Some(route("att-02"))).unwrap();
    one.disconnect();
    assert_eq!(server_events(&mut one)[1], ServerEvent::Closed { release: Some(route("att-01")) });
    assert_eq!(two.attachment(), Some(&route("att-02")));
    assert_eq!(two.poll_event(), None);
    two.receive(&request_frame("x", RpcTarget::Session(route("att-02")), Payload::null()));
    assert!(matches!(&server_events(&mut two)[..], [ServerEvent::Request(_)]));
}

// ---------------------------------------------------------------------------------------------
// Closing: what is left behind

/// Checks that `reason` is the truncation a close reports when part of a frame starting at
/// stream offset `offset` was pending.
fn assert_truncated_at(reason: &CloseReason, offset: usize) {
    match reason {
        CloseReason::Violation(Violation::Decode(error)) => {
            assert_eq!(error.kind(), ErrorKind::Frame);
            assert_eq!(error.rule(), Rule::TruncatedFrame);
            assert_eq!(error.offset(), Some(u64::try_from(offset).unwrap()));
        }
        other => panic!("expected a truncated-frame violation, got {other:?}"),
    }
}

#[test]
fn client_close_with_a_partial_frame_pending_reports_the_truncated_frame() {
    // Part of a header, and part of a payload: both are frames the peer never finished.
    for cut in [2, attachment(None).len() - 1] {
        let mut client = ready_client();
        let id = client.request(CallTarget::Server, Payload::null()).unwrap();
        client.receive(&attachment(None)[..cut]);
        assert_eq!(client.poll_event(), None, "a partial frame is not an event yet");
        client.close();
        let events = client_events(&mut client);
        assert_eq!(events.len(), 1, "{events:?}");
        let ClientEvent::Closed { reason, unsettled } = &events[0] else { panic!("expected Closed, got {events:?}") };
        assert_truncated_at(reason, server_hello().len());
        assert_eq!(unsettled, &vec![id]);
    }
}

#[test]
fn client_close_between_frames_is_local() {
    let mut client = ready_client();
    client.receive(&attachment(None));
    client_events(&mut client);
    client.close();
    assert_eq!(client_events(&mut client), vec![ClientEvent::Closed { reason: CloseReason::Local, unsettled: vec![] }]);
}

#[test]
fn server_disconnect_with_a_partial_frame_pending_reports_the_truncated_frame() {
    let mut server = ready_server(any_call());
    server.receive(&request_frame("a", server_target(), Payload::null()));
    let frame = request_frame("b", server_target(), Payload::null());
    server.receive(&frame[..frame.len() / 2]);
    assert!(matches!(&server_events(&mut server)[..], [ServerEvent::Request(r)] if r.id == rid("a")));
    server.disconnect();
    let events = server_events(&mut server);
    assert_eq!(events.len(), 1, "a is still in flight: {events:?}");
    let ServerEvent::Closing { reason } = &events[0] else { panic!("expected Closing, got {events:?}") };
    assert_truncated_at(reason, hello_frame(8).len() + request_frame("a", server_target(), Payload::null()).len());
    server.respond(&rid("a"), Ok(None)).unwrap();
    assert_eq!(server_events(&mut server), vec![ServerEvent::Closed { release: None }]);
}

#[test]
fn server_disconnect_with_a_partial_hello_reports_the_truncated_frame() {
    let mut server = ServerConnection::new(server_id(), any_call());
    server.receive(&hello_frame(8)[..3]);
    server.disconnect();
    let events = server_events(&mut server);
    let [ServerEvent::Closing { reason }, ServerEvent::Closed { release: None }] = &events[..] else {
        panic!("expected Closing then Closed, got {events:?}")
    };
    assert_truncated_at(reason, 0);
}

#[test]
fn server_not_read_by_its_client_closes_at_the_transmit_cap_instead_of_buffering() {
    // A client that keeps sending requests the connection answers by itself, and never reads.
    let other = foreign_target();
    let reply = server_frame(error_response("r", err("wrong_server", "Request was addressed to another server"))).len();
    let limit = 10 * reply + reply / 2;
    let mut server = ready_server(any_call().max_pending_transmit(limit));
    for _ in 0..1000 {
        server.receive(&request_frame("r", other.clone(), Payload::null()));
        assert!(server.pending_transmit_len() <= limit, "{} queued", server.pending_transmit_len());
    }
    let events = server_events(&mut server);
    assert_eq!(events.len(), 12, "{events:?}");
    assert!(events[..10].iter().all(|e| *e == ServerEvent::Fenced { id: rid("r"), reason: FenceReason::WrongServer }));
    assert_eq!(events[10], ServerEvent::Closing { reason: CloseReason::TransmitQueueFull { limit } });
    assert_eq!(events[11], ServerEvent::Closed { release: None });
    // What was queued is whole frames, all of them sendable.
    assert_eq!(server_messages(server.poll_transmit()).len(), 10);
}

#[test]
fn server_application_frames_past_the_cap_close_the_connection() {
    let sub = SubscriptionId::new("sub-1").unwrap();
    let update = payload(json!("u".repeat(100)));
    let frame = update_frame(sub.clone(), update.clone());
    let mut server = ready_server(any_call().max_pending_transmit(2 * frame.len()));
    server.receive(&request_frame("a", server_target(), Payload::null()));
    server_events(&mut server);
    server.publish_update(sub.clone(), update.clone()).unwrap();
    server.publish_update(sub.clone(), update.clone()).unwrap();
    assert_eq!(server.publish_update(sub.clone(), update.clone()), Err(ConnectionError::Closed));
    let limit = 2 * frame.len();
    assert_eq!(
        server_events(&mut server),
        vec![ServerEvent::Closing { reason: CloseReason::TransmitQueueFull { limit } }]
    );
    // The call in flight still settles (without sending), and closing completes.
    server.respond(&rid("a"), Ok(None)).unwrap();
    assert_eq!(server_events(&mut server), vec![ServerEvent::Closed { release: None }]);
    assert_eq!(server.poll_transmit(), Some([frame.clone(), frame].concat()));
}

#[test]
fn server_respond_past_the_cap_settles_and_closes() {
    let result = payload(json!("r".repeat(100)));
    let limit = success("a", Some(result.clone())).len() * 3 / 2;
    let mut server = ready_server(any_call().max_pending_transmit(limit));
    server.set_attachment(Some(route("att-01"))).unwrap();
    server.poll_transmit();
    let mut bytes = request_frame("a", server_target(), Payload::null());
    bytes.extend(request_frame("b", server_target(), Payload::null()));
    bytes.extend(request_frame("c", server_target(), Payload::null()));
    server.receive(&bytes);
    assert_eq!(server_events(&mut server).len(), 3);
    server.respond(&rid("a"), Ok(Some(result.clone()))).unwrap();
    server.respond(&rid("b"), Ok(Some(result.clone()))).unwrap();
    assert!(!server.is_in_flight(&rid("b")), "settled, though not sent");
    assert_eq!(
        server_events(&mut server),
        vec![ServerEvent::Closing { reason: CloseReason::TransmitQueueFull { limit } }]
    );
    server.set_attachment(None).unwrap();
    server.respond(&rid("c"), Ok(None)).unwrap();
    assert_eq!(server_events(&mut server), vec![ServerEvent::Closed { release: None }]);
    assert_eq!(server.poll_transmit(), Some(success("a", Some(result))));
}

#[test]
fn server_attachment_past_the_cap_releases_the_new_route() {
    // Found by the connection_pair fuzz target: with nothing in flight, the connection closed
    // at once, released the old route, then kept the new one, which nobody released.
    let limit = server_hello().len() + 10;
    let mut server = ready_server(any_call().max_pending_transmit(limit));
    server.set_attachment(Some(route("att-02"))).unwrap();
    assert_eq!(
        server_events(&mut server),
        vec![
            ServerEvent::Closing { reason: CloseReason::TransmitQueueFull { limit } },
            ServerEvent::Closed { release: Some(route("att-02")) }
        ]
    );
    assert_eq!(server.attachment(), None);
    assert_eq!(server.poll_transmit(), None);
}

#[test]
fn server_cap_below_its_hello_closes_at_the_handshake() {
    let mut server = ServerConnection::new(server_id(), any_call().max_pending_transmit(10));
    server.receive(&hello_frame(8));
    assert_eq!(
        server_events(&mut server),
        vec![
            ServerEvent::Closing { reason: CloseReason::TransmitQueueFull { limit: 10 } },
            ServerEvent::Closed { release: None }
        ]
    );
    assert_eq!(server.poll_transmit(), None);
}

#[test]
fn client_not_read_by_its_server_closes_at_the_transmit_cap() {
    let request = request_frame("req-1", server_target(), Payload::null()).len();
    let limit = hello_frame(8).len() + 2 * request + 1;
    let mut client = ClientConnection::new(ClientOptions::default().max_pending_transmit(limit));
    client.receive(&server_hello());
    client_events(&mut client);
    let a = client.request(CallTarget::Server, Payload::null()).unwrap();
    let b = client.request(CallTarget::Server, Payload::null()).unwrap();
    assert_eq!(client.request(CallTarget::Server, Payload::null()), Err(ConnectionError::Closed));
    assert!(!client.cancel(&a));
    assert_eq!(
        client_events(&mut client),
        vec![ClientEvent::Closed { reason: CloseReason::TransmitQueueFull { limit }, unsettled: vec![a, b] }]
    );
    assert_eq!(client.pending_transmit_len(), limit - 1);
    assert_eq!(client_messages(client.poll_transmit()).len(), 3);
}

#[test]
fn a_client_written_in_place_hands_its_frames_over_in_order() {
    let mut client = ClientConnection::new(ClientOptions::default());
    let hello = hello_frame(8);
    assert_eq!(client.pending_transmit(), &hello[..]);
    client.advance_transmit(5);
    assert_eq!(client.pending_transmit(), &hello[5..]);
    client.receive(&server_hello());
    client_events(&mut client);
    let id = client.request(CallTarget::Server, Payload::null()).unwrap();
    let request = request_frame(id.as_str(), server_target(), Payload::null());
    assert_eq!(client.pending_transmit(), &[&hello[5..], &request[..]].concat()[..]);
    client.advance_transmit(client.pending_transmit_len());
    assert_eq!(client.pending_transmit(), b"");
    assert_eq!(client.poll_transmit(), None);
}

#[test]
fn client_whose_output_is_drained_never_reaches_the_cap() {
    let request = request_frame("req-1", server_target(), Payload::null()).len();
    let mut client = ClientConnection::new(ClientOptions::default().max_pending_transmit(hello_frame(8).len()));
    client.poll_transmit().unwrap();
    client.receive(&server_hello());
    assert_eq!(client.request(CallTarget::Server, Payload::null()), Err(ConnectionError::Closed), "{request} > cap");

    // Room for one request with an id of up to three digits.
    let mut client = ClientConnection::new(ClientOptions::default().max_pending_transmit(request + 2));
    client.poll_transmit().unwrap();
    client.receive(&server_hello());
    for _ in 0..100 {
        let id = client.request(CallTarget::Server, Payload::null()).unwrap();
        client.poll_transmit().unwrap();
        assert!(client.cancel(&id), "the cancel is smaller than the request");
        client.poll_transmit().unwrap();
    }
    assert!(!client.is_closed());
}

#[test]
fn client_cap_below_its_hello_starts_closed() {
    let mut client = ClientConnection::new(ClientOptions::default().max_pending_transmit(14));
    assert!(client.is_closed());
    assert_eq!(client.poll_transmit(), None);
    assert_eq!(
        client_events(&mut client),
        vec![ClientEvent::Closed { reason: CloseReason::TransmitQueueFull { limit: 14 }, unsettled: vec![] }]
    );
}

// ---------------------------------------------------------------------------------------------
// Client and server together

#[test]
fn client_and_server_race_a_route_change_and_the_server_fences() {
    let mut client = ClientConnection::new(ClientOptions::default());
    let mut server = ServerConnection::new(server_id(), any_call());
    server.receive(&client.poll_transmit().unwrap());
    server.set_attachment(Some(route("att-01"))).unwrap();
    client.receive(&server.poll_transmit().unwrap());
    let id = client.request(CallTarget::Session, Payload::null()).unwrap();
    // The server re-attaches before the request arrives.
    server.set_attachment(Some(route("att-02"))).unwrap();
    server.receive(&client.poll_transmit().unwrap());
    client.receive(&server.poll_transmit().unwrap());
    let events = client_events(&mut client);
    assert_eq!(
        events.last(),
        Some(&ClientEvent::Response {
            id,
            result: Err(err("session_not_attached", "Session is not attached to this client"))
        })
    );
    assert_eq!(client.route(), Some(&route("att-02")));
    assert!(
        server_events(&mut server).contains(&ServerEvent::Fenced { id: rid("req-1"), reason: FenceReason::StaleRoute })
    );
}

// ---------------------------------------------------------------------------------------------
// Property test: random interleavings of a client and a server

#[derive(Debug, Clone)]
enum Step {
    /// The client makes a server call or a session call.
    Request { session: bool },
    /// The client cancels its n-th request (modulo the number made).
    Cancel(usize),
    /// The server application answers its n-th outstanding admitted request.
    Respond { pick: usize, ok: bool },
    /// The server publishes route `att-k`, or clears it.
    Attach(Option<u8>),
    /// Deliver up to n bytes of the client's output to the server.
    ToServer(usize),
    /// Deliver up to n bytes of the server's output to the client.
    ToClient(usize),
    /// The server's transport goes away.
    Disconnect,
    /// The client closes.
    Close,
}

fn step() -> impl Strategy<Value = Step> {
    // Closing is rare, so most runs get far before (if ever) one end goes away.
    prop_oneof![
        40 => any::<bool>().prop_map(|session| Step::Request { session }),
        20 => any::<usize>().prop_map(Step::Cancel),
        40 => (any::<usize>(), any::<bool>()).prop_map(|(pick, ok)| Step::Respond { pick, ok }),
        15 => proptest::option::of(0u8..3).prop_map(Step::Attach),
        40 => (1usize..200).prop_map(Step::ToServer),
        40 => (1usize..200).prop_map(Step::ToClient),
        1 => Just(Step::Disconnect),
        1 => Just(Step::Close),
    ]
}

/// The bytes one end wrote that the other has not read yet, and where the reading end stands in
/// the frames of the stream.
#[derive(Default)]
struct Pipe {
    queued: Vec<u8>,
    received: FrameCursor,
}

impl Pipe {
    fn write(&mut self, bytes: &[u8]) {
        self.queued.extend_from_slice(bytes);
    }

    /// Takes up to `n` bytes for the reading end.
    fn read(&mut self, n: usize) -> Vec<u8> {
        let chunk: Vec<u8> = self.queued.drain(..n.min(self.queued.len())).collect();
        self.received.feed(&chunk);
        chunk
    }

    /// What the reading end reports when the application closes it now.
    fn close_reason(&self) -> CloseReason {
        self.received.close_reason()
    }
}

/// The test's view of both ends, checking invariants as events arrive.
struct Harness {
    client: ClientConnection,
    server: ServerConnection,
    to_server: Pipe,
    to_client: Pipe,
    /// An independent decoder of the client's output, to check every frame that leaves.
    wire_client: ClientMessageDecoder,
    /// Client side: the route of the last `attachment` event.
    client_route: Option<SessionTarget>,
    /// Every request the client made, with how many times it settled.
    settled: HashMap<RequestId, usize>,
    made: Vec<RequestId>,
    unsettled_at_close: Option<Vec<RequestId>>,
    /// Server side: admitted requests the application has not answered, in order.
    outstanding: Vec<RequestId>,
    published_routes: HashSet<SessionTarget>,
    released: Option<Option<SessionTarget>>,
    server_closing: bool,
    /// Ids the server admitted, and ids it answered on the wire.
    admitted: HashSet<RequestId>,
}

impl Harness {
    fn new() -> Self {
        let mut client = ClientConnection::new(ClientOptions::default());
        let to_server = client.poll_transmit().unwrap();
        Harness {
            client,
            server: ServerConnection::new(server_id(), any_call()),
            to_server: Pipe::default(),
            to_client: Pipe::default(),
            wire_client: ClientMessageDecoder::new(),
            client_route: None,
            settled: HashMap::new(),
            made: Vec::new(),
            unsettled_at_close: None,
            outstanding: Vec::new(),
            published_routes: HashSet::new(),
            released: None,
            server_closing: false,
            admitted: HashSet::new(),
        }
        .with_output(to_server)
    }

    fn with_output(mut self, bytes: Vec<u8>) -> Self {
        self.check_client_output(&bytes);
        self.to_server.write(&bytes);
        self
    }

    /// Invariant: no session call leaves the client with a route other than the one it last
    /// saw, and every request and cancel names an id the client made.
    fn check_client_output(&mut self, bytes: &[u8]) {
        for message in self.wire_client.push(bytes) {
            match message.unwrap() {
                ClientMessage::Hello(hello) => assert_eq!(hello.version.get(), 8),
                ClientMessage::Request(request) => {
                    assert_eq!(self.made.last(), Some(&request.id), "a request leaves when it is made");
                    match &request.target {
                        RpcTarget::Session(target) => {
                            assert_eq!(Some(target), self.client_route.as_ref(), "stale route left the client")
                        }
                        RpcTarget::Server(target) => assert_eq!(target.server_id, server_id()),
                        other => panic!("the client made a target of no known shape: {other:?}"),
                    }
                }
                ClientMessage::Cancel(cancel) => assert!(self.made.contains(&cancel.id)),
                other => panic!("the client sent a message of no known type: {other:?}"),
            }
        }
    }

    fn drain_client(&mut self) {
        if let Some(bytes) = self.client.poll_transmit() {
            self.check_client_output(&bytes);
            self.to_server.write(&bytes);
        }
        while let Some(event) = self.client.poll_event() {
            assert!(self.unsettled_at_close.is_none(), "event after Closed: {event:?}");
            match event {
                ClientEvent::Ready { server_id: id } => assert_eq!(id, server_id()),
                ClientEvent::Response { id, .. } => {
                    let count = self.settled.get_mut(&id).expect("response for a request never made");
                    *count += 1;
                    assert_eq!(*count, 1, "request {id:?} settled twice");
                }
                ClientEvent::Attachment { route } => self.client_route = route,
                ClientEvent::Update { .. } => panic!("no updates in this test"),
                ClientEvent::Other(message) => panic!("the server sent a message of no known type: {message:?}"),
                ClientEvent::Closed { reason, unsettled } => {
                    assert_eq!(reason, self.to_client.close_reason(), "no violation between two correct ends");
                    for id in &unsettled {
                        assert_eq!(self.settled[id], 0, "closed lists a settled request");
                    }
                    self.unsettled_at_close = Some(unsettled);
                }
                other => panic!("an event this test does not know: {other:?}"),
            }
        }
    }

    fn drain_server(&mut self) {
        if let Some(bytes) = self.server.poll_transmit() {
            assert!(!self.server_closing, "bytes sent after closing");
            self.to_client.write(&bytes);
        }
        while let Some(event) = self.server.poll_event() {
            assert!(self.released.is_none(), "event after Closed: {event:?}");
            match event {
                ServerEvent::Ready => {}
                ServerEvent::Other(message) => panic!("the client sent a message of no known type: {message:?}"),
                ServerEvent::Request(request) => {
                    assert!(self.admitted.insert(request.id.clone()), "admitted twice");
                    self.outstanding.push(request.id);
                }
                ServerEvent::Cancel { id } => assert!(self.outstanding.contains(&id)),
                ServerEvent::Fenced { id, reason } => {
                    // Only a race with a route change can fence a correct client's request.
                    assert_eq!(reason, FenceReason::StaleRoute, "{id:?}");
                }
                ServerEvent::Closing { reason } => {
                    // No violation between two correct ends; a disconnect inside a frame
                    // reports the truncation.
                    assert_eq!(reason, self.to_server.close_reason());
                    self.server_closing = true;
                }
                ServerEvent::Closed { release } => {
                    // Invariant: release happens only after every admitted call settled.
                    assert!(self.server_closing);
                    assert!(self.outstanding.is_empty(), "released with calls in flight");
                    assert_eq!(self.server.in_flight_len(), 0);
                    if let Some(route) = &release {
                        assert!(self.published_routes.contains(route));
                    }
                    self.released = Some(release);
                }
                other => panic!("an event this test does not know: {other:?}"),
            }
        }
    }

    fn apply(&mut self, step: &Step) {
        match *step {
            Step::Request { session } => {
                let target = if session { CallTarget::Session } else { CallTarget::Server };
                match self.client.request(target, Payload::null()) {
                    Ok(id) => {
                        assert!(!self.settled.contains_key(&id), "id reused");
                        self.settled.insert(id.clone(), 0);
                        self.made.push(id);
                    }
                    Err(ConnectionError::NotReady) => assert!(!self.client.is_ready() && !self.client.is_closed()),
                    Err(ConnectionError::NoRoute) => assert!(session && self.client_route.is_none()),
                    Err(ConnectionError::Closed) => assert!(self.unsettled_at_close.is_some()),
                    Err(other) => panic!("unexpected {other:?}"),
                }
            }
            Step::Cancel(pick) => {
                if !self.made.is_empty() {
                    let id = self.made[pick % self.made.len()].clone();
                    let pending = self.client.is_pending(&id);
                    let queued = self.client.cancel(&id);
                    assert!(!queued || pending, "cancel queued for a settled request");
                }
            }
            Step::Respond { pick, ok } => {
                if !self.outstanding.is_empty() {
                    let id = self.outstanding.remove(pick % self.outstanding.len());
                    let result = if ok { Ok(Some(payload(json!(id.as_str())))) } else { Err(err("failed", "")) };
                    self.server.respond(&id, result).unwrap();
                    assert_eq!(self.server.respond(&id, Ok(None)), Err(ConnectionError::NotInFlight(id)));
                }
            }
            Step::Attach(k) => {
                let route = k.map(|k| route(&format!("att-{k}")));
                match self.server.set_attachment(route.clone()) {
                    Ok(()) => {
                        if let Some(route) = route {
                            self.published_routes.insert(route);
                        }
                    }
                    Err(ConnectionError::NotReady) => assert!(!self.server.is_ready() && !self.server_closing),
                    Err(ConnectionError::Closed) => assert!(self.released.is_some()),
                    Err(other) => panic!("unexpected {other:?}"),
                }
            }
            Step::ToServer(n) => {
                let chunk = self.to_server.read(n);
                self.server.receive(&chunk);
            }
            Step::ToClient(n) => {
                let chunk = self.to_client.read(n);
                self.client.receive(&chunk);
            }
            Step::Disconnect => self.server.disconnect(),
            Step::Close => self.client.close(),
        }
        self.drain_client();
        self.drain_server();
    }

    /// Lets everything in flight settle: the application answers every outstanding call, and
    /// all bytes are delivered, until nothing moves.
    fn settle(&mut self) {
        loop {
            let before = (self.to_server.queued.len(), self.to_client.queued.len(), self.outstanding.len());
            while !self.outstanding.is_empty() {
                self.apply(&Step::Respond { pick: 0, ok: true });
            }
            self.apply(&Step::ToServer(usize::MAX));
            self.apply(&Step::ToClient(usize::MAX));
            if before == (0, 0, 0) && self.to_server.queued.is_empty() && self.to_client.queued.is_empty() {
                break;
            }
        }
    }

    fn check_final(&mut self) {
        let server_gone = self.server_closing;
        let client_closed = self.unsettled_at_close.is_some();
        if !server_gone && !client_closed {
            // Both ends alive and every byte delivered: every request settled exactly once.
            for (id, count) in &self.settled {
                assert_eq!(*count, 1, "request {id:?} never settled");
            }
        }
        for (id, count) in &self.settled {
            let listed = self.unsettled_at_close.as_ref().is_some_and(|u| u.contains(id));
            assert!(*count + usize::from(listed) <= 1, "{id:?} settled and listed unsettled");
        }
        if server_gone {
            // Closing on the server always completes once the application answered everything.
            assert!(self.released.is_some(), "server closing never released");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn client_and_server_keep_the_invariants_under_any_interleaving(steps in proptest::collection::vec(step(), 0..120)) {
        let mut harness = Harness::new();
        for step in &steps {
            harness.apply(step);
        }
        harness.settle();
        harness.check_final();
    }
}

#[test]
fn close_reasons_and_violations_are_errors_with_their_cause_as_source() {
    use std::error::Error;
    let decode = ClientMessageDecoder::new().push(&[0, 0, 0, 1, 0xff]).remove(0).unwrap_err();
    let reason = CloseReason::Violation(Violation::Decode(decode.clone()));
    let violation = reason.source().expect("a violation is the cause");
    assert_eq!(violation.to_string(), decode.to_string());
    assert_eq!(violation.source().expect("the decode error is its cause").to_string(), decode.to_string());
    assert!(CloseReason::Local.source().is_none());
    assert!(Violation::ExpectedHello.source().is_none());
    let boxed: Box<dyn Error> = Box::new(CloseReason::TransmitQueueFull { limit: 9 });
    assert_eq!(boxed.to_string(), "more than 9 bytes would be waiting for the transport");
}

#[test]
fn server_respond_that_cannot_be_encoded_keeps_the_cancel_already_reported() {
    let codec = CodecOptions::new().max_frame_length(200).unwrap();
    let mut server = ready_server(any_call().codec(codec));
    server.receive(&request_frame("a", server_target(), Payload::null()));
    server.receive(&cancel_frame("a", server_target()));
    assert_eq!(server_events(&mut server).len(), 2, "the request and its cancel");
    let big = payload(json!("y".repeat(300)));
    assert!(matches!(server.respond(&rid("a"), Ok(Some(big))), Err(ConnectionError::Encode(_))));
    server.receive(&cancel_frame("a", server_target()));
    assert_eq!(server_events(&mut server), vec![], "the cancel is reported once, even across a failed answer");
}
