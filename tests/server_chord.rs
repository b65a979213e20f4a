//! `pi_protocol::server::ChordEndpoint` end to end over in-memory streams: the catalogue, a
//! subscription's snapshot, its updates after state changes (followed with pi-chord's
//! `StateRegistry`, the consumer's decoder), unsubscribe, Chord's refusal codes, the
//! subscription bound, and the server's rules for subscribe answers on any target.
#![cfg(all(feature = "tokio", feature = "chord"))]

use std::sync::Arc;

use pi_protocol::chord::subscription::{Applied, StateRegistry};
use pi_protocol::chord::wire::{Snapshot, Update};
use pi_protocol::server::{Call, CallError, CallResult, ChordEndpoint, ChordService, Context, Server, Service};
use pi_protocol::{AttachmentId, Payload, RpcTarget, SessionId, SessionTarget};
use serde_json::{json, Value};
use tokio::io::DuplexStream;

#[path = "support/raw_peer.rs"]
mod raw_peer;
use raw_peer::{server_id, Peer};

struct App {
    chord: ChordEndpoint,
}

impl Service for App {
    async fn call(&self, call: Call, cx: Context) -> CallResult {
        if let Some(answer) = self.chord.answer(&call, &cx) {
            return answer;
        }
        match (call.service_id(), call.member(), &call.args_json()[..]) {
            ("demo.counter", "bump", [n]) => {
                let n = n.as_i64().unwrap_or(0);
                self.chord.update("demo.counter", "count", |count| {
                    count["value"] = json!(count["value"].as_i64().unwrap() + n);
                    count["log"] = json!(format!("{}+{n}", count["log"].as_str().unwrap()));
                })?;
                Ok(None)
            }
            ("demo.counter", "bump", _) => Err(CallError::remote(
                pi_protocol::chord::wire::RemoteServiceErrorCode::ServiceInvalidValue,
                "bump(n) takes one number",
            )),
            ("demo.echo", "echo", _) => Ok(Some(Payload::from_value(&json!({"echo": call.args_json()})).unwrap())),
            _ => Err(CallError::internal("not reached")),
        }
    }

    fn session_exists(&self, session: &SessionId) -> bool {
        session.as_str() == "session-1"
    }
}

fn endpoint(max_subscriptions: usize) -> ChordEndpoint {
    ChordEndpoint::builder()
        .service(ChordService::new("demo.echo").method("echo"))
        .service(ChordService::new("demo.counter").state("count", json!({"value": 0, "log": ""})).method("bump"))
        .max_subscriptions(max_subscriptions)
        .build()
        .unwrap()
}

/// A server on `chord`, and a function that connects a peer to it (handshake done).
fn serve(
    chord: ChordEndpoint,
) -> impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Peer<DuplexStream>>>> {
    let server = Arc::new(Server::builder(server_id(), App { chord }).build());
    move || {
        let server = Arc::clone(&server);
        Box::pin(async move {
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move { server.serve_stream(theirs).await });
            let mut peer = Peer::new(ours);
            peer.hello().await;
            peer
        })
    }
}

fn error(code: &str, message: &str) -> Value {
    json!({"code": code, "message": message})
}

#[tokio::test]
async fn catalogue_subscribe_updates_and_unsubscribe() {
    let chord = endpoint(16);
    let connect = serve(chord.clone());
    let mut a = connect().await;
    a.call("c", "$chord.service", "catalogue", json!([])).await;
    assert_eq!(
        a.next().await.unwrap(),
        json!({"type": "response", "id": "c", "ok": true, "result": [
            {"serviceId": "demo.echo", "mode": "singleton"}, {"serviceId": "demo.counter", "mode": "singleton"}]})
    );

    a.call("s", "$chord.service", "subscribe", json!(["sub-1", "demo.counter", "singleton"])).await;
    let answer = a.next().await.unwrap();
    // Members sorted by name, the state as one replacement at its sequence.
    assert_eq!(
        answer["result"],
        json!({"serviceId": "demo.counter", "mode": "singleton", "instances": [{"members": [
            {"name": "bump", "kind": "method"},
            {"name": "count", "kind": "state", "sequence": 0, "ops": [["r", {"value": 0, "log": ""}]]}]}]})
    );
    let mut registry = StateRegistry::new();
    let snapshot = Snapshot::from_payload(&Payload::from_value(&answer["result"]).unwrap()).unwrap();
    assert_eq!(registry.install(&snapshot).unwrap()[0].value, json!({"value": 0, "log": ""}));

    // Each bump: the update first, then the bump's response (no result). Path ids as Chord's.
    let wire = [
        json!([["s", ["value"], 2], ["a", ["log"], "+2"]]),
        json!([["#", 0, ["value"]], ["s", 0, 5], ["#", 1, ["log"]], ["a", 1, "+3"]]),
        json!([["s", 0, 9], ["a", 1, "+4"]]),
    ];
    for (i, (n, ops)) in [2, 3, 4].into_iter().zip(&wire).enumerate() {
        a.call("b", "demo.counter", "bump", json!([n])).await;
        let update = a.next().await.unwrap();
        assert_eq!(update["type"], "service_update");
        assert_eq!(update["subscriptionId"], "sub-1");
        assert_eq!(update["update"], json!({"type": "state", "member": "count", "sequence": i + 1, "ops": ops}));
        let update = Update::from_payload(&Payload::from_value(&update["update"]).unwrap()).unwrap();
        let Applied::State(change) = registry.apply(&update).unwrap() else { panic!("a state update") };
        assert_eq!(change.sequence, i as i64 + 1);
        assert_eq!(&change.value, &chord.value("demo.counter", "count").unwrap());
        assert_eq!(a.next().await.unwrap(), json!({"type": "response", "id": "b", "ok": true}));
    }
    assert_eq!(registry.value(None, "count"), Some(&json!({"value": 9, "log": "+2+3+4"})));
    // No change, no update, same sequence.
    assert_eq!(chord.set("demo.counter", "count", json!({"value": 9, "log": "+2+3+4"})), Ok(3));

    // A second connection subscribing late: the current sequence, inline paths again; a bump
    // on it reaches both connections.
    let mut b = connect().await;
    b.call("s", "$chord.service", "subscribe", json!(["sub-1", "demo.counter", "singleton"])).await;
    let late = b.next().await.unwrap();
    assert_eq!(late["result"]["instances"][0]["members"][1]["sequence"], 3);
    b.call("b", "demo.counter", "bump", json!([10])).await;
    let on_b = b.next().await.unwrap();
    assert_eq!(on_b["update"]["ops"], json!([["s", ["value"], 19], ["a", ["log"], "+10"]]));
    assert_eq!(on_b["update"]["sequence"], 4);
    assert_eq!(b.next().await.unwrap()["id"], "b");
    let on_a = a.next().await.unwrap();
    assert_eq!(on_a["update"]["ops"], json!([["s", 0, 19], ["a", 1, "+10"]]));

    // Unsubscribe: no result, no more updates; again: hidden as internal_error.
    a.call("u", "$chord.service", "unsubscribe", json!(["sub-1"])).await;
    assert_eq!(a.next().await.unwrap(), json!({"type": "response", "id": "u", "ok": true}));
    a.call("u2", "$chord.service", "unsubscribe", json!(["sub-1"])).await;
    assert_eq!(a.next().await.unwrap()["error"], error("internal_error", "Internal server error"));
    a.call("b", "demo.counter", "bump", json!([1])).await;
    assert_eq!(a.next().await.unwrap(), json!({"type": "response", "id": "b", "ok": true}), "no update after it");
    assert_eq!(b.next().await.unwrap()["update"]["sequence"], 5, "b still subscribed");
}

#[tokio::test]
async fn chord_refusals_keep_their_codes() {
    let connect = serve(endpoint(16));
    let mut peer = connect().await;
    let cases = [
        ("demo.nope", "x", json!([]), error("service_not_allowed", "Remote service demo.nope is not allowlisted")),
        (
            "$chord.service",
            "catalogue",
            json!(["extra"]),
            error("service_not_allowed", "Remote service $chord.service is not allowlisted"),
        ),
        (
            "$chord.service",
            "subscribe",
            json!(["s", "demo.nope", "singleton"]),
            error("service_not_allowed", "Remote service demo.nope is not allowlisted"),
        ),
        (
            "$chord.service",
            "subscribe",
            json!(["s", "demo.counter", "keyed"]),
            error("service_mode_mismatch", "Remote service demo.counter is singleton, not keyed"),
        ),
        (
            "demo.echo",
            "shout",
            json!([]),
            error("service_member_not_found", "Unknown remote service member demo.echo.shout"),
        ),
        (
            "demo.counter",
            "count",
            json!([]),
            error("service_member_mismatch", "Remote service member demo.counter.count is not a method"),
        ),
        // A method's own Chord code passes through.
        ("demo.counter", "bump", json!(["x", 1]), error("service_invalid_value", "bump(n) takes one number")),
    ];
    for (i, (service, member, args, expected)) in cases.into_iter().enumerate() {
        let id = format!("r{i}");
        peer.call(&id, service, member, args).await;
        let answer = peer.next().await.unwrap();
        assert_eq!(answer["id"], id.as_str());
        assert_eq!(answer["error"], expected, "{service}.{member}");
    }
    let call =
        json!({"serviceId": "demo.echo", "member": "echo", "args": [], "instance": {"key": "k", "generation": 1}});
    peer.request_to("i", RpcTarget::Server(pi_protocol::ServerTarget::new(server_id())), call).await;
    assert_eq!(
        peer.next().await.unwrap()["error"],
        error("service_mode_mismatch", "Remote service demo.echo is singleton")
    );
    peer.call("e", "demo.echo", "echo", json!([1])).await;
    assert_eq!(peer.next().await.unwrap()["result"], json!({"echo": [1]}));
}

#[tokio::test]
async fn subscriptions_per_connection_are_bounded() {
    let chord = endpoint(2);
    let connect = serve(chord.clone());
    let mut peer = connect().await;
    for sub in ["a", "b"] {
        peer.call(sub, "$chord.service", "subscribe", json!([sub, "demo.counter", "singleton"])).await;
        assert_eq!(peer.next().await.unwrap()["ok"], true);
    }
    peer.call("c", "$chord.service", "subscribe", json!(["c", "demo.counter", "singleton"])).await;
    assert_eq!(peer.next().await.unwrap()["error"], error("internal_error", "Internal server error"));
    // Freed by an unsubscribe; another connection has its own count.
    peer.call("u", "$chord.service", "unsubscribe", json!(["a"])).await;
    assert_eq!(peer.next().await.unwrap()["ok"], true);
    peer.call("c", "$chord.service", "subscribe", json!(["c", "demo.counter", "singleton"])).await;
    assert_eq!(peer.next().await.unwrap()["ok"], true);
    let mut other = connect().await;
    other.call("a", "$chord.service", "subscribe", json!(["a", "demo.counter", "singleton"])).await;
    assert_eq!(other.next().await.unwrap()["ok"], true);
    assert_eq!(chord.subscription_count(), 3);
    // A closed connection's subscriptions go at the next state change.
    drop(peer);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        chord
            .update("demo.counter", "count", |count| count["value"] = json!(count["value"].as_i64().unwrap() + 1))
            .unwrap();
        if chord.subscription_count() == 1 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "still {} subscriptions", chord.subscription_count());
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(other.next().await.unwrap()["type"], "service_update");
}

#[tokio::test]
async fn a_subscribe_on_a_session_must_be_answered_with_a_snapshot() {
    let connect = serve(endpoint(16));
    let mut peer = connect().await;
    peer.call("a", "pi.session-management", "attach", json!(["session-1"])).await;
    let attachment = peer.next().await.unwrap()["attachment"].clone();
    assert_eq!(peer.next().await.unwrap()["id"], "a");
    let route = RpcTarget::Session(SessionTarget::new(
        server_id(),
        SessionId::new(attachment["sessionId"].as_str().unwrap()).unwrap(),
        AttachmentId::new(attachment["attachmentId"].as_str().unwrap()).unwrap(),
    ));
    // The Session answers `{"ok": true}` (the default session_call), which is no snapshot: the
    // reference server's snapshot parser throws, hidden as internal_error.
    let subscribe =
        json!({"serviceId": "$chord.service", "member": "subscribe", "args": ["sub-1", "demo.counter", "singleton"]});
    peer.request_to("s1", route.clone(), subscribe).await;
    assert_eq!(peer.next().await.unwrap()["error"], error("internal_error", "Internal server error"));
    peer.request_to("s2", route, json!({"serviceId": "demo.session", "member": "ping", "args": []})).await;
    assert_eq!(peer.next().await.unwrap()["result"], json!({"ok": true}));
}

/// A service whose subscribe answers no result.
struct NoSnapshot;

impl Service for NoSnapshot {
    async fn call(&self, _call: Call, _cx: Context) -> CallResult {
        Ok(None)
    }
}

#[tokio::test]
async fn a_subscribe_answered_with_no_result_is_invalid_request() {
    let server = Server::builder(server_id(), NoSnapshot).build();
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move { server.serve_stream(theirs).await });
    let mut peer = Peer::new(ours);
    peer.hello().await;
    peer.call("s", "$chord.service", "subscribe", json!(["sub-1", "demo.counter", "singleton"])).await;
    assert_eq!(
        peer.next().await.unwrap()["error"],
        error("invalid_request", "Service subscription did not return a snapshot")
    );
}

#[test]
fn declarations_are_checked() {
    let build = |services: Vec<ChordService>| {
        services.into_iter().fold(ChordEndpoint::builder(), |b, s| b.service(s)).build().map(|_| ())
    };
    assert!(build(vec![ChordService::new("a").method("m")]).is_ok());
    for bad in [
        vec![ChordService::new("").method("m")],
        vec![ChordService::new("a")],
        vec![ChordService::new("a").method("m"), ChordService::new("a").method("n")],
        vec![ChordService::new("$chord.service").method("m")],
        vec![ChordService::new("a").method("m").state("m", json!(0))],
        vec![ChordService::new("a").method("")],
    ] {
        assert!(matches!(build(bad), Err(pi_protocol::server::ChordError::Declaration(_))));
    }
    let chord = ChordEndpoint::builder().service(ChordService::new("a").method("m")).build().unwrap();
    assert!(matches!(chord.set("a", "m", json!(1)), Err(pi_protocol::server::ChordError::UnknownState { .. })));
    assert_eq!(chord.value("a", "nope"), None);
}
