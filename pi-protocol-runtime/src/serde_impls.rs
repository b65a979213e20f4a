//! `serde` support for the runtime's value types: a [`Payload`] is its JSON value, an
//! [`Integer`] a JSON number (docs/PROTOCOL.md sections 2 and 5).
//!
//! Deserializing a `Payload` applies the strict-JSON rules of [`Payload::from_value`] (finite
//! numbers, integers within +-(2^53 - 1), the default CBOR limits); an `Integer` must be an
//! integral number within +-(2^53 - 1).
//!
//! ```
//! use pi_protocol_runtime::{Integer, Payload};
//! let payload: Payload = serde_json::from_str(r#"{"b": [1, 2.5, null], "a": "x"}"#).unwrap();
//! assert_eq!(serde_json::to_string(&payload).unwrap(), r#"{"b":[1,2.5,null],"a":"x"}"#);
//! assert!(serde_json::from_str::<Payload>("9007199254740992").is_err()); // 2^53
//! let n: Integer = serde_json::from_str("8").unwrap();
//! assert_eq!((n.get(), serde_json::to_string(&n).unwrap().as_str()), (8, "8"));
//! assert!(serde_json::from_str::<Integer>("1.5").is_err());
//! ```

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use std::cell::RefCell;

use serde::ser::Error as _;

use crate::cbor::Reader;
use crate::codec::Scalar;
use crate::limits::CborLimits;
use crate::number::Integer;
use crate::payload::Payload;

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CborJson::new(self.as_cbor()).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Payload::from_value(&value).map_err(D::Error::custom)
    }
}

impl Serialize for Integer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.is_negative_zero() {
            serializer.serialize_f64(-0.0)
        } else {
            serializer.serialize_i64(self.get())
        }
    }
}

impl<'de> Deserialize<'de> for Integer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let n = f64::deserialize(deserializer)?;
        Integer::from_f64(n).ok_or_else(|| D::Error::custom("expected an integer within +-(2^53 - 1)"))
    }
}

/// Serializes validated strict-JSON CBOR straight into any serde serializer, without building a
/// value tree: a 16 MiB payload holding 16 million nulls streams out in constant memory
/// (docs/PROTOCOL.md section 5).
///
/// The bytes must be one strict-JSON item (as every [`Payload`] and every `Encode` output is);
/// anything else ends the serialization with an error.
///
/// ```
/// use pi_protocol_runtime::serde_impls::CborJson;
/// let cbor = [0xa2, 0x61, b'b', 0x82, 0x01, 0xf6, 0x61, b'a', 0xf5];
/// assert_eq!(serde_json::to_string(&CborJson::new(&cbor)).unwrap(), r#"{"b":[1,null],"a":true}"#);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CborJson<'a> {
    cbor: &'a [u8],
}

impl<'a> CborJson<'a> {
    /// A view of `cbor` (one strict-JSON CBOR item) as JSON.
    pub fn new(cbor: &'a [u8]) -> Self {
        CborJson { cbor }
    }
}

impl Serialize for CborJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let reader = RefCell::new(Reader::new(self.cbor, CborLimits::widest()));
        let out = Item(&reader).serialize(serializer)?;
        if !reader.borrow().is_at_end() {
            return Err(S::Error::custom("trailing data after the CBOR item"));
        }
        Ok(out)
    }
}

/// The next item of a shared reader, serialized as JSON.
struct Item<'r, 'de>(&'r RefCell<Reader<'de>>);

impl Serialize for Item<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let cell = self.0;
        let major = cell.borrow().peek_major();
        match major {
            Some(4) => {
                let n = cell.borrow_mut().enter_array().map_err(S::Error::custom)?;
                let mut seq = serializer.serialize_seq(Some(n))?;
                for _ in 0..n {
                    seq.serialize_element(&Item(cell))?;
                }
                cell.borrow_mut().leave();
                seq.end()
            }
            Some(5) => {
                let n = cell.borrow_mut().enter_map().map_err(S::Error::custom)?;
                let mut map = serializer.serialize_map(Some(n))?;
                for _ in 0..n {
                    let key = cell.borrow_mut().read_key().map_err(S::Error::custom)?;
                    map.serialize_key(key)?;
                    map.serialize_value(&Item(cell))?;
                }
                cell.borrow_mut().leave();
                map.end()
            }
            _ => {
                let scalar = cell.borrow_mut().read_scalar().map_err(S::Error::custom)?;
                match scalar {
                    Scalar::Null => serializer.serialize_unit(),
                    Scalar::Bool(b) => serializer.serialize_bool(b),
                    Scalar::Text(t) => serializer.serialize_str(t),
                    Scalar::Number(n) if n.fract() == 0.0 && !(n == 0.0 && n.is_sign_negative()) => {
                        serializer.serialize_i64(n as i64)
                    }
                    Scalar::Number(n) => serializer.serialize_f64(n),
                    Scalar::Other => Err(S::Error::custom("byte strings are not JSON values")),
                }
            }
        }
    }
}

/// A [`Number`](crate::Number) is a JSON number (`-0.0` stays a float).
impl Serialize for crate::number::Number {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let v = self.value();
        if v.fract() == 0.0 && !(v == 0.0 && v.is_sign_negative()) {
            serializer.serialize_i64(v as i64)
        } else {
            serializer.serialize_f64(v)
        }
    }
}

impl<'de> Deserialize<'de> for crate::number::Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let n = f64::deserialize(deserializer)?;
        crate::number::Number::new(n)
            .ok_or_else(|| D::Error::custom("expected a finite number, integral within +-(2^53 - 1)"))
    }
}
