//! A Pi protocol version 8 server over TCP, built on the sans-IO [`ServerConnection`] and tokio.
//!
//! ```text
//! cargo run --example server --features tokio -- --listen 127.0.0.1:7878
//! ```
//!
//! Flags: `--listen ADDR` (default `127.0.0.1:7878`; port 0 picks a free port),
//! `--server-id UUID` (default `3b241101-e2bb-4255-8caf-4136c566a962`), `--connections N` (exit
//! after N connections have been served; default: serve forever), `--quiet` (no event lines, for
//! load measurements).
//!
//! The first line on stdout is `listening on ADDR`; after it, one JSON object a line for each
//! connection event (`ready`, `request`, `cancel`, `fenced`, `closing`, `closed`), with `conn`
//! numbering the connections from 1.
//!
//! What it does, per connection (the rules come from [`ServerConnection`]; the services are a
//! tiny stand-in for a real application):
//! - handshake: `hello` for version 8 with its `serverId`; `hello_error` for any other version,
//!   then it closes the connection;
//! - fencing: a request naming another `serverId`, or a Session route that is not the current
//!   attachment, gets an error response from the connection itself;
//! - `$chord.service` `catalogue` lists the services; `subscribe [subscriptionId, ...]` answers
//!   with a snapshot and then streams three `service_update`s; `unsubscribe` answers `null`;
//! - `sessions` `attach [sessionId]` publishes an `attachment` route (`s-1` and `s-2` exist;
//!   others get `not_found`) and `detach` clears it (`attachment: null`);
//! - `session` `echo` answers with its arguments; `session` `wait [ms]` answers after `ms`
//!   milliseconds (default 5000) unless the client cancels it first, which answers `cancelled`.

use std::collections::HashMap;
use std::process::ExitCode;

use pi_protocol::connection::{CloseReason, ServerConnection, ServerEvent, ServerOptions};
use pi_protocol::{
    AttachmentId, ClientMessage, ErrorBody, ErrorCode, Payload, Request, RequestId, ServerId, SessionId, SessionTarget,
    SubscriptionId,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

const DEFAULT_SERVER_ID: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
const USAGE: &str = "usage: server [--listen ADDR] [--server-id UUID] [--connections N] [--quiet]";
/// What `--help` prints (on stdout, exit status 0).
const HELP: &str = "A Pi protocol version 8 server over TCP.

usage: server [--listen ADDR] [--server-id UUID] [--connections N] [--quiet]

  --listen ADDR      address to listen on (default 127.0.0.1:7878; port 0 picks a free port)
  --server-id UUID   the serverId its handshake names (default 3b241101-e2bb-4255-8caf-4136c566a962)
  --connections N    exit after N connections have been served (default: serve forever)
  --quiet            no event lines
  -h, --help         print this help

The first line on stdout is `listening on ADDR`, then one JSON object a line per connection event.";

struct Args {
    listen: String,
    server_id: ServerId,
    connections: Option<u64>,
    quiet: bool,
}

/// The arguments, or `None` when `--help` asks for the help.
fn parse_args() -> Result<Option<Args>, String> {
    let mut args = Args {
        listen: "127.0.0.1:7878".to_owned(),
        server_id: ServerId::new(DEFAULT_SERVER_ID).unwrap(),
        connections: None,
        quiet: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--listen" => args.listen = value()?,
            "--server-id" => {
                args.server_id = ServerId::new(value()?).map_err(|e| format!("--server-id: {e}"))?;
            }
            "--connections" => {
                args.connections = Some(value()?.parse().map_err(|_| "--connections needs a number".to_owned())?);
            }
            "--quiet" => args.quiet = true,
            "--help" | "-h" => return Ok(None),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(Some(args))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let listener = match TcpListener::bind(&args.listen).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("server: cannot listen on {}: {e}", args.listen);
            return ExitCode::FAILURE;
        }
    };
    match listener.local_addr() {
        Ok(addr) => println!("listening on {addr}"),
        Err(e) => {
            eprintln!("server: {e}");
            return ExitCode::FAILURE;
        }
    }
    let mut tasks = JoinSet::new();
    let mut accepted = 0u64;
    while args.connections.is_none_or(|limit| accepted < limit) {
        match listener.accept().await {
            Ok((stream, _)) => {
                accepted += 1;
                // Answers go out as soon as they are ready: Nagle's algorithm would hold a small
                // write back until the previous one is acknowledged, which stalls a connection
                // that carries many clients' calls (a coordinator's).
                let _ = stream.set_nodelay(true);
                tasks.spawn(serve(stream, args.server_id.clone(), accepted, args.quiet));
            }
            Err(e) => eprintln!("server: accept failed: {e}"),
        }
    }
    while tasks.join_next().await.is_some() {}
    ExitCode::SUCCESS
}

/// A request answered later: the id and its answer.
type Completion = (RequestId, Result<Option<Payload>, ErrorBody>);

/// Drives one connection: socket bytes in, events to the application, bytes out.
async fn serve(stream: TcpStream, server_id: ServerId, conn: u64, quiet: bool) {
    let (mut reader, mut writer) = stream.into_split();
    let mut connection = ServerConnection::new(server_id.clone(), ServerOptions::default());
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Completion>();
    let mut app = App { server_id, conn, attachments: 0, waiting: HashMap::new(), done: done_tx };
    let mut buf = vec![0u8; 64 * 1024];
    let mut reading = true;
    loop {
        let mut closed = false;
        while let Some(event) = connection.poll_event() {
            if !quiet {
                log(conn, &event);
            }
            match event {
                ServerEvent::Request(request) => app.handle(&mut connection, request),
                ServerEvent::Cancel { id } => app.cancel(&mut connection, &id),
                ServerEvent::Closing { .. } => app.abort_all(&mut connection),
                ServerEvent::Closed { .. } => closed = true,
                // `Other` (a client message type this build's connection has no rule for), `Ready`,
                // `Fenced` and events added later: logged only.
                _ => {}
            }
        }
        if let Some(bytes) = connection.poll_transmit() {
            if writer.write_all(&bytes).await.is_err() {
                reading = false;
                connection.disconnect();
                continue;
            }
        }
        if closed {
            break;
        }
        tokio::select! {
            read = reader.read(&mut buf), if reading => match read {
                Ok(0) | Err(_) => {
                    reading = false;
                    connection.disconnect();
                }
                Ok(n) => connection.receive(&buf[..n]),
            },
            Some((id, result)) = done_rx.recv() => {
                if app.waiting.remove(&id).is_some() {
                    let _ = connection.respond(&id, result);
                }
            }
        }
    }
    let _ = writer.shutdown().await;
}

/// Prints one connection event as a JSON line.
fn log(conn: u64, event: &ServerEvent) {
    let line = match event {
        ServerEvent::Ready => json!({"conn": conn, "event": "ready"}),
        ServerEvent::Request(request) => {
            json!({"conn": conn, "event": "request", "message": ClientMessage::Request(request.clone()).to_json()})
        }
        ServerEvent::Cancel { id } => json!({"conn": conn, "event": "cancel", "id": id.as_str()}),
        ServerEvent::Fenced { id, reason } => {
            json!({"conn": conn, "event": "fenced", "id": id.as_str(), "reason": format!("{reason:?}")})
        }
        ServerEvent::Closing { reason } => {
            let version = match reason {
                CloseReason::UnsupportedVersion(v) => json!(v),
                _ => Value::Null,
            };
            json!({"conn": conn, "event": "closing", "reason": reason.to_string(), "offeredVersion": version})
        }
        ServerEvent::Closed { release } => json!({"conn": conn, "event": "closed", "release": release}),
        ServerEvent::Other(message) => json!({"conn": conn, "event": "other", "message": message.to_json()}),
        other => json!({"conn": conn, "event": "unknown", "debug": format!("{other:?}")}),
    };
    println!("{line}");
}

fn error(code: &str, message: &str) -> ErrorBody {
    ErrorBody::new(ErrorCode::new(code).unwrap(), message.to_owned())
}

fn payload(value: Value) -> Payload {
    Payload::from_value(&value).unwrap()
}

/// The stand-in application: a catalogue, subscriptions, attach/detach, and two session calls.
struct App {
    server_id: ServerId,
    conn: u64,
    attachments: u64,
    /// `wait` calls not answered yet, with the timer that will answer them.
    waiting: HashMap<RequestId, JoinHandle<()>>,
    done: mpsc::UnboundedSender<Completion>,
}

impl App {
    fn handle(&mut self, connection: &mut ServerConnection, request: Request) {
        let call = request.call.to_value();
        let service = call.get("serviceId").and_then(Value::as_str).unwrap_or_default();
        let member = call.get("member").and_then(Value::as_str).unwrap_or_default();
        let args = call.get("args").cloned().unwrap_or(Value::Null);
        let first = args.get(0).and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut updates_for = None;
        let answer = match (service, member) {
            ("$chord.service", "catalogue") => Ok(Some(payload(json!([
                {"serviceId": "sessions", "mode": "singleton"},
                {"serviceId": "session", "mode": "keyed"},
            ])))),
            ("$chord.service", "subscribe") => match SubscriptionId::new(first.clone()) {
                Ok(subscription) => {
                    updates_for = Some(subscription);
                    Ok(Some(payload(json!({"subscriptionId": first, "sequence": 0, "sessions": ["s-1", "s-2"]}))))
                }
                Err(_) => Err(error("bad_arguments", "subscribe needs a subscription id")),
            },
            ("$chord.service", "unsubscribe") => Ok(Some(Payload::null())),
            ("sessions", "attach") if first == "s-1" || first == "s-2" => {
                self.attachments += 1;
                let route = SessionTarget::new(
                    self.server_id.clone(),
                    SessionId::new(first).unwrap(),
                    AttachmentId::new(format!("att-{}-{}", self.conn, self.attachments)).unwrap(),
                );
                // The route travels out of band, before the attach call's (route-less) answer.
                match connection.set_attachment(Some(route)) {
                    Ok(()) => Ok(Some(Payload::null())),
                    Err(e) => Err(error("attach_failed", &e.to_string())),
                }
            }
            ("sessions", "attach") => Err(error("not_found", "No session with that id")),
            ("sessions", "detach") => match connection.set_attachment(None) {
                Ok(()) => Ok(None),
                Err(e) => Err(error("detach_failed", &e.to_string())),
            },
            ("session", "echo") => Ok(Some(payload(json!({"echo": args})))),
            ("session", "wait") => {
                let ms = args.get(0).and_then(Value::as_u64).unwrap_or(5000).min(60_000);
                let done = self.done.clone();
                let id = request.id.clone();
                let timer = tokio::spawn(async move {
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    let _ = done.send((id, Ok(Some(payload(json!({"waitedMs": ms}))))));
                });
                self.waiting.insert(request.id, timer);
                return;
            }
            _ => Err(error("unknown_member", "No such service member")),
        };
        let _ = connection.respond(&request.id, answer);
        if let Some(subscription) = updates_for {
            for sequence in 1..=3 {
                let update = payload(json!({"type": "state", "member": "directory", "sequence": sequence}));
                let _ = connection.publish_update(subscription.clone(), update);
            }
        }
    }

    fn cancel(&mut self, connection: &mut ServerConnection, id: &RequestId) {
        if let Some(timer) = self.waiting.remove(id) {
            timer.abort();
            let _ = connection.respond(id, Err(error("cancelled", "Request was cancelled by the client")));
        }
    }

    /// The connection is closing: stop every held call so it can finish closing.
    fn abort_all(&mut self, connection: &mut ServerConnection) {
        for (id, timer) in self.waiting.drain() {
            timer.abort();
            let _ = connection.respond(&id, Err(error("cancelled", "The connection closed")));
        }
    }
}
