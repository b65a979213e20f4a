//! The shape of a service call, as the real server checks it before anything else reads the call
//! (docs/PROTOCOL.md section 8, fencing): a map with exactly the keys `serviceId` (a non-empty
//! text), `member` (a non-empty text), `args` (an array) and, optionally, `instance` (a map of
//! exactly `key`, a non-empty text, and `generation`, an integer of at least 1).
//!
//! One walk of the payload's CBOR with the strict reader serves both users: the connection's
//! fence ([`is_service_call`]), which skips every part and keeps nothing, and the same fence
//! keeping where the parts lie ([`call_layout`], a [`CallLayout`] of byte offsets, for
//! [`ServerOptions::report_call_layouts`](super::ServerOptions::report_call_layouts) and the
//! high-level server), from which the parts are read without walking the call again. No value
//! tree is built.

use pi_protocol_runtime::{JsonTypes, Reader};

use crate::Payload;

/// What the walk found: `P` of each part (`()` when only the shape matters, an offset for a
/// [`CallLayout`]).
#[derive(Debug)]
struct Parts<P> {
    /// `serviceId`: not empty.
    service_id: P,
    /// `member`: not empty.
    member: P,
    /// `args`: an array.
    args: P,
    /// `instance`: `{key, generation}`, when present.
    instance: Option<P>,
}

/// What the walk keeps of a part whose shape it checks.
trait Kept: Sized {
    /// Takes the item at `r`'s position, which the walk has already checked the shape of. The
    /// last entry of the call is not walked (`last`): the payload was validated whole when it
    /// was decoded, and nothing after it needs `r`'s position.
    fn take(r: &mut Reader<'_>, last: bool) -> Option<Self>;
    /// Reads a name at `r`'s position: a non-empty text.
    fn name(r: &mut Reader<'_>) -> Option<Self>;
}

/// Nothing: the item is skipped.
impl Kept for () {
    #[inline]
    fn take(r: &mut Reader<'_>, last: bool) -> Option<()> {
        if last {
            Some(())
        } else {
            r.skip().ok()
        }
    }
    #[inline]
    fn name(r: &mut Reader<'_>) -> Option<()> {
        id(r)
    }
}

/// Where the item starts: its byte offset in the call's CBOR (the item is skipped).
impl Kept for u32 {
    #[inline]
    fn take(r: &mut Reader<'_>, last: bool) -> Option<u32> {
        let start = u32::try_from(r.position()).ok()?;
        if !last {
            r.skip().ok()?;
        }
        Some(start)
    }
    #[inline]
    fn name(r: &mut Reader<'_>) -> Option<u32> {
        let start = u32::try_from(r.position()).ok()?;
        id(r)?;
        Some(start)
    }
}

/// Whether `call` has the shape of a service call.
pub(crate) fn is_service_call(call: &Payload) -> bool {
    walk::<()>(call).is_some()
}

/// Where the parts of a service call lie in its payload's CBOR, as the connection's shape check
/// found them (docs/PROTOCOL.md section 8, fencing): where each part's CBOR item starts, 20
/// bytes whatever the call's size. Read the parts back with the call's own payload, without walking it again;
/// given another payload the readers return `None`, or parts of whatever lies at those offsets.
///
/// Reported with each admitted request when
/// [`ServerOptions::report_call_layouts`](super::ServerOptions::report_call_layouts) is on
/// ([`ServerEvent::ServiceRequest`](super::ServerEvent::ServiceRequest)).
///
/// ```
/// use pi_protocol::connection::{ServerConnection, ServerEvent, ServerOptions};
/// use pi_protocol::{encode_client_message, ClientHello, ClientMessage, Payload, Request, RequestId};
/// use pi_protocol::{RpcTarget, ServerId, ServerTarget};
///
/// let server_id = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?;
/// let mut server = ServerConnection::new(server_id.clone(), ServerOptions::default().report_call_layouts(true));
/// let call = Payload::from_json_str(r#"{"serviceId":"demo.echo","member":"echo","args":[1,2]}"#)?;
/// let request = Request::new(RequestId::new("1")?, RpcTarget::Server(ServerTarget::new(server_id)), call);
/// server.receive(&encode_client_message(&ClientMessage::Hello(ClientHello::new(8u32)))?);
/// server.receive(&encode_client_message(&ClientMessage::Request(request))?);
/// assert_eq!(server.poll_event(), Some(ServerEvent::Ready));
/// let Some(ServerEvent::ServiceRequest { request, layout }) = server.poll_event() else { panic!("a call") };
/// assert_eq!(layout.service_id(&request.call), Some("demo.echo"));
/// assert_eq!(layout.member(&request.call), Some("echo"));
/// assert_eq!(layout.args(&request.call), Some(Payload::from_json_str("[1,2]")?));
/// assert_eq!(layout.instance(&request.call), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallLayout {
    /// Where `serviceId`'s text starts.
    service_id: u32,
    /// Where `member`'s text starts.
    member: u32,
    /// Where the `args` array starts.
    args: u32,
    /// Where the `instance` map starts, when there is one.
    instance: Option<u32>,
}

impl CallLayout {
    /// `serviceId`, read from `call` (`None`: not the payload this layout was found in).
    #[must_use]
    pub fn service_id<'a>(&self, call: &'a Payload) -> Option<&'a str> {
        call.text_at(self.service_id as usize).ok()
    }

    /// `member`, read from `call`.
    #[must_use]
    pub fn member<'a>(&self, call: &'a Payload) -> Option<&'a str> {
        call.text_at(self.member as usize).ok()
    }

    /// `args`, the arguments array, as a payload of its own (a slice of `call`'s buffer when
    /// longer than 46 bytes, a copy otherwise).
    #[must_use]
    pub fn args(&self, call: &Payload) -> Option<Payload> {
        call.item_at(self.args as usize).ok()
    }

    /// `instance` (`{key, generation}`), when the call names one.
    #[must_use]
    pub fn instance(&self, call: &Payload) -> Option<Payload> {
        call.item_at(self.instance? as usize).ok()
    }

    /// Whether the call names an instance.
    #[must_use]
    pub fn has_instance(&self) -> bool {
        self.instance.is_some()
    }
}

/// Where the parts of `call` lie, or `None` when it is not a service call.
pub(crate) fn call_layout(call: &Payload) -> Option<CallLayout> {
    let Parts { service_id, member, args, instance } = walk::<u32>(call)?;
    Some(CallLayout { service_id, member, args, instance })
}

/// The one walk: the parts of `call`, keeping `P` of each.
#[inline]
fn walk<P: Kept>(call: &Payload) -> Option<Parts<P>> {
    let mut r = call.reader();
    if r.peek_json_type() != JsonTypes::OBJECT {
        return None;
    }
    let entries = r.enter_map().ok()?;
    if let Some(verdict) = in_wire_order::<P>(&mut r.clone(), entries) {
        return verdict;
    }
    let (mut service_id, mut member, mut args, mut instance) = (None, None, None, None);
    for entry in 0..entries {
        let last = entry + 1 == entries;
        // The key's bytes as they are (validated with the payload): only four keys are allowed.
        let key = r.read_key_raw().ok()?;
        let fresh = match key {
            b"serviceId" => service_id.replace(P::name(&mut r)?).is_none(),
            b"member" => member.replace(P::name(&mut r)?).is_none(),
            b"args" => args.replace(array(&mut r, last)?).is_none(),
            b"instance" => instance.replace(address(&mut r, last)?).is_none(),
            _ => false,
        };
        if !fresh {
            return None;
        }
    }
    Some(Parts { service_id: service_id?, member: member?, args: args?, instance })
}

/// The walk of a call written `{serviceId, member, args}` in that order, as the real pi-client,
/// Chord and this crate's client write it: each key is expected in turn rather than matched
/// against the four. `None` when the call is written otherwise (the general walk decides), or
/// the verdict: `Some(None)` when a part has the wrong shape, which the general walk would
/// refuse too.
#[inline]
fn in_wire_order<P: Kept>(r: &mut Reader<'_>, entries: usize) -> Option<Option<Parts<P>>> {
    if entries != 3 || !r.take_key(b"serviceId") {
        return None;
    }
    let Some(service_id) = P::name(r) else { return Some(None) };
    if !r.take_key(b"member") {
        return None;
    }
    let Some(member) = P::name(r) else { return Some(None) };
    if !r.take_key(b"args") {
        return None;
    }
    Some(array(r, true).map(|args| Parts { service_id, member, args, instance: None }))
}

/// A non-empty text. Its bytes are not checked for UTF-8 again: the call was validated whole
/// when its payload was decoded (only a `Payload`'s own bytes reach the walk).
fn id(r: &mut Reader<'_>) -> Option<()> {
    if r.peek_json_type() != JsonTypes::STRING {
        return None;
    }
    r.read_key_raw().ok().filter(|text| !text.is_empty()).map(|_| ())
}

/// An array, whatever its elements (not walked when it is the call's `last` entry).
#[inline]
fn array<P: Kept>(r: &mut Reader<'_>, last: bool) -> Option<P> {
    if r.peek_json_type() != JsonTypes::ARRAY {
        return None;
    }
    P::take(r, last)
}

/// An instance address `{key, generation}` (`key` a non-empty text, `generation` an integer of
/// at least 1, `2.0` included as JavaScript numbers count it).
fn address<P: Kept>(r: &mut Reader<'_>, last: bool) -> Option<P> {
    if r.peek_json_type() != JsonTypes::OBJECT {
        return None;
    }
    let mut probe = r.clone();
    let entries = probe.enter_map().ok()?;
    let (mut key, mut generation) = (false, false);
    for _ in 0..entries {
        let fresh = match probe.read_key_raw().ok()? {
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
    P::take(r, last)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Whether `value` is a service call; the check and the parts' walk must agree.
    fn check(value: serde_json::Value) -> bool {
        let call = Payload::from_value(&value).expect("a payload");
        let shape = is_service_call(&call);
        let layout = call_layout(&call);
        assert_eq!(layout.is_some(), shape, "{value}");
        if let Some(layout) = layout {
            // The parts read back are the call's own, as JSON sees them.
            let part = |key: &str| Payload::from_value(&value[key]).expect("a payload");
            assert_eq!(layout.service_id(&call), value["serviceId"].as_str(), "{value}");
            assert_eq!(layout.member(&call), value["member"].as_str(), "{value}");
            assert_eq!(layout.args(&call), Some(part("args")), "{value}");
            assert_eq!(layout.instance(&call), value.get("instance").map(|_| part("instance")), "{value}");
        }
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
        let layout = call_layout(&call).expect("a service call");
        assert_eq!((layout.service_id(&call), layout.member(&call)), (Some("demo.echo"), Some("echo")));
        let args = layout.args(&call).expect("the arguments");
        assert_eq!(args, payload(json!([1, {"a": [2]}, long])));
        assert_eq!((args.depth(), args.widest_container()), (3, 3));
        assert_eq!(layout.instance(&call), Some(payload(json!({"key": "k-1", "generation": 3}))));
        // Read against another payload: nothing (or whatever lies there), never a panic.
        assert_eq!((layout.service_id(&Payload::null()), layout.args(&Payload::null())), (None, None));
        let short = payload(json!({"serviceId": "s", "member": "m", "args": []}));
        let layout = call_layout(&short).expect("a service call");
        assert_eq!((layout.args(&short).expect("[]").as_cbor(), layout.instance(&short)), (&[0x80][..], None));
    }

    #[test]
    fn calls_in_wire_order_get_the_general_walk_s_verdicts() {
        // JSON text keeps its key order: these are `{serviceId, member, args}` as pi-client writes.
        let text = |json: &str| Payload::from_json_str(json).expect("a payload");
        let verdict = |json: &str| {
            let call = text(json);
            let shape = is_service_call(&call);
            assert_eq!(call_layout(&call).is_some(), shape, "{json}");
            shape
        };
        let call = text(r#"{"serviceId":"demo.echo","member":"echo","args":[1,"x",{"a":[2]}]}"#);
        let layout = call_layout(&call).expect("a service call");
        assert_eq!((layout.service_id(&call), layout.member(&call)), (Some("demo.echo"), Some("echo")));
        assert_eq!(layout.args(&call), Some(text(r#"[1,"x",{"a":[2]}]"#)));
        assert_eq!(layout.instance(&call), None);
        // Values that spell the keys: read as values, not as the next key.
        assert!(verdict(r#"{"serviceId":"member","member":"args","args":[]}"#));
        for bad in [
            r#"{"serviceId":"","member":"m","args":[]}"#,
            r#"{"serviceId":"s","member":"","args":[]}"#,
            r#"{"serviceId":1,"member":"m","args":[]}"#,
            r#"{"serviceId":"s","member":["m"],"args":[]}"#,
            r#"{"serviceId":"s","member":"m","args":{}}"#,
            r#"{"serviceId":"s","member":"m","args":"args"}"#,
            r#"{"serviceId":"s","member":"m","argz":[]}"#,
            r#"{"serviceId":"s","membre":"m","args":[]}"#,
            r#"{"serviceId":"s","member":"m","args":[],"extra":1}"#,
        ] {
            assert!(!verdict(bad), "{bad}");
        }
        // Other orders, and a fourth entry, go the general way.
        assert!(verdict(r#"{"member":"m","serviceId":"s","args":[]}"#));
        assert!(verdict(r#"{"serviceId":"s","args":[],"member":"m"}"#));
        let with_instance = text(r#"{"serviceId":"s","member":"m","args":[],"instance":{"key":"k","generation":1}}"#);
        let layout = call_layout(&with_instance).expect("a service call");
        assert_eq!(layout.instance(&with_instance), Some(text(r#"{"key":"k","generation":1}"#)));
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
