//! Differential proof of `pi_chord::delta` against `@earendil-works/chord@0.85.1` in node.
//!
//! Needs the oracle installed by `pi-chord/tests/oracle/install.sh` (into
//! `target/chord-oracle`, or `$PI_CHORD_ORACLE_DIR`); without it each test prints a SKIP line
//! and passes. `PI_CHORD_DELTA_CASES` sets the number of cases of each test (default 2,000;
//! the long run is 100,000), `PI_CHORD_DELTA_SEED` the seed.
//!
//! - `streams`: random values edited at random, several batches per stream with resets.
//!   Chord's encoder must write for Rust's ops exactly what Rust's encoder wrote; Chord's
//!   decoder and `apply` must turn Rust's batches into Rust's values; Rust must decode and
//!   apply the batches Chord's tracker and encoder publish for the same values into the same
//!   values; and Rust's producer must derive the very ops Chord's tracker derives (where
//!   JavaScript's key order is the map's).
//! - `verdicts`: those streams' batches mutated (dropped, added, retyped, reordered parts, bad
//!   ids, unsafe segments, counts): Rust's `StateReplica` and Chord's consumer path (decoder,
//!   `isBase`, `applyImmutable`) must fail on the same batch, or agree on every value.

mod delta_support;

use delta_support::{edit, has_integer_key, value, Oracle, Rng, Shape};
use pi_chord::delta::{diff, DeltaError, Encoder, Op, StatePublisher, StateReplica};
use serde_json::{json, Value};

fn cases() -> usize {
    std::env::var("PI_CHORD_DELTA_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2_000)
}

fn seed() -> u64 {
    std::env::var("PI_CHORD_DELTA_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(2026)
}

fn oracle(test: &str) -> Option<Oracle> {
    match Oracle::start() {
        Ok(o) => Some(o),
        Err(why) => {
            println!("SKIP {test}: {why}");
            None
        }
    }
}

/// One random stream: values, resets, Rust's decoded batches and wire batches.
struct Stream {
    values: Vec<Value>,
    resets: Vec<bool>,
    ops: Vec<Vec<Op>>,
    wire: Vec<Value>,
    shape: Shape,
}

fn stream(rng: &mut Rng) -> Stream {
    let shape = Shape { integer_keys: rng.u8(..100) < 20, reserved_keys: rng.u8(..100) < 10 };
    let mut current = if rng.u8(..100) < 85 {
        // Mostly an object at the root, as Chord's state members are.
        let mut v = value(rng, 3, shape);
        if !v.is_object() {
            v = json!({"value": v, "log": ""});
        }
        v
    } else {
        value(rng, 3, shape)
    };
    let mut values = vec![current.clone()];
    let mut resets = vec![false];
    let mut ops = vec![vec![Op::Replace(current.clone())]];
    let mut encoder = Encoder::new();
    let mut wire = vec![encoder.encode_json(ops[0].clone())];
    let mut publisher = StatePublisher::new(current.clone());
    assert_eq!(publisher.snapshot_ops(), wire[0]);
    for _ in 0..1 + rng.usize(..6) {
        let mut next = current.clone();
        for _ in 0..1 + rng.usize(..3) {
            edit(rng, &mut next, shape);
        }
        let reset = rng.u8(..100) < 8;
        let batch = if reset { vec![Op::Replace(next.clone())] } else { diff(&current, &next) };
        let encoded = encoder.encode_json(batch.clone());
        // The publisher writes the same batches (a reset is its snapshot).
        let published = publisher.publish(next.clone());
        if reset {
            assert_eq!(publisher.snapshot_ops(), encoded);
        } else {
            assert_eq!(published.unwrap_or(json!([])), encoded, "publisher and encoder differ");
        }
        values.push(next.clone());
        resets.push(reset);
        ops.push(batch);
        wire.push(encoded);
        current = next;
    }
    Stream { values, resets, ops, wire, shape }
}

fn ops_json(batch: &[Op]) -> Value {
    Value::Array(batch.iter().map(Op::to_json).collect())
}

#[test]
fn streams() {
    let Some(mut oracle) = oracle("delta_oracle::streams") else { return };
    let mut rng = Rng::with_seed(seed());
    let (mut batches, mut exact) = (0usize, 0usize);
    for case in 0..cases() {
        let s = stream(&mut rng);
        let answer = oracle.ask(&json!({
            "kind": "stream",
            "values": s.values,
            "ops": s.ops.iter().map(|b| ops_json(b)).collect::<Vec<_>>(),
            "wire": s.wire,
            "resets": s.resets,
        }));
        let context = || format!("case {case}: values {}", Value::Array(s.values.clone()));
        // 1. Chord's encoder writes Rust's wire batches for Rust's ops.
        assert_eq!(answer["encoded"], Value::Array(s.wire.clone()), "encoders differ; {}", context());
        // 2. Chord decodes and applies Rust's batches into Rust's values.
        assert_eq!(
            answer["applied"]["values"],
            Value::Array(s.values.clone()),
            "Chord's replica differs; {}",
            context()
        );
        // 3. Rust decodes and applies the batches Chord publishes for the same values.
        let chord_wire = answer["trackedWire"].as_array().expect("trackedWire");
        let mut replica = StateReplica::from_snapshot_ops(&chord_wire[0]).expect("Chord's base batch");
        assert_eq!(replica.value(), &json!({"v": s.values[0]}));
        for (i, w) in chord_wire.iter().enumerate().skip(1) {
            replica.apply_wire(w).unwrap_or_else(|e| panic!("batch {i} {w}: {e}; {}", context()));
            assert_eq!(
                replica.value(),
                &json!({"v": s.values[i]}),
                "Rust's replica differs at batch {i} {w}; {}",
                context()
            );
        }
        // 4. Rust derives the ops Chord's tracker derives (same key order as JavaScript's).
        if !s.shape.integer_keys || !s.values.iter().any(has_integer_key) {
            exact += 1;
            let tracked = answer["tracked"].as_array().expect("tracked");
            for (i, theirs) in tracked.iter().enumerate().skip(1) {
                let ours = if s.resets[i] {
                    vec![Op::Replace(json!({"v": s.values[i]}))]
                } else {
                    diff(&json!({"v": s.values[i - 1]}), &json!({"v": s.values[i]}))
                };
                assert_eq!(&ops_json(&ours), theirs, "producers differ at batch {i}; {}", context());
            }
        }
        batches += s.values.len();
    }
    println!(
        "delta_oracle::streams: {} streams, {batches} batches, {exact} with op-for-op producer checks: all agree",
        cases()
    );
}

/// A random mutation of one wire batch.
fn mutate(rng: &mut Rng, batch: &mut Value) {
    let Some(ops) = batch.as_array_mut() else { return };
    if ops.is_empty() || rng.u8(..100) < 10 {
        ops.insert(rng.usize(..=ops.len()), random_op(rng));
        return;
    }
    let at = rng.usize(..ops.len());
    match rng.usize(..6) {
        0 => {
            ops.remove(at);
        }
        1 => {
            let dup = ops[at].clone();
            ops.insert(rng.usize(..=ops.len()), dup);
        }
        2 => {
            let other = rng.usize(..ops.len());
            ops.swap(at, other);
        }
        _ => mutate_op(rng, &mut ops[at]),
    }
}

fn random_segment(rng: &mut Rng) -> Value {
    match rng.usize(..11) {
        0 => json!("__proto__"),
        1 => json!("constructor"),
        2 => json!(-1),
        3 => json!(1.5),
        4 => json!(true),
        5 => json!("0"),
        6 => json!(rng.usize(..4)),
        7 => json!(1_000_000),
        8 => json!(null),
        9 => json!("log"),
        _ => json!("value"),
    }
}

fn random_number(rng: &mut Rng) -> Value {
    match rng.usize(..8) {
        0 => json!(-1),
        1 => json!(0.5),
        2 => json!("1"),
        3 => json!(1e300),
        4 => json!(9_007_199_254_740_991u64),
        _ => json!(rng.usize(..8)),
    }
}

fn random_op(rng: &mut Rng) -> Value {
    let path = if rng.bool() { json!(rng.usize(..4)) } else { json!([random_segment(rng)]) };
    match rng.usize(..9) {
        0 => json!(["#", rng.usize(..4), [random_segment(rng)]]),
        1 => json!(["s", path, 1]),
        2 => json!(["d", path]),
        3 => json!(["a", path, "x"]),
        4 => json!(["t", path, random_number(rng)]),
        5 => json!(["p", path, random_number(rng), random_number(rng), [1]]),
        6 => json!(["r", {"value": 1}]),
        7 => json!(["q", path]),
        _ => json!([]),
    }
}

fn mutate_op(rng: &mut Rng, op: &mut Value) {
    let Some(t) = op.as_array_mut() else { return };
    if t.is_empty() {
        return;
    }
    let at = rng.usize(..t.len());
    match rng.usize(..8) {
        0 => t[0] = json!(*rng.choice(&["r", "s", "d", "a", "t", "p", "#", "x", ""]).unwrap()),
        1 => {
            t.remove(at);
        }
        2 => t.push(json!(0)),
        3 => t[at] = random_number(rng),
        4 => t[at] = json!([random_segment(rng)]),
        5 => {
            if let Some(path) = t.get_mut(1).and_then(Value::as_array_mut) {
                let p = rng.usize(..=path.len());
                path.insert(p, random_segment(rng));
            } else {
                t[at] = json!(rng.usize(..4));
            }
        }
        6 => t[at] = json!({"k": [1, 2]}),
        _ => t[at] = json!(*rng.choice(&["text", "😀", ""]).unwrap()),
    }
}

/// Rust's consumer: the values after each batch, or the failing batch and error; the same
/// from the borrowing and the owning ways in.
fn rust_verdict(wire: &[Value]) -> Result<Vec<Value>, (usize, DeltaError)> {
    let borrowed = (|| {
        let mut replica = StateReplica::from_snapshot_ops(&wire[0]).map_err(|e| (0, e))?;
        let mut values = vec![replica.value().clone()];
        for (i, w) in wire.iter().enumerate().skip(1) {
            replica.apply_wire(w).map_err(|e| (i, e))?;
            values.push(replica.value().clone());
        }
        Ok(values)
    })();
    let owned = (|| {
        let mut replica = StateReplica::from_snapshot_ops_owned(wire[0].clone()).map_err(|e| (0, e))?;
        let mut values = vec![replica.value().clone()];
        for (i, w) in wire.iter().enumerate().skip(1) {
            replica.apply_wire_owned(w.clone()).map_err(|e| (i, e))?;
            values.push(replica.value().clone());
        }
        Ok(values)
    })();
    assert_eq!(borrowed, owned, "apply_wire and apply_wire_owned differ on {}", Value::Array(wire.to_vec()));
    borrowed
}

#[test]
fn verdicts() {
    let Some(mut oracle) = oracle("delta_oracle::verdicts") else { return };
    let mut rng = Rng::with_seed(seed() ^ 0x5EED);
    let (mut refused, mut surrogate) = (0usize, 0usize);
    for case in 0..cases() {
        let s = stream(&mut rng);
        let mut wire = s.wire.clone();
        for _ in 0..1 + rng.usize(..2) {
            let at = if rng.u8(..100) < 15 { 0 } else { rng.usize(..wire.len()) };
            mutate(&mut rng, &mut wire[at]);
        }
        let answer = oracle.ask(&json!({"kind": "verdict", "wire": wire}));
        let ours = rust_verdict(&wire);
        let context = || format!("case {case}: wire {}", Value::Array(wire.clone()));
        match (&ours, answer.get("values")) {
            (Ok(values), Some(theirs)) => {
                assert_eq!(&Value::Array(values.clone()), theirs, "values differ; {}", context());
            }
            (Err((at, error)), None) => {
                refused += 1;
                assert_eq!(
                    Some(*at as u64),
                    answer["at"].as_u64(),
                    "failed on another batch ({error} vs {answer}); {}",
                    context()
                );
                if answer["loneSurrogate"] == json!(true) {
                    surrogate += 1;
                    assert!(matches!(error, DeltaError::SplitsSurrogatePair { .. }), "{error}; {}", context());
                }
            }
            (Ok(_), None) => panic!("Rust accepted what Chord refused ({answer}); {}", context()),
            (Err((at, error)), Some(_)) => {
                panic!("Rust refused batch {at} ({error}) that Chord accepted; {}", context())
            }
        }
    }
    println!(
        "delta_oracle::verdicts: {} mutated streams, {refused} refused by both on the same batch ({surrogate} of them a split surrogate pair, where Chord leaves a lone surrogate), the rest agreed value for value",
        cases()
    );
}
