//! The schema interpreter: decodes, validates and encodes messages against a [`Model`] loaded
//! at run time, with exactly the verdicts and errors of the code the generator would emit for
//! the same schema (the CLI's `--schema FILE` mode; property tests compare the two).
//!
//! [`Interpreter::new`] compiles the model once (references resolved, patterns compiled, keys
//! interned); decoding then drives the runtime's strict CBOR [`Reader`](pi_protocol_runtime::Reader)
//! through the calls the derived decoders make, in the same order (docs/PROTOCOL.md sections 2-5):
//! an object's keys in wire order (unknown key: `Schema`/`UnknownField` at the object's path;
//! duplicate: `Cbor`/`DuplicateKey`; wrong literal: `Schema`/`Literal` at the key; missing
//! required keys after the last entry, in canonical order: `Schema`/`MissingField`), value
//! constraints once a value is decoded, unions by JSON type, tag, tags or key set, and, when
//! decoding fails, the first CBOR-level error of the payload in wire order instead (as
//! [`decode_message`](pi_protocol_runtime::decode_message) does).
//!
//! Messages come back as JSON in the shape the generated types' `to_json` gives: object keys in
//! canonical (schema) order with literals in place and absent optional keys left out, record
//! entries and opaque payloads in wire order, integral numbers as integers (`-0.0` stays a
//! float).
//!
//! A stream is decoded as the generated types' `MessageDecoder` decodes it: frames cut by a
//! [`FrameDecoder`](pi_protocol_runtime::FrameDecoder) (`push_with`), each payload given to
//! [`Interpreter::decode`], an error given the frame's offset (`ProtocolError::with_offset`)
//! and ending the stream.
//!
//! Error paths name schema keys as `&'static str`: each distinct key of the schemas a process
//! loads is leaked once, process-wide, and shared by every interpreter (bounded by the schemas,
//! never by the input).
//!
//! A union member's constraints (`anyOf: [{"type": "string", "minLength": 2}, ...]`) hold for
//! the values of that member, as in JSON Schema: the generator gives such a member a newtype of
//! its own (the derive checks fields and newtypes), and the interpreter checks a variant's shape
//! in place.
//!
//! ```
//! use pi_protocol_gen::interpret::Interpreter;
//! use pi_protocol_gen::model::Side;
//! use pi_protocol_gen::Model;
//! use pi_protocol_runtime::CborLimits;
//!
//! let schema = r#"{ "$defs": { "ClientMessage": {
//!     "type": "object",
//!     "properties": { "type": { "type": "string", "const": "ping" }, "seq": { "type": "integer", "minimum": 0 } },
//!     "required": ["type", "seq"],
//!     "additionalProperties": false
//! } } }"#;
//! let interpreter = Interpreter::new(&Model::from_json(schema, "ping.json")?)?;
//! // {"seq": 7, "type": "ping"}: any key order on the wire, canonical order in the JSON.
//! let payload = [0xa2, 0x63, b's', b'e', b'q', 0x07, 0x64, b't', b'y', b'p', b'e', 0x64, b'p', b'i', b'n', b'g'];
//! let message = interpreter.decode(Side::Client, &payload, CborLimits::default()).unwrap();
//! assert_eq!(message.to_string(), r#"{"type":"ping","seq":7}"#);
//! // {"seq": -1, "type": "ping"}: the bound, at the field.
//! let mut negative = payload;
//! negative[5] = 0x20;
//! let error = interpreter.decode(Side::Client, &negative, CborLimits::default()).unwrap_err();
//! assert_eq!((error.path_string(), error.rule().to_string()), ("seq".into(), "number below the minimum of 0".into()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod checks;
mod decode;
mod intern;
mod json;
mod leaf;
mod program;

use std::collections::HashMap;

use pi_protocol_runtime::json::{encode_json_frame, payload_in_javascript_order};
use pi_protocol_runtime::{decode_message_with, encode_frame, CborLimits, CodecOptions, Payload, ProtocolError, Rule};
use serde_json::Value;

use crate::error::Result;
use crate::model::{Model, Side};

use program::{Payloads, Program};

/// A named type of an [`Interpreter`]'s schema (see [`Interpreter::type_named`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeHandle(usize);

/// A schema compiled for decoding and encoding messages (see the module documentation).
///
/// Building one costs a pass over the model; decoding costs no allocation beyond the JSON it
/// returns (and a few words per object). An interpreter is `Send` and `Sync`: share one.
#[derive(Debug)]
pub struct Interpreter {
    program: Program,
    /// The same program with payloads checked and dropped ([`Interpreter::check`]).
    checker: Program,
    /// The same program with payloads kept as slices ([`Interpreter::decode_borrowed`]).
    streamer: Program,
    client: Option<usize>,
    server: Option<usize>,
    by_name: HashMap<String, usize>,
}

impl Interpreter {
    /// Compiles `model`.
    ///
    /// # Errors
    /// [`GenError::Schema`](crate::GenError::Schema), naming the type's JSON pointer, for a
    /// type that holds itself without an object or array in between (no value of it could be
    /// decoded; the generated code would not compile either), a pattern that does not compile,
    /// or a reference to a type the model does not have.
    pub fn new(model: &Model) -> Result<Interpreter> {
        let program = Program::compile(model, Payloads::Values)?;
        let checker = Program::compile(model, Payloads::Checked)?;
        let streamer = Program::compile(model, Payloads::Spans)?;
        let mut by_name = HashMap::new();
        for (index, def) in model.types.iter().enumerate() {
            if let Some(schema_name) = &def.schema_name {
                by_name.insert(schema_name.clone(), index);
            }
        }
        // Rust names win over `$defs` keys that happen to equal another type's Rust name.
        for (index, def) in model.types.iter().enumerate() {
            by_name.insert(def.rust_name.clone(), index);
        }
        let side = |side: Side| model.message_type(side).and_then(|def| by_name.get(&def.rust_name).copied());
        Ok(Interpreter { client: side(Side::Client), server: side(Side::Server), program, checker, streamer, by_name })
    }

    /// The type of the messages `side` sends, if the schema has one.
    #[must_use]
    pub fn message_type(&self, side: Side) -> Option<TypeHandle> {
        match side {
            Side::Client => self.client,
            Side::Server => self.server,
        }
        .map(TypeHandle)
    }

    /// The type whose Rust name (or, failing that, `$defs` key) is `name`.
    #[must_use]
    pub fn type_named(&self, name: &str) -> Option<TypeHandle> {
        self.by_name.get(name).copied().map(TypeHandle)
    }

    /// The Rust name of `ty` (empty for a handle of another interpreter).
    #[must_use]
    pub fn type_name(&self, ty: TypeHandle) -> &str {
        self.program.names.get(ty.0).map_or("", String::as_str)
    }

    /// Decodes one frame payload as a message `side` sends, with the verdict and the error
    /// (kind, rule, field path) of the generated type's `decode_message`.
    ///
    /// A schema without a message type for `side` accepts no message: every well-formed
    /// payload is refused with `Schema`/`NoVariant` (CBOR errors first, as always).
    ///
    /// # Errors
    /// `Cbor` errors (the first in wire order), then `Schema` errors naming the field path.
    pub fn decode(&self, side: Side, payload: &[u8], limits: CborLimits) -> Result<Value, ProtocolError> {
        self.decode_at(self.message_type(side).map(|t| t.0), payload, limits)
    }

    /// Decodes one payload as a value of the named type `ty`, like [`decode`](Self::decode).
    /// A handle of another interpreter accepts nothing (`Schema`/`NoVariant`).
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    pub fn decode_type(&self, ty: TypeHandle, payload: &[u8], limits: CborLimits) -> Result<Value, ProtocolError> {
        self.decode_at(Some(ty.0), payload, limits)
    }

    /// The verdict of [`decode`](Self::decode) on one frame payload, and its error, without
    /// building the message: opaque payloads are checked and dropped, so memory stays in
    /// proportion to the envelope, not to the payloads (a 16 MiB `call` of a million nulls is
    /// a walk, not a million JSON values).
    ///
    /// ```
    /// use pi_protocol_gen::{interpret::Interpreter, model::Side, Model};
    /// use pi_protocol_runtime::CborLimits;
    /// let schema = r#"{ "$defs": { "ClientMessage": { "type": "object",
    ///     "properties": { "data": {} }, "required": ["data"], "additionalProperties": false } } }"#;
    /// let interpreter = Interpreter::new(&Model::from_json(schema, "data.json")?)?;
    /// // {"data": [null, null]}, then {"data": 0(1)}: a tag inside the payload.
    /// let good = [0xa1, 0x64, b'd', b'a', b't', b'a', 0x82, 0xf6, 0xf6];
    /// assert!(interpreter.check(Side::Client, &good, CborLimits::default()).is_ok());
    /// let tagged = [0xa1, 0x64, b'd', b'a', b't', b'a', 0xc1, 0x01];
    /// let error = interpreter.check(Side::Client, &tagged, CborLimits::default()).unwrap_err();
    /// assert_eq!(error, interpreter.decode(Side::Client, &tagged, CborLimits::default()).unwrap_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    pub fn check(&self, side: Side, payload: &[u8], limits: CborLimits) -> Result<(), ProtocolError> {
        run(&self.checker, self.message_type(side).map(|t| t.0), payload, limits).map(drop)
    }

    fn decode_at(&self, index: Option<usize>, payload: &[u8], limits: CborLimits) -> Result<Value, ProtocolError> {
        run(&self.program, index, payload, limits).map(json::Json::into_value)
    }

    /// Decodes one frame payload like [`decode`](Self::decode), with the same verdict and
    /// error, into a message that borrows from `payload`: its texts are slices of it, and its
    /// opaque payloads stay CBOR until the message is serialized, each then streamed from the
    /// wire. Serializing gives the same JSON as `decode`'s value, in the same key order; memory
    /// stays in proportion to the envelope, whatever the payloads hold (a 16 MiB `call` of
    /// a million empty arrays is a slice, not a million JSON values).
    ///
    /// ```
    /// use pi_protocol_gen::{interpret::Interpreter, model::Side, Model};
    /// use pi_protocol_runtime::CborLimits;
    /// let schema = r#"{ "$defs": { "ClientMessage": { "type": "object",
    ///     "properties": { "seq": { "type": "integer" }, "data": {} },
    ///     "required": ["seq", "data"], "additionalProperties": false } } }"#;
    /// let interpreter = Interpreter::new(&Model::from_json(schema, "data.json")?)?;
    /// // {"data": [[], {}], "seq": 7}: canonical key order in the JSON, the payload as it is.
    /// let payload = [0xa2, 0x64, b'd', b'a', b't', b'a', 0x82, 0x80, 0xa0, 0x63, b's', b'e', b'q', 0x07];
    /// let message = interpreter.decode_borrowed(Side::Client, &payload, CborLimits::default()).unwrap();
    /// assert_eq!(serde_json::to_string(&message)?, r#"{"seq":7,"data":[[],{}]}"#);
    /// assert_eq!(message.to_value(), interpreter.decode(Side::Client, &payload, CborLimits::default()).unwrap());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    pub fn decode_borrowed<'de>(
        &self,
        side: Side,
        payload: &'de [u8],
        limits: CborLimits,
    ) -> Result<BorrowedMessage<'de>, ProtocolError> {
        run(&self.streamer, self.message_type(side).map(|t| t.0), payload, limits).map(BorrowedMessage)
    }

    /// Validates `value` as a message `side` sends, with the rules of the wire decoder and its
    /// default limits (the generated types' `from_json`).
    ///
    /// # Errors
    /// `Schema` errors naming the field path and rule; `Encode` errors for JSON the protocol
    /// cannot carry (an integer beyond +-(2^53 - 1), nesting beyond 512 levels).
    pub fn validate_json(&self, side: Side, value: &Value) -> Result<(), ProtocolError> {
        self.to_canonical(side, value).map(drop)
    }

    /// The value decoded from the CBOR of `value` (keys in the order given).
    fn to_canonical(&self, side: Side, value: &Value) -> Result<Value, ProtocolError> {
        let cbor = Payload::from_value(value)?;
        self.decode(side, cbor.as_cbor(), CborLimits::default())
    }

    /// The canonical CBOR item of `value`, a message `side` sends, after validating it like
    /// [`validate_json`](Self::validate_json): the bytes the generated type's `Encode` writes
    /// (object keys in schema order, literals in place, absent optional keys left out, numbers
    /// as `Writer::number` writes them, opaque payloads in their own key order), docs/PROTOCOL.md
    /// section 3.
    ///
    /// # Errors
    /// As [`validate_json`](Self::validate_json).
    pub fn encode_canonical(&self, side: Side, value: &Value) -> Result<Vec<u8>, ProtocolError> {
        let canonical = self.to_canonical(side, value)?;
        Ok(Payload::from_value(&canonical)?.as_cbor().to_vec())
    }

    /// One frame holding `value`, a message `side` sends, encoded as the reference encodes the
    /// same JSON text (keys in JavaScript property order), validated by decoding the very bytes
    /// under `options`' limits: what the facade's `encode_client_json` does for its types.
    ///
    /// # Errors
    /// As [`validate_json`](Self::validate_json) (against `options`' CBOR limits), plus
    /// `Frame`/`EncodedFrameTooLong` past the frame limit.
    pub fn encode_json_frame(
        &self,
        side: Side,
        value: &Value,
        options: &CodecOptions,
    ) -> Result<Vec<u8>, ProtocolError> {
        encode_json_frame(value, options, |cbor, limits| self.decode(side, cbor, limits).map(drop))
    }

    /// One frame holding the message `side` sends given as JSON text, encoded as the reference
    /// encodes the same text (keys in JavaScript property order, numbers read exactly), checked
    /// by decoding the very bytes under `options`' limits: what the facade's
    /// `encode_client_json_str` does for its types. No JSON value is built.
    ///
    /// ```
    /// use pi_protocol_gen::{interpret::Interpreter, model::Side, Model};
    /// let schema = r#"{ "$defs": { "ClientMessage": { "type": "object",
    ///     "properties": { "type": { "const": "ping" }, "seq": { "type": "integer" } },
    ///     "required": ["type", "seq"], "additionalProperties": false } } }"#;
    /// let interpreter = Interpreter::new(&Model::from_json(schema, "ping.json")?)?;
    /// let frame = interpreter.encode_json_str(Side::Client, r#"{"seq": 7, "type": "ping"}"#, &Default::default())?;
    /// assert_eq!(&frame[4..6], &[0xa2, 0x63]); // "seq" first, as given
    /// assert!(interpreter.encode_json_str(Side::Client, r#"{"seq": 7}"#, &Default::default()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "JSON" }` for text that is not JSON; otherwise as
    /// [`encode_json_frame`](Self::encode_json_frame).
    pub fn encode_json_str(&self, side: Side, text: &str, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
        let cbor = payload_in_javascript_order(text)?;
        self.check(side, cbor.as_cbor(), options.limits())?;
        encode_frame(cbor.as_cbor(), options.frame_limit())
    }
}

/// A message decoded by [`Interpreter::decode_borrowed`], borrowing from the frame payload.
/// Serialize it (`serde_json::to_writer`) to write its JSON, opaque payloads streamed from
/// their CBOR; [`to_value`](Self::to_value) builds the `serde_json::Value` instead.
#[derive(Debug, Clone)]
pub struct BorrowedMessage<'de>(json::Json<'de>);

impl BorrowedMessage<'_> {
    /// The message as the `serde_json::Value` [`Interpreter::decode`] gives.
    #[must_use]
    pub fn to_value(&self) -> Value {
        self.0.clone().into_value()
    }
}

impl serde::Serialize for BorrowedMessage<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Decodes `payload` as a value of type `index` of `program` (`NoVariant` without one).
fn run<'de>(
    program: &Program,
    index: Option<usize>,
    payload: &'de [u8],
    limits: CborLimits,
) -> Result<json::Json<'de>, ProtocolError> {
    decode_message_with(payload, limits, |reader| match index {
        Some(index) if index < program.types.len() => program.decode_type(index, reader),
        _ => Err(ProtocolError::schema(Rule::NoVariant)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assert_send_sync<T: Send + Sync>() {}

    fn interpreter(defs: Value) -> Result<Interpreter> {
        Interpreter::new(&Model::from_value(&json!({ "$defs": defs }))?)
    }

    #[test]
    fn an_interpreter_can_be_shared_between_threads() {
        assert_send_sync::<Interpreter>();
    }

    #[test]
    fn a_side_without_a_message_type_accepts_nothing() {
        let only_client = interpreter(json!({ "ClientMessage": {
            "type": "object", "properties": { "a": { "type": "string" } }, "additionalProperties": false
        } }))
        .unwrap();
        assert!(only_client.message_type(Side::Server).is_none());
        let limits = CborLimits::default();
        assert_eq!(only_client.decode(Side::Client, &[0xa0], limits).unwrap(), json!({}));
        assert_eq!(only_client.decode(Side::Server, &[0xa0], limits).unwrap_err().rule(), Rule::NoVariant);
        // CBOR errors first, as always.
        assert_eq!(only_client.decode(Side::Server, &[0xa0, 0x00], limits).unwrap_err().rule(), Rule::TrailingData);
    }

    #[test]
    fn types_are_found_by_rust_name_and_by_definition_key() {
        let interpreter = interpreter(json!({
            "id": { "x-rust-name": "RequestId", "type": "string", "minLength": 1 },
            "Count": { "type": "integer", "minimum": 0 }
        }))
        .unwrap();
        let id = interpreter.type_named("id").expect("by $defs key");
        assert_eq!(interpreter.type_named("RequestId"), Some(id));
        assert_eq!(interpreter.type_name(id), "RequestId");
        let limits = CborLimits::default();
        assert_eq!(interpreter.decode_type(id, &[0x61, b'7'], limits).unwrap(), json!("7"));
        assert_eq!(interpreter.decode_type(id, &[0x60], limits).unwrap_err().rule(), Rule::MinLength { min: 1 });
        let count = interpreter.type_named("Count").expect("a newtype");
        assert_eq!(
            interpreter.decode_type(count, &[0x20], limits).unwrap_err().to_string(),
            "invalid message: number below the minimum of 0"
        );
        // A handle of another interpreter names nothing here.
        assert_eq!(interpreter.decode_type(TypeHandle(99), &[0x07], limits).unwrap_err().rule(), Rule::NoVariant);
        assert_eq!(interpreter.type_name(TypeHandle(99)), "");
    }

    #[test]
    fn a_type_holding_itself_without_a_container_is_refused() {
        let error =
            interpreter(json!({ "Loop": { "anyOf": [{ "$ref": "#/$defs/Loop" }, { "type": "null" }] } })).unwrap_err();
        // The converter refuses it before the interpreter sees it (`Program::check_progress`
        // stays for models built by other means).
        assert_eq!(error.path(), Some("#/$defs/Loop"));
        assert!(error.to_string().contains("contains itself"), "{error}");
        // Through an array it is a tree, and fine.
        let tree = interpreter(json!({ "Tree": { "type": "array", "items": { "$ref": "#/$defs/Tree" } } })).unwrap();
        let tree_type = tree.type_named("Tree").unwrap();
        assert_eq!(
            tree.decode_type(tree_type, &[0x82, 0x80, 0x81, 0x80], CborLimits::default()).unwrap(),
            json!([[], [[]]])
        );
    }
}
