//! The shape of a service call, as the real server checks it before anything else reads the call
//! (docs/PROTOCOL.md section 8, fencing): a map with exactly the keys `serviceId` (a non-empty
//! text), `member` (a non-empty text), `args` (an array) and, optionally, `instance` (a map of
//! exactly `key`, a non-empty text, and `generation`, an integer of at least 1).
//!
//! One walk of the payload's CBOR with the strict reader serves both users: the connection's
//! fence ([`is_service_call`]), which skips `args` and `instance` and keeps nothing, and the
//! high-level server, which keeps the parts ([`ServiceCallParts`]): the two names borrowed,
//! `args` and `instance` as payloads that slice the call's buffer (or copy 46 bytes or less).
//! No value tree is built.

use pi_protocol_runtime::{JsonTypes, Reader};

use crate::Payload;

/// A service call's parts, borrowed from its payload; `P` is what is kept of `args` and
/// `instance` (a [`Payload`], or `()` when only the shape matters).
// Without the high-level server only the shape check runs, which reads none of the fields.
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct Parts<'a, P> {
    /// `serviceId`: not empty.
    pub(crate) service_id: &'a str,
    /// `member`: not empty.
    pub(crate) member: &'a str,
    /// `args`: an array.
    pub(crate) args: P,
    /// `instance`: `{key, generation}`, when present.
    pub(crate) instance: Option<P>,
}

/// A service call's parts with `args` and `instance` as payloads.
#[cfg(any(feature = "tokio", test))]
pub(crate) type ServiceCallParts<'a> = Parts<'a, Payload>;

/// What the walk keeps of an item whose shape it has checked.
trait Kept<'a>: Sized {
    /// Takes the item at `r`'s position, which the walk has already checked the shape of.
    fn take(r: &mut Reader<'a>) -> Option<Self>;
}

/// Nothing: the item is skipped.
impl<'a> Kept<'a> for () {
    #[inline]
    fn take(r: &mut Reader<'a>) -> Option<()> {
        r.skip().ok()
    }
}

/// The item as a payload.
#[cfg(any(feature = "tokio", test))]
impl<'a> Kept<'a> for Payload {
    #[inline]
    fn take(r: &mut Reader<'a>) -> Option<Payload> {
        pi_protocol_runtime::Decode::decode(r).ok()
    }
}

/// Whether `call` has the shape of a service call.
pub(crate) fn is_service_call(call: &Payload) -> bool {
    walk::<()>(call).is_some()
}

/// The parts of `call`, or `None` when it is not a service call.
#[cfg(any(feature = "tokio", test))]
pub(crate) fn service_call_parts(call: &Payload) -> Option<ServiceCallParts<'_>> {
    walk(call)
}

/// The one walk: the parts of `call`, keeping `P` of `args` and `instance`.
#[inline]
fn walk<'a, P: Kept<'a>>(call: &'a Payload) -> Option<Parts<'a, P>> {
    let mut r = call.reader();
    if r.peek_json_type() != JsonTypes::OBJECT {
        return None;
    }
    let entries = r.enter_map().ok()?;
    let (mut service_id, mut member, mut args, mut instance) = (None, None, None, None);
    for _ in 0..entries {
        let key = r.read_key_bytes().ok()?;
        let fresh = match key {
            b"serviceId" => service_id.replace(id(&mut r)?).is_none(),
            b"member" => member.replace(id(&mut r)?).is_none(),
            b"args" => args.replace(array(&mut r)?).is_none(),
            b"instance" => instance.replace(address(&mut r)?).is_none(),
            _ => false,
        };
        if !fresh {
            return None;
        }
    }
    Some(Parts { service_id: service_id?, member: member?, args: args?, instance })
}

/// A non-empty text.
fn id<'a>(r: &mut Reader<'a>) -> Option<&'a str> {
    if r.peek_json_type() != JsonTypes::STRING {
        return None;
    }
    r.read_text().ok().filter(|text| !text.is_empty())
}

/// An array, whatever its elements.
#[inline]
fn array<'a, P: Kept<'a>>(r: &mut Reader<'a>) -> Option<P> {
    if r.peek_json_type() != JsonTypes::ARRAY {
        return None;
    }
    P::take(r)
}

/// An instance address `{key, generation}` (`key` a non-empty text, `generation` an integer of
/// at least 1, `2.0` included as JavaScript numbers count it).
fn address<'a, P: Kept<'a>>(r: &mut Reader<'a>) -> Option<P> {
    if r.peek_json_type() != JsonTypes::OBJECT {
        return None;
    }
    let mut probe = r.clone();
    let entries = probe.enter_map().ok()?;
    let (mut key, mut generation) = (false, false);
    for _ in 0..entries {
        let fresh = match probe.read_key_bytes().ok()? {
            b"key" => {
                id(&mut probe)?;
                !std::mem::replace(&mut key, true)
            }
            b"generation" => {
                if probe.peek_json_type() != JsonTypes::NUMBER {
                    return None;
                }
                let n = probe.read_number().ok()?;
                if !(n >= 1.0 && n.fract() == 0.0) {
                    return None;
                }
                !std::mem::replace(&mut generation, true)
            }
            _ => false,
        };
        if !fresh {
            return None;
        }
    }
    if !(key && generation) {
        return None;
    }
    P::take(r)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Whether `value` is a service call; the check and the parts' walk must agree.
    fn check(value: serde_json::Value) -> bool {
        let call = Payload::from_value(&value).expect("a payload");
        let shape = is_service_call(&call);
        assert_eq!(service_call_parts(&call).is_some(), shape, "{value}");
        shape
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
    fn the_parts_are_the_call_s_own() {
        let payload = |value| Payload::from_value(&value).expect("a payload");
        // Arguments past the inline length come out as a slice of the call's buffer.
        let long = "x".repeat(80);
        let call = payload(json!({
            "instance": {"key": "k-1", "generation": 3},
            "member": "echo",
            "args": [1, {"a": [2]}, long],
            "serviceId": "demo.echo",
        }));
        let parts = service_call_parts(&call).expect("a service call");
        assert_eq!((parts.service_id, parts.member), ("demo.echo", "echo"));
        assert_eq!(parts.args, payload(json!([1, {"a": [2]}, long])));
        assert_eq!((parts.args.depth(), parts.args.widest_container()), (3, 3));
        assert_eq!(parts.instance, Some(payload(json!({"key": "k-1", "generation": 3}))));
        let short = payload(json!({"serviceId": "s", "member": "m", "args": []}));
        let parts = service_call_parts(&short).expect("a service call");
        assert_eq!((parts.args.as_cbor(), parts.instance), (&[0x80][..], None));
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
        assert!(!check(json!({"member": "m", "args": []})));
        assert!(!check(json!({"serviceId": "s", "args": []})));
        assert!(!check(json!({"serviceId": "s", "member": ["m"], "args": []})));
        assert!(!check(json!({"serviceId": "s", "member": "m", "args": [], "instance": []})));
        assert!(!check(json!({"serviceId": "s", "member": "m", "args": [], "instance": {"generation": 1}})));
        assert!(!check(
            json!({"serviceId": "s", "member": "m", "args": [], "instance": {"key": "k", "generation": "1"}})
        ));
        assert!(!check(json!({"serviceId": "s", "member": "m", "args": [], "instance": {"key": 1, "generation": 1}})));
        assert!(!check(json!({"serviceId": "s", "member": "m", "args": [],
            "instance": {"key": "k", "generation": 1, "extra": 1}})));
    }
}
