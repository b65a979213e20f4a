//! `pi_protocol::client::Client` against in-process servers over `tokio::io::duplex`, Unix
//! sockets and TCP: requests and errors, cancels (on drop and explicit), Session calls and the
//! attachment watch, update streams and their byte bound, the three ways a connection ends,
//! reconnecting, and the handshake's checks.
#![cfg(feature = "tokio")]

mod client_support;

use std::time::Duration;

use client_support::{duplex_server, error, next_seen, other_id, server_id, Seen, TempDir};
use pi_protocol::client::{
    service_call, CancellationToken, Client, ConnectError, ConnectionState, RequestError, UpdatesError,
};
use pi_protocol::connection::{CallTarget, CloseReason, Violation};
use pi_protocol::{
    encode_server_message, AttachmentId, ClientOptions, RpcTarget, ServerHello, ServerHelloError, ServerMessage,
    SessionId, SessionTarget, SubscriptionId,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn call(service: &str, member: &str, args: serde_json::Value) -> pi_protocol::Payload {
    service_call(service, member, args).unwrap()
}

async fn connected() -> (Client, tokio::sync::mpsc::UnboundedReceiver<Seen>) {
    let (io, seen) = duplex_server();
    (Client::connect_stream(io, server_id()).await.unwrap(), seen)
}

fn is_request(seen: &Seen) -> bool {
    matches!(seen, Seen::Request { .. })
}

#[tokio::test]
async fn a_request_returns_the_result_and_a_server_error_its_code_and_message() {
    let (client, _seen) = connected().await;
    assert_eq!(client.server_id(), Some(server_id()));
    let result = client.request(CallTarget::Server, call("demo.echo", "echo", json!([1, "a"]))).await.unwrap();
    assert_eq!(result.map(|p| p.to_value()), Some(json!({"echo": [1, "a"]})));
    let failed = client.request(CallTarget::Server, call("demo.fail", "fail", json!([]))).await;
    assert_eq!(failed, Err(RequestError::Server(error("boom", "it broke"))));
    assert_eq!(failed.unwrap_err().to_string(), "the server answered boom: it broke");
    // `null` result: `Ok(None)`.
    assert_eq!(client.request(CallTarget::Server, call("pi.session-management", "detach", json!([]))).await, Ok(None));
}

#[tokio::test]
async fn clones_share_the_connection_and_calls_run_concurrently() {
    let (client, _seen) = connected().await;
    let other = client.clone();
    let slow =
        tokio::spawn(async move { other.request(CallTarget::Server, call("demo.slow", "wait", json!([50]))).await });
    let quick = client.request(CallTarget::Server, call("demo.echo", "echo", json!(["q"]))).await.unwrap();
    assert_eq!(quick.map(|p| p.to_value()), Some(json!({"echo": ["q"]})));
    assert_eq!(slow.await.unwrap().unwrap().map(|p| p.to_value()), Some(json!({"waitedMs": 50})));
}

#[tokio::test]
async fn dropping_the_request_future_sends_cancel_with_the_request_id() {
    let (client, mut seen) = connected().await;
    let waited = tokio::time::timeout(
        Duration::from_millis(50),
        client.request(CallTarget::Server, call("demo.slow", "wait", json!([60_000]))),
    )
    .await;
    assert!(waited.is_err(), "the wait is still pending when the future is dropped");
    let Seen::Request { id, .. } = next_seen(&mut seen, is_request).await else { unreachable!() };
    let cancel = next_seen(&mut seen, |s| matches!(s, Seen::Cancel { .. })).await;
    assert_eq!(cancel, Seen::Cancel { conn: 1, id });
    // The late `cancelled` answer is dropped; the connection goes on.
    let echo = client.request(CallTarget::Server, call("demo.echo", "echo", json!([]))).await.unwrap();
    assert_eq!(echo.map(|p| p.to_value()), Some(json!({"echo": []})));
}

#[tokio::test]
async fn an_explicit_cancel_fails_the_call_at_once_and_sends_cancel() {
    let (client, mut seen) = connected().await;
    let token = CancellationToken::new();
    let cancel = token.clone();
    let calling = {
        let client = client.clone();
        tokio::spawn(async move {
            client.request_with_cancel(CallTarget::Server, call("demo.slow", "wait", json!([60_000])), &token).await
        })
    };
    let Seen::Request { id, .. } = next_seen(&mut seen, is_request).await else { unreachable!() };
    cancel.cancel();
    assert_eq!(calling.await.unwrap(), Err(RequestError::Cancelled));
    assert_eq!(next_seen(&mut seen, |s| matches!(s, Seen::Cancel { .. })).await, Seen::Cancel { conn: 1, id });
    // A token cancelled before the call sends nothing.
    let early = client.request_with_cancel(CallTarget::Server, call("demo.echo", "echo", json!([])), &cancel).await;
    assert_eq!(early, Err(RequestError::Cancelled));
    client.request(CallTarget::Server, call("demo.echo", "echo", json!(["after"]))).await.unwrap();
    let Seen::Request { call: next, .. } = next_seen(&mut seen, is_request).await else { unreachable!() };
    assert_eq!(next["args"], json!(["after"]), "the pre-cancelled call never reached the server");
}

#[tokio::test]
async fn session_calls_follow_the_attachment_and_the_watch_sees_each_change() {
    let (client, mut seen) = connected().await;
    let mut watch = client.watch_attachment();
    assert_eq!(*watch.borrow_and_update(), None);
    let refused = client.request(CallTarget::Session, call("session", "prompt", json!([]))).await;
    assert_eq!(refused, Err(RequestError::NoAttachment));

    let route = client.attach("session-1").await.unwrap();
    let expected =
        SessionTarget::new(server_id(), SessionId::new("session-1").unwrap(), AttachmentId::new("att-1-1").unwrap());
    assert_eq!(route, expected);
    assert!(watch.has_changed().unwrap());
    assert_eq!(*watch.borrow_and_update(), Some(expected.clone()));
    assert_eq!(client.attachment(), Some(expected.clone()));

    let answer = client.request(CallTarget::Session, call("session", "prompt", json!(["go"]))).await.unwrap();
    assert_eq!(answer.map(|p| p.to_value()), Some(json!({"ok": true, "session": "session-1"})));
    let targets: Vec<RpcTarget> = std::iter::from_fn(|| seen.try_recv().ok())
        .filter_map(|s| match s {
            Seen::Request { target, .. } => Some(target),
            _ => None,
        })
        .collect();
    assert_eq!(targets.last(), Some(&RpcTarget::Session(expected)));

    let unknown = client.attach("session-9").await;
    assert_eq!(unknown, Err(RequestError::Server(error("session_not_found", "No such session"))));
    client.detach().await.unwrap();
    assert_eq!(*watch.borrow_and_update(), None);
    assert_eq!(client.request(CallTarget::Session, call("s", "m", json!([]))).await, Err(RequestError::NoAttachment));
}

#[tokio::test]
async fn updates_arrive_on_their_subscription_stream_in_order() {
    let (client, _seen) = connected().await;
    let mut updates = client.updates(SubscriptionId::new("sub-1").unwrap()).unwrap();
    let mut others = client.updates(SubscriptionId::new("sub-2").unwrap()).unwrap();
    client.request(CallTarget::Server, call("demo.flood", "flood", json!(["sub-1", 3, 4]))).await.unwrap();
    for n in 0..3 {
        let update = updates.next().await.unwrap().unwrap();
        assert_eq!(update.to_value(), json!({"n": n, "text": "xxxx"}));
    }
    assert_eq!(updates.buffered_bytes(), 0);
    assert_eq!(updates.subscription_id().as_str(), "sub-1");
    // Nothing for the other subscription; its stream ends with the connection.
    client.disconnect().await;
    assert_eq!(others.next().await, Some(Err(UpdatesError::Disconnected(CloseReason::Local))));
    assert_eq!(others.next().await, None);
    assert_eq!(updates.next().await, Some(Err(UpdatesError::Disconnected(CloseReason::Local))));
}

#[tokio::test]
async fn a_server_flooding_updates_ends_the_stream_at_its_byte_bound_and_the_connection_goes_on() {
    let (io, _seen) = duplex_server();
    let limit = 64 * 1024;
    let client =
        Client::builder().server_id(server_id()).max_buffered_update_bytes(limit).connect_stream(io).await.unwrap();
    let mut updates = client.updates(SubscriptionId::new("flood").unwrap()).unwrap();
    // 2,000 updates of about 1 KiB: 2 MB, thirty times the bound, none read meanwhile.
    client.request(CallTarget::Server, call("demo.flood", "flood", json!(["flood", 2000, 1000]))).await.unwrap();
    assert!(updates.buffered_bytes() <= limit, "{} > {limit}", updates.buffered_bytes());
    let mut delivered = 0;
    loop {
        match updates.next().await {
            Some(Ok(update)) => {
                assert_eq!(update.to_value()["n"], json!(delivered));
                delivered += 1;
            }
            Some(Err(error)) => {
                assert_eq!(error, UpdatesError::Overflow { limit });
                break;
            }
            None => panic!("the stream ended without saying why"),
        }
    }
    // What fits under the bound was kept: about 64 KiB / (1,016 + 64) bytes each.
    assert!((50..=64).contains(&delivered), "{delivered} updates delivered");
    assert_eq!(updates.next().await, None);
    assert!(client.is_connected());
    client.request(CallTarget::Server, call("demo.echo", "echo", json!([]))).await.unwrap();
}

#[tokio::test]
async fn a_peer_hang_up_fails_pending_calls_as_peer_closed() {
    let (client, mut seen) = connected().await;
    let pending = {
        let client = client.clone();
        tokio::spawn(
            async move { client.request(CallTarget::Server, call("demo.slow", "wait", json!([60_000]))).await },
        )
    };
    next_seen(&mut seen, is_request).await;
    let hangup = client.request(CallTarget::Server, call("demo.hangup", "hangup", json!([]))).await;
    assert_eq!(hangup, Err(RequestError::Disconnected(CloseReason::PeerClosed)));
    assert_eq!(pending.await.unwrap(), Err(RequestError::Disconnected(CloseReason::PeerClosed)));
    assert_eq!(client.closed().await, Some(CloseReason::PeerClosed));
    assert_eq!(client.state(), ConnectionState::Disconnected { reason: Some(CloseReason::PeerClosed) });
    assert_eq!(
        client.request(CallTarget::Server, call("demo.echo", "echo", json!([]))).await,
        Err(RequestError::NotConnected)
    );
}

#[tokio::test]
async fn a_local_disconnect_fails_pending_calls_as_local_and_clears_the_attachment() {
    let (client, mut seen) = connected().await;
    client.attach("session-2").await.unwrap();
    let mut watch = client.watch_attachment();
    watch.borrow_and_update();
    let pending = {
        let client = client.clone();
        tokio::spawn(
            async move { client.request(CallTarget::Server, call("demo.slow", "wait", json!([60_000]))).await },
        )
    };
    next_seen(&mut seen, |s| matches!(s, Seen::Request { call, .. } if call["serviceId"] == "demo.slow")).await;
    client.disconnect().await;
    assert_eq!(pending.await.unwrap(), Err(RequestError::Disconnected(CloseReason::Local)));
    assert_eq!(client.state(), ConnectionState::Disconnected { reason: Some(CloseReason::Local) });
    assert!(watch.has_changed().unwrap());
    assert_eq!(*watch.borrow(), None);
    assert_eq!(next_seen(&mut seen, |s| matches!(s, Seen::Closed { .. })).await, Seen::Closed { conn: 1 });
    client.disconnect().await; // nothing left to close
}

#[tokio::test]
async fn an_io_failure_fails_pending_calls_as_a_transport_error() {
    // A TCP server that resets the connection (linger 0) once the call arrived.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut hello = [0u8; 64];
        let _ = socket.read(&mut hello).await.unwrap();
        socket
            .write_all(&encode_server_message(&ServerMessage::Hello(ServerHello::new(server_id()))).unwrap())
            .await
            .unwrap();
        let mut request = [0u8; 256];
        let _ = socket.read(&mut request).await.unwrap();
        socket.set_zero_linger().unwrap();
        drop(socket);
    });
    let client = Client::connect_tcp(addr.to_string(), server_id()).await.unwrap();
    let failed = client.request(CallTarget::Server, call("demo.slow", "wait", json!([60_000]))).await;
    server.await.unwrap();
    match failed {
        Err(RequestError::Disconnected(CloseReason::Transport(error))) => {
            assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset)
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
    assert!(matches!(client.state(), ConnectionState::Disconnected { reason: Some(CloseReason::Transport(_)) }));
}

#[tokio::test]
async fn reconnect_opens_a_new_connection_and_replays_nothing() {
    let dir = TempDir::new("reconnect");
    let path = pi_protocol::io::unix::socket_path(dir.path(), &server_id());
    let (_server, mut seen) = client_support::unix_server(&path, server_id());
    // The socket's name gives the expected serverId.
    let client = Client::builder().connect_unix(&path).await.unwrap();
    assert!(matches!(client.reconnect().await, Err(ConnectError::AlreadyConnected)));
    let pending = {
        let client = client.clone();
        tokio::spawn(
            async move { client.request(CallTarget::Server, call("demo.slow", "wait", json!([60_000]))).await },
        )
    };
    next_seen(&mut seen, is_request).await;
    client.disconnect().await;
    assert_eq!(pending.await.unwrap(), Err(RequestError::Disconnected(CloseReason::Local)));
    assert_eq!(
        client.request(CallTarget::Server, call("demo.echo", "echo", json!([]))).await,
        Err(RequestError::NotConnected)
    );

    client.reconnect().await.unwrap();
    assert!(client.is_connected());
    client.request(CallTarget::Server, call("demo.echo", "echo", json!(["second"]))).await.unwrap();
    client.disconnect().await;
    let second: Vec<Seen> = std::iter::from_fn(|| seen.try_recv().ok())
        .filter(|s| matches!(s, Seen::Request { conn: 2, .. } | Seen::Cancel { conn: 2, .. }))
        .collect();
    assert_eq!(second.len(), 1, "only the new call reached the new connection: {second:?}");
    assert!(matches!(&second[0], Seen::Request { call, .. } if call["args"] == json!(["second"])));
}

#[tokio::test]
async fn a_client_over_one_stream_cannot_reconnect() {
    let (client, _seen) = connected().await;
    client.disconnect().await;
    assert!(matches!(client.reconnect().await, Err(ConnectError::NotReconnectable)));
}

#[tokio::test]
async fn connect_with_opens_a_fresh_stream_for_each_connection() {
    let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = opened.clone();
    let client = Client::builder()
        .server_id(server_id())
        .connect_with(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Ok(duplex_server().0) }
        })
        .await
        .unwrap();
    client.disconnect().await;
    client.reconnect().await.unwrap();
    assert_eq!(opened.load(std::sync::atomic::Ordering::SeqCst), 2);
    client.request(CallTarget::Server, call("demo.echo", "echo", json!([]))).await.unwrap();
}

#[tokio::test]
async fn a_hello_naming_another_server_fails_the_connect() {
    let (io, _seen) = duplex_server();
    match Client::connect_stream(io, other_id()).await {
        Err(ConnectError::ServerIdMismatch { expected, actual }) => {
            assert_eq!((expected, actual), (other_id(), server_id()));
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[tokio::test]
async fn a_refused_handshake_keeps_the_servers_code() {
    let (io, _seen) = duplex_server();
    let builder = Client::builder().server_id(server_id()).connection_options(ClientOptions::default().version(7));
    match builder.connect_stream(io).await {
        Err(ConnectError::Rejected(body)) => assert_eq!(body.code.as_str(), "version"),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_says_hello_times_the_connect_out() {
    let (io, _silent) = tokio::io::duplex(1024);
    let builder = Client::builder().server_id(server_id()).handshake_timeout(Duration::from_secs(3));
    let started = tokio::time::Instant::now();
    match builder.connect_stream(io).await {
        Err(ConnectError::Timeout(after)) => assert_eq!(after, Duration::from_secs(3)),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(started.elapsed(), Duration::from_secs(3));
}

/// A raw server: reads the client's hello, answers `hello`, reads one request, then writes
/// `then` and waits.
async fn raw_server(then: Vec<u8>) -> tokio::io::DuplexStream {
    let (client, mut server) = tokio::io::duplex(4096);
    tokio::spawn(async move {
        let length = server.read_u32().await.unwrap();
        server.read_exact(&mut vec![0; length as usize]).await.unwrap();
        server
            .write_all(&encode_server_message(&ServerMessage::Hello(ServerHello::new(server_id()))).unwrap())
            .await
            .unwrap();
        let length = server.read_u32().await.unwrap();
        server.read_exact(&mut vec![0; length as usize]).await.unwrap();
        server.write_all(&then).await.unwrap();
        let mut rest = Vec::new();
        let _ = server.read_to_end(&mut rest).await;
    });
    client
}

#[tokio::test]
async fn a_hello_error_after_the_handshake_fails_pending_calls_with_its_code_and_message() {
    let body = error("invalid_request", "Invalid protocol frame");
    let io =
        raw_server(encode_server_message(&ServerMessage::HelloError(ServerHelloError::new(body.clone()))).unwrap())
            .await;
    let client = Client::connect_stream(io, server_id()).await.unwrap();
    let failed = client.request(CallTarget::Server, call("demo.echo", "echo", json!([]))).await;
    assert_eq!(failed, Err(RequestError::Disconnected(CloseReason::HelloError(body))));
}

#[tokio::test]
async fn an_attachment_naming_another_server_ends_the_connection() {
    let foreign = SessionTarget::new(other_id(), SessionId::new("s").unwrap(), AttachmentId::new("a").unwrap());
    let frame = encode_server_message(&ServerMessage::Attachment(pi_protocol::Attachment::new(Some(foreign)))).unwrap();
    let client = Client::connect_stream(raw_server(frame).await, server_id()).await.unwrap();
    let failed = client.request(CallTarget::Server, call("demo.echo", "echo", json!([]))).await;
    assert_eq!(
        failed,
        Err(RequestError::Disconnected(CloseReason::Violation(Violation::ForeignAttachment(other_id()))))
    );
    assert_eq!(client.attachment(), None);
}

#[tokio::test]
async fn dropping_every_handle_closes_the_connection() {
    let (client, mut seen) = connected().await;
    client.request(CallTarget::Server, call("demo.echo", "echo", json!([]))).await.unwrap();
    drop(client);
    assert_eq!(next_seen(&mut seen, |s| matches!(s, Seen::Closed { .. })).await, Seen::Closed { conn: 1 });
}

#[tokio::test]
async fn a_call_beyond_the_frame_limit_is_refused_locally_and_the_connection_goes_on() {
    let (io, mut seen) = duplex_server();
    let codec = pi_protocol::CodecOptions::default().max_frame_length(1024).unwrap();
    let builder = Client::builder().server_id(server_id()).connection_options(ClientOptions::default().codec(codec));
    let client = builder.connect_stream(io).await.unwrap();
    let big = call("demo.echo", "echo", json!(["x".repeat(2000)]));
    match client.request(CallTarget::Server, big).await {
        Err(RequestError::Encode(error)) => assert_eq!(error.kind(), pi_protocol::ErrorKind::Encode),
        other => panic!("expected an encode error, got {other:?}"),
    }
    client.request(CallTarget::Server, call("demo.echo", "echo", json!(["small"]))).await.unwrap();
    let Seen::Request { call: first, .. } = next_seen(&mut seen, is_request).await else { unreachable!() };
    assert_eq!(first["args"], json!(["small"]), "the refused call never reached the server");
}

#[tokio::test(start_paused = true)]
async fn a_server_that_stops_reading_cannot_hold_disconnect_past_the_shutdown_timeout() {
    // The server answers the handshake, then never reads: a large call stays queued.
    let (io, mut server) = tokio::io::duplex(1024);
    let holder = tokio::spawn(async move {
        let length = server.read_u32().await.unwrap();
        server.read_exact(&mut vec![0; length as usize]).await.unwrap();
        server
            .write_all(&encode_server_message(&ServerMessage::Hello(ServerHello::new(server_id()))).unwrap())
            .await
            .unwrap();
        std::future::pending::<()>().await;
        drop(server);
    });
    let builder = Client::builder().server_id(server_id()).shutdown_timeout(Duration::from_secs(2));
    let client = builder.connect_stream(io).await.unwrap();
    let stuck = {
        let client = client.clone();
        tokio::spawn(async move {
            client.request(CallTarget::Server, call("demo.echo", "echo", json!(["x".repeat(100_000)]))).await
        })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    let started = tokio::time::Instant::now();
    client.disconnect().await;
    assert_eq!(started.elapsed(), Duration::from_secs(2), "disconnect gave up at the shutdown timeout");
    assert_eq!(stuck.await.unwrap(), Err(RequestError::Disconnected(CloseReason::Local)));
    holder.abort();
}
