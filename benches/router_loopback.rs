//! Loopback measurement of the `router` example with many clients (results in
//! `docs/PERFORMANCE.md`, section "Coordinator").
//!
//! Two `server` examples (`--quiet`) and two `router` examples in front of them, one with shared
//! upstreams and one with `--dedicated` ones, run as processes of their own; this bench drives
//! `CLIENTS` connections from one thread. One iteration: every client writes `DEPTH` requests
//! (`$chord.service` `catalogue`, client `i` to server `i % 2`), then reads its `DEPTH`
//! answers. One element is one request answered. In one run:
//! - `direct`: the baseline, every client connected to its server;
//! - `shared`: every client connected to the router, which multiplexes them onto one connection
//!   per server;
//! - `dedicated`: every client connected to the router, which opens a connection per client and
//!   server.
//!
//! The examples are built first (release, `tokio` feature). Run with
//! `cargo bench --features tokio --bench router_loopback`; the machine's cores are shared by the
//! bench, the servers and the router, so read the ratios within one run.
// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures_util::{SinkExt, StreamExt};
use pi_protocol::io::MessageCodec;
use pi_protocol::{
    ClientHello, ClientMessage, Payload, Request, RequestId, Response, RpcTarget, ServerId, ServerMessage, ServerTarget,
};
use serde_json::json;
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio_util::codec::Framed;

#[path = "../tests/support/processes.rs"]
mod processes;

use processes::{built_examples, Process};

const SERVERS: [&str; 2] = ["3b241101-e2bb-4255-8caf-4136c566a962", "9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f"];
const CLIENTS: [usize; 2] = [16, 128];
const DEPTH: usize = 16;

/// A client's connection. Its codec encodes `Arc`s, so that the requests of a round are sent
/// again and again without being cloned.
type Connection = Framed<TcpStream, MessageCodec<ServerMessage, Arc<ClientMessage>>>;

// ---- Envelopes, built in one place.

fn hello() -> ClientMessage {
    ClientMessage::Hello(ClientHello::new(8u32))
}

fn catalogue(id: RequestId, server: &str) -> ClientMessage {
    let call = Payload::from_value(&json!({"serviceId": "$chord.service", "member": "catalogue", "args": []})).unwrap();
    let target = RpcTarget::Server(ServerTarget::new(ServerId::new(server).unwrap()));
    ClientMessage::Request(Request::new(id, target, call))
}

/// One client: its connection and the requests of one round.
struct Client {
    connection: Connection,
    requests: Vec<Arc<ClientMessage>>,
}

/// `count` clients connected to `addresses(i)` for client `i`, past their handshake.
async fn connect(count: usize, address: impl Fn(usize) -> String) -> Vec<Client> {
    let mut clients = Vec::with_capacity(count);
    for i in 0..count {
        let stream = TcpStream::connect(address(i)).await.expect("the server listens");
        stream.set_nodelay(true).unwrap();
        let mut connection = Framed::new(stream, MessageCodec::new());
        connection.send(Arc::new(hello())).await.unwrap();
        match connection.next().await {
            Some(Ok(ServerMessage::Hello(_))) => {}
            other => panic!("handshake failed: {other:?}"),
        }
        let requests = (0..DEPTH)
            .map(|n| Arc::new(catalogue(RequestId::new(format!("r-{n}")).unwrap(), SERVERS[i % 2])))
            .collect();
        clients.push(Client { connection, requests });
    }
    clients
}

/// Every client writes its round of requests, then every client reads its answers.
async fn round(clients: &mut [Client]) {
    for client in clients.iter_mut() {
        for request in &client.requests {
            client.connection.feed(Arc::clone(request)).await.unwrap();
        }
        client.connection.flush().await.unwrap();
    }
    for client in clients.iter_mut() {
        for _ in 0..DEPTH {
            match client.connection.next().await {
                Some(Ok(ServerMessage::Response(Response::Success(_)))) => {}
                other => panic!("unexpected answer: {other:?}"),
            }
        }
    }
}

/// The processes: two servers, a shared router and a dedicated one. Killed when dropped.
struct Processes {
    _running: Vec<Process>,
    servers: [String; 2],
    shared: String,
    dedicated: String,
}

fn start(examples: &Path) -> Processes {
    let a = Process::spawn(examples, "server", &["--listen", "127.0.0.1:0", "--quiet"]);
    let b = Process::spawn(examples, "server", &["--listen", "127.0.0.1:0", "--quiet", "--server-id", SERVERS[1]]);
    let servers = [a.address(), b.address()];
    let upstreams = ["--upstream", &servers[0], "--upstream", &servers[1]];
    let shared =
        Process::spawn(examples, "router", &[&["--listen", "127.0.0.1:0", "--quiet"][..], &upstreams].concat());
    let dedicated = Process::spawn(
        examples,
        "router",
        &[&["--listen", "127.0.0.1:0", "--quiet", "--dedicated"][..], &upstreams].concat(),
    );
    let (shared_address, dedicated_address) = (shared.address(), dedicated.address());
    Processes { _running: vec![a, b, shared, dedicated], servers, shared: shared_address, dedicated: dedicated_address }
}

fn loopback(c: &mut Criterion) {
    let processes = start(&built_examples());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for count in CLIENTS {
        let mut g = c.benchmark_group(format!("loopback/{count}_clients"));
        g.throughput(Throughput::Elements((count * DEPTH) as u64));
        g.warm_up_time(Duration::from_secs(2));
        g.measurement_time(Duration::from_secs(5));
        g.sample_size(20);
        // Where client `i` connects: its server, or a router.
        let targets =
            [("direct", None), ("shared", Some(&processes.shared)), ("dedicated", Some(&processes.dedicated))];
        for (name, router) in targets {
            let address = |i: usize| router.unwrap_or(&processes.servers[i % 2]).clone();
            let mut clients = runtime.block_on(connect(count, address));
            g.bench_function(name, |b| b.iter(|| runtime.block_on(round(&mut clients))));
            close(&runtime, clients);
        }
        g.finish();
    }
}

/// Closes every connection and gives the far ends a moment to let go of them.
fn close(runtime: &Runtime, clients: Vec<Client>) {
    runtime.block_on(async {
        for mut client in clients {
            let _ = client.connection.close().await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    });
}

criterion_group!(benches, loopback);
criterion_main!(benches);
