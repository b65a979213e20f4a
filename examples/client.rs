//! A Pi protocol version 8 client on [`pi_protocol::client::Client`]: it connects over TCP or a
//! Unix socket and runs a short session against the server's services.
//!
//! ```text
//! cargo run --example server --features tokio -- --listen 127.0.0.1:7878      # in one terminal
//! cargo run --example client --features tokio -- --connect 127.0.0.1:7878     # in another
//! cargo run --example client --features tokio -- --unix /run/pi/<serverId>.sock
//! ```
//!
//! Flags: `--connect ADDR` (TCP, default `127.0.0.1:7878`), `--unix PATH` (a server's socket),
//! `--server-id UUID` (the server it must be; by default the socket's name says it, and over TCP
//! any), `--version N` (the protocol version to offer; anything but 8 shows the server's
//! `hello_error`).
//!
//! The session depends on the services the catalogue lists. With `demo.echo` (a real pi-server
//! with the demo Chord services, or the `server` example): `demo.echo` `echo`; a subscription
//! to `demo.counter` and the update a `bump` causes; `attach` to `session-1` through
//! `pi.session-management`, a Session call on the published route; a `demo.slow` `wait` it
//! cancels; `detach` (a Session call is then refused locally); `unsubscribe`. Otherwise the
//! older services (`sessions`, `session`: tests/interop/node-server.mjs): `subscribe` to
//! `sessions` and its three updates, `sessions.attach` `s-1`, a Session `echo`, a Session `wait`
//! it cancels, `sessions.detach`, `unsubscribe`.
//!
//! It prints one JSON object a line: `ready`, then a `response` for each answered call (the
//! call's name, `ok`, its `result` or `error`), each `update`, each `attachment` change,
//! `rejected` for a refused handshake, `closed` at the end; and `local` lines for what it
//! decided itself. It exits 0 when the session went as expected, 1 otherwise, 2 on bad flags.

use std::process::ExitCode;
use std::time::Duration;

use pi_protocol::client::{service_call, CancellationToken, Client, ConnectError, RequestError, Updates};
use pi_protocol::connection::CallTarget;
use pi_protocol::{ClientOptions, Payload, ServerId, SubscriptionId};
use serde_json::{json, Value};
use tokio::sync::watch;

const USAGE: &str = "usage: client [--connect ADDR | --unix PATH] [--server-id UUID] [--version N]";
/// What `--help` prints (on stdout, exit status 0).
const HELP: &str = "A Pi protocol version 8 client: runs a short session against a server's services.

usage: client [--connect ADDR | --unix PATH] [--server-id UUID] [--version N]

  --connect ADDR    the server to connect to over TCP (default 127.0.0.1:7878)
  --unix PATH       the server's Unix socket (DIR/<serverId>.sock) instead
  --server-id UUID  the serverId the server must announce (default: the socket's name; over TCP any)
  --version N       the protocol version to offer (default 8; any other shows the server's hello_error)
  -h, --help        print this help

Prints everything it receives, one JSON object a line, and exits 0 when the session went as expected.";

/// Where to connect and what to offer.
struct Args {
    connect: String,
    unix: Option<String>,
    server_id: Option<ServerId>,
    version: u32,
}

/// The flags, or `None` when `--help` asks for the help.
fn parse_args() -> Result<Option<Args>, String> {
    let mut args = Args {
        connect: "127.0.0.1:7878".to_owned(),
        unix: None,
        server_id: None,
        version: pi_protocol::PROTOCOL_VERSION,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--connect" => args.connect = value()?,
            "--unix" => args.unix = Some(value()?),
            "--server-id" => {
                let id = value()?;
                args.server_id =
                    Some(ServerId::new(id.as_str()).map_err(|_| format!("--server-id {id} is not a UUIDv4"))?);
            }
            "--version" => args.version = value()?.parse().map_err(|_| "--version needs a number".to_owned())?,
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
    let mut builder = Client::builder().connection_options(ClientOptions::default().version(args.version));
    if let Some(id) = args.server_id {
        builder = builder.server_id(id);
    }
    let connected = match &args.unix {
        Some(path) => builder.connect_unix(path).await,
        None => builder.connect_tcp(args.connect.clone()).await,
    };
    let client = match connected {
        Ok(client) => client,
        Err(ConnectError::Rejected(error)) => {
            println!("{}", json!({"event": "rejected", "error": error}));
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("client: cannot connect: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", json!({"event": "ready", "serverId": client.server_id()}));
    let mut session = Session { attachment: client.watch_attachment(), client };
    let outcome = session.run().await;
    session.client.disconnect().await;
    println!("{}", json!({"event": "closed", "reason": session.client.closed().await.map(|r| r.to_string())}));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("client: {message}");
            ExitCode::FAILURE
        }
    }
}

fn call(service: &str, member: &str, args: Value) -> Payload {
    service_call(service, member, args).expect("the example's calls are valid JSON payloads")
}

struct Session {
    client: Client,
    attachment: watch::Receiver<Option<pi_protocol::SessionTarget>>,
}

impl Session {
    /// Sends a call, prints its answer (and an attachment change it caused), and returns the
    /// answer; a broken connection is an `Err`.
    async fn request(
        &mut self,
        name: &str,
        target: CallTarget,
        payload: Payload,
    ) -> Result<Result<Value, String>, String> {
        let outcome = self.client.request(target, payload).await;
        self.print_attachment_change();
        match outcome {
            Ok(result) => {
                let result = result.map(|r| r.to_value());
                let mut line = json!({"event": "response", "call": name, "ok": true});
                if let Some(result) = &result {
                    line["result"] = result.clone();
                }
                println!("{line}");
                Ok(Ok(result.unwrap_or(Value::Null)))
            }
            Err(RequestError::Server(error)) => {
                println!("{}", json!({"event": "response", "call": name, "ok": false, "error": error}));
                Ok(Err(error.code.as_str().to_owned()))
            }
            Err(other) => Err(format!("{name}: {other}")),
        }
    }

    /// `request` that must succeed.
    async fn expect_ok(&mut self, name: &str, target: CallTarget, payload: Payload) -> Result<Value, String> {
        self.request(name, target, payload).await?.map_err(|code| format!("{name} failed with {code}"))
    }

    fn print_attachment_change(&mut self) {
        if self.attachment.has_changed().unwrap_or(false) {
            println!("{}", json!({"event": "attachment", "route": *self.attachment.borrow_and_update()}));
        }
    }

    /// Prints the next `n` updates of a subscription.
    async fn updates(&mut self, updates: &mut Updates, n: usize) -> Result<(), String> {
        for _ in 0..n {
            let next = tokio::time::timeout(Duration::from_secs(10), updates.next()).await;
            match next.map_err(|_| "no update within 10 s".to_owned())? {
                Some(Ok(update)) => println!(
                    "{}",
                    json!({"event": "update", "subscriptionId": updates.subscription_id(), "update": update.to_value()})
                ),
                Some(Err(error)) => return Err(format!("updates ended: {error}")),
                None => return Err("updates ended".to_owned()),
            }
        }
        Ok(())
    }

    /// A Session call that is cancelled once it has been sent for 100 ms.
    async fn cancelled_wait(&mut self, target: CallTarget, payload: Payload) -> Result<(), String> {
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            canceller.cancel();
        });
        match self.client.request_with_cancel(target, payload, &cancel).await {
            Err(RequestError::Cancelled) => {
                println!("{}", json!({"local": "cancel sent", "call": "wait"}));
                Ok(())
            }
            other => Err(format!("the cancelled wait answered {other:?}")),
        }
    }

    /// After detaching, a Session call is refused before anything is sent.
    async fn refused_session_call(&mut self) -> Result<(), String> {
        match self.client.request(CallTarget::Session, call("session", "echo", json!([]))).await {
            Err(RequestError::NoAttachment) => {
                println!("{}", json!({"local": "session call refused", "why": RequestError::NoAttachment.to_string()}));
                Ok(())
            }
            other => Err(format!("a Session call without a route answered {other:?}")),
        }
    }

    async fn run(&mut self) -> Result<(), String> {
        let catalogue =
            self.expect_ok("catalogue", CallTarget::Server, call("$chord.service", "catalogue", json!([]))).await?;
        let offers = |id: &str| catalogue.as_array().is_some_and(|list| list.iter().any(|s| s["serviceId"] == id));
        if offers("demo.echo") {
            self.demo().await
        } else {
            self.legacy().await
        }
    }

    /// The demo services of a real pi-server (and the `server` example).
    async fn demo(&mut self) -> Result<(), String> {
        let echo = self.expect_ok("echo", CallTarget::Server, call("demo.echo", "echo", json!(["hello", 1]))).await?;
        if echo != json!({"echo": ["hello", 1]}) {
            return Err(format!("echo answered {echo}"));
        }
        let subscription = SubscriptionId::new("counter-1").expect("a subscription id");
        let mut updates = self.client.updates(subscription).map_err(|e| e.to_string())?;
        let subscribe = call("$chord.service", "subscribe", json!(["counter-1", "demo.counter", "singleton"]));
        self.expect_ok("subscribe", CallTarget::Server, subscribe).await?;
        self.expect_ok("bump", CallTarget::Server, call("demo.counter", "bump", json!([2]))).await?;
        self.updates(&mut updates, 1).await?;

        self.expect_ok("attach", CallTarget::Server, call("pi.session-management", "attach", json!(["session-1"])))
            .await?;
        let route = self.client.attachment().ok_or("attach answered but no route was published")?;
        println!("{}", json!({"local": "following route", "route": route}));
        self.expect_ok("session call", CallTarget::Session, call("demo.session", "ping", json!([]))).await?;
        self.cancelled_wait(CallTarget::Server, call("demo.slow", "wait", json!([30_000]))).await?;
        self.expect_ok("short wait", CallTarget::Server, call("demo.slow", "wait", json!([10]))).await?;
        self.expect_ok("detach", CallTarget::Server, call("pi.session-management", "detach", json!([]))).await?;
        self.refused_session_call().await?;
        self.expect_ok("unsubscribe", CallTarget::Server, call("$chord.service", "unsubscribe", json!(["counter-1"])))
            .await
            .map(drop)
    }

    /// The older services of tests/interop/node-server.mjs.
    async fn legacy(&mut self) -> Result<(), String> {
        let subscription = SubscriptionId::new("sub-sessions").expect("a subscription id");
        let mut updates = self.client.updates(subscription).map_err(|e| e.to_string())?;
        let subscribe = call("$chord.service", "subscribe", json!(["sub-sessions", "sessions", "singleton"]));
        self.expect_ok("subscribe", CallTarget::Server, subscribe).await?;
        self.updates(&mut updates, 3).await?;
        self.expect_ok("attach", CallTarget::Server, call("sessions", "attach", json!(["s-1"]))).await?;
        let route = self.client.attachment().ok_or("attach answered but no route was published")?;
        println!("{}", json!({"local": "following route", "route": route}));
        self.expect_ok("echo", CallTarget::Session, call("session", "echo", json!(["hello"]))).await?;
        self.cancelled_wait(CallTarget::Session, call("session", "wait", json!([30_000]))).await?;
        match self.request("detach", CallTarget::Server, call("sessions", "detach", json!(["s-1"]))).await? {
            Ok(Value::Null) => {}
            other => return Err(format!("detach answered {other:?}")),
        }
        self.refused_session_call().await?;
        self.expect_ok(
            "unsubscribe",
            CallTarget::Server,
            call("$chord.service", "unsubscribe", json!(["sub-sessions"])),
        )
        .await
        .map(drop)
    }
}
