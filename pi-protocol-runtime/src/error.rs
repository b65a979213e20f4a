//! The one error type of the protocol (docs/PROTOCOL.md section 6).
//!
//! Every failure — a bad limit, bad framing, malformed or unsupported CBOR, a schema violation,
//! an encoder refusing a value — is a [`ProtocolError`] with a [`ErrorKind`], the [`Rule`] that
//! failed and the field path where it failed. Messages are built only from static text and
//! numbers, never from the bytes or strings received, so an error can be logged without leaking
//! what a peer sent, and its `Display` form is at most [`MAX_ERROR_MESSAGE_LENGTH`] characters.

use std::fmt;

use crate::number::Number;

/// Upper bound, in characters, of a [`ProtocolError`]'s `Display` output (docs/PROTOCOL.md section 6).
pub const MAX_ERROR_MESSAGE_LENGTH: usize = 500;

/// Which layer refused the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A limit or option given when building a decoder or encoder is out of range.
    Options,
    /// The byte stream is not a sequence of well-formed frames (docs/PROTOCOL.md section 1).
    Frame,
    /// A frame's payload is not one item of the strict CBOR subset (section 2).
    Cbor,
    /// The item is well-formed but breaks the envelope schema or the strict-JSON rule (sections 4, 5).
    Schema,
    /// A value cannot be encoded (section 3).
    Encode,
    /// A decoder was used after it failed or ended.
    State,
}

impl ErrorKind {
    /// A short lowercase name, as used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Options => "invalid options",
            ErrorKind::Frame => "invalid frame",
            ErrorKind::Cbor => "invalid CBOR",
            ErrorKind::Schema => "invalid message",
            ErrorKind::Encode => "cannot encode",
            ErrorKind::State => "decoder unusable",
        }
    }
}

/// The rule that failed. Each variant's `Display` text is fixed, apart from the numbers it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    // ---- options ----
    /// An option is outside its range: `name` must lie in `min..=max`.
    OptionRange {
        /// The option's name, as in the reference (`maxFrameLength`, `maxDepth`, ...).
        name: &'static str,
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    // ---- framing ----
    /// A frame header announces more payload bytes than the configured limit.
    FrameTooLong {
        /// The announced payload length in bytes.
        length: u64,
        /// The configured `maxFrameLength` in bytes.
        limit: u64,
    },
    /// The stream ended inside a frame header or payload.
    TruncatedFrame,
    /// An encoded payload would be longer than the configured `maxFrameLength`.
    EncodedFrameTooLong {
        /// The payload length in bytes.
        length: u64,
        /// The configured limit in bytes.
        limit: u64,
    },
    // ---- CBOR ----
    /// The item ends before its declared content (or the payload is empty).
    Truncated,
    /// Bytes follow the single item of a payload.
    TrailingData,
    /// Additional information 28, 29 or 30.
    ReservedAdditionalInfo,
    /// An indefinite-length string, array or map (additional information 31).
    IndefiniteLength,
    /// A break byte (0xFF) outside any indefinite-length item.
    UnexpectedBreak,
    /// A tag (major type 6); every tag is refused.
    Tag,
    /// A simple value or float width outside false, true, null and float64.
    UnsupportedSimple,
    /// A float64 that is NaN or infinite.
    NonFiniteNumber,
    /// An integer, or an integral float64, beyond +-(2^53 - 1).
    UnsafeInteger,
    /// A length argument beyond 2^53 - 1.
    LengthOutOfRange,
    /// A text string that is not strict UTF-8.
    InvalidUtf8,
    /// A map key that is not a text string.
    NonTextKey,
    /// A map holds the same key twice.
    DuplicateKey,
    /// An item or string longer than `maxByteLength`.
    ByteLengthLimit {
        /// The configured limit in bytes.
        limit: u64,
    },
    /// An array or map with more entries than `maxContainerLength`.
    ContainerLengthLimit {
        /// The configured limit in entries.
        limit: u64,
    },
    /// An item nested deeper than `maxDepth`.
    DepthLimit {
        /// The configured limit in levels.
        limit: u64,
    },
    // ---- schema ----
    /// A byte string inside a message, where only JSON values are allowed.
    ByteString,
    /// The value has the wrong JSON type.
    WrongType {
        /// The JSON type the schema wants (`object`, `string`, `integer`, ...).
        expected: &'static str,
    },
    /// A key the schema does not define.
    UnknownField,
    /// A required key is absent.
    MissingField,
    /// A literal key holds another value.
    Literal,
    /// A string shorter than the schema's `minLength` (in characters, counted as the reference
    /// counts them: see [`text_length`](crate::checks::text_length)).
    MinLength {
        /// The minimum length in characters.
        min: u64,
    },
    /// A string longer than the schema's `maxLength` (in characters, as for `MinLength`).
    MaxLength {
        /// The maximum length in characters.
        max: u64,
    },
    /// A string that does not match the schema's `pattern`.
    Pattern,
    /// A number below the schema's `minimum`.
    Minimum {
        /// The smallest accepted value.
        min: Number,
    },
    /// A number above the schema's `maximum`.
    Maximum {
        /// The largest accepted value.
        max: Number,
    },
    /// A number not above the schema's `exclusiveMinimum`.
    ExclusiveMinimum {
        /// The bound every value must exceed.
        min: Number,
    },
    /// A number not below the schema's `exclusiveMaximum`.
    ExclusiveMaximum {
        /// The bound every value must stay under.
        max: Number,
    },
    /// An array with fewer elements than the schema's `minItems`.
    MinItems {
        /// The minimum number of elements.
        min: u64,
    },
    /// An array with more elements than the schema's `maxItems`.
    MaxItems {
        /// The maximum number of elements.
        max: u64,
    },
    /// A value outside the schema's enumeration (`enum`, or a union of `const`s).
    NotInEnum,
    /// No alternative of a union matches the value.
    NoVariant,
    /// The Rust type a payload is converted to or from refused the value: a length, a value
    /// or a shape it does not take, or an error of its own `serde` implementation (whose text,
    /// which may quote the value, is not kept). See `Payload::deserialize` and
    /// `Payload::from_serialize` (docs/PROTOCOL.md section 5).
    TypeRejected,
    // ---- encoding ----
    /// A number that JSON cannot carry (NaN, infinite, or integral beyond +-(2^53 - 1)).
    UnencodableNumber,
    // ---- decoder state ----
    /// The decoder failed earlier and accepts nothing more.
    DecoderFailed,
    /// The decoder's `end()` was already called.
    DecoderEnded,
    /// `end()` was called while bytes received earlier were not read yet (left by a pull-style
    /// reader dropped before its end): read them first.
    UnreadFrames,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rule::OptionRange { name, min, max } => {
                write!(f, "{name} must be an integer between {min} and {max}")
            }
            Rule::FrameTooLong { length, limit } => {
                write!(f, "frame length {length} exceeds the limit of {limit} bytes")
            }
            Rule::TruncatedFrame => f.write_str("stream ended inside a frame"),
            Rule::EncodedFrameTooLong { length, limit } => {
                write!(f, "encoded payload of {length} bytes exceeds the frame limit of {limit} bytes")
            }
            Rule::Truncated => f.write_str("truncated CBOR item"),
            Rule::TrailingData => f.write_str("trailing data after the CBOR item"),
            Rule::ReservedAdditionalInfo => f.write_str("reserved additional information (28-30)"),
            Rule::IndefiniteLength => f.write_str("indefinite-length items are not supported"),
            Rule::UnexpectedBreak => f.write_str("break marker outside an indefinite-length item"),
            Rule::Tag => f.write_str("CBOR tags are not supported"),
            Rule::UnsupportedSimple => f.write_str("only false, true, null and float64 are supported in major type 7"),
            Rule::NonFiniteNumber => f.write_str("numbers must be finite"),
            Rule::UnsafeInteger => f.write_str("integers must lie within +-(2^53 - 1)"),
            Rule::LengthOutOfRange => f.write_str("length argument beyond 2^53 - 1"),
            Rule::InvalidUtf8 => f.write_str("text string is not valid UTF-8"),
            Rule::NonTextKey => f.write_str("map keys must be text strings"),
            Rule::DuplicateKey => f.write_str("map contains a duplicate key"),
            Rule::ByteLengthLimit { limit } => {
                write!(f, "byte length exceeds the limit of {limit}")
            }
            Rule::ContainerLengthLimit { limit } => {
                write!(f, "container length exceeds the limit of {limit} entries")
            }
            Rule::DepthLimit { limit } => write!(f, "nesting depth exceeds the limit of {limit}"),
            Rule::ByteString => f.write_str("byte strings are not JSON values"),
            Rule::WrongType { expected } => write!(f, "expected {expected}"),
            Rule::UnknownField => f.write_str("unknown field"),
            Rule::MissingField => f.write_str("missing required field"),
            Rule::Literal => f.write_str("value differs from the required literal"),
            Rule::MinLength { min: 1 } => f.write_str("string is empty (at least 1 character required)"),
            Rule::MinLength { min } => write!(f, "string shorter than {min} characters"),
            Rule::MaxLength { max } => write!(f, "string longer than {max} characters"),
            Rule::Pattern => f.write_str("string does not match the required pattern"),
            Rule::Minimum { min } => write!(f, "number below the minimum of {min}"),
            Rule::Maximum { max } => write!(f, "number above the maximum of {max}"),
            Rule::ExclusiveMinimum { min } => write!(f, "number not above the exclusive minimum of {min}"),
            Rule::ExclusiveMaximum { max } => write!(f, "number not below the exclusive maximum of {max}"),
            Rule::MinItems { min } => write!(f, "array with fewer than {min} elements"),
            Rule::MaxItems { max } => write!(f, "array with more than {max} elements"),
            Rule::NotInEnum => f.write_str("value is not one of the allowed values"),
            Rule::NoVariant => f.write_str("value matches none of the allowed shapes"),
            Rule::TypeRejected => f.write_str("value refused by the Rust type it converts to or from"),
            Rule::UnencodableNumber => f.write_str("number is not finite or is an integer beyond +-(2^53 - 1)"),
            Rule::DecoderFailed => f.write_str("decoder already failed"),
            Rule::DecoderEnded => f.write_str("decoder already ended"),
            Rule::UnreadFrames => f.write_str("received bytes were not read before the end"),
        }
    }
}

/// One step of a field path: an object key named by the schema, an array index, or the
/// position of an entry in a record (whose keys are peer data and never shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PathSegment {
    /// An object key. Only keys the schema defines appear here, never keys read from the wire.
    Key(&'static str),
    /// An array index.
    Index(u64),
    /// The position of an entry in a [`Record`](crate::Record), counted from 0 in wire order.
    Entry(u64),
}

/// A failure of the protocol layer: kind, rule, field path and, where known, the byte offset.
///
/// The `Display` form reads `invalid message at target.serverId: string does not match the
/// required pattern (frame at byte 84)` and is never longer than
/// [`MAX_ERROR_MESSAGE_LENGTH`] characters. It quotes nothing received from a peer.
///
/// ```
/// use pi_protocol_runtime::{ErrorKind, ProtocolError, Rule};
/// let err = ProtocolError::new(ErrorKind::Schema, Rule::Pattern).at("serverId").at("target");
/// assert_eq!(err.path_string(), "target.serverId");
/// assert_eq!(err.to_string(), "invalid message at target.serverId: string does not match the required pattern");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ProtocolError(Box<Inner>);

/// The error's content, boxed so that `Result<T, ProtocolError>` stays two words wide and hot
/// decoding paths return it in registers.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Inner {
    kind: ErrorKind,
    rule: Rule,
    /// Path segments, innermost first (they are added as the error travels outwards).
    path: Vec<PathSegment>,
    offset: Option<u64>,
    /// The initial byte of the CBOR item whose head broke the rule, kept only where the
    /// reference words the rule by it ([`ProtocolError::reference_text`]): the major type for
    /// `IndefiniteLength`, `ReservedAdditionalInfo`, `ByteLengthLimit` and
    /// `ContainerLengthLimit`; for `UnsafeInteger`, only when the argument itself is beyond
    /// 2^53 - 1.
    head: Option<u8>,
}

impl ProtocolError {
    /// An error of `kind` for `rule`, with an empty path and no offset.
    #[cold]
    pub fn new(kind: ErrorKind, rule: Rule) -> Self {
        ProtocolError(Box::new(Inner { kind, rule, path: Vec::new(), offset: None, head: None }))
    }

    /// A CBOR-level error (`ErrorKind::Cbor`).
    #[cold]
    pub fn cbor(rule: Rule) -> Self {
        Self::new(ErrorKind::Cbor, rule)
    }

    /// A schema-level error (`ErrorKind::Schema`).
    #[cold]
    pub fn schema(rule: Rule) -> Self {
        Self::new(ErrorKind::Schema, rule)
    }

    /// An options error (`ErrorKind::Options`) for `name` outside `min..=max`.
    #[cold]
    pub fn option_range(name: &'static str, min: u64, max: u64) -> Self {
        Self::new(ErrorKind::Options, Rule::OptionRange { name, min, max })
    }

    /// Prepends the object key `key` to the field path (call it as the error leaves a field).
    #[cold]
    pub fn at(mut self, key: &'static str) -> Self {
        self.0.path.push(PathSegment::Key(key));
        self
    }

    /// Prepends the array index `index` to the field path.
    #[cold]
    pub fn at_index(mut self, index: u64) -> Self {
        self.0.path.push(PathSegment::Index(index));
        self
    }

    /// Prepends the position of a record entry to the field path.
    #[cold]
    pub fn at_entry(mut self, index: u64) -> Self {
        self.0.path.push(PathSegment::Entry(index));
        self
    }

    /// Sets the byte offset (in the stream or buffer) of the frame or item that failed.
    pub fn with_offset(mut self, offset: u64) -> Self {
        self.0.offset = Some(offset);
        self
    }

    /// Records the initial byte of the CBOR item whose head broke the rule, so that
    /// [`reference_text`](Self::reference_text) can word it as the reference does.
    #[cold]
    pub(crate) fn with_head(mut self, initial: u8) -> Self {
        self.0.head = Some(initial);
        self
    }

    /// The reference decoder's words for this failure (`@earendil-works/pi-protocol` 0.85.1,
    /// docs/PROTOCOL.md section 6): the text the reference server puts after `Invalid client
    /// protocol frame: ` in the `hello_error` it sends for a frame it cannot decode.
    ///
    /// Frame and CBOR errors map rule by rule; where the reference words one of our rules by
    /// the item's major type (`IndefiniteLength`, `ReservedAdditionalInfo`, `ByteLengthLimit`,
    /// `ContainerLengthLimit`) or tells an 8-byte argument beyond 2^53 - 1 from an unsafe value
    /// (`UnsafeInteger`, `LengthOutOfRange`), the decoder records what it needs. Like
    /// `Display`, the text quotes nothing a peer sent. Other kinds (a schema error is the
    /// reference's "Invalid client protocol message", a fixed text) give this error's own
    /// `Display` text.
    ///
    /// ```
    /// use pi_protocol_runtime::{ProtocolError, Rule};
    /// assert_eq!(ProtocolError::cbor(Rule::Truncated).reference_text(), "Truncated CBOR payload");
    /// assert_eq!(
    ///     ProtocolError::cbor(Rule::DepthLimit { limit: 64 }).reference_text(),
    ///     "CBOR nesting depth exceeds configured limit of 64"
    /// );
    /// ```
    pub fn reference_text(&self) -> String {
        let major = self.0.head.map(|b| b >> 5);
        let kind_of = |major: Option<u8>| match major {
            Some(2) => "byte string",
            Some(3) => "text string",
            Some(4) => "array",
            _ => "map",
        };
        let text: &str = match self.0.rule {
            Rule::FrameTooLong { length, limit } => {
                return format!("Frame length {length} exceeds configured limit of {limit}")
            }
            Rule::TruncatedFrame => "Truncated frame at end of stream",
            Rule::Truncated => "Truncated CBOR payload",
            Rule::TrailingData => "CBOR payload contains trailing data",
            Rule::ReservedAdditionalInfo => match (major, self.0.head.map(|b| b & 0x1f)) {
                (Some(6), _) => "CBOR tags are not supported",
                (Some(7), _) => "Unsupported CBOR simple value or floating-point width",
                (_, Some(31)) => "Indefinite-length CBOR items are not supported",
                _ => "Malformed CBOR additional information",
            },
            Rule::IndefiniteLength => match major {
                Some(0 | 1) | None => "Indefinite-length CBOR items are not supported",
                Some(6) => "CBOR tags are not supported",
                kind => return format!("Indefinite-length CBOR {}s are not supported", kind_of(kind)),
            },
            Rule::UnexpectedBreak => "CBOR break marker is not supported",
            Rule::Tag => "CBOR tags are not supported",
            Rule::UnsupportedSimple => "Unsupported CBOR simple value or floating-point width",
            Rule::NonFiniteNumber => "Decoded CBOR number must be finite",
            Rule::UnsafeInteger if self.0.head.is_some() => "Decoded CBOR integer or length is outside the safe range",
            Rule::UnsafeInteger => "Decoded CBOR integer is outside the safe range",
            Rule::LengthOutOfRange => "Decoded CBOR integer or length is outside the safe range",
            Rule::InvalidUtf8 => "CBOR text string contains invalid UTF-8",
            Rule::NonTextKey => "CBOR map keys must be strings",
            Rule::DuplicateKey => "CBOR map contains a duplicate key",
            Rule::ByteLengthLimit { limit } => {
                return match major {
                    Some(2 | 3) => format!("CBOR {} length exceeds configured limit of {limit}", kind_of(major)),
                    _ => format!("CBOR byte length exceeds configured limit of {limit}"),
                }
            }
            Rule::ContainerLengthLimit { limit } => {
                return format!("CBOR {} length exceeds configured limit of {limit}", kind_of(major))
            }
            Rule::DepthLimit { limit } => return format!("CBOR nesting depth exceeds configured limit of {limit}"),
            _ => return self.to_string(),
        };
        text.to_owned()
    }

    /// Which layer refused the input.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The rule that failed.
    pub fn rule(&self) -> Rule {
        self.0.rule
    }

    /// The field path, outermost segment first.
    pub fn path(&self) -> impl Iterator<Item = PathSegment> + '_ {
        self.0.path.iter().rev().copied()
    }

    /// The field path as dotted text, for example `target.serverId`, `items[3]` or
    /// `details{2}` (the third entry of a record); empty at the top level.
    pub fn path_string(&self) -> String {
        let mut out = String::new();
        for segment in self.path() {
            match segment {
                PathSegment::Key(key) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(key);
                }
                PathSegment::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
                PathSegment::Entry(i) => {
                    out.push('{');
                    out.push_str(&i.to_string());
                    out.push('}');
                }
            }
        }
        out
    }

    /// The byte offset of the failing frame or item, when known.
    pub fn offset(&self) -> Option<u64> {
        self.0.offset
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::from(self.0.kind.as_str());
        let path = self.path_string();
        if !path.is_empty() {
            text.push_str(" at ");
            text.push_str(&path);
        }
        text.push_str(": ");
        text.push_str(&self.0.rule.to_string());
        if let Some(offset) = self.0.offset {
            text.push_str(&format!(" (frame at byte {offset})"));
        }
        if text.chars().count() > MAX_ERROR_MESSAGE_LENGTH {
            text = text.chars().take(MAX_ERROR_MESSAGE_LENGTH - 3).collect();
            text.push_str("...");
        }
        f.write_str(&text)
    }
}

impl fmt::Debug for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtocolError")
            .field("kind", &self.0.kind)
            .field("rule", &self.0.rule)
            .field("path", &self.path_string())
            .field("offset", &self.0.offset)
            .finish()
    }
}

impl std::error::Error for ProtocolError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_text_of_the_rules_no_connection_test_reaches() {
        // The whole payload past maxByteLength (no string head recorded), the end of a stream
        // inside a frame, and a schema error (the reference's fixed text is the server's).
        let limit = ProtocolError::cbor(Rule::ByteLengthLimit { limit: 10 });
        assert_eq!(limit.reference_text(), "CBOR byte length exceeds configured limit of 10");
        let text = ProtocolError::cbor(Rule::ByteLengthLimit { limit: 10 }).with_head(0x7a);
        assert_eq!(text.reference_text(), "CBOR text string length exceeds configured limit of 10");
        let truncated = ProtocolError::new(ErrorKind::Frame, Rule::TruncatedFrame);
        assert_eq!(truncated.reference_text(), "Truncated frame at end of stream");
        let schema = ProtocolError::schema(Rule::UnknownField).at("type");
        assert_eq!(schema.reference_text(), schema.to_string());
        // Without a recorded head, an unsafe integer is a value, not an argument.
        assert_eq!(
            ProtocolError::cbor(Rule::UnsafeInteger).reference_text(),
            "Decoded CBOR integer is outside the safe range"
        );
    }

    #[test]
    fn min_length_reads_well_for_one_and_for_more() {
        assert_eq!(Rule::MinLength { min: 1 }.to_string(), "string is empty (at least 1 character required)");
        assert_eq!(Rule::MinLength { min: 3 }.to_string(), "string shorter than 3 characters");
    }
}
