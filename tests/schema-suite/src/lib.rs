//! The committed test schemas, their generated types, and one uniform way to run them.
//!
//! Each schema under test is compiled by `build.rs` with `pi_protocol_gen::Builder` (as a
//! downstream crate would) and exposed here as a [`Case`]: its JSON text and, for each side,
//! functions that decode a frame payload with the generated types and re-encode the result.
//! `tests/differential.rs` checks them against the `jsonschema` crate on random instances.

use pi_protocol_runtime::wire_json::{to_json, wire_cbor};
use pi_protocol_runtime::{decode_message, CborLimits, Decode, Encode, ProtocolError};
use serde_json::Value;

/// Every construct of the schema language, in the project's own form.
pub mod constructs {
    include!(concat!(env!("OUT_DIR"), "/constructs.rs"));
}

/// A chat protocol in the reference's published form: fully inlined, with a TypeBox cyclic
/// JSON value, records, multi-key unions.
pub mod chat_inlined {
    include!(concat!(env!("OUT_DIR"), "/chat_inlined.rs"));
}

/// Protocol version 8 as the reference publishes its schema, fed to the generator unchanged.
pub mod reference_v8 {
    include!(concat!(env!("OUT_DIR"), "/reference_schema.rs"));
}

/// Protocol version 8 from the project's own schema (the facade's built-in types, generated
/// again through the builder).
pub mod own_v8 {
    include!(concat!(env!("OUT_DIR"), "/pi_protocol_v8.rs"));
}

/// What decoding a frame payload with generated types gives: the message as wire JSON and its
/// canonical re-encoding.
pub type Decoded = Result<(Value, Vec<u8>), ProtocolError>;

/// One schema under test.
#[derive(Clone, Copy)]
pub struct Case {
    /// A short name.
    pub name: &'static str,
    /// The schema file's text.
    pub schema: &'static str,
    /// Decodes a client message payload.
    pub client: fn(&[u8]) -> Decoded,
    /// Decodes a server message payload.
    pub server: fn(&[u8]) -> Decoded,
}

/// Decodes `payload` as a `T` with the default limits, then renders and re-encodes it.
pub fn decode<T: for<'de> Decode<'de> + Encode>(payload: &[u8]) -> Decoded {
    let message: T = decode_message(payload, CborLimits::default())?;
    Ok((to_json(&message), wire_cbor(&message)))
}

/// Every schema under test.
pub const CASES: &[Case] = &[
    Case {
        name: "constructs",
        schema: include_str!("../../../pi-protocol-gen/tests/schemas/constructs.json"),
        client: decode::<constructs::ClientMessage>,
        server: decode::<constructs::ServerMessage>,
    },
    Case {
        name: "chat-inlined",
        schema: include_str!("../../../pi-protocol-gen/tests/schemas/chat-inlined.json"),
        client: decode::<chat_inlined::ClientMessage>,
        server: decode::<chat_inlined::ServerMessage>,
    },
    Case {
        name: "reference-v8",
        schema: include_str!("../../vectors/reference-schema.json"),
        client: decode::<reference_v8::ClientMessage>,
        server: decode::<reference_v8::ServerMessage>,
    },
    Case {
        name: "own-v8",
        schema: include_str!("../../../schema/pi-protocol.v8.json"),
        client: decode::<own_v8::ClientMessage>,
        server: decode::<own_v8::ServerMessage>,
    },
];
