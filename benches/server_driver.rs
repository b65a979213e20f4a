//! What the connection layer and its tokio driver cost a server per message, against a server
//! written on the codec alone (`docs/PERFORMANCE.md`, section "Load and faults over real
//! sockets"; `cargo xtask load` measures the same over TCP, one process per side).
//!
//! One iteration: a client writes a burst of 16 requests (`catalogue` and `echo`, alternately)
//! into an in-memory stream (`tokio::io::duplex`) and reads the 16 answers; a server task on the
//! same single-threaded runtime answers them. One element is one request answered.
//!
//! - `driver`: `ServerConnection` run by `io::ServerDriver`, the hand-written loop `docs/ASYNC.md`
//!   teaches (and `examples/server.rs` was, before `pi_protocol::server`);
//! - `server`: `pi_protocol::server::Server` serving the same two calls through its `Service`
//!   trait (issue 22 point 7: within 1.1x of `driver`);
//! - `bare` (the baseline): `Framed` with `io::ServerCodec`, no protocol state, answers fed and
//!   flushed once the burst is read (as `examples/load/bare.rs`);
//! - `floor`: a server that writes prepared answers without decoding anything: what the client
//!   and the in-memory stream cost, to be subtracted from both.
//!
//! Both servers read the calls and build the answers with the same code
//! (`benches/common/service.rs`).
// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures_util::{SinkExt, StreamExt};
use pi_protocol::connection::{ServerConnection, ServerEvent, ServerOptions};
use pi_protocol::io::{ServerCodec, ServerDriver};
use pi_protocol::{
    encode_client_message, ClientHello, ClientMessage, Payload, Request, RequestId, Response, RpcTarget, ServerHello,
    ServerId, ServerMessage, ServerTarget,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::runtime::Runtime;
use tokio::task::LocalSet;
use tokio_util::codec::Framed;

#[path = "common/service.rs"]
mod service;

use service::Service;

const SERVER_ID: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
const BURST: usize = 16;

fn server_id() -> ServerId {
    ServerId::new(SERVER_ID).unwrap()
}

/// The hello, then `BURST` requests: what the client writes (the hello once, at connection).
fn requests(round: usize) -> Vec<u8> {
    let target = RpcTarget::Server(ServerTarget::new(server_id()));
    let catalogue = Payload::from_value(&json!({"serviceId": "$chord.service", "member": "catalogue", "args": []}));
    let echo = Payload::from_value(&json!({"serviceId": "session", "member": "echo", "args": [7]}));
    let mut bytes = Vec::new();
    for n in 0..BURST {
        let call = if n % 2 == 0 { catalogue.clone() } else { echo.clone() }.unwrap();
        let id = RequestId::new(format!("{round}-{n}")).unwrap();
        bytes.extend(encode_client_message(&ClientMessage::Request(Request::new(id, target.clone(), call))).unwrap());
    }
    bytes
}

fn hello() -> Vec<u8> {
    encode_client_message(&ClientMessage::Hello(ClientHello::new(8u32))).unwrap()
}

async fn driver_server(io: DuplexStream) {
    let service = Service::default();
    let mut driver = ServerDriver::new(io, ServerConnection::new(server_id(), ServerOptions::default()));
    while let Some(event) = driver.next_event().await {
        if let ServerEvent::Request(request) = event {
            let answer = service.answer(&request.call);
            let _ = driver.connection_mut().respond(&request.id, answer);
        }
    }
}

/// The two calls through the high-level server's `Service` trait.
struct BenchService {
    catalogue: Payload,
}

impl pi_protocol::server::Service for BenchService {
    async fn call(
        &self,
        call: pi_protocol::server::Call,
        cx: pi_protocol::server::Context,
    ) -> pi_protocol::server::CallResult {
        self.call_now(&call, &cx).expect("answered at once")
    }

    fn call_now(
        &self,
        call: &pi_protocol::server::Call,
        _cx: &pi_protocol::server::Context,
    ) -> Option<pi_protocol::server::CallResult> {
        Some(match (call.service_id(), call.member()) {
            ("$chord.service", "catalogue") => Ok(Some(self.catalogue.clone())),
            ("session", "echo") => Ok(Some(Payload::object(&[("echo", call.args())]).unwrap())),
            _ => Err(pi_protocol::server::CallError::new("unknown_member", "No such service member")),
        })
    }
}

async fn high_level_server(io: DuplexStream) {
    let catalogue = Payload::from_value(&json!([
        {"serviceId": "demo.echo", "mode": "singleton"},
        {"serviceId": "demo.slow", "mode": "singleton"},
        {"serviceId": "demo.counter", "mode": "singleton"},
    ]))
    .unwrap();
    let server = pi_protocol::server::Server::builder(server_id(), BenchService { catalogue }).build();
    server.serve_stream(io).await;
}

async fn bare_server(io: DuplexStream) {
    let service = Service::default();
    let mut framed = Framed::new(io, ServerCodec::new());
    while let Some(Ok(message)) = framed.next().await {
        let answer = match message {
            ClientMessage::Hello(_) => ServerMessage::Hello(ServerHello::new(server_id())),
            ClientMessage::Request(request) => ServerMessage::Response(match service.answer(&request.call) {
                Ok(result) => Response::success(request.id, result),
                Err(error) => Response::failure(request.id, error),
            }),
            _ => continue,
        };
        framed.feed(answer).await.unwrap();
        let buffer = framed.read_buffer();
        let whole_frame = buffer.len() >= 4
            && buffer.len() - 4 >= u32::from_be_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]) as usize;
        if !whole_frame {
            framed.flush().await.unwrap();
        }
    }
}

/// Reads `request_bytes` bytes of each burst and writes `answers` back.
async fn floor_server(mut io: DuplexStream, hello_reply: Vec<u8>, request_bytes: usize, answers: Vec<u8>) {
    let mut buf = vec![0; 64 * 1024];
    let mut hello = vec![0; hello().len()];
    if io.read_exact(&mut hello).await.is_err() || io.write_all(&hello_reply).await.is_err() {
        return;
    }
    loop {
        let mut read = 0;
        while read < request_bytes {
            match io.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => read += n,
            }
        }
        if io.write_all(&answers).await.is_err() {
            return;
        }
    }
}

/// A client's end: the prepared burst, and the answers' length.
struct Client {
    io: DuplexStream,
    burst: Vec<u8>,
    answer_bytes: usize,
    buf: Vec<u8>,
}

impl Client {
    async fn round(&mut self) {
        self.io.write_all(&self.burst).await.unwrap();
        let mut read = 0;
        while read < self.answer_bytes {
            read += self.io.read(&mut self.buf).await.unwrap();
        }
        assert_eq!(read, self.answer_bytes);
    }
}

/// Connects a client to `serve`, past the handshake; returns it with the answers to one burst.
fn connect<F, Fut>(runtime: &Runtime, local: &LocalSet, serve: F) -> (Client, Vec<u8>)
where
    F: FnOnce(DuplexStream) -> Fut,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let (mut client, server) = tokio::io::duplex(256 * 1024);
    local.spawn_local(serve(server));
    let answers = runtime.block_on(local.run_until(async {
        client.write_all(&hello()).await.unwrap();
        client.write_all(&requests(0)).await.unwrap();
        let mut received = Vec::new();
        let mut buf = vec![0; 64 * 1024];
        // The hello and 16 answers: read until the stream is quiet.
        loop {
            match tokio::time::timeout(Duration::from_millis(100), client.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => received.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        received
    }));
    let hello_len =
        pi_protocol::encode_server_message(&ServerMessage::Hello(ServerHello::new(server_id()))).unwrap().len();
    let answers = answers[hello_len..].to_vec();
    let client = Client { io: client, burst: requests(1), answer_bytes: answers.len(), buf: vec![0; 64 * 1024] };
    (client, answers)
}

fn server_driver(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut g = c.benchmark_group("server_per_message");
    g.throughput(Throughput::Elements(BURST as u64));
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    let mut expected = None;
    for name in ["driver", "server", "bare", "floor"] {
        // The server task runs while this set is driven: in `connect`, then in every iteration.
        let local = LocalSet::new();
        let (mut client, answers) = match name {
            "driver" => connect(&runtime, &local, driver_server),
            "server" => connect(&runtime, &local, high_level_server),
            "bare" => connect(&runtime, &local, bare_server),
            _ => {
                let (answers, request_bytes) = expected.clone().expect("the servers ran first");
                let hello_reply =
                    pi_protocol::encode_server_message(&ServerMessage::Hello(ServerHello::new(server_id()))).unwrap();
                connect(&runtime, &local, move |io| floor_server(io, hello_reply, request_bytes, answers))
            }
        };
        // The servers answer with the same bytes.
        match &expected {
            None => expected = Some((answers, requests(1).len())),
            Some((first, _)) => assert_eq!(first.len(), answers.len(), "{name} answers as the driver does"),
        }
        g.bench_function(name, |b| b.iter(|| runtime.block_on(local.run_until(client.round()))));
    }
    g.finish();
}

criterion_group!(benches, server_driver);
criterion_main!(benches);
