//! The commands that speak to a live server, as grpcurl does for gRPC: `discover`, `call`,
//! `catalogue` (and `subscribe`, see `subscribe.rs`), on `pi_protocol::client`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use pi_protocol::client::{service_call, Client, ConnectError, RequestError};
use pi_protocol::connection::CallTarget;
use pi_protocol::io::unix::{discover_with, DiscoverOptions};
use pi_protocol::{Payload, ServerId};
use serde_json::Value;

use crate::{io_failure, Failure};

/// Where to connect, and to what.
#[derive(Args, Debug)]
pub struct ConnectArgs {
    /// Connect to the Unix socket at PATH (a server's `<serverId>.sock`).
    #[arg(long, value_name = "PATH", conflicts_with = "tcp", required_unless_present = "tcp")]
    unix: Option<PathBuf>,
    /// Connect over TCP to ADDR (HOST:PORT).
    #[arg(long, value_name = "ADDR")]
    tcp: Option<String>,
    /// The serverId the server must announce [default with --unix: the socket's name; with
    /// --tcp: whichever it announces].
    #[arg(long, value_name = "UUID")]
    server_id: Option<String>,
    /// Attach to the Session ID first (pi.session-management attach), and send the call to it.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Give up connecting after MS milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    connect_timeout_ms: u64,
}

impl ConnectArgs {
    /// A connected client, attached to the `--session` when one is given, and the target of
    /// the calls to make.
    pub async fn connect(&self) -> Result<(Client, CallTarget), Failure> {
        let mut builder = Client::builder().handshake_timeout(Duration::from_millis(self.connect_timeout_ms.max(1)));
        if let Some(id) = &self.server_id {
            let id = ServerId::new(id.as_str())
                .map_err(|_| Failure::usage(format!("--server-id {id:?} is not a version 4 UUID in lowercase")))?;
            builder = builder.server_id(id);
        }
        let (client, to) = match (&self.unix, &self.tcp) {
            (Some(path), _) => (builder.connect_unix(path).await, path.display().to_string()),
            (None, Some(addr)) => (builder.connect_tcp(addr.clone()).await, addr.clone()),
            (None, None) => return Err(Failure::usage("--unix PATH or --tcp ADDR is required")),
        };
        let client = client.map_err(|error| connect_failure(&to, &error))?;
        let target = match &self.session {
            None => CallTarget::Server,
            Some(session) => {
                client.attach(session).await.map_err(|error| request_failure("attach", &error))?;
                CallTarget::Session
            }
        };
        Ok((client, target))
    }
}

fn connect_failure(to: &str, error: &ConnectError) -> Failure {
    Failure::usage(format!("cannot connect to {to}: {error}"))
}

/// A call that failed: the server's error (code and message) exits 1, anything else (the
/// connection) 2.
pub fn request_failure(what: &str, error: &RequestError) -> Failure {
    match error {
        RequestError::Server(body) => {
            Failure::input(format!("{what}: server error {}: {}", body.code.as_str(), body.message))
        }
        RequestError::Invalid(_) => Failure::input(format!("{what}: {error}")),
        other => Failure::usage(format!("{what}: {other}")),
    }
}

/// Runs `work` on a single-threaded tokio runtime.
pub fn block_on<T>(work: impl std::future::Future<Output = Result<T, Failure>>) -> Result<T, Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::usage(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(work)
}

/// Ctrl-C (SIGINT), watched from the moment the value is made: a signal that comes after
/// [`Interrupt::watch`] and before [`Interrupt::recv`] is kept, not lost (nor does it kill the
/// process).
pub struct Interrupt {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Interrupt {
    /// Starts watching; must run inside the runtime.
    pub fn watch() -> Interrupt {
        #[cfg(unix)]
        {
            Interrupt { signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok() }
        }
        #[cfg(not(unix))]
        {
            Interrupt {}
        }
    }

    /// Resolves at the next Ctrl-C; never, where the signal cannot be watched.
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        let got = match &mut self.signal {
            Some(signal) => signal.recv().await.is_some(),
            None => false,
        };
        #[cfg(not(unix))]
        let got = tokio::signal::ctrl_c().await.is_ok();
        if !got {
            std::future::pending::<()>().await;
        }
    }
}

/// Writes one JSON line on stdout.
pub fn print_line(line: &impl serde::Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string(line).map_err(|e| Failure::input(format!("cannot write JSON: {e}")))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").and_then(|()| out.flush()).map_err(io_failure)
}

#[derive(Args, Debug)]
pub struct DiscoverArgs {
    /// The directory to look in (servers listen on DIR/<serverId>.sock).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Leave out a server that does not answer the handshake within MS milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1_000)]
    timeout_ms: u64,
}

/// `discover DIR`: one line `{"serverId": ..., "path": ...}` per server found, by serverId.
pub fn discover(args: &DiscoverArgs) -> Result<(), Failure> {
    block_on(async {
        let options = DiscoverOptions::default().probe_timeout(Duration::from_millis(args.timeout_ms.max(1)));
        let found = discover_with(&args.dir, &options)
            .await
            .map_err(|e| Failure::usage(format!("cannot read {}: {e}", args.dir.display())))?;
        for server in found {
            print_line(&serde_json::json!({"serverId": server.server_id, "path": server.path}))?;
        }
        Ok(())
    })
}

#[derive(Args, Debug)]
pub struct CallArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// The service (serviceId), for example demo.echo.
    #[arg(value_name = "SERVICE")]
    service: String,
    /// The member of the service to call.
    #[arg(value_name = "MEMBER")]
    member: String,
    /// The call's arguments: a JSON array [default: []].
    #[arg(value_name = "ARGS_JSON")]
    args: Option<String>,
}

/// `call SERVICE MEMBER [ARGS_JSON]`: the result as JSON on stdout (`null` without one);
/// Ctrl-C while it is pending cancels the call (exit status 130).
pub fn call(args: &CallArgs) -> Result<(), Failure> {
    let call_args: Value = match &args.args {
        None => Value::Array(Vec::new()),
        Some(text) => serde_json::from_str(text).map_err(|e| Failure::usage(format!("ARGS_JSON is not JSON: {e}")))?,
    };
    if !call_args.is_array() {
        return Err(Failure::usage("ARGS_JSON must be a JSON array"));
    }
    let call = service_call(&args.service, &args.member, call_args)
        .map_err(|e| Failure::usage(format!("ARGS_JSON: {}", crate::describe(&e))))?;
    block_on(async {
        let mut interrupt = Interrupt::watch();
        let (client, target) = args.connect.connect().await?;
        // Dropping the pending request (the select's other branch) sends its cancel, which
        // `disconnect` flushes before it closes the connection.
        let result = tokio::select! {
            result = client.request(target, call) => Some(result),
            () = interrupt.recv() => None,
        };
        client.disconnect().await;
        let what = format!("{}.{}", args.service, args.member);
        let Some(result) = result else {
            return Err(Failure::interrupted(format!("{what}: interrupted; the call was cancelled")));
        };
        let result = result.map_err(|error| request_failure(&what, &error))?;
        print_line(&result.unwrap_or_else(Payload::null))
    })
}

#[derive(Args, Debug)]
pub struct CatalogueArgs {
    #[command(flatten)]
    connect: ConnectArgs,
}

/// `catalogue`: the `$chord.service` catalogue, one line `{"serviceId": ..., "mode": ...}` per
/// service.
pub fn catalogue(args: &CatalogueArgs) -> Result<(), Failure> {
    block_on(async {
        let (client, target) = args.connect.connect().await?;
        let call = service_call("$chord.service", "catalogue", Value::Array(Vec::new())).expect("a fixed call");
        let result = client.request(target, call).await;
        client.disconnect().await;
        let result = result.map_err(|error| request_failure("catalogue", &error))?;
        match result.map(|payload| payload.to_value()) {
            Some(Value::Array(entries)) => entries.iter().try_for_each(print_line),
            other => Err(Failure::input(format!("the catalogue is not an array: {}", other.unwrap_or(Value::Null)))),
        }
    })
}
