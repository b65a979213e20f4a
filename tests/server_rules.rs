//! The reference server's rules in the sans-IO `ServerConnection` (issue 22 point 2, issue 18
//! point 1; docs/PROTOCOL.md section 8): the handshake deadline on an explicit clock, the
//! pre-hello frame limit, `hello_error` before closing on every violation, the reference's codes
//! and messages, the service-call shape check before the `serverId` fence, and the bytes of ids
//! held for calls in flight.

use std::time::{Duration, Instant};

use pi_protocol::connection::{
    CloseReason, Deadline, FenceReason, ServerConnection, ServerEvent, ServerOptions, Violation,
    DEFAULT_MAX_HELLO_FRAME_LENGTH,
};
use pi_protocol::{
    encode_client_message, ClientHello, ClientMessage, ErrorBody, ErrorCode, Payload, Request, RequestId, RpcTarget,
    ServerId, ServerMessage, ServerMessageDecoder, ServerTarget,
};
use serde_json::json;

const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
const OTHER: &str = "9c858901-8a57-4791-81fe-4c455b099bc9";

fn sid(s: &str) -> ServerId {
    ServerId::new(s).unwrap()
}

fn body(code: &str, message: &str) -> ErrorBody {
    ErrorBody::new(ErrorCode::new(code).unwrap(), message.to_owned())
}

fn hello(version: u32) -> Vec<u8> {
    encode_client_message(&ClientMessage::Hello(ClientHello::new(version))).unwrap()
}

fn call() -> Payload {
    Payload::from_value(&json!({"serviceId": "demo.echo", "member": "echo", "args": [1]})).unwrap()
}

fn request(id: &str, server: &str, call: Payload) -> Vec<u8> {
    let target = RpcTarget::Server(ServerTarget::new(sid(server)));
    encode_client_message(&ClientMessage::Request(Request::new(RequestId::new(id).unwrap(), target, call))).unwrap()
}

fn events(server: &mut ServerConnection) -> Vec<ServerEvent> {
    std::iter::from_fn(|| server.poll_event()).collect()
}

fn sent(server: &mut ServerConnection) -> Vec<ServerMessage> {
    let Some(bytes) = server.poll_transmit() else { return Vec::new() };
    let mut decoder = ServerMessageDecoder::new();
    decoder.push(&bytes).into_iter().map(Result::unwrap).collect()
}

fn hello_error(code: &str, message: &str) -> ServerMessage {
    ServerMessage::HelloError(pi_protocol::ServerHelloError::new(body(code, message)))
}

fn error_response(id: &str, code: &str, message: &str) -> ServerMessage {
    ServerMessage::Response(pi_protocol::Response::failure(RequestId::new(id).unwrap(), body(code, message)))
}

fn ready(options: ServerOptions) -> ServerConnection {
    let mut server = ServerConnection::new(sid(SERVER), options);
    server.receive(&hello(8));
    assert_eq!(events(&mut server), vec![ServerEvent::Ready]);
    server.poll_transmit().unwrap();
    server
}

#[test]
fn the_defaults_are_the_reference_servers() {
    let options = ServerOptions::default();
    assert_eq!(options.handshake_timeout, Some(Duration::from_secs(5)));
    assert_eq!(options.handshake_timeout_error, body("invalid_request", "Handshake timeout"));
    assert_eq!(options.max_hello_frame_length, 1024);
    assert_eq!(DEFAULT_MAX_HELLO_FRAME_LENGTH, 1024);
    assert_eq!(options.stale_route, body("session_not_attached", "Session is not attached to this client"));
    assert_eq!(options.duplicate_id, body("invalid_request", "Request ID is already active"));
    assert_eq!(options.wrong_server, body("wrong_server", "Request was addressed to another server"));
    assert_eq!(options.invalid_call, Some(body("invalid_request", "Invalid service call")));
    assert_eq!(options.max_in_flight_id_bytes, 1 << 20);
    assert!(options.hello_error_on_violation);
}

#[test]
fn no_hello_within_the_deadline_is_answered_with_hello_error_then_closed() {
    let start = Instant::now();
    let mut server = ServerConnection::new_at(sid(SERVER), ServerOptions::default(), start);
    assert_eq!(server.poll_timeout(), Some(start + Duration::from_secs(5)));
    // Early: nothing happens.
    server.handle_timeout(start + Duration::from_millis(4_999));
    assert_eq!(events(&mut server), vec![]);
    assert_eq!(server.poll_transmit(), None);
    // Three bytes of a header do not stop the clock.
    server.receive(&hello(8)[..3]);
    server.handle_timeout(start + Duration::from_secs(5));
    assert_eq!(
        events(&mut server),
        vec![
            ServerEvent::Closing { reason: CloseReason::Timeout(Deadline::Handshake) },
            ServerEvent::Closed { release: None }
        ]
    );
    assert_eq!(sent(&mut server), vec![hello_error("invalid_request", "Handshake timeout")]);
    assert_eq!(server.poll_timeout(), None);
}

#[test]
fn a_hello_in_time_disarms_the_deadline_and_none_disables_it() {
    let start = Instant::now();
    let mut server = ServerConnection::new_at(sid(SERVER), ServerOptions::default(), start);
    server.receive(&hello(8));
    assert_eq!(server.poll_timeout(), None);
    server.handle_timeout(start + Duration::from_secs(60));
    assert_eq!(events(&mut server), vec![ServerEvent::Ready]);
    let server = ServerConnection::new_at(sid(SERVER), ServerOptions::default().handshake_timeout(None), start);
    assert_eq!(server.poll_timeout(), None);
}

#[test]
fn a_first_frame_header_past_the_pre_hello_limit_is_refused_at_once() {
    let mut server = ServerConnection::new(sid(SERVER), ServerOptions::default());
    // A 16 MiB header, in two pieces: refused as its fourth byte arrives, no body buffered.
    server.receive(&[0x01, 0x00]);
    assert_eq!(events(&mut server), vec![]);
    server.receive(&[0x00, 0x00, 0xa0, 0xa0]);
    let events = events(&mut server);
    assert!(
        matches!(&events[0], ServerEvent::Closing { reason: CloseReason::Violation(Violation::Decode(e)) }
            if e.rule() == pi_protocol::Rule::FrameTooLong { length: 16 << 20, limit: 1024 }),
        "{events:?}"
    );
    assert!(sent_len(&mut server) > 0, "the hello_error");
    assert!(server.held_bytes() <= 16, "no byte of the announced frame is held: {}", server.held_bytes());
    // A frame of exactly the limit is read (and refused only for not being a hello).
    let mut server = ServerConnection::new(sid(SERVER), ServerOptions::default().max_hello_frame_length(4));
    server.receive(&[0, 0, 0, 4]);
    assert_eq!(server.poll_event(), None);
}

fn sent_len(server: &mut ServerConnection) -> usize {
    server.poll_transmit().map_or(0, |b| b.len())
}

#[test]
fn violations_are_answered_with_hello_error_before_closing() {
    // A request before hello.
    let mut server = ServerConnection::new(sid(SERVER), ServerOptions::default());
    server.receive(&request("r1", SERVER, call()));
    assert_eq!(sent(&mut server), vec![hello_error("invalid_request", "The first client message must be hello")]);
    assert!(server.is_closed());
    // A second hello.
    let mut server = ready(ServerOptions::default());
    server.receive(&hello(8));
    assert_eq!(sent(&mut server), vec![hello_error("invalid_request", "hello may only be sent as the first message")]);
    // A malformed frame: "Invalid client protocol frame: " and what is wrong.
    let mut server = ready(ServerOptions::default());
    server.receive(&[0, 0, 0, 1, 0xff]);
    let messages = sent(&mut server);
    let [ServerMessage::HelloError(refusal)] = &messages[..] else { panic!("{messages:?}") };
    assert_eq!(refusal.error.code.as_str(), "invalid_request");
    assert!(refusal.error.message.starts_with("Invalid client protocol frame: "), "{}", refusal.error.message);
    // A header past the frame limit, in the reference's words.
    let mut server = ready(ServerOptions::default());
    server.receive(&0x0100_0001u32.to_be_bytes());
    assert_refused_as_sent(&mut server, "Frame length 16777217 exceeds configured limit of 16777216");
    // CBOR that is no client message.
    let mut server = ready(ServerOptions::default());
    let ping = pi_protocol::Payload::from_value(&json!({"type": "ping"})).unwrap();
    let mut frame = (ping.as_cbor().len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(ping.as_cbor());
    server.receive(&frame);
    assert_eq!(sent(&mut server), vec![hello_error("invalid_request", "Invalid client protocol message")]);
    // Off: closes silently.
    let mut server = ready(ServerOptions::default().hello_error_on_violation(false));
    server.receive(&hello(8));
    assert_eq!(sent(&mut server), vec![]);
    assert!(server.is_closed());
}

#[test]
fn an_unsupported_version_is_named_in_the_message() {
    let mut server = ServerConnection::new(sid(SERVER), ServerOptions::default());
    server.receive(&hello(7));
    assert_eq!(sent(&mut server), vec![hello_error("version", "Unsupported protocol version 7; expected 8")]);
    let options = ServerOptions::default().unsupported_version(body("v", "no {version}, {version}!"));
    let mut server = ServerConnection::new(sid(SERVER), options);
    server.receive(&hello(9));
    assert_eq!(sent(&mut server), vec![hello_error("v", "no 9, 9!")]);
}

#[test]
fn a_duplicate_id_is_refused_and_the_first_call_still_answered() {
    let mut server = ready(ServerOptions::default());
    server.receive(&request("r1", SERVER, call()));
    server.receive(&request("r1", SERVER, call()));
    let events = events(&mut server);
    assert!(matches!(&events[0], ServerEvent::Request(r) if r.id.as_str() == "r1"));
    assert_eq!(events[1], ServerEvent::Fenced { id: RequestId::new("r1").unwrap(), reason: FenceReason::DuplicateId });
    assert_eq!(sent(&mut server), vec![error_response("r1", "invalid_request", "Request ID is already active")]);
    server.respond(&RequestId::new("r1").unwrap(), Ok(None)).unwrap();
    assert_eq!(sent(&mut server).len(), 1);
}

#[test]
fn the_service_call_shape_is_checked_before_the_server_id() {
    let mut server = ready(ServerOptions::default());
    // Not a service call, and for another server: the shape wins.
    server.receive(&request("r1", OTHER, Payload::from_value(&json!([1])).unwrap()));
    server.receive(&request("r2", OTHER, call()));
    server.receive(&request("r3", SERVER, Payload::from_value(&json!({"serviceId": "s", "member": "m"})).unwrap()));
    assert_eq!(
        sent(&mut server),
        vec![
            error_response("r1", "invalid_request", "Invalid service call"),
            error_response("r2", "wrong_server", "Request was addressed to another server"),
            error_response("r3", "invalid_request", "Invalid service call"),
        ]
    );
    let fences: Vec<_> = events(&mut server)
        .into_iter()
        .map(|e| match e {
            ServerEvent::Fenced { reason, .. } => reason,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(fences, vec![FenceReason::InvalidCall, FenceReason::WrongServer, FenceReason::InvalidCall]);
}

#[test]
fn ids_held_for_calls_in_flight_are_counted_in_bytes() {
    let mut server = ready(ServerOptions::default().max_in_flight_id_bytes(100));
    let long = "i".repeat(60);
    server.receive(&request(&long, SERVER, call()));
    assert!(server.held_bytes() >= 60);
    // A second 60-byte id would hold 120 bytes: refused as too many requests.
    let second = "j".repeat(60);
    server.receive(&request(&second, SERVER, call()));
    let events = events(&mut server);
    assert_eq!(
        events[1],
        ServerEvent::Fenced { id: RequestId::new(second.clone()).unwrap(), reason: FenceReason::TooManyRequests }
    );
    // Once the first is answered, its bytes are free again.
    server.respond(&RequestId::new(long).unwrap(), Ok(None)).unwrap();
    server.receive(&request(&second, SERVER, call()));
    assert!(matches!(server.poll_event(), Some(ServerEvent::Request(_))));
}

#[test]
fn driver_deadlines_and_budgets_close_the_connection_and_drop_its_queue() {
    let mut server = ready(ServerOptions::default());
    server.receive(&request("r1", OTHER, call()));
    assert!(server.pending_transmit_len() > 0);
    server.timed_out(Deadline::Write);
    assert_eq!(server.pending_transmit_len(), 0);
    assert!(events(&mut server).contains(&ServerEvent::Closing { reason: CloseReason::Timeout(Deadline::Write) }));

    let mut server = ready(ServerOptions::default());
    server.receive(&request("r1", SERVER, call()));
    server.respond(&RequestId::new("r1").unwrap(), Ok(None)).unwrap();
    server.exceeded_budget(10);
    assert_eq!(server.pending_transmit_len(), 0);
    assert!(events(&mut server).contains(&ServerEvent::Closing { reason: CloseReason::BudgetExceeded { limit: 10 } }));
    // A partial frame is reported for the driver's frame deadline.
    let mut server = ready(ServerOptions::default());
    assert!(!server.receiving_frame());
    server.receive(&[0, 0, 0]);
    assert!(server.receiving_frame());
}

/// The `hello_error` a ready server sends for one frame carrying `payload`.
fn refusal_of(payload: &[u8]) -> ServerMessage {
    let mut server = ready(ServerOptions::default());
    let mut frame = (payload.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(payload);
    server.receive(&frame);
    let messages = sent(&mut server);
    assert!(server.is_closed());
    let [message] = &messages[..] else { panic!("one hello_error expected: {messages:?}") };
    message.clone()
}

/// Checks that `payload` is refused with the reference server's words: `Invalid client protocol
/// frame: ` and the reference decoder's text for that failure (docs/PROTOCOL.md section 6).
fn assert_refused_as(payload: &[u8], detail: &str) {
    assert_eq!(refusal_of(payload), frame_refusal(detail), "payload {payload:02x?}");
}

/// The `hello_error` the reference server sends for a frame it cannot decode, `detail` being its
/// decoder's text.
fn frame_refusal(detail: &str) -> ServerMessage {
    hello_error("invalid_request", &format!("Invalid client protocol frame: {detail}"))
}

// One test for each text the reference decoder (`@earendil-works/pi-protocol` 0.85.1) words a
// CBOR failure with, and one for each of our rules the reference words by the item's major
// type (what real pi-server 0.85.1 sends, checked against it by tests/realpeer/run.sh part (c)).

#[test]
fn empty_payload_is_truncated() {
    assert_refused_as(&[], "Truncated CBOR payload");
    assert_refused_as(&[0xa1, 0x64, b't', b'y'], "Truncated CBOR payload");
}

#[test]
fn break_byte_is_the_break_marker() {
    assert_refused_as(&[0xff, 0xff, 0xff], "CBOR break marker is not supported");
}

#[test]
fn reserved_additional_information_is_malformed() {
    assert_refused_as(&[0x1c], "Malformed CBOR additional information");
    assert_refused_as(&[0x3d], "Malformed CBOR additional information");
    assert_refused_as(&[0xbe], "Malformed CBOR additional information");
}

#[test]
fn indefinite_integer_is_an_indefinite_item() {
    assert_refused_as(&[0x1f], "Indefinite-length CBOR items are not supported");
    assert_refused_as(&[0x3f], "Indefinite-length CBOR items are not supported");
}

#[test]
fn indefinite_strings_and_containers_name_their_kind() {
    assert_refused_as(&[0x5f], "Indefinite-length CBOR byte strings are not supported");
    assert_refused_as(&[0x7f], "Indefinite-length CBOR text strings are not supported");
    assert_refused_as(&[0x9f], "Indefinite-length CBOR arrays are not supported");
    assert_refused_as(&[0xbf], "Indefinite-length CBOR maps are not supported");
}

#[test]
fn every_tag_head_is_a_tag() {
    assert_refused_as(&[0xc0, 0x00], "CBOR tags are not supported");
    assert_refused_as(&[0xdc], "CBOR tags are not supported");
    assert_refused_as(&[0xdf], "CBOR tags are not supported");
}

#[test]
fn other_simple_values_are_unsupported() {
    assert_refused_as(&[0xf7], "Unsupported CBOR simple value or floating-point width");
    assert_refused_as(&[0xfa, 0, 0, 0, 0], "Unsupported CBOR simple value or floating-point width");
    assert_refused_as(&[0xfc], "Unsupported CBOR simple value or floating-point width");
    // The reference refuses these at the initial byte, before the bytes that should follow.
    assert_refused_as(&[0xf8], "Unsupported CBOR simple value or floating-point width");
    assert_refused_as(&[0xf9], "Unsupported CBOR simple value or floating-point width");
    assert_refused_as(&[0x81, 0xf8], "Unsupported CBOR simple value or floating-point width");
}

#[test]
fn an_argument_beyond_two_to_the_53_is_out_of_the_safe_range() {
    let wide = |initial: u8| [initial, 0x00, 0x20, 0, 0, 0, 0, 0, 0];
    for initial in [0x1b, 0x3b, 0x5b, 0x7b, 0x9b, 0xbb] {
        assert_refused_as(&wide(initial), "Decoded CBOR integer or length is outside the safe range");
    }
}

#[test]
fn an_unsafe_value_is_an_unsafe_integer() {
    // -2^53, and the float64 2^53.
    assert_refused_as(
        &[0x3b, 0x00, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        "Decoded CBOR integer is outside the safe range",
    );
    assert_refused_as(&[0xfb, 0x43, 0x40, 0, 0, 0, 0, 0, 0], "Decoded CBOR integer is outside the safe range");
}

#[test]
fn nan_is_not_finite() {
    assert_refused_as(&[0xfb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0], "Decoded CBOR number must be finite");
}

#[test]
fn a_number_key_is_not_a_string() {
    assert_refused_as(&[0xa1, 0x01, 0x01], "CBOR map keys must be strings");
}

#[test]
fn a_repeated_key_is_a_duplicate() {
    assert_refused_as(&[0xa2, 0x61, b'a', 0x01, 0x61, b'a', 0x02], "CBOR map contains a duplicate key");
    assert_refused_as(
        &[0xa2, 0x64, b't', b'y', b'p', b'e', 0x01, 0x64, b't', b'y', b'p', b'e', 0x02],
        "CBOR map contains a duplicate key",
    );
}

#[test]
fn bad_utf8_is_invalid_utf8() {
    assert_refused_as(&[0x61, 0xff], "CBOR text string contains invalid UTF-8");
}

#[test]
fn a_second_item_is_trailing_data() {
    assert_refused_as(&[0xf6, 0xf6], "CBOR payload contains trailing data");
}

#[test]
fn string_lengths_past_the_limit_name_their_kind() {
    assert_refused_as(&[0x5a, 0x01, 0x00, 0x00, 0x01], "CBOR byte string length exceeds configured limit of 16777216");
    assert_refused_as(&[0x7a, 0x01, 0x00, 0x00, 0x01], "CBOR text string length exceeds configured limit of 16777216");
}

#[test]
fn container_lengths_past_the_limit_name_their_kind() {
    assert_refused_as(&[0x9a, 0x00, 0x0f, 0x42, 0x41], "CBOR array length exceeds configured limit of 1000000");
    assert_refused_as(&[0xba, 0x00, 0x0f, 0x42, 0x41], "CBOR map length exceeds configured limit of 1000000");
}

#[test]
fn nesting_past_the_limit_is_the_depth_limit() {
    assert_refused_as(&[0x81; 70], "CBOR nesting depth exceeds configured limit of 64");
    // The reference checks the depth before it reads the item: also when no byte is left.
    assert_refused_as(&[0x81; 65], "CBOR nesting depth exceeds configured limit of 64");
    let mut maps = [0xa1, 0x61, b'k'].repeat(65);
    assert_refused_as(&maps, "CBOR nesting depth exceeds configured limit of 64");
    maps.truncate(64 * 3);
    assert_refused_as(&maps, "Truncated CBOR payload");
}

#[test]
fn the_three_realpeer_scenarios_get_the_reference_servers_words() {
    // scenarios.mjs malformed-frame, malformed-before-hello and empty-frame, with the messages
    // the real pi-server 0.85.1 sends (captured with tests/realpeer/run.sh part (c)).
    assert_refused_as(&[0xff, 0xff, 0xff], "CBOR break marker is not supported");
    assert_refused_as(&[], "Truncated CBOR payload");
    let mut server = ServerConnection::new(sid(SERVER), ServerOptions::default());
    server.receive(&[0, 0, 0, 1, 0x1c]);
    assert_refused_as_sent(&mut server, "Malformed CBOR additional information");
}

#[test]
fn a_header_past_the_limit_later_in_the_chunk_is_the_error() {
    // The reference splits every frame of a chunk before it decodes any: a frame that does not
    // decode, then a header over the limit in the same chunk, is refused for the header.
    let mut server = ready(ServerOptions::default());
    let mut chunk = vec![0, 0, 0, 1, 0x1c, 0, 0, 0, 1, 0xf6];
    chunk.extend_from_slice(&0x0100_0001u32.to_be_bytes());
    server.receive(&chunk);
    assert_refused_as_sent(&mut server, "Frame length 16777217 exceeds configured limit of 16777216");
    // In the next chunk, it is not looked at.
    let mut server = ready(ServerOptions::default());
    server.receive(&[0, 0, 0, 1, 0x1c]);
    server.receive(&0x0100_0001u32.to_be_bytes());
    assert_refused_as_sent(&mut server, "Malformed CBOR additional information");
}

fn assert_refused_as_sent(server: &mut ServerConnection, detail: &str) {
    assert_eq!(sent(server), vec![frame_refusal(detail)]);
}

#[test]
fn call_layouts_are_reported_only_when_asked_and_only_for_checked_calls() {
    let instance = json!({"serviceId": "demo.counter", "instance": {"key": "k-1", "generation": 2},
        "member": "bump", "args": [3, "x".repeat(60)]});
    let instance = Payload::from_value(&instance).unwrap();
    let mut server = ready(ServerOptions::default().report_call_layouts(true));
    server.receive(&request("1", SERVER, call()));
    server.receive(&request("2", SERVER, instance.clone()));
    // Not a service call: fenced as without the option.
    server.receive(&request("3", SERVER, Payload::from_value(&json!({"serviceId": "s"})).unwrap()));
    let seen = events(&mut server);
    let [ServerEvent::ServiceRequest { request: first, layout: plain }, ServerEvent::ServiceRequest { request: second, layout }, ServerEvent::Fenced { reason: FenceReason::InvalidCall, .. }] =
        &seen[..]
    else {
        panic!("two calls with their layouts, then the fence: {seen:?}")
    };
    assert_eq!((plain.service_id(&first.call), plain.member(&first.call)), (Some("demo.echo"), Some("echo")));
    assert_eq!(plain.args(&first.call), Some(Payload::from_value(&json!([1])).unwrap()));
    assert!(!plain.has_instance());
    assert_eq!((layout.service_id(&second.call), layout.member(&second.call)), (Some("demo.counter"), Some("bump")));
    assert_eq!(layout.args(&second.call), Some(Payload::from_value(&json!([3, "x".repeat(60)])).unwrap()));
    let address = Payload::from_value(&json!({"key": "k-1", "generation": 2})).unwrap();
    assert_eq!(layout.instance(&second.call), Some(address));
    // Another payload: the readers find nothing there, or something else, but never panic.
    assert_eq!(layout.service_id(&Payload::null()), None);
    assert_eq!(layout.args(&Payload::null()), None);

    // Without the check, or without the option: plain requests.
    for options in [ServerOptions::default(), ServerOptions::default().report_call_layouts(true).invalid_call(None)] {
        let mut server = ready(options);
        server.receive(&request("1", SERVER, call()));
        assert!(matches!(&events(&mut server)[..], [ServerEvent::Request(_)]));
    }
}
