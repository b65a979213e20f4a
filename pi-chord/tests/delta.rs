//! Unit tests of `pi_chord::delta`: every op kind, every error path, the codec's interning,
//! the producer's choices, and the two stream types.

use pi_chord::delta::{
    apply, diff, diff_with, Decoder, DeltaError, DiffOptions, Encoder, Op, Path, PathRef, PathSegment, StatePublisher,
    StateReplica, WireOp,
};
use serde_json::{json, Value};

fn path(segments: &[Value]) -> Path {
    Path::from_json(&Value::Array(segments.to_vec())).expect("a safe path")
}

fn p(v: Value) -> Path {
    Path::from_json(&v).expect("a safe path")
}

/// Decodes and applies one batch to `value` with a fresh decoder, borrowing the batch and
/// owning it: both ways must agree.
fn run(value: &mut Value, wire: Value) -> Result<(), DeltaError> {
    let mut owned = value.clone();
    let by_value = Decoder::new().decode_apply_owned(&mut owned, wire.clone());
    let by_ref = Decoder::new().decode_apply(value, &wire);
    assert_eq!(by_ref, by_value, "{wire}");
    if by_ref.is_ok() {
        assert_eq!(*value, owned, "{wire}");
    }
    by_ref
}

fn applied(mut value: Value, wire: Value) -> Value {
    run(&mut value, wire.clone()).unwrap_or_else(|e| panic!("{wire}: {e}"));
    value
}

fn refused(mut value: Value, wire: Value) -> DeltaError {
    match run(&mut value, wire.clone()) {
        Ok(()) => panic!("{wire} was accepted: {value}"),
        Err(e) => e,
    }
}

// ---- r, s, d, a, t, p applied ----

#[test]
fn replace_replaces_the_whole_value() {
    assert_eq!(applied(json!({"a": 1}), json!([["r", [1, 2]]])), json!([1, 2]));
    assert_eq!(applied(json!(null), json!([["r", "text"]])), json!("text"));
}

#[test]
fn set_writes_keys_and_elements() {
    assert_eq!(
        applied(json!({"a": 1}), json!([["s", ["a"], 2], ["s", ["b"], {"c": 3}]])),
        json!({"a": 2, "b": {"c": 3}})
    );
    assert_eq!(applied(json!({"a": [1, 2]}), json!([["s", ["a", 0], 9]])), json!({"a": [9, 2]}));
    // One past the end appends.
    assert_eq!(applied(json!({"a": [1, 2]}), json!([["s", ["a", 2], 3]])), json!({"a": [1, 2, 3]}));
    // Deep inside objects and arrays.
    assert_eq!(applied(json!({"m": [{"t": "x"}]}), json!([["s", ["m", 0, "t"], "y"]])), json!({"m": [{"t": "y"}]}));
}

#[test]
fn set_past_the_end_of_an_array_is_refused() {
    let e = refused(json!({"a": [1]}), json!([["s", ["a", 2], 3]]));
    assert!(matches!(e, DeltaError::IndexOutOfRange { index: 0, position: 2, .. }), "{e}");
    let e = refused(json!({"a": [1]}), json!([["s", ["a", 4294967290u64], 3]]));
    assert!(matches!(e, DeltaError::IndexOutOfRange { position: 4294967290, .. }), "{e}");
}

#[test]
fn a_key_on_an_array_is_unsafe() {
    let e = refused(json!({"a": [1]}), json!([["s", ["a", "length"], 0]]));
    assert!(matches!(e, DeltaError::UnsafeSegment { .. }), "{e}");
    let e = refused(json!({"a": [{"b": 1}]}), json!([["s", ["a", "0", "b"], 0]]));
    assert!(matches!(e, DeltaError::UnsafeSegment { .. }), "{e}");
}

#[test]
fn an_index_on_an_object_addresses_its_javascript_key() {
    assert_eq!(applied(json!({"o": {"5": 1}}), json!([["s", ["o", 5], 2]])), json!({"o": {"5": 2}}));
    assert_eq!(applied(json!({"5": {"x": 1}}), json!([["s", [5, "x"], 2]])), json!({"5": {"x": 2}}));
    // Past 2^53 JavaScript spells the nearest double.
    assert_eq!(applied(json!({}), json!([["s", [1152921504606846976u64], 1]])), json!({"1152921504606847000": 1}));
}

#[test]
fn delete_removes_keys_and_elements() {
    assert_eq!(applied(json!({"a": 1, "b": 2}), json!([["d", ["a"]]])), json!({"b": 2}));
    // An absent key: no error, as JavaScript's delete.
    assert_eq!(applied(json!({"a": 1}), json!([["d", ["zz"]]])), json!({"a": 1}));
    // An element is spliced out.
    assert_eq!(applied(json!([1, 2, 3]), json!([["d", [1]]])), json!([1, 3]));
    let e = refused(json!([1, 2, 3]), json!([["d", [3]]]));
    assert!(matches!(e, DeltaError::UnresolvablePath { .. }), "{e}");
}

#[test]
fn append_extends_a_string() {
    assert_eq!(applied(json!({"log": "a"}), json!([["a", ["log"], "b😀"]])), json!({"log": "ab😀"}));
    assert_eq!(applied(json!({"l": ["x"]}), json!([["a", ["l", 0], "y"]])), json!({"l": ["xy"]}));
    for (value, wire) in [
        (json!({"log": 1}), json!([["a", ["log"], "b"]])),
        (json!({}), json!([["a", ["log"], "b"]])),
        (json!({"l": ["x"]}), json!([["a", ["l", 1], "y"]])),
        (json!({"l": [1]}), json!([["a", ["l", 0], "y"]])),
    ] {
        let e = refused(value, wire);
        assert!(matches!(e, DeltaError::UnresolvablePath { .. }), "{e}");
    }
}

#[test]
fn truncate_counts_utf16_code_units() {
    let t = |s: &str, n: u64| applied(json!({"s": s}), json!([["t", ["s"], n]]))["s"].clone();
    assert_eq!(t("abc", 0), json!("abc"));
    assert_eq!(t("abc", 2), json!("c"));
    assert_eq!(t("abc", 3), json!(""));
    assert_eq!(t("abc", 99), json!(""), "a count past the end empties the string, as slice does");
    assert_eq!(t("é€x", 2), json!("x"));
    assert_eq!(t("😀x", 2), json!("x"), "an astral character is two units");
    assert_eq!(t("a😀x", 3), json!("x"));
    assert_eq!(applied(json!({"s": ["ab"]}), json!([["t", ["s", 0], 1]])), json!({"s": ["b"]}));
    assert_eq!(applied(json!({"s": "ab"}), json!([["t", ["s"], 1e300]])), json!({"s": ""}));
}

#[test]
fn truncate_inside_a_surrogate_pair_is_refused() {
    let e = refused(json!({"s": "a😀x"}), json!([["t", ["s"], 2]]));
    assert!(matches!(e, DeltaError::SplitsSurrogatePair { index: 0, count: 2, .. }), "{e}");
}

#[test]
fn truncate_needs_a_string() {
    for value in [json!({"s": 1}), json!({}), json!({"s": [""]})] {
        let e = refused(value, json!([["t", ["s"], 1]]));
        assert!(matches!(e, DeltaError::UnresolvablePath { .. }), "{e}");
    }
}

#[test]
fn splice_clamps_as_javascript_does() {
    let sp = |v: Value, i: Value, r: Value, items: Value| {
        applied(json!({"l": v}), json!([["p", ["l"], i, r, items]]))["l"].clone()
    };
    assert_eq!(sp(json!([1, 2, 3]), json!(1), json!(1), json!(["x", "y"])), json!([1, "x", "y", 3]));
    assert_eq!(sp(json!([1, 2, 3]), json!(3), json!(0), json!([4])), json!([1, 2, 3, 4]));
    assert_eq!(
        sp(json!([1, 2, 3]), json!(10), json!(5), json!([4])),
        json!([1, 2, 3, 4]),
        "start clamped to the length"
    );
    assert_eq!(sp(json!([1, 2, 3]), json!(1), json!(99), json!([])), json!([1]), "count clamped");
    assert_eq!(sp(json!([1, 2, 3]), json!(1e300), json!(1e300), json!([0])), json!([1, 2, 3, 0]));
    // The root may be spliced.
    assert_eq!(applied(json!([1, 2]), json!([["p", [], 0, 1, []]])), json!([2]));
}

#[test]
fn one_element_splices_insert_and_remove_anywhere() {
    // One item in or one out is applied as an insertion or a removal: every position, the
    // clamped ones included, gives what JavaScript's splice gives.
    let sp = |i: Value, r: Value, items: Value| {
        applied(json!({"l": [1, 2, 3]}), json!([["p", ["l"], i, r, items]]))["l"].clone()
    };
    assert_eq!(sp(json!(0), json!(0), json!(["x"])), json!(["x", 1, 2, 3]));
    assert_eq!(sp(json!(2), json!(0), json!(["x"])), json!([1, 2, "x", 3]));
    assert_eq!(sp(json!(3), json!(0), json!(["x"])), json!([1, 2, 3, "x"]));
    assert_eq!(sp(json!(7), json!(0), json!(["x"])), json!([1, 2, 3, "x"]), "start clamped");
    assert_eq!(sp(json!(0), json!(1), json!([])), json!([2, 3]));
    assert_eq!(sp(json!(2), json!(1), json!([])), json!([1, 2]));
    assert_eq!(sp(json!(2), json!(5), json!([])), json!([1, 2]), "count clamped to one");
    assert_eq!(sp(json!(3), json!(1), json!([])), json!([1, 2, 3]), "nothing left to remove");
    assert_eq!(sp(json!(1), json!(1), json!(["x"])), json!([1, "x", 3]), "one replaced");
    assert_eq!(applied(json!([]), json!([["p", [], 0, 0, [{"a": 1}]]])), json!([{"a": 1}]));
}

#[test]
fn splice_needs_an_array() {
    for (value, wire) in [
        (json!({"l": {}}), json!([["p", ["l"], 0, 0, []]])),
        (json!({}), json!([["p", ["l"], 0, 0, []]])),
        (json!({"a": 1}), json!([["p", [], 0, 0, []]])),
        (json!({"l": "text"}), json!([["p", ["l"], 0, 0, []]])),
    ] {
        let e = refused(value, wire);
        assert!(matches!(e, DeltaError::UnresolvablePath { .. }), "{e}");
    }
}

#[test]
fn paths_resolve_through_existing_containers_only() {
    for (value, wire) in [
        (json!({}), json!([["s", ["a", "b"], 1]])),
        (json!({"a": 1}), json!([["s", ["a", "b"], 1]])),
        (json!({"a": "xyz"}), json!([["s", ["a", 0], 1]])),
        (json!({"a": []}), json!([["s", ["a", 0, "b"], 1]])),
        (json!(null), json!([["s", ["a"], 1]])),
    ] {
        let e = refused(value, wire.clone());
        assert!(matches!(e, DeltaError::UnresolvablePath { index: 0, .. }), "{wire}: {e}");
    }
}

// ---- the tuples' shapes ----

#[test]
fn malformed_wire_tuples_are_refused() {
    for (wire, reason) in [
        (json!([]), "op is not a tuple"),
        (json!("s"), "op is not a tuple"),
        (json!(["r"]), "r arity"),
        (json!(["r", 1, 2]), "r arity"),
        (json!(["s"]), "s arity"),
        (json!(["s", ["a"], 1, 2]), "s arity"),
        (json!(["d", ["a"], 1]), "d arity"),
        (json!(["a"]), "a arity"),
        (json!(["a", ["a"], 1]), "a value"),
        (json!(["a", 1]), "a value"),
        (json!(["t", ["a"], -1]), "t count"),
        (json!(["t", ["a"], 1.5]), "t count"),
        (json!(["t", "1"]), "t count"),
        (json!(["t"]), "t arity"),
        // Four elements are the short form: its index is the path.
        (json!(["p", ["a"], 0, 0]), "p index"),
        (json!(["p", 0, 0, {}]), "p items"),
        (json!(["p", ["a"], -1, 0, []]), "p index"),
        (json!(["p", 0, "x", []]), "p remove"),
        (json!(["p", 0, 0]), "p arity"),
        (json!(["#", 0]), "# shape"),
        (json!(["#", -1, ["a"]]), "# shape"),
        (json!(["#", 0, "a"]), "# shape"),
        (json!(["s", "a", 1]), "path is not an array"),
        (json!(["s", -1, 1]), "bad path id"),
        (json!(["s", 0.5, 1]), "bad path id"),
    ] {
        let e = WireOp::from_json(&wire, 3).err().unwrap_or_else(|| panic!("{} was accepted", wire));
        assert_eq!(e, DeltaError::Malformed { index: 3, reason }, "{wire}");
        // The decoder refuses the same, naming the op's index.
        let e = refused(json!({}), json!([["s", ["x"], 1], wire]));
        assert_eq!(e.op_index(), Some(1), "{wire}: {e}");
    }
}

#[test]
fn unknown_verbs_are_refused() {
    for verb in [json!("x"), json!("ss"), json!(""), json!(1), json!(null)] {
        let e = WireOp::from_json(&json!([verb.clone(), ["a"]]), 0).expect_err("unknown verb");
        assert!(matches!(e, DeltaError::UnknownVerb { .. }), "{e}");
        let e = Op::from_json(&json!([verb, ["a"]]), 0).expect_err("unknown verb");
        assert!(matches!(e, DeltaError::UnknownVerb { .. }), "{e}");
    }
}

#[test]
fn unsafe_segments_are_refused_everywhere() {
    for segment in [
        json!("__proto__"),
        json!("constructor"),
        json!("prototype"),
        json!(-1),
        json!(1.5),
        json!(true),
        json!(null),
        json!({}),
        json!([]),
    ] {
        for wire in [
            json!(["s", ["a", segment.clone()], 1]),
            json!(["d", [segment.clone()]]),
            json!(["#", 0, [segment.clone()]]),
            json!(["p", [segment.clone()], 0, 0, []]),
        ] {
            let e = WireOp::from_json(&wire, 0).err().unwrap_or_else(|| panic!("{} was accepted", wire));
            assert!(matches!(e, DeltaError::UnsafeSegment { .. }), "{wire}: {e}");
            let e = refused(json!({"a": {}}), json!([wire]));
            assert!(matches!(e, DeltaError::UnsafeSegment { .. }), "{e}");
        }
        assert!(Path::from_json(&json!([segment])).is_err());
    }
    // A path built in Rust is checked when applied.
    let bad = Path::from_segments([PathSegment::from("__proto__"), "x".into()]);
    let e = apply(&mut json!({}), [Op::Set { path: bad, value: json!(true) }]).expect_err("unsafe");
    assert!(matches!(e, DeltaError::UnsafeSegment { .. }), "{e}");
    // A value may hold reserved keys: only addressing them is refused.
    assert_eq!(applied(json!({}), json!([["s", ["a"], {"__proto__": 1}]])), json!({"a": {"__proto__": 1}}));
}

#[test]
fn decoded_ops_are_checked_as_decoded_ops() {
    assert_eq!(Op::from_json(&json!(["s", ["a"], 1]), 0), Ok(Op::Set { path: p(json!(["a"])), value: json!(1) }));
    assert_eq!(
        Op::from_json(&json!(["p", [], 1, 2, [3]]), 0),
        Ok(Op::Splice { path: Path::root(), index: 1, remove: 2, items: vec![json!(3)] })
    );
    // The short forms and ids are wire forms only.
    for (op, reason) in [
        (json!(["s", 1]), "s arity"),
        (json!(["s", 0, 1]), "path is not an array"),
        (json!(["d", []]), "path is empty"),
        (json!(["a", [], "x"]), "path is empty"),
        (json!(["t", ["a"], -2]), "t shape"),
        (json!(["a", ["a"]]), "a shape"),
        (json!(["p", ["a"], 0, 0]), "p arity"),
        (json!(["#", 0, ["a"]]), ""),
    ] {
        let e = Op::from_json(&op, 0).err().unwrap_or_else(|| panic!("{} was accepted", op));
        if reason.is_empty() {
            assert!(matches!(e, DeltaError::UnknownVerb { .. }), "{op}: {e}");
        } else {
            assert_eq!(e, DeltaError::Malformed { index: 0, reason }, "{op}");
        }
    }
    for op in [json!(["r", 1]), json!(["d", ["a", 0]]), json!(["a", ["a"], "x"]), json!(["t", ["a"], 3])] {
        assert_eq!(Op::from_json(&op, 0).expect("valid").to_json(), op);
    }
}

#[test]
fn root_paths_are_refused_but_for_splices() {
    for wire in [json!([["s", [], 1]]), json!([["d", []]]), json!([["a", [], "x"]]), json!([["t", [], 1]])] {
        let e = refused(json!("x"), wire.clone());
        assert!(matches!(e, DeltaError::RootPath { index: 0, .. }), "{wire}: {e}");
    }
    // Through an id defined on the root, and through a short form after a root splice.
    let e = refused(json!([]), json!([["#", 0, []], ["s", 0, 1]]));
    assert!(matches!(e, DeltaError::RootPath { index: 1, verb: 's' }), "{e}");
    let e = refused(json!([]), json!([["p", [], 0, 0, [1]], ["a", "x"]]));
    assert!(matches!(e, DeltaError::RootPath { index: 1, verb: 'a' }), "{e}");
    for op in [Op::Set { path: Path::root(), value: json!(1) }, Op::Delete { path: Path::root() }] {
        let e = apply(&mut json!({}), [op]).expect_err("root");
        assert!(matches!(e, DeltaError::RootPath { .. }), "{e}");
    }
}

// ---- the codec ----

#[test]
fn the_real_servers_counter_stream() {
    let mut encoder = Encoder::new();
    let value = p(json!(["value"]));
    let log = p(json!(["log"]));
    let batch = |n: i64, text: &str| {
        vec![Op::Set { path: value.clone(), value: json!(n) }, Op::Append { path: log.clone(), text: text.into() }]
    };
    assert_eq!(
        encoder.encode_json([Op::Replace(json!({"value": 0, "log": ""}))]),
        json!([["r", {"value": 0, "log": ""}]])
    );
    assert_eq!(encoder.encode_json(batch(2, "+2")), json!([["s", ["value"], 2], ["a", ["log"], "+2"]]));
    assert_eq!(
        encoder.encode_json(batch(5, "+3")),
        json!([["#", 0, ["value"]], ["s", 0, 5], ["#", 1, ["log"]], ["a", 1, "+3"]])
    );
    assert_eq!(encoder.encode_json(batch(9, "+4")), json!([["s", 0, 9], ["a", 1, "+4"]]));
    assert_eq!(encoder.len(), 2);
}

#[test]
fn short_forms_reuse_the_previous_path_within_a_batch() {
    let mut encoder = Encoder::new();
    let out = p(json!(["output"]));
    let wire = encoder.encode_json([
        Op::Truncate { path: out.clone(), count: 200 },
        Op::Append { path: out.clone(), text: "next".into() },
        Op::Set { path: out.clone(), value: json!("x") },
        Op::Delete { path: out.clone() },
        Op::Splice { path: out.clone(), index: 0, remove: 1, items: vec![] },
    ]);
    assert_eq!(wire, json!([["t", ["output"], 200], ["a", "next"], ["s", "x"], ["d"], ["p", 0, 1, []]]));
    // Decoded back to complete paths.
    let ops = Decoder::new().decode(&wire).expect("decodes");
    assert!(ops.iter().all(|op| op.path() == Some(&out)), "{ops:?}");
    // Omission does not span batches: the next batch's first use defines an id.
    assert_eq!(
        encoder.encode_json([Op::Append { path: out, text: "y".into() }]),
        json!([["#", 0, ["output"]], ["a", 0, "y"]])
    );
}

#[test]
fn a_replacement_resets_both_dictionaries() {
    let mut encoder = Encoder::new();
    let a = p(json!(["a"]));
    encoder.encode_json([Op::Set { path: a.clone(), value: json!(1) }]);
    encoder.encode_json([Op::Set { path: a.clone(), value: json!(2) }]);
    let wire = encoder.encode_json([
        Op::Set { path: a.clone(), value: json!(3) },
        Op::Replace(json!({"a": 0})),
        Op::Set { path: a.clone(), value: json!(4) },
    ]);
    assert_eq!(wire, json!([["s", 0, 3], ["r", {"a": 0}], ["s", ["a"], 4]]));
    // A decoder forgets its ids at the replacement.
    let mut decoder = Decoder::new();
    let mut value = json!({"a": 0});
    decoder.decode_apply(&mut value, &json!([["#", 0, ["a"]], ["s", 0, 1]])).expect("ok");
    let e = decoder.decode_apply(&mut value, &json!([["r", {"a": 0}], ["s", 0, 1]])).expect_err("id forgotten");
    assert_eq!(e, DeltaError::UnknownPathId { index: 1, id: 0 });
    // And its previous path.
    let e = Decoder::new()
        .decode_apply(&mut value, &json!([["s", ["a"], 1], ["r", {"a": 0}], ["s", 2]]))
        .expect_err("no previous");
    assert_eq!(e, DeltaError::NoPreviousPath { index: 2 });
}

#[test]
fn decoder_errors_name_the_op() {
    let mut v = json!({"a": 1});
    assert_eq!(
        Decoder::new().decode_apply(&mut v, &json!([["s", 7, 1]])),
        Err(DeltaError::UnknownPathId { index: 0, id: 7 })
    );
    assert_eq!(Decoder::new().decode_apply(&mut v, &json!([["s", 1]])), Err(DeltaError::NoPreviousPath { index: 0 }));
    assert_eq!(Decoder::new().decode_apply(&mut v, &json!({"s": 1})), Err(DeltaError::NotABatch));
    assert_eq!(Decoder::new().decode(&json!([["d"]])), Err(DeltaError::NoPreviousPath { index: 0 }));
    // A path definition is no op: it sets no previous path.
    assert_eq!(Decoder::new().decode(&json!([["#", 0, ["a"]], ["d"]])), Err(DeltaError::NoPreviousPath { index: 1 }));
}

#[test]
fn redefining_an_id_keeps_the_previous_path_of_the_batch() {
    let mut value = json!({"a": "", "b": ""});
    let mut decoder = Decoder::new();
    decoder
        .decode_apply(&mut value, &json!([["#", 0, ["a"]], ["a", 0, "1"], ["#", 0, ["b"]], ["a", "2"], ["a", 0, "3"]]))
        .expect("ok");
    assert_eq!(value, json!({"a": "12", "b": "3"}));
    // Ids out of order, and far apart, are kept too.
    decoder
        .decode_apply(&mut value, &json!([["#", 5, ["a"]], ["#", 1000000, ["b"]], ["a", 5, "x"], ["a", 1000000, "y"]]))
        .expect("ok");
    assert_eq!(value, json!({"a": "12x", "b": "3y"}));
}

#[test]
fn path_ids_are_told_apart_as_javascript_tells_them() {
    let mut value = json!({"a": 0});
    // Past 2^53 two integers may be one double, and so one id.
    Decoder::new()
        .decode_apply(&mut value, &json!([["#", 9007199254740993u64, ["a"]], ["s", 9007199254740992u64, 1]]))
        .expect("one id");
    assert_eq!(value, json!({"a": 1}));
    Decoder::new().decode_apply(&mut value, &json!([["#", 1e300, ["a"]], ["s", 1e300, 2]])).expect("a huge id");
    assert_eq!(value, json!({"a": 2}));
    let e = Decoder::new()
        .decode_apply(&mut value, &json!([["#", 1e300, ["a"]], ["s", 1e301, 3]]))
        .expect_err("another id");
    assert!(matches!(e, DeltaError::UnknownPathId { index: 1, .. }), "{e}");
    assert_eq!(
        WireOp::from_json(&json!(["#", 1e300, ["a"]]), 0).map(|op| op.to_json()),
        Ok(json!(["#", 1e300, ["a"]]))
    );
    assert_eq!(
        Decoder::new().decode(&json!([["#", 2.0, ["a"]], ["d", 2]])),
        Ok(vec![Op::Delete { path: p(json!(["a"])) }])
    );
}

#[test]
fn wire_ops_round_trip_through_json() {
    for wire in [
        json!(["r", {"a": [1]}]),
        json!(["#", 3, ["a", 0]]),
        json!(["s", ["a"], null]),
        json!(["s", 2, 1]),
        json!(["s", [1]]),
        json!(["d", ["a"]]),
        json!(["d"]),
        json!(["a", 0, "x"]),
        json!(["a", "x"]),
        json!(["t", ["a"], 4]),
        json!(["t", 4]),
        json!(["p", [], 0, 1, [2]]),
        json!(["p", 0, 1, [2]]),
    ] {
        let op = WireOp::from_json(&wire, 0).unwrap_or_else(|e| panic!("{}: {e}", wire));
        assert_eq!(op.to_json(), wire);
    }
    assert_eq!(WireOp::from_json(&json!(["d", 4]), 0), Ok(WireOp::Delete { path: Some(PathRef::Id(4)) }));
}

#[test]
fn errors_never_echo_large_peer_data() {
    let long = "k".repeat(1 << 20);
    let e = refused(json!({}), json!([["s", [long.clone(), "x"], 1]]));
    assert!(e.to_string().len() < 200, "{}", e.to_string().len());
    let segments: Vec<Value> = (0..10_000).map(|i| json!(format!("segment{i}"))).collect();
    let e = refused(json!({}), json!([["s", segments, 1]]));
    assert!(e.to_string().len() < 300, "{}", e.to_string().len());
    let e = refused(json!({}), json!([["s", [long.clone(), "__proto__"], 1]]));
    assert!(e.to_string().len() < 300, "{}", e.to_string().len());
    let e = WireOp::from_json(&json!([long, 1]), 0).expect_err("unknown verb");
    assert!(e.to_string().len() < 200);
}

// ---- the producer ----

fn ops(before: Value, after: Value) -> Value {
    let ops = diff(&before, &after);
    let mut replica = before;
    apply(&mut replica, ops.clone()).expect("the ops apply");
    assert_eq!(replica, after, "the ops reach the target");
    Value::Array(ops.iter().map(Op::to_json).collect())
}

#[test]
fn strings_append_slide_or_set() {
    assert_eq!(ops(json!({"s": "ab"}), json!({"s": "abc"})), json!([["a", ["s"], "c"]]));
    assert_eq!(ops(json!({"s": "abcdef"}), json!({"s": "defgh"})), json!([["t", ["s"], 3], ["a", ["s"], "gh"]]));
    assert_eq!(ops(json!({"s": "abcdef"}), json!({"s": "def"})), json!([["t", ["s"], 3]]));
    assert_eq!(ops(json!({"s": "abc"}), json!({"s": "xyz"})), json!([["s", ["s"], "xyz"]]));
    assert_eq!(ops(json!({"s": "a😀b"}), json!({"s": "😀bc"})), json!([["t", ["s"], 1], ["a", ["s"], "c"]]));
    assert_eq!(ops(json!({"s": "x😀"}), json!({"s": "😀y"})), json!([["t", ["s"], 1], ["a", ["s"], "y"]]));
    assert_eq!(ops(json!({"s": "same"}), json!({"s": "same"})), json!([]));
    // Without an overlap scan a window is a set.
    let ops = diff_with(&json!({"s": "abcdef"}), &json!({"s": "defgh"}), &DiffOptions::default().max_overlap_scan(0));
    assert_eq!(ops, vec![Op::Set { path: p(json!(["s"])), value: json!("defgh") }]);
    // A string root is replaced.
    assert_eq!(ops_root(json!("ab"), json!("abc")), json!([["r", "abc"]]));
}

fn ops_root(before: Value, after: Value) -> Value {
    Value::Array(diff(&before, &after).iter().map(Op::to_json).collect())
}

#[test]
fn overlap_gives_up_after_eight_candidates_as_chord_does() {
    // Nine places where "ab" begins, none of them a true overlap with "abX...": Chord gives
    // up and sets the string.
    let before = "abZ".repeat(9);
    let after = "abXY".to_owned();
    assert_eq!(ops(json!({"s": before}), json!({"s": after})), json!([["s", ["s"], "abXY"]]));
}

#[test]
fn arrays_splice_or_edit_in_place() {
    assert_eq!(ops(json!({"l": [1, 2]}), json!({"l": [1, 2, 3, 4]})), json!([["p", ["l"], 2, 0, [3, 4]]]));
    assert_eq!(ops(json!({"l": [1, 2, 3]}), json!({"l": [1, 3]})), json!([["p", ["l"], 1, 1, []]]));
    assert_eq!(ops(json!({"l": [1, 2, 3]}), json!({"l": [0, 1, 2, 3]})), json!([["p", ["l"], 0, 0, [0]]]));
    assert_eq!(ops(json!({"l": [1, 2, 3]}), json!({"l": [1, 9, 3]})), json!([["s", ["l", 1], 9]]));
    assert_eq!(ops(json!({"l": ["a", "b"]}), json!({"l": ["ax", "b"]})), json!([["a", ["l", 0], "x"]]));
    // Everything replaced: the array is set.
    assert_eq!(ops(json!({"l": [1, 2]}), json!({"l": [3]})), json!([["s", ["l", 0], 3], ["p", ["l"], 1, 1, []]]));
    assert_eq!(ops(json!({"l": [1, 2]}), json!({"l": []})), json!([["s", ["l"], []]]));
    // Movement with edits: positions compared, the tail spliced.
    assert_eq!(
        ops(json!({"l": [1, 2, 3]}), json!({"l": [2, 3, 4, 5]})),
        json!([["s", ["l", 0], 2], ["s", ["l", 1], 3], ["s", ["l", 2], 4], ["p", ["l"], 3, 0, [5]]])
    );
    // A root array is spliced at the root.
    assert_eq!(ops(json!([1]), json!([1, 2])), json!([["p", [], 1, 0, [2]]]));
    assert_eq!(ops(json!([1]), json!([])), json!([["r", []]]));
}

#[test]
fn objects_set_and_delete_keys() {
    assert_eq!(ops(json!({"a": 1, "b": 2}), json!({"a": 1, "c": 3})), json!([["s", ["c"], 3], ["d", ["b"]]]));
    assert_eq!(ops(json!({"a": {"x": 1}}), json!({"a": {"x": 2}})), json!([["s", ["a", "x"], 2]]));
    assert_eq!(ops(json!({"a": {"x": 1}}), json!({"a": [1]})), json!([["s", ["a"], [1]]]));
    // An object holding a reserved key is set whole (the root: replaced).
    assert_eq!(
        ops(json!({"o": {"constructor": 1}}), json!({"o": {"constructor": 2}})),
        json!([["s", ["o"], {"constructor": 2}]])
    );
    assert_eq!(ops_root(json!({"__proto__": 1}), json!({"__proto__": 2})), json!([["r", {"__proto__": 2}]]));
    // A change of type at the root is a replacement.
    assert_eq!(ops_root(json!({"a": 1}), json!([1])), json!([["r", [1]]]));
    assert_eq!(ops_root(json!(1), json!(2)), json!([["r", 2]]));
}

// ---- the stream types ----

#[test]
fn a_replica_needs_a_base_snapshot() {
    assert_eq!(StateReplica::from_snapshot_ops(&json!([])).err(), Some(DeltaError::NotABase));
    assert_eq!(StateReplica::from_snapshot_ops(&json!([["s", ["a"], 1]])).err(), Some(DeltaError::NotABase));
    assert_eq!(StateReplica::from_snapshot_ops(&json!("r")).err(), Some(DeltaError::NotABatch));
    // Definitions may come before the replacement (the replacement clears them).
    let replica =
        StateReplica::from_snapshot_ops(&json!([["#", 0, ["a"]], ["r", {"a": 1}], ["s", ["a"], 2]])).expect("base");
    assert_eq!(replica.value(), &json!({"a": 2}));
}

#[test]
fn an_owned_replica_moves_its_payloads_in() {
    let mut replica = StateReplica::from_snapshot_ops_owned(json!([["r", {"l": [], "s": ""}]])).expect("base");
    replica
        .apply_wire_owned(json!([["p", ["l"], 0, 0, [{"m": 1}]], ["s", ["x"], [1]], ["a", ["s"], "t"]]))
        .expect("ok");
    assert_eq!(replica.value(), &json!({"l": [{"m": 1}], "s": "t", "x": [1]}));
    assert_eq!(StateReplica::from_snapshot_ops_owned(json!([])).err(), Some(DeltaError::NotABase));
    // A malformed splice keeps its verdict when its items are moved out first.
    assert!(matches!(replica.apply_wire_owned(json!([["p", ["l"], 0, "x", []]])), Err(DeltaError::Malformed { .. })));
    assert_eq!(replica.apply_wire_owned(json!([["s", ["x"], 2]])), Err(DeltaError::Terminated));
    replica.apply_wire_owned(json!([["r", 5]])).expect("a base batch restarts it");
    assert_eq!(replica.value(), &json!(5));
}

#[test]
fn a_failed_replica_waits_for_a_base_batch() {
    let mut replica = StateReplica::from_snapshot_ops(&json!([["r", {"n": 0}]])).expect("base");
    assert!(replica.apply_wire(&json!([["a", ["n"], "x"]])).is_err());
    assert!(replica.is_terminated());
    assert_eq!(replica.apply_wire(&json!([["s", ["n"], 1]])), Err(DeltaError::Terminated));
    replica.apply_wire(&json!([["r", {"n": 5}], ["s", ["n"], 6]])).expect("a base batch restarts it");
    assert!(!replica.is_terminated());
    replica.apply_wire(&json!([["s", ["n"], 7]])).expect("running again");
    assert_eq!(replica.into_value(), json!({"n": 7}));
}

#[test]
fn a_publisher_follows_its_value() {
    let mut publisher = StatePublisher::new(json!({"log": "", "n": 0}));
    let mut replica = StateReplica::from_snapshot_ops(&publisher.snapshot_ops()).expect("base");
    for step in 1..20 {
        let next = json!({"log": "x".repeat(step), "n": step});
        let ops = publisher.publish(next.clone()).expect("changed");
        replica.apply_wire(&ops).expect("applies");
        assert_eq!(replica.value(), &next);
    }
    assert_eq!(publisher.publish(publisher.value().clone()), None);
    // A change of type at the root is a replacement, which resets the path ids.
    let ops = publisher.publish(json!([1])).expect("changed");
    assert_eq!(ops, json!([["r", [1]]]));
    replica.apply_wire(&ops).expect("applies");
    let ops = publisher.publish(json!([1, 2])).expect("changed");
    assert_eq!(ops, json!([["p", [], 1, 0, [2]]]));
    replica.apply_wire(&ops).expect("applies");
    assert_eq!(replica.value(), &json!([1, 2]));
    // A new snapshot resets the stream: ids start again.
    let mut other = StateReplica::from_snapshot_ops(&publisher.snapshot_ops()).expect("base");
    let ops = publisher.publish(json!([1, 2, 3])).expect("changed");
    assert_eq!(ops, json!([["p", [], 2, 0, [3]]]));
    other.apply_wire(&ops).expect("applies");
    let ops = publisher.publish(json!([1, 2, 3, 4])).expect("changed");
    assert_eq!(ops, json!([["#", 0, []], ["p", 0, 3, 0, [4]]]));
    other.apply_wire(&ops).expect("applies");
    assert_eq!(other.value(), &json!([1, 2, 3, 4]));
}

#[test]
fn path_helpers() {
    let path = path(&[json!("a"), json!(0)]);
    assert_eq!(path.segments(), &[PathSegment::Key("a".into()), PathSegment::Index(0)]);
    assert_eq!(format!("{path:?}"), r#"Path(["a",0])"#);
    assert_eq!(path.len(), 2);
    assert!(Path::root().is_empty());
    assert!(matches!(Path::from_json(&json!("a")), Err(pi_chord::delta::PathFault::NotAnArray)));
    assert!(matches!(Path::from_json(&json!(["a", -1])), Err(pi_chord::delta::PathFault::Segment { position: 1 })));
}
