//! Reproduces the recorded session of `tests/captures/session-*.bin` with the sans-IO connection
//! layer: a `ServerConnection` fed the captured client stream answers with the captured server
//! stream byte for byte (fencing the stale-route call itself), and a `ClientConnection` fed the
//! captured server stream emits the captured client stream and reports the matching events.

use pi_protocol::connection::{
    CallTarget, ClientConnection, ClientEvent, ClientOptions, ServerConnection, ServerEvent, ServerOptions,
};
use pi_protocol::{
    encode_client_json, AttachmentId, CodecOptions, ErrorBody, ErrorCode, Payload, RequestId, ServerId, SessionId,
    SessionTarget, SubscriptionId,
};
use serde_json::Value;

fn repo_file(path: &str) -> Vec<u8> {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("cannot read {full}: {e}"))
}

fn jsonl(path: &str) -> Vec<Value> {
    String::from_utf8(repo_file(path))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Splits a byte stream into its frames (4-byte big-endian length, then the payload).
fn frames(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let length = u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
        out.push(bytes[..4 + length].to_vec());
        bytes = &bytes[4 + length..];
    }
    out
}

struct Capture {
    client_bin: Vec<u8>,
    server_bin: Vec<u8>,
    client: Vec<Value>,
    server: Vec<Value>,
}

fn capture() -> Capture {
    let capture = Capture {
        client_bin: repo_file("tests/captures/session-client.bin"),
        server_bin: repo_file("tests/captures/session-server.bin"),
        client: jsonl("tests/captures/session-client.jsonl"),
        server: jsonl("tests/captures/session-server.jsonl"),
    };
    assert_eq!(frames(&capture.client_bin).len(), capture.client.len());
    assert_eq!(frames(&capture.server_bin).len(), capture.server.len());
    capture
}

/// The server options the captures were recorded with: this project's first codes for a stale
/// route and an unsupported version (the defaults are now the reference server's, see
/// `ServerOptions`), and no service-call shape check (the captured calls include stand-ins).
fn captured_options() -> ServerOptions {
    ServerOptions::default()
        .stale_route(ErrorBody::new(
            ErrorCode::new("stale_attachment").unwrap(),
            "The attachment is no longer current".to_owned(),
        ))
        .unsupported_version(ErrorBody::new(
            ErrorCode::new("unsupported_version").unwrap(),
            "This server speaks protocol version 8".to_owned(),
        ))
        .invalid_call(None)
}

fn kind(message: &Value) -> &str {
    message["type"].as_str().unwrap()
}

fn id_of(message: &Value) -> RequestId {
    RequestId::new(message["id"].as_str().unwrap()).unwrap()
}

fn payload(value: &Value) -> Payload {
    Payload::from_value(value).unwrap()
}

fn error_body(value: &Value) -> ErrorBody {
    ErrorBody::new(
        ErrorCode::new(value["code"].as_str().unwrap()).unwrap(),
        value["message"].as_str().unwrap().to_owned(),
    )
}

fn session_target(value: &Value) -> Option<SessionTarget> {
    if value.is_null() {
        return None;
    }
    Some(SessionTarget::new(
        ServerId::new(value["serverId"].as_str().unwrap()).unwrap(),
        SessionId::new(value["sessionId"].as_str().unwrap()).unwrap(),
        AttachmentId::new(value["attachmentId"].as_str().unwrap()).unwrap(),
    ))
}

/// The outcome a captured `response` line carries.
fn result_of(response: &Value) -> Result<Option<Payload>, ErrorBody> {
    if response["ok"].as_bool().unwrap() {
        Ok(response.get("result").map(payload))
    } else {
        Err(error_body(&response["error"]))
    }
}

fn capture_server_id(capture: &Capture) -> ServerId {
    ServerId::new(capture.server[0]["serverId"].as_str().unwrap()).unwrap()
}

/// The server application of the capture: it replays the captured server lines in order,
/// answering each request when it is handled, and never answers a request the client later
/// cancels until the cancel arrives.
struct ServerApp<'a> {
    lines: &'a [Value],
    cursor: usize,
    cancelled_later: Vec<RequestId>,
}

impl ServerApp<'_> {
    /// Emits the captured lines up to and including the response to `id`.
    fn answer(&mut self, server: &mut ServerConnection, id: &RequestId) {
        loop {
            let line = &self.lines[self.cursor];
            self.cursor += 1;
            match kind(line) {
                "response" => {
                    assert_eq!(&id_of(line), id, "the capture answers requests in this order");
                    server.respond(id, result_of(line)).unwrap();
                    return;
                }
                "service_update" => {
                    let subscription = SubscriptionId::new(line["subscriptionId"].as_str().unwrap()).unwrap();
                    server.publish_update(subscription, payload(&line["update"])).unwrap();
                }
                "attachment" => server.set_attachment(session_target(&line["attachment"])).unwrap(),
                other => panic!("unexpected {other} while answering {id:?}"),
            }
        }
    }

    fn handle(&mut self, server: &mut ServerConnection, event: &ServerEvent) {
        match event {
            ServerEvent::Ready => {
                assert_eq!(kind(&self.lines[self.cursor]), "hello");
                self.cursor += 1;
            }
            ServerEvent::Request(request) if self.cancelled_later.contains(&request.id) => {}
            ServerEvent::Request(request) => self.answer(server, &request.id),
            ServerEvent::Cancel { id } => self.answer(server, id),
            ServerEvent::Fenced { id, .. } => {
                // The connection answered this one itself: the capture's next line is that answer.
                let line = &self.lines[self.cursor];
                assert_eq!((kind(line), id_of(line)), ("response", id.clone()));
                self.cursor += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn server_connection_reproduces_the_captured_server_stream() {
    let capture = capture();
    let server_id = capture_server_id(&capture);
    let cancelled_later = capture.client.iter().filter(|m| kind(m) == "cancel").map(id_of).collect::<Vec<_>>();
    assert_eq!(cancelled_later, vec![RequestId::new("req-6").unwrap()]);

    for chunk_size in [1, 7, 4096, usize::MAX] {
        let mut server = ServerConnection::new(server_id.clone(), captured_options());
        let mut app = ServerApp { lines: &capture.server, cursor: 0, cancelled_later: cancelled_later.clone() };
        let mut events = Vec::new();
        let mut out = Vec::new();
        // Frame by frame, as the client sent them: a client frame may depend on what the server
        // sent before it (req-4 follows the attachment), so the application runs after each.
        for frame in frames(&capture.client_bin) {
            for chunk in frame.chunks(chunk_size.min(frame.len())) {
                server.receive(chunk);
                while let Some(event) = server.poll_event() {
                    app.handle(&mut server, &event);
                    events.push(event);
                }
                out.extend(server.poll_transmit().unwrap_or_default());
            }
        }
        assert_eq!(app.cursor, capture.server.len(), "every captured server message was produced");

        // What the application saw: ten admitted requests, one cancel, one fenced call.
        let summary: Vec<String> = events
            .iter()
            .map(|e| match e {
                ServerEvent::Ready => "ready".to_owned(),
                ServerEvent::Request(r) => format!("request {}", r.id.as_str()),
                ServerEvent::Cancel { id } => format!("cancel {}", id.as_str()),
                ServerEvent::Fenced { id, reason } => format!("fenced {} {reason:?}", id.as_str()),
                other => format!("{other:?}"),
            })
            .collect();
        let expected = [
            "ready",
            "request req-1",
            "request req-2",
            "request req-3",
            "request req-4",
            "request req-5",
            "request req-6",
            "cancel req-6",
            "request req-7",
            "fenced req-8 StaleRoute",
            "request req-9",
            "request req-10",
            "request req-11",
        ];
        assert_eq!(summary, expected, "chunk size {chunk_size}");

        // The bytes on the wire are the capture's, frame for frame.
        let produced = frames(&out);
        let recorded = frames(&capture.server_bin);
        assert_eq!(produced.len(), recorded.len());
        for (i, (a, b)) in produced.iter().zip(&recorded).enumerate() {
            assert!(a == b, "server frame {i} ({}) differs from the capture", kind(&capture.server[i]));
        }
        assert_eq!(server.in_flight_len(), 0);
        // The session was detached at the end, so disconnecting releases nothing.
        server.disconnect();
        assert!(matches!(server.poll_event(), Some(ServerEvent::Closing { .. })));
        assert_eq!(server.poll_event(), Some(ServerEvent::Closed { release: None }));
    }
}

#[test]
fn server_connection_fences_the_stale_call_with_the_captured_error() {
    let capture = capture();
    let stale = capture.server.iter().find(|m| kind(m) == "response" && m["id"] == "req-8").unwrap();
    let defaults = captured_options();
    assert_eq!(result_of(stale), Err(defaults.stale_route.clone()));
    // And the call was on a route other than the one published.
    let published = capture.server.iter().find(|m| kind(m) == "attachment").unwrap();
    let call = capture.client.iter().find(|m| m["id"] == "req-8").unwrap();
    assert_ne!(session_target(&call["target"]), session_target(&published["attachment"]));
    assert_eq!(call["target"]["attachmentId"], "att-stale");
}

/// Index of the last client message a captured server frame depends on: a response needs its
/// request, and its cancel if there is one; anything else only needs what came before it.
fn gate(client: &[Value], server_line: &Value) -> usize {
    if kind(server_line) != "response" {
        return 0;
    }
    client.iter().rposition(|m| m["id"] == server_line["id"]).unwrap()
}

/// The client event a captured server line should produce.
fn expected_event(line: &Value) -> ClientEvent {
    match kind(line) {
        "hello" => ClientEvent::Ready { server_id: ServerId::new(line["serverId"].as_str().unwrap()).unwrap() },
        "response" => ClientEvent::Response { id: id_of(line), result: result_of(line) },
        "service_update" => ClientEvent::Update {
            subscription_id: SubscriptionId::new(line["subscriptionId"].as_str().unwrap()).unwrap(),
            update: payload(&line["update"]),
        },
        "attachment" => ClientEvent::Attachment { route: session_target(&line["attachment"]) },
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn client_connection_reproduces_the_captured_client_stream() {
    let capture = capture();
    let client_frames = frames(&capture.client_bin);
    let server_frames = frames(&capture.server_bin);
    let mut client = ClientConnection::new(ClientOptions::default());
    assert_eq!(client.poll_transmit().unwrap(), client_frames[0], "hello");

    let mut fed = 0;
    let mut events = Vec::new();
    let mut stale_call_rerouted = false;
    for (i, message) in capture.client.iter().enumerate().skip(1) {
        // Deliver every server frame whose prerequisites the client has already sent.
        while fed < server_frames.len() && gate(&capture.client, &capture.server[fed]) < i {
            client.receive(&server_frames[fed]);
            fed += 1;
        }
        events.extend(std::iter::from_fn(|| client.poll_event()));
        let mut expected_frame = client_frames[i].clone();
        match kind(message) {
            "request" => {
                let target =
                    if message["target"].get("sessionId").is_some() { CallTarget::Session } else { CallTarget::Server };
                let id = client.request(target, payload(&message["call"])).unwrap();
                assert_eq!(id, id_of(message), "ids are assigned in the capture's order");
                if target == CallTarget::Session {
                    let route = client.route().unwrap().clone();
                    if session_target(&message["target"]).as_ref() != Some(&route) {
                        // The captured call used a stale route; this client can only send the
                        // current one, and that is the only difference.
                        let mut rerouted = message.clone();
                        rerouted["target"]["attachmentId"] = Value::from(route.attachment_id.as_str());
                        expected_frame = encode_client_json(&rerouted, &CodecOptions::default()).unwrap();
                        stale_call_rerouted = true;
                    }
                }
            }
            "cancel" => assert!(client.cancel(&id_of(message))),
            other => panic!("unexpected client message {other}"),
        }
        let sent = client.poll_transmit().unwrap();
        assert!(sent == expected_frame, "client frame {i} ({}) differs from the capture", kind(message));
    }
    assert!(stale_call_rerouted, "the capture's stale call (req-8) was met");
    for frame in &server_frames[fed..] {
        client.receive(frame);
    }
    events.extend(std::iter::from_fn(|| client.poll_event()));

    // Each captured server message became its event, in order; every request settled once.
    let expected: Vec<ClientEvent> = capture.server.iter().map(expected_event).collect();
    assert_eq!(events.len(), expected.len());
    for (i, (got, want)) in events.iter().zip(&expected).enumerate() {
        assert!(got == want, "event {i}: {got:?} != {want:?}");
    }
    assert_eq!(client.pending_len(), 0);
    assert_eq!(client.route(), None, "detached at the end");
    assert!(!client.is_closed());
    let stale = events.iter().find_map(|e| match e {
        ClientEvent::Response { id, result: Err(error) } if id.as_str() == "req-8" => Some(error.code.as_str()),
        _ => None,
    });
    assert_eq!(stale, Some("stale_attachment"));
}

#[test]
fn handshake_rejection_capture_is_reproduced_by_both_ends() {
    let client_bin = repo_file("tests/captures/handshake-rejected-client.bin");
    let server_bin = repo_file("tests/captures/handshake-rejected-server.bin");
    let server_line = &jsonl("tests/captures/handshake-rejected-server.jsonl")[0];

    let mut client = ClientConnection::new(ClientOptions::default().version(7));
    assert_eq!(client.poll_transmit().unwrap(), client_bin);
    let mut server =
        ServerConnection::new(ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962").unwrap(), captured_options());
    server.receive(&client_bin);
    assert_eq!(server.poll_transmit().unwrap(), server_bin);
    assert!(server.is_closed());

    client.receive(&server_bin);
    match client.poll_event() {
        Some(ClientEvent::Closed { reason: pi_protocol::CloseReason::Rejected(error), unsettled }) => {
            assert_eq!(error, error_body(&server_line["error"]));
            assert!(unsettled.is_empty());
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
}
