//! A Pi protocol version 8 server over TCP, built on the sans-IO [`ServerConnection`] run by
//! [`ServerDriver`] over tokio: the way `docs/ASYNC.md` teaches.
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
//! connection event (`ready`, `request`, `cancel`, `fenced`, `closing`, `closed`) and for what
//! the application did (`answered` with the id and `ok`, `route` when it published an
//! attachment route), with `conn` numbering the connections from 1.
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
use pi_protocol::io::ServerDriver;
use pi_protocol::{
    AttachmentId, ClientMessage, ErrorBody, ErrorCode, Payload, Request, RequestId, ServerId, SessionId, SessionTarget,
    SubscriptionId,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinSet};

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

/// Serves one connection: the driver reads the socket into the connection, writes what the
/// connection queues, and hands out its events; answers that timers complete later come back
/// from the connection's set of timer tasks.
async fn serve(stream: TcpStream, server_id: ServerId, conn: u64, quiet: bool) {
    let mut driver = ServerDriver::new(stream, ServerConnection::new(server_id.clone(), ServerOptions::default()));
    let mut app = App::new(server_id, conn, quiet);
    loop {
        tokio::select! {
            // The connection first: while it has events, nothing else is looked at (timers
            // are polled whenever it waits for the socket).
            biased;
            event = driver.next_event() => {
                let Some(event) = event else { break };
                if !quiet {
                    log(conn, &event);
                }
                let connection = driver.connection_mut();
                match event {
                    ServerEvent::Request(request) => app.handle(connection, request),
                    ServerEvent::Cancel { id } => app.cancel(connection, &id),
                    ServerEvent::Closing { .. } => app.abort_all(connection),
                    // `Other` (a client message type this build's connection has no rule for),
                    // `Ready`, `Fenced`, `Closed` and events added later: logged only.
                    _ => {}
                }
            }
            // `None` (no timer running) disables this branch until the next turn, in which a
            // timer started by an event is looked at again. Aborted timers end with an error.
            Some(done) = app.timers.join_next() => {
                if let Ok((id, result)) = done {
                    if app.waiting.remove(&id).is_some() {
                        app.respond(driver.connection_mut(), &id, result);
                    }
                }
            }
        }
    }
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

fn payload<T: Serialize>(value: &T) -> Payload {
    Payload::from_serialize(value).unwrap()
}

/// What a call asks for, read straight from its CBOR (`{serviceId, member, args}`); the
/// arguments stay a payload, read further only by the members that need them.
#[derive(Deserialize, Default)]
struct Call<'a> {
    #[serde(rename = "serviceId", default)]
    service_id: &'a str,
    #[serde(default)]
    member: &'a str,
    #[serde(default)]
    args: Option<Payload>,
}

/// The answer of `echo`: its arguments, as they came.
#[derive(Serialize)]
struct Echo<'a> {
    echo: &'a Option<Payload>,
}

/// The stand-in application: a catalogue, subscriptions, attach/detach, and two session calls.
struct App {
    server_id: ServerId,
    conn: u64,
    quiet: bool,
    attachments: u64,
    /// The answer of `catalogue`, built once: cloning it copies a few bytes.
    catalogue: Payload,
    /// The timers of `wait` calls, each ending with its call's answer.
    timers: JoinSet<Completion>,
    /// `wait` calls not answered yet, with their timer.
    waiting: HashMap<RequestId, AbortHandle>,
}

impl App {
    fn new(server_id: ServerId, conn: u64, quiet: bool) -> Self {
        let catalogue = payload(&json!([
            {"serviceId": "sessions", "mode": "singleton"},
            {"serviceId": "session", "mode": "keyed"},
        ]));
        App { server_id, conn, quiet, attachments: 0, catalogue, timers: JoinSet::new(), waiting: HashMap::new() }
    }

    fn handle(&mut self, connection: &mut ServerConnection, request: Request) {
        let call: Call = request.call.deserialize().unwrap_or_default();
        let answer = match (call.service_id, call.member) {
            ("$chord.service", "catalogue") => Ok(Some(self.catalogue.clone())),
            ("$chord.service", "subscribe") => return self.subscribe(connection, &request.id, &call.args),
            ("$chord.service", "unsubscribe") => Ok(Some(Payload::null())),
            ("sessions", "attach") => self.attach(connection, &call.args),
            ("sessions", "detach") => match self.set_route(connection, None) {
                Ok(()) => Ok(None),
                Err(e) => Err(error("detach_failed", &e)),
            },
            ("session", "echo") => Ok(Some(payload(&Echo { echo: &call.args }))),
            ("session", "wait") => {
                let ms = first_arg(&call.args).as_u64().unwrap_or(5000).min(60_000);
                let id = request.id.clone();
                let timer = self.timers.spawn(async move {
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    (id, Ok(Some(payload(&json!({"waitedMs": ms})))))
                });
                self.waiting.insert(request.id, timer);
                return;
            }
            _ => Err(error("unknown_member", "No such service member")),
        };
        self.respond(connection, &request.id, answer);
    }

    /// `subscribe [subscriptionId, ...]`: a snapshot, then three updates.
    fn subscribe(&mut self, connection: &mut ServerConnection, id: &RequestId, args: &Option<Payload>) {
        let first = first_arg(args);
        let Some(subscription) = first.as_str().and_then(|s| SubscriptionId::new(s).ok()) else {
            return self.respond(connection, id, Err(error("bad_arguments", "subscribe needs a subscription id")));
        };
        let snapshot = json!({"subscriptionId": subscription.as_str(), "sequence": 0, "sessions": ["s-1", "s-2"]});
        self.respond(connection, id, Ok(Some(payload(&snapshot))));
        for sequence in 1..=3 {
            let update = payload(&json!({"type": "state", "member": "directory", "sequence": sequence}));
            let _ = connection.publish_update(subscription.clone(), update);
        }
    }

    /// `attach [sessionId]`: publishes a route to `s-1` or `s-2`. The route travels out of
    /// band, before the attach call's (route-less) answer.
    fn attach(
        &mut self,
        connection: &mut ServerConnection,
        args: &Option<Payload>,
    ) -> Result<Option<Payload>, ErrorBody> {
        let session = match first_arg(args).as_str() {
            Some(session @ ("s-1" | "s-2")) => SessionId::new(session).unwrap(),
            _ => return Err(error("not_found", "No session with that id")),
        };
        self.attachments += 1;
        let attachment = AttachmentId::new(format!("att-{}-{}", self.conn, self.attachments)).unwrap();
        let route = SessionTarget::new(self.server_id.clone(), session, attachment);
        match self.set_route(connection, Some(route)) {
            Ok(()) => Ok(Some(Payload::null())),
            Err(e) => Err(error("attach_failed", &e)),
        }
    }

    fn set_route(&mut self, connection: &mut ServerConnection, route: Option<SessionTarget>) -> Result<(), String> {
        let line = (!self.quiet).then(|| json!({"conn": self.conn, "event": "route", "route": &route}));
        connection.set_attachment(route).map_err(|e| e.to_string())?;
        if let Some(line) = line {
            println!("{line}");
        }
        Ok(())
    }

    fn respond(
        &mut self,
        connection: &mut ServerConnection,
        id: &RequestId,
        answer: Result<Option<Payload>, ErrorBody>,
    ) {
        if !self.quiet {
            println!("{}", json!({"conn": self.conn, "event": "answered", "id": id.as_str(), "ok": answer.is_ok()}));
        }
        let _ = connection.respond(id, answer);
    }

    fn cancel(&mut self, connection: &mut ServerConnection, id: &RequestId) {
        if let Some(timer) = self.waiting.remove(id) {
            timer.abort();
            self.respond(connection, id, Err(error("cancelled", "Request was cancelled by the client")));
        }
    }

    /// The connection is closing: stop every held call so it can finish closing.
    fn abort_all(&mut self, connection: &mut ServerConnection) {
        for (id, timer) in std::mem::take(&mut self.waiting) {
            timer.abort();
            self.respond(connection, &id, Err(error("cancelled", "The connection closed")));
        }
    }
}

/// The first argument of a call, as JSON (`null` when there is none).
fn first_arg(args: &Option<Payload>) -> Value {
    args.as_ref().map(|args| args.to_value()).and_then(|args| args.get(0).cloned()).unwrap_or(Value::Null)
}
