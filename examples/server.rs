//! A Pi protocol version 8 server on [`pi_protocol::server::Server`]: the services a real
//! pi-server's testing host offers with a Chord provider behind it (issue 22 point 5).
//!
//! ```text
//! cargo run --example server --features tokio,chord -- --unix /tmp/pi      # socket /tmp/pi/<serverId>.sock
//! cargo run --example server --features tokio,chord -- --listen 127.0.0.1:7878
//! ```
//!
//! Flags: `--unix DIR` or `--listen ADDR` (default `127.0.0.1:7878`; port 0 picks a free port),
//! `--server-id UUID` (default `3b241101-e2bb-4255-8caf-4136c566a962`), `--connections N`
//! (exit once N connections have been served; default: serve forever), `--quiet` (no event
//! lines). The first stdout line is `listening on PATH` or `listening on ADDR`; then one JSON
//! object a line per connection event (`ready`, `request`, `cancel`, `fenced`, `closing`,
//! `closed`) and per thing the server did (`answered`, `route`), with `conn` numbering the
//! connections from 1.
//!
//! Services: `pi.session-management` `attach`/`detach` for Sessions `session-1` and `session-2`
//! (Session calls answer `{"ok": true}`); on a [`ChordEndpoint`], which answers the
//! `$chord.service` control calls `catalogue`, `subscribe`, `unsubscribe` and Chord's refusals:
//! `demo.echo` `echo(...args)` → `{"echo": args}` (also as `session` `echo`, the load harness's
//! call); `demo.slow` `wait(ms)` → `{"waitedMs": ms}` unless cancelled; `demo.counter` with state
//! `count` `{value, log}` and method `bump(n)`.

use std::time::Duration;

use pi_protocol::connection::{CloseReason, ServerEvent};
use pi_protocol::io::{unix::UnixSocketListener, Accept};
use pi_protocol::server::{
    Call, CallError, CallResult, ChordEndpoint, ChordService, Context, Observation, Server, Service,
};
use pi_protocol::{ClientMessage, Payload, ServerId, SessionId};
use serde_json::{json, Value};

const USAGE: &str = "usage: server [--unix DIR | --listen ADDR] [--server-id UUID] [--connections N] [--quiet]";
const FLAGS: &str = "  --unix DIR         listen on DIR/<serverId>.sock (mode 0600, unlinked on exit)
  --listen ADDR      listen on TCP ADDR (default 127.0.0.1:7878; port 0 picks a free port)
  --server-id UUID   the serverId its handshake names (default 3b241101-e2bb-4255-8caf-4136c566a962)
  --connections N    exit once N connections have been served (default: serve forever)
  --quiet            no event lines
  -h, --help         print this help";

struct Demo {
    chord: ChordEndpoint,
}

impl Demo {
    fn new() -> Demo {
        let chord = ChordEndpoint::builder()
            .service(ChordService::new("demo.echo").method("echo"))
            .service(ChordService::new("demo.slow").method("wait"))
            .service(ChordService::new("demo.counter").method("bump").state("count", json!({"value": 0, "log": ""})))
            .build()
            .expect("valid declarations");
        Demo { chord }
    }

    /// `demo.counter` `bump(n)`: adds `n` to `value` and appends `+n` to `log`.
    fn bump(&self, n: &Value) -> CallResult {
        let n = n.as_i64().ok_or_else(|| CallError::internal("bump(n) needs a number"))?;
        self.chord.update("demo.counter", "count", |count| {
            count["value"] = json!(count["value"].as_i64().unwrap_or(0) + n);
            count["log"] = json!(format!("{}+{n}", count["log"].as_str().unwrap_or("")));
        })?;
        Ok(None)
    }
}

fn ok(value: Value) -> CallResult {
    Payload::from_value(&value).map(Some).map_err(CallError::internal)
}

/// `{"echo": args}`, the arguments' bytes copied as they came (no JSON, no serde in between).
fn echo(call: &Call) -> CallResult {
    Payload::object(&[("echo", call.args())]).map(Some).map_err(CallError::internal)
}

impl Service for Demo {
    /// Every call but `demo.slow` is answered at once, without a future.
    fn call_now(&self, call: &Call, cx: &Context) -> Option<CallResult> {
        if let ("session", "echo") = (call.service_id(), call.member()) {
            return Some(echo(call));
        }
        if let Some(answer) = self.chord.answer(call, cx) {
            return Some(answer);
        }
        match call.service_id() {
            "demo.echo" => Some(echo(call)),
            // Only `bump` reads its arguments as JSON.
            "demo.counter" => match &call.args_json()[..] {
                [n] => Some(self.bump(n)),
                _ => None,
            },
            _ => None,
        }
    }

    /// `demo.slow` `wait(ms)`, the one call that waits.
    async fn call(&self, call: Call, cx: Context) -> CallResult {
        match (call.service_id(), &call.args_json()[..]) {
            ("demo.slow", [ms]) => {
                let ms = ms.as_u64().unwrap_or(0).min(600_000);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => ok(json!({"waitedMs": ms})),
                    () = cx.cancelled() => Err(CallError::cancelled()),
                }
            }
            _ => Err(CallError::internal(format!("bad arguments for {}.{}", call.service_id(), call.member()))),
        }
    }

    fn session_exists(&self, session: &SessionId) -> bool {
        matches!(session.as_str(), "session-1" | "session-2")
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let (mut unix, mut listen, mut connections, mut quiet) = (None, "127.0.0.1:7878".to_owned(), None, false);
    let mut server_id = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962").expect("a server id");
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = match flag.as_str() {
            "--quiet" => {
                quiet = true;
                continue;
            }
            "-h" | "--help" => {
                println!("A Pi protocol version 8 server on pi_protocol::server.\n\n{USAGE}\n\n{FLAGS}");
                return std::process::ExitCode::SUCCESS;
            }
            _ => it.next(),
        };
        let parsed = match (flag.as_str(), value) {
            ("--unix", Some(dir)) => {
                unix = Some(dir);
                Ok(())
            }
            ("--listen", Some(addr)) => {
                listen = addr;
                Ok(())
            }
            ("--server-id", Some(id)) => ServerId::new(id).map(|id| server_id = id).map_err(|e| e.to_string()),
            ("--connections", Some(n)) => n.parse().map(|n| connections = Some(n)).map_err(|e| format!("{e}")),
            _ => Err(format!("bad argument {flag}")),
        };
        if let Err(message) = parsed {
            eprintln!("server: {message}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    }
    let mut builder = Server::builder(server_id.clone(), Demo::new());
    if !quiet {
        builder = builder.on_event(log);
    }
    let server = builder.build();
    let left = connections.unwrap_or(u64::MAX);
    let serving = match &unix {
        Some(dir) => UnixSocketListener::bind(&pi_protocol::io::unix::socket_path(dir.as_ref(), &server_id))
            .map(|l| (format!("{}", l.path().display()), server.serve(Limited { listener: l, left }))),
        None => match tokio::net::TcpListener::bind(listen.as_str()).await {
            Ok(l) => Ok((format!("{}", l.local_addr().expect("bound")), server.serve(Limited { listener: l, left }))),
            Err(e) => Err(e),
        },
    };
    match serving {
        Ok((at, serving)) => {
            println!("listening on {at}");
            // SIGTERM or Ctrl-C: a graceful shutdown, which also unlinks the Unix socket.
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("signals");
            let mut serving = serving;
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
                () = serving.wait() => return std::process::ExitCode::SUCCESS,
            }
            serving.shutdown().await;
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("server: cannot listen: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Prints one connection event, answer or route as a JSON line.
fn log(conn: u64, seen: Observation<'_>) {
    let line = match seen {
        Observation::Answered { id, ok } => json!({"conn": conn, "event": "answered", "id": id.as_str(), "ok": ok}),
        Observation::Route(route) => json!({"conn": conn, "event": "route", "route": route}),
        Observation::Event(ServerEvent::Ready) => json!({"conn": conn, "event": "ready"}),
        Observation::Event(ServerEvent::Request(r)) => {
            json!({"conn": conn, "event": "request", "message": ClientMessage::Request(r.clone()).to_json()})
        }
        Observation::Event(ServerEvent::Cancel { id }) => json!({"conn": conn, "event": "cancel", "id": id.as_str()}),
        Observation::Event(ServerEvent::Fenced { id, reason }) => {
            json!({"conn": conn, "event": "fenced", "id": id.as_str(), "reason": format!("{reason:?}")})
        }
        Observation::Event(ServerEvent::Closing { reason }) => {
            let offered = match reason {
                CloseReason::UnsupportedVersion(v) => json!(v),
                _ => Value::Null,
            };
            json!({"conn": conn, "event": "closing", "reason": reason.to_string(), "offeredVersion": offered})
        }
        Observation::Event(ServerEvent::Closed { release }) => {
            json!({"conn": conn, "event": "closed", "release": release})
        }
        other => json!({"conn": conn, "event": "other", "debug": format!("{other:?}")}),
    };
    println!("{line}");
}

/// A listener that stops after `left` connections (`--connections`): the server then finishes
/// the connections it has and stops. TCP sockets get `TCP_NODELAY`.
struct Limited<L> {
    listener: L,
    left: u64,
}

impl<L: Accept> Accept for Limited<L>
where
    L::Stream: 'static,
{
    type Stream = L::Stream;
    type Addr = L::Addr;

    async fn accept(&mut self) -> std::io::Result<(L::Stream, L::Addr)> {
        if self.left == 0 {
            return Err(std::io::Error::other("served the connections asked for"));
        }
        // Counted once accepted: the server may drop this future between connections.
        let (stream, addr) = self.listener.accept().await?;
        self.left -= 1;
        if let Some(tcp) = (&stream as &dyn std::any::Any).downcast_ref::<tokio::net::TcpStream>() {
            let _ = tcp.set_nodelay(true);
        }
        Ok((stream, addr))
    }
}
