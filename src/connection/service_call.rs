//! The shape of a service call, as the real server checks it before anything else reads the call
//! (docs/PROTOCOL.md section 8, fencing): a map with exactly the keys `serviceId` (a non-empty
//! text), `member` (a non-empty text), `args` (an array) and, optionally, `instance` (a map of
//! exactly `key`, a non-empty text, and `generation`, an integer of at least 1).
//!
//! The check walks the payload's CBOR once through serde, borrowing its texts and skipping the
//! arguments' contents ([`IgnoredAny`]): it builds no value tree and allocates nothing.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::Payload;

/// Whether `call` has the shape of a service call.
pub(crate) fn is_service_call(call: &Payload) -> bool {
    call.deserialize::<CallShape>().is_ok()
}

/// A value that deserializes only from a service call; it keeps nothing.
struct CallShape;

/// A non-empty text.
struct Id;

/// An array, whatever its elements.
struct AnyArray;

/// An instance address `{key, generation}`.
struct Address;

/// An integer of at least 1.
struct Generation;

fn invalid<E: de::Error>() -> E {
    E::custom("not a service call")
}

impl<'de> Deserialize<'de> for CallShape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CallShape;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a service call")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallShape, A::Error> {
                let (mut service_id, mut member, mut args, mut instance) = (false, false, false, false);
                while let Some(key) = map.next_key::<&str>()? {
                    let seen = match key {
                        "serviceId" => {
                            map.next_value::<Id>()?;
                            &mut service_id
                        }
                        "member" => {
                            map.next_value::<Id>()?;
                            &mut member
                        }
                        "args" => {
                            map.next_value::<AnyArray>()?;
                            &mut args
                        }
                        "instance" => {
                            map.next_value::<Address>()?;
                            &mut instance
                        }
                        _ => return Err(invalid()),
                    };
                    if std::mem::replace(seen, true) {
                        return Err(invalid());
                    }
                }
                if service_id && member && args {
                    Ok(CallShape)
                } else {
                    Err(invalid())
                }
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-empty text")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Id, E> {
                if text.is_empty() {
                    Err(invalid())
                } else {
                    Ok(Id)
                }
            }
        }
        deserializer.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for AnyArray {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyArray;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnyArray, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(AnyArray)
            }
        }
        deserializer.deserialize_seq(V)
    }
}

impl<'de> Deserialize<'de> for Address {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Address;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an instance address")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Address, A::Error> {
                let (mut key, mut generation) = (false, false);
                while let Some(name) = map.next_key::<&str>()? {
                    let seen = match name {
                        "key" => {
                            map.next_value::<Id>()?;
                            &mut key
                        }
                        "generation" => {
                            map.next_value::<Generation>()?;
                            &mut generation
                        }
                        _ => return Err(invalid()),
                    };
                    if std::mem::replace(seen, true) {
                        return Err(invalid());
                    }
                }
                if key && generation {
                    Ok(Address)
                } else {
                    Err(invalid())
                }
            }
        }
        deserializer.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for Generation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Generation;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer of at least 1")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Generation, E> {
                if n >= 1 {
                    Ok(Generation)
                } else {
                    Err(invalid())
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Generation, E> {
                if n >= 1 {
                    Ok(Generation)
                } else {
                    Err(invalid())
                }
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Generation, E> {
                // JavaScript numbers: 2.0 is the integer 2.
                if n >= 1.0 && n.fract() == 0.0 {
                    Ok(Generation)
                } else {
                    Err(invalid())
                }
            }
        }
        deserializer.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(value: serde_json::Value) -> bool {
        is_service_call(&Payload::from_value(&value).expect("a payload"))
    }

    #[test]
    fn service_calls_pass() {
        assert!(check(json!({"serviceId": "demo.echo", "member": "echo", "args": [1, {"a": [2]}]})));
        assert!(check(json!({"args": [], "member": "m", "serviceId": "s"})));
        assert!(check(json!({"serviceId": "s", "member": "m", "args": [], "instance": {"key": "k", "generation": 1}})));
        assert!(check(
            json!({"serviceId": "s", "member": "m", "args": [], "instance": {"generation": 2.0, "key": "k"}})
        ));
    }

    #[test]
    fn anything_else_fails() {
        assert!(!check(json!(null)));
        assert!(!check(json!([])));
        assert!(!check(json!({"serviceId": "s", "member": "m"})));
        assert!(!check(json!({"serviceId": "", "member": "m", "args": []})));
        assert!(!check(json!({"serviceId": "s", "member": "", "args": []})));
        assert!(!check(json!({"serviceId": 1, "member": "m", "args": []})));
        assert!(!check(json!({"serviceId": "s", "member": "m", "args": {}})));
        assert!(!check(json!({"serviceId": "s", "member": "m", "args": [], "extra": 1})));
        assert!(!check(json!({"serviceId": "s", "member": "m", "args": [], "instance": {"key": "k"}})));
        assert!(!check(
            json!({"serviceId": "s", "member": "m", "args": [], "instance": {"key": "k", "generation": 0}})
        ));
        assert!(!check(
            json!({"serviceId": "s", "member": "m", "args": [], "instance": {"key": "k", "generation": 1.5}})
        ));
        assert!(!check(json!({"serviceId": "s", "member": "m", "args": [], "instance": {"key": "", "generation": 1}})));
        assert!(!check(json!({"serviceId": "s", "member": "m", "args": [], "instance": null})));
    }
}
