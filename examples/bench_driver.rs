//! Companion of the codec benchmarks (`benches/codec.rs`, `docs/PERFORMANCE.md`).
//!
//! ```text
//! cargo run --release --example bench_driver -- frames [DIR]
//!     write every workload's frames and manifest.json (default DIR: <target>/bench-frames),
//!     for the TypeScript timing script of `cargo xtask bench-reference`
//! cargo run --release --example bench_driver -- run OP WORKLOAD ITERATIONS
//!     run one operation in a loop, for a profiler (perf record, valgrind --tool=callgrind);
//!     OP: decode | decode-pull | decode-shared | decode-serde | encode | encode-vectored | encode-serde | relay
//!         | relay-serde | to-value | memcpy | append | none
//!     and, for `benches/payload_serde.rs` (typed ops on the medium and large calls only):
//!         payload-de | payload-de-value | payload-de-cbor4ii | payload-ser | payload-ser-value
//!         | payload-ser-cbor4ii | payload-to-value | payload-to-value-cbor4ii
//! cargo run --release --example bench_driver -- memory
//!     peak heap bytes of one run of each operation on each workload, above what was
//!     allocated before it (counted by the `peak_alloc` global allocator)
//! cargo run --release --example bench_driver -- report [CRITERION_DIR] [NODE_JSON]
//!     the results table of docs/PERFORMANCE.md from criterion's estimates and the node
//!     script's JSON output
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

#[path = "../benches/common/mod.rs"]
mod common;

use common::ops;
use common::typed::AppendItemsCall;
use common::workloads::{self, Side, Workload};
use pi_protocol::Payload;

const OPS: &[&str] = &[
    "decode",
    "decode-pull",
    "decode-shared",
    "decode-serde",
    "encode",
    "encode-vectored",
    "encode-serde",
    "relay",
    "relay-serde",
    "to-value",
];

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// The workload `name`, its frames read from the files `frames` wrote (so that building the
/// workload does not blur a memory measurement).
fn workload(name: &str) -> Result<Workload, String> {
    let (name, build, side, messages, chunk): (&'static str, fn() -> Workload, _, _, _) = match name {
        "small" => ("small", workloads::small, Side::Client, 1, None),
        "medium" => ("medium", workloads::medium, Side::Client, 1, None),
        "large" => ("large", workloads::large, Side::Client, 1, None),
        "blob" => ("blob", workloads::blob, Side::Client, 1, None),
        "blob_bytewise" => ("blob_bytewise", workloads::blob_bytewise, Side::Client, 1, Some(1)),
        "session" => ("session", workloads::session, Side::Server, 24, None),
        _ => return Err(format!("no workload named {name}")),
    };
    match std::fs::read(target_dir().join("bench-frames").join(format!("{name}.bin"))) {
        Ok(stream) => Ok(Workload { name, side, stream, messages, chunk }),
        Err(_) => Ok(build()),
    }
}

/// What an operation needs before it is timed: the shared chunks, the decoded messages to
/// encode, a destination buffer.
struct Setup {
    shared: Vec<bytes::Bytes>,
    ours: Option<ops::Ours>,
    theirs: Option<ops::Theirs>,
    into: Vec<u8>,
    /// The workload's payloads (`payload-*` operations).
    payloads: Vec<Payload>,
    /// The medium or large call as its type, and cbor4ii's encoding of it.
    call: Option<(AppendItemsCall, Vec<u8>)>,
}

impl Setup {
    fn new(op: &str, w: &Workload) -> Setup {
        Setup {
            shared: if op == "decode-shared" { ops::shared_chunks(w) } else { Vec::new() },
            ours: if op == "encode" || op == "encode-vectored" { Some(ops::decode_ours(w)) } else { None },
            theirs: if op == "encode-serde" { Some(ops::decode_theirs(w)) } else { None },
            into: if op == "memcpy" { vec![0u8; w.stream.len()] } else { Vec::new() },
            payloads: if op.starts_with("payload-") { ops::payloads(w) } else { Vec::new() },
            call: match (op.starts_with("payload-de") || op.starts_with("payload-ser"), w.name) {
                (true, "medium" | "large") => {
                    let call: AppendItemsCall = ops::payloads(w)[0].deserialize().expect("the call reads");
                    let bytes = cbor4ii::serde::to_vec(Vec::new(), &call).expect("cbor4ii writes");
                    Some((call, bytes))
                }
                _ => None,
            },
        }
    }
}

/// Runs `op` once on `w`; returns a checksum of the output.
fn run_once(op: &str, w: &Workload, setup: &mut Setup) -> Result<usize, String> {
    Ok(match op {
        "decode" => std::hint::black_box(ops::decode_ours(w)).len(),
        "decode-pull" => std::hint::black_box(ops::decode_ours_pull(w)).len(),
        "decode-shared" => std::hint::black_box(ops::decode_ours_shared(w, &setup.shared)).len(),
        "decode-serde" => std::hint::black_box(ops::decode_theirs(w)).len(),
        "encode" => setup.ours.as_ref().map_or(0, ops::encode_ours),
        "encode-vectored" => setup.ours.as_ref().map_or(0, ops::encode_ours_vectored),
        "encode-serde" => setup.theirs.as_ref().map_or(0, ops::encode_theirs),
        "relay" => ops::relay_ours(w),
        "relay-serde" => ops::relay_theirs(w),
        "to-value" => ops::decode_to_value(w),
        "memcpy" => usize::from(ops::memcpy(&w.stream, &mut setup.into)),
        "append" => ops::append_bytewise(&w.stream),
        "none" => 0,
        "payload-to-value" => {
            setup.payloads.iter().map(|p| std::hint::black_box(p.to_value()).is_null() as usize).sum()
        }
        "payload-to-value-cbor4ii" => setup
            .payloads
            .iter()
            .map(|p| cbor4ii::serde::from_slice::<Value>(p.as_cbor()).map_or(0, |v| v.is_null() as usize))
            .sum(),
        _ if op.starts_with("payload-") => {
            let (call, bytes) = setup.call.as_ref().ok_or("typed payload operations run on medium and large")?;
            let payload = &setup.payloads[0];
            let items = |c: AppendItemsCall| c.args.0.items.len();
            match op {
                "payload-de" => items(payload.deserialize().map_err(|e| e.to_string())?),
                "payload-de-value" => items(serde_json::from_value(payload.to_value()).map_err(|e| e.to_string())?),
                "payload-de-cbor4ii" => items(cbor4ii::serde::from_slice(bytes).map_err(|e| e.to_string())?),
                "payload-ser" => Payload::from_serialize(call).map_err(|e| e.to_string())?.as_cbor().len(),
                "payload-ser-value" => {
                    let value = serde_json::to_value(call).map_err(|e| e.to_string())?;
                    Payload::from_value(&value).map_err(|e| e.to_string())?.as_cbor().len()
                }
                "payload-ser-cbor4ii" => cbor4ii::serde::to_vec(Vec::new(), call).map_err(|e| e.to_string())?.len(),
                _ => return Err(format!("unknown operation {op}")),
            }
        }
        _ => return Err(format!("unknown operation {op}")),
    })
}

/// Runs `op` on `w` `iterations` times; returns the sum of the checksums.
fn run(op: &str, w: &Workload, iterations: u64) -> Result<usize, String> {
    let mut setup = Setup::new(op, w);
    let mut sum = 0;
    for _ in 0..iterations {
        sum += run_once(op, w, &mut setup)?;
    }
    Ok(sum)
}

/// Counts heap bytes, so that `memory` can report the peak of each operation.
#[global_allocator]
static HEAP: peak_alloc::PeakAlloc = peak_alloc::PeakAlloc;

/// Heap bytes at the peak of one run of `op` on `w`, above what was allocated before it
/// (the input stream and the setup of the operation).
fn peak_bytes(op: &str, w: &Workload) -> Result<usize, String> {
    let mut setup = Setup::new(op, w);
    let before = HEAP.current_usage();
    HEAP.reset_peak_usage();
    std::hint::black_box(run_once(op, w, &mut setup)?);
    Ok(HEAP.peak_usage().saturating_sub(before))
}

fn memory() -> Result<(), String> {
    println!("| workload | stream | {} |", OPS.join(" | "));
    println!("|---|---:|{}", "---:|".repeat(OPS.len()));
    for w in workloads::all() {
        let mut cells = Vec::new();
        for op in OPS {
            if w.chunk.is_some() && !op.starts_with("decode") {
                cells.push("-".to_owned());
                continue;
            }
            cells.push(human_bytes(peak_bytes(op, &w)? as f64));
        }
        println!("| {} | {} | {} |", w.name, human_bytes(w.stream.len() as f64), cells.join(" | "));
    }
    Ok(())
}

fn human_bytes(b: f64) -> String {
    if b >= 1024.0 * 1024.0 {
        format!("{:.2} MiB", b / 1024.0 / 1024.0)
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// Mean time per iteration in nanoseconds from criterion's `estimates.json`.
fn criterion_ns(dir: &Path, group: &str, function: &str) -> Option<f64> {
    let path = dir.join(group.replace('/', "_")).join(function).join("new").join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v["mean"]["point_estimate"].as_f64()
}

fn rate(bytes: f64, messages: f64, ns: f64) -> String {
    let secs = ns / 1e9;
    format!("{} MB/s, {} msg/s", fmt_num(bytes / secs / 1e6), fmt_num(messages / secs))
}

fn fmt_num(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.0}k", x / 1e3)
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

fn time(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Node results: `{ workload: { decode_ns, encode_ns } }`.
fn node_ns(node: &Value, workload: &str, op: &str) -> Option<f64> {
    node["results"].as_array()?.iter().find(|r| r["name"] == workload)?[format!("{op}_ns")].as_f64()
}

fn report(dir: &Path, node: Option<&Value>) -> Result<(), String> {
    println!("| operation | workload | implementation | time/iter | throughput | time / ours |");
    println!("|---|---|---|---:|---|---:|");
    for w in workloads::all() {
        let bytes = w.stream.len() as f64;
        let messages = w.messages as f64;
        let ops: &[(&str, &[&str])] = &[
            ("decode", &["ours", "ours_shared", "serde_ciborium", "memcpy", "append_floor", "typescript"]),
            ("encode", &["ours", "ours_vectored", "serde_ciborium", "typescript"]),
            ("relay", &["ours", "serde_ciborium"]),
            ("to_value", &["ours"]),
        ];
        for (op, impls) in ops {
            let group = format!("{op}/{}", w.name);
            let ours = criterion_ns(dir, &group, "ours");
            for imp in *impls {
                let ns = if *imp == "typescript" {
                    node.and_then(|n| node_ns(n, w.name, op))
                } else {
                    criterion_ns(dir, &group, imp)
                };
                let Some(ns) = ns else { continue };
                let ratio = match (*imp, ours) {
                    ("ours", _) | (_, None) => String::new(),
                    (_, Some(o)) if ns < o => format!("{:.3}", ns / o),
                    (_, Some(o)) => format!("{:.2}", ns / o),
                };
                println!("| {op} | {} | {imp} | {} | {} | {ratio} |", w.name, time(ns), rate(bytes, messages, ns));
            }
        }
    }
    Ok(())
}

/// Writes the workloads' frames and manifest into `dir`, and says where.
fn write_frames(dir: &Path) -> Result<(), String> {
    workloads::write_frames(dir).map_err(|e| e.to_string())?;
    println!("wrote the frames of {} workloads and manifest.json to {}", workloads::all().len(), dir.display());
    Ok(())
}

const USAGE: &str =
    "usage: bench_driver frames [DIR] | run OP WORKLOAD ITERATIONS | memory | report [CRITERION_DIR] [NODE_JSON]";

/// What `--help` prints (on stdout, exit status 0).
const HELP: &str = "Companion of the codec benchmarks (benches/codec.rs, docs/PERFORMANCE.md).

usage: bench_driver frames [DIR] | run OP WORKLOAD ITERATIONS | memory | report [CRITERION_DIR] [NODE_JSON]

  frames [DIR]       write every workload's frames and manifest.json (default DIR: <target>/bench-frames)
  run OP WORKLOAD N  run one operation N times in a loop, for a profiler
  memory             peak heap bytes of one run of each operation on each workload
  report [CRITERION_DIR] [NODE_JSON]
                     the results table of docs/PERFORMANCE.md
  -h, --help         print this help";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["frames"] => write_frames(&target_dir().join("bench-frames")),
        ["frames", dir] => write_frames(Path::new(dir)),
        ["run", op, name, iterations] => (|| {
            let w = workload(name)?;
            let n: u64 = iterations.parse().map_err(|_| "ITERATIONS must be a number".to_owned())?;
            let sum = run(op, &w, n)?;
            println!("{op} {name} x{n}: checksum {sum}");
            Ok(())
        })(),
        ["memory"] => memory(),
        ["report", rest @ ..] => (|| {
            let dir = rest.first().map(PathBuf::from).unwrap_or_else(|| target_dir().join("criterion"));
            let node = match rest.get(1) {
                Some(path) => {
                    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
                    Some(serde_json::from_str::<Value>(&text).map_err(|e| format!("{path}: {e}"))?)
                }
                None => None,
            };
            report(&dir, node.as_ref())
        })(),
        ["--help" | "-h" | "help"] => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
