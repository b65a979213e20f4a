//! `pi_protocol::server::Server` end to end over Unix sockets (in temporary directories, cleaned
//! up) and TCP loopback: the Session behaviour of the reference server, cancellation, hidden
//! internal errors, updates before responses, stale-socket replacement, graceful shutdown.

#![cfg(feature = "tokio")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_protocol::server::{Call, CallError, CallResult, Context, Server, Service};
use pi_protocol::{AttachmentId, Payload, RpcTarget, SessionId, SessionTarget, SubscriptionId};
use serde_json::{json, Value};

#[path = "support/raw_peer.rs"]
mod raw_peer;
use raw_peer::{server_id, Peer, SERVER};

struct Test;

impl Service for Test {
    async fn call(&self, call: Call, cx: Context) -> CallResult {
        match call.member() {
            "echo" => Ok(Some(Payload::from_value(&json!({"echo": call.args_json()})).unwrap())),
            "wait" => {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(30)) => Ok(None),
                    () = cx.cancelled() => Err(CallError::new("stopped", "whatever the handler says")),
                }
            }
            "subscribe" => Ok(Some(
                Payload::from_value(&json!({"serviceId": "demo.counter", "mode": "singleton", "instances": []}))
                    .unwrap(),
            )),
            "unsubscribe" => Ok(None),
            "publish" => {
                let sub = SubscriptionId::new("sub-1").unwrap();
                cx.publish(sub, Payload::from_value(&json!({"n": 1})).unwrap());
                Ok(Some(Payload::null()))
            }
            "fail" => Err(CallError::internal("a secret detail")),
            "panic" => panic!("handler bug"),
            _ => Err(CallError::new("member_not_found", "no")),
        }
    }

    fn session_exists(&self, session: &SessionId) -> bool {
        session.as_str() == "session-1" || session.as_str() == "session-2"
    }
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pi-server-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn route(value: &Value) -> RpcTarget {
    let attachment = &value["attachment"];
    RpcTarget::Session(SessionTarget::new(
        server_id(),
        SessionId::new(attachment["sessionId"].as_str().unwrap()).unwrap(),
        AttachmentId::new(attachment["attachmentId"].as_str().unwrap()).unwrap(),
    ))
}

#[tokio::test]
async fn sessions_attach_and_detach_as_the_reference_over_a_unix_socket() {
    let dir = temp_dir("sessions");
    let path = pi_protocol::io::unix::socket_path(&dir, &server_id());
    let serving = Server::builder(server_id(), Test).build().serve_unix(&path).await.unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let mut peer = Peer::new(tokio::net::UnixStream::connect(&path).await.unwrap());
    assert_eq!(peer.hello().await, json!({"type": "hello", "version": 8, "serverId": SERVER}));

    peer.call("r1", "pi.session-management", "attach", json!(["session-1"])).await;
    let attachment = peer.next().await.unwrap();
    assert_eq!(attachment["type"], "attachment");
    assert_eq!(attachment["attachment"]["sessionId"], "session-1");
    let id = attachment["attachment"]["attachmentId"].as_str().unwrap();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    assert_eq!(&id[14..15], "4");
    assert_eq!(peer.next().await.unwrap(), json!({"type": "response", "id": "r1", "ok": true, "result": null}));
    // Attaching again to the same Session sends no new attachment.
    peer.call("r2", "pi.session-management", "attach", json!(["session-1"])).await;
    assert_eq!(peer.next().await.unwrap(), json!({"type": "response", "id": "r2", "ok": true, "result": null}));
    // A Session call on the attachment.
    peer.request_to("r3", route(&attachment), json!({"serviceId": "x", "member": "y", "args": []})).await;
    assert_eq!(peer.next().await.unwrap(), json!({"type": "response", "id": "r3", "ok": true, "result": {"ok": true}}));
    // Unknown session.
    peer.call("r4", "pi.session-management", "attach", json!(["nope"])).await;
    let refused = peer.next().await.unwrap();
    assert_eq!(refused["error"], json!({"code": "session_not_found", "message": "Unknown session: nope"}));
    // Detach: attachment null, then the response; the old route is now fenced.
    peer.call("r5", "pi.session-management", "detach", json!([])).await;
    assert_eq!(peer.next().await.unwrap(), json!({"type": "attachment", "attachment": null}));
    assert_eq!(peer.next().await.unwrap(), json!({"type": "response", "id": "r5", "ok": true, "result": null}));
    peer.request_to("r6", route(&attachment), json!({"serviceId": "x", "member": "y", "args": []})).await;
    assert_eq!(peer.next().await.unwrap()["error"]["code"], "session_not_attached");

    serving.shutdown().await;
    assert!(!path.exists(), "the socket is unlinked on shutdown");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `service` served over TCP loopback, with what its error hook saw, and a peer past its hello.
async fn serve_over_tcp<S: Service>(
    service: S,
) -> (pi_protocol::server::Serving, Peer<tokio::net::TcpStream>, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hook = Arc::clone(&seen);
    let serving = Server::builder(server_id(), service)
        .on_error(move |e| hook.lock().unwrap().push(e.to_string()))
        .build()
        .serve_tcp("127.0.0.1:0")
        .await
        .unwrap();
    let mut peer = Peer::new(tokio::net::TcpStream::connect(serving.local_addr()).await.unwrap());
    peer.hello().await;
    (serving, peer, seen)
}

#[tokio::test]
async fn cancel_internal_errors_panics_and_update_order_over_tcp() {
    let (serving, mut peer, seen) = serve_over_tcp(Test).await;
    peer.call("w", "demo.slow", "wait", json!([30000])).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let target = RpcTarget::Server(pi_protocol::ServerTarget::new(server_id()));
    peer.send(pi_protocol::ClientMessage::Cancel(pi_protocol::Cancel::new(
        pi_protocol::RequestId::new("w").unwrap(),
        target,
    )))
    .await;
    assert_eq!(peer.next().await.unwrap()["error"], json!({"code": "cancelled", "message": "RPC request cancelled"}));
    peer.call("f", "s", "fail", json!([])).await;
    assert_eq!(
        peer.next().await.unwrap()["error"],
        json!({"code": "internal_error", "message": "Internal server error"})
    );
    peer.call("p", "s", "panic", json!([])).await;
    assert_eq!(peer.next().await.unwrap()["error"]["code"], "internal_error");
    // An update of a subscription the connection does not hold is dropped.
    peer.call("u0", "s", "publish", json!([])).await;
    assert_eq!(peer.next().await.unwrap()["id"], "u0");
    peer.call("s1", "$chord.service", "subscribe", json!(["sub-1", "demo.counter", "singleton"])).await;
    assert_eq!(peer.next().await.unwrap()["id"], "s1");
    peer.call("s2", "$chord.service", "subscribe", json!(["sub-1", "demo.counter", "singleton"])).await;
    assert_eq!(
        peer.next().await.unwrap()["error"],
        json!({"code": "invalid_request", "message": "Duplicate service subscription sub-1"})
    );
    // Held: the update goes out before the response of the call that published it.
    peer.call("u", "s", "publish", json!([])).await;
    assert_eq!(peer.next().await.unwrap()["type"], "service_update");
    assert_eq!(peer.next().await.unwrap()["id"], "u");
    peer.call("x1", "$chord.service", "unsubscribe", json!(["sub-1"])).await;
    assert_eq!(peer.next().await.unwrap(), json!({"type": "response", "id": "x1", "ok": true}));
    // An unknown subscription is the provider's to refuse (ChordEndpoint does); this one
    // answers it, and the server only forgets the subscription.
    peer.call("x2", "$chord.service", "unsubscribe", json!(["sub-1"])).await;
    assert_eq!(peer.next().await.unwrap(), json!({"type": "response", "id": "x2", "ok": true}));
    peer.call("u2", "s", "publish", json!([])).await;
    assert_eq!(peer.next().await.unwrap()["id"], "u2", "no update after unsubscribe");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().any(|e| e.contains("a secret detail")), "{seen:?}");
    assert!(seen.iter().any(|e| e.contains("handler bug")), "{seen:?}");
    serving.shutdown().await;
}

#[tokio::test]
async fn a_stale_socket_is_replaced_and_a_live_one_refused() {
    let dir = temp_dir("stale");
    std::fs::create_dir_all(&dir).unwrap();
    let path = pi_protocol::io::unix::socket_path(&dir, &server_id());
    // A socket nobody listens on: stale.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let serving = Server::builder(server_id(), Test).build().serve_unix(&path).await.unwrap();
    // A second server on the same path: refused, the first keeps its socket.
    let error = Server::builder(server_id(), Test).build().serve_unix(&path).await.unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
    assert!(tokio::net::UnixStream::connect(&path).await.is_ok());
    serving.shutdown().await;
    assert!(!path.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn shutdown_lets_calls_in_flight_settle() {
    struct Slow;
    impl Service for Slow {
        async fn call(&self, _call: Call, _cx: Context) -> CallResult {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(Some(Payload::from_value(&json!("done")).unwrap()))
        }
    }
    let serving = Server::builder(server_id(), Slow).build().serve_tcp("127.0.0.1:0").await.unwrap();
    let mut peer = Peer::new(tokio::net::TcpStream::connect(serving.local_addr()).await.unwrap());
    peer.hello().await;
    peer.call("a", "s", "m", json!([])).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let shutdown = tokio::spawn(serving.shutdown());
    assert_eq!(peer.next().await.unwrap(), json!({"type": "response", "id": "a", "ok": true, "result": "done"}));
    assert_eq!(peer.next().await, None, "closed once settled");
    shutdown.await.unwrap();
}

/// Answers `now*` at once ([`Service::call_now`]), anything else through its future.
struct AtOnce;

impl Service for AtOnce {
    fn call_now(&self, call: &Call, cx: &Context) -> Option<CallResult> {
        match call.member() {
            "now" => Some(Ok(Some(Payload::object(&[("now", call.args())]).unwrap()))),
            "now_publish" => {
                cx.publish(SubscriptionId::new("sub-1").unwrap(), Payload::from_value(&json!({"n": 1})).unwrap());
                Some(Ok(None))
            }
            "subscribe" => Some(Ok(Some(
                Payload::from_value(&json!({"serviceId": "demo.counter", "mode": "singleton", "instances": []}))
                    .unwrap(),
            ))),
            "now_fail" => Some(Err(CallError::internal("a secret detail"))),
            "now_panic" => panic!("handler bug at once"),
            _ => None,
        }
    }

    async fn call(&self, call: Call, _cx: Context) -> CallResult {
        // Never reached for what `call_now` answered.
        assert!(!call.member().starts_with("now"), "{} went to call", call.member());
        Ok(Some(Payload::from_value(&json!({"later": call.member()})).unwrap()))
    }
}

#[tokio::test]
async fn calls_answered_at_once_skip_the_future_and_keep_every_rule() {
    let (serving, mut peer, seen) = serve_over_tcp(AtOnce).await;
    peer.call("1", "s", "now", json!([1, "a"])).await;
    assert_eq!(peer.next().await.unwrap()["result"], json!({"now": [1, "a"]}));
    peer.call("2", "s", "later", json!([])).await;
    assert_eq!(peer.next().await.unwrap()["result"], json!({"later": "later"}));
    // Hidden failures and panics as for `call`; the hook sees both.
    peer.call("3", "s", "now_fail", json!([])).await;
    assert_eq!(
        peer.next().await.unwrap()["error"],
        json!({"code": "internal_error", "message": "Internal server error"})
    );
    peer.call("4", "s", "now_panic", json!([])).await;
    assert_eq!(peer.next().await.unwrap()["error"]["code"], "internal_error");
    // A subscription answered at once is followed, and an update published at once goes out
    // before the response of its call.
    peer.call("5", "$chord.service", "subscribe", json!(["sub-1", "demo.counter", "singleton"])).await;
    assert_eq!(peer.next().await.unwrap()["id"], "5");
    peer.call("6", "s", "now_publish", json!([])).await;
    assert_eq!(peer.next().await.unwrap()["type"], "service_update");
    assert_eq!(peer.next().await.unwrap(), json!({"type": "response", "id": "6", "ok": true}));
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().any(|e| e.contains("a secret detail")), "{seen:?}");
    assert!(seen.iter().any(|e| e.contains("handler bug at once")), "{seen:?}");
    serving.shutdown().await;
}

#[tokio::test]
async fn with_the_shape_check_off_the_server_reads_the_call_itself() {
    let options = pi_protocol::connection::ServerOptions::default().invalid_call(None);
    let serving = Server::builder(server_id(), AtOnce).options(options).build().serve_tcp("127.0.0.1:0").await.unwrap();
    let mut peer = Peer::new(tokio::net::TcpStream::connect(serving.local_addr()).await.unwrap());
    peer.hello().await;
    // The connection admits anything; the server finds the parts by the same walk.
    peer.call("1", "s", "now", json!([{"a": 1}])).await;
    assert_eq!(peer.next().await.unwrap()["result"], json!({"now": [{"a": 1}]}));
    let target = RpcTarget::Server(pi_protocol::ServerTarget::new(server_id()));
    peer.request_to("2", target, json!({"serviceId": "s", "member": "now"})).await;
    assert_eq!(
        peer.next().await.unwrap()["error"],
        json!({"code": "invalid_request", "message": "Invalid service call"})
    );
    serving.shutdown().await;
}
