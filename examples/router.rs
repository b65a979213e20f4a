//! A Pi protocol coordinator over TCP or Unix sockets: the sans-IO [`Router`] driven by tokio,
//! between many clients and the server processes behind it.
//!
//! ```text
//! cargo run --example server --features tokio,chord -- --listen 127.0.0.1:7878
//! cargo run --example server --features tokio,chord -- --listen 127.0.0.1:7880 --server-id 9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f
//! cargo run --example router --features tokio,chord -- --listen 127.0.0.1:7979 --upstream 127.0.0.1:7878 --upstream 127.0.0.1:7880
//! cargo run --example client --features tokio -- --connect 127.0.0.1:7979
//! ```
//!
//! Flags: `--listen ADDR` (TCP, default `127.0.0.1:7979`; port 0 picks a free port) or
//! `--unix PATH` (a Unix socket, mode 0600, a stale socket replaced, unlinked on exit);
//! `--upstream ADDR|PATH` (one per server process, at least one: a value with a `/` or a
//! `unix:` prefix is a Unix socket path); `--server-id UUID` (the home `serverId` its handshake
//! names; default: the one the first upstream announces, asked over a short connection of its
//! own); `--shared` (one connection per server shared by every client, instead of the default
//! one connection per client and server: see the [`router`](pi_protocol::connection::router)
//! module and docs/PROTOCOL.md section 8 for what a shared upstream cannot carry);
//! `--dedicated` (the default, accepted for older scripts); `--connections N` (exit once N
//! clients have come and gone; default: serve forever); `--quiet` (no event lines).
//!
//! Bounds (each a field of [`RouterOptions`] or [`AcceptOptions`], defaults there):
//! `--max-connections N`, `--handshake-timeout-ms MS`, `--upstream-handshake-timeout-ms MS`,
//! `--write-timeout-ms MS`, `--idle-timeout-ms MS`, `--frame-timeout-ms MS`,
//! `--max-frame-before-hello BYTES`, `--max-client-queue-bytes BYTES`,
//! `--max-upstream-queue-bytes BYTES`, `--max-total-queue-bytes BYTES`,
//! `--max-in-flight-per-shared-upstream N`, `--max-held-bytes BYTES`, and the example's own
//! `--max-partial-frame-bytes BYTES`.
//!
//! The first line on stdout is `listening on ADDR` (or `PATH`), printed once every shared
//! upstream has answered its handshake; after it, one JSON object a line per router event
//! (`client_ready`, `client_closed`, `upstream_ready`, `upstream_closed`, `refused`, `release`,
//! `unrouted_update`, and `accept` for accept errors, once per kind).
//!
//! Each connection is one task: its reader decodes frames (zero-copy: payloads are slices of the
//! read buffer) under the frame deadline and, for clients, the pre-hello frame limit, and its
//! writer batches what is queued into one flush and reports the bytes written. One task owns
//! the router: messages in, transmits out to the writers, deadlines from
//! [`Router::poll_timeout`]. The router counts every queued byte; when it closes a peer that
//! does not read, the connection's task is aborted at once and its queue dropped; after any
//! other close the reader stops at once and the writer finishes within the write timeout.
//! Each reader puts what it decoded in its connection's own inbox, under one byte budget shared
//! by every reader (`INBOUND_BUDGET`, 64 MiB), and waits while its inbox holds more than
//! `INBOX_BYTES` (256 KiB); an inbox that was empty names its connection to the router task,
//! once, on a channel that therefore holds at most one entry a connection. The router task
//! serves the connections with messages waiting in turn, counted in bytes (deficit round
//! robin: `QUANTUM`, 1 KiB, a turn), a connection that had been idle before the ones that
//! always have messages waiting; it writes what it handled after `BATCH` (128) inputs, or at
//! once after the turn of a connection that had been idle. So a flood delays another
//! connection's message by the rest of the batch under way, not by the flood's queue; and a
//! reader gives the thread up after every `DECODE_SLICE` (2 KiB) of messages, so that decoding
//! a flood does not hold it either (everything runs on one thread). A stream's end is handled
//! after its last message; when the router closes a connection, what waits in its inbox is
//! dropped and its budget released.
//! Frames of 1 MiB or more are decoded on tokio's blocking pool, off the router task's thread.
//! The bytes each reader holds of frames not yet decoded (a frame partly received) are charged
//! to one [`ByteBudget`] for every connection (`--max-partial-frame-bytes`, 256 MiB): a
//! connection whose read would take the sum past it is closed at once
//! ([`CloseReason::BudgetExceeded`]), so N connections that each start a long frame and stop
//! hold at most that much together.
//! Subscriptions on shared upstreams are told apart with the `$chord.service` convention:
//! `subscribe` and `unsubscribe` take the subscription id as their first argument, read from
//! the call's bytes without building the whole call, and only for calls up to 64 KiB.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::BytesMut;
use futures_util::SinkExt;
use pi_protocol::chord::wire::{ControlCall, ServiceCall, SERVICE_CONTROL_ID};
use pi_protocol::connection::router::{client_message_bytes, server_message_bytes};
use pi_protocol::connection::{
    CallEffect, CallInspector, ClientConnection, ClientEvent, ClientKey, ClientOptions, CloseReason, Router,
    RouterEvent, RouterOptions, Transmit, UpstreamKey,
};
use pi_protocol::io::{
    Accept, AcceptOptions, AcceptReport, Acceptor, ByteBudget, ByteCharge, ClientCodec, ConnectionPermit,
    Error as IoError, ServerCodec,
};
use pi_protocol::{
    ClientMessage, ErrorKind, Payload, ProtocolError, Request, Rule, ServerId, ServerMessage, SubscriptionId,
};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::codec::{Decoder, Encoder, FramedWrite};

const USAGE: &str = "usage: router [--listen ADDR | --unix PATH] --upstream ADDR|PATH [--upstream ADDR|PATH ...] \
[--server-id UUID] [--shared] [--connections N] [--quiet] [bounds: see --help]";
/// What `--help` prints (on stdout, exit status 0).
const HELP: &str = "A Pi protocol coordinator: routes many clients to the server processes behind it.

usage: router [--listen ADDR | --unix PATH] --upstream ADDR|PATH [--upstream ADDR|PATH ...] [options]

  --listen ADDR      TCP address to listen on (default 127.0.0.1:7979; port 0 picks a free port)
  --unix PATH        listen on a Unix socket instead (mode 0600, unlinked on exit)
  --upstream ADDR    a server process to route to (one per server, at least one); a value with
                     a '/' or a 'unix:' prefix is a Unix socket path
  --server-id UUID   the home serverId its handshake names (default: the one the first upstream announces)
  --shared           one upstream connection per server shared by every client (default: one per
                     client and server, which every client's subscriptions and attachments need)
  --connections N    exit once N clients have come and gone (default: serve forever)
  --quiet            no event lines
  -h, --help         print this help

Bounds (defaults: RouterOptions and AcceptOptions):
  --max-connections N                    clients at once; accepting pauses at it (1024)
  --handshake-timeout-ms MS              a client's hello (5000)
  --upstream-handshake-timeout-ms MS     an upstream's hello (5000)
  --write-timeout-ms MS                  a peer that reads nothing is closed after it (30000)
  --idle-timeout-ms MS                   an idle client is closed after it (none)
  --frame-timeout-ms MS                  the rest of a frame once it started (30000)
  --max-frame-before-hello BYTES         a client's frames before its hello (1024)
  --max-client-queue-bytes BYTES         queued for one client (67108864)
  --max-upstream-queue-bytes BYTES       queued for one upstream (67108864)
  --max-total-queue-bytes BYTES          queued for all connections (1073741824)
  --max-in-flight-per-shared-upstream N  one client's calls on one shared upstream (256)
  --max-held-bytes BYTES                 request ids and targets held for one client (1048576)
  --max-partial-frame-bytes BYTES        frames partly received, over every connection (268435456)

The first line on stdout is `listening on ADDR`, then one JSON object a line per router event.";

/// The default of `--max-partial-frame-bytes`: the bytes of frames not yet decoded that every
/// reader together may hold, 256 MiB.
const PARTIAL_FRAME_BUDGET: usize = 256 * 1024 * 1024;
/// The bytes of decoded messages that may wait for the router task, over every reader: 64 MiB.
const INBOUND_BUDGET: usize = 64 * 1024 * 1024;
/// The bytes of decoded messages one connection may have waiting for the router task in its
/// inbox, 256 KiB (as [`client_message_bytes`] and [`server_message_bytes`] count them): a
/// reader that queued past it waits until the router task has taken the inbox back under it.
/// One message longer than this still goes in alone.
const INBOX_BYTES: usize = 256 * 1024;
/// The bytes the router task takes of one connection at its turn (deficit round robin): 1 KiB.
/// A connection whose next message is longer saves its turns until they add up to it; so in
/// the long run every connection with messages waiting gets the same bytes through the router.
const QUANTUM: usize = 1024;
/// Frames at least this long are decoded on tokio's blocking pool, off the thread that runs
/// the router task: 1 MiB.
const DECODE_ELSEWHERE: usize = 1 << 20;
/// The longest call the subscription inspector reads: 64 KiB. A `$chord.service` call is a
/// few dozen bytes; a longer one is routed as a plain call (a subscription opened with one is
/// not tracked, and its updates are dropped as unrouted).
const INSPECT_LIMIT: usize = 64 * 1024;
/// The bytes of messages a reader decodes before it lets the other tasks on its thread go
/// (the router task, the other connections): 2 KiB, some 60 small calls, so that a reader
/// decoding a flood holds the thread no longer than the router task does for a batch.
const DECODE_SLICE: usize = 2048;
/// The read buffer each reader keeps while it idles.
const READ_CHUNK: usize = 4096;
/// Inputs the router task handles before it hands what they produced to the writers and lets
/// the other tasks run (fewer when a connection that had been idle had its turn: what its
/// message produced is written at once). Everything runs on one thread, so a message that
/// arrives while a batch is under way waits for the rest of it. Under a flood, in a debug
/// build, the median call of the victim in `tests/router_attacks.rs` took 2 ms with 256, 1 ms
/// with 64 (but the router answered 15% less for its CPU), 1.5 ms with 128.
const BATCH: usize = 128;

#[derive(Clone, Debug)]
enum Address {
    Tcp(String),
    Unix(PathBuf),
}

impl Address {
    fn parse(value: &str) -> Address {
        match value.strip_prefix("unix:") {
            Some(path) => Address::Unix(path.into()),
            None if value.contains('/') => Address::Unix(value.into()),
            None => Address::Tcp(value.to_owned()),
        }
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Address::Tcp(address) => f.write_str(address),
            Address::Unix(path) => write!(f, "{}", path.display()),
        }
    }
}

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

async fn connect(address: &Address) -> io::Result<(Reader, Writer)> {
    match address {
        Address::Tcp(address) => {
            let stream = tokio::net::TcpStream::connect(address).await?;
            let _ = stream.set_nodelay(true);
            let (reader, writer) = stream.into_split();
            Ok((Box::new(reader), Box::new(writer)))
        }
        Address::Unix(path) => {
            let (reader, writer) = tokio::net::UnixStream::connect(path).await?.into_split();
            Ok((Box::new(reader), Box::new(writer)))
        }
    }
}

struct Args {
    listen: Address,
    upstreams: Vec<Address>,
    server_id: Option<ServerId>,
    shared: bool,
    connections: Option<u64>,
    quiet: bool,
    options: RouterOptions,
    accept: AcceptOptions,
    max_partial_frame_bytes: usize,
}

/// The arguments, or `None` when `--help` asks for the help.
fn parse_args() -> Result<Option<Args>, String> {
    let mut args = Args {
        listen: Address::Tcp("127.0.0.1:7979".to_owned()),
        upstreams: Vec::new(),
        server_id: None,
        shared: false,
        connections: None,
        quiet: false,
        options: RouterOptions::default(),
        accept: AcceptOptions::default(),
        max_partial_frame_bytes: PARTIAL_FRAME_BUDGET,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        let mut number = || -> Result<u64, String> {
            let text = value()?;
            text.parse().map_err(|_| format!("{flag} needs a number, not {text}"))
        };
        let o = &mut args.options;
        match flag.as_str() {
            "--listen" => args.listen = Address::Tcp(value()?),
            "--unix" => args.listen = Address::Unix(value()?.into()),
            "--upstream" => args.upstreams.push(Address::parse(&value()?)),
            "--server-id" => {
                args.server_id = Some(ServerId::new(value()?).map_err(|e| format!("--server-id: {e}"))?);
            }
            "--shared" => args.shared = true,
            "--dedicated" => args.shared = false,
            "--connections" => args.connections = Some(number()?),
            "--quiet" => args.quiet = true,
            "--max-connections" => args.accept.max_connections = number()? as usize,
            "--handshake-timeout-ms" => o.handshake_timeout = Duration::from_millis(number()?),
            "--upstream-handshake-timeout-ms" => o.upstream_handshake_timeout = Duration::from_millis(number()?),
            "--write-timeout-ms" => o.write_timeout = Duration::from_millis(number()?),
            "--idle-timeout-ms" => o.idle_timeout = Some(Duration::from_millis(number()?)),
            "--frame-timeout-ms" => o.frame_timeout = Duration::from_millis(number()?),
            "--max-frame-before-hello" => o.max_frame_before_hello = number()? as usize,
            "--max-client-queue-bytes" => o.max_client_queue_bytes = number()? as usize,
            "--max-upstream-queue-bytes" => o.max_upstream_queue_bytes = number()? as usize,
            "--max-total-queue-bytes" => o.max_total_queue_bytes = number()? as usize,
            "--max-in-flight-per-shared-upstream" => o.max_in_flight_per_shared_upstream = number()? as usize,
            "--max-held-bytes" => o.max_held_bytes = number()? as usize,
            "--max-partial-frame-bytes" => args.max_partial_frame_bytes = number()? as usize,
            "--help" | "-h" => return Ok(None),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if args.upstreams.is_empty() {
        return Err(format!("at least one --upstream is needed\n{USAGE}"));
    }
    Ok(Some(args))
}

// One task owns the router and every message passes through it: on one thread, handing a
// message between a reader, the router and a writer wakes no other thread.
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let outcome = match parse_args() {
        Ok(Some(args)) => run(args).await,
        Ok(None) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    outcome.map_or_else(
        |message| {
            eprintln!("router: {message}");
            ExitCode::FAILURE
        },
        |()| ExitCode::SUCCESS,
    )
}

/// A listening socket: TCP, or a Unix socket path removed again when dropped.
enum Listening {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener, UnlinkOnDrop),
}

struct UnlinkOnDrop(PathBuf);

impl Drop for UnlinkOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn listen(address: &Address) -> Result<(Listening, String), String> {
    match address {
        Address::Tcp(address) => {
            let listener =
                tokio::net::TcpListener::bind(address).await.map_err(|e| format!("cannot listen on {address}: {e}"))?;
            let local = listener.local_addr().map_err(|e| e.to_string())?;
            Ok((Listening::Tcp(listener), local.to_string()))
        }
        Address::Unix(path) => {
            // A socket nobody answers on is stale: replace it. A live one is in use.
            if path.exists() {
                if tokio::net::UnixStream::connect(path).await.is_ok() {
                    return Err(format!("{} is in use by a live server", path.display()));
                }
                std::fs::remove_file(path).map_err(|e| format!("cannot replace {}: {e}", path.display()))?;
            }
            let listener = tokio::net::UnixListener::bind(path)
                .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
            let guard = UnlinkOnDrop(path.clone());
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())?;
            Ok((Listening::Unix(listener, guard), path.display().to_string()))
        }
    }
}

/// What wakes the router task.
enum Wake {
    /// A connection's inbox holds inputs now.
    Ready(Source),
    /// Inputs wait in the round robin, and the other tasks had their go.
    Serve,
    Accepted(Accepted),
    Progress(Progress),
    Timer,
}

async fn run(args: Args) -> Result<(), String> {
    let home = match args.server_id.clone() {
        Some(home) => home,
        None => announced_server_id(&args.upstreams[0]).await?,
    };
    let (listening, shown) = listen(&args.listen).await?;
    // At most one key a connection at once (`InboxState::scheduled`): bounded by the connections.
    let (ready, mut readied) = mpsc::unbounded_channel::<Source>();
    let (accepts, mut accepted) = mpsc::channel::<Accepted>(1);
    let (progress, mut progressed) = mpsc::unbounded_channel::<Progress>();
    let router = Router::new(home, args.options.clone()).with_inspector(ChordSubscriptions);
    // Every connection task holds a clone of `alive`: once all are dropped, everything was written.
    let (alive, mut writers_done) = mpsc::channel::<()>(1);
    let mut coordinator = Coordinator::new(router, &args, ready, progress, alive);
    if args.shared {
        for address in &args.upstreams {
            coordinator.connect_upstream(address, None);
        }
        coordinator.flush();
        // Serve once every shared upstream has answered its handshake.
        while coordinator.starting > 0 {
            let wake = tokio::select! {
                biased;
                Some(p) = progressed.recv() => Wake::Progress(p),
                Some(source) = readied.recv() => Wake::Ready(source),
                () = tokio::task::yield_now(), if coordinator.has_turns() => Wake::Serve,
            };
            coordinator.router.handle_timeout(Instant::now().into_std());
            coordinator.wake(wake, &mut readied);
            coordinator.flush();
            if let Some(failure) = coordinator.failure.take() {
                return Err(failure);
            }
        }
    }
    println!("listening on {shown}");
    coordinator.print_deferred();
    let quiet = args.quiet;
    let (accept_options, limit) = (args.accept.clone(), args.connections);
    let acceptor = match listening {
        Listening::Tcp(listener) => tokio::spawn(accept(listener, accept_options, accepts, limit, quiet, None)),
        Listening::Unix(listener, guard) => {
            tokio::spawn(accept(listener, accept_options, accepts, limit, quiet, Some(guard)))
        }
    };
    loop {
        let deadline = coordinator.router.poll_timeout().map(Instant::from_std);
        let wake = tokio::select! {
            biased;
            Some(p) = progressed.recv() => Wake::Progress(p),
            Some(source) = readied.recv() => Wake::Ready(source),
            Some(a) = accepted.recv() => Wake::Accepted(a),
            // Inputs wait: served once the readers and writers that can go went.
            () = tokio::task::yield_now(), if coordinator.has_turns() => Wake::Serve,
            () = sleep_until(deadline) => Wake::Timer,
        };
        // The clock first, so that what the input arms counts from now.
        coordinator.router.handle_timeout(Instant::now().into_std());
        coordinator.wake(wake, &mut readied);
        coordinator.flush();
        if coordinator.finished() {
            break;
        }
    }
    acceptor.abort();
    // Closing the queues lets each writer finish and close its connection.
    drop(coordinator);
    let _ = tokio::time::timeout(args.options.write_timeout, writers_done.recv()).await;
    Ok(())
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The `serverId` the server at `address` announces, asked with a [`ClientConnection`] over a
/// connection of its own.
async fn announced_server_id(address: &Address) -> Result<ServerId, String> {
    let (mut reader, mut writer) = connect(address).await.map_err(|e| format!("cannot connect to {address}: {e}"))?;
    let mut connection = ClientConnection::new(ClientOptions::default());
    let mut buf = vec![0u8; 4096];
    loop {
        if let Some(bytes) = connection.poll_transmit() {
            writer.write_all(&bytes).await.map_err(|e| e.to_string())?;
        }
        match connection.poll_event() {
            Some(ClientEvent::Ready { server_id }) => {
                let _ = writer.shutdown().await;
                return Ok(server_id);
            }
            Some(ClientEvent::Closed { reason, .. }) => {
                return Err(format!("{address} refused the handshake: {reason}"))
            }
            Some(_) => continue,
            None => {}
        }
        let read = tokio::time::timeout(Duration::from_secs(5), reader.read(&mut buf)).await;
        match read {
            Ok(Ok(0) | Err(_)) => connection.close(),
            Ok(Ok(n)) => connection.receive(&buf[..n]),
            Err(_) => return Err(format!("{address} did not answer the handshake")),
        }
    }
}

/// Accepts clients until `limit` have connected, at most `options.max_connections` at once,
/// backing off on accept errors (reported once per kind).
async fn accept<L>(
    listener: L,
    options: AcceptOptions,
    accepts: mpsc::Sender<Accepted>,
    limit: Option<u64>,
    quiet: bool,
    _unlink: Option<UnlinkOnDrop>,
) where
    L: Accept,
    L::Stream: Split,
{
    let mut acceptor = Acceptor::new(listener, options).on_report(move |report: &AcceptReport| {
        if !quiet {
            println!("{}", json!({"event": "accept", "report": report.to_string()}));
        }
    });
    let mut accepted = 0u64;
    while limit.is_none_or(|limit| accepted < limit) {
        match acceptor.accept().await {
            Ok(connection) => {
                accepted += 1;
                let (reader, writer) = connection.stream.split();
                if accepts.send(Accepted(reader, writer, connection.permit)).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                eprintln!("router: the listener failed: {e}");
                return;
            }
        }
    }
    // Keep the socket path until the router is done.
    std::future::pending::<()>().await;
}

/// A stream split into the two halves a connection task uses.
trait Split {
    fn split(self) -> (Reader, Writer);
}

impl Split for tokio::net::TcpStream {
    fn split(self) -> (Reader, Writer) {
        let _ = self.set_nodelay(true);
        let (reader, writer) = self.into_split();
        (Box::new(reader), Box::new(writer))
    }
}

impl Split for tokio::net::UnixStream {
    fn split(self) -> (Reader, Writer) {
        let (reader, writer) = self.into_split();
        (Box::new(reader), Box::new(writer))
    }
}

/// How a connection's stream ended, as its reader saw it.
enum End {
    PeerClosed,
    Io(io::Error),
    Decode(ProtocolError),
    FrameTimeout,
    /// A read would have taken the partial-frame budget (of this many bytes) past its limit.
    BudgetExceeded(usize),
}

/// A client the acceptor accepted, for the router task.
struct Accepted(Reader, Writer, ConnectionPermit);

/// What a connection's reader leaves in its inbox for the task that owns the router.
enum Input {
    /// A decoded message from a client, holding its share of the inbound budget.
    FromClient(ClientKey, ClientMessage, Budget),
    /// The client's stream ended.
    ClientEnded(ClientKey, End),
    /// A decoded message from an upstream.
    FromUpstream(UpstreamKey, ServerMessage, Budget),
    /// The upstream's stream ended or never connected.
    UpstreamEnded(UpstreamKey, End),
}

/// What a decoded message holds until the router task handled it: its bytes of the inbound
/// budget shared by every reader.
#[allow(dead_code)]
struct Budget(OwnedSemaphorePermit);

/// A connection, as its reader names itself to the router task.
#[derive(Clone, Copy)]
enum Source {
    Client(ClientKey),
    Upstream(UpstreamKey),
}

/// One connection's decoded inputs waiting for the router task. Its reader puts them in, the
/// router task takes them out at the connection's turns.
#[derive(Default)]
struct Inbox {
    state: Mutex<InboxState>,
    /// Told when the router task took the inbox back under [`INBOX_BYTES`], or closed it.
    room: Notify,
}

#[derive(Default)]
struct InboxState {
    /// The messages, each with its bytes.
    queue: VecDeque<(Input, usize)>,
    /// The sum of the bytes in `queue`.
    bytes: usize,
    /// How the stream ended, handed over after the last message.
    end: Option<Input>,
    /// Whether the router task knows the inbox holds something (its key was sent on the ready
    /// channel, or it has a place in the round robin): at most once per connection, so the
    /// ready channel holds at most one key per connection.
    scheduled: bool,
    /// The router closed the connection: nothing more goes in.
    closed: bool,
}

/// Why [`Inbox::take`] stopped.
enum Taken {
    /// The inbox is empty (and no longer scheduled).
    Empty,
    /// The next message is longer than the credit left.
    Spent,
    /// The batch is full.
    Full,
}

impl Inbox {
    fn state(&self) -> MutexGuard<'_, InboxState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Moves to `into` the inputs that fit in `credit` (which it lowers by their bytes) until
    /// `into` holds `max`; the end of the stream after the last message. `alone`: no other
    /// connection waits, so a message longer than the credit is taken at once rather than
    /// after as many turns as it needs.
    fn take(&self, credit: &mut usize, alone: bool, max: usize, into: &mut Vec<Input>) -> Taken {
        let mut state = self.state();
        let over = state.bytes > INBOX_BYTES;
        let taken = loop {
            match state.queue.front() {
                Some((_, bytes)) if *bytes > *credit && alone && into.is_empty() => *credit = *bytes,
                Some((_, bytes)) if *bytes > *credit => break Taken::Spent,
                None if state.end.is_none() => {
                    state.scheduled = false;
                    break Taken::Empty;
                }
                _ if into.len() >= max => break Taken::Full,
                _ => {}
            }
            match state.queue.pop_front() {
                Some((input, bytes)) => {
                    *credit -= bytes;
                    state.bytes -= bytes;
                    into.push(input);
                }
                None => into.extend(state.end.take()),
            }
        };
        if over && state.bytes <= INBOX_BYTES {
            self.room.notify_one();
        }
        taken
    }

    /// The router closed the connection: drops what waits (releasing its inbound budget) and
    /// lets a reader waiting for room go.
    fn close(&self) {
        let dropped = {
            let mut state = self.state();
            state.closed = true;
            state.bytes = 0;
            drop(state.end.take());
            std::mem::take(&mut state.queue)
        };
        drop(dropped);
        self.room.notify_one();
    }
}

/// A connection's place in the router task's round robin: it has inputs waiting.
struct Turn {
    source: Source,
    /// The bytes it may still take (deficit round robin).
    credit: usize,
    /// A turn cut short by the end of a batch, to go on without a new quantum.
    started: bool,
}

/// A reader's end of its connection's inbox.
struct Feed {
    inbox: Arc<Inbox>,
    ready: mpsc::UnboundedSender<Source>,
    source: Source,
}

impl Feed {
    /// Puts `input` in the inbox, waking the router task if the inbox was empty; `false` once
    /// the router closed the connection.
    fn put(&self, input: Input, bytes: usize, end: bool) -> bool {
        let wake = {
            let mut state = self.inbox.state();
            if state.closed {
                return false;
            }
            if end {
                state.end = Some(input);
            } else {
                state.queue.push_back((input, bytes));
                state.bytes += bytes;
            }
            !std::mem::replace(&mut state.scheduled, true)
        };
        if wake {
            let _ = self.ready.send(self.source);
        }
        true
    }

    /// Puts a message in the inbox, then waits while the inbox holds more than
    /// [`INBOX_BYTES`]; `false` once the router closed the connection.
    async fn send(&self, input: Input, bytes: usize) -> bool {
        if !self.put(input, bytes, false) {
            return false;
        }
        loop {
            {
                let state = self.inbox.state();
                if state.closed {
                    return false;
                }
                if state.bytes <= INBOX_BYTES {
                    return true;
                }
            }
            // `notify_one` keeps a permit when nobody waits: a take between the check and
            // here is not missed.
            self.inbox.room.notified().await;
        }
    }

    /// Hands over how the stream ended, after every message put before.
    fn end(&self, input: Input) {
        self.put(input, 0, true);
    }
}

/// What the writers tell the router task: bytes written, or a write that failed.
enum Progress {
    Client(ClientKey, Result<usize, io::Error>),
    Upstream(UpstreamKey, Result<usize, io::Error>),
}

/// The router task's handle on one connection task.
struct Connection<M> {
    queue: mpsc::UnboundedSender<M>,
    /// Fired to start reading (a client waiting for its dedicated upstreams).
    go: Option<oneshot::Sender<()>>,
    /// Fired (or dropped) to stop reading at once.
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::AbortHandle,
    /// What its reader decoded and the router task has not taken yet.
    inbox: Arc<Inbox>,
}

impl<M> Connection<M> {
    /// The router closed it: stop reading now and drop what it read and the router task did
    /// not take; drop the queue at once when the peer does not read, else let the writer
    /// finish it (within the write timeout) and close.
    fn close(self, reason: &CloseReason) {
        if reason.drops_queue() {
            self.task.abort();
        }
        drop(self.stop);
        self.inbox.close();
    }
}

/// The task that owns the router: it turns inputs into router calls and router output into
/// writes and closes.
struct Coordinator {
    router: Router,
    ready: mpsc::UnboundedSender<Source>,
    /// Connections with inputs waiting that became ready since their last turn: served first,
    /// so that a connection that sends a message now and then does not wait behind the
    /// connections that always have some.
    fresh: VecDeque<Turn>,
    /// The other connections with inputs waiting, in round-robin order.
    ring: VecDeque<Turn>,
    /// What the turn being served took from its inbox (kept for its allocation).
    taken: Vec<Input>,
    progress: mpsc::UnboundedSender<Progress>,
    inbound: Arc<Semaphore>,
    partial: ByteBudget,
    alive: mpsc::Sender<()>,
    upstream_addresses: Vec<Address>,
    shared: bool,
    quiet: bool,
    clients: HashMap<ClientKey, Connection<ServerMessage>>,
    upstreams: HashMap<UpstreamKey, Connection<ClientMessage>>,
    /// Clients waiting for their dedicated upstreams before their first frame is read, and how
    /// many they still wait for.
    waiting: HashMap<ClientKey, usize>,
    /// The client of each dedicated upstream.
    owners: HashMap<UpstreamKey, ClientKey>,
    /// Dedicated upstreams that have neither answered their handshake nor failed.
    unsettled: HashSet<UpstreamKey>,
    /// Shared upstreams that have not answered their handshake yet (startup).
    starting: usize,
    failure: Option<String>,
    /// Event lines of the startup, printed after the `listening on` line.
    deferred: Option<Vec<Value>>,
    limit: Option<u64>,
    served: u64,
}

impl Coordinator {
    fn new(
        router: Router,
        args: &Args,
        ready: mpsc::UnboundedSender<Source>,
        progress: mpsc::UnboundedSender<Progress>,
        alive: mpsc::Sender<()>,
    ) -> Self {
        Coordinator {
            router,
            ready,
            fresh: VecDeque::new(),
            ring: VecDeque::new(),
            taken: Vec::new(),
            progress,
            inbound: Arc::new(Semaphore::new(INBOUND_BUDGET)),
            partial: ByteBudget::new(args.max_partial_frame_bytes),
            alive,
            upstream_addresses: args.upstreams.clone(),
            shared: args.shared,
            quiet: args.quiet,
            clients: HashMap::new(),
            upstreams: HashMap::new(),
            waiting: HashMap::new(),
            owners: HashMap::new(),
            unsettled: HashSet::new(),
            starting: 0,
            failure: None,
            deferred: Some(Vec::new()),
            limit: args.connections,
            served: 0,
        }
    }

    /// Whether `--connections` clients came and went.
    fn finished(&self) -> bool {
        self.limit.is_some_and(|limit| self.served >= limit) && self.clients.is_empty()
    }

    fn reader_options(&self) -> ReaderOptions {
        let options = self.router.options();
        ReaderOptions {
            frame_timeout: options.frame_timeout,
            max_before_hello: None,
            inbound: self.inbound.clone(),
            partial: self.partial.charge(),
        }
    }

    /// Registers an upstream (dedicated to `owner`, or shared) and connects it in the background.
    fn connect_upstream(&mut self, address: &Address, owner: Option<ClientKey>) {
        let key = match owner {
            Some(client) => match self.router.add_dedicated_upstream(client) {
                Ok(key) => key,
                Err(_) => return,
            },
            None => {
                self.starting += 1;
                self.router.add_upstream()
            }
        };
        if let Some(client) = owner {
            self.owners.insert(key, client);
            self.unsettled.insert(key);
        }
        let (sender, queue) = mpsc::unbounded_channel();
        let (stop, stopped) = oneshot::channel();
        let inbox = Arc::new(Inbox::default());
        let feed = self.feed(&inbox, Source::Upstream(key));
        let progress = self.progress.clone();
        let alive = self.alive.clone();
        let address = address.clone();
        let reader_options = self.reader_options();
        let write_timeout = self.router.options().write_timeout;
        let task = tokio::spawn(async move {
            let (reader, writer) = match connect(&address).await {
                Ok(halves) => halves,
                Err(e) => return feed.end(Input::UpstreamEnded(key, End::Io(e))),
            };
            let sink = FramedWrite::new(writer, ClientCodec::new());
            let wire = Wire { bytes_of: client_message_bytes, encode: pi_protocol::encode_client_message };
            let write = write_loop(sink, queue, write_timeout, wire, move |r| {
                let _ = progress.send(Progress::Upstream(key, r));
            });
            let read = read_loop(reader, ClientCodec::new(), reader_options, feed, server_message_bytes, key);
            // The router's hello is already in the queue.
            run_connection(read, write, None, stopped, alive).await;
        });
        let connection = Connection { queue: sender, go: None, stop: Some(stop), task: task.abort_handle(), inbox };
        self.upstreams.insert(key, connection);
    }

    /// The reader's end of `inbox`, the inbox of `source`.
    fn feed(&self, inbox: &Arc<Inbox>, source: Source) -> Feed {
        Feed { inbox: inbox.clone(), ready: self.ready.clone(), source }
    }

    /// `source` has inputs waiting (its reader said so on the ready channel).
    fn ready(&mut self, source: Source) {
        self.fresh.push_back(Turn { source, credit: 0, started: false });
    }

    /// Whether some connection has inputs waiting for its turn.
    fn has_turns(&self) -> bool {
        !self.fresh.is_empty() || !self.ring.is_empty()
    }

    /// Serves the connections with inputs waiting, round robin, until `BATCH` inputs are
    /// handled, none wait, or a connection that had been idle had its turn (so that what its
    /// message produced is written at once).
    fn serve(&mut self, ready: &mut mpsc::UnboundedReceiver<Source>) {
        let mut handled = 0;
        while handled < BATCH {
            while let Ok(source) = ready.try_recv() {
                self.ready(source);
            }
            let (mut turn, fresh) = match self.fresh.pop_front() {
                Some(turn) => (turn, true),
                None => match self.ring.pop_front() {
                    Some(turn) => (turn, false),
                    None => break,
                },
            };
            if !turn.started {
                turn.credit += QUANTUM;
            }
            let alone = !self.has_turns();
            let mut taken = std::mem::take(&mut self.taken);
            let inbox = match turn.source {
                Source::Client(client) => self.clients.get(&client).map(|c| &c.inbox),
                Source::Upstream(upstream) => self.upstreams.get(&upstream).map(|c| &c.inbox),
            };
            // A connection the router closed has no inbox any more: its turn is dropped.
            let outcome =
                inbox.map_or(Taken::Empty, |inbox| inbox.take(&mut turn.credit, alone, BATCH - handled, &mut taken));
            handled += taken.len();
            for input in taken.drain(..) {
                self.handle(input);
            }
            self.taken = taken;
            match outcome {
                Taken::Empty => {}
                // The rest of its turn at the next batch, before the rest of the ring.
                Taken::Full => {
                    turn.started = true;
                    self.ring.push_front(turn);
                }
                Taken::Spent => {
                    turn.started = false;
                    self.ring.push_back(turn);
                }
            }
            if fresh {
                break;
            }
        }
    }

    /// Acts on what woke the router task (before the router's output is flushed).
    fn wake(&mut self, wake: Wake, ready: &mut mpsc::UnboundedReceiver<Source>) {
        match wake {
            Wake::Ready(source) => {
                self.ready(source);
                self.serve(ready);
            }
            Wake::Serve => self.serve(ready),
            Wake::Accepted(accepted) => self.accepted(accepted),
            Wake::Progress(p) => self.progress(p),
            Wake::Timer => {}
        }
    }

    fn handle(&mut self, input: Input) {
        match input {
            Input::FromClient(client, message, _budget) => self.router.client_message(client, message),
            Input::ClientEnded(client, end) => match end {
                End::PeerClosed => self.router.client_peer_closed(client),
                End::Io(e) => self.router.client_transport_failed(client, &e),
                End::Decode(e) => self.router.client_decode_failed(client, e),
                End::FrameTimeout => self.router.client_frame_timed_out(client),
                End::BudgetExceeded(limit) => self.router.client_budget_exceeded(client, limit),
            },
            Input::FromUpstream(upstream, message, _budget) => self.router.upstream_message(upstream, message),
            Input::UpstreamEnded(upstream, end) => match end {
                End::PeerClosed => self.router.upstream_peer_closed(upstream),
                End::Io(e) => {
                    self.log(json!({"event": "upstream_error", "upstream": upstream.get(), "error": e.to_string()}));
                    self.router.upstream_transport_failed(upstream, &e);
                }
                End::Decode(e) => self.router.upstream_decode_failed(upstream, e),
                End::FrameTimeout => self.router.upstream_frame_timed_out(upstream),
                End::BudgetExceeded(limit) => self.router.upstream_budget_exceeded(upstream, limit),
            },
        }
    }

    fn progress(&mut self, progress: Progress) {
        match progress {
            Progress::Client(client, Ok(bytes)) => self.router.client_written(client, bytes),
            Progress::Client(client, Err(e)) => self.router.client_transport_failed(client, &e),
            Progress::Upstream(upstream, Ok(bytes)) => self.router.upstream_written(upstream, bytes),
            Progress::Upstream(upstream, Err(e)) => self.router.upstream_transport_failed(upstream, &e),
        }
    }

    fn accepted(&mut self, Accepted(reader, writer, permit): Accepted) {
        self.served += 1;
        let client = self.router.add_client();
        let inbox = Arc::new(Inbox::default());
        let feed = self.feed(&inbox, Source::Client(client));
        let (sender, queue) = mpsc::unbounded_channel();
        let (stop, stopped) = oneshot::channel();
        let (go, start) = oneshot::channel();
        let progress = self.progress.clone();
        let mut reader_options = self.reader_options();
        reader_options.max_before_hello = Some(self.router.options().max_frame_before_hello);
        let sink = FramedWrite::new(writer, ServerCodec::new());
        let wire = Wire { bytes_of: server_message_bytes, encode: pi_protocol::encode_server_message };
        let write = write_loop(sink, queue, self.router.options().write_timeout, wire, move |r| {
            let _ = progress.send(Progress::Client(client, r));
        });
        let read = read_loop(reader, ServerCodec::new(), reader_options, feed, client_message_bytes, client);
        let alive = self.alive.clone();
        let task = tokio::spawn(async move {
            let _permit = permit;
            run_connection(read, write, Some(start), stopped, alive).await;
        });
        let mut connection =
            Connection { queue: sender, go: Some(go), stop: Some(stop), task: task.abort_handle(), inbox };
        if self.shared {
            if let Some(go) = connection.go.take() {
                let _ = go.send(());
            }
        } else {
            let addresses = self.upstream_addresses.clone();
            self.waiting.insert(client, addresses.len());
        }
        self.clients.insert(client, connection);
        if !self.shared {
            for address in &self.upstream_addresses.clone() {
                self.connect_upstream(address, Some(client));
            }
        }
    }

    /// A dedicated upstream answered its handshake or failed: once all of its client's have,
    /// read the client.
    fn dedicated_settled(&mut self, upstream: UpstreamKey) {
        if !self.unsettled.remove(&upstream) {
            return;
        }
        let Some(client) = self.owners.get(&upstream).copied() else { return };
        let Some(remaining) = self.waiting.get_mut(&client) else { return };
        *remaining -= 1;
        if *remaining == 0 {
            self.waiting.remove(&client);
            if let Some(go) = self.clients.get_mut(&client).and_then(|c| c.go.take()) {
                let _ = go.send(());
            }
        }
    }

    /// Hands every transmit to its writer and acts on every event.
    fn flush(&mut self) {
        while let Some(transmit) = self.router.poll_transmit() {
            match transmit {
                Transmit::ToClient { client, message } => {
                    if let Some(connection) = self.clients.get(&client) {
                        let _ = connection.queue.send(message);
                    }
                }
                Transmit::ToUpstream { upstream, message } => {
                    if let Some(connection) = self.upstreams.get(&upstream) {
                        let _ = connection.queue.send(message);
                    }
                }
                _ => {}
            }
        }
        while let Some(event) = self.router.poll_event() {
            self.log_event(&event);
            match event {
                RouterEvent::ClientClosed { client, reason } => {
                    if let Some(connection) = self.clients.remove(&client) {
                        connection.close(&reason);
                    }
                    self.waiting.remove(&client);
                }
                RouterEvent::UpstreamReady { upstream, .. } => {
                    if self.owners.contains_key(&upstream) {
                        self.dedicated_settled(upstream);
                    } else {
                        self.starting = self.starting.saturating_sub(1);
                    }
                }
                RouterEvent::UpstreamClosed { upstream, reason, .. } => {
                    if let Some(connection) = self.upstreams.remove(&upstream) {
                        connection.close(&reason);
                    }
                    if self.owners.contains_key(&upstream) {
                        self.dedicated_settled(upstream);
                        self.owners.remove(&upstream);
                    } else if self.starting > 0 {
                        self.failure = Some(format!("upstream {} failed at startup: {reason}", upstream.get()));
                    }
                }
                _ => {}
            }
        }
    }

    fn log(&mut self, line: Value) {
        match &mut self.deferred {
            _ if self.quiet => {}
            Some(deferred) => deferred.push(line),
            None => println!("{line}"),
        }
    }

    fn print_deferred(&mut self) {
        for line in self.deferred.take().unwrap_or_default() {
            self.log(line);
        }
    }

    fn log_event(&mut self, event: &RouterEvent) {
        if self.quiet {
            return;
        }
        let line = match event {
            RouterEvent::ClientReady { client } => json!({"event": "client_ready", "client": client.get()}),
            RouterEvent::ClientClosed { client, reason } => json!({
                "event": "client_closed", "client": client.get(), "reason": reason.to_string(),
                "kind": reason_kind(reason),
            }),
            RouterEvent::UpstreamReady { upstream, server_id, replaced } => json!({
                "event": "upstream_ready", "upstream": upstream.get(), "serverId": server_id,
                "replaced": replaced.map(UpstreamKey::get),
            }),
            RouterEvent::UpstreamClosed { upstream, reason, failed } => json!({
                "event": "upstream_closed", "upstream": upstream.get(), "reason": reason.to_string(),
                "kind": reason_kind(reason), "failed": failed,
            }),
            RouterEvent::Refused { client, id, reason } => {
                json!({"event": "refused", "client": client.get(), "id": id, "reason": format!("{reason:?}")})
            }
            RouterEvent::Release { upstream, route } => {
                json!({"event": "release", "upstream": upstream.get(), "route": route})
            }
            RouterEvent::UnroutedUpdate { upstream, subscription_id } => {
                json!({"event": "unrouted_update", "upstream": upstream.get(), "subscriptionId": subscription_id})
            }
            other => json!({"event": format!("{other:?}")}),
        };
        self.log(line);
    }
}

/// A short name of a close reason for the event lines: `local`, `peer_closed`, `transport`,
/// `timeout_handshake`, `too_slow`, `budget_exceeded`, ...
fn reason_kind(reason: &CloseReason) -> String {
    match reason {
        CloseReason::Local => "local".to_owned(),
        CloseReason::PeerClosed => "peer_closed".to_owned(),
        CloseReason::Transport(_) => "transport".to_owned(),
        CloseReason::Rejected(_) => "rejected".to_owned(),
        CloseReason::UnsupportedVersion(_) => "unsupported_version".to_owned(),
        CloseReason::Violation(_) => "violation".to_owned(),
        CloseReason::TransmitQueueFull { .. } => "too_slow".to_owned(),
        CloseReason::Timeout(deadline) => format!("timeout_{deadline:?}").to_lowercase(),
        CloseReason::BudgetExceeded { .. } => "budget_exceeded".to_owned(),
        _ => "other".to_owned(),
    }
}

/// Runs a connection's reader and writer together: reading starts when `start` fires (at once
/// without one) and stops when `stop` fires or is dropped; the writer runs until its queue is
/// dropped and drained. `alive` is dropped when both are done.
async fn run_connection(
    read: impl std::future::Future<Output = ()>,
    write: impl std::future::Future<Output = ()>,
    start: Option<oneshot::Receiver<()>>,
    mut stop: oneshot::Receiver<()>,
    alive: mpsc::Sender<()>,
) {
    let read = async {
        if let Some(start) = start {
            tokio::select! {
                go = start => if go.is_err() { return },
                _ = &mut stop => return,
            }
        }
        tokio::select! {
            () = read => {}
            _ = &mut stop => {}
        }
    };
    tokio::join!(read, write);
    drop(alive);
}

struct ReaderOptions {
    frame_timeout: Duration,
    /// The frame limit until the first message decoded (clients: before their `hello`).
    max_before_hello: Option<usize>,
    inbound: Arc<Semaphore>,
    /// This reader's share of the budget for frames not yet decoded.
    partial: ByteCharge,
}

/// Reads and decodes frames until the stream ends, putting each message in the connection's
/// inbox once the inbound budget has room for it, and waiting while the inbox is full; a frame
/// begun and not finished within the frame timeout ends it.
async fn read_loop<C, M, K>(
    mut reader: Reader,
    mut codec: C,
    mut options: ReaderOptions,
    feed: Feed,
    bytes_of: fn(&M) -> usize,
    key: K,
) where
    C: Decoder<Item = M, Error = IoError> + Clone + Send + 'static,
    M: Send + 'static,
    K: Key<M>,
{
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut limit = options.max_before_hello;
    let mut frame_started: Option<Instant> = None;
    // The bytes decoded since this reader last let the other tasks go.
    let mut sliced = 0;
    let end = 'read: loop {
        let mut decoded = false;
        loop {
            if let (Some(limit), Some(header)) = (limit, buf.get(..4)) {
                let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
                if length as usize > limit {
                    let rule = Rule::FrameTooLong { length: u64::from(length), limit: limit as u64 };
                    break 'read End::Decode(ProtocolError::new(ErrorKind::Frame, rule));
                }
            }
            let length = buf.get(..4).map(|h| u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize);
            let decoded_message = match length {
                // A long frame, all here: decoded on the blocking pool, so that the router
                // task and the other connections go on meanwhile.
                Some(length) if length >= DECODE_ELSEWHERE && buf.len() >= 4 + length => {
                    let mut frame = buf.split_to(4 + length);
                    let mut elsewhere = codec.clone();
                    match tokio::task::spawn_blocking(move || elsewhere.decode(&mut frame)).await {
                        Ok(result) => result,
                        Err(e) => Err(IoError::Io(io::Error::other(e.to_string()))),
                    }
                }
                _ => codec.decode(&mut buf),
            };
            match decoded_message {
                Ok(Some(message)) => {
                    decoded = true;
                    limit = None;
                    let bytes = bytes_of(&message).min(INBOUND_BUDGET);
                    let Ok(permit) = options.inbound.clone().acquire_many_owned(bytes as u32).await else { return };
                    if !feed.send(key.message(message, Budget(permit)), bytes).await {
                        return;
                    }
                    // The router task and the other connections (all on this one thread) go
                    // between two slices of this reader's decoding.
                    sliced += bytes;
                    if sliced >= DECODE_SLICE {
                        sliced = 0;
                        tokio::task::yield_now().await;
                    }
                }
                Ok(None) => break,
                Err(IoError::Protocol(e)) => break 'read End::Decode(e),
                Err(IoError::Io(e)) => break 'read End::Io(e),
                Err(e) => break 'read End::Io(io::Error::other(e.to_string())),
            }
        }
        // What is left is a frame partly received: its bytes stay charged (a decoded message
        // holds its own bytes under the inbound budget).
        options.partial.lower_to(buf.len());
        if buf.is_empty() {
            frame_started = None;
        } else if decoded || frame_started.is_none() {
            frame_started = Some(Instant::now());
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        let read = reader.read_buf(&mut buf);
        let result = match frame_started {
            None => read.await,
            Some(started) => match tokio::time::timeout_at(started + options.frame_timeout, read).await {
                Ok(result) => result,
                Err(_) => break End::FrameTimeout,
            },
        };
        match result {
            Ok(0) if buf.is_empty() => break End::PeerClosed,
            Ok(0) => break End::Decode(ProtocolError::new(ErrorKind::Frame, Rule::TruncatedFrame)),
            Ok(_) if !options.partial.set(buf.len()) => break End::BudgetExceeded(options.partial.limit()),
            Ok(_) => {}
            Err(e) => break End::Io(e),
        }
    };
    feed.end(key.ended(end));
}

/// How a reader names what it read, for a client or an upstream.
trait Key<M>: Copy {
    fn message(self, message: M, budget: Budget) -> Input;
    fn ended(self, end: End) -> Input;
}

impl Key<ClientMessage> for ClientKey {
    fn message(self, message: ClientMessage, budget: Budget) -> Input {
        Input::FromClient(self, message, budget)
    }
    fn ended(self, end: End) -> Input {
        Input::ClientEnded(self, end)
    }
}

impl Key<ServerMessage> for UpstreamKey {
    fn message(self, message: ServerMessage, budget: Budget) -> Input {
        Input::FromUpstream(self, message, budget)
    }
    fn ended(self, end: End) -> Input {
        Input::UpstreamEnded(self, end)
    }
}

/// Writes what is queued, a batch per flush, reporting the bytes of each batch (as the router
/// counts them) or the failure; once the queue is dropped and drained, closes the stream
/// within `write_timeout`.
async fn write_loop<C, M>(
    mut sink: FramedWrite<Writer, C>,
    mut queue: mpsc::UnboundedReceiver<M>,
    write_timeout: Duration,
    wire: Wire<M>,
    report: impl Fn(Result<usize, io::Error>),
) where
    C: Encoder<M, Error = IoError>,
    M: Send + 'static,
{
    let failed = |e: IoError| match e {
        IoError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    };
    while let Some(message) = queue.recv().await {
        let mut bytes = 0;
        let mut next = Some(message);
        while let Some(message) = next.take().or_else(|| queue.try_recv().ok()) {
            let size = (wire.bytes_of)(&message);
            bytes += size;
            let fed = if size >= DECODE_ELSEWHERE {
                // A long message is encoded on the blocking pool, then written as it is.
                let encode = wire.encode;
                match tokio::task::spawn_blocking(move || encode(&message)).await {
                    Ok(Ok(frame)) => match sink.flush().await {
                        Ok(()) => sink.get_mut().write_all(&frame).await.map_err(IoError::Io),
                        Err(e) => Err(e),
                    },
                    Ok(Err(e)) => Err(IoError::Protocol(e)),
                    Err(e) => Err(IoError::Io(io::Error::other(e.to_string()))),
                }
            } else {
                sink.feed(message).await
            };
            if let Err(e) = fed {
                return report(Err(failed(e)));
            }
        }
        if let Err(e) = sink.flush().await {
            return report(Err(failed(e)));
        }
        report(Ok(bytes));
    }
    let _ = tokio::time::timeout(write_timeout, sink.close()).await;
}

/// How a writer measures and, for long messages, encodes what it writes.
struct Wire<M> {
    bytes_of: fn(&M) -> usize,
    encode: fn(&M) -> Result<Vec<u8>, ProtocolError>,
}

/// The application's knowledge the router needs: which calls open and close subscriptions
/// (`$chord.service` `subscribe` / `unsubscribe`, read by Chord's own grammar,
/// `pi_protocol::chord::wire::ControlCall`).
struct ChordSubscriptions;

impl CallInspector for ChordSubscriptions {
    fn inspect(&mut self, request: &Request) -> CallEffect {
        // Only calls that name the control service are read at all.
        let cbor = request.call.as_cbor();
        let name = SERVICE_CONTROL_ID.as_bytes();
        if cbor.len() > INSPECT_LIMIT || !cbor.windows(name.len()).any(|w| w == name) {
            return CallEffect::Plain;
        }
        let control = ServiceCall::from_payload(&request.call).ok().and_then(|call| ControlCall::from_call(&call));
        let subscription = |id: &str| SubscriptionId::new(id).ok();
        let effect = match control {
            Some(ControlCall::Subscribe { subscription_id, .. }) => {
                subscription(&subscription_id).map(CallEffect::Subscribe)
            }
            Some(ControlCall::Unsubscribe { subscription_id }) => {
                subscription(&subscription_id).map(CallEffect::Unsubscribe)
            }
            _ => None,
        };
        effect.unwrap_or(CallEffect::Plain)
    }

    fn unsubscribe_call(&mut self, subscription: &SubscriptionId) -> Option<Payload> {
        ControlCall::unsubscribe(subscription.as_str()).ok()?.to_payload().ok()
    }
}
