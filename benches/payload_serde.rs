//! Typed payloads (results in `docs/PERFORMANCE.md`, section "Typed payloads").
//!
//! For the calls of the `small`, `medium`, `large` and `blob` workloads (`workloads.rs`), read
//! into and written from the Rust types of `typed.rs`, this times, in one run:
//! - `payload_de/<workload>`: payload -> `T`. `ours` = `payload.deserialize::<T>()`;
//!   `via_value` = `serde_json::from_value::<T>(payload.to_value())`; `cbor4ii` =
//!   `cbor4ii::serde::from_slice::<T>` over cbor4ii's own encoding of the same `t` (its length
//!   within a few bytes of the payload's). cbor4ii cannot read the payload itself into `T`: an
//!   `f64` field holding an integral value (`score` of every seventh item) is a CBOR integer
//!   there, as the protocol writes JSON numbers, and cbor4ii's `f64` wants a CBOR float.
//! - `payload_ser/<workload>`: `T` -> payload. `ours` = `Payload::from_serialize(&t)`;
//!   `via_value` = `Payload::from_value(&serde_json::to_value(&t)?)`; `cbor4ii` =
//!   `cbor4ii::serde::to_vec` (plain CBOR bytes, no checks, no `Payload`).
//! - `payload_to_value/<workload>`, every workload (the session's results and updates too):
//!   `ours` = `payload.to_value()` on every payload; `cbor4ii` = cbor4ii's serde deserializer
//!   into `serde_json::Value` over the same bytes.
//!
//! Throughput is the payloads' length. Run with `cargo bench --bench payload_serde`; a filter
//! narrows it (`cargo bench --bench payload_serde -- payload_de/large`).
// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use std::fmt::Debug;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use pi_protocol::Payload;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

mod common;

use common::typed::{AppendItemsCall, PromptCall, WriteCall};
use common::{ops, workloads};

fn group<'a>(c: &'a mut Criterion, name: String, bytes: usize) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(bytes as u64));
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(2));
    // Large inputs take milliseconds per iteration: fewer samples keep the run short.
    g.sample_size(if bytes > 100_000 { 10 } else { 50 });
    g
}

/// Times payload -> `T` and `T` -> payload for the call of `workload`.
fn typed<T: Serialize + DeserializeOwned + PartialEq + Debug>(c: &mut Criterion, workload: &workloads::Workload) {
    let payload = ops::payloads(workload).remove(0);
    let len = payload.as_cbor().len();
    let t: T = payload.deserialize().expect("the call reads as its type");
    // The three paths agree before anything is timed.
    assert_eq!(serde_json::from_value::<T>(payload.to_value()).expect("via value"), t);
    let cbor4ii_bytes = cbor4ii::serde::to_vec(Vec::new(), &t).expect("cbor4ii writes");
    assert_eq!(cbor4ii::serde::from_slice::<T>(&cbor4ii_bytes).expect("cbor4ii reads"), t);
    assert_eq!(Payload::from_serialize(&t).expect("writes"), payload, "T writes the call's own bytes");
    assert_eq!(Payload::from_value(&serde_json::to_value(&t).unwrap()).unwrap().to_value(), payload.to_value());

    let mut g = group(c, format!("payload_de/{}", workload.name), len);
    g.bench_function("ours", |b| b.iter(|| black_box(&payload).deserialize::<T>().unwrap()));
    g.bench_function("via_value", |b| b.iter(|| serde_json::from_value::<T>(black_box(&payload).to_value()).unwrap()));
    g.bench_function("cbor4ii", |b| b.iter(|| cbor4ii::serde::from_slice::<T>(black_box(&cbor4ii_bytes)).unwrap()));
    g.finish();

    let mut g = group(c, format!("payload_ser/{}", workload.name), len);
    g.bench_function("ours", |b| b.iter(|| Payload::from_serialize(black_box(&t)).unwrap()));
    g.bench_function("via_value", |b| {
        b.iter(|| Payload::from_value(&serde_json::to_value(black_box(&t)).unwrap()).unwrap())
    });
    g.bench_function("cbor4ii", |b| b.iter(|| cbor4ii::serde::to_vec(Vec::new(), black_box(&t)).unwrap()));
    g.finish();
}

/// Times `to_value` on every payload of `workload`, ours and cbor4ii's serde path.
fn to_value(c: &mut Criterion, workload: &workloads::Workload) {
    let payloads = ops::payloads(workload);
    let len = payloads.iter().map(|p| p.as_cbor().len()).sum();
    for p in &payloads {
        assert_eq!(cbor4ii::serde::from_slice::<Value>(p.as_cbor()).expect("cbor4ii"), p.to_value());
    }
    let mut g = group(c, format!("payload_to_value/{}", workload.name), len);
    g.bench_function("ours", |b| b.iter(|| black_box(&payloads).iter().map(Payload::to_value).collect::<Vec<_>>()));
    g.bench_function("cbor4ii", |b| {
        b.iter(|| {
            black_box(&payloads)
                .iter()
                .map(|p| cbor4ii::serde::from_slice::<Value>(p.as_cbor()).unwrap())
                .collect::<Vec<_>>()
        })
    });
    g.finish();
}

fn payload_serde(c: &mut Criterion) {
    typed::<PromptCall>(c, &workloads::small());
    typed::<AppendItemsCall>(c, &workloads::medium());
    typed::<AppendItemsCall>(c, &workloads::large());
    typed::<WriteCall>(c, &workloads::blob());
    for w in [workloads::small(), workloads::medium(), workloads::large(), workloads::blob(), workloads::session()] {
        to_value(c, &w);
    }
}

criterion_group!(benches, payload_serde);
criterion_main!(benches);
