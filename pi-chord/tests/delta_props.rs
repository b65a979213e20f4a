//! Property tests of `pi_chord::delta`: diff then apply reaches the target; encode then decode
//! gives back the ops, batch after batch of one stream; wire tuples round-trip through JSON.

mod delta_support;

use delta_support::{edit, Rng, Shape};
use pi_chord::delta::{apply, diff, Decoder, Encoder, Op, Path, PathSegment, StatePublisher, StateReplica, WireOp};
use proptest::prelude::*;
use serde_json::{Map, Value};

const PIECES: [&str; 8] = ["a", "b", "é", "😀", " ", "ab", "\n", "xyz"];
const KEYS: [&str; 6] = ["a", "b", "log", "items", "0", "😀"];

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(&PIECES[..]), 0..8).prop_map(|p| p.concat())
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(Value::from),
        (-1000i64..1000).prop_map(|n| Value::from(n as f64 + 0.5)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(&KEYS[..]), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>())),
        ]
    })
}

fn path() -> impl Strategy<Value = Path> + Clone {
    segments(0)
}

fn non_root() -> impl Strategy<Value = Path> + Clone {
    segments(1)
}

fn segments(min: usize) -> impl Strategy<Value = Path> + Clone {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(&KEYS[..]).prop_map(PathSegment::from),
            (0u64..4).prop_map(PathSegment::Index)
        ],
        min..4,
    )
    .prop_map(Path::from)
}

/// Arbitrary ops (not necessarily applicable): for the codec alone.
fn op() -> impl Strategy<Value = Op> {
    let non_root = non_root();
    prop_oneof![
        1 => json().prop_map(Op::Replace),
        4 => (non_root.clone(), json()).prop_map(|(path, value)| Op::Set { path, value }),
        2 => non_root.clone().prop_map(|path| Op::Delete { path }),
        3 => (non_root.clone(), text()).prop_map(|(path, text)| Op::Append { path, text }),
        2 => (non_root, 0u64..10).prop_map(|(path, count)| Op::Truncate { path, count }),
        3 => (path(), 0u64..5, 0u64..5, prop::collection::vec(json(), 0..3))
            .prop_map(|(path, index, remove, items)| Op::Splice { path, index, remove, items }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn diff_then_apply_reaches_any_target(before in json(), after in json()) {
        let ops = diff(&before, &after);
        let mut replica = before.clone();
        apply(&mut replica, ops.clone()).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(&replica, &after);
        prop_assert_eq!(ops.is_empty(), before == after);
    }

    #[test]
    fn diff_then_apply_reaches_an_edited_target(start in json(), seed in any::<u64>(), steps in 1usize..6) {
        let mut rng = Rng::with_seed(seed);
        let shape = Shape { integer_keys: true, reserved_keys: true };
        let mut publisher = StatePublisher::new(start.clone());
        let mut replica = StateReplica::from_snapshot_ops(&publisher.snapshot_ops()).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let mut current = start;
        for _ in 0..steps {
            let mut next = current.clone();
            edit(&mut rng, &mut next, shape);
            let ops = diff(&current, &next);
            let mut direct = current.clone();
            apply(&mut direct, ops).map_err(|e| TestCaseError::fail(format!("{e}")))?;
            prop_assert_eq!(&direct, &next);
            if let Some(wire) = publisher.publish(next.clone()) {
                replica.apply_wire(&wire).map_err(|e| TestCaseError::fail(format!("{e}: {wire}")))?;
            }
            prop_assert_eq!(replica.value(), &next);
            current = next;
        }
    }

    #[test]
    fn encode_then_decode_is_the_identity(batches in prop::collection::vec(prop::collection::vec(op(), 0..8), 1..6)) {
        let mut encoder = Encoder::new();
        let mut decoder = Decoder::new();
        for batch in batches {
            let wire = encoder.encode_json(batch.clone());
            // Every tuple is one Chord's wire grammar accepts, and prints back the same.
            for (i, tuple) in wire.as_array().expect("an array").iter().enumerate() {
                let op = WireOp::from_json(tuple, i).map_err(|e| TestCaseError::fail(format!("{e}: {tuple}")))?;
                prop_assert_eq!(&op.to_json(), tuple);
            }
            let decoded = decoder.decode(&wire).map_err(|e| TestCaseError::fail(format!("{e}: {wire}")))?;
            prop_assert_eq!(decoded, batch);
        }
    }

    #[test]
    fn decoded_ops_print_back_as_they_were_read(op in op()) {
        let json = op.to_json();
        prop_assert_eq!(Op::from_json(&json, 0).map_err(|e| TestCaseError::fail(format!("{e}: {json}")))?, op);
    }
}
