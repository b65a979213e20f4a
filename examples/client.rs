//! A Pi protocol version 8 client over TCP, built on the sans-IO [`ClientConnection`] run by
//! [`ClientDriver`] over tokio.
//!
//! ```text
//! cargo run --example server --features tokio -- --listen 127.0.0.1:7878   # in one terminal
//! cargo run --example client --features tokio -- --connect 127.0.0.1:7878  # in another
//! ```
//!
//! Flags: `--connect ADDR` (default `127.0.0.1:7878`), `--version N` (the protocol version to
//! offer; anything but 8 shows the server's `hello_error`).
//!
//! It connects, handshakes, and then runs a short session against the services of the
//! `server` example: `catalogue`; `subscribe` (and the `service_update`s that follow); `attach`
//! to Session `s-1`, after which session calls follow the route published by the server's
//! `attachment` message; a session `echo`; a session `wait` that it cancels; `detach` (the
//! route is cleared, so a session call is refused locally); `unsubscribe`. It prints everything
//! it receives, one JSON object a line (`ready`, `response`, `update`, `attachment`,
//! `rejected`, `closed`), plus `local` lines for what it decided itself, and exits 0 when the
//! session went as expected (1 otherwise).

use std::process::ExitCode;

use pi_protocol::connection::{CallTarget, ClientConnection, ClientEvent, ClientOptions, CloseReason};
use pi_protocol::io::ClientDriver;
use pi_protocol::{Payload, RequestId};
use serde_json::{json, Value};
use tokio::net::TcpStream;

const USAGE: &str = "usage: client [--connect ADDR] [--version N]";
/// What `--help` prints (on stdout, exit status 0).
const HELP: &str = "A Pi protocol version 8 client over TCP: runs a short session against the server example.

usage: client [--connect ADDR] [--version N]

  --connect ADDR   the server to connect to (default 127.0.0.1:7878)
  --version N      the protocol version to offer (default 8; any other shows the server's hello_error)
  -h, --help       print this help

Prints everything it receives, one JSON object a line, and exits 0 when the session went as expected.";

/// The address and version, or `None` when `--help` asks for the help.
fn parse_args() -> Result<Option<(String, u32)>, String> {
    let (mut connect, mut version) = ("127.0.0.1:7878".to_owned(), pi_protocol::PROTOCOL_VERSION);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--connect" => connect = value()?,
            "--version" => version = value()?.parse().map_err(|_| "--version needs a number".to_owned())?,
            "--help" | "-h" => return Ok(None),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(Some((connect, version)))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (addr, version) = match parse_args() {
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
    let stream = match TcpStream::connect(&addr).await {
        Ok(stream) => stream,
        Err(e) => {
            eprintln!("client: cannot connect to {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let options = ClientOptions::default().version(version);
    let mut session = Session { driver: ClientDriver::new(stream, ClientConnection::new(options)) };
    let outcome = session.run().await;
    // Closes the connection, then prints what is left (the `closed` event) while the driver
    // writes what is queued and shuts the socket down.
    session.driver.connection_mut().close();
    while let Some(event) = session.driver.next_event().await {
        print_event(&event);
    }
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("client: {message}");
            ExitCode::FAILURE
        }
    }
}

fn call(service: &str, member: &str, args: Value) -> Payload {
    Payload::from_value(&json!({"serviceId": service, "member": member, "args": args})).unwrap()
}

/// Prints one received event as a JSON line.
fn print_event(event: &ClientEvent) {
    let line = match event {
        ClientEvent::Ready { server_id } => json!({"event": "ready", "serverId": server_id}),
        ClientEvent::Response { id, result: Ok(None) } => json!({"event": "response", "id": id, "ok": true}),
        ClientEvent::Response { id, result: Ok(Some(result)) } => {
            json!({"event": "response", "id": id, "ok": true, "result": result.to_value()})
        }
        ClientEvent::Response { id, result: Err(error) } => {
            json!({"event": "response", "id": id, "ok": false, "error": error})
        }
        ClientEvent::Update { subscription_id, update } => {
            json!({"event": "update", "subscriptionId": subscription_id, "update": update.to_value()})
        }
        ClientEvent::Attachment { route } => json!({"event": "attachment", "route": route}),
        ClientEvent::Closed { reason: CloseReason::Rejected(error), .. } => {
            json!({"event": "rejected", "error": error})
        }
        ClientEvent::Closed { reason, unsettled } => {
            json!({"event": "closed", "reason": reason.to_string(), "unsettled": unsettled})
        }
        ClientEvent::Other(message) => json!({"event": "other", "message": message.to_json()}),
        other => json!({"event": "unknown", "debug": format!("{other:?}")}),
    };
    println!("{line}");
}

struct Session {
    driver: ClientDriver<TcpStream>,
}

impl Session {
    /// The connection's next event, printed; `None` once the connection closed and every event
    /// was handed out.
    async fn next_event(&mut self) -> Option<ClientEvent> {
        let event = self.driver.next_event().await?;
        print_event(&event);
        Some(event)
    }

    /// Waits for the response to `id`, printing whatever else arrives meanwhile.
    async fn response(&mut self, id: &RequestId) -> Result<Result<Option<Payload>, String>, String> {
        loop {
            match self.next_event().await {
                Some(ClientEvent::Response { id: got, result }) if &got == id => {
                    return Ok(result.map_err(|e| e.code.as_str().to_owned()));
                }
                Some(ClientEvent::Closed { reason, .. }) => return Err(format!("connection closed: {reason}")),
                Some(_) => {}
                None => return Err("connection closed".to_owned()),
            }
        }
    }

    async fn request(
        &mut self,
        target: CallTarget,
        payload: Payload,
    ) -> Result<Result<Option<Payload>, String>, String> {
        let id = self.driver.connection_mut().request(target, payload).map_err(|e| format!("request refused: {e}"))?;
        self.response(&id).await
    }

    async fn run(&mut self) -> Result<(), String> {
        // Handshake.
        match self.next_event().await {
            Some(ClientEvent::Ready { .. }) => {}
            Some(ClientEvent::Closed { reason: CloseReason::Rejected(error), .. }) => {
                println!("{}", json!({"local": "handshake rejected", "code": error.code}));
                return Ok(());
            }
            other => return Err(format!("handshake failed: {other:?}")),
        }
        // A server call.
        expect_ok(
            self.request(CallTarget::Server, call("$chord.service", "catalogue", json!([]))).await?,
            "catalogue",
        )?;
        // A subscription: its snapshot, then three updates.
        let subscribe = call("$chord.service", "subscribe", json!(["sub-sessions", "sessions", "singleton"]));
        expect_ok(self.request(CallTarget::Server, subscribe).await?, "subscribe")?;
        let mut updates = 0;
        while updates < 3 {
            match self.next_event().await {
                Some(ClientEvent::Update { .. }) => updates += 1,
                Some(ClientEvent::Closed { reason, .. }) => return Err(format!("closed: {reason}")),
                None => return Err("closed while waiting for updates".to_owned()),
                Some(_) => {}
            }
        }
        // Attach: the route arrives out of band, before the answer.
        expect_ok(self.request(CallTarget::Server, call("sessions", "attach", json!(["s-1"]))).await?, "attach")?;
        let route = self.driver.connection().route().cloned().ok_or("attach answered but no route was published")?;
        println!("{}", json!({"local": "following route", "route": route}));
        // Session calls follow that route.
        expect_ok(self.request(CallTarget::Session, call("session", "echo", json!(["hello"]))).await?, "echo")?;
        let wait = self
            .driver
            .connection_mut()
            .request(CallTarget::Session, call("session", "wait", json!([30_000])))
            .map_err(|e| format!("wait refused: {e}"))?;
        if !self.driver.connection_mut().cancel(&wait) {
            return Err("cancel was not queued".to_owned());
        }
        println!("{}", json!({"local": "cancel sent", "id": wait}));
        match self.response(&wait).await? {
            Err(code) if code == "cancelled" => {}
            other => return Err(format!("the cancelled wait answered {other:?}")),
        }
        // Detach clears the route: a session call is now refused before anything is sent.
        match self.request(CallTarget::Server, call("sessions", "detach", json!(["s-1"]))).await? {
            Ok(None) => {}
            other => return Err(format!("detach answered {other:?}")),
        }
        match self.driver.connection_mut().request(CallTarget::Session, call("session", "echo", json!([]))) {
            Err(e) => println!("{}", json!({"local": "session call refused", "why": e.to_string()})),
            Ok(id) => return Err(format!("a session call without a route was sent as {}", id.as_str())),
        }
        let unsubscribe = call("$chord.service", "unsubscribe", json!(["sub-sessions"]));
        expect_ok(self.request(CallTarget::Server, unsubscribe).await?, "unsubscribe")?;
        Ok(())
    }
}

fn expect_ok(result: Result<Option<Payload>, String>, what: &str) -> Result<(), String> {
    result.map(|_| ()).map_err(|code| format!("{what} failed with {code}"))
}
