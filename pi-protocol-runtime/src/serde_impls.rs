//! `serde` support for the runtime's value types: a [`Payload`] is its JSON value, an
//! [`Integer`] a JSON number (PROTOCOL.md sections 2 and 5).
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

use crate::number::Integer;
use crate::payload::Payload;

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
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
