//! What the async `client::Client` costs per call on top of the `ClientDriver` it runs (a task,
//! channels, a oneshot per call), against the driver used directly (`docs/PERFORMANCE.md`).
//!
//! A server on the same single-threaded runtime answers every call with its own payload over
//! `tokio::io::duplex`. One element is one call answered.
//!
//! - `client/burst16` and `driver/burst16`: 16 calls in flight at once, then their answers;
//! - `client/sequential` and `driver/sequential`: one call at a time (round-trip latency).
// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pi_protocol::client::{service_call, Client};
use pi_protocol::connection::{CallTarget, ClientEvent, ServerConnection, ServerEvent, ServerOptions};
use pi_protocol::io::{ClientDriver, ServerDriver};
use pi_protocol::{ClientConnection, ClientOptions, Payload, ServerId};
use serde_json::json;
use tokio::io::DuplexStream;
use tokio::runtime::Runtime;

const BURST: usize = 16;

fn server_id() -> ServerId {
    ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962").unwrap()
}

fn call() -> Payload {
    service_call("demo.echo", "echo", json!([7, "seven"])).unwrap()
}

/// A server answering every call with its own payload.
fn serve(runtime: &Runtime) -> DuplexStream {
    let (client, server) = tokio::io::duplex(64 * 1024);
    runtime.spawn(async move {
        let mut driver = ServerDriver::new(server, ServerConnection::new(server_id(), ServerOptions::default()));
        while let Some(event) = driver.next_event().await {
            if let ServerEvent::Request(request) = event {
                let _ = driver.connection_mut().respond(&request.id, Ok(Some(request.call)));
            }
        }
    });
    client
}

async fn driver_calls(driver: &mut ClientDriver<DuplexStream>, calls: usize) {
    for _ in 0..calls {
        driver.connection_mut().request(CallTarget::Server, call()).unwrap();
    }
    let mut answered = 0;
    while answered < calls {
        if let Some(ClientEvent::Response { .. }) = driver.next_event().await {
            answered += 1;
        }
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = runtime.block_on(Client::connect_stream(serve(&runtime), server_id())).unwrap();
    let mut driver = runtime.block_on(async {
        let mut driver = ClientDriver::new(serve(&runtime), ClientConnection::new(ClientOptions::default()));
        while !matches!(driver.next_event().await, Some(ClientEvent::Ready { .. })) {}
        driver
    });

    let mut group = c.benchmark_group("client");
    group.throughput(Throughput::Elements(BURST as u64));
    group.bench_function("client/burst16", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let calls = (0..BURST).map(|_| client.request(CallTarget::Server, call()));
                for answer in futures_util::future::join_all(calls).await {
                    answer.unwrap();
                }
            })
        })
    });
    group.bench_function("driver/burst16", |b| b.iter(|| runtime.block_on(driver_calls(&mut driver, BURST))));
    group.throughput(Throughput::Elements(1));
    group.bench_function("client/sequential", |b| {
        b.iter(|| runtime.block_on(async { client.request(CallTarget::Server, call()).await.unwrap() }))
    });
    group.bench_function("driver/sequential", |b| b.iter(|| runtime.block_on(driver_calls(&mut driver, 1))));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
