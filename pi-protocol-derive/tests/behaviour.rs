//! Behaviour of `#[derive(Codec)]` on hand-written types, decoding hand-made CBOR.

mod common;

use common::{array, assert_error, boolean, bytes, decode, encode, float, int, map, null, text};
use pi_protocol_derive::Codec;
use pi_protocol_runtime::{ErrorKind, Integer, KeySet, Number, Payload, ProtocolError, Rule, Scalar, Tagged, Validate};

/// A name of at least two characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Codec)]
#[codec(min_length = 2)]
struct Name(String);

/// Two hex digits, a dash, `x` or `y`, then `.z`.
#[derive(Debug, Clone, PartialEq, Eq, Codec)]
#[codec(pattern = "^[0-9a-f]{2}-[xy]\\.z$")]
struct Code(String);

/// Both constraints.
#[derive(Debug, Clone, PartialEq, Eq, Codec)]
#[codec(min_length = 3, pattern = "^[a-z]{3}$")]
struct Word(String);

/// No constraint at all.
#[derive(Debug, Clone, PartialEq, Eq, Codec)]
struct Anything(String);

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "type", value = "ping"), literal(key = "v", value = 8, after = "name"))]
struct Ping {
    name: Name,
    #[codec(rename = "count", minimum = 0)]
    count_value: Integer,
    note: Option<String>,
    #[codec(nullable)]
    parent: Option<Name>,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "type", value = "pong"), literal(key = "level", value = -3))]
struct Pong {
    code: Code,
    #[codec(min_length = 2)]
    label: Option<String>,
    #[codec(pattern = "^[a-z]{3}$")]
    word: String,
    #[codec(minimum = -5)]
    delta: Option<Integer>,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "type", value = "reply"), literal(key = "ok", value = true, after = "id"))]
struct Good {
    id: Name,
    result: Option<Payload>,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "type", value = "reply"), literal(key = "ok", value = false, after = "id"))]
struct Bad {
    id: Name,
    error: String,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(tag = "ok")]
enum Reply {
    Good(Good),
    Bad(Bad),
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(tag = "type")]
enum Msg {
    Ping(Ping),
    Pong(Pong),
    Reply(Reply),
}

#[derive(Debug, Clone, PartialEq, Codec)]
struct OnlyX {
    x: Name,
}

#[derive(Debug, Clone, PartialEq, Codec)]
struct Xyz {
    x: Name,
    y: Name,
    z: Option<Name>,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(key_set)]
enum Target {
    X(OnlyX),
    Xyz(Xyz),
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "type", value = "bye"))]
struct Bye {}

#[derive(Debug, Clone, PartialEq, Codec)]
struct Nothing {}

#[derive(Debug, Clone, PartialEq, Codec)]
struct Holder {
    target: Target,
    #[codec(rename = "r#type")]
    kind: Bye,
    r#loop: bool,
}

mod rt {
    pub use pi_protocol_runtime::*;
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(crate = "crate::rt", min_length = 1)]
struct ViaReexport(String);

fn name(s: &str) -> Name {
    Name::new(s).unwrap()
}

fn ping_bytes() -> Vec<u8> {
    map(&[
        ("type", text("ping")),
        ("name", text("ab")),
        ("v", int(8)),
        ("count", int(3)),
        ("note", text("hi")),
        ("parent", text("pa")),
    ])
}

fn ping() -> Ping {
    Ping { name: name("ab"), count_value: Integer::from(3u8), note: Some("hi".to_owned()), parent: Some(name("pa")) }
}

#[test]
fn struct_round_trip_in_canonical_order() {
    assert_eq!(decode::<Ping>(&ping_bytes()).unwrap(), ping());
    // `v` sits right behind `name` (literal with `after`); `type` comes first.
    assert_eq!(encode(&ping()), ping_bytes());
    assert_eq!(
        hex::encode(encode(&ping())),
        "a664747970656470696e67646e616d6562616261760865636f756e7403646e6f746562686966706172656e74627061"
    );
}

#[test]
fn key_order_on_the_wire_is_free() {
    let shuffled = map(&[
        ("parent", text("pa")),
        ("count", int(3)),
        ("v", int(8)),
        ("note", text("hi")),
        ("name", text("ab")),
        ("type", text("ping")),
    ]);
    assert_eq!(decode::<Ping>(&shuffled).unwrap(), ping());
}

#[test]
fn optional_key_may_be_omitted_and_is_omitted_on_encode() {
    let bytes =
        map(&[("type", text("ping")), ("name", text("ab")), ("v", int(8)), ("count", int(0)), ("parent", null())]);
    let value = Ping { name: name("ab"), count_value: Integer::from(0u8), note: None, parent: None };
    assert_eq!(decode::<Ping>(&bytes).unwrap(), value);
    assert_eq!(encode(&value), bytes);
}

#[test]
fn null_is_not_none_for_an_optional_key() {
    let bytes = map(&[
        ("type", text("ping")),
        ("name", text("ab")),
        ("v", int(8)),
        ("count", int(0)),
        ("note", null()),
        ("parent", null()),
    ]);
    assert_error(decode::<Ping>(&bytes), ErrorKind::Schema, Rule::WrongType { expected: "string" }, "note");
}

#[test]
fn nullable_key_is_required() {
    let bytes = map(&[("type", text("ping")), ("name", text("ab")), ("v", int(8)), ("count", int(0))]);
    assert_error(decode::<Ping>(&bytes), ErrorKind::Schema, Rule::MissingField, "parent");
    let wrong =
        map(&[("type", text("ping")), ("name", text("ab")), ("v", int(8)), ("count", int(0)), ("parent", int(1))]);
    assert_error(decode::<Ping>(&wrong), ErrorKind::Schema, Rule::WrongType { expected: "string" }, "parent");
    let short =
        map(&[("type", text("ping")), ("name", text("ab")), ("v", int(8)), ("count", int(0)), ("parent", text("p"))]);
    assert_error(decode::<Ping>(&short), ErrorKind::Schema, Rule::MinLength { min: 2 }, "parent");
}

#[test]
fn unknown_key_is_rejected_without_naming_it() {
    let mut entries =
        vec![("type", text("ping")), ("name", text("ab")), ("v", int(8)), ("count", int(3)), ("parent", null())];
    entries.insert(2, ("secret-key", text("x")));
    let err = decode::<Ping>(&map(&entries)).unwrap_err();
    assert_eq!((err.kind(), err.rule(), err.path_string()), (ErrorKind::Schema, Rule::UnknownField, String::new()));
    assert!(!err.to_string().contains("secret"));
}

#[test]
fn duplicate_keys_are_rejected() {
    let field_twice = map(&[
        ("type", text("ping")),
        ("name", text("ab")),
        ("name", text("ab")),
        ("v", int(8)),
        ("count", int(3)),
        ("parent", null()),
    ]);
    assert_error(decode::<Ping>(&field_twice), ErrorKind::Cbor, Rule::DuplicateKey, "");
    let literal_twice = map(&[
        ("type", text("ping")),
        ("name", text("ab")),
        ("v", int(8)),
        ("v", int(8)),
        ("count", int(3)),
        ("parent", null()),
    ]);
    assert_error(decode::<Ping>(&literal_twice), ErrorKind::Cbor, Rule::DuplicateKey, "");
    let nullable_twice = map(&[
        ("type", text("ping")),
        ("name", text("ab")),
        ("v", int(8)),
        ("count", int(3)),
        ("parent", null()),
        ("parent", null()),
    ]);
    assert_error(decode::<Ping>(&nullable_twice), ErrorKind::Cbor, Rule::DuplicateKey, "");
    let optional_twice = map(&[("x", text("ab")), ("y", text("cd")), ("z", text("ef")), ("z", text("ef"))]);
    assert_error(decode::<Xyz>(&optional_twice), ErrorKind::Cbor, Rule::DuplicateKey, "");
}

#[test]
fn missing_keys_are_reported_at_the_key() {
    let no_name = map(&[("type", text("ping")), ("v", int(8)), ("count", int(3)), ("parent", null())]);
    assert_error(decode::<Ping>(&no_name), ErrorKind::Schema, Rule::MissingField, "name");
    let no_literal = map(&[("type", text("ping")), ("name", text("ab")), ("count", int(3)), ("parent", null())]);
    assert_error(decode::<Ping>(&no_literal), ErrorKind::Schema, Rule::MissingField, "v");
    let no_type = map(&[("name", text("ab")), ("v", int(8)), ("count", int(3)), ("parent", null())]);
    assert_error(decode::<Ping>(&no_type), ErrorKind::Schema, Rule::MissingField, "type");
}

#[test]
fn literal_values_are_exact() {
    let with_v = |v: Vec<u8>| {
        map(&[("type", text("ping")), ("name", text("ab")), ("v", v), ("count", int(3)), ("parent", null())])
    };
    // An integral float64 is the integer it holds.
    assert!(decode::<Ping>(&with_v(float(8.0))).is_ok());
    for wrong in [int(7), float(8.5), text("8"), boolean(true), null(), array(&[int(8)]), map(&[])] {
        assert_error(decode::<Ping>(&with_v(wrong)), ErrorKind::Schema, Rule::Literal, "v");
    }
    let wrong_type = map(&[("type", text("pong")), ("name", text("ab")), ("v", int(8)), ("count", int(3))]);
    assert_error(decode::<Ping>(&wrong_type), ErrorKind::Schema, Rule::Literal, "type");
    // A CBOR problem inside the literal's value is reported as such, at the key.
    assert_error(decode::<Ping>(&with_v(vec![0xf7])), ErrorKind::Cbor, Rule::UnsupportedSimple, "v");
}

#[test]
fn field_minimum_counts_negative_zero_as_zero() {
    let with_count = |c: Vec<u8>| {
        map(&[("type", text("ping")), ("name", text("ab")), ("v", int(8)), ("count", c), ("parent", null())])
    };
    assert_error(
        decode::<Ping>(&with_count(int(-1))),
        ErrorKind::Schema,
        Rule::Minimum { min: Number::from(0) },
        "count",
    );
    let zero = decode::<Ping>(&with_count(float(-0.0))).unwrap();
    assert!(zero.count_value.is_negative_zero());
    assert_error(
        decode::<Ping>(&with_count(float(1.5))),
        ErrorKind::Schema,
        Rule::WrongType { expected: "integer" },
        "count",
    );
    assert_eq!(decode::<Ping>(&with_count(float(12.0))).unwrap().count_value.get(), 12);
}

#[test]
fn not_a_map_is_a_wrong_type() {
    assert_error(decode::<Ping>(&text("ping")), ErrorKind::Schema, Rule::WrongType { expected: "object" }, "");
    assert_error(decode::<Msg>(&array(&[])), ErrorKind::Schema, Rule::WrongType { expected: "object" }, "");
    assert_error(decode::<Target>(&int(1)), ErrorKind::Schema, Rule::WrongType { expected: "object" }, "");
    let nested = map(&[("target", text("x")), ("r#type", map(&[("type", text("bye"))])), ("loop", boolean(true))]);
    assert_error(decode::<Holder>(&nested), ErrorKind::Schema, Rule::WrongType { expected: "object" }, "target");
}

#[test]
fn newtype_constraints_on_decode() {
    assert_eq!(decode::<Code>(&text("0f-x.z")).unwrap().as_str(), "0f-x.z");
    for bad in ["0F-x.z", "0f-x.z\n", "0f-xaz", "0f-z.z", "0f-x.", "", "0f-x.zz", "\u{ff10}f-x.z"] {
        assert_error(decode::<Code>(&text(bad)), ErrorKind::Schema, Rule::Pattern, "");
    }
    assert_error(decode::<Name>(&text("a")), ErrorKind::Schema, Rule::MinLength { min: 2 }, "");
    // Length counts characters, not bytes.
    assert_error(decode::<Name>(&text("é")), ErrorKind::Schema, Rule::MinLength { min: 2 }, "");
    assert_eq!(decode::<Name>(&text("éé")).unwrap(), "éé");
    assert_error(decode::<Name>(&int(1)), ErrorKind::Schema, Rule::WrongType { expected: "string" }, "");
    assert_error(decode::<Word>(&text("ab")), ErrorKind::Schema, Rule::MinLength { min: 3 }, "");
    assert_error(decode::<Word>(&text("abcd")), ErrorKind::Schema, Rule::Pattern, "");
    assert_eq!(decode::<Anything>(&text("")).unwrap().as_str(), "");
    assert_eq!(encode(&Code::new("0f-x.z").unwrap()), text("0f-x.z"));
    assert_error(decode::<ViaReexport>(&text("")), ErrorKind::Schema, Rule::MinLength { min: 1 }, "");
}

#[test]
fn newtype_api() {
    let code = Code::new(String::from("ab-y.z")).unwrap();
    assert_eq!(code.as_str(), "ab-y.z");
    assert_eq!(code, "ab-y.z");
    assert_eq!(code, *"ab-y.z");
    assert_eq!(code.len(), 6); // through Deref<Target = str>
    assert_eq!(code.to_string(), "ab-y.z");
    assert_eq!(AsRef::<str>::as_ref(&code), "ab-y.z");
    assert_eq!("ab-y.z".parse::<Code>().unwrap(), code);
    assert_eq!(Code::try_from("ab-y.z").unwrap(), code);
    assert_eq!(Code::try_from(String::from("ab-y.z")).unwrap(), code);
    assert_eq!(String::from(code.clone()), "ab-y.z");
    assert_eq!(code.clone().into_string(), "ab-y.z");
    assert!(Code::is_valid("00-x.z"));
    assert!(!Code::is_valid("00-x.z "));
    assert!(!Name::is_valid("a"));
    assert!(Name::is_valid("ab"));
    assert!(Anything::is_valid(""));
    let err = Code::new("not a code").unwrap_err();
    assert_eq!((err.kind(), err.rule()), (ErrorKind::Schema, Rule::Pattern));
    assert!(!err.to_string().contains("not a code"));
    assert_eq!(Name::new("x").unwrap_err().rule(), Rule::MinLength { min: 2 });
    assert!("zz".parse::<Code>().is_err());
    assert!(Word::try_from("abc").is_ok());
    assert_eq!(Word::try_from("ab").unwrap_err().rule(), Rule::MinLength { min: 3 });
    // A value built inside the module bypasses `new`; `validate` still catches it.
    assert_eq!(Code("bad".to_owned()).validate().unwrap_err().rule(), Rule::Pattern);
    assert!(code.validate().is_ok());
}

#[test]
fn field_level_text_constraints() {
    let pong = |label: Option<&str>, word: &str, delta: Option<Vec<u8>>| {
        let mut entries = vec![("type", text("pong")), ("level", int(-3)), ("code", text("00-x.z"))];
        if let Some(label) = label {
            entries.push(("label", text(label)));
        }
        entries.push(("word", text(word)));
        if let Some(delta) = delta {
            entries.push(("delta", delta));
        }
        map(&entries)
    };
    let ok = decode::<Pong>(&pong(Some("hé"), "abc", Some(int(-5)))).unwrap();
    assert_eq!(ok.label.as_deref(), Some("hé"));
    assert_eq!(ok.delta.map(Integer::get), Some(-5));
    assert_eq!(encode(&ok), pong(Some("hé"), "abc", Some(int(-5))));
    assert!(decode::<Pong>(&pong(None, "abc", None)).is_ok());
    assert_error(decode::<Pong>(&pong(Some("h"), "abc", None)), ErrorKind::Schema, Rule::MinLength { min: 2 }, "label");
    assert_error(decode::<Pong>(&pong(None, "abcd", None)), ErrorKind::Schema, Rule::Pattern, "word");
    assert_error(
        decode::<Pong>(&pong(None, "abc", Some(int(-6)))),
        ErrorKind::Schema,
        Rule::Minimum { min: Number::from(-5) },
        "delta",
    );
    assert_error(
        decode::<Pong>(&pong(None, "abc", Some(null()))),
        ErrorKind::Schema,
        Rule::WrongType { expected: "integer" },
        "delta",
    );
    let bad_code = map(&[("type", text("pong")), ("level", int(-3)), ("code", text("00-x.y")), ("word", text("abc"))]);
    assert_error(decode::<Pong>(&bad_code), ErrorKind::Schema, Rule::Pattern, "code");
    let bad_level = map(&[("type", text("pong")), ("level", int(3)), ("code", text("00-x.z")), ("word", text("abc"))]);
    assert_error(decode::<Pong>(&bad_level), ErrorKind::Schema, Rule::Literal, "level");
}

#[test]
fn validate_checks_field_constraints_and_recurses() {
    assert!(ping().validate().is_ok());
    let mut bad = ping();
    bad.count_value = Integer::new(-2).unwrap();
    let err = bad.validate().unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::Minimum { min: Number::from(0) }, "count".to_owned()));
    let mut bad = ping();
    bad.parent = Some(Name("x".to_owned()));
    let err = bad.validate().unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::MinLength { min: 2 }, "parent".to_owned()));
    let msg = Msg::Pong(Pong {
        code: Code("00-x.z".to_owned()),
        label: Some("x".to_owned()),
        word: "abc".to_owned(),
        delta: None,
    });
    let err = msg.validate().unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::MinLength { min: 2 }, "label".to_owned()));
    let holder = Holder { target: Target::X(OnlyX { x: Name("x".to_owned()) }), kind: Bye {}, r#loop: false };
    let err = holder.validate().unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::MinLength { min: 2 }, "target.x".to_owned()));
}

fn good_bytes(order: &[&str]) -> Vec<u8> {
    let entries: Vec<(&str, Vec<u8>)> = order
        .iter()
        .map(|k| match *k {
            "type" => ("type", text("reply")),
            "id" => ("id", text("r1")),
            "ok" => ("ok", boolean(true)),
            "result" => ("result", map(&[("a", array(&[int(1), null()]))])),
            other => (other, int(0)),
        })
        .collect();
    map(&entries)
}

#[test]
fn tagged_enum_dispatch_with_nested_union() {
    let bytes = good_bytes(&["type", "id", "ok", "result"]);
    let Msg::Reply(Reply::Good(good)) = decode::<Msg>(&bytes).unwrap() else { panic!("wrong variant") };
    assert_eq!(good.id, "r1");
    assert_eq!(good.result.as_ref().map(|p| p.to_value().to_string()).as_deref(), Some(r#"{"a":[1,null]}"#));
    // Canonical order: type, id, ok, result.
    assert_eq!(encode(&Msg::from(Reply::from(good.clone()))), bytes);
    // The tags may sit anywhere in the map.
    let shuffled = good_bytes(&["result", "ok", "id", "type"]);
    assert_eq!(decode::<Msg>(&shuffled).unwrap(), Msg::Reply(Reply::Good(good)));

    let bad = map(&[("ok", boolean(false)), ("error", text("boom")), ("id", text("r2")), ("type", text("reply"))]);
    let Msg::Reply(Reply::Bad(bad)) = decode::<Msg>(&bad).unwrap() else { panic!("wrong variant") };
    assert_eq!(bad.error, "boom");

    let ping = decode::<Msg>(&ping_bytes()).unwrap();
    assert_eq!(ping, Msg::Ping(self::ping()));
    assert_eq!(encode(&ping), ping_bytes());
}

#[test]
fn tagged_enum_errors() {
    assert_error(decode::<Msg>(&map(&[("id", text("r1"))])), ErrorKind::Schema, Rule::MissingField, "type");
    assert_error(decode::<Msg>(&map(&[("type", text("nope"))])), ErrorKind::Schema, Rule::Literal, "type");
    assert_error(decode::<Msg>(&map(&[("type", int(1))])), ErrorKind::Schema, Rule::Literal, "type");
    // The outer tag matches, the inner one is missing or wrong.
    let no_ok = map(&[("type", text("reply")), ("id", text("r1"))]);
    assert_error(decode::<Msg>(&no_ok), ErrorKind::Schema, Rule::MissingField, "ok");
    let ok_null = map(&[("type", text("reply")), ("id", text("r1")), ("ok", null())]);
    assert_error(decode::<Msg>(&ok_null), ErrorKind::Schema, Rule::Literal, "ok");
    // `ok: true` with `error`: the Good variant is chosen and refuses the unknown key.
    let mixed = map(&[("type", text("reply")), ("id", text("r1")), ("ok", boolean(true)), ("error", text("e"))]);
    assert_error(decode::<Msg>(&mixed), ErrorKind::Schema, Rule::UnknownField, "");
    // Errors inside the chosen variant keep their path.
    let short_id = map(&[("type", text("reply")), ("id", text("r")), ("ok", boolean(false)), ("error", text("e"))]);
    assert_error(decode::<Msg>(&short_id), ErrorKind::Schema, Rule::MinLength { min: 2 }, "id");
}

#[test]
fn tagged_traits() {
    assert!(Ping::accepts("type", &Scalar::Text("ping")));
    assert!(Ping::accepts("v", &Scalar::Number(8.0)));
    assert!(!Ping::accepts("v", &Scalar::Number(8.5)));
    assert!(!Ping::accepts("name", &Scalar::Text("ab")));
    assert!(Pong::accepts("level", &Scalar::Number(-3.0)));
    assert!(Reply::accepts("type", &Scalar::Text("reply")));
    assert!(Reply::accepts("ok", &Scalar::Bool(false)));
    assert!(!Reply::accepts("ok", &Scalar::Null));
    assert!(Msg::accepts("type", &Scalar::Text("pong")));
    assert!(!Msg::accepts("type", &Scalar::Other));
    assert!(!OnlyX::accepts("x", &Scalar::Text("ab")));
    assert_eq!(Ping::KEYS, &["type", "name", "v", "count", "note", "parent"]);
    assert_eq!(Ping::REQUIRED, &["type", "name", "v", "count", "parent"]);
    assert_eq!(Xyz::KEYS, &["x", "y", "z"]);
    assert_eq!(Xyz::REQUIRED, &["x", "y"]);
    assert_eq!(Nothing::KEYS, &[] as &[&str]);
}

#[test]
fn key_set_union_picks_by_keys() {
    let x = map(&[("x", text("ab"))]);
    assert_eq!(decode::<Target>(&x).unwrap(), Target::X(OnlyX { x: name("ab") }));
    let xy = map(&[("y", text("cd")), ("x", text("ab"))]);
    let expected = Target::Xyz(Xyz { x: name("ab"), y: name("cd"), z: None });
    assert_eq!(decode::<Target>(&xy).unwrap(), expected);
    assert_eq!(encode(&expected), map(&[("x", text("ab")), ("y", text("cd"))]));
    let xyz = map(&[("x", text("ab")), ("y", text("cd")), ("z", text("ef"))]);
    assert!(matches!(decode::<Target>(&xyz).unwrap(), Target::Xyz(Xyz { z: Some(_), .. })));
    for bad in [
        map(&[]),
        map(&[("x", text("ab")), ("z", text("ef"))]),
        map(&[("y", text("ab"))]),
        map(&[("x", text("ab")), ("w", text("ef"))]),
        map(&[("x", text("ab")), ("y", text("cd")), ("z", text("ef")), ("w", text("gh"))]),
    ] {
        assert_error(decode::<Target>(&bad), ErrorKind::Schema, Rule::NoVariant, "");
    }
    // A chosen variant still checks values and duplicates.
    assert_error(decode::<Target>(&map(&[("x", text("a"))])), ErrorKind::Schema, Rule::MinLength { min: 2 }, "x");
    assert_error(
        decode::<Target>(&map(&[("x", text("ab")), ("x", text("ab"))])),
        ErrorKind::Cbor,
        Rule::DuplicateKey,
        "",
    );
    let holder = map(&[("target", xy.clone()), ("r#type", map(&[("type", text("bye"))])), ("loop", boolean(false))]);
    let decoded = decode::<Holder>(&holder).unwrap();
    assert_eq!(decoded.target, Target::from(Xyz { x: name("ab"), y: name("cd"), z: None }));
    assert_eq!(
        encode(&decoded),
        map(&[
            ("target", map(&[("x", text("ab")), ("y", text("cd"))])),
            ("r#type", map(&[("type", text("bye"))])),
            ("loop", boolean(false))
        ])
    );
    let bad_holder =
        map(&[("target", map(&[("q", int(1))])), ("r#type", map(&[("type", text("bye"))])), ("loop", boolean(false))]);
    assert_error(decode::<Holder>(&bad_holder), ErrorKind::Schema, Rule::NoVariant, "target");
}

#[test]
fn empty_structs() {
    assert_eq!(decode::<Nothing>(&map(&[])).unwrap(), Nothing {});
    assert_eq!(encode(&Nothing {}), vec![0xa0]);
    assert_error(decode::<Nothing>(&map(&[("a", int(1))])), ErrorKind::Schema, Rule::UnknownField, "");
    assert_eq!(decode::<Bye>(&map(&[("type", text("bye"))])).unwrap(), Bye {});
    assert_eq!(encode(&Bye {}), map(&[("type", text("bye"))]));
    assert_error(decode::<Bye>(&map(&[])), ErrorKind::Schema, Rule::MissingField, "type");
}

#[test]
fn raw_identifier_field_uses_its_plain_name() {
    let bytes = map(&[
        ("target", map(&[("x", text("ab"))])),
        ("r#type", map(&[("type", text("bye"))])),
        ("loop", boolean(true)),
    ]);
    let holder = decode::<Holder>(&bytes).unwrap();
    assert!(holder.r#loop);
    assert_eq!(encode(&holder), bytes);
}

#[test]
fn byte_strings_and_nested_errors_carry_the_path() {
    let with_note = |v: Vec<u8>| {
        map(&[
            ("type", text("ping")),
            ("name", text("ab")),
            ("v", int(8)),
            ("count", int(1)),
            ("note", v),
            ("parent", null()),
        ])
    };
    assert_error(decode::<Ping>(&with_note(bytes(b"x"))), ErrorKind::Schema, Rule::ByteString, "note");
    let good = good_bytes(&["type", "id", "ok", "result"]);
    assert!(decode::<Msg>(&good).is_ok());
    let payload_with_bytes =
        map(&[("type", text("reply")), ("id", text("r1")), ("ok", boolean(true)), ("result", bytes(b"x"))]);
    let err: ProtocolError = decode::<Msg>(&payload_with_bytes).unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::ByteString, "result".to_owned()));
}
