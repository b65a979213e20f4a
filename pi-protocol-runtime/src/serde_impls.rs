//! `serde` support for the runtime's value types: a [`Payload`] is its JSON value, an
//! [`Integer`] a JSON number (docs/PROTOCOL.md sections 2 and 5).
//!
//! Deserializing a `Payload` applies the strict-JSON rules of [`Payload::from_value`] (finite
//! numbers, integers within +-(2^53 - 1), at most 512 levels of nesting) and writes the CBOR
//! as the input is read: no `serde_json::Value` is built, and object keys keep the order of
//! the input (a key given twice keeps its first place and takes the last value). From a
//! payload's own deserializer ([`crate::serde_de`]) it is a copy of the bytes. An `Integer`
//! must be an integral number within +-(2^53 - 1).
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

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Error as _, Visitor};
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::cbor::builder::Builder;
use crate::cbor::Reader;
use crate::codec::Scalar;
use crate::error::ProtocolError;
use crate::limits::CborLimits;
use crate::number::Integer;
use crate::payload::Payload;

/// The newtype name under which `Deserialize for Payload` asks for the item: a payload's own
/// deserializer answers with the item's bytes, any other treats it as a plain newtype.
pub(crate) const PAYLOAD_TOKEN: &str = "$pi_protocol_runtime::Payload";

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CborJson::new(self.as_cbor()).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_newtype_struct(PAYLOAD_TOKEN, PayloadVisitor)
    }
}

/// Builds a payload from whatever the deserializer gives.
struct PayloadVisitor;

impl PayloadVisitor {
    fn build<E: de::Error>(self, write: impl FnOnce(Build<'_>) -> Result<(), ProtocolError>) -> Result<Payload, E> {
        let mut builder = Builder::new();
        write(Build(&mut builder)).and_then(|()| builder.finish()).map_err(E::custom)
    }
}

macro_rules! build_scalars {
    ($($method:ident($ty:ty);)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Payload, E> {
            self.build(|b| b.$method::<ProtocolError>(v))
        }
    )*};
}

impl<'de> Visitor<'de> for PayloadVisitor {
    type Value = Payload;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<Payload, D::Error> {
        let mut builder = Builder::new();
        Build(&mut builder).deserialize(deserializer)?;
        builder.finish().map_err(D::Error::custom)
    }

    /// The item's bytes, from a payload's own deserializer (validated again all the same).
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Payload, E> {
        let mut reader = Reader::new(v, CborLimits::widest());
        let shape = reader.skip_item().and_then(|shape| reader.finish().map(|()| shape)).map_err(E::custom)?;
        Ok(Payload::from_parts(v.to_vec(), shape))
    }

    build_scalars! {
        visit_bool(bool);
        visit_i64(i64);
        visit_u64(u64);
        visit_i128(i128);
        visit_u128(u128);
        visit_f64(f64);
        visit_str(&str);
    }

    fn visit_unit<E: de::Error>(self) -> Result<Payload, E> {
        self.build(|b| b.visit_unit::<ProtocolError>())
    }

    fn visit_none<E: de::Error>(self) -> Result<Payload, E> {
        self.build(|b| b.visit_none::<ProtocolError>())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Payload, D::Error> {
        self.visit_newtype_struct(deserializer)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Payload, A::Error> {
        let mut builder = Builder::new();
        Build(&mut builder).visit_seq(seq)?;
        builder.finish().map_err(A::Error::custom)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Payload, A::Error> {
        let mut builder = Builder::new();
        Build(&mut builder).visit_map(map)?;
        builder.finish().map_err(A::Error::custom)
    }
}

/// Writes the next value the deserializer gives into a [`Builder`], with the JSON rules of
/// `serde_json::Value`'s own visitor (byte strings and enums are not JSON).
struct Build<'b>(&'b mut Builder);

impl<'de> DeserializeSeed<'de> for Build<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Build<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.0.bool(v).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.0.integer(v.into()).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.0.integer(v.into()).map_err(E::custom)
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<(), E> {
        self.0.integer(v).map_err(E::custom)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<(), E> {
        self.0.integer(i128::try_from(v).unwrap_or(i128::MAX)).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.0.float(v).map_err(E::custom)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.text(v).map_err(E::custom)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.null().map_err(E::custom)
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.0.null().map_err(E::custom)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.begin_array(seq.size_hint()).map_err(A::Error::custom)?;
        while seq.next_element_seed(Build(&mut *self.0))?.is_some() {}
        self.0.end().map_err(A::Error::custom)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.begin_object(map.size_hint()).map_err(A::Error::custom)?;
        while map.next_key_seed(BuildKey(&mut *self.0))?.is_some() {
            map.next_value_seed(Build(&mut *self.0))?;
        }
        self.0.end().map_err(A::Error::custom)
    }
}

/// Writes the next map key, which must be a string.
struct BuildKey<'b>(&'b mut Builder);

impl<'de> DeserializeSeed<'de> for BuildKey<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for BuildKey<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.0.key(v).map_err(E::custom)
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
