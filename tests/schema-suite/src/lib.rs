//! The committed test schemas and their generated types, built the way a downstream crate
//! builds its own: `build.rs` runs `pi_protocol_gen::Builder` with its default paths, and this
//! crate depends on the `pi-protocol` facade alone (not on the runtime or derive crates). That
//! it compiles is the proof that a downstream crate needs nothing else.
//!
//! Every schema in `pi-protocol-gen/tests/schemas/`, and the project's own v8 schema
//! (`schema/pi-protocol.v8.json`, the facade's built-in types generated again), becomes a module
//! of generated types and a [`Schema`] type; [`for_each_schema`] visits them all, so a check
//! written once as a [`Visitor`] runs on every schema, those added later included. The checks:
//! - `tests/differential.rs`: the generated codecs against the `jsonschema` crate, on random
//!   valid and mutated instances;
//! - `tests/reference_verdicts.rs`: against verdicts recorded from the reference's validator;
//! - `tests/interpret.rs`: the schema interpreter (`pi_protocol_gen::interpret`) against the
//!   generated types: the same verdicts, JSON and errors;
//! - `tests/vectors.rs`: the v8 types generated from the reference's inlined schema and from the
//!   project's schema against the facade's built-in types, on every conformance vector and capture;
//! - `tests/downstream.rs`: the generated types in use through the facade (constructors and
//!   setters across the crate boundary, the JSON view, frames, errors), and generated code that
//!   names nothing but the facade.

#![deny(missing_docs)]

use std::fmt::Debug;

use pi_protocol::runtime::{decode_message, CborLimits, Decode, Encode};

include!(concat!(env!("OUT_DIR"), "/schemas.rs"));

/// One schema of the suite: its file, its generated code, and its two message types.
pub trait Schema {
    /// The schema's name: its file name without `.json` (`own-v8` for the project's schema).
    const NAME: &'static str;
    /// The schema file's text.
    const TEXT: &'static str;
    /// The module `pi_protocol_gen::Builder` wrote for it, as written.
    const CODE: &'static str;
    /// The messages a client sends (`x-client-message`, or the reference form's `clientMessage`).
    type ClientMessage: for<'de> Decode<'de> + Encode + Debug;
    /// The messages a server sends.
    type ServerMessage: for<'de> Decode<'de> + Encode + Debug;
}

/// A check run on every schema by [`for_each_schema`].
pub trait Visitor {
    /// Runs the check on the schema `S`.
    fn visit<S: Schema>(&mut self);
}

/// Whether the schema named `name` accepts `payload` (one message's CBOR, default limits) as a
/// message of `side` (`"client"` or `"server"`); `None` for an unknown schema or side.
///
/// ```
/// // {"type": "hello", "version": 8}
/// let hello = [0xa2, 0x64, b't', b'y', b'p', b'e', 0x65, b'h', b'e', b'l', b'l', b'o', 0x67];
/// let hello = [&hello[..], b"version", &[0x08]].concat();
/// assert_eq!(pi_protocol_schema_suite::accepts("own-v8", "client", &hello), Some(true));
/// assert_eq!(pi_protocol_schema_suite::accepts("own-v8", "client", &hello[..12]), Some(false));
/// assert_eq!(pi_protocol_schema_suite::accepts("nonesuch", "client", &hello), None);
/// ```
#[must_use]
pub fn accepts(name: &str, side: &str, payload: &[u8]) -> Option<bool> {
    struct Lookup<'a> {
        name: &'a str,
        side: &'a str,
        payload: &'a [u8],
        verdict: Option<bool>,
    }
    impl Visitor for Lookup<'_> {
        fn visit<S: Schema>(&mut self) {
            if S::NAME != self.name {
                return;
            }
            let limits = CborLimits::default();
            self.verdict = match self.side {
                "client" => Some(decode_message::<S::ClientMessage>(self.payload, limits).is_ok()),
                "server" => Some(decode_message::<S::ServerMessage>(self.payload, limits).is_ok()),
                _ => None,
            };
        }
    }
    let mut lookup = Lookup { name, side, payload, verdict: None };
    for_each_schema(&mut lookup);
    lookup.verdict
}
