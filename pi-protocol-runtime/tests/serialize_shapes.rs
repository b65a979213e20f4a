//! `Payload::from_serialize(&t)` against `Payload::from_value(&serde_json::to_value(&t)?)`, byte
//! for byte, for values of random serde shapes (docs/PROTOCOL.md section 5): every method of
//! `serde::Serializer`, map keys of every kind serde_json accepts, struct fields repeated by a
//! hand-written `Serialize` (the same name, or the same text at another address), lengths
//! announced, missing or wrong; and, where the value breaks a rule, the error an independent
//! model of the rules expects.
//!
//! The keys of each object first appear in sorted order, so that `serde_json::Map` gives them
//! in the order they were written whether or not its `preserve_order` feature is on (the
//! order of keys written out of order is tested in `payload_serde.rs`).

use std::sync::OnceLock;

use pi_protocol_runtime::{ErrorKind, Payload, Rule};
use proptest::collection::vec;
use proptest::prelude::*;
use serde::ser::{
    SerializeMap, SerializeSeq, SerializeStruct, SerializeStructVariant, SerializeTuple, SerializeTupleStruct,
    SerializeTupleVariant, Serializer,
};
use serde::Serialize;

const MAX_SAFE: i64 = (1 << 53) - 1;

/// A value as the serde calls that write it.
#[derive(Debug, Clone)]
enum Shape {
    Unit,
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    I128(i128),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    U128(u128),
    F32(f32),
    F64(f64),
    Char(char),
    Str(String),
    Bytes(Vec<u8>),
    None,
    Some(Box<Shape>),
    UnitStruct,
    UnitVariant(&'static str),
    NewtypeStruct(Box<Shape>),
    NewtypeVariant(&'static str, Box<Shape>),
    Seq(Vec<Shape>, Len),
    Tuple(Vec<Shape>),
    TupleStruct(Vec<Shape>),
    TupleVariant(&'static str, Vec<Shape>),
    Map(Vec<(Key, Shape)>, Len),
    Struct(Vec<(&'static str, Shape)>),
    StructVariant(&'static str, Vec<(&'static str, Shape)>),
}

/// The length a sequence or map announces.
#[derive(Debug, Clone, Copy)]
enum Len {
    Exact,
    Unknown,
    /// One more than it has.
    Wrong,
}

/// A map key as the serde call that writes it.
#[derive(Debug, Clone)]
enum Key {
    Str(String),
    Bool(bool),
    I64(i64),
    U64(u64),
    I128(i128),
    F32(f32),
    F64(f64),
    Char(char),
    UnitVariant(&'static str),
    Newtype(Box<Key>),
    /// Not a key serde_json takes: a sequence, `None`, unit, bytes.
    Refused(u8),
}

impl Key {
    /// The text serde_json makes of the key (`None`: it refuses it).
    fn text(&self) -> Option<String> {
        Some(match self {
            Key::Str(s) => s.clone(),
            Key::Bool(b) => b.to_string(),
            Key::I64(n) => n.to_string(),
            Key::U64(n) => n.to_string(),
            Key::I128(n) => n.to_string(),
            // The number as serde_json writes it.
            Key::F32(f) if f.is_finite() => serde_json::to_string(f).unwrap(),
            Key::F64(f) if f.is_finite() => serde_json::to_string(f).unwrap(),
            Key::Char(c) => c.to_string(),
            Key::UnitVariant(v) => (*v).to_owned(),
            Key::Newtype(inner) => inner.text()?,
            Key::F32(_) | Key::F64(_) | Key::Refused(_) => return None,
        })
    }
}

fn len_of(len: Len, n: usize) -> Option<usize> {
    match len {
        Len::Exact => Some(n),
        Len::Unknown => None,
        Len::Wrong => Some(n + 1),
    }
}

impl Serialize for Shape {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Shape::Unit => s.serialize_unit(),
            Shape::Bool(v) => s.serialize_bool(*v),
            Shape::I8(v) => s.serialize_i8(*v),
            Shape::I16(v) => s.serialize_i16(*v),
            Shape::I32(v) => s.serialize_i32(*v),
            Shape::I64(v) => s.serialize_i64(*v),
            Shape::I128(v) => s.serialize_i128(*v),
            Shape::U8(v) => s.serialize_u8(*v),
            Shape::U16(v) => s.serialize_u16(*v),
            Shape::U32(v) => s.serialize_u32(*v),
            Shape::U64(v) => s.serialize_u64(*v),
            Shape::U128(v) => s.serialize_u128(*v),
            Shape::F32(v) => s.serialize_f32(*v),
            Shape::F64(v) => s.serialize_f64(*v),
            Shape::Char(v) => s.serialize_char(*v),
            Shape::Str(v) => s.serialize_str(v),
            Shape::Bytes(v) => s.serialize_bytes(v),
            Shape::None => s.serialize_none(),
            Shape::Some(v) => s.serialize_some(v),
            Shape::UnitStruct => s.serialize_unit_struct("UnitStruct"),
            Shape::UnitVariant(name) => s.serialize_unit_variant("Enum", 0, name),
            Shape::NewtypeStruct(v) => s.serialize_newtype_struct("Newtype", v),
            Shape::NewtypeVariant(name, v) => s.serialize_newtype_variant("Enum", 1, name, v),
            Shape::Seq(items, len) => {
                let mut seq = s.serialize_seq(len_of(*len, items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Shape::Tuple(items) => {
                let mut tuple = s.serialize_tuple(items.len())?;
                for item in items {
                    tuple.serialize_element(item)?;
                }
                tuple.end()
            }
            Shape::TupleStruct(items) => {
                let mut tuple = s.serialize_tuple_struct("TupleStruct", items.len())?;
                for item in items {
                    tuple.serialize_field(item)?;
                }
                tuple.end()
            }
            Shape::TupleVariant(name, items) => {
                let mut tuple = s.serialize_tuple_variant("Enum", 2, name, items.len())?;
                for item in items {
                    tuple.serialize_field(item)?;
                }
                tuple.end()
            }
            Shape::Map(entries, len) => {
                let mut map = s.serialize_map(len_of(*len, entries.len()))?;
                for (key, value) in entries {
                    map.serialize_key(key)?;
                    map.serialize_value(value)?;
                }
                map.end()
            }
            Shape::Struct(fields) => {
                let mut object = s.serialize_struct("Struct", fields.len())?;
                for (name, value) in fields {
                    object.serialize_field(name, value)?;
                }
                object.end()
            }
            Shape::StructVariant(variant, fields) => {
                let mut object = s.serialize_struct_variant("Enum", 3, variant, fields.len())?;
                for (name, value) in fields {
                    object.serialize_field(name, value)?;
                }
                object.end()
            }
        }
    }
}

impl Serialize for Key {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Key::Str(v) => s.serialize_str(v),
            Key::Bool(v) => s.serialize_bool(*v),
            Key::I64(v) => s.serialize_i64(*v),
            Key::U64(v) => s.serialize_u64(*v),
            Key::I128(v) => s.serialize_i128(*v),
            Key::F32(v) => s.serialize_f32(*v),
            Key::F64(v) => s.serialize_f64(*v),
            Key::Char(v) => s.serialize_char(*v),
            Key::UnitVariant(name) => s.serialize_unit_variant("Enum", 0, name),
            Key::Newtype(inner) => s.serialize_newtype_struct("Newtype", inner),
            Key::Refused(0) => s.serialize_none(),
            Key::Refused(1) => s.serialize_unit(),
            Key::Refused(2) => s.serialize_bytes(b"k"),
            Key::Refused(_) => s.collect_seq([1, 2]),
        }
    }
}

// ------------------------------------------------------------------ the rules, modelled

/// The rule a value breaks first, in the order it is written (`None`: it breaks none).
fn first_broken_rule(shape: &Shape) -> Option<Rule> {
    let unencodable = Some(Rule::UnencodableNumber);
    let integer = |n: i128| (n.unsigned_abs() > MAX_SAFE as u128).then_some(Rule::UnencodableNumber);
    let float = |f: f64| (!(f.is_finite() && f.abs() <= MAX_SAFE as f64)).then_some(Rule::UnencodableNumber);
    match shape {
        Shape::I64(n) => integer((*n).into()),
        Shape::I128(n) => integer(*n),
        Shape::U64(n) => integer((*n).into()),
        Shape::U128(n) => i128::try_from(*n).map_or(unencodable, integer),
        Shape::F32(f) => float((*f).into()),
        Shape::F64(f) => float(*f),
        Shape::Bytes(_) => Some(Rule::ByteString),
        Shape::Some(v) | Shape::NewtypeStruct(v) | Shape::NewtypeVariant(_, v) => first_broken_rule(v),
        Shape::Seq(items, _) | Shape::Tuple(items) | Shape::TupleStruct(items) | Shape::TupleVariant(_, items) => {
            items.iter().find_map(first_broken_rule)
        }
        Shape::Map(entries, _) => entries.iter().find_map(|(key, value)| match key.text() {
            None => Some(Rule::NonTextKey),
            Some(_) => first_broken_rule(value),
        }),
        Shape::Struct(fields) | Shape::StructVariant(_, fields) => {
            fields.iter().find_map(|(_, value)| first_broken_rule(value))
        }
        _ => None,
    }
}

/// Whether the serde_json path sees the value as it is written: it turns NaN and the
/// infinities into null and bytes into an array of numbers, and of a key written twice it
/// keeps only the last value (a value the payload serializer has already refused).
fn seen_as_written(shape: &Shape) -> bool {
    fn once(texts: impl Iterator<Item = Option<String>>) -> bool {
        let mut seen = std::collections::HashSet::new();
        texts.flatten().all(|text| seen.insert(text))
    }
    match shape {
        Shape::F32(f) => f.is_finite(),
        Shape::F64(f) => f.is_finite(),
        Shape::Bytes(_) => false,
        Shape::Some(v) | Shape::NewtypeStruct(v) | Shape::NewtypeVariant(_, v) => seen_as_written(v),
        Shape::Seq(items, _) | Shape::Tuple(items) | Shape::TupleStruct(items) | Shape::TupleVariant(_, items) => {
            items.iter().all(seen_as_written)
        }
        Shape::Map(entries, _) => {
            once(entries.iter().map(|(key, _)| key.text())) && entries.iter().all(|(_, value)| seen_as_written(value))
        }
        Shape::Struct(fields) | Shape::StructVariant(_, fields) => {
            once(fields.iter().map(|(name, _)| Some((*name).to_owned())))
                && fields.iter().all(|(_, value)| seen_as_written(value))
        }
        _ => true,
    }
}

// ------------------------------------------------------------------ random shapes

/// Field names: the same texts at other addresses too (leaked once), names whose filter
/// bits are the same ("items", "tokens"), prefixes of one another, the empty name.
fn names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names = vec![
            "",
            "a",
            "ab",
            "b",
            "id",
            "items",
            "tokens",
            "text",
            "role",
            "parent",
            "pinned",
            "serviceId",
            "é",
            "0",
            "10",
        ];
        for copy in ["a", "items", "tokens", "id"] {
            names.push(Box::leak(copy.to_owned().into_boxed_str()));
        }
        names
    })
}

fn name() -> impl Strategy<Value = &'static str> {
    (0..names().len()).prop_map(|i| names()[i])
}

/// A number, now and then beyond the rules (beyond 2^53 - 1, not finite).
fn number() -> impl Strategy<Value = Shape> {
    prop_oneof![
        8 => any::<i8>().prop_map(Shape::I8),
        4 => any::<i16>().prop_map(Shape::I16),
        4 => any::<i32>().prop_map(Shape::I32),
        8 => (-MAX_SAFE..=MAX_SAFE).prop_map(Shape::I64),
        4 => any::<u8>().prop_map(Shape::U8),
        4 => any::<u16>().prop_map(Shape::U16),
        4 => any::<u32>().prop_map(Shape::U32),
        8 => (0..=MAX_SAFE as u64).prop_map(Shape::U64),
        4 => (-(MAX_SAFE as i128)..=MAX_SAFE as i128).prop_map(Shape::I128),
        4 => (0..=MAX_SAFE as u128).prop_map(Shape::U128),
        6 => any::<f32>().prop_filter("finite", |f| f.is_finite()).prop_map(Shape::F32),
        8 => (-1e17f64..1e17).prop_map(Shape::F64),
        2 => prop_oneof![Just(-0.0), Just(0.5), Just(2.0), Just(MAX_SAFE as f64)].prop_map(Shape::F64),
        1 => prop_oneof![Just(i64::MIN), Just(MAX_SAFE + 1), Just(-MAX_SAFE - 1)].prop_map(Shape::I64),
        1 => prop_oneof![Just(u64::MAX), Just(MAX_SAFE as u64 + 1)].prop_map(Shape::U64),
        1 => prop_oneof![Just(i128::MIN), Just(i128::from(u64::MAX) + 1)].prop_map(Shape::I128),
        1 => Just(Shape::U128(u128::MAX)),
        1 => prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(-(2f64.powi(53)))].prop_map(Shape::F64),
        1 => Just(Shape::F32(f32::NEG_INFINITY)),
    ]
}

fn leaf() -> impl Strategy<Value = Shape> {
    prop_oneof![
        1 => Just(Shape::Unit),
        2 => any::<bool>().prop_map(Shape::Bool),
        12 => number(),
        2 => any::<char>().prop_map(Shape::Char),
        6 => any::<String>().prop_map(Shape::Str),
        4 => "[a-z]{20,40}".prop_map(Shape::Str),
        1 => Just(Shape::None),
        1 => Just(Shape::UnitStruct),
        1 => name().prop_map(Shape::UnitVariant),
        1 => vec(any::<u8>(), 0..3).prop_map(Shape::Bytes),
    ]
}

fn key() -> impl Strategy<Value = Key> {
    let plain = prop_oneof![
        8 => "[a-z]{0,3}".prop_map(Key::Str),
        3 => any::<String>().prop_map(Key::Str),
        1 => any::<bool>().prop_map(Key::Bool),
        2 => any::<i64>().prop_map(Key::I64),
        1 => any::<u64>().prop_map(Key::U64),
        1 => any::<i128>().prop_map(Key::I128),
        1 => any::<f32>().prop_map(Key::F32),
        1 => prop_oneof![any::<f64>(), Just(f64::NAN), Just(0.5), Just(-0.0)].prop_map(Key::F64),
        1 => any::<char>().prop_map(Key::Char),
        1 => name().prop_map(Key::UnitVariant),
        1 => (0u8..4).prop_map(Key::Refused),
    ];
    plain.prop_recursive(1, 2, 1, |inner| inner.prop_map(|key| Key::Newtype(Box::new(key))))
}

fn len() -> impl Strategy<Value = Len> {
    prop_oneof![Just(Len::Exact), Just(Len::Unknown), Just(Len::Wrong)]
}

/// `entries`, sorted by their text and each text once, then `repeats` entries that repeat
/// one of the texts (`(which, where, value)`), each somewhere after its first place.
fn with_repeats<K: Clone, V>(
    mut entries: Vec<(K, V)>,
    text: impl Fn(&K) -> String,
    repeats: Vec<(prop::sample::Index, prop::sample::Index, V)>,
    other_key: impl Fn(&K) -> K,
) -> Vec<(K, V)> {
    entries.sort_by_key(|(k, _)| text(k));
    entries.dedup_by_key(|(k, _)| text(k));
    for (which, place, value) in repeats {
        if entries.is_empty() {
            break;
        }
        let first = which.index(entries.len());
        let key = other_key(&entries[first].0);
        let at = first + 1 + place.index(entries.len() - first);
        entries.insert(at, (key, value));
    }
    entries
}

/// A field name with the same text, at the other address when there is one.
fn same_name(name: &&'static str) -> &'static str {
    names().iter().rev().find(|other| **other == *name).copied().unwrap_or(name)
}

fn shape() -> impl Strategy<Value = Shape> {
    leaf().prop_recursive(4, 64, 8, |inner| {
        let items = vec(inner.clone(), 0..6);
        let repeats = vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), inner.clone()), 0..3);
        let fields = (vec((name(), inner.clone()), 0..8), repeats.clone())
            .prop_map(|(fields, repeats)| with_repeats(fields, |n| (*n).to_owned(), repeats, same_name))
            .boxed();
        let entries = (vec((key(), inner.clone()), 0..20), repeats).prop_map(|(entries, repeats)| {
            // A refused key sorts first (its text is None): it is the first error when there.
            with_repeats(entries, |k| k.text().unwrap_or_default(), repeats, Key::clone)
        });
        prop_oneof![
            2 => inner.clone().prop_map(|v| Shape::Some(Box::new(v))),
            1 => inner.clone().prop_map(|v| Shape::NewtypeStruct(Box::new(v))),
            1 => (name(), inner.clone()).prop_map(|(n, v)| Shape::NewtypeVariant(n, Box::new(v))),
            3 => (items.clone(), len()).prop_map(|(items, len)| Shape::Seq(items, len)),
            1 => items.clone().prop_map(Shape::Tuple),
            1 => items.clone().prop_map(Shape::TupleStruct),
            1 => (name(), items).prop_map(|(n, items)| Shape::TupleVariant(n, items)),
            3 => (entries, len()).prop_map(|(entries, len)| Shape::Map(entries, len)),
            3 => fields.clone().prop_map(Shape::Struct),
            1 => (name(), fields).prop_map(|(n, fields)| Shape::StructVariant(n, fields)),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn from_serialize_writes_what_from_value_of_to_value_writes(shape in shape()) {
        let ours = Payload::from_serialize(&shape);
        match first_broken_rule(&shape) {
            None => {
                let ours = ours.unwrap();
                let value = serde_json::to_value(&shape).expect("serde_json takes what breaks no rule");
                let theirs = Payload::from_value(&value).unwrap();
                prop_assert_eq!(hex::encode(ours.as_cbor()), hex::encode(theirs.as_cbor()));
                prop_assert_eq!(
                    (ours.depth(), ours.widest_container()),
                    (theirs.depth(), theirs.widest_container())
                );
            }
            Some(rule) => {
                let error = ours.unwrap_err();
                prop_assert_eq!((error.kind(), error.rule()), (ErrorKind::Encode, rule));
                // The serde_json path fails too where it sees the value as it is written
                // (serde_json itself refuses non-text keys and integers beyond 64 bits).
                if seen_as_written(&shape) {
                    match serde_json::to_value(&shape) {
                        Ok(value) => prop_assert_eq!(Payload::from_value(&value).unwrap_err().rule(), rule),
                        Err(_) => prop_assert!(matches!(rule, Rule::NonTextKey | Rule::UnencodableNumber)),
                    }
                }
            }
        }
    }
}
