//! The JSON view (`#[codec(json)]`): serde impls and `to_json` / `from_json` in the wire shape,
//! with the wire decoder's rules on the way in, for structs, unions, unit enums and newtypes.

use pi_protocol_derive::Codec;
use pi_protocol_runtime::{ErrorKind, Integer, Number, Record, Rule};
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq, Eq, Codec)]
#[codec(json, min_length = 1)]
struct Id(String);

#[derive(Debug, Clone, PartialEq, Eq, Codec)]
#[codec(json, minimum = 0)]
struct Count(Integer);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Codec)]
#[codec(json)]
enum Colour {
    #[codec(value = "red")]
    Red,
    #[codec(value = null)]
    None,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(json, literal(key = "type", value = "note"), literal(key = "v", value = 2, after = "id"))]
struct Note {
    id: Id,
    #[codec(rename = "colourName")]
    colour: Colour,
    weight: Option<Number>,
    #[codec(nullable)]
    parent: Option<Option<Id>>,
    #[codec(values(minimum = 1))]
    counts: Record<Integer>,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(json, literal(key = "type", value = "mark"))]
struct Mark {
    at: Integer,
}

#[derive(Debug, Clone, PartialEq, Codec)]
#[codec(json, tag = "type")]
enum Item {
    Note(Note),
    Mark(Mark),
}

fn note_json() -> Value {
    json!({"type": "note", "id": "n1", "v": 2, "colourName": null, "weight": -0.0, "parent": null, "counts": {"b": 2, "a": 1}})
}

#[test]
fn to_json_is_the_wire_shape_in_wire_order() {
    let note = Note::from_json(&note_json()).unwrap();
    assert_eq!(note.colour, Colour::None);
    assert_eq!(note.parent, Some(None));
    assert_eq!(note.counts.keys().collect::<Vec<_>>(), ["b", "a"]);
    // Literals are written, keys in canonical order, `-0.0` stays a float, record order is kept.
    assert_eq!(
        serde_json::to_string(&note).unwrap(),
        r#"{"type":"note","id":"n1","v":2,"colourName":null,"weight":-0.0,"parent":null,"counts":{"b":2,"a":1}}"#
    );
    assert_eq!(note.to_json(), note_json());
    let item = Item::from(note.clone());
    assert_eq!(item.to_json(), note_json());
    assert_eq!(serde_json::from_value::<Item>(note_json()).unwrap(), item);
    assert_eq!(
        Item::from_json(&json!({"type": "mark", "at": 5})).unwrap(),
        Item::Mark(Mark { at: Integer::from(5u8) })
    );
}

#[test]
fn scalars_and_newtypes_are_plain_json_values() {
    assert_eq!(serde_json::to_string(&Colour::Red).unwrap(), r#""red""#);
    assert_eq!(serde_json::from_str::<Colour>("null").unwrap(), Colour::None);
    assert_eq!(Id::new("x").unwrap().to_json(), json!("x"));
    assert_eq!(serde_json::from_str::<Count>("7").unwrap(), Count::new(Integer::from(7u8)).unwrap());
    assert_eq!(serde_json::to_string(&Count::new(Integer::from(7u8)).unwrap()).unwrap(), "7");
}

#[test]
fn the_way_in_applies_the_wire_rules_with_paths() {
    let cases = [
        (json!({"type": "note"}), ErrorKind::Schema, Rule::MissingField, "id"),
        (json!({"type": "mark", "at": 1.5}), ErrorKind::Schema, Rule::WrongType { expected: "integer" }, "at"),
        (json!({"type": "mark", "at": 1, "extra": true}), ErrorKind::Schema, Rule::UnknownField, ""),
        (json!({"type": "other"}), ErrorKind::Schema, Rule::Literal, "type"),
    ];
    for (value, kind, rule, path) in cases {
        let err = Item::from_json(&value).unwrap_err();
        assert_eq!((err.kind(), err.rule(), err.path_string().as_str()), (kind, rule, path), "{value}");
        // serde reports the same error text.
        assert_eq!(serde_json::from_value::<Item>(value).unwrap_err().to_string(), err.to_string());
    }
    let mut bad_count = note_json();
    bad_count["counts"]["a"] = json!(0);
    let err = Note::from_json(&bad_count).unwrap_err();
    assert_eq!((err.rule(), err.path_string()), (Rule::Minimum { min: Number::from(1) }, "counts{1}".to_owned()));
    let mut bad_colour = note_json();
    bad_colour["colourName"] = json!("blue");
    assert_eq!(Note::from_json(&bad_colour).unwrap_err().rule(), Rule::NotInEnum);
    assert!(serde_json::from_str::<Id>(r#""""#).is_err());
    // A number JSON holds but the protocol cannot carry.
    let err = Item::from_json(&json!({"type": "mark", "at": 9_007_199_254_740_992u64})).unwrap_err();
    assert_eq!(err.rule(), Rule::UnencodableNumber);
}
