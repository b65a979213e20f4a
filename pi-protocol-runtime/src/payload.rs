//! [`Payload`]: an opaque strict-JSON value kept as its validated CBOR bytes (docs/PROTOCOL.md
//! section 5).

use std::fmt;

use bytes::Bytes;
use serde_json::{Map, Number, Value};

use crate::cbor::builder::Builder;
use crate::cbor::reader::ItemShape;
use crate::cbor::tree::{self, TreeBuilder};
use crate::cbor::writer::is_encodable_number;
use crate::cbor::{Reader, Writer};
use crate::codec::{Decode, Encode, Validate};
use crate::error::{ErrorKind, ProtocolError, Rule};
use crate::limits::{CborLimits, MAX_CONFIGURABLE_DEPTH};
use crate::number::MAX_SAFE_INTEGER;

/// An opaque payload (`request.call`, `response.result`, `service_update.update`): any strict
/// JSON value — null, booleans, finite numbers, strings, arrays, objects with string keys.
///
/// The payload holds the validated CBOR encoding of the value, so a relay forwards it byte for
/// byte without rebuilding it, and object keys keep the order they had. Decoding from a shared
/// frame buffer makes it a zero-copy slice. Convert from and to your own types with
/// [`Payload::from_serialize`] and [`Payload::deserialize`] (no `serde_json::Value` in
/// between), from JSON text with [`Payload::from_json_str`], to JSON text by serializing it
/// (`serde_json::to_string(&payload)`), and from and to `serde_json::Value` with
/// [`Payload::from_value`] and [`Payload::to_value`].
///
/// Equality compares the encoded bytes, so `{"a":1,"b":2}` and `{"b":2,"a":1}` differ.
///
/// ```
/// use pi_protocol_runtime::Payload;
/// use serde_json::json;
/// let p = Payload::from_value(&json!({"member": "catalogue", "args": [1, 2.5, null]})).unwrap();
/// assert_eq!(p.to_value(), json!({"member": "catalogue", "args": [1, 2.5, null]}));
/// assert!(Payload::from_value(&json!(9007199254740992u64)).is_err());
/// ```
#[derive(Clone)]
pub struct Payload {
    cbor: Storage,
    depth: u32,
    widest: u32,
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.as_cbor() == other.as_cbor()
    }
}

impl Eq for Payload {}

impl std::hash::Hash for Payload {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_cbor().hash(state);
    }
}

/// Payloads of up to this many bytes (a typical small call such as
/// `{"serviceId":"session","member":"prompt","args":["hi"]}` takes 42) are held inside the
/// `Payload` itself: decoding one costs a 46-byte copy instead of an allocation, its free and a
/// reference count (measured with callgrind: 190 of the 3,900 instructions of the small request
/// decode of `docs/PERFORMANCE.md`).
pub const MAX_INLINE_PAYLOAD_LENGTH: usize = 46;

/// Where a payload's bytes live.
#[derive(Clone)]
enum Storage {
    /// A short payload, in place: its length and bytes.
    Inline { len: u8, bytes: [u8; MAX_INLINE_PAYLOAD_LENGTH] },
    /// A longer one, in a shared buffer (a slice of the frame for the zero-copy decoders).
    Shared(Bytes),
}

impl Storage {
    /// A copy of `cbor`: inline when short enough.
    #[inline]
    fn copy(cbor: &[u8]) -> Storage {
        let len = cbor.len();
        if len > MAX_INLINE_PAYLOAD_LENGTH {
            return Storage::Shared(Bytes::copy_from_slice(cbor));
        }
        // Two copies of a fixed size that overlap (the largest size that fits twice in `cbor`),
        // not a `memcpy` call for a variable length: half the instructions for a small call.
        let mut bytes = [0; MAX_INLINE_PAYLOAD_LENGTH];
        let mut overlapping = |n: usize| {
            bytes[..n].copy_from_slice(&cbor[..n]);
            bytes[len - n..len].copy_from_slice(&cbor[len - n..]);
        };
        match len {
            32.. => overlapping(32),
            16.. => overlapping(16),
            8.. => overlapping(8),
            4.. => overlapping(4),
            _ => bytes[..len].copy_from_slice(cbor),
        }
        Storage::Inline { len: len as u8, bytes }
    }

    #[inline]
    fn as_slice(&self) -> &[u8] {
        match self {
            Storage::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Storage::Shared(bytes) => bytes,
        }
    }
}

impl Payload {
    /// The JSON `null`.
    pub fn null() -> Self {
        Payload { cbor: Storage::copy(&[0xf6]), depth: 0, widest: 0 }
    }

    /// Encodes `value` (keys in the map's own order).
    ///
    /// # Errors
    /// `Encode`/`UnencodableNumber` for an integral number beyond +-(2^53 - 1);
    /// `Encode`/`DepthLimit` for nesting deeper than 512 levels.
    pub fn from_value(value: &Value) -> Result<Self, ProtocolError> {
        let mut w = Writer::new();
        let shape = write_value(&mut w, value, 0)?;
        Ok(Self::from_parts(w.into_vec(), shape))
    }

    /// A JSON object of `entries`, in their order, each value a payload: written from the
    /// payloads' bytes without reading them again (no serde, no value tree), so a result made
    /// of parts of a call (`{"echo": args}`) costs a copy of those parts. Keys and heads are
    /// written in the strict subset's shortest form (docs/PROTOCOL.md sections 2 and 5).
    ///
    /// # Errors
    /// `Encode`/`DuplicateKey` when two entries have the same key; `Encode`/`DepthLimit` when
    /// the object would nest deeper than 512 levels.
    ///
    /// ```
    /// use pi_protocol_runtime::Payload;
    /// let args = Payload::from_json_str("[1,[2]]")?;
    /// let answer = Payload::object(&[("echo", &args), ("ok", &Payload::from_json_str("true")?)])?;
    /// assert_eq!(answer, Payload::from_json_str(r#"{"echo":[1,[2]],"ok":true}"#)?);
    /// assert_eq!((answer.depth(), answer.widest_container()), (3, 2));
    /// assert!(Payload::object(&[("a", &args), ("a", &args)]).is_err());
    /// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
    /// ```
    pub fn object(entries: &[(&str, &Payload)]) -> Result<Payload, ProtocolError> {
        let mut shape = ItemShape { depth: 1, widest: u32::try_from(entries.len()).unwrap_or(u32::MAX) };
        let mut len = 9;
        // A few keys are compared with those before them; more go through a set.
        let mut seen = (entries.len() > 16).then(|| std::collections::HashSet::with_capacity(entries.len()));
        for (i, (key, value)) in entries.iter().enumerate() {
            let repeated = match &mut seen {
                Some(seen) => !seen.insert(*key),
                None => entries[..i].iter().any(|(other, _)| other == key),
            };
            if repeated {
                return Err(ProtocolError::new(ErrorKind::Encode, Rule::DuplicateKey));
            }
            shape.depth = shape.depth.max(value.depth + 1);
            shape.widest = shape.widest.max(value.widest);
            len += 9 + key.len() + value.as_cbor().len();
        }
        if shape.depth > MAX_CONFIGURABLE_DEPTH {
            return Err(ProtocolError::new(
                ErrorKind::Encode,
                Rule::DepthLimit { limit: u64::from(MAX_CONFIGURABLE_DEPTH) },
            ));
        }
        let mut w = Writer::from_vec(Vec::with_capacity(len));
        w.map_header(entries.len());
        for (key, value) in entries {
            w.text(key);
            w.raw(value.as_cbor());
        }
        Ok(Self::from_parts(w.into_vec(), shape))
    }

    /// Wraps `cbor`, one strict-JSON item written by this crate, whose shape is `shape`.
    pub(crate) fn from_parts(cbor: Vec<u8>, shape: ItemShape) -> Self {
        let cbor = if cbor.len() <= MAX_INLINE_PAYLOAD_LENGTH {
            Storage::copy(&cbor)
        } else {
            Storage::Shared(Bytes::from(cbor))
        };
        Payload { cbor, depth: shape.depth, widest: shape.widest }
    }

    /// Parses JSON text (RFC 8259) into a payload in one pass, with no `serde_json::Value` in
    /// between: object keys keep the order of the text (a key given twice keeps its first
    /// place and takes the last value), and numbers are read exactly (the nearest float64),
    /// whatever `serde_json` features the application turns on. Otherwise as
    /// [`from_value`](Self::from_value) of the parsed value: an integer written without
    /// fraction or exponent is an integer (`-0` is the float `-0.0`).
    ///
    /// ```
    /// use pi_protocol_runtime::Payload;
    /// let p = Payload::from_json_str(r#" {"b": [1, 2.5e-3, -0], "a": "\u00e9"} "#)?;
    /// assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"b":[1,0.0025,-0.0],"a":"é"}"#);
    /// assert!(Payload::from_json_str("9007199254740992").is_err()); // 2^53
    /// assert!(Payload::from_json_str("[1,]").is_err());
    /// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
    /// ```
    ///
    /// # Errors
    /// `Schema`/`WrongType { expected: "JSON" }` for text that is not JSON (or a number beyond
    /// the float64 range); `Encode`/`UnencodableNumber` for an integral number beyond
    /// +-(2^53 - 1); `Encode`/`DepthLimit` for nesting deeper than 512 levels.
    pub fn from_json_str(text: &str) -> Result<Self, ProtocolError> {
        let mut builder = Builder::new();
        crate::json_text::read(text, &mut builder)?;
        builder.finish()
    }

    /// Validates CBOR bytes as one strict-JSON item under `limits` (depth counted from the
    /// payload itself) and wraps them without copying.
    ///
    /// # Errors
    /// Any `Cbor` error; `Schema`/`ByteString` for byte strings; `Cbor`/`TrailingData`.
    pub fn from_cbor(cbor: Bytes, limits: CborLimits) -> Result<Self, ProtocolError> {
        let mut r = Reader::new_shared(&cbor, limits);
        let shape = r.skip_item()?;
        r.finish()?;
        Ok(Payload { cbor: Storage::Shared(cbor.clone()), depth: shape.depth, widest: shape.widest })
    }

    /// The validated CBOR encoding.
    pub fn as_cbor(&self) -> &[u8] {
        self.cbor.as_slice()
    }

    /// The validated CBOR encoding as a shared buffer: a reference to the payload's own buffer,
    /// or a copy for a payload short enough to be held inline (46 bytes or less).
    pub fn to_bytes(&self) -> Bytes {
        match &self.cbor {
            Storage::Inline { .. } => Bytes::copy_from_slice(self.as_cbor()),
            Storage::Shared(bytes) => bytes.clone(),
        }
    }

    /// Levels of nesting inside the value (0 for a scalar).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Entries of the widest array or object inside the value.
    pub fn widest_container(&self) -> u32 {
        self.widest
    }

    /// The item that starts at byte `offset` of the payload's CBOR, as a payload of its own:
    /// a slice of this payload's buffer when longer than [`MAX_INLINE_PAYLOAD_LENGTH`], a copy
    /// otherwise (docs/PROTOCOL.md section 5). `offset`, in bytes, is meant to be one a
    /// [`Reader`] over this payload reported ([`Reader::position`]) before an item.
    ///
    /// # Errors
    /// `Cbor`/`Truncated` when `offset` is past the end; otherwise whatever the strict reader
    /// finds wrong with the bytes from there (an offset inside an item may also read as another
    /// item).
    ///
    /// ```
    /// use pi_protocol_runtime::Payload;
    /// let call = Payload::from_json_str(r#"{"args":[1,[2]]}"#)?;
    /// // 0xa1 (a map of one entry), 0x64 "args" (five bytes), then the array.
    /// assert_eq!(call.item_at(6)?, Payload::from_json_str("[1,[2]]")?);
    /// assert_eq!(call.item_at(6)?.depth(), 2);
    /// assert!(call.item_at(99).is_err());
    /// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
    /// ```
    pub fn item_at(&self, offset: usize) -> Result<Payload, ProtocolError> {
        Payload::decode(&mut self.reader_at(offset)?)
    }

    /// The text item that starts at byte `offset` of the payload's CBOR (as
    /// [`item_at`](Self::item_at) finds an item), borrowed; checked as every text is (UTF-8,
    /// docs/PROTOCOL.md section 2).
    ///
    /// # Errors
    /// `Cbor`/`Truncated` when `offset` is past the end; `Schema`/`WrongType` when the item
    /// there is not a text; otherwise what the strict reader finds wrong with it.
    ///
    /// ```
    /// use pi_protocol_runtime::Payload;
    /// let call = Payload::from_json_str(r#"{"member":"echo"}"#)?;
    /// // 0xa1, 0x66 "member" (seven bytes), then the text.
    /// assert_eq!(call.text_at(8)?, "echo");
    /// assert!(call.text_at(0).is_err());
    /// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
    /// ```
    pub fn text_at(&self, offset: usize) -> Result<&str, ProtocolError> {
        self.reader_at(offset)?.read_text()
    }

    /// A reader at byte `offset` of the payload's CBOR.
    fn reader_at(&self, offset: usize) -> Result<Reader<'_>, ProtocolError> {
        if offset > self.as_cbor().len() {
            return Err(ProtocolError::cbor(Rule::Truncated));
        }
        Ok(self.reader().at(offset))
    }

    /// A strict reader over the payload's bytes, for walking a value of known shape without
    /// serde (docs/PROTOCOL.md section 5). The bytes were validated when the payload was built,
    /// so the reader applies the widest limits; a payload decoded from it
    /// ([`Decode`]) is a zero-copy slice of this payload's buffer, or an
    /// inline copy of 46 bytes or less.
    ///
    /// ```
    /// use pi_protocol_runtime::{Decode, Payload};
    /// let call = Payload::from_json_str(r#"{"member": "echo", "args": [1, "two"]}"#)?;
    /// let mut reader = call.reader();
    /// assert_eq!(reader.enter_map()?, 2);
    /// assert_eq!((reader.read_key()?, reader.read_text()?), ("member", "echo"));
    /// assert_eq!(reader.read_key()?, "args");
    /// let args = Payload::decode(&mut reader)?;
    /// assert_eq!(args, Payload::from_json_str(r#"[1, "two"]"#)?);
    /// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
    /// ```
    #[inline]
    pub fn reader(&self) -> Reader<'_> {
        match &self.cbor {
            Storage::Inline { .. } => Reader::new(self.as_cbor(), CborLimits::widest()),
            Storage::Shared(bytes) => Reader::new_shared(bytes, CborLimits::widest()),
        }
    }

    /// Whether the value is `null`.
    pub fn is_null(&self) -> bool {
        self.as_cbor() == [0xf6]
    }

    /// The value as `serde_json::Value`. Integral float64 numbers become integers (as JSON
    /// numbers they are the same), `-0.0` stays a float.
    ///
    /// Objects become `serde_json::Map`s, which keep the wire order of the keys only when the
    /// application turns on `serde_json`'s `preserve_order` feature (this crate does not turn
    /// it on); without it they iterate sorted by key. For the wire order, serialize the
    /// payload itself (`serde_json::to_string(&payload)`, `serde_json::to_writer`: it streams
    /// the bytes, keys as they are) or convert it to a type of your own with
    /// [`deserialize`](Self::deserialize).
    pub fn to_value(&self) -> Value {
        let mut r = Reader::new(self.as_cbor(), CborLimits::widest());
        // The bytes were validated when the payload was built, so reading cannot fail.
        read_value(&mut r).unwrap_or(Value::Null)
    }
}

impl Default for Payload {
    fn default() -> Self {
        Payload::null()
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Streamed, so keys show in wire order.
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        write!(f, "Payload({text})")
    }
}

impl TryFrom<Value> for Payload {
    type Error = ProtocolError;
    fn try_from(value: Value) -> Result<Self, ProtocolError> {
        Payload::from_value(&value)
    }
}

impl TryFrom<&Value> for Payload {
    type Error = ProtocolError;
    fn try_from(value: &Value) -> Result<Self, ProtocolError> {
        Payload::from_value(value)
    }
}

impl From<&Payload> for Value {
    fn from(p: &Payload) -> Value {
        p.to_value()
    }
}

/// A payload is any JSON value, so a union cannot tell it apart from anything else.
impl Builder {
    /// The payload the builder wrote.
    ///
    /// # Errors
    /// `Encode`/`TypeRejected` when the item is incomplete.
    pub(crate) fn finish(self) -> Result<Payload, ProtocolError> {
        let (cbor, shape) = self.into_parts()?;
        Ok(Payload::from_parts(cbor, shape))
    }
}

impl crate::codec::Tagged for Payload {}

impl crate::codec::KeySet for Payload {
    const KEYS: &'static [&'static str] = &[];
    const REQUIRED: &'static [&'static str] = &[];
    const MAP: bool = false;
}

impl<'de> Decode<'de> for Payload {
    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        let start = reader.position();
        let ItemShape { depth, widest } = reader.skip_item()?;
        let end = reader.position();
        let cbor = if end - start <= MAX_INLINE_PAYLOAD_LENGTH {
            Storage::copy(reader.input_between(start, end))
        } else {
            Storage::Shared(reader.bytes_between(start, end))
        };
        Ok(Payload { cbor, depth, widest })
    }
}

impl Encode for Payload {
    fn encode(&self, writer: &mut Writer) {
        match &self.cbor {
            Storage::Inline { .. } => writer.payload(self.as_cbor(), self.depth, self.widest),
            Storage::Shared(bytes) => writer.payload_shared(bytes, self.depth, self.widest),
        }
    }
}

impl Validate for Payload {
    fn validate(&self) -> Result<(), ProtocolError> {
        Ok(())
    }
}

fn write_value(w: &mut Writer, value: &Value, depth: u32) -> Result<ItemShape, ProtocolError> {
    if depth > MAX_CONFIGURABLE_DEPTH {
        return Err(ProtocolError::new(
            ErrorKind::Encode,
            Rule::DepthLimit { limit: u64::from(MAX_CONFIGURABLE_DEPTH) },
        ));
    }
    let mut shape = ItemShape::default();
    match value {
        Value::Null => w.null(),
        Value::Bool(b) => w.bool(*b),
        Value::Number(n) => w.number(json_number(n)?),
        Value::String(s) => w.text(s),
        Value::Array(items) => {
            w.array_header(items.len());
            shape = ItemShape { depth: 1, widest: clamp(items.len()) };
            for item in items {
                let inner = write_value(w, item, depth + 1)?;
                shape.depth = shape.depth.max(inner.depth + 1);
                shape.widest = shape.widest.max(inner.widest);
            }
        }
        Value::Object(map) => {
            w.map_header(map.len());
            shape = ItemShape { depth: 1, widest: clamp(map.len()) };
            for (k, v) in map {
                w.text(k);
                let inner = write_value(w, v, depth + 1)?;
                shape.depth = shape.depth.max(inner.depth + 1);
                shape.widest = shape.widest.max(inner.widest);
            }
        }
    }
    Ok(shape)
}

fn clamp(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The JSON number `n` as an f64 the writer may encode.
fn json_number(n: &Number) -> Result<f64, ProtocolError> {
    let unencodable = || ProtocolError::new(ErrorKind::Encode, Rule::UnencodableNumber);
    if let Some(i) = n.as_i64() {
        return if i.unsigned_abs() <= MAX_SAFE_INTEGER { Ok(i as f64) } else { Err(unencodable()) };
    }
    if let Some(u) = n.as_u64() {
        return if u <= MAX_SAFE_INTEGER { Ok(u as f64) } else { Err(unencodable()) };
    }
    match n.as_f64() {
        Some(f) if is_encodable_number(f) => Ok(f),
        _ => Err(unencodable()),
    }
}

/// Reads one strict-JSON item as a `serde_json::Value`.
///
/// # Errors
/// Any error of the reader (byte strings included, as the reader is in message mode).
pub(crate) fn read_value(r: &mut Reader<'_>) -> Result<Value, ProtocolError> {
    tree::build::<JsonTree>(r)
}

/// Builds `serde_json::Value`s.
struct JsonTree;

impl TreeBuilder for JsonTree {
    type Node = Value;

    fn scalar(scalar: crate::Scalar<'_>) -> Value {
        match scalar {
            crate::Scalar::Null | crate::Scalar::Other => Value::Null,
            crate::Scalar::Bool(b) => Value::Bool(b),
            crate::Scalar::Text(t) => Value::String(t.to_owned()),
            crate::Scalar::Number(n) => number_value(n),
        }
    }

    fn text(text: String) -> Value {
        Value::String(text)
    }

    fn bytes(_: &[u8]) -> Value {
        // Payloads are validated strict JSON: a byte string never reaches here.
        Value::Null
    }

    fn array(items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    type Map = Map<String, Value>;

    fn new_map(entries: usize) -> Self::Map {
        Map::with_capacity(entries)
    }

    fn insert(map: &mut Self::Map, key: String, value: Value) {
        // Payload keys are distinct (checked when the payload was built).
        map.insert(key, value);
    }

    fn map(map: Self::Map) -> Value {
        Value::Object(map)
    }
}

/// A decoded JSON number (a finite float64, within +-(2^53 - 1) when integral, as the reader
/// returns it) as a JSON value, the way [`Payload::to_value`] and the JSON view of derived
/// types render it: integral values as integers, except `-0.0`, which stays a float.
///
/// ```
/// use pi_protocol_runtime::payload::number_value;
/// assert_eq!(number_value(8.0).to_string(), "8");
/// assert_eq!(number_value(0.5).to_string(), "0.5");
/// assert_eq!(number_value(-0.0).to_string(), "-0.0");
/// ```
#[must_use]
pub fn number_value(n: f64) -> Value {
    // Decoded numbers lie within +-(2^53 - 1), where the i64 round trip is exact and cheaper
    // than `fract()` (a libm call on x86-64 without SSE4.1).
    if (n as i64) as f64 == n && !(n == 0.0 && n.is_sign_negative()) {
        Value::Number(Number::from(n as i64))
    } else {
        Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_of_every_short_length_keep_their_bytes() {
        // Inline storage copies with two overlapping fixed-size copies: every length up to the
        // inline limit (and a few beyond) must come back byte for byte.
        for len in 1..=MAX_INLINE_PAYLOAD_LENGTH + 4 {
            // A text of letters whose CBOR is `len` bytes (a head of 1 byte, or of 2 from 24
            // letters on; 25 bytes as a text of 23 in an array).
            let letters = |n: usize| Value::String((0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect());
            let value = match len {
                ..=24 => letters(len - 1),
                25 => Value::Array(vec![letters(23)]),
                _ => letters(len - 2),
            };
            let cbor = Payload::from_value(&value).unwrap().as_cbor().to_vec();
            assert_eq!(cbor.len(), len);
            let mut reader = Reader::new(&cbor, CborLimits::default());
            let decoded = Payload::decode(&mut reader).unwrap();
            assert_eq!(decoded.as_cbor(), &cbor[..], "{len} bytes");
            assert_eq!(decoded.to_value(), value, "{len} bytes");
        }
    }
}
