//! The schema a run works against: the built-in version 8 types (`schema/pi-protocol.v8.json`,
//! compiled in) or any schema file given with `--schema FILE`, read at run time and decoded and
//! encoded by `pi_protocol_gen::interpret`. Both give the same verdicts and errors for the same
//! schema; the model behind either labels frames and explains refused lines.

use std::io::Write;
use std::path::Path;

use pi_protocol::runtime::{decode_message, FrameDecoder};
use pi_protocol::{
    encode_client_json_str, encode_server_json_str, CborLimits, ClientMessage, ClientMessageDecoder, CodecOptions,
    ProtocolError, ServerMessage, ServerMessageDecoder,
};
use pi_protocol_gen::interpret::Interpreter;
use pi_protocol_gen::model::Side;
use pi_protocol_gen::Model;
use serde_json::Value;

use crate::decode::Sink;
use crate::Failure;

/// A schema and the codec that follows it.
pub struct Protocol {
    /// The checked model: frame labels, explanations, default limits.
    pub model: Model,
    codec: Codec,
}

enum Codec {
    /// The generated version 8 types.
    BuiltIn,
    /// A schema file, interpreted.
    Interpreted(Box<Interpreter>),
}

impl Protocol {
    /// The built-in version 8 schema, or the schema in `file` (the project's own form or the
    /// reference's published form).
    ///
    /// # Errors
    /// A usage failure naming the file when it cannot be read, is not a schema the generator
    /// accepts (with the JSON pointer of the offending keyword), or cannot be interpreted.
    pub fn load(file: Option<&Path>) -> Result<Protocol, Failure> {
        let Some(file) = file else {
            let model = Model::from_json(pi_protocol::SCHEMA_JSON, "schema/pi-protocol.v8.json")
                .expect("the built-in schema is the one the types were generated from");
            return Ok(Protocol { model, codec: Codec::BuiltIn });
        };
        let model = read_model(file)?;
        let interpreter = Interpreter::new(&model).map_err(|e| Failure::usage(format!("{}: {e}", file.display())))?;
        Ok(Protocol { model, codec: Codec::Interpreted(Box::new(interpreter)) })
    }

    /// The codec options of a run: the schema's limits (`x-limits`, or the reference form's
    /// `limits`; the runtime's defaults for those it does not set), with the frame limit
    /// replaced by `max_frame_length` when given, which also becomes the largest CBOR item, as
    /// the reference's `maxFrameLength` option does (docs/PROTOCOL.md sections 1 and 2).
    ///
    /// # Errors
    /// A usage failure when a limit is out of range.
    pub fn options(&self, max_frame_length: Option<u64>) -> Result<CodecOptions, Failure> {
        let usage = |e: ProtocolError| Failure::usage(e.to_string());
        let limit = |name: &str, default: u64| self.model.limits().get(name).copied().unwrap_or(default);
        let cbor = CborLimits::new(
            limit("maxByteLength", u64::from(pi_protocol::DEFAULT_MAX_BYTE_LENGTH)),
            limit("maxContainerLength", u64::from(pi_protocol::DEFAULT_MAX_CONTAINER_LENGTH)),
            limit("maxDepth", u64::from(pi_protocol::DEFAULT_MAX_DEPTH)),
        )
        .map_err(usage)?;
        Ok(match max_frame_length {
            Some(bytes) => CodecOptions::new().cbor_limits(cbor).max_frame_length(bytes).map_err(usage)?,
            None => {
                let frame = limit("maxFrameLength", u64::from(pi_protocol::DEFAULT_MAX_FRAME_LENGTH));
                CodecOptions::new().max_frame_length(frame).map_err(usage)?.cbor_limits(cbor)
            }
        })
    }

    /// Decodes one frame payload as a message `side` sends, only for the verdict.
    ///
    /// # Errors
    /// The decoder's error (kind, rule, field path).
    pub fn check(&self, side: Side, payload: &[u8], limits: CborLimits) -> Result<(), ProtocolError> {
        match (&self.codec, side) {
            (Codec::BuiltIn, Side::Client) => decode_message::<ClientMessage>(payload, limits).map(drop),
            (Codec::BuiltIn, Side::Server) => decode_message::<ServerMessage>(payload, limits).map(drop),
            (Codec::Interpreted(interpreter), side) => interpreter.check(side, payload, limits),
        }
    }

    /// One frame holding the message `side` sends given as JSON `text`, encoded as the
    /// reference encodes the same text (keys in JavaScript property order, numbers read
    /// exactly) after validating it.
    ///
    /// # Errors
    /// The validation error, or `Frame`/`EncodedFrameTooLong`.
    pub fn encode_json(&self, side: Side, text: &str, options: &CodecOptions) -> Result<Vec<u8>, ProtocolError> {
        match (&self.codec, side) {
            (Codec::BuiltIn, Side::Client) => encode_client_json_str(text, options),
            (Codec::BuiltIn, Side::Server) => encode_server_json_str(text, options),
            (Codec::Interpreted(interpreter), side) => interpreter.encode_json_str(side, text, options),
        }
    }

    /// A streaming decoder of the messages `side` sends.
    pub fn stream_decoder(&self, side: Side, options: &CodecOptions) -> StreamDecoder<'_> {
        match (&self.codec, side) {
            (Codec::BuiltIn, Side::Client) => StreamDecoder::Client(ClientMessageDecoder::with_options(options)),
            (Codec::BuiltIn, Side::Server) => StreamDecoder::Server(ServerMessageDecoder::with_options(options)),
            (Codec::Interpreted(interpreter), side) => StreamDecoder::Interpreted {
                frames: FrameDecoder::with_max_frame_length(u64::from(options.frame_limit()))
                    .expect("the limit came from checked options"),
                interpreter,
                side,
                limits: options.limits(),
            },
        }
    }

    /// A line for a stream whose first frame `payload` was refused as a `side` message: when
    /// it decodes as a message of the other side, the stream is most likely the other side's.
    pub fn wrong_side_hint(&self, side: Side, payload: &[u8], limits: CborLimits) -> Option<String> {
        let other = match side {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        };
        self.check(other, payload, limits).ok()?;
        Some(format!(
            "the stream looks like the {other}'s: its first frame is a valid {other} message, not a {side} one \
             (try --side {other})",
            other = other.as_str(),
            side = side.as_str()
        ))
    }
}

/// Reads and checks the schema in `file` (`--schema`, `schema diff`).
///
/// # Errors
/// A usage failure naming the file when it cannot be read or is not a schema the generator
/// accepts (with the JSON pointer of the offending keyword).
pub fn read_model(file: &Path) -> Result<Model, Failure> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::usage(format!("cannot read the schema {}: {e}", file.display())))?;
    Model::from_json(&text, &file.display().to_string())
        .map_err(|e| Failure::usage(format!("{} is not a usable schema: {e}", file.display())))
}

/// A streaming decoder of one side's messages, built-in or interpreted.
pub enum StreamDecoder<'p> {
    /// Built-in client messages.
    Client(ClientMessageDecoder),
    /// Built-in server messages.
    Server(ServerMessageDecoder),
    /// Frames cut here, payloads decoded by the interpreter, as the generated `MessageDecoder`
    /// does with its types; each message is written straight from the frame (its opaque
    /// payloads streamed from their CBOR, as the built-in path writes them), so memory stays
    /// in proportion to the frame.
    Interpreted { frames: FrameDecoder, interpreter: &'p Interpreter, side: Side, limits: CborLimits },
}

impl StreamDecoder<'_> {
    /// Feeds `chunk`, giving every message it completes (or the error that ends the stream) to
    /// `sink`.
    pub fn push<W: Write>(&mut self, chunk: &[u8], sink: &mut Sink<'_, W>) {
        match self {
            StreamDecoder::Client(decoder) => decoder.push_each(chunk, |m| sink.take(m)),
            StreamDecoder::Server(decoder) => decoder.push_each(chunk, |m| sink.take(m)),
            StreamDecoder::Interpreted { frames, interpreter, side, limits } => {
                let result = frames.push_with(chunk, |payload, offset| {
                    match interpreter.decode_borrowed(*side, payload, *limits) {
                        Ok(message) => {
                            sink.take(Ok(message));
                            Ok(())
                        }
                        Err(error) => Err(error.with_offset(offset)),
                    }
                });
                if let Err(error) = result {
                    sink.take::<Value>(Err(error));
                }
            }
        }
    }

    /// Signals the end of the stream.
    ///
    /// # Errors
    /// `Frame`/`TruncatedFrame` when the stream ends inside a frame.
    pub fn end(&mut self) -> Result<(), ProtocolError> {
        match self {
            StreamDecoder::Client(decoder) => decoder.end(),
            StreamDecoder::Server(decoder) => decoder.end(),
            StreamDecoder::Interpreted { frames, .. } => frames.end(),
        }
    }
}
