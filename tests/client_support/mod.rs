//! An in-process Pi server for the Client's tests, on the sans-IO `ServerConnection` run by
//! `ServerDriver`, that reports what it saw; and a temporary directory that cleans up.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_protocol::connection::{ServerEvent, ServerOptions};
use pi_protocol::io::ServerDriver;
use pi_protocol::{
    AttachmentId, ErrorBody, ErrorCode, Payload, RequestId, RpcTarget, ServerConnection, ServerId, SessionId,
    SessionTarget, SubscriptionId,
};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

pub const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
pub const OTHER: &str = "9c858901-8a57-4791-81fe-4c455b099bc9";

pub fn server_id() -> ServerId {
    ServerId::new(SERVER).unwrap()
}

pub fn other_id() -> ServerId {
    ServerId::new(OTHER).unwrap()
}

/// What the server saw, in order, tagged with the connection's number (1, 2, ...).
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    Request { conn: usize, id: RequestId, target: RpcTarget, call: Value },
    Cancel { conn: usize, id: RequestId },
    Closed { conn: usize },
}

pub fn error(code: &str, message: &str) -> ErrorBody {
    ErrorBody::new(ErrorCode::new(code).unwrap(), message)
}

fn payload(value: Value) -> Payload {
    Payload::from_value(&value).unwrap()
}

/// The services:
/// - `demo.echo echo(...args)` -> `{"echo": args}`;
/// - `demo.fail fail()` -> error `boom` "it broke";
/// - `demo.slow wait(ms)` -> `{"waitedMs": ms}` after `ms`, or `cancelled` on a cancel;
/// - `demo.flood flood(subscriptionId, count, size)` -> `count` updates of a `size`-character
///   string, then `null`;
/// - `demo.hangup hangup()` -> the server drops the connection without answering;
/// - `pi.session-management attach(id)` for `session-1`/`session-2` (others
///   `session_not_found`), `detach()`;
/// - every Session call -> `{"ok": true, "session": sessionId}`.
pub async fn serve<IO>(io: IO, server_id: ServerId, conn: usize, seen: mpsc::UnboundedSender<Seen>)
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let mut driver = ServerDriver::new(io, ServerConnection::new(server_id.clone(), ServerOptions::default()));
    let (done_tx, mut done) = mpsc::unbounded_channel::<(RequestId, u64)>();
    let mut waiting: std::collections::HashMap<RequestId, tokio::task::JoinHandle<()>> = Default::default();
    let mut attachments = 0;
    loop {
        let event = tokio::select! {
            event = driver.next_event() => event,
            Some((id, ms)) = done.recv() => {
                if waiting.remove(&id).is_some() {
                    let _ = driver.connection_mut().respond(&id, Ok(Some(payload(json!({"waitedMs": ms})))));
                }
                continue;
            }
        };
        let Some(event) = event else { break };
        match event {
            ServerEvent::Cancel { id } => {
                let _ = seen.send(Seen::Cancel { conn, id: id.clone() });
                if let Some(timer) = waiting.remove(&id) {
                    timer.abort();
                    let _ = driver.connection_mut().respond(&id, Err(error("cancelled", "RPC request cancelled")));
                }
            }
            ServerEvent::Closing { .. } => {
                for (id, timer) in waiting.drain() {
                    timer.abort();
                    let _ = driver.connection_mut().respond(&id, Err(error("cancelled", "closing")));
                }
            }
            ServerEvent::Closed { .. } => {
                let _ = seen.send(Seen::Closed { conn });
            }
            ServerEvent::Request(request) => {
                let call = request.call.to_value();
                let _ = seen.send(Seen::Request {
                    conn,
                    id: request.id.clone(),
                    target: request.target.clone(),
                    call: call.clone(),
                });
                let service = call["serviceId"].as_str().unwrap_or("").to_owned();
                let member = call["member"].as_str().unwrap_or("").to_owned();
                let args = call["args"].clone();
                let connection = driver.connection_mut();
                let answer = match (&request.target, service.as_str(), member.as_str()) {
                    (RpcTarget::Session(route), _, _) => {
                        Ok(Some(json!({"ok": true, "session": route.session_id.as_str()})))
                    }
                    (_, "demo.echo", "echo") => Ok(Some(json!({"echo": args}))),
                    (_, "demo.fail", "fail") => Err(error("boom", "it broke")),
                    (_, "demo.slow", "wait") => {
                        let ms = args[0].as_u64().unwrap_or(0);
                        let (id, done_tx) = (request.id.clone(), done_tx.clone());
                        let timer = tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                            let _ = done_tx.send((id, ms));
                        });
                        waiting.insert(request.id.clone(), timer);
                        continue;
                    }
                    (_, "demo.flood", "flood") => {
                        let subscription = SubscriptionId::new(args[0].as_str().unwrap()).unwrap();
                        let (count, size) = (args[1].as_u64().unwrap(), args[2].as_u64().unwrap() as usize);
                        for n in 0..count {
                            let update = payload(json!({"n": n, "text": "x".repeat(size)}));
                            if driver.connection_mut().publish_update(subscription.clone(), update).is_err() {
                                break;
                            }
                            // Written as it goes, so the server's own queue stays small.
                            if driver.connection().pending_transmit_len() > 256 * 1024 && driver.flush().await.is_err()
                            {
                                break;
                            }
                        }
                        let _ = driver.connection_mut().respond(&request.id, Ok(None));
                        continue;
                    }
                    (_, "demo.hangup", "hangup") => return,
                    (_, "pi.session-management", "attach") => match args[0].as_str() {
                        Some(session @ ("session-1" | "session-2")) => {
                            attachments += 1;
                            let route = SessionTarget::new(
                                server_id.clone(),
                                SessionId::new(session).unwrap(),
                                AttachmentId::new(format!("att-{conn}-{attachments}")).unwrap(),
                            );
                            connection.set_attachment(Some(route)).unwrap();
                            Ok(None)
                        }
                        _ => Err(error("session_not_found", "No such session")),
                    },
                    (_, "pi.session-management", "detach") => {
                        connection.set_attachment(None).unwrap();
                        Ok(None)
                    }
                    _ => Err(error("not_found", "No such service member")),
                };
                let _ = driver.connection_mut().respond(&request.id, answer.map(|v| v.map(payload)));
            }
            _ => {}
        }
    }
}

/// A server on one end of a duplex; the other end and what the server sees.
pub fn duplex_server() -> (tokio::io::DuplexStream, mpsc::UnboundedReceiver<Seen>) {
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (seen_tx, seen) = mpsc::unbounded_channel();
    tokio::spawn(serve(server, server_id(), 1, seen_tx));
    (client, seen)
}

/// Waits for the next thing the server saw that `keep` keeps (at most 5 s).
pub async fn next_seen(seen: &mut mpsc::UnboundedReceiver<Seen>, keep: impl Fn(&Seen) -> bool) -> Seen {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let item = seen.recv().await.expect("the server's log ended");
            if keep(&item) {
                return item;
            }
        }
    })
    .await
    .expect("the server saw nothing of the kind within 5 s")
}

/// A directory under the system's temporary directory, removed with everything in it on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("pi-client-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Serves every connection accepted on a Unix socket at `path` as the server `announced`.
pub fn unix_server(path: &Path, announced: ServerId) -> (tokio::task::JoinHandle<()>, mpsc::UnboundedReceiver<Seen>) {
    let listener = tokio::net::UnixListener::bind(path).unwrap();
    let (seen_tx, seen) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut conn = 0;
        while let Ok((stream, _)) = listener.accept().await {
            conn += 1;
            tokio::spawn(serve(stream, announced.clone(), conn, seen_tx.clone()));
        }
    });
    (task, seen)
}
