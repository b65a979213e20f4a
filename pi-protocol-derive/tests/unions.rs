//! Unions beyond one tag key: several tag keys together (`tags(..)`), unit variants standing for
//! one value (`#[codec(value = ...)]`), unions told apart by JSON type, recursion through
//! `Box`, and the optional+nullable field (`#[codec(nullable)] Option<Option<T>>`).

mod common;

use common::{array, assert_error, boolean, decode, encode, float, int, map, null, text};
use pi_protocol_derive::Codec;
use pi_protocol_runtime::{ErrorKind, Integer, JsonTypes, Null, Number, Rule, Scalar, Tagged, Validate};

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "role", value = "user"), literal(key = "status", value = "active"))]
struct ActiveUser {
    name: String,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "role", value = "user"), literal(key = "status", value = "banned"))]
struct BannedUser {
    name: String,
    reason: String,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(literal(key = "role", value = "admin"))]
struct Admin {
    name: String,
}

/// Told apart by `role` and `status` together; `Admin` has no `status` literal, so any status
/// (or none) is an admin's.
#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(tags("role", "status"))]
enum Account {
    Active(ActiveUser),
    Banned(BannedUser),
    Admin(Admin),
}

/// An enumeration of scalar values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Codec)]
enum Level {
    #[codec(value = "low")]
    Low,
    #[codec(value = "high")]
    High,
    #[codec(value = 3)]
    Three,
    #[codec(value = true)]
    On,
    #[codec(value = null)]
    Unset,
}

#[derive(Debug, Clone, PartialEq, Codec)]
struct Point {
    x: Integer,
    y: Integer,
}

/// A value told apart by its JSON type: a number, a string, a list of itself or a point.
#[derive(Debug, Clone, PartialEq, Codec)]
enum Value {
    Number(Number),
    Word(String),
    List(Vec<Value>),
    Point(Point),
}

/// A level or any other string: the unit values are tried first.
#[derive(Debug, Clone, PartialEq, Codec)]
enum Mode {
    #[codec(value = "auto")]
    Auto,
    Named(String),
}

/// A recursive type: a tree whose children are trees.
#[derive(Debug, Clone, PartialEq, Codec)]
struct Tree {
    label: String,
    next: Option<Box<Tree>>,
    children: Vec<Tree>,
}

#[derive(Debug, Clone, PartialEq, Codec)]
struct Patch {
    /// Absent: unchanged; `null`: cleared; a value: set.
    #[codec(nullable, min_length = 1)]
    title: Option<Option<String>>,
    marker: Option<Null>,
}

fn user(role: &str, status: Option<&str>, rest: &[(&'static str, Vec<u8>)]) -> Vec<u8> {
    let mut entries = vec![("role", text(role))];
    if let Some(status) = status {
        entries.push(("status", text(status)));
    }
    entries.extend(rest.iter().cloned());
    map(&entries)
}

#[test]
fn several_tag_keys_pick_the_variant_together() {
    let active = user("user", Some("active"), &[("name", text("ann"))]);
    assert_eq!(decode::<Account>(&active).unwrap(), Account::Active(ActiveUser { name: "ann".into() }));
    assert_eq!(encode(&decode::<Account>(&active).unwrap()), active);
    let banned = user("user", Some("banned"), &[("name", text("bob")), ("reason", text("spam"))]);
    assert!(matches!(decode::<Account>(&banned).unwrap(), Account::Banned(b) if b.reason == "spam"));
    let admin = user("admin", None, &[("name", text("eve"))]);
    assert_eq!(decode::<Account>(&admin).unwrap(), Account::from(Admin { name: "eve".into() }));
    // Keys in any order.
    let shuffled = map(&[("name", text("ann")), ("status", text("active")), ("role", text("user"))]);
    assert!(matches!(decode::<Account>(&shuffled).unwrap(), Account::Active(_)));
}

#[test]
fn several_tag_keys_report_the_first_key_no_variant_accepts() {
    assert_error(decode::<Account>(&map(&[("name", text("x"))])), ErrorKind::Schema, Rule::MissingField, "role");
    assert_error(decode::<Account>(&user("guest", None, &[])), ErrorKind::Schema, Rule::Literal, "role");
    assert_error(decode::<Account>(&user("user", None, &[])), ErrorKind::Schema, Rule::MissingField, "status");
    assert_error(decode::<Account>(&user("user", Some("gone"), &[])), ErrorKind::Schema, Rule::Literal, "status");
    // An admin holds no status key: the admin variant is chosen and refuses it.
    let admin_with_status = user("admin", Some("active"), &[("name", text("eve"))]);
    assert_error(decode::<Account>(&admin_with_status), ErrorKind::Schema, Rule::UnknownField, "");
    // The chosen variant reports its own errors.
    let no_reason = user("user", Some("banned"), &[("name", text("bob"))]);
    assert_error(decode::<Account>(&no_reason), ErrorKind::Schema, Rule::MissingField, "reason");
}

#[test]
fn accepts_all_follows_the_literals() {
    let role = |r: &'static str| ("role", Some(Scalar::Text(r)));
    assert!(ActiveUser::accepts_all(&[role("user"), ("status", Some(Scalar::Text("active")))]));
    assert!(!ActiveUser::accepts_all(&[role("user"), ("status", None)]));
    assert!(Admin::accepts_all(&[role("admin"), ("status", None)]));
    assert!(Admin::accepts_all(&[role("admin"), ("status", Some(Scalar::Bool(true)))]));
    assert!(!Admin::accepts_all(&[role("user")]));
    assert!(Account::accepts_all(&[role("admin")]));
    assert!(!Account::accepts_all(&[role("guest")]));
}

#[test]
fn unit_variants_stand_for_their_values() {
    let cases = [
        (text("low"), Level::Low),
        (text("high"), Level::High),
        (int(3), Level::Three),
        (float(3.0), Level::Three),
        (boolean(true), Level::On),
        (null(), Level::Unset),
    ];
    for (bytes, level) in cases {
        assert_eq!(decode::<Level>(&bytes).unwrap(), level, "{bytes:02x?}");
    }
    assert_eq!(encode(&Level::Low), text("low"));
    assert_eq!(encode(&Level::Three), int(3));
    assert_eq!(encode(&Level::On), boolean(true));
    assert_eq!(encode(&Level::Unset), null());
    // A value of a type the enumeration has, but not one of its values.
    for other in [text("medium"), int(4), boolean(false)] {
        assert_error(decode::<Level>(&other), ErrorKind::Schema, Rule::NotInEnum, "");
    }
    // A type it has no value of.
    assert_error(decode::<Level>(&array(&[])), ErrorKind::Schema, Rule::NoVariant, "");
    assert_error(decode::<Level>(&map(&[])), ErrorKind::Schema, Rule::NoVariant, "");
    assert!(Level::Low.validate().is_ok());
}

#[test]
fn unit_values_come_before_a_variant_of_the_same_type() {
    assert_eq!(decode::<Mode>(&text("auto")).unwrap(), Mode::Auto);
    assert_eq!(decode::<Mode>(&text("manual")).unwrap(), Mode::Named("manual".into()));
    assert_eq!(encode(&Mode::Auto), text("auto"));
    assert_error(decode::<Mode>(&int(1)), ErrorKind::Schema, Rule::NoVariant, "");
}

#[test]
fn json_type_picks_the_variant() {
    assert_eq!(
        <Value as pi_protocol_runtime::Decode<'_>>::TYPES,
        JsonTypes::NUMBER.union(JsonTypes::STRING).union(JsonTypes::ARRAY).union(JsonTypes::OBJECT)
    );
    let bytes = array(&[int(1), float(0.5), text("a"), array(&[]), map(&[("x", int(1)), ("y", int(2))])]);
    let value = decode::<Value>(&bytes).unwrap();
    let Value::List(items) = &value else { panic!("an array is a list: {value:?}") };
    assert_eq!(items[0], Value::Number(Number::from(1)));
    assert_eq!(items[1], Value::Number(Number::new(0.5).unwrap()));
    assert_eq!(items[2], Value::Word("a".into()));
    assert_eq!(items[3], Value::List(Vec::new()));
    assert_eq!(items[4], Value::Point(Point { x: Integer::from(1u8), y: Integer::from(2u8) }));
    assert_eq!(encode(&value), bytes);
    assert_error(decode::<Value>(&null()), ErrorKind::Schema, Rule::NoVariant, "");
    assert_error(decode::<Value>(&boolean(true)), ErrorKind::Schema, Rule::NoVariant, "");
    // Errors inside a chosen variant keep their path.
    let bad_point = array(&[map(&[("x", int(1))])]);
    assert_error(decode::<Value>(&bad_point), ErrorKind::Schema, Rule::MissingField, "[0].y");
}

#[test]
fn recursion_through_box_and_vec() {
    let leaf = |label: &str| map(&[("label", text(label)), ("children", array(&[]))]);
    let bytes = map(&[
        ("label", text("root")),
        ("next", leaf("sibling")),
        ("children", array(&[leaf("a"), map(&[("label", text("b")), ("children", array(&[leaf("c")]))])])),
    ]);
    let tree = decode::<Tree>(&bytes).unwrap();
    assert_eq!(tree.next.as_ref().map(|t| t.label.as_str()), Some("sibling"));
    assert_eq!(tree.children[1].children[0].label, "c");
    assert_eq!(encode(&tree), bytes);
    let deep_error =
        map(&[("label", text("r")), ("children", array(&[map(&[("label", int(1)), ("children", array(&[]))])]))]);
    assert_error(
        decode::<Tree>(&deep_error),
        ErrorKind::Schema,
        Rule::WrongType { expected: "string" },
        "children[0].label",
    );
}

#[test]
fn optional_nullable_field_has_three_states() {
    let absent = decode::<Patch>(&map(&[])).unwrap();
    assert_eq!(absent.title, None);
    assert_eq!(encode(&absent), map(&[]));
    let cleared = decode::<Patch>(&map(&[("title", null())])).unwrap();
    assert_eq!(cleared.title, Some(None));
    assert_eq!(encode(&cleared), map(&[("title", null())]));
    let set = decode::<Patch>(&map(&[("title", text("t"))])).unwrap();
    assert_eq!(set.title, Some(Some("t".into())));
    assert_eq!(encode(&set), map(&[("title", text("t"))]));
    // The checks apply to a present value only.
    assert_error(decode::<Patch>(&map(&[("title", text(""))])), ErrorKind::Schema, Rule::MinLength { min: 1 }, "title");
    let err = Patch { title: Some(Some(String::new())), marker: None }.validate().unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::MinLength { min: 1 }, "title".to_owned()));
    assert!(Patch { title: Some(None), marker: None }.validate().is_ok());
    // `Null` holds exactly null; as an optional field, absence is `None`.
    let marked = decode::<Patch>(&map(&[("marker", null())])).unwrap();
    assert_eq!(marked.marker, Some(Null));
    assert_eq!(encode(&marked), map(&[("marker", null())]));
    assert_error(
        decode::<Patch>(&map(&[("marker", int(0))])),
        ErrorKind::Schema,
        Rule::WrongType { expected: "null" },
        "marker",
    );
}
