//! `Payload::from_serialize`, `Payload::deserialize`, `Deserialize for Payload` and
//! `Payload::from_json_str` against the `serde_json::Value` paths they replace (docs/PROTOCOL.md
//! section 5): the same bytes, the same values, the same errors.

use std::collections::{BTreeMap, HashMap};

use pi_protocol_runtime::{CborLimits, ErrorKind, Payload, ProtocolError, Rule};
use proptest::collection::vec;
use proptest::prelude::*;
use serde::de::{self, Deserializer, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Number, Value};

const MAX_SAFE: i64 = (1 << 53) - 1;

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-MAX_SAFE..=MAX_SAFE).prop_map(|n| Value::Number(n.into())),
        (-300i64..300).prop_map(|n| Value::Number(n.into())),
        any::<f64>()
            .prop_filter("finite and, when integral, safe", |f| f.is_finite() && f.abs() <= MAX_SAFE as f64)
            .prop_map(|f| Value::Number(Number::from_f64(f).expect("finite"))),
        Just(Value::Number(Number::from_f64(-0.0).unwrap())),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z]{0,3}", "[0-9]{1,3}", any::<String>()]
}

/// Arbitrary strict JSON, nested a few levels.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        any::<String>().prop_map(Value::String)
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec((key(), inner), 0..20).prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// An object given as entries in an order of its own (whatever `serde_json::Map` does with
/// order), serialized as a map.
struct Ordered<'a>(&'a [(String, Value)]);

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_path_gives_the_bytes_of_from_value(value in json()) {
        let expected = Payload::from_value(&value).unwrap();
        prop_assert_eq!(hex::encode(Payload::from_serialize(&value).unwrap().as_cbor()), hex::encode(expected.as_cbor()));
        let text = serde_json::to_string(&value).unwrap();
        prop_assert_eq!(Payload::from_json_str(&text).unwrap(), expected.clone());
        // `Deserialize for Payload` through serde_json's own deserializers.
        prop_assert_eq!(serde_json::from_value::<Payload>(value.clone()).unwrap(), expected.clone());
        let parsed: Value = serde_json::from_str(&text).unwrap();
        let from_text: Payload = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(from_text, Payload::from_value(&parsed).unwrap());
        let from_serialize = Payload::from_serialize(&value).unwrap();
        prop_assert_eq!(
            (from_serialize.depth(), from_serialize.widest_container()),
            (expected.depth(), expected.widest_container())
        );
    }

    #[test]
    fn deserializing_gives_what_to_value_gives(value in json()) {
        let payload = Payload::from_value(&value).unwrap();
        prop_assert_eq!(payload.deserialize::<Value>().unwrap(), payload.to_value());
        // A payload inside a payload is its bytes.
        let inner: Payload = payload.deserialize().unwrap();
        prop_assert_eq!(&inner, &payload);
        prop_assert_eq!((inner.depth(), inner.widest_container()), (payload.depth(), payload.widest_container()));
    }

    #[test]
    fn key_order_comes_from_the_source_not_from_the_map(
        entries in vec((key(), json()), 0..12).prop_map(|mut entries| {
            let mut seen = std::collections::HashSet::new();
            entries.retain(|(k, _)| seen.insert(k.clone()));
            entries
        })
    ) {
        let from_serialize = Payload::from_serialize(&Ordered(&entries)).unwrap();
        let text = format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| {
                    // Integral floats are integers in a payload.
                    let v = Payload::from_value(v).unwrap();
                    format!("{}:{}", serde_json::to_string(k).unwrap(), serde_json::to_string(&v).unwrap())
                })
                .collect::<Vec<_>>()
                .join(",")
        );
        prop_assert_eq!(&Payload::from_json_str(&text).unwrap(), &from_serialize);
        // Streaming the payload back out gives the text again.
        let expected = text.clone();
        prop_assert_eq!(serde_json::to_string(&from_serialize).unwrap(), expected);
        let keys: Vec<String> = entries.iter().map(|(k, _)| k.clone()).collect();
        let read: Vec<(String, Value)> = from_serialize.deserialize::<OrderedRead>().unwrap().0;
        prop_assert_eq!(read.into_iter().map(|(k, _)| k).collect::<Vec<_>>(), keys);
    }

    #[test]
    fn typed_values_round_trip_like_serde_json(call in call()) {
        let payload = Payload::from_serialize(&call).unwrap();
        // The same value as through serde_json::Value, keys in the struct's order (which a
        // serde_json::Map keeps only with `preserve_order`; the text serde_json writes keeps it).
        let via_value = Payload::from_value(&serde_json::to_value(&call).unwrap()).unwrap();
        prop_assert_eq!(payload.to_value(), via_value.to_value());
        let via_text = Payload::from_json_str(&serde_json::to_string(&call).unwrap()).unwrap();
        prop_assert_eq!(hex::encode(payload.as_cbor()), hex::encode(via_text.as_cbor()));
        let back: Call = payload.deserialize().unwrap();
        prop_assert_eq!(&back, &call);
        let via_value: Call = serde_json::from_value(payload.to_value()).unwrap();
        prop_assert_eq!(back, via_value);
    }
}

/// Reads an object's entries in wire order.
struct OrderedRead(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for OrderedRead {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = OrderedRead;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<OrderedRead, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(OrderedRead(out))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

/// A service call with most of serde's shapes in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Call {
    service_id: String,
    instance: Option<String>,
    member: Member,
    args: Vec<Arg>,
    by_id: BTreeMap<u32, bool>,
    pair: (i64, f64),
    unit: (),
    marker: Marker,
    wrapped: Wrapped,
    extra: Payload,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Member {
    Catalogue,
    Describe,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Arg {
    Text(String),
    Point { x: i32, y: i32 },
    Pair(u8, char),
    Flag,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Marker;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Wrapped(u16);

fn arg() -> impl Strategy<Value = Arg> {
    prop_oneof![
        any::<String>().prop_map(Arg::Text),
        (any::<i32>(), any::<i32>()).prop_map(|(x, y)| Arg::Point { x, y }),
        (any::<u8>(), any::<char>()).prop_map(|(a, b)| Arg::Pair(a, b)),
        Just(Arg::Flag),
    ]
}

fn call() -> impl Strategy<Value = Call> {
    (
        any::<String>(),
        proptest::option::of("[a-z]{1,8}"),
        prop_oneof![Just(Member::Catalogue), Just(Member::Describe)],
        vec(arg(), 0..5),
        proptest::collection::btree_map(any::<u32>(), any::<bool>(), 0..4),
        (-MAX_SAFE..=MAX_SAFE, any::<f64>().prop_filter("finite", |f| f.is_finite() && f.abs() <= MAX_SAFE as f64)),
        any::<u16>(),
        json(),
    )
        .prop_map(|(service_id, instance, member, args, by_id, pair, n, extra)| Call {
            service_id,
            instance,
            member,
            args,
            by_id,
            pair,
            unit: (),
            marker: Marker,
            wrapped: Wrapped(n),
            extra: Payload::from_value(&extra).unwrap(),
        })
}

// ------------------------------------------------------------------ borrowing

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ChordCall<'a> {
    service_id: &'a str,
    #[serde(default)]
    instance: Option<&'a str>,
    member: &'a str,
    args: Vec<&'a str>,
    #[serde(borrow, default)]
    note: std::borrow::Cow<'a, str>,
}

#[test]
fn strings_are_borrowed_from_the_payload() {
    let payload =
        Payload::from_json_str(r#"{"serviceId":"$chord.service","member":"add","args":["a","b\n"],"note":"n"}"#)
            .unwrap();
    let call: ChordCall<'_> = payload.deserialize().unwrap();
    assert_eq!(call.service_id, "$chord.service");
    assert_eq!(call.instance, None);
    let cbor = payload.as_cbor().as_ptr_range();
    for borrowed in [call.service_id, call.member, call.args[1]] {
        assert!(cbor.contains(&borrowed.as_ptr()), "{borrowed:?} is not a slice of the payload");
    }
    assert_eq!(call.args, ["a", "b\n"]);
    assert!(matches!(call.note, std::borrow::Cow::Borrowed("n")));
}

// ------------------------------------------------------------------ errors

fn error_of<T: for<'a> Deserialize<'a> + std::fmt::Debug>(json: &str) -> (ErrorKind, Rule, String) {
    let error = Payload::from_json_str(json).unwrap().deserialize::<T>().unwrap_err();
    (error.kind(), error.rule(), error.path_string())
}

#[test]
fn deserializing_errors_name_the_rule_and_the_field_path() {
    type Owned = ChordCallOwned;
    let schema = ErrorKind::Schema;
    assert_eq!(
        error_of::<Owned>(r#"{"serviceId":1,"member":"m","args":[]}"#),
        (schema, Rule::WrongType { expected: "string" }, "serviceId".into())
    );
    assert_eq!(
        error_of::<Owned>(r#"{"serviceId":"s","member":"m","args":["a",[]]}"#),
        (schema, Rule::WrongType { expected: "string" }, "args[1]".into())
    );
    assert_eq!(error_of::<Owned>(r#"{"serviceId":"s","args":[]}"#), (schema, Rule::MissingField, "member".into()));
    assert_eq!(
        error_of::<Owned>(r#"{"serviceId":"s","member":"m","args":[],"x":1}"#),
        (schema, Rule::UnknownField, String::new())
    );
    assert_eq!(error_of::<Owned>(r#"[1]"#).1, Rule::WrongType { expected: "string" });
    assert_eq!(error_of::<Owned>(r#""text""#).1, Rule::WrongType { expected: "object" });
    assert_eq!(error_of::<Member>(r#""other""#).1, Rule::NoVariant);
    assert_eq!(error_of::<Arg>(r#"{"Point":{"x":1}}"#).1, Rule::MissingField);
    assert_eq!(error_of::<Arg>(r#"{"Text":"a","Flag":null}"#).1, Rule::TypeRejected);
    assert_eq!(error_of::<Arg>(r#"{"Flag":1}"#).1, Rule::WrongType { expected: "null" });
    assert_eq!(error_of::<u8>("300"), (schema, Rule::TypeRejected, String::new()));
    assert_eq!(error_of::<u32>("1.5").1, Rule::TypeRejected);
    assert_eq!(error_of::<(u8, u8)>("[1,2,3]").1, Rule::TypeRejected);
    assert_eq!(error_of::<bool>("null").1, Rule::WrongType { expected: "boolean" });
    // The text of an error never quotes the payload.
    let error = Payload::from_json_str(r#"{"serviceId":"secret-value","member":"m","args":[],"secret-key":1}"#)
        .unwrap()
        .deserialize::<Owned>()
        .unwrap_err();
    assert!(!error.to_string().contains("secret"), "{error}");
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct ChordCallOwned {
    service_id: String,
    member: String,
    args: Vec<String>,
}

#[test]
fn numbers_and_keys_read_as_serde_json_reads_them() {
    let payload = Payload::from_json_str(r#"{"1":[2.0,-0.0,-3,0.5],"7":null}"#).unwrap();
    let by_number: HashMap<u8, Value> = payload.deserialize().unwrap();
    assert_eq!(by_number[&1], json!([2, -0.0, -3, 0.5]));
    let theirs: HashMap<u8, Value> = serde_json::from_value(payload.to_value()).unwrap();
    assert_eq!(by_number, theirs);
    let by_bool: Result<HashMap<bool, Value>, ProtocolError> = payload.deserialize();
    assert_eq!(by_bool.unwrap_err().rule(), Rule::TypeRejected, "\"1\" is not a boolean key");
    let by_bool: HashMap<bool, u8> = Payload::from_json_str(r#"{"true":1,"false":0}"#).unwrap().deserialize().unwrap();
    assert_eq!(by_bool[&true], 1);
    let numbers: HashMap<String, Vec<f64>> =
        Payload::from_json_str(r#"{"a":[2,-0.0,-3,0.5]}"#).unwrap().deserialize().unwrap();
    assert_eq!(numbers["a"], [2.0, -0.0, -3.0, 0.5]);
    assert!(numbers["a"][1].is_sign_negative());
    // A float64 that is integral reads as an integer, as to_value gives it.
    let payload = Payload::from_cbor(hex::decode("fb4000000000000000").unwrap().into(), CborLimits::default()).unwrap();
    assert_eq!(payload.deserialize::<u8>().unwrap(), 2);
    assert_eq!(payload.deserialize::<Value>().unwrap(), payload.to_value());
}

#[test]
fn heads_of_every_width_read_back() {
    // Integers and lengths on both sides of each head width (in the head, 1, 2, 4, 8 bytes).
    let edges: [i64; 10] = [23, 24, 255, 256, 65_535, 65_536, 4_294_967_295, 4_294_967_296, MAX_SAFE, 0];
    for n in edges {
        // A negative -1 - n has the head of n.
        for v in [n, -n, -n - 1].into_iter().filter(|v| *v >= -MAX_SAFE) {
            let payload = Payload::from_value(&json!(v)).unwrap();
            assert_eq!(payload.deserialize::<i64>().unwrap(), v, "{v}");
        }
    }
    for len in [23, 24, 255, 256, 65_535, 65_536] {
        let value = json!({"text": "t".repeat(len), "array": vec![7u8; len], "map": (0..len).map(|i| (i.to_string(), i)).collect::<BTreeMap<_, _>>()});
        let payload = Payload::from_value(&value).unwrap();
        assert_eq!(payload.deserialize::<Value>().unwrap(), value, "length {len}");
        let text: BTreeMap<String, Value> = payload.deserialize().unwrap();
        assert_eq!(text["text"].as_str().map(str::len), Some(len));
    }
    for f in [0.5, -2.5e-300, 1e15 + 0.5, f64::MIN_POSITIVE] {
        assert_eq!(Payload::from_value(&json!(f)).unwrap().deserialize::<f64>().unwrap(), f);
    }
}

// ------------------------------------------------------------------ hostile values

/// Serializes as a byte string (what `serde_bytes` does).
struct Blob;

impl Serialize for Blob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(b"\x00\x01")
    }
}

/// Deserializes through `deserialize_bytes` (what `serde_bytes` does).
#[derive(Debug, PartialEq)]
struct BlobRead(Vec<u8>);

impl<'de> Deserialize<'de> for BlobRead {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl<'de> Visitor<'de> for Bytes {
            type Value = BlobRead;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<BlobRead, E> {
                Ok(BlobRead(v.to_vec()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<BlobRead, E> {
                Ok(BlobRead(v.as_bytes().to_vec()))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<BlobRead, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element()? {
                    out.push(b);
                }
                Ok(BlobRead(out))
            }
        }
        deserializer.deserialize_bytes(Bytes)
    }
}

fn nested(levels: usize) -> Value {
    (0..levels).fold(json!(1), |inner, _| json!([inner]))
}

/// `levels` arrays around `1`, as a serializer sees them.
struct Nested(usize);

impl Serialize for Nested {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        if self.0 == 0 {
            return serializer.serialize_u8(1);
        }
        let mut seq = serializer.serialize_seq(Some(1))?;
        seq.serialize_element(&Nested(self.0 - 1))?;
        seq.end()
    }
}

#[test]
fn hostile_values_fail_as_from_value_fails() {
    let rule_of = |r: Result<Payload, ProtocolError>| r.map(|_| ()).map_err(|e| (e.kind(), e.rule()));
    let unencodable = Err((ErrorKind::Encode, Rule::UnencodableNumber));
    for n in [1u64 << 53, u64::MAX] {
        assert_eq!(rule_of(Payload::from_serialize(&n)), unencodable);
        assert_eq!(rule_of(Payload::from_value(&json!(n))), unencodable);
        assert_eq!(rule_of(Payload::from_json_str(&n.to_string())), unencodable);
    }
    for n in [-(1i64 << 53), i64::MIN] {
        assert_eq!(rule_of(Payload::from_serialize(&n)), unencodable);
        assert_eq!(rule_of(Payload::from_value(&json!(n))), unencodable);
        assert_eq!(rule_of(Payload::from_json_str(&n.to_string())), unencodable);
    }
    assert_eq!(rule_of(Payload::from_serialize(&u128::MAX)), unencodable);
    assert_eq!(rule_of(Payload::from_serialize(&MAX_SAFE)), Ok(()));
    assert_eq!(rule_of(Payload::from_json_str("9007199254740992.0")), unencodable);
    for f in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 9_007_199_254_740_992.0] {
        assert_eq!(rule_of(Payload::from_serialize(&[f])), unencodable, "{f}");
    }
    assert_eq!(rule_of(Payload::from_serialize(&f32::NAN)), unencodable);
    assert_eq!(
        rule_of(Payload::from_json_str("1e400")),
        Err((ErrorKind::Schema, Rule::WrongType { expected: "JSON" }))
    );
    // Bytes are not JSON.
    assert_eq!(rule_of(Payload::from_serialize(&(1, Blob))), Err((ErrorKind::Encode, Rule::ByteString)));
    // Map keys must be strings (or read as strings).
    let mut by_pair = BTreeMap::new();
    by_pair.insert((1, 2), 3);
    assert_eq!(rule_of(Payload::from_serialize(&by_pair)), Err((ErrorKind::Encode, Rule::NonTextKey)));
    // Depth: the limit of from_value, with its error.
    for levels in [511, 512, 513, 600] {
        let expected = rule_of(Payload::from_value(&nested(levels)));
        assert_eq!(rule_of(Payload::from_serialize(&Nested(levels))), expected, "{levels}");
        let text = format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
        assert_eq!(rule_of(Payload::from_json_str(&text)), expected, "{levels}");
    }
    assert!(rule_of(Payload::from_value(&nested(512))).is_ok());
    assert_eq!(rule_of(Payload::from_value(&nested(513))), Err((ErrorKind::Encode, Rule::DepthLimit { limit: 512 })));
    // Text beyond the depth limit stops there, without recursion.
    let deep = "[".repeat(1_000_000);
    assert_eq!(rule_of(Payload::from_json_str(&deep)), Err((ErrorKind::Encode, Rule::DepthLimit { limit: 512 })));
}

#[test]
fn byte_fields_read_strings_and_arrays_as_serde_json_does() {
    for text in [r#""ab""#, "[1,2,255]"] {
        let payload = Payload::from_json_str(text).unwrap();
        let ours: BlobRead = payload.deserialize().unwrap();
        let theirs: BlobRead = serde_json::from_value(payload.to_value()).unwrap();
        assert_eq!(ours, theirs);
    }
    let number = Payload::from_json_str("7").unwrap();
    assert_eq!(number.deserialize::<BlobRead>().unwrap_err().rule(), Rule::WrongType { expected: "string" });
    assert!(serde_json::from_value::<BlobRead>(number.to_value()).is_err());
}

#[test]
fn deep_payloads_decoded_under_the_widest_limits_deserialize() {
    let payload = Payload::from_value(&nested(500)).unwrap();
    let bytes = bytes::Bytes::copy_from_slice(payload.as_cbor());
    let decoded = Payload::from_cbor(bytes, CborLimits::new(1 << 20, 1 << 20, 512).unwrap()).unwrap();
    // Value's visitor recurses once per level: run where the stack is known.
    let value = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || decoded.deserialize::<Value>().unwrap())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(value, nested(500));
}

#[test]
fn repeated_keys_keep_their_first_place_and_take_the_last_value() {
    let text = r#"{"a":1,"b":{"deep":[[[]]]},"c":3,"b":2}"#;
    let payload = Payload::from_json_str(text).unwrap();
    assert_eq!(serde_json::to_string(&payload).unwrap(), r#"{"a":1,"b":2,"c":3}"#);
    // The shape is measured on what was kept.
    assert_eq!((payload.depth(), payload.widest_container()), (1, 3));
    let from_serde: Payload = serde_json::from_str(text).unwrap();
    assert_eq!(from_serde, payload);
}

#[test]
fn text_that_is_not_json_is_refused() {
    for text in [
        "",
        " ",
        "[",
        "[1,]",
        "{\"a\"}",
        "{\"a\":1,}",
        "{1:2}",
        "01",
        "1.",
        ".5",
        "-",
        "1e",
        "+1",
        "nul",
        "truth",
        "\"\\x\"",
        "\"\u{1}\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "1 2",
        "[1] x",
        "'a'",
        "NaN",
    ] {
        let error = Payload::from_json_str(text).unwrap_err();
        assert_eq!((error.kind(), error.rule()), (ErrorKind::Schema, Rule::WrongType { expected: "JSON" }), "{text:?}");
        assert!(serde_json::from_str::<Value>(text).is_err(), "{text:?}");
    }
    let escaped = Payload::from_json_str(r#""\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00x""#).unwrap();
    assert_eq!(escaped.to_value(), json!("\"\\/\u{8}\u{c}\n\r\té😀x"));
}

#[test]
fn floats_in_text_are_read_exactly() {
    // Values that serde_json without `float_roundtrip` reads one unit in the last place off.
    for text in ["1.4264285722298365e-254", "104501.28571428571", "98847.71428571429", "2.0360838809782997e-81"] {
        let exact: f64 = text.parse().unwrap();
        let payload = Payload::from_json_str(text).unwrap();
        assert_eq!(payload.deserialize::<f64>().unwrap().to_bits(), exact.to_bits(), "{text}");
        assert_eq!(serde_json::to_string(&payload).unwrap().parse::<f64>().unwrap().to_bits(), exact.to_bits());
    }
    assert!(Payload::from_json_str("-0").unwrap().to_value().as_f64().unwrap().is_sign_negative());
    assert_eq!(
        Payload::from_json_str("-0").unwrap(),
        Payload::from_value(&serde_json::from_str("-0").unwrap()).unwrap()
    );
}

/// Entries given in order, repeated keys included, serialized as a map.
struct Entries(Vec<(String, Value)>);

impl Serialize for Entries {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[test]
fn a_serializer_repeating_a_key_gives_what_the_text_gives() {
    // Narrow and wide maps (the filter, then the hash set past sixteen keys), repeats of the
    // first, a middle and the last key, values of other shapes and depths.
    for width in [3usize, 16, 17, 40] {
        for repeated in [0, width / 2, width - 1] {
            let mut entries: Vec<(String, Value)> = (0..width).map(|i| (format!("key-{i}"), json!(i))).collect();
            entries.push((format!("key-{repeated}"), json!({"deep": [[1], {"x": null}]})));
            entries.push(("tail".into(), json!(true)));
            let text =
                format!("{{{}}}", entries.iter().map(|(k, v)| format!("{k:?}:{v}")).collect::<Vec<_>>().join(","));
            let from_serialize = Payload::from_serialize(&Entries(entries)).unwrap();
            let from_text = Payload::from_json_str(&text).unwrap();
            assert_eq!(from_serialize, from_text, "{width} {repeated}");
            let merged = serde_json::to_string(&from_serialize).unwrap();
            assert!(merged.contains(&format!(r#""key-{repeated}":{{"deep""#)), "{merged}");
            assert_eq!(from_serialize.widest_container(), width as u32 + 1);
            assert_eq!(from_serialize.depth(), 4);
        }
    }
}

/// A hand-written `Serialize` that ignores the error of one of its entries and goes on: an
/// array `[1, [2, NaN], 3]` (`struct_like`: an object `{"a": NaN, "b": 1}`) without `?` on the
/// failing entry.
struct Swallowing {
    struct_like: bool,
}

impl Serialize for Swallowing {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeStruct};
        if self.struct_like {
            let mut object = serializer.serialize_struct("Swallowing", 2)?;
            let _ = object.serialize_field("a", &f64::NAN);
            object.serialize_field("b", &1)?;
            return object.end();
        }
        let mut seq = serializer.serialize_seq(Some(3))?;
        seq.serialize_element(&1)?;
        let _ = seq.serialize_element(&(2, f64::NAN));
        seq.serialize_element(&3)?;
        seq.end()
    }
}

#[test]
fn an_error_the_value_ignores_still_fails_the_payload() {
    // Half an entry was written when the error came: going on would give other values ([1, [2,
    // 3]]) or bytes that are not one item ({"a": "b"} then 1).
    for struct_like in [false, true] {
        let error = Payload::from_serialize(&Swallowing { struct_like }).unwrap_err();
        assert_eq!((error.kind(), error.rule()), (ErrorKind::Encode, Rule::UnencodableNumber), "{struct_like}");
    }
}

/// `{"a": 1, "b": 2, "c": 3, "a": ["xy", "c"], "c": "x", "d": true}` as a struct whose
/// `Serialize` repeats two of its (constant) keys, the second after the first one's value
/// grew: where `"b"` and `"c"` were before, there are now the texts `"xy"` and `"c"` inside
/// `"a"`'s new value.
struct RepeatingStruct;

impl Serialize for RepeatingStruct {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut object = serializer.serialize_struct("RepeatingStruct", 6)?;
        object.serialize_field("a", &1)?;
        object.serialize_field("b", &2)?;
        object.serialize_field("c", &3)?;
        object.serialize_field("a", &("xy", "c"))?;
        object.serialize_field("c", "x")?;
        object.serialize_field("d", &true)?;
        object.end()
    }
}

#[test]
fn a_key_repeated_after_a_merged_value_is_found_where_the_merge_moved_it() {
    let expected = r#"{"a":["xy","c"],"b":2,"c":"x","d":true}"#;
    let from_struct = Payload::from_serialize(&RepeatingStruct).unwrap();
    assert_eq!(serde_json::to_string(&from_struct).unwrap(), expected);
    let entries = Entries(vec![
        ("a".into(), json!(1)),
        ("b".into(), json!(2)),
        ("c".into(), json!(3)),
        ("a".into(), json!(["xy", "c"])),
        ("c".into(), json!("x")),
        ("d".into(), json!(true)),
    ]);
    let from_map = Payload::from_serialize(&entries).unwrap();
    let from_text = Payload::from_json_str(r#"{"a":1,"b":2,"c":3,"a":["xy","c"],"c":"x","d":true}"#).unwrap();
    for payload in [&from_map, &from_text] {
        assert_eq!(hex::encode(payload.as_cbor()), hex::encode(from_struct.as_cbor()));
    }
    assert_eq!((from_struct.depth(), from_struct.widest_container()), (2, 4));
}

/// `{key: null}`.
struct OneKey<K>(K);

impl<K: Serialize> Serialize for OneKey<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(&self.0, &())?;
        map.end()
    }
}

#[test]
fn float_keys_are_the_text_serde_json_makes_of_them() {
    fn check<K: Serialize + std::fmt::Debug>(key: K) {
        let ours = Payload::from_serialize(&OneKey(&key)).unwrap();
        let theirs = Payload::from_value(&serde_json::to_value(OneKey(&key)).unwrap()).unwrap();
        assert_eq!(ours, theirs, "{key:?}");
    }
    for key in [-9.938_049e33f32, 1.5, 2.0, -0.0, 1e-7, f32::MAX] {
        check(key);
    }
    for key in [1e21f64, -1e-300, 2.0, 0.1, f64::MAX, 5e-324] {
        check(key);
    }
}
