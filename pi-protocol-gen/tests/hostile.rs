//! Hostile schemas: documents an adversary writes to crash, hang or exhaust the generator and
//! every consumer of its model. Each one must end in a model (and code, an interpreter, samples
//! and a compatibility report), or in an error naming a JSON pointer, on a 2 MiB stack (the
//! default of test threads; `cargo test` may run them on a larger one, so each case runs on a
//! thread of exactly that size) and in bounded time: never a panic, a hang or a stack overflow.
//!
//! The limits these tests push against are `pi_protocol_gen::limits` (`SCHEMA.md`, "Limits").

use std::sync::mpsc;
use std::time::Duration;

use pi_protocol_gen::compat::{compat, WitnessSearch};
use pi_protocol_gen::limits::{MAX_CHAIN, MAX_DOCUMENT_DEPTH, MAX_MEMBERS, MAX_NESTING, MAX_TYPES};
use pi_protocol_gen::model::Side;
use pi_protocol_gen::sample::Sampler;
use pi_protocol_gen::{GenError, Interpreter, Model, Options};
use serde_json::{json, Map, Value};

/// The stack of a test thread.
const TEST_STACK: usize = 2 << 20;

/// How long a case may take before it counts as a hang. Not a measurement: every case here
/// takes well under a second; this only turns a hang into a failure instead of a stuck run.
const HANG: Duration = Duration::from_secs(120);

/// Runs `f` on a thread with a 2 MiB stack and returns its result; fails on a panic (a stack
/// overflow aborts the whole test binary) or a hang.
fn on_test_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .stack_size(TEST_STACK)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn a test thread");
    match rx.recv_timeout(HANG) {
        Ok(value) => {
            handle.join().expect("the case finished");
            value
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the case did not finish within {HANG:?}: a hang"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(handle.join().expect_err("the case panicked"))
        }
    }
}

/// The model of `document`, or its error.
fn convert(document: Value) -> Result<Model, GenError> {
    on_test_stack(move || Model::from_value(&document))
}

/// The error of `document`, which must be refused.
fn refused(document: Value) -> GenError {
    match convert(document) {
        Ok(model) => panic!("expected a refusal, got {} types", model.types().len()),
        Err(error) => error,
    }
}

/// A closed object with these properties, all required.
fn object(properties: Value) -> Value {
    let required: Vec<String> = properties.as_object().expect("properties").keys().cloned().collect();
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// Every consumer of a model, on a test stack: the Rust source, the interpreter (and a decode
/// of a drawn message), the sampler, the compatibility report with its witness search.
fn every_consumer(model: Model) -> String {
    on_test_stack(move || {
        let code = model.to_rust("hostile.json", &Options::default()).expect("the model renders");
        let interpreter = Interpreter::new(&model).expect("the model interprets");
        let mut sampler = Sampler::new(&model, 7);
        for side in Side::BOTH {
            if let Some(message) = sampler.message(side) {
                interpreter.validate_json(side, &message).expect("a drawn message is valid");
            }
        }
        let mut report = compat(&model, &model);
        report.find_witnesses(&model, &model, &WitnessSearch::new().attempts(50)).expect("witnesses");
        assert!(report.holds(pi_protocol_gen::compat::Direction::Backward), "a schema is compatible with itself");
        code
    })
}

/// `definitions` as the `$defs` of a document.
fn document(definitions: Map<String, Value>) -> Value {
    json!({ "$defs": definitions })
}

// ---- depth: nothing recurses without a bound ----

/// Arrays nested in place through references to nested definitions (not named types, so they
/// are expanded where they are used): one level per definition, as deep as the adversary likes.
#[test]
fn values_nested_in_place_beyond_the_limit_are_refused_with_the_pointer() {
    let n = 5_000;
    let mut nested = Map::new();
    for i in 0..n {
        let next = format!("#/$defs/M/$defs/B{}", i + 1);
        nested.insert(format!("B{i}"), json!({ "type": "array", "items": { "$ref": next } }));
    }
    nested.insert(format!("B{n}"), json!({ "type": "string" }));
    let m = json!({ "$defs": nested, "type": "object", "properties": { "x": { "$ref": "#/$defs/M/$defs/B0" } },
        "additionalProperties": false });
    let error = refused(json!({ "$defs": { "M": m } }));
    let path = error.path().expect("a schema error");
    assert!(path.starts_with("#/$defs/M/$defs/B"), "{error}");
    assert!(error.to_string().contains(&format!("more than {MAX_NESTING} levels")), "{error}");
}

/// The same through JSON pointers into one deep schema (`#/$defs/Z/items/items/...`).
#[test]
fn references_into_a_deep_schema_count_its_depth() {
    let mut z = json!({ "type": "string" });
    for _ in 0..100 {
        z = json!({ "type": "array", "items": z });
    }
    let mut pointer = String::from("#/$defs/Z");
    let mut properties = Map::new();
    for i in 0..100 {
        properties.insert(format!("p{i}"), json!({ "$ref": pointer.clone() }));
        pointer.push_str("/items");
    }
    let error = refused(json!({ "$defs": { "Z": z, "M": object(Value::Object(properties)) } }));
    assert!(error.to_string().contains(&format!("more than {MAX_NESTING} levels")), "{error}");
}

/// At the limit, with every kind of level (arrays, records with a key pattern, nullable values,
/// references), the model feeds every consumer on a 2 MiB stack.
#[test]
fn values_nested_in_place_up_to_the_limit_reach_every_consumer() {
    let mut value = json!({ "type": "string", "minLength": 1 });
    let mut levels = 1;
    let mut nested = Map::new();
    while levels < MAX_NESTING {
        value = match levels % 4 {
            0 => json!({ "type": "array", "items": value, "maxItems": 2 }),
            1 => json!({ "type": "object", "patternProperties": { "^[a-z]+$": value }, "additionalProperties": false }),
            2 => json!({ "anyOf": [value, { "type": "null" }] }),
            _ => {
                nested.insert(format!("R{levels}"), value);
                json!({ "$ref": format!("#/$defs/ClientMessage/$defs/R{levels}") })
            }
        };
        levels += 1;
    }
    let mut message = object(json!({ "deep": value }));
    message["$defs"] = Value::Object(nested);
    let model = convert(json!({ "$defs": { "ClientMessage": message } })).expect("nesting at the limit is accepted");
    let code = every_consumer(model);
    // The outermost level is a nullable value, the innermost a string in a record in an array.
    assert!(code.contains("pub deep: Option<"), "{code}");
    assert!(code.contains("Record<String>"), "{code}");
}

/// `Model::from_value` takes a `Value` built by any means, deeper than the JSON parser allows:
/// the document's depth is checked first, without recursion. (The value is built and dropped
/// on a large stack: `serde_json` drops values recursively.)
#[test]
fn a_document_deeper_than_the_limit_is_refused_before_it_is_walked() {
    let large = std::thread::Builder::new().stack_size(256 << 20);
    let error = large
        .spawn(|| {
            // Built by moving each level into the next (`json!` would copy the whole value
            // at every level).
            let mut schema = json!({ "type": "string" });
            for _ in 0..20_000 {
                let mut level = Map::new();
                level.insert("type".into(), json!("array"));
                level.insert("items".into(), schema);
                schema = Value::Object(level);
            }
            let document = json!({ "$defs": { "A": schema } });
            let small = std::thread::Builder::new().stack_size(TEST_STACK);
            std::thread::scope(|scope| {
                small.spawn_scoped(scope, || Model::from_value(&document)).expect("spawn").join().expect("no panic")
            })
        })
        .expect("spawn")
        .join()
        .expect("no panic")
        .expect_err("too deep");
    let path = error.path().expect("a schema error").to_string();
    assert_eq!(path.matches("/items").count(), MAX_DOCUMENT_DEPTH - 2, "{error}");
    assert!(path.starts_with("#/$defs/A/items/items"), "{error}");
    assert!(error.to_string().contains(&format!("nested more than {MAX_DOCUMENT_DEPTH} levels")), "{error}");
    // Text nested as deep is refused by the parser, text at the limit is accepted by both.
    let text = |depth: usize| {
        format!("{{\"$defs\": {{\"A\": {}{{}}{}}}}}", "{\"items\": ".repeat(depth - 3), "}".repeat(depth - 3))
    };
    assert!(Model::from_json(&text(MAX_DOCUMENT_DEPTH + 1), "deep.json").is_err());
    let at_limit: Value = serde_json::from_str(&text(MAX_DOCUMENT_DEPTH)).expect("the parser's limit");
    let error = Model::from_value(&at_limit).expect_err("a schema without a type");
    assert!(error.to_string().contains("needs a type"), "{error}");
}

/// A cycle of objects, each requiring the next (a long path of direct containment, and a type
/// with no finite value): as many as the type limit allows. Nothing recurses along the cycle
/// without a bound: finding cycles to box, the sampler (which gives up past its depth), the
/// compatibility rules (which stop past theirs).
#[test]
fn a_cycle_of_as_many_objects_as_allowed_reaches_every_consumer() {
    let n = MAX_TYPES - 2;
    let mut definitions = Map::new();
    definitions.insert("ClientMessage".into(), object(json!({ "a": { "$ref": "#/$defs/A0" } })));
    for i in 0..n {
        definitions.insert(format!("A{i}"), object(json!({ "a": { "$ref": format!("#/$defs/A{}", i + 1) } })));
    }
    definitions.insert(format!("A{n}"), object(json!({ "a": { "$ref": "#/$defs/A0" } })));
    let model = convert(document(definitions)).expect("a long cycle of objects");
    assert_eq!(model.types().len(), MAX_TYPES);
    let drawn = on_test_stack({
        let model = model.clone();
        move || Sampler::new(&model, 1).message(Side::Client)
    });
    assert_eq!(drawn, None, "no finite value");
    let code = every_consumer(model);
    assert!(code.contains("pub a: Box<A1>,"), "the cycle is boxed");
}

/// Objects requiring two fields of the next object: a value doubles at every level, 2^64
/// leaves. The sampler gives up past its size budget; the compatibility rules compare each
/// pair of types once and report each reason once.
#[test]
fn values_doubling_at_every_level_are_not_drawn_or_walked_whole() {
    let n = 64;
    let mut definitions = Map::new();
    definitions.insert("ClientMessage".into(), object(json!({ "a": { "$ref": "#/$defs/A0" } })));
    for i in 0..n {
        let next = json!({ "$ref": format!("#/$defs/A{}", i + 1) });
        definitions.insert(format!("A{i}"), object(json!({ "l": next, "r": next })));
    }
    definitions.insert(format!("A{n}"), json!({ "type": "string", "maxLength": 4 }));
    let old = convert(document(definitions.clone())).expect("a doubling schema");
    definitions.insert(format!("A{n}"), json!({ "type": "string", "maxLength": 3 }));
    let new = convert(document(definitions)).expect("a doubling schema");
    let drawn = on_test_stack({
        let old = old.clone();
        move || Sampler::new(&old, 1).message(Side::Client)
    });
    assert_eq!(drawn, None, "2^64 strings are more than a draw may hold");
    let report = on_test_stack(move || compat(&old, &new));
    assert!(!report.holds(pi_protocol_gen::compat::Direction::Backward), "maxLength 4 -> 3 breaks old writers");
    let reasons = &report.sides[0].messages[0].backward.reasons;
    assert_eq!(reasons.len(), 1, "{reasons:?}");
}

/// Lengths and counts an adversary sets in the billions (`minLength`, `minItems`, nested
/// `minItems` multiplying, pattern repetitions): the sampler gives up past its size budget
/// instead of allocating, mutations do not step over such a `maxLength`, and every consumer
/// ends.
#[test]
fn lengths_and_counts_in_the_billions_are_not_drawn() {
    let huge = 4_294_967_295_u64;
    for (name, property) in [
        ("minLength", json!({ "type": "string", "minLength": huge })),
        ("minItems", json!({ "type": "array", "items": { "type": "boolean" }, "minItems": huge })),
        (
            "nested minItems",
            json!({ "type": "array", "minItems": 1000, "items": { "type": "array", "minItems": 1000,
                "items": { "type": "array", "minItems": 1000, "items": { "type": "null" } } } }),
        ),
        ("pattern repetition", json!({ "type": "string", "pattern": "^(?:a{100}){700}$" })),
    ] {
        let model = convert(json!({ "$defs": { "ClientMessage": object(json!({ "p": property })) } }))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let drawn = on_test_stack({
            let model = model.clone();
            move || Sampler::new(&model, 3).message(Side::Client)
        });
        assert_eq!(drawn, None, "{name}");
        every_consumer(model);
    }
    // A `maxLength` in the billions: values are drawn, mutations stay within the budget.
    let model = convert(json!({ "$defs": { "ClientMessage":
        object(json!({ "p": { "type": "string", "maxLength": huge } })) } }))
    .expect("a long maxLength");
    on_test_stack(move || {
        let mut sampler = Sampler::new(&model, 5);
        for _ in 0..64 {
            let value = sampler.message(Side::Client).expect("short strings fit");
            let mutated = sampler.mutate("ClientMessage", &value);
            assert!(mutated.to_string().len() < (1 << 19), "a mutation within the budget");
        }
    });
}

#[test]
fn more_types_than_the_limit_are_refused() {
    let mut definitions = Map::new();
    for i in 0..=MAX_TYPES {
        definitions.insert(format!("A{i}"), json!({ "type": "string", "minLength": 1 }));
    }
    let error = refused(document(definitions));
    assert_eq!(error.path(), Some(format!("#/$defs/A{MAX_TYPES}").as_str()), "{error}");
    assert!(error.to_string().contains(&format!("more than {MAX_TYPES} named types")), "{error}");
}

/// Types that hold one another with no object or array in between (a newtype of a nullable
/// newtype of ...) make decoders recurse without reading anything: a chain longer than the
/// limit is refused at its first type.
#[test]
fn long_chains_of_types_without_a_container_are_refused() {
    let n = 50_000.min(MAX_TYPES - 1);
    let mut definitions = Map::new();
    for i in 0..n {
        let next = json!({ "$ref": format!("#/$defs/A{}", i + 1) });
        definitions.insert(format!("A{i}"), json!({ "anyOf": [next, { "type": "null" }] }));
    }
    definitions.insert(format!("A{n}"), json!({ "type": "string", "minLength": 1 }));
    let error = refused(document(definitions));
    assert_eq!(error.path(), Some("#/$defs/A0"), "{error}");
    assert!(error.to_string().contains(&format!("more than {MAX_CHAIN} types")), "{error}");
}

#[test]
fn chains_of_types_up_to_the_limit_reach_every_consumer() {
    let mut definitions = Map::new();
    definitions.insert("ClientMessage".into(), object(json!({ "a": { "$ref": "#/$defs/A0" } })));
    // A0 .. A(n-2) nullable newtypes, A(n-1) a union of the next and a boolean, then a
    // string: n + 1 types in the chain.
    let n = MAX_CHAIN - 1;
    for i in 0..n {
        let next = json!({ "$ref": format!("#/$defs/A{}", i + 1) });
        let other = if i + 1 == n { json!({ "type": "boolean" }) } else { json!({ "type": "null" }) };
        definitions.insert(format!("A{i}"), json!({ "anyOf": [next, other] }));
    }
    definitions.insert(format!("A{n}"), json!({ "type": "string", "minLength": 1 }));
    let model = convert(document(definitions)).expect("a chain at the limit");
    every_consumer(model);
}

// ---- time: nothing is exponential or quadratic in what an adversary controls ----

/// Unions whose members lead to the same union: 2^30 paths if they are followed one by one
/// (a chain within the limit).
#[test]
fn unions_sharing_a_member_are_classified_once_per_type() {
    let n = MAX_CHAIN - 2;
    let mut definitions = Map::new();
    for i in 0..n {
        let next = json!({ "$ref": format!("#/$defs/U{}", i + 1) });
        definitions.insert(format!("U{i}"), json!({ "anyOf": [next.clone(), next] }));
    }
    definitions.insert(format!("U{n}"), json!({ "anyOf": [{ "type": "string" }, { "type": "integer" }] }));
    let error = refused(document(definitions));
    assert!(error.to_string().contains("a decoder could not tell them apart"), "{error}");
}

/// The names of union members come from the literals of nested unions: 30 members each leading
/// to a union of 30 members, eight levels down, is 30^8 visits if they are not remembered.
#[test]
fn member_names_from_nested_unions_are_found_once_per_union() {
    let mut definitions = Map::new();
    for i in 0..9 {
        let members: Vec<Value> = (0..30).map(|_| json!({ "$ref": format!("#/$defs/U{}", i + 1) })).collect();
        definitions.insert(format!("U{i}"), json!({ "anyOf": members }));
    }
    definitions.insert("U9".into(), json!({ "anyOf": [{ "type": "string" }, { "type": "integer" }] }));
    let error = refused(document(definitions));
    assert!(error.to_string().contains("a decoder could not tell them apart"), "{error}");
}

#[test]
fn wider_unions_enumerations_and_objects_than_the_limit_are_refused() {
    let many = |f: &dyn Fn(usize) -> Value| (0..=MAX_MEMBERS).map(f).collect::<Vec<_>>();
    let error = refused(json!({ "$defs": { "E": { "enum": many(&|i| json!(i)) } } }));
    assert_eq!(error.path(), Some("#/$defs/E/enum"), "{error}");
    assert!(error.to_string().contains(&format!("more than {MAX_MEMBERS}")), "{error}");
    let error = refused(json!({ "$defs": { "U": { "anyOf": many(&|i| json!({ "const": i })) } } }));
    assert_eq!(error.path(), Some("#/$defs/U/anyOf"), "{error}");
    let properties: Map<String, Value> = (0..=MAX_MEMBERS).map(|i| (format!("p{i}"), json!({}))).collect();
    let error = refused(json!({ "$defs": { "O": object(Value::Object(properties)) } }));
    assert_eq!(error.path(), Some("#/$defs/O/properties"), "{error}");
}

/// A wide union of objects told apart by key sets: every member requires the keys all the
/// others have, plus one of its own, so that comparing two key sets key by key walks almost all
/// of them (quadratic in the keys for each of the quadratically many pairs). It is accepted,
/// each pair compared on its rarest key. (A quarter of the widest union, to keep the test fast
/// in debug builds: the widest, with a million properties, is classified as well.)
#[test]
fn a_wide_key_set_union_is_classified() {
    let n = MAX_MEMBERS / 4;
    let shared: Map<String, Value> = (0..n - 1).map(|k| (format!("s{k}"), json!({ "type": "integer" }))).collect();
    let members: Vec<Value> = (0..n)
        .map(|i| {
            let mut properties = shared.clone();
            properties.insert(format!("own{i}"), json!({ "type": "integer" }));
            object(Value::Object(properties))
        })
        .collect();
    let model = convert(json!({ "$defs": { "U": { "anyOf": members } } })).expect("key sets tell them apart");
    assert_eq!(model.types().len(), n + 1);
}

/// Objects told apart by literals where every pair needs a key of its own: thousands of keys
/// that a tag search would try pair by pair. The search gives up past the most tag keys a
/// decoder reads, and the members, whose key sets differ, are told apart by those.
#[test]
fn unions_needing_more_tag_keys_than_the_limit_fall_back_to_key_sets() {
    let n = 64;
    let members: Vec<Value> = (0..n)
        .map(|i| {
            let properties: Map<String, Value> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    let (a, b) = (i.min(j), i.max(j));
                    (format!("k{a}_{b}"), json!({ "const": i }))
                })
                .collect();
            object(Value::Object(properties))
        })
        .collect();
    let model = convert(json!({ "$defs": { "U": { "anyOf": members } } })).expect("key sets tell them apart");
    let pi_protocol_gen::model::TypeKind::Union(union) = &model.types()[0].kind else { panic!("a union") };
    assert_eq!(union.dispatch, pi_protocol_gen::model::Dispatch::KeySet);
}

/// A thousand inline types found under the same name (keys that differ only in punctuation):
/// each gets the next number, found without trying every smaller one again.
#[test]
fn many_types_named_after_the_same_place_are_numbered() {
    let properties: Map<String, Value> = (0..MAX_MEMBERS)
        .map(|i| {
            let mut property = object(json!({ "v": { "const": i } }));
            property["x-rust-name"] = json!(format!("f{i}"));
            (format!("x{}", "!".repeat(i)), property)
        })
        .collect();
    let model = convert(json!({ "$defs": { "O": object(Value::Object(properties)) } })).expect("numbered names");
    let names: Vec<&str> = model.types().iter().map(|t| t.rust_name.as_str()).collect();
    assert_eq!(names.len(), MAX_MEMBERS + 1);
    assert_eq!(&names[..4], ["O", "X", "OX", "OX2"]);
    assert_eq!(names[MAX_MEMBERS], format!("OX{}", MAX_MEMBERS - 1));
}

// ---- references and bounds that lead nowhere ----

/// References that point at themselves, at each other, at the root, into a keyword's value, at
/// nothing, or at a place that holds itself: each is a model (which reaches every consumer) or
/// an error at the pointer of the reference. (A definition that is only a reference is followed
/// where it is used: unused, such a loop names no type.)
#[test]
fn references_that_lead_nowhere_or_in_circles_end() {
    let holder = |reference: &str| object(json!({ "x": { "$ref": reference } }));
    let held = |property: Value| object(json!({ "x": property }));
    let x_ref = "#/$defs/A/properties/x/$ref";
    let cases = [
        (json!({ "$defs": { "A": { "$ref": "#/$defs/A" } } }), None),
        (json!({ "$defs": { "A": { "$ref": "#/$defs/A" }, "C": holder("#/$defs/A") } }), Some("#/$defs/A/$ref")),
        (
            json!({ "$defs": { "A": { "$ref": "#/$defs/B" }, "B": { "$ref": "#/$defs/A" }, "C": holder("#/$defs/B") } }),
            Some("#/$defs/A/$ref"),
        ),
        (json!({ "$defs": { "A": { "$ref": "#" } } }), None),
        (
            json!({ "$defs": { "A": { "$id": "a", "$ref": "b" }, "B": { "$id": "b", "$ref": "a" }, "C": holder("a") } }),
            Some("#/$defs/B/$ref"),
        ),
        (
            json!({ "$defs": { "A": { "type": "array", "items": { "$ref": "#/$defs/A/items" } } } }),
            Some("#/$defs/A/items/$ref"),
        ),
        (
            json!({ "$defs": { "A": held(json!({ "anyOf": [{ "$ref": "#/$defs/A/properties/x" }, { "type": "null" }] })) } }),
            Some("#/$defs/A/properties/x"),
        ),
        (
            json!({ "$defs": { "A": held(json!({ "type": ["array", "null"], "items": { "$ref": "#/$defs/A/properties/x" } })) } }),
            None,
        ),
        (
            json!({ "$defs": { "A": object(json!({ "x": { "$ref": "#/$defs/A/properties/y" },
                "y": { "$ref": "#/$defs/A/properties/x" } })) } }),
            Some(x_ref),
        ),
        (json!({ "$defs": { "ClientMessage": holder("#") } }), None),
        (json!({ "$defs": { "A": holder("#/$defs") } }), Some("#/$defs/A")),
        (json!({ "$defs": { "A": holder("#/$defs/A/type") } }), Some("#/$defs/A/type")),
        (json!({ "$defs": { "A": holder("#/$defs/a~2") } }), Some(x_ref)),
        (json!({ "$defs": { "A": holder("#/nowhere/x") } }), Some(x_ref)),
        (json!({ "$defs": { "A": holder("") } }), Some(x_ref)),
    ];
    for (i, (document, expected)) in cases.into_iter().enumerate() {
        match (convert(document), expected) {
            (Ok(model), None) => {
                every_consumer(model);
            }
            (Err(error), Some(path)) => assert_eq!(error.path(), Some(path), "case {i}: {error}"),
            (Ok(model), Some(path)) => {
                panic!("case {i}: expected an error at {path}, got {} types", model.types().len())
            }
            (Err(error), None) => panic!("case {i}: expected a model, got {error}"),
        }
    }
}

/// Bounds no value meets (`minLength` above `maxLength`, `minimum` above `maximum`, an empty
/// open interval, a pattern no string of the allowed lengths matches, a record whose keys
/// cannot exist): each is a model whose draws fail, and every consumer ends.
#[test]
fn bounds_no_value_meets_end_in_every_consumer() {
    for property in [
        json!({ "type": "string", "minLength": 10, "maxLength": 2 }),
        json!({ "type": "array", "items": { "type": "null" }, "minItems": 10, "maxItems": 2 }),
        json!({ "type": "integer", "minimum": 10, "maximum": 2 }),
        json!({ "type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2 }),
        json!({ "type": "integer", "minimum": 0.1, "maximum": 0.9 }),
        json!({ "type": "string", "pattern": "^a$", "minLength": 5 }),
        json!({ "type": "string", "pattern": "[^\\s\\S]" }),
        json!({ "type": "object", "patternProperties": { "^$": { "type": "string", "minLength": 5, "maxLength": 1 } },
            "additionalProperties": false }),
    ] {
        let document = json!({ "$defs": { "ClientMessage": object(json!({ "p": property.clone() })) } });
        match convert(document) {
            Ok(model) => {
                every_consumer(model);
            }
            Err(error) => assert!(error.path().is_some(), "{property}: {error}"),
        }
    }
}

// ---- patterns: linear time, and refused before any parser recurses ----

/// A message type whose `id` must match `pattern`, and whose record keys must too.
fn with_pattern(pattern: &str) -> Value {
    json!({ "$defs": { "ClientMessage": object(json!({
        "id": { "type": "string", "pattern": pattern },
        "tags": { "type": "object", "patternProperties": { "^[a-z]+$": { "type": "boolean" } },
            "additionalProperties": false },
    })) } })
}

/// Patterns nested 20,000 groups deep, with 100,000 alternatives, or just past a limit: each
/// one is refused with the pointer of its keyword, on a test stack (the ECMAScript parser
/// recursed once per group and per alternative, and aborted the process on a stack overflow).
#[test]
fn patterns_too_deep_too_wide_or_too_long_are_refused_with_the_pointer() {
    use pi_protocol_runtime::pattern::{MAX_PATTERN_ALTERNATIVES, MAX_PATTERN_LENGTH, MAX_PATTERN_NESTING};
    let nested = |n: usize| format!("^{}a{}$", "(".repeat(n), ")".repeat(n));
    let alternatives = |n: usize| format!("^(?:{})$", vec!["a"; n].join("|"));
    for (pattern, words) in [
        (nested(20_000), "bytes long"),
        (alternatives(100_000), "bytes long"),
        (nested(MAX_PATTERN_NESTING + 1), "nested more than"),
        (alternatives(MAX_PATTERN_ALTERNATIVES + 2), "alternatives"),
        (format!("^{}$", "a".repeat(MAX_PATTERN_LENGTH)), "bytes long"),
        ("^(?:(?:a{1000}){1000}){1000}$".to_string(), "automaton larger than"),
        ("^(a)\\1$".to_string(), "backreference"),
        ("^a(?=b)".to_string(), "lookahead"),
    ] {
        let error = refused(with_pattern(&pattern));
        assert_eq!(error.path(), Some("#/$defs/ClientMessage/properties/id/pattern"), "{error}");
        assert!(error.to_string().contains(words), "{error}");
        // The same pattern as a record's key pattern: the pointer of the key.
        let mut document = with_pattern("^a$");
        let tags = &mut document["$defs"]["ClientMessage"]["properties"]["tags"];
        tags["patternProperties"] = json!({ pattern.clone(): { "type": "boolean" } });
        let error = refused(document);
        // (No `~` or `/` in these patterns: the key is its own pointer segment.)
        let at = format!("#/$defs/ClientMessage/properties/tags/patternProperties/{pattern}");
        assert_eq!(error.path(), Some(at.as_str()), "{error}");
    }
    // Up to the limits: a model, and every consumer ends.
    for pattern in [nested(MAX_PATTERN_NESTING), alternatives(MAX_PATTERN_ALTERNATIVES + 1)] {
        let model = convert(with_pattern(&pattern)).unwrap_or_else(|e| panic!("{e}"));
        every_consumer(model);
    }
}

/// Many distinct patterns that compile to large automata: past the schema's budget the
/// document is refused at the pattern that passes it.
#[test]
fn the_patterns_of_a_schema_share_a_memory_budget() {
    // About 2.8 MB each compiled: the budget (64 MiB) runs out after some twenty of them.
    let properties: Map<String, Value> = (0..40)
        .map(|i| (format!("p{i}"), json!({ "type": "string", "pattern": format!("^.{{1,{}}}$", 2000 + i) })))
        .collect();
    let error = refused(json!({ "$defs": { "ClientMessage": object(Value::Object(properties)) } }));
    assert!(error.to_string().contains("patterns take more than"), "{error}");
    assert!(error.path().is_some_and(|p| p.ends_with("/pattern")), "{error}");
}

/// `^(a+)+$` against 10,000 `a`s and a `!`: exponential for a backtracking engine (28
/// characters took 8 s), linear here. The interpreter refuses the id well under a second (a
/// generous bound against a hang, not a benchmark).
#[test]
fn a_redos_id_is_refused_in_linear_time_by_the_interpreter() {
    let model = convert(with_pattern("^(a+)+$")).expect("a linear-time pattern");
    let interpreter = Interpreter::new(&model).expect("interprets");
    let hostile = format!("{}!", "a".repeat(10_000));
    for (id, valid) in [(hostile.as_str(), false), (&hostile[..10_000], true)] {
        let message = json!({ "id": id, "tags": {} });
        let start = std::time::Instant::now();
        let verdict = interpreter.validate_json(Side::Client, &message);
        assert!(start.elapsed() < Duration::from_secs(1), "{:?}", start.elapsed());
        assert_eq!(verdict.is_ok(), valid, "{verdict:?}");
        if !valid {
            let error = verdict.unwrap_err();
            assert_eq!((error.path_string(), error.rule()), ("id".to_string(), pi_protocol_runtime::Rule::Pattern));
        }
    }
}
