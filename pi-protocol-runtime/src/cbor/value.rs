//! [`CborValue`]: a decoded item of the strict subset, for the raw [`decode_cbor`] and
//! [`encode_cbor`] entry points (byte strings allowed, unlike inside messages).

use crate::cbor::tree::{self, TreeBuilder};
use crate::cbor::writer::is_encodable_number;
use crate::cbor::{Reader, Writer};
use crate::error::{ErrorKind, ProtocolError, Rule};
use crate::limits::CborLimits;
use crate::scalar::Scalar;

/// One item of the strict CBOR subset (docs/PROTOCOL.md section 2), as a tree.
///
/// Numbers are JSON numbers (`f64`): integers within +-(2^53 - 1) and finite floats. Map entries
/// keep their order.
#[derive(Debug, Clone, PartialEq)]
pub enum CborValue {
    /// `null` (0xF6).
    Null,
    /// `false` / `true`.
    Bool(bool),
    /// An integer or float64.
    Number(f64),
    /// A byte string (major type 2).
    Bytes(Vec<u8>),
    /// A text string (major type 3).
    Text(String),
    /// An array (major type 4).
    Array(Vec<CborValue>),
    /// A map with text keys (major type 5), in wire order.
    Map(Vec<(String, CborValue)>),
}

/// Decodes `input` as exactly one item of the strict subset under `limits`.
///
/// # Errors
/// `Cbor` errors: malformed or unsupported items, limits (`ByteLengthLimit` also when `input`
/// itself is longer than `maxByteLength`), `Truncated`, `TrailingData`, `DuplicateKey`.
///
/// ```
/// use pi_protocol_runtime::{decode_cbor, CborLimits, CborValue};
/// assert_eq!(decode_cbor(&[0x82, 0x01, 0xf6], CborLimits::default()).unwrap(),
///            CborValue::Array(vec![CborValue::Number(1.0), CborValue::Null]));
/// assert!(decode_cbor(&[0xc0, 0x01], CborLimits::default()).is_err()); // tags are refused
/// ```
pub fn decode_cbor(input: &[u8], limits: CborLimits) -> Result<CborValue, ProtocolError> {
    check_item_length(input.len(), limits, ErrorKind::Cbor)?;
    let mut r = Reader::new(input, limits).allow_byte_strings(true);
    // Validate the whole item first: this keeps allocation proportional to valid input and
    // reports the first rule broken in wire order.
    r.skip()?;
    r.finish()?;
    let mut r = Reader::new(input, limits).allow_byte_strings(true);
    read(&mut r)
}

/// Encodes `value` canonically under `limits`.
///
/// # Errors
/// `Encode` errors: `UnencodableNumber`, and the limits (`ByteLengthLimit`,
/// `ContainerLengthLimit`, `DepthLimit`).
pub fn encode_cbor(value: &CborValue, limits: CborLimits) -> Result<Vec<u8>, ProtocolError> {
    let mut w = Writer::new();
    write(&mut w, value, 0, limits)?;
    check_item_length(w.as_bytes().len(), limits, ErrorKind::Encode)?;
    Ok(w.into_vec())
}

#[inline]
pub(crate) fn check_item_length(len: usize, limits: CborLimits, kind: ErrorKind) -> Result<(), ProtocolError> {
    if len as u64 > u64::from(limits.max_byte_length()) {
        return Err(ProtocolError::new(kind, Rule::ByteLengthLimit { limit: u64::from(limits.max_byte_length()) }));
    }
    Ok(())
}

fn read(r: &mut Reader<'_>) -> Result<CborValue, ProtocolError> {
    tree::build::<CborTree>(r)
}

/// Builds [`CborValue`]s.
struct CborTree;

impl TreeBuilder for CborTree {
    type Node = CborValue;

    fn scalar(scalar: Scalar<'_>) -> CborValue {
        match scalar {
            Scalar::Null | Scalar::Other => CborValue::Null,
            Scalar::Bool(b) => CborValue::Bool(b),
            Scalar::Number(n) => CborValue::Number(n),
            Scalar::Text(t) => CborValue::Text(t.to_owned()),
        }
    }

    fn text(text: String) -> CborValue {
        CborValue::Text(text)
    }

    fn bytes(content: &[u8]) -> CborValue {
        CborValue::Bytes(content.to_vec())
    }

    fn array(items: Vec<CborValue>) -> CborValue {
        CborValue::Array(items)
    }

    type Map = Vec<(String, CborValue)>;

    fn new_map(entries: usize) -> Self::Map {
        Vec::with_capacity(entries)
    }

    fn insert(map: &mut Self::Map, key: String, value: CborValue) {
        map.push((key, value));
    }

    fn map(entries: Self::Map) -> CborValue {
        CborValue::Map(entries)
    }
}

fn write(w: &mut Writer, value: &CborValue, depth: u32, limits: CborLimits) -> Result<(), ProtocolError> {
    let fail = |rule| Err(ProtocolError::new(ErrorKind::Encode, rule));
    if depth > limits.max_depth() {
        return fail(Rule::DepthLimit { limit: u64::from(limits.max_depth()) });
    }
    let check_container = |n: usize| {
        if n as u64 > u64::from(limits.max_container_length()) {
            fail(Rule::ContainerLengthLimit { limit: u64::from(limits.max_container_length()) })
        } else {
            Ok(())
        }
    };
    let check_string = |n: usize| check_item_length(n, limits, ErrorKind::Encode);
    match value {
        CborValue::Null => w.null(),
        CborValue::Bool(b) => w.bool(*b),
        CborValue::Number(n) => {
            if !is_encodable_number(*n) {
                return fail(Rule::UnencodableNumber);
            }
            w.number(*n);
        }
        CborValue::Bytes(b) => {
            check_string(b.len())?;
            w.byte_string(b);
        }
        CborValue::Text(t) => {
            check_string(t.len())?;
            w.text(t);
        }
        CborValue::Array(items) => {
            check_container(items.len())?;
            w.array_header(items.len());
            for item in items {
                write(w, item, depth + 1, limits)?;
            }
        }
        CborValue::Map(entries) => {
            check_container(entries.len())?;
            w.map_header(entries.len());
            for (k, v) in entries {
                if depth + 1 > limits.max_depth() {
                    return fail(Rule::DepthLimit { limit: u64::from(limits.max_depth()) });
                }
                check_string(k.len())?;
                w.text(k);
                write(w, v, depth + 1, limits)?;
            }
        }
    }
    Ok(())
}
