//! The issue 18 attacks against `pi_protocol::server::Server`, as bounded tests over loopback
//! with short real deadlines: each names the bound it measures.

#![cfg(feature = "tokio")]

use std::time::{Duration, Instant};

use pi_protocol::connection::ServerOptions;
use pi_protocol::io::DriverOptions;
use pi_protocol::server::{Call, CallResult, Context, Server, Service, Serving};
use pi_protocol::Payload;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[path = "support/raw_peer.rs"]
mod raw_peer;
use raw_peer::{server_id, Peer};

/// `big(n)` answers n bytes of text; `hold` waits for its cancel.
struct Hostile;

impl Service for Hostile {
    async fn call(&self, call: Call, cx: Context) -> CallResult {
        match call.member() {
            "big" => {
                let n = call.args_json().first().and_then(|n| n.as_u64()).unwrap_or(0) as usize;
                Ok(Some(Payload::from_value(&json!("x".repeat(n))).unwrap()))
            }
            _ => {
                cx.cancelled().await;
                Ok(None)
            }
        }
    }
}

async fn serve(options: ServerOptions, driver: DriverOptions, budget: Option<usize>, connections: usize) -> Serving {
    Server::builder(server_id(), Hostile)
        .options(options)
        .driver_options(driver)
        .budget(budget)
        .max_connections(connections)
        .build()
        .serve_tcp("127.0.0.1:0")
        .await
        .unwrap()
}

/// Reads until the end of the stream (or a reset), returning the bytes and the time it took.
async fn read_to_end(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, Duration) {
    let start = Instant::now();
    let mut bytes = Vec::new();
    let _ = tokio::time::timeout(limit, stream.read_to_end(&mut bytes)).await.expect("closed in time");
    (bytes, start.elapsed())
}

async fn settle(serving: &Serving) -> usize {
    for _ in 0..100 {
        if serving.budget().unwrap().used() == 0 {
            return 0;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    serving.budget().unwrap().used()
}

#[tokio::test]
async fn never_saying_hello_or_three_bytes_of_a_header_is_closed_at_the_handshake_deadline() {
    let options = ServerOptions::default().handshake_timeout(Some(Duration::from_millis(200)));
    let serving = serve(options, DriverOptions::default(), Some(1 << 20), 64).await;
    for prefix in [&[][..], &[0, 0, 0][..]] {
        let mut stream = TcpStream::connect(serving.local_addr()).await.unwrap();
        stream.write_all(prefix).await.unwrap();
        let (bytes, took) = read_to_end(&mut stream, Duration::from_secs(3)).await;
        let mut decoder = pi_protocol::ServerMessageDecoder::new();
        let messages: Vec<_> = decoder.push(&bytes).into_iter().map(|m| m.unwrap().to_json()).collect();
        assert_eq!(
            messages,
            vec![json!({"type": "hello_error", "error": {"code": "invalid_request", "message": "Handshake timeout"}})]
        );
        assert!(took >= Duration::from_millis(150) && took < Duration::from_secs(2), "{took:?}");
    }
    assert_eq!(settle(&serving).await, 0);
    serving.shutdown().await;
}

#[tokio::test]
async fn a_16_mib_header_before_hello_is_refused_at_once_by_the_pre_hello_limit() {
    let serving = serve(ServerOptions::default(), DriverOptions::default(), Some(64 << 20), 64).await;
    let mut stream = TcpStream::connect(serving.local_addr()).await.unwrap();
    stream.write_all(&(16u32 << 20).to_be_bytes()).await.unwrap();
    // Some body bytes too: none of them is kept.
    let _ = stream.write_all(&vec![0xa0; 64 * 1024]).await;
    let (bytes, took) = read_to_end(&mut stream, Duration::from_secs(3)).await;
    assert!(took < Duration::from_secs(1), "{took:?}");
    let mut decoder = pi_protocol::ServerMessageDecoder::new();
    let message = decoder.push(&bytes).into_iter().next().expect("a hello_error").unwrap().to_json();
    assert_eq!(message["type"], "hello_error");
    assert_eq!(message["error"]["code"], "invalid_request");
    assert_eq!(settle(&serving).await, 0, "nothing of the announced frame is held");
    serving.shutdown().await;
}

#[tokio::test]
async fn a_client_that_never_reads_is_closed_by_the_write_deadline_and_its_queue_freed() {
    let driver = DriverOptions::default().write_timeout(Some(Duration::from_millis(300)));
    let serving = serve(ServerOptions::default(), driver, Some(256 << 20), 64).await;
    let mut peer = Peer::new(TcpStream::connect(serving.local_addr()).await.unwrap());
    peer.hello().await;
    for n in 0..20 {
        peer.call(&format!("b{n}"), "s", "big", json!([1 << 20])).await;
    }
    // The answers pile up (the client reads nothing) until the write deadline closes it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let held = serving.budget().unwrap().used();
    assert!(held > 0, "answers are queued");
    // At most what the driver reads before pausing (64 KiB of queue, plus one read chunk of
    // requests answered at once), far from 20 MiB.
    assert!(held < 20 << 20, "{held}");
    assert_eq!(settle_within(&serving, Duration::from_secs(3)).await, 0, "closed and freed by the write deadline");
    serving.shutdown().await;
}

async fn settle_within(serving: &Serving, limit: Duration) -> usize {
    let start = Instant::now();
    while start.elapsed() < limit {
        if serving.budget().unwrap().used() == 0 {
            return 0;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    serving.budget().unwrap().used()
}

#[tokio::test]
async fn clients_past_the_shared_budget_are_closed_at_once_and_their_queues_dropped() {
    // Each non-reading client holds about one 8 MiB answer beyond what the kernel buffers take
    // (the rest wait unstarted); three of them pass a 12 MiB budget: one is closed at once, long
    // before any write deadline.
    let budget = 12 << 20;
    let serving = serve(ServerOptions::default(), DriverOptions::default(), Some(budget), 64).await;
    let mut peers = Vec::new();
    for p in 0..3 {
        let mut peer = Peer::new(TcpStream::connect(serving.local_addr()).await.unwrap());
        peer.hello().await;
        for n in 0..3 {
            peer.call(&format!("b{p}-{n}"), "s", "big", json!([8 << 20])).await;
        }
        peers.push(peer);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(serving.budget().unwrap().used() <= budget);
    }
    // One of them was closed: its stream ends (its queue dropped) within a second.
    let mut ended = 0;
    for peer in &mut peers {
        let mut sink = Vec::new();
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(1), peer.stream.read_to_end(&mut sink)).await {
            ended += 1;
        }
    }
    assert!(ended >= 1, "a connection past the budget is closed");
    drop(peers);
    assert_eq!(settle_within(&serving, Duration::from_secs(2)).await, 0);
    serving.shutdown().await;
}

#[tokio::test]
async fn request_ids_of_1_mib_on_held_calls_cost_at_most_the_id_budget() {
    let serving = serve(ServerOptions::default(), DriverOptions::default(), Some(256 << 20), 64).await;
    let mut peer = Peer::new(TcpStream::connect(serving.local_addr()).await.unwrap());
    peer.hello().await;
    let long = |c: char| c.to_string().repeat(1 << 20);
    peer.call(&long('a'), "s", "hold", json!([])).await;
    peer.call(&long('b'), "s", "hold", json!([])).await;
    let refused = peer.next().await.unwrap();
    assert_eq!(refused["error"]["code"], "too_many_requests");
    assert_eq!(refused["id"].as_str().map(str::len), Some(1 << 20));
    // The held call's id (1 MiB) and little else.
    let used = serving.budget().unwrap().used();
    assert!((1 << 20..3 << 20).contains(&used), "{used}");
    drop(peer);
    assert_eq!(settle(&serving).await, 0);
    serving.shutdown().await;
}

#[tokio::test]
async fn more_connections_than_the_limit_pause_accepting() {
    let serving = serve(ServerOptions::default(), DriverOptions::default(), Some(1 << 20), 2).await;
    let mut first = Peer::new(TcpStream::connect(serving.local_addr()).await.unwrap());
    let mut second = Peer::new(TcpStream::connect(serving.local_addr()).await.unwrap());
    assert_eq!(first.hello().await["type"], "hello");
    assert_eq!(second.hello().await["type"], "hello");
    let mut third = Peer::new(TcpStream::connect(serving.local_addr()).await.unwrap());
    third.send(pi_protocol::ClientMessage::Hello(pi_protocol::ClientHello::new(8u32))).await;
    assert!(tokio::time::timeout(Duration::from_millis(300), third.next()).await.is_err(), "not accepted yet");
    drop(first);
    let hello = tokio::time::timeout(Duration::from_secs(2), third.next()).await.expect("accepted once a slot freed");
    assert_eq!(hello.unwrap()["type"], "hello");
    serving.shutdown().await;
}
