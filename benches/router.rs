//! Routing benchmarks of the coordinator's sans-IO `Router` (results in `docs/PERFORMANCE.md`,
//! section "Coordinator").
//!
//! One element is one frame routed; a round trip routes two (a request to its upstream, the
//! response back to its client), through a router holding 64 ready clients and 2 shared
//! upstreams, the clients taking turns. In one run:
//! - `route/small`: the round trip alone, with the `small` workload's call (42 bytes) as call
//!   and result;
//! - `route/1MiB`: the same with a 1 MiB call and result; payloads are moved, never copied, so
//!   it costs what `route/small` costs;
//! - `codec/small`: the baseline: decoding and encoding the same two frames (what any process
//!   that forwards frames pays, router or not);
//! - `codec_route/small`: decode, route, encode: the whole per-frame work of a router process
//!   short of the socket calls;
//! - `memcpy/1MiB`: copying a 1 MiB payload once, what a router that copied payloads would pay
//!   at the least, per frame.
//!
//! The setup also shows that no payload byte is copied: the 1 MiB call and result come out of
//! the router at the address they went in at, and routing the 1 MiB round trip allocates a few
//! hundred bytes (counted by a counting global allocator), not megabytes.
//!
//! Each transmit is reported written (`client_written`, `upstream_written`), as a driver does,
//! so that the byte accounting is part of what is measured.
//!
//! Run with `cargo bench --bench router`.
// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use peak_alloc::PeakAlloc;
use pi_protocol::connection::{ClientKey, Router, RouterOptions, Transmit};
use pi_protocol::{
    encode_client_message, encode_server_message, ClientHello, ClientMessage, ClientMessageDecoder, Payload, Request,
    RequestId, Response, RpcTarget, ServerHello, ServerId, ServerMessage, ServerMessageDecoder, ServerTarget,
    SuccessResponse,
};
use serde_json::json;

#[global_allocator]
static ALLOCATED: PeakAlloc = PeakAlloc;

const SERVERS: [&str; 2] = ["3b241101-e2bb-4255-8caf-4136c566a962", "9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f"];
const CLIENTS: usize = 64;

// ---- Envelopes, built in one place.

fn server_target(server: &str) -> RpcTarget {
    RpcTarget::Server(ServerTarget::new(ServerId::new(server).unwrap()))
}

fn request(id: RequestId, target: RpcTarget, call: Payload) -> ClientMessage {
    ClientMessage::Request(Request::new(id, target, call))
}

fn success(id: RequestId, result: Payload) -> ServerMessage {
    ServerMessage::Response(Response::Success(SuccessResponse::new(id).with_result(result)))
}

/// The `small` workload's call.
fn small_call() -> Payload {
    Payload::from_value(&json!({"serviceId": "session", "member": "prompt", "args": ["hi"]})).unwrap()
}

fn mib_call() -> Payload {
    Payload::from_value(&json!({"serviceId": "session", "member": "prompt", "args": ["x".repeat(1 << 20)]})).unwrap()
}

/// A router with `CLIENTS` ready clients and one ready shared upstream per server, and each
/// client's next request (client `i` calls server `i % 2`).
struct Bench {
    router: Router,
    next: Vec<(ClientKey, Option<ClientMessage>)>,
    turn: usize,
}

impl Bench {
    fn new(call: &Payload) -> Bench {
        let home = ServerId::new(SERVERS[0]).unwrap();
        let mut router = Router::new(home, RouterOptions::default());
        for server in SERVERS {
            let upstream = router.add_upstream();
            let hello = ServerHello::new(ServerId::new(server).unwrap());
            router.upstream_message(upstream, ServerMessage::Hello(hello));
        }
        let mut next = Vec::new();
        for i in 0..CLIENTS {
            let client = router.add_client();
            router.client_message(client, ClientMessage::Hello(ClientHello::new(8u32)));
            let id = RequestId::new(format!("c-{i}")).unwrap();
            next.push((client, Some(request(id, server_target(SERVERS[i % 2]), call.clone()))));
        }
        while router.poll_transmit().is_some() {}
        while router.poll_event().is_some() {}
        Bench { router, next, turn: 0 }
    }

    /// One round trip of the next client: its request routed upstream, the server's answer (the
    /// call itself as result) routed back, which becomes the client's next request. Returns the
    /// addresses of the payload as it went upstream and as it came back.
    fn round_trip(&mut self) -> (*const u8, *const u8) {
        let slot = self.turn % CLIENTS;
        self.turn += 1;
        let (client, message) = &mut self.next[slot];
        let message = message.take().expect("each client has its next request");
        let client = *client;
        self.router.client_message(client, message);
        // Each transmit is reported written, as a driver does once its writer flushed it.
        let transmit = self.router.poll_transmit().expect("the request was routed");
        let written = transmit.queued_bytes();
        let Transmit::ToUpstream { upstream, message: ClientMessage::Request(forwarded) } = transmit else {
            panic!("the request was not routed")
        };
        self.router.upstream_written(upstream, written);
        let up = forwarded.call.as_cbor().as_ptr();
        self.router.upstream_message(upstream, success(forwarded.id, forwarded.call));
        let transmit = self.router.poll_transmit().expect("the response was routed back");
        self.router.client_written(client, transmit.queued_bytes());
        let Transmit::ToClient { message: ServerMessage::Response(Response::Success(back)), .. } = transmit else {
            panic!("the response was not routed back")
        };
        let result = back.result.expect("the echo carries a result");
        let down = result.as_cbor().as_ptr();
        self.next[slot].1 = Some(request(back.id, forwarded.target, result));
        (up, down)
    }
}

/// The frames of one round trip, for the codec baseline.
struct Frames {
    request: Vec<u8>,
    response: Vec<u8>,
}

impl Frames {
    fn new(call: &Payload) -> Frames {
        let id = RequestId::new("c-0").unwrap();
        let request = encode_client_message(&request(id.clone(), server_target(SERVERS[0]), call.clone())).unwrap();
        let response = encode_server_message(&success(id, call.clone())).unwrap();
        Frames { request, response }
    }
}

/// Decodes and re-encodes both frames of a round trip: the baseline.
fn codec(frames: &Frames) -> usize {
    let mut client_side = ClientMessageDecoder::new();
    let mut server_side = ServerMessageDecoder::new();
    let mut written = 0;
    for message in client_side.push(&frames.request) {
        written += encode_client_message(&message.unwrap()).unwrap().len();
    }
    for message in server_side.push(&frames.response) {
        written += encode_server_message(&message.unwrap()).unwrap().len();
    }
    written
}

/// Decodes both frames, routes them through `bench`'s router and encodes what comes out.
fn codec_route(bench: &mut Bench, frames: &Frames) -> usize {
    let client = bench.next[0].0;
    let mut client_side = ClientMessageDecoder::new();
    let mut written = 0;
    for message in client_side.push(&frames.request) {
        bench.router.client_message(client, message.unwrap());
    }
    let transmit = bench.router.poll_transmit().expect("routed");
    let queued = transmit.queued_bytes();
    let Transmit::ToUpstream { upstream, message } = transmit else { panic!("not routed") };
    written += encode_client_message(&message).unwrap().len();
    bench.router.upstream_written(upstream, queued);
    // The server answers the id the router chose: rewrite the prepared frame's id in the message.
    let mut server_side = ServerMessageDecoder::new();
    let ClientMessage::Request(forwarded) = message else { panic!("not a request") };
    for answer in server_side.push(&frames.response) {
        let ServerMessage::Response(Response::Success(answer)) = answer.unwrap() else { panic!("not a success") };
        let result = answer.result.expect("a result");
        bench.router.upstream_message(upstream, success(forwarded.id.clone(), result));
    }
    let transmit = bench.router.poll_transmit().expect("routed back");
    bench.router.client_written(client, transmit.queued_bytes());
    let Transmit::ToClient { message, .. } = transmit else { panic!("not routed back") };
    written += encode_server_message(&message).unwrap().len();
    written
}

/// Shows that routing copies no payload byte: the 1 MiB call and result keep their address, and
/// a round trip allocates next to nothing. Prints what it measured.
fn check_zero_copy() {
    let call = mib_call();
    let mut bench = Bench::new(&call);
    let sent = bench.next[0].1.as_ref().map(|m| match m {
        ClientMessage::Request(r) => r.call.as_cbor().as_ptr(),
        _ => unreachable!("requests only"),
    });
    let (up, down) = bench.round_trip();
    assert_eq!(Some(up), sent, "the call went upstream in the memory it came in");
    assert_eq!(down, up, "the result came back in the same memory");
    // Every client once more (maps and ids at their working size), then one round trip counted.
    for _ in 0..CLIENTS {
        bench.round_trip();
    }
    let before = ALLOCATED.current_usage();
    ALLOCATED.reset_peak_usage();
    bench.round_trip();
    let peak = ALLOCATED.peak_usage().saturating_sub(before);
    assert!(peak < 4096, "a round trip of a 1 MiB payload allocated {peak} bytes at its peak");
    eprintln!(
        "router zero-copy: a 1 MiB call and its 1 MiB result kept their address through the router; \
         the round trip's allocations peaked at {peak} bytes (payload: {} bytes each way)",
        call.as_cbor().len()
    );
}

fn group<'a>(c: &'a mut Criterion, name: &str, elements: u64) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(elements));
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    g.sample_size(50);
    g
}

fn routing(c: &mut Criterion) {
    check_zero_copy();

    let small = small_call();
    let mut g = group(c, "route", 2);
    let mut bench = Bench::new(&small);
    g.bench_function("small", |b| b.iter(|| black_box(bench.round_trip())));
    let mut bench = Bench::new(&mib_call());
    g.bench_function("1MiB", |b| b.iter(|| black_box(bench.round_trip())));
    g.finish();

    let frames = Frames::new(&small);
    let mut g = group(c, "codec", 2);
    g.bench_function("small", |b| b.iter(|| codec(black_box(&frames))));
    g.finish();

    let mut g = group(c, "codec_route", 2);
    let mut bench = Bench::new(&small);
    g.bench_function("small", |b| b.iter(|| codec_route(&mut bench, black_box(&frames))));
    g.finish();

    let payload = mib_call();
    let mut into = vec![0u8; payload.as_cbor().len()];
    let mut g = group(c, "memcpy", 1);
    g.bench_function("1MiB", |b| {
        b.iter(|| {
            into.copy_from_slice(black_box(payload.as_cbor()));
            black_box(&into);
        })
    });
    g.finish();
}

criterion_group!(benches, routing);
criterion_main!(benches);
