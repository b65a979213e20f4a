//! The value checks of the derive grammar (`max_length`, numeric bounds, array sizes, nested
//! `items(..)`, `values(..)` and `keys(..)`), on fields and on newtypes over any type: every
//! check fails at its bound with its rule and field path, on decode and in `Validate`.

mod common;

use common::{array, assert_error, decode, encode, float, int, map, text};
use pi_protocol_derive::Codec;
use pi_protocol_runtime::{ErrorKind, Integer, Number, Record, Rule, Validate};

/// Between 2 and 4 characters (as the reference counts them).
#[derive(Debug, Clone, PartialEq, Eq, Codec)]
#[codec(min_length = 2, max_length = 4)]
struct Short(String);

/// A port: an integer in 1..=65535.
#[derive(Debug, Clone, PartialEq, Eq, Codec)]
#[codec(minimum = 1, maximum = 65535)]
struct Port(Integer);

/// A ratio strictly between 0 and 1.
#[derive(Debug, Clone, PartialEq, Eq, Codec)]
#[codec(exclusive_minimum = 0, exclusive_maximum = 1)]
struct Ratio(Number);

/// One to three non-empty tags.
#[derive(Debug, Clone, PartialEq, Eq, Codec)]
#[codec(min_items = 1, max_items = 3, items(min_length = 1))]
struct Tags(Vec<String>);

/// Scores by lowercase name, each from 0 to 10.
#[derive(Debug, Clone, PartialEq, Eq, Codec)]
#[codec(keys(pattern = "^[a-z]+$"), values(minimum = 0, maximum = 10))]
struct Scores(Record<Integer>);

#[derive(Debug, Clone, PartialEq, Codec)]
struct Limits {
    #[codec(max_length = 3)]
    code: String,
    #[codec(minimum = -1.5, maximum = 2.5)]
    level: Number,
    #[codec(exclusive_minimum = 0)]
    weight: Option<Number>,
    #[codec(min_items = 2)]
    pair: Vec<Integer>,
    #[codec(items(max_items = 2, items(maximum = 9)))]
    grid: Vec<Vec<Integer>>,
    #[codec(values(max_length = 2))]
    labels: Option<Record<String>>,
    port: Port,
}

fn limits_bytes(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut all: Vec<(&str, Vec<u8>)> = vec![
        ("code", text("abc")),
        ("level", float(2.5)),
        ("pair", array(&[int(1), int(2)])),
        ("grid", array(&[array(&[int(9), int(0)]), array(&[])])),
        ("port", int(80)),
    ];
    for (key, value) in entries {
        match all.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value.clone(),
            None => all.push((key, value.clone())),
        }
    }
    map(&all)
}

#[test]
fn string_lengths_bound_both_ways() {
    assert_eq!(decode::<Short>(&text("ab")).unwrap().as_str(), "ab");
    assert_eq!(decode::<Short>(&text("abcd")).unwrap().as_str(), "abcd");
    assert_error(decode::<Short>(&text("a")), ErrorKind::Schema, Rule::MinLength { min: 2 }, "");
    assert_error(decode::<Short>(&text("abcde")), ErrorKind::Schema, Rule::MaxLength { max: 4 }, "");
    // Four characters of two bytes each: eight bytes, still four characters.
    assert!(decode::<Short>(&text("éééé")).is_ok());
    // A letter and its combining accent count once.
    assert!(decode::<Short>(&text("e\u{301}e\u{301}e\u{301}e\u{301}")).is_ok());
    assert_eq!(Short::new("abcde").unwrap_err().rule(), Rule::MaxLength { max: 4 });
    assert!(!Short::is_valid("abcde"));
    assert_error(
        decode::<Limits>(&limits_bytes(&[("code", text("abcd"))])),
        ErrorKind::Schema,
        Rule::MaxLength { max: 3 },
        "code",
    );
}

#[test]
fn integer_newtype_bounds() {
    assert_eq!(decode::<Port>(&int(1)).unwrap().get(), &Integer::from(1u8));
    assert_eq!(decode::<Port>(&int(65535)).unwrap(), Port::new(Integer::from(65535u32)).unwrap());
    assert_error(decode::<Port>(&int(0)), ErrorKind::Schema, Rule::Minimum { min: Number::from(1) }, "");
    assert_error(decode::<Port>(&int(65536)), ErrorKind::Schema, Rule::Maximum { max: Number::from(65535) }, "");
    assert_error(decode::<Port>(&float(1.5)), ErrorKind::Schema, Rule::WrongType { expected: "integer" }, "");
    assert_error(decode::<Port>(&text("80")), ErrorKind::Schema, Rule::WrongType { expected: "integer" }, "");
    assert_eq!(Port::new(Integer::from(0u8)).unwrap_err().rule(), Rule::Minimum { min: Number::from(1) });
    assert_eq!(Port::try_from(Integer::from(443u16)).unwrap().into_inner(), Integer::from(443u16));
    assert_eq!(encode(&Port::new(Integer::from(443u16)).unwrap()), int(443));
}

#[test]
fn exclusive_bounds_exclude_the_bound() {
    assert_eq!(decode::<Ratio>(&float(0.5)).unwrap().get().value(), 0.5);
    let just_above_zero = f64::from_bits(1);
    assert!(decode::<Ratio>(&float(just_above_zero)).is_ok());
    assert_error(decode::<Ratio>(&int(0)), ErrorKind::Schema, Rule::ExclusiveMinimum { min: Number::from(0) }, "");
    // `-0.0` is zero for the bound, as in JSON Schema.
    assert_error(decode::<Ratio>(&float(-0.0)), ErrorKind::Schema, Rule::ExclusiveMinimum { min: Number::from(0) }, "");
    assert_error(decode::<Ratio>(&int(1)), ErrorKind::Schema, Rule::ExclusiveMaximum { max: Number::from(1) }, "");
    assert_error(decode::<Ratio>(&float(1.0)), ErrorKind::Schema, Rule::ExclusiveMaximum { max: Number::from(1) }, "");
    let weight = |w: Vec<u8>| limits_bytes(&[("weight", w)]);
    assert!(decode::<Limits>(&weight(float(0.001))).is_ok());
    assert_error(
        decode::<Limits>(&weight(int(0))),
        ErrorKind::Schema,
        Rule::ExclusiveMinimum { min: Number::from(0) },
        "weight",
    );
}

#[test]
fn fractional_bounds_on_a_number_field() {
    assert!(decode::<Limits>(&limits_bytes(&[("level", float(-1.5))])).is_ok());
    assert!(decode::<Limits>(&limits_bytes(&[("level", int(2))])).is_ok());
    let below = decode::<Limits>(&limits_bytes(&[("level", int(-2))]));
    assert_error(below, ErrorKind::Schema, Rule::Minimum { min: Number::new(-1.5).unwrap() }, "level");
    let above = decode::<Limits>(&limits_bytes(&[("level", float(2.75))])).unwrap_err();
    assert_eq!((above.rule(), above.path_string()), (Rule::Maximum { max: Number::new(2.5).unwrap() }, "level".into()));
    assert_eq!(above.to_string(), "invalid message at level: number above the maximum of 2.5");
}

#[test]
fn array_sizes_and_element_checks() {
    assert_eq!(decode::<Tags>(&array(&[text("a")])).unwrap().get(), &vec!["a".to_owned()]);
    assert_error(decode::<Tags>(&array(&[])), ErrorKind::Schema, Rule::MinItems { min: 1 }, "");
    let four = array(&[text("a"), text("b"), text("c"), text("d")]);
    assert_error(decode::<Tags>(&four), ErrorKind::Schema, Rule::MaxItems { max: 3 }, "");
    let empty_second = array(&[text("a"), text(""), text("c")]);
    assert_error(decode::<Tags>(&empty_second), ErrorKind::Schema, Rule::MinLength { min: 1 }, "[1]");
    assert_error(
        decode::<Tags>(&array(&[text("a"), int(1)])),
        ErrorKind::Schema,
        Rule::WrongType { expected: "string" },
        "[1]",
    );
    assert_error(decode::<Tags>(&text("a")), ErrorKind::Schema, Rule::WrongType { expected: "array" }, "");
    assert_eq!(Tags::new(Vec::new()).unwrap_err().rule(), Rule::MinItems { min: 1 });
    let tags = Tags::new(vec!["x".into(), "y".into()]).unwrap();
    assert_eq!(encode(&tags), array(&[text("x"), text("y")]));

    let pair = decode::<Limits>(&limits_bytes(&[("pair", array(&[int(1)]))]));
    assert_error(pair, ErrorKind::Schema, Rule::MinItems { min: 2 }, "pair");
}

#[test]
fn nested_element_checks_name_each_level() {
    let grid = |g: Vec<u8>| limits_bytes(&[("grid", g)]);
    let long_row = array(&[array(&[]), array(&[int(1), int(2), int(3)])]);
    assert_error(decode::<Limits>(&grid(long_row)), ErrorKind::Schema, Rule::MaxItems { max: 2 }, "grid[1]");
    let big_cell = array(&[array(&[int(1), int(10)])]);
    assert_error(
        decode::<Limits>(&grid(big_cell)),
        ErrorKind::Schema,
        Rule::Maximum { max: Number::from(9) },
        "grid[0][1]",
    );
}

#[test]
fn record_keys_and_values() {
    let scores = decode::<Scores>(&map(&[("ann", int(3)), ("bob", int(10))])).unwrap();
    assert_eq!(scores.get().keys().collect::<Vec<_>>(), ["ann", "bob"]);
    assert_eq!(encode(&scores), map(&[("ann", int(3)), ("bob", int(10))]));
    // Paths name the entry by its position, never by the peer's key.
    let high = decode::<Scores>(&map(&[("ann", int(3)), ("bob", int(11))]));
    assert_error(high, ErrorKind::Schema, Rule::Maximum { max: Number::from(10) }, "{1}");
    let bad_key = decode::<Scores>(&map(&[("ann", int(3)), ("Secret", int(1))])).unwrap_err();
    assert_eq!((bad_key.rule(), bad_key.path_string()), (Rule::Pattern, "{1}".to_owned()));
    assert!(!bad_key.to_string().contains("Secret"));
    assert_error(decode::<Scores>(&map(&[("a", int(1)), ("a", int(2))])), ErrorKind::Cbor, Rule::DuplicateKey, "");

    let labels = |l: Vec<u8>| limits_bytes(&[("labels", l)]);
    assert!(decode::<Limits>(&labels(map(&[("x", text("ok"))]))).unwrap().labels.is_some());
    assert_error(
        decode::<Limits>(&labels(map(&[("x", text("ok")), ("y", text("long"))]))),
        ErrorKind::Schema,
        Rule::MaxLength { max: 2 },
        "labels{1}",
    );
}

#[test]
fn validate_applies_the_same_checks_with_paths() {
    let mut limits = decode::<Limits>(&limits_bytes(&[])).unwrap();
    assert!(limits.validate().is_ok());
    limits.grid[0].push(Integer::from(1u8));
    let err = limits.validate().unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::MaxItems { max: 2 }, "grid[0]".to_owned()));
    limits.grid[0].truncate(1);
    limits.labels = Some([("a", "abc".to_owned())].into_iter().collect());
    let err = limits.validate().unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::MaxLength { max: 2 }, "labels{0}".to_owned()));
    limits.labels = None;
    limits.weight = Some(Number::from(-1));
    let err = limits.validate().unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::ExclusiveMinimum { min: Number::from(0) }, "weight".to_owned()));
    limits.weight = None;
    // A newtype field built inside its module bypasses `new`; validation recurses into it.
    limits.port = Port(Integer::from(0u8));
    let err = limits.validate().unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::Minimum { min: Number::from(1) }, "port".to_owned()));
    assert_eq!(Scores(Record::from_iter([("UP", Integer::from(1u8))])).validate().unwrap_err().rule(), Rule::Pattern);
}
