//! Codec benchmarks (issue 4, results in `docs/PERFORMANCE.md`).
//!
//! For every workload of `workloads.rs` (small, medium, large, blob, the recorded session
//! stream, the blob one byte at a time) this times, in one run:
//! - `decode/<workload>`: this crate (`ours`: `ClientMessageDecoder`/`ServerMessageDecoder`
//!   over `&[u8]` with `push_each`; `ours_pull`: the same pull style, with `messages`;
//!   `ours_shared`: the zero-copy decoders over `Bytes`), the serde + ciborium
//!   baseline (`serde_ciborium`), and the floors (`memcpy` of the stream into a buffer allocated
//!   beforehand; `append_floor`, appending it to a `Vec` one byte at a time, for the bytewise
//!   workload);
//! - `encode/<workload>`: encoding every decoded message as a frame, ours and the baseline's;
//!   `ours_vectored` builds the `EncodedFrame` handed to `write_vectored` (payloads of 4 KiB or
//!   more shared with the message, not copied) instead of one contiguous buffer;
//! - `relay/<workload>`: decode then re-encode without touching payloads;
//! - `to_value/<workload>`: our decode followed by `Payload::to_value()` on every payload.
//!
//! Throughput is the workload's stream length. Run with `cargo bench --bench codec`; a filter
//! narrows it (`cargo bench --bench codec -- decode/small`).
// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};

mod common;

use common::ops;
use common::workloads::{self, Workload};

fn group<'a>(c: &'a mut Criterion, op: &str, w: &Workload) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(format!("{op}/{}", w.name));
    g.throughput(Throughput::Bytes(w.stream.len() as u64));
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(2));
    // Large inputs take milliseconds per iteration: fewer samples keep the run short.
    g.sample_size(if w.stream.len() > 100_000 { 10 } else { 50 });
    g
}

fn codec(c: &mut Criterion) {
    for w in workloads::all() {
        ops::check(&w);
        let shared = ops::shared_chunks(&w);
        let bytewise = w.chunk.is_some();

        let mut g = group(c, "decode", &w);
        g.bench_function("ours", |b| b.iter(|| ops::decode_ours(black_box(&w))));
        g.bench_function("ours_pull", |b| b.iter(|| ops::decode_ours_pull(black_box(&w))));
        g.bench_function("ours_shared", |b| b.iter(|| ops::decode_ours_shared(black_box(&w), black_box(&shared))));
        g.bench_function("serde_ciborium", |b| b.iter(|| ops::decode_theirs(black_box(&w))));
        if bytewise {
            g.bench_function("append_floor", |b| b.iter(|| ops::append_bytewise(black_box(&w.stream))));
        } else {
            let mut into = vec![0u8; w.stream.len()];
            g.bench_function("memcpy", |b| b.iter(|| ops::memcpy(black_box(&w.stream), &mut into)));
        }
        g.finish();
        if bytewise {
            continue;
        }

        let ours = ops::decode_ours(&w);
        let theirs = ops::decode_theirs(&w);
        let mut g = group(c, "encode", &w);
        g.bench_function("ours", |b| b.iter(|| ops::encode_ours(black_box(&ours))));
        g.bench_function("ours_vectored", |b| b.iter(|| ops::encode_ours_vectored(black_box(&ours))));
        g.bench_function("serde_ciborium", |b| b.iter(|| ops::encode_theirs(black_box(&theirs))));
        g.finish();

        let mut g = group(c, "relay", &w);
        g.bench_function("ours", |b| b.iter(|| ops::relay_ours(black_box(&w))));
        g.bench_function("serde_ciborium", |b| b.iter(|| ops::relay_theirs(black_box(&w))));
        g.finish();

        let mut g = group(c, "to_value", &w);
        g.bench_function("ours", |b| b.iter(|| ops::decode_to_value(black_box(&w))));
        g.finish();
    }
}

criterion_group!(benches, codec);
criterion_main!(benches);
