//! `#[codec(tuple)]` structs (fixed-length arrays) and `#[codec(tuples)]` unions of them, told
//! apart by length and first element: strict decode (exact length, each element checked, the
//! error naming the element), canonical encode.

use pi_protocol_derive::Codec;
use pi_protocol_runtime::{decode_message, encode_item, CborLimits, Integer, Payload, Positional, ProtocolError, Rule};

/// `["s", path, value]`.
#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(json, tuple, literal(index = 0, value = "s"))]
struct Set(#[codec(items(min_length = 1))] Vec<String>, Payload);

/// `["t", count]` with a count from 0.
#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(json, tuple, literal(index = 0, value = "t"))]
struct Truncate(#[codec(minimum = 0)] Integer);

/// `["t", path, count]`.
#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(json, tuple, literal(index = 0, value = "t"))]
struct TruncateAt(Vec<String>, #[codec(minimum = 0)] Integer);

/// A pair without literals, the second element nullable.
#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(json, tuple)]
struct Pair(String, Option<Integer>);

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(json, tuples)]
enum Op {
    Set(Set),
    Truncate(Truncate),
    TruncateAt(TruncateAt),
    Name(String),
}

fn decode<T: for<'de> pi_protocol_runtime::Decode<'de>>(json: &str) -> Result<T, ProtocolError> {
    let payload = Payload::from_json_str(json).unwrap();
    decode_message(payload.as_cbor(), CborLimits::default())
}

fn encode<T: pi_protocol_runtime::Encode + pi_protocol_runtime::Validate>(value: &T) -> serde_json::Value {
    let cbor = encode_item(value, CborLimits::default()).unwrap();
    Payload::from_cbor(cbor.into(), CborLimits::default()).unwrap().to_value()
}

#[test]
fn a_tuple_reads_and_writes_its_elements_in_order() {
    let set: Set = decode(r#"["s", ["a", "b"], {"x": 1}]"#).unwrap();
    assert_eq!(set.0, vec!["a".to_string(), "b".to_string()]);
    assert_eq!(encode(&set), serde_json::json!(["s", ["a", "b"], {"x": 1}]));
    let pair: Pair = decode(r#"["k", null]"#).unwrap();
    assert_eq!(pair, Pair("k".into(), None));
    assert_eq!(encode(&Pair("k".into(), Some(Integer::from(3)))), serde_json::json!(["k", 3]));
}

#[test]
fn a_tuple_refuses_other_lengths_literals_and_elements_naming_the_element() {
    let cases: [(&str, Rule, &str); 6] = [
        (r#"["s", ["a"]]"#, Rule::MinItems { min: 3 }, ""),
        (r#"["s", ["a"], 1, 2]"#, Rule::MaxItems { max: 3 }, ""),
        (r#"["x", ["a"], 1]"#, Rule::Literal, "[0]"),
        (r#"["s", ["a", ""], 1]"#, Rule::MinLength { min: 1 }, "[1][1]"),
        (r#"["s", "a", 1]"#, Rule::WrongType { expected: "array" }, "[1]"),
        (r#"{"0": "s"}"#, Rule::WrongType { expected: "array" }, ""),
    ];
    for (json, rule, path) in cases {
        let err = decode::<Set>(json).unwrap_err();
        assert_eq!((err.rule(), err.path_string().as_str()), (rule, path), "{json}");
    }
    let err = decode::<Truncate>(r#"["t", -1]"#).unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::Minimum { min: 0.0.into() }, "[1]".into()));
}

#[test]
fn a_union_of_tuples_picks_by_length_and_first_element() {
    assert!(matches!(decode::<Op>(r#"["t", 2]"#).unwrap(), Op::Truncate(_)));
    assert!(matches!(decode::<Op>(r#"["t", ["log"], 2]"#).unwrap(), Op::TruncateAt(_)));
    assert!(matches!(decode::<Op>(r#"["s", [], null]"#).unwrap(), Op::Set(_)));
    assert!(matches!(decode::<Op>(r#""name""#).unwrap(), Op::Name(_)));
    for refused in [r#"["t"]"#, r#"["x", 1]"#, r#"[]"#, r#"[["t"], 1]"#, r#"["s", [], 1, 2]"#] {
        assert_eq!(decode::<Op>(refused).unwrap_err().rule(), Rule::NoVariant, "{refused}");
    }
    // Once picked, the variant's own errors name the element.
    let err = decode::<Op>(r#"["t", ["log"], -1]"#).unwrap_err();
    assert_eq!(err.path_string(), "[2]");
    assert!(Op::accepts_elements(2, Some(&pi_protocol_runtime::Scalar::Text("t"))));
    assert!(!Op::accepts_elements(4, Some(&pi_protocol_runtime::Scalar::Text("t"))));
    let op = Op::TruncateAt(TruncateAt(vec!["log".into()], Integer::from(2)));
    assert_eq!(op.to_json(), serde_json::json!(["t", ["log"], 2]));
    assert_eq!(Op::from_json(&serde_json::json!(["t", ["log"], 2])).unwrap(), op);
}
