//! The v8 types generated again from a schema file, against the facade's built-in types, on
//! every stream recorded from the reference: the conformance vectors and the captures.
//!
//! `reference-v8` is the reference's published schema in its inlined form (no `$defs`, the same
//! subschemas repeated), fed to the generator unchanged; `own-v8` is the project's
//! `schema/pi-protocol.v8.json`. For every decode case both must give exactly what the facade's
//! `ClientMessage`/`ServerMessage` give: the same messages (as wire JSON) in the same order,
//! the same error (kind, rule, field path, offset) at the same place, the same canonical
//! re-encoding of every message.

#[path = "../../../pi-protocol-gen/tests/support/mod.rs"]
mod support;

use pi_protocol::runtime::wire_json::wire_cbor;
use pi_protocol::runtime::{CodecOptions, Decode, Encode, MessageDecoder};
use pi_protocol_gen::model::Side;
use pi_protocol_schema_suite::{OwnV8, ReferenceV8, Schema};
use support::{recorded_streams, typed_stream, Recorded, Verdict};

/// The canonical re-encodings of the messages of `stream`, in order.
fn re_encoded<T: for<'de> Decode<'de> + Encode>(stream: &[u8], options: &CodecOptions) -> Vec<Vec<u8>> {
    MessageDecoder::<T>::with_options(options).push(stream).into_iter().flatten().map(|m| wire_cbor(&m)).collect()
}

/// What a message type makes of a case: its verdicts and its re-encodings.
type Reading = (Vec<Verdict>, Vec<Vec<u8>>);

fn reading<C, S>(case: &Recorded) -> Reading
where
    C: for<'de> Decode<'de> + Encode,
    S: for<'de> Decode<'de> + Encode,
{
    match case.side {
        Side::Server => (typed_stream::<S>(&case.stream, &case.options), re_encoded::<S>(&case.stream, &case.options)),
        Side::Client => (typed_stream::<C>(&case.stream, &case.options), re_encoded::<C>(&case.stream, &case.options)),
    }
}

/// Compares the types of `G` with the facade's on every case; returns the count of messages
/// and of errors seen.
fn agree_with_the_facade<G: Schema>() -> (usize, usize)
where
    G::ClientMessage: Encode,
    G::ServerMessage: Encode,
{
    let (mut messages, mut errors) = (0, 0);
    let all = recorded_streams();
    assert!(all.len() > 700, "the vectors are all there: {} cases", all.len());
    for case in &all {
        let facade = reading::<pi_protocol::ClientMessage, pi_protocol::ServerMessage>(case);
        let generated = reading::<G::ClientMessage, G::ServerMessage>(case);
        assert_eq!(generated, facade, "{}: {} types differ from the facade's", case.name, G::NAME);
        messages += facade.0.iter().filter(|v| v.is_message()).count();
        errors += facade.0.iter().filter(|v| !v.is_message()).count();
    }
    println!("{}: {} cases, {messages} messages, {errors} errors, as the facade", G::NAME, all.len());
    (messages, errors)
}

#[test]
fn types_generated_from_the_reference_schema_read_every_vector_as_the_facade_does() {
    let (messages, errors) = agree_with_the_facade::<ReferenceV8>();
    // Both outcomes are exercised: the vectors hold accepted messages and refused streams.
    assert!(messages > 200, "{messages} messages");
    assert!(errors > 500, "{errors} errors");
}

#[test]
fn types_generated_from_the_project_schema_read_every_vector_as_the_facade_does() {
    let (messages, errors) = agree_with_the_facade::<OwnV8>();
    assert!(messages > 200, "{messages} messages");
    assert!(errors > 500, "{errors} errors");
}
