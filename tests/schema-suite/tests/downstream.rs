//! The generated types in use from another crate, the way a downstream crate uses its own:
//! through the `pi-protocol` facade alone. The suite's generated code names the runtime and the
//! derive only through the facade (`pi_protocol::runtime`, `pi_protocol::Codec`), and its types
//! are `#[non_exhaustive]` here, so messages are built with the generated constructors and
//! setters. The schema is `rich` (`pi-protocol-gen/tests/schemas/rich.json`).

use pi_protocol::runtime::{decode_message, encode_message, MessageDecoder, Record};
use pi_protocol::{CborLimits, CodecOptions, ErrorKind, Integer, Number, Rule};
use pi_protocol_schema_suite::rich::{Batch, ClientMessage, Code, Color, Get, Id, Put, Ratio, Repeats, Slug};
use pi_protocol_schema_suite::{for_each_schema, Schema, Visitor};
use serde_json::json;

fn put() -> Put {
    let free: Record<Integer> = [("ok", Integer::from(1u8)), ("more", Integer::from(2u8))].into_iter().collect();
    Put::new(Id::new("p1").unwrap(), Code::new("ABC").unwrap(), None)
        .with_color(Color::Green)
        .with_ratio(Ratio::new(Number::new(0.5).unwrap()).unwrap())
        .with_free(free)
}

#[test]
fn generated_types_round_trip_through_frames() {
    let get = Get::new(Id::new("g1").unwrap()).with_keys(vec![Slug::new("ab-cd").unwrap()]);
    let messages = vec![
        ClientMessage::from(put()),
        ClientMessage::from(get.clone()),
        ClientMessage::from(Batch::new(vec![ClientMessage::from(get), ClientMessage::from(put())])),
    ];
    let mut stream = Vec::new();
    for message in &messages {
        stream.extend(encode_message(message, &CodecOptions::default()).unwrap());
    }
    let mut decoder = MessageDecoder::<ClientMessage>::with_options(&CodecOptions::default());
    let (decoded, error) = decoder.decode_all(stream.chunks(3));
    assert!(error.is_none(), "{error:?}");
    assert_eq!(decoded, messages);
}

#[test]
fn the_json_view_is_the_wire_shape() {
    let expected = json!({
        "op": "put", "id": "p1", "code": "ABC", "ratio": 0.5, "color": "green",
        "free": {"ok": 1, "more": 2}, "note": null, "version": 3, "final": true
    });
    assert_eq!(ClientMessage::from(put()).to_json(), expected);
    assert_eq!(serde_json::from_value::<ClientMessage>(expected).unwrap(), ClientMessage::from(put()));
    let get: ClientMessage = serde_json::from_str(r#"{"op":"get","id":"g1","keys":["ab"]}"#).unwrap();
    assert!(matches!(&get, ClientMessage::Get(g) if g.keys.as_deref() == Some(&[Slug::new("ab").unwrap()][..])));
}

#[test]
fn schema_constraints_apply_on_decode_and_encode() {
    let with = |key: &str, value: serde_json::Value| {
        let mut message = put().to_json();
        message[key] = value;
        ClientMessage::from_json(&message).unwrap_err()
    };
    let error = with("code", json!("ABc"));
    assert_eq!((error.kind(), error.rule(), error.path_string().as_str()), (ErrorKind::Schema, Rule::Pattern, "code"));
    let error = with("ratio", json!(2.5));
    let max = Number::new(2.5).unwrap();
    assert_eq!((error.rule(), error.path_string()), (Rule::ExclusiveMaximum { max }, "ratio".into()));
    let error = with("color", json!("purple"));
    assert_eq!((error.rule(), error.path_string()), (Rule::NotInEnum, "color".into()));
    // A value built in memory is validated before it is encoded.
    let mut bad = put();
    bad.free = Some([("ok", Integer::from(-1i8))].into_iter().collect());
    let error = encode_message(&ClientMessage::from(bad), &CodecOptions::default()).unwrap_err();
    assert_eq!((error.rule(), error.path_string()), (Rule::Minimum { min: Number::from(0) }, "free{0}".into()));
    let error = decode_message::<Code>(&[0x63, b'A', b'B', b'c'], CborLimits::default()).unwrap_err();
    assert_eq!(error.rule(), Rule::Pattern);
}

/// A generated type whose pattern is `^(a+)+$` refuses 10,000 `a`s and a `!` (exponential for a
/// backtracking engine: 28 characters took 8 s) well under a second, on decode and on `new`,
/// and accepts the 10,000 `a`s alone. A generous bound against a hang, not a benchmark.
#[test]
fn a_redos_text_is_refused_in_linear_time_by_generated_types() {
    let hostile = format!("{}!", "a".repeat(10_000));
    let mut cbor = vec![0x79, (hostile.len() >> 8) as u8, hostile.len() as u8];
    cbor.extend_from_slice(hostile.as_bytes());
    let start = std::time::Instant::now();
    let error = decode_message::<Repeats>(&cbor, CborLimits::default()).unwrap_err();
    assert_eq!(error.rule(), Rule::Pattern);
    assert!(Repeats::new(hostile.as_str()).is_err());
    let valid = &hostile[..10_000];
    assert_eq!(Repeats::new(valid).unwrap().as_str(), valid);
    assert!(start.elapsed() < std::time::Duration::from_secs(1), "{:?}", start.elapsed());
}

/// Every generated module names the runtime and the derive through the facade only.
#[test]
fn the_generated_code_names_only_the_facade() {
    struct Check(usize);
    impl Visitor for Check {
        fn visit<S: Schema>(&mut self) {
            let code = S::CODE;
            assert!(code.contains("use pi_protocol::Codec;"), "{}", S::NAME);
            assert!(!code.contains("pi_protocol_runtime") && !code.contains("pi_protocol_derive"), "{}", S::NAME);
            // Every derived type tells the derive where the runtime is.
            let derives = code.matches("#[derive(").count();
            assert!(derives > 5, "{}: {derives} derives", S::NAME);
            assert_eq!(derives, code.matches("crate = \"pi_protocol::runtime\"").count(), "{}", S::NAME);
            self.0 += 1;
        }
    }
    let mut check = Check(0);
    for_each_schema(&mut check);
    // Every test schema of the generator, and the project's own v8 schema.
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pi-protocol-gen/tests/schemas");
    let files = std::fs::read_dir(folder)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "json"));
    assert_eq!(check.0, files.count() + 1);
}

/// The accessors of `accessors.json` (`pi-protocol-gen/tests/snapshots/accessors.rs` shows the
/// rules on a smaller schema): every variant's own field, an optional one, a nullable one, a
/// boxed one on a cycle, one reached through a nested union, and none for a field of two types.
#[test]
fn union_accessors_reach_the_shared_fields_of_every_variant() {
    use pi_protocol_schema_suite::accessors::{Circle, ClientMessage, Group, Many, Maybe, Name, Square};
    let name = |n: &str| Name::new(n).unwrap();
    let square = Square::new(name("sq"), Number::new(1.5).unwrap(), None, "edge");
    let circle = Circle::new(name("ci"), Integer::from(2u8), Some("round".to_owned()), true, None, "arc");
    let nested = ClientMessage::from(
        Square::new(name("outer"), Number::new(2.0).unwrap(), None, "box")
            .with_inner(ClientMessage::from(circle.clone())),
    );
    let group = ClientMessage::from(Group::from(Many::new(name("gr"), "many")));
    let absent = ClientMessage::from(Maybe::new());
    let noted = ClientMessage::from(Maybe::new().with_name(name("mb")).with_note(Some("n".to_owned())));
    let circle = ClientMessage::from(circle);
    let square = ClientMessage::from(square);
    let names: Vec<Option<&str>> =
        [&circle, &square, &group, &absent, &noted].iter().map(|m| m.name().map(Name::as_str)).collect();
    assert_eq!(names, [Some("ci"), Some("sq"), Some("gr"), None, Some("mb")]);
    assert_eq!(
        [circle.note(), square.note(), group.note(), absent.note(), noted.note()],
        [Some("round"), None, None, None, Some("n")]
    );
    assert_eq!(nested.inner(), Some(&circle));
    assert_eq!(circle.inner(), None);
    assert_eq!(
        [circle.label(), square.label(), group.label(), absent.label()],
        [Some("arc"), Some("edge"), Some("many"), None]
    );
    // `size` is an integer in one variant and a number in the other: no accessor, so matching
    // on the variant is the way to it.
    assert!(!pi_protocol_schema_suite::Accessors::CODE.contains("pub fn size("));
}
