//! The tokio driver of the sans-IO connections (`pi_protocol::io::Driver`): what it reads,
//! writes and reports over real byte streams (`tokio::io::duplex`, and streams of the tests' own
//! that count writes or fail), docs/PROTOCOL.md section 8.
#![cfg(feature = "tokio")]

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pi_protocol::connection::{CallTarget, ClientEvent, CloseReason, ServerEvent, Violation};
use pi_protocol::io::{ClientDriver, DriverOptions, ServerDriver, ServerMessageReader};
use pi_protocol::{
    encode_client_message, ClientConnection, ClientHello, ClientMessage, ClientOptions, Payload, Request, RequestId,
    Response, RpcTarget, Rule, ServerConnection, ServerId, ServerMessage, ServerOptions, ServerTarget,
};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf};

const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

fn server_id() -> ServerId {
    ServerId::new(SERVER).unwrap()
}

fn server_connection() -> ServerConnection {
    ServerConnection::new(server_id(), ServerOptions::default().invalid_call(None))
}

fn hello() -> Vec<u8> {
    encode_client_message(&ClientMessage::Hello(ClientHello::new(8u32))).unwrap()
}

fn request(n: usize) -> Vec<u8> {
    let call = Payload::from_value(&json!({"member": "echo", "args": [n, "a text long enough to be shared"]})).unwrap();
    let target = RpcTarget::Server(ServerTarget::new(server_id()));
    encode_client_message(&ClientMessage::Request(Request::new(
        RequestId::new(format!("r-{n}")).unwrap(),
        target,
        call,
    )))
    .unwrap()
}

/// Answers every request with its call until the driver is done; returns the events seen.
async fn echo_server<IO>(mut driver: ServerDriver<IO>) -> Vec<ServerEvent>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let mut events = Vec::new();
    while let Some(event) = driver.next_event().await {
        if let ServerEvent::Request(request) = &event {
            driver.connection_mut().respond(&request.id, Ok(Some(request.call.clone()))).unwrap();
        }
        events.push(event);
    }
    events
}

/// The server messages of a whole stream.
fn server_messages(bytes: &[u8]) -> Vec<ServerMessage> {
    let mut reader = ServerMessageReader::new(bytes);
    let mut messages = Vec::new();
    while let Some(message) = reader.read_message().unwrap() {
        messages.push(message);
    }
    messages
}

fn answered_ids(messages: &[ServerMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            ServerMessage::Response(Response::Success(s)) => Some(s.id.to_string()),
            _ => None,
        })
        .collect()
}

/// A stream over a duplex end that counts the writes it is asked for.
struct CountingWrites {
    inner: DuplexStream,
    writes: usize,
}

impl AsyncRead for CountingWrites {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for CountingWrites {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.writes += 1;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[tokio::test]
async fn the_answers_to_a_burst_of_requests_leave_in_one_write() {
    let (mut peer, server_io) = tokio::io::duplex(64 * 1024);
    let mut burst = hello();
    for n in 0..16 {
        burst.extend(request(n));
    }
    assert!(burst.len() < DriverOptions::default().read_chunk, "one read takes the whole burst");
    peer.write_all(&burst).await.unwrap();
    peer.shutdown().await.unwrap();

    let mut driver = ServerDriver::new(CountingWrites { inner: server_io, writes: 0 }, server_connection());
    let mut requests = 0;
    while let Some(event) = driver.next_event().await {
        if let ServerEvent::Request(request) = event {
            requests += 1;
            driver.connection_mut().respond(&request.id, Ok(None)).unwrap();
        }
    }
    assert_eq!(requests, 16);
    assert_eq!(driver.get_ref().writes, 1, "the hello and the 16 answers in one write");
    assert!(driver.io_error().is_none());

    let mut received = Vec::new();
    peer.read_to_end(&mut received).await.unwrap();
    let messages = server_messages(&received);
    assert!(matches!(messages[0], ServerMessage::Hello(_)));
    assert_eq!(answered_ids(&messages), (0..16).map(|n| format!("r-{n}")).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_stream_dribbled_one_byte_at_a_time_both_ways() {
    // A pipe of one byte: every read and every write of both sides moves a single byte.
    let (client_io, server_io) = tokio::io::duplex(1);
    let server = tokio::spawn(echo_server(ServerDriver::new(server_io, server_connection())));
    let options = DriverOptions::default().read_chunk(1);
    let mut client = ClientDriver::with_options(client_io, ClientConnection::new(ClientOptions::default()), options);
    assert_eq!(client.next_event().await, Some(ClientEvent::Ready { server_id: server_id() }));
    let mut ids = Vec::new();
    for n in 0..5 {
        let call = Payload::from_value(&json!({"n": n, "text": "long enough to be a shared payload slice"})).unwrap();
        ids.push((client.connection_mut().request(CallTarget::Server, call.clone()).unwrap(), call));
    }
    for (id, call) in ids {
        assert_eq!(client.next_event().await, Some(ClientEvent::Response { id, result: Ok(Some(call)) }));
    }
    client.connection_mut().close();
    assert!(matches!(client.next_event().await, Some(ClientEvent::Closed { reason: CloseReason::Local, .. })));
    assert_eq!(client.next_event().await, None);
    let events = server.await.unwrap();
    assert_eq!(events.iter().filter(|e| matches!(e, ServerEvent::Request(_))).count(), 5);
    assert_eq!(events.last(), Some(&ServerEvent::Closed { release: None }));
}

#[tokio::test]
async fn next_event_is_cancel_safe() {
    // Every wait for an event races a timer that wins often; no byte may be lost by it.
    let (client_io, server_io) = tokio::io::duplex(3);
    let server = tokio::spawn(echo_server(ServerDriver::new(server_io, server_connection())));
    let mut client = ClientDriver::new(client_io, ClientConnection::new(ClientOptions::default()));
    let mut ticks = tokio::time::interval(Duration::from_micros(50));
    let mut responses = 0;
    let mut ready = false;
    while responses < 20 {
        tokio::select! {
            event = client.next_event() => match event {
                Some(ClientEvent::Ready { .. }) => {
                    ready = true;
                    for n in 0..20 {
                        let call = Payload::from_value(&json!({"n": n, "pad": "x".repeat(60)})).unwrap();
                        client.connection_mut().request(CallTarget::Server, call).unwrap();
                    }
                }
                Some(ClientEvent::Response { result: Ok(Some(_)), .. }) => responses += 1,
                other => panic!("{other:?}"),
            },
            _ = ticks.tick() => {}
        }
    }
    assert!(ready);
    client.connection_mut().close();
    while client.next_event().await.is_some() {}
    server.await.unwrap();
}

#[tokio::test]
async fn reading_pauses_while_answers_wait_to_be_written() {
    // The peer sends 2,000 requests and reads nothing until the server stops taking them.
    let (peer, server_io) = tokio::io::duplex(256);
    let (mut peer_read, mut peer_write) = tokio::io::split(peer);
    let writer = tokio::spawn(async move {
        peer_write.write_all(&hello()).await.unwrap();
        for n in 0..2000 {
            peer_write.write_all(&request(n)).await.unwrap();
        }
        peer_write.shutdown().await.unwrap();
    });
    let options = DriverOptions::default().read_chunk(512).pause_reading_at(2048);
    let mut driver = ServerDriver::with_options(server_io, server_connection(), options);
    let mut answered = 0;
    let mut most_queued = 0;
    loop {
        tokio::select! {
            event = driver.next_event() => {
                if let Some(ServerEvent::Request(request)) = event {
                    driver.connection_mut().respond(&request.id, Ok(Some(request.call))).unwrap();
                    answered += 1;
                    most_queued = most_queued.max(driver.connection().pending_transmit_len());
                }
            }
            _ = tokio::time::sleep(Duration::from_millis(200)) => break,
        }
    }
    // Stalled: the answers wait, the requests are not read, and the queue stayed near the mark
    // (one read of at most 512 bytes holds at most 4 requests, whose answers are added at once).
    assert!(!writer.is_finished(), "the peer's writes must block");
    assert!(answered < 2000, "{answered} answered");
    assert!(driver.connection().pending_transmit_len() >= 2048);
    assert!(most_queued < 2048 + 4 * request(0).len(), "{most_queued} bytes queued");

    // The peer reads again: everything is answered.
    let reader = tokio::spawn(async move {
        let mut received = Vec::new();
        peer_read.read_to_end(&mut received).await.unwrap();
        received
    });
    while let Some(event) = driver.next_event().await {
        if let ServerEvent::Request(request) = event {
            driver.connection_mut().respond(&request.id, Ok(Some(request.call))).unwrap();
            answered += 1;
        }
    }
    assert_eq!(answered, 2000);
    writer.await.unwrap();
    let messages = server_messages(&reader.await.unwrap());
    assert_eq!(answered_ids(&messages).len(), 2000);
}

#[tokio::test]
async fn a_stream_that_ends_inside_a_frame_is_a_violation() {
    let (mut peer, server_io) = tokio::io::duplex(4096);
    let mut bytes = hello();
    let cut = request(1);
    bytes.extend_from_slice(&cut[..cut.len() / 2]);
    peer.write_all(&bytes).await.unwrap();
    peer.shutdown().await.unwrap();
    let events = echo_server(ServerDriver::new(server_io, server_connection())).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0], ServerEvent::Ready);
    match &events[1] {
        ServerEvent::Closing { reason: CloseReason::Violation(Violation::Decode(error)) } => {
            assert_eq!(error.rule(), Rule::TruncatedFrame);
            assert_eq!(error.offset(), Some(hello().len() as u64));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(events[2], ServerEvent::Closed { release: None });
    let mut received = Vec::new();
    peer.read_to_end(&mut received).await.unwrap();
    assert!(matches!(server_messages(&received)[..], [ServerMessage::Hello(_)]), "the hello, then the end");
}

#[tokio::test]
async fn the_end_waits_for_admitted_requests_and_sends_nothing_after_closing() {
    let (mut peer, server_io) = tokio::io::duplex(4096);
    let mut bytes = hello();
    bytes.extend(request(7));
    peer.write_all(&bytes).await.unwrap();
    peer.shutdown().await.unwrap();
    let mut driver = ServerDriver::new(server_io, server_connection());
    assert_eq!(driver.next_event().await, Some(ServerEvent::Ready));
    let Some(ServerEvent::Request(held)) = driver.next_event().await else { panic!("a request") };
    assert_eq!(driver.next_event().await, Some(ServerEvent::Closing { reason: CloseReason::PeerClosed }));
    // Nothing happens while the request is held.
    assert!(tokio::time::timeout(Duration::from_millis(50), driver.next_event()).await.is_err());
    driver.connection_mut().respond(&held.id, Ok(None)).unwrap();
    assert_eq!(driver.next_event().await, Some(ServerEvent::Closed { release: None }));
    assert_eq!(driver.next_event().await, None);
    assert_eq!(driver.next_event().await, None, "done for good");
    let mut received = Vec::new();
    peer.read_to_end(&mut received).await.unwrap();
    assert!(matches!(server_messages(&received)[..], [ServerMessage::Hello(_)]), "no answer after closing");
}

/// A stream that yields `input` and then waits forever, and fails every write.
struct BrokenWrites {
    input: Vec<u8>,
}

impl AsyncRead for BrokenWrites {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.input.is_empty() {
            return Poll::Pending;
        }
        let n = self.input.len().min(buf.remaining());
        buf.put_slice(&self.input[..n]);
        self.input.drain(..n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for BrokenWrites {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, _: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        panic!("a failed stream is not shut down")
    }
}

#[tokio::test]
async fn a_write_error_ends_the_connection_and_drops_what_was_queued() {
    let mut input = hello();
    input.extend(request(1));
    let mut driver = ServerDriver::new(BrokenWrites { input }, server_connection());
    assert_eq!(driver.next_event().await, Some(ServerEvent::Ready));
    let Some(ServerEvent::Request(request)) = driver.next_event().await else { panic!("a request") };
    // Writing the hello fails once the events of the read are out.
    let Some(ServerEvent::Closing { reason: CloseReason::Transport(failure) }) = driver.next_event().await else {
        panic!("a transport failure")
    };
    assert_eq!(failure.kind(), io::ErrorKind::BrokenPipe);
    assert_eq!(driver.io_error().map(io::Error::kind), Some(io::ErrorKind::BrokenPipe));
    assert_eq!(driver.connection().pending_transmit_len(), 0, "the queued hello was dropped");
    driver.connection_mut().respond(&request.id, Ok(None)).unwrap();
    assert_eq!(driver.next_event().await, Some(ServerEvent::Closed { release: None }));
    assert_eq!(driver.next_event().await, None);
}

#[tokio::test]
async fn a_client_driver_reports_the_servers_end() {
    let (client_io, server_io) = tokio::io::duplex(4096);
    let mut client = ClientDriver::new(client_io, ClientConnection::new(ClientOptions::default()));
    let server = tokio::spawn(async move {
        let mut driver = ServerDriver::new(server_io, server_connection());
        assert_eq!(driver.next_event().await, Some(ServerEvent::Ready));
        let Some(ServerEvent::Request(_)) = driver.next_event().await else { panic!("a request") };
        // Dropped unanswered: the stream closes.
    });
    assert!(matches!(client.next_event().await, Some(ClientEvent::Ready { .. })));
    let id = client.connection_mut().request(CallTarget::Server, Payload::null()).unwrap();
    client.flush().await.unwrap();
    assert_eq!(client.connection().pending_transmit_len(), 0);
    server.await.unwrap();
    assert_eq!(
        client.next_event().await,
        Some(ClientEvent::Closed { reason: CloseReason::PeerClosed, unsettled: vec![id] })
    );
    assert_eq!(client.next_event().await, None);
}

/// The far end of a client's stream says hello and hangs up: the client reports the peer's
/// hang-up, not a close of its own.
#[tokio::test]
async fn a_peer_that_hangs_up_is_not_a_local_close() {
    let (client_io, mut far) = tokio::io::duplex(4096);
    let hello =
        pi_protocol::encode_server_message(&ServerMessage::from(pi_protocol::ServerHello::new(server_id()))).unwrap();
    far.write_all(&hello).await.unwrap();
    far.shutdown().await.unwrap(); // end of stream; the far end still reads
    let mut client = ClientDriver::new(client_io, ClientConnection::new(ClientOptions::default()));
    assert!(matches!(client.next_event().await, Some(ClientEvent::Ready { .. })));
    assert_eq!(
        client.next_event().await,
        Some(ClientEvent::Closed { reason: CloseReason::PeerClosed, unsettled: vec![] })
    );
    assert!(client.io_error().is_none());
    assert_eq!(client.next_event().await, None);
}

/// The same on the server side, and an application's own close stays `Local`.
#[tokio::test]
async fn the_server_tells_a_hang_up_from_its_own_disconnect() {
    let (mut far, server_io) = tokio::io::duplex(4096);
    far.write_all(&hello()).await.unwrap();
    far.shutdown().await.unwrap(); // end of stream; the far end still reads
    let mut driver = ServerDriver::new(server_io, server_connection());
    assert_eq!(driver.next_event().await, Some(ServerEvent::Ready));
    assert_eq!(driver.next_event().await, Some(ServerEvent::Closing { reason: CloseReason::PeerClosed }));

    let (_far, server_io) = tokio::io::duplex(4096);
    let mut driver = ServerDriver::new(server_io, server_connection());
    driver.connection_mut().disconnect();
    assert_eq!(driver.next_event().await, Some(ServerEvent::Closing { reason: CloseReason::Local }));
}
