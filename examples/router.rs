//! A Pi protocol coordinator over TCP: the sans-IO [`Router`] driven by tokio, between many
//! clients and the server processes behind it.
//!
//! ```text
//! cargo run --example server --features tokio -- --listen 127.0.0.1:7878
//! cargo run --example server --features tokio -- --listen 127.0.0.1:7880 --server-id 9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f
//! cargo run --example router --features tokio -- --listen 127.0.0.1:7979 --upstream 127.0.0.1:7878 --upstream 127.0.0.1:7880
//! cargo run --example client --features tokio -- --connect 127.0.0.1:7979
//! ```
//!
//! Flags: `--listen ADDR` (default `127.0.0.1:7979`; port 0 picks a free port), `--upstream ADDR`
//! (one per server process, at least one), `--server-id UUID` (the home `serverId` its
//! handshake names; default: the one the first upstream announces, asked over a short
//! connection of its own), `--dedicated` (one upstream connection per client and server instead
//! of one shared connection per server: see the [`router`](pi_protocol::connection::router)
//! module), `--connections N` (exit once N clients have come and gone; default: serve forever),
//! `--quiet` (no event lines).
//!
//! The first line on stdout is `listening on ADDR`, printed once every shared upstream has
//! answered its handshake; after it, one JSON object a line per router event (`client_ready`,
//! `client_closed`, `upstream_ready`, `upstream_closed`, `refused`, `release`,
//! `unrouted_update`).
//!
//! Each connection has a reader task (decoding with the zero-copy `io` codecs, so payloads are
//! slices of the read buffer), a writer task (which batches what is queued into one flush), and
//! one task owns the router: messages in, transmits out to the writers' bounded queues. A
//! client whose queue is full is disconnected rather than buffered without bound; an upstream
//! too. Subscriptions are told apart with the `$chord.service` convention of the `server`
//! example: `subscribe` and `unsubscribe` take the subscription id as their first argument.

use std::collections::{HashMap, HashSet};
use std::process::ExitCode;

use futures_util::{SinkExt, StreamExt};
use pi_protocol::connection::{
    CallEffect, CallInspector, ClientConnection, ClientEvent, ClientKey, ClientOptions, Router, RouterEvent,
    RouterOptions, Transmit, UpstreamKey,
};
use pi_protocol::io::{ClientCodec, ServerCodec};
use pi_protocol::{ClientMessage, Payload, Request, ServerId, ServerMessage, SubscriptionId};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio_util::codec::{Decoder, Encoder, FramedRead, FramedWrite};

const USAGE: &str =
    "usage: router [--listen ADDR] --upstream ADDR [--upstream ADDR ...] [--server-id UUID] [--dedicated] [--connections N] [--quiet]";
/// What `--help` prints (on stdout, exit status 0).
const HELP: &str = "A Pi protocol coordinator over TCP: routes many clients to the server processes behind it.

usage: router [--listen ADDR] --upstream ADDR [--upstream ADDR ...] [--server-id UUID] [--dedicated] [--connections N] [--quiet]

  --listen ADDR      address to listen on (default 127.0.0.1:7979; port 0 picks a free port)
  --upstream ADDR    a server process to route to (one per server, at least one)
  --server-id UUID   the home serverId its handshake names (default: the one the first upstream announces)
  --dedicated        one upstream connection per client and server instead of one shared per server
  --connections N    exit once N clients have come and gone (default: serve forever)
  --quiet            no event lines
  -h, --help         print this help

The first line on stdout is `listening on ADDR`, then one JSON object a line per router event.";

/// Messages queued for one client's writer before the client counts as too slow.
const CLIENT_QUEUE: usize = 4096;
/// Messages queued for one upstream's writer before it counts as too slow.
const UPSTREAM_QUEUE: usize = 65536;

struct Args {
    listen: String,
    upstreams: Vec<String>,
    server_id: Option<ServerId>,
    dedicated: bool,
    connections: Option<u64>,
    quiet: bool,
}

/// The arguments, or `None` when `--help` asks for the help.
fn parse_args() -> Result<Option<Args>, String> {
    let mut args = Args {
        listen: "127.0.0.1:7979".to_owned(),
        upstreams: Vec::new(),
        server_id: None,
        dedicated: false,
        connections: None,
        quiet: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--listen" => args.listen = value()?,
            "--upstream" => args.upstreams.push(value()?),
            "--server-id" => {
                args.server_id = Some(ServerId::new(value()?).map_err(|e| format!("--server-id: {e}"))?);
            }
            "--dedicated" => args.dedicated = true,
            "--connections" => {
                args.connections = Some(value()?.parse().map_err(|_| "--connections needs a number".to_owned())?);
            }
            "--quiet" => args.quiet = true,
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

async fn run(args: Args) -> Result<(), String> {
    let home = match args.server_id.clone() {
        Some(home) => home,
        None => announced_server_id(&args.upstreams[0]).await?,
    };
    let listener =
        TcpListener::bind(&args.listen).await.map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let (inputs, mut received) = mpsc::channel::<Input>(4096);
    let router = Router::new(home, RouterOptions::default()).with_inspector(ChordSubscriptions);
    // Every writer holds a clone of `alive`: once all are dropped, everything queued was written.
    let (alive, mut writers_done) = mpsc::channel::<()>(1);
    let mut coordinator = Coordinator::new(router, &args, inputs.clone(), alive);
    if !args.dedicated {
        for address in &args.upstreams {
            coordinator.connect_upstream(address, None);
        }
        coordinator.flush();
        // Serve once every shared upstream has answered its handshake.
        while coordinator.starting > 0 {
            let input = received.recv().await.ok_or("the router stopped")?;
            coordinator.handle(input);
            coordinator.flush();
            if let Some(failure) = coordinator.failure.take() {
                return Err(failure);
            }
        }
    }
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    println!("listening on {address}");
    coordinator.print_deferred();
    tokio::spawn(accept(listener, inputs, args.connections));
    while let Some(input) = received.recv().await {
        coordinator.handle(input);
        coordinator.flush();
        if coordinator.finished() {
            break;
        }
    }
    // Closing the queues lets each writer finish and close its connection.
    drop(coordinator);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writers_done.recv()).await;
    Ok(())
}

/// The `serverId` the server at `address` announces, asked with a [`ClientConnection`] over a
/// connection of its own.
async fn announced_server_id(address: &str) -> Result<ServerId, String> {
    let mut stream = TcpStream::connect(address).await.map_err(|e| format!("cannot connect to {address}: {e}"))?;
    let mut connection = ClientConnection::new(ClientOptions::default());
    let mut buf = vec![0u8; 4096];
    loop {
        if let Some(bytes) = connection.poll_transmit() {
            stream.write_all(&bytes).await.map_err(|e| e.to_string())?;
        }
        match connection.poll_event() {
            Some(ClientEvent::Ready { server_id }) => {
                let _ = stream.shutdown().await;
                return Ok(server_id);
            }
            Some(ClientEvent::Closed { reason, .. }) => {
                return Err(format!("{address} refused the handshake: {reason}"))
            }
            Some(_) => continue,
            None => {}
        }
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => connection.close(),
            Ok(n) => connection.receive(&buf[..n]),
        }
    }
}

/// Accepts clients until `limit` have connected.
async fn accept(listener: TcpListener, inputs: mpsc::Sender<Input>, limit: Option<u64>) {
    let mut accepted = 0u64;
    while limit.is_none_or(|limit| accepted < limit) {
        match listener.accept().await {
            Ok((stream, _)) => {
                accepted += 1;
                let _ = stream.set_nodelay(true);
                if inputs.send(Input::Accepted(stream)).await.is_err() {
                    return;
                }
            }
            Err(e) => eprintln!("router: accept failed: {e}"),
        }
    }
}

/// What the connection tasks tell the task that owns the router.
enum Input {
    /// A client connected.
    Accepted(TcpStream),
    /// A decoded message from a client.
    FromClient(ClientKey, ClientMessage),
    /// The client's stream ended or broke.
    ClientGone(ClientKey, Option<String>),
    /// A decoded message from an upstream.
    FromUpstream(UpstreamKey, ServerMessage),
    /// The upstream's stream ended, broke or never connected.
    UpstreamGone(UpstreamKey, Option<String>),
}

/// The task that owns the router: it turns inputs into router calls and router output into
/// writes and closes.
struct Coordinator {
    router: Router,
    inputs: mpsc::Sender<Input>,
    alive: mpsc::Sender<()>,
    upstream_addresses: Vec<String>,
    dedicated: bool,
    quiet: bool,
    clients: HashMap<ClientKey, mpsc::Sender<ServerMessage>>,
    upstreams: HashMap<UpstreamKey, mpsc::Sender<ClientMessage>>,
    /// Clients waiting for their dedicated upstreams before their first frame is read, and how
    /// many they still wait for.
    waiting: HashMap<ClientKey, (OwnedReadHalf, usize)>,
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
    fn new(router: Router, args: &Args, inputs: mpsc::Sender<Input>, alive: mpsc::Sender<()>) -> Self {
        Coordinator {
            router,
            inputs,
            alive,
            upstream_addresses: args.upstreams.clone(),
            dedicated: args.dedicated,
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

    /// Registers an upstream (dedicated to `owner`, or shared) and connects it in the background.
    fn connect_upstream(&mut self, address: &str, owner: Option<ClientKey>) {
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
        let (sender, queue) = mpsc::channel(UPSTREAM_QUEUE);
        self.upstreams.insert(key, sender);
        let inputs = self.inputs.clone();
        let alive = self.alive.clone();
        let address = address.to_owned();
        tokio::spawn(async move {
            match TcpStream::connect(&address).await {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    let (reader, writer) = stream.into_split();
                    // The router's hello is already in the queue.
                    tokio::spawn(write_loop(FramedWrite::new(writer, ClientCodec::new()), queue, alive));
                    let framed = FramedRead::new(reader, ClientCodec::new());
                    read_loop(framed, inputs, |m| Input::FromUpstream(key, m), |e| Input::UpstreamGone(key, e)).await;
                }
                Err(e) => {
                    let error = format!("cannot connect to {address}: {e}");
                    let _ = inputs.send(Input::UpstreamGone(key, Some(error))).await;
                }
            }
        });
    }

    fn handle(&mut self, input: Input) {
        match input {
            Input::Accepted(stream) => self.accepted(stream),
            Input::FromClient(client, message) => self.router.client_message(client, message),
            Input::ClientGone(client, error) => {
                if let Some(error) = error {
                    self.log(json!({"event": "client_error", "client": client.get(), "error": error}));
                }
                self.router.disconnect_client(client);
            }
            Input::FromUpstream(upstream, message) => self.router.upstream_message(upstream, message),
            Input::UpstreamGone(upstream, error) => {
                if let Some(error) = error {
                    self.log(json!({"event": "upstream_error", "upstream": upstream.get(), "error": error}));
                }
                self.router.disconnect_upstream(upstream);
            }
        }
    }

    fn accepted(&mut self, stream: TcpStream) {
        self.served += 1;
        let client = self.router.add_client();
        let (reader, writer) = stream.into_split();
        let (sender, queue) = mpsc::channel(CLIENT_QUEUE);
        self.clients.insert(client, sender);
        tokio::spawn(write_loop(FramedWrite::new(writer, ServerCodec::new()), queue, self.alive.clone()));
        if self.dedicated {
            let addresses = self.upstream_addresses.clone();
            self.waiting.insert(client, (reader, addresses.len()));
            for address in &addresses {
                self.connect_upstream(address, Some(client));
            }
        } else {
            self.start_reading(client, reader);
        }
    }

    fn start_reading(&self, client: ClientKey, reader: OwnedReadHalf) {
        let framed = FramedRead::new(reader, ServerCodec::new());
        tokio::spawn(read_loop(
            framed,
            self.inputs.clone(),
            move |m| Input::FromClient(client, m),
            move |e| Input::ClientGone(client, e),
        ));
    }

    /// A dedicated upstream answered its handshake or failed: once all of its client's have,
    /// read the client.
    fn dedicated_settled(&mut self, upstream: UpstreamKey) {
        if !self.unsettled.remove(&upstream) {
            return;
        }
        let Some(client) = self.owners.get(&upstream).copied() else { return };
        let Some((_, remaining)) = self.waiting.get_mut(&client) else { return };
        *remaining -= 1;
        if *remaining == 0 {
            if let Some((reader, _)) = self.waiting.remove(&client) {
                self.start_reading(client, reader);
            }
        }
    }

    /// Hands every transmit to its writer and acts on every event.
    fn flush(&mut self) {
        while let Some(transmit) = self.router.poll_transmit() {
            match transmit {
                Transmit::ToClient { client, message } => {
                    if let Some(sender) = self.clients.get(&client) {
                        if let Err(TrySendError::Full(_)) = sender.try_send(message) {
                            self.log(json!({"event": "client_too_slow", "client": client.get()}));
                            self.router.disconnect_client(client);
                        }
                    }
                }
                Transmit::ToUpstream { upstream, message } => {
                    if let Some(sender) = self.upstreams.get(&upstream) {
                        if let Err(TrySendError::Full(_)) = sender.try_send(message) {
                            self.log(json!({"event": "upstream_too_slow", "upstream": upstream.get()}));
                            self.router.disconnect_upstream(upstream);
                        }
                    }
                }
                _ => {}
            }
        }
        while let Some(event) = self.router.poll_event() {
            self.log_event(&event);
            match event {
                RouterEvent::ClientClosed { client, .. } => {
                    // Dropping the queue lets the writer finish what is queued, then close.
                    self.clients.remove(&client);
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
                    self.upstreams.remove(&upstream);
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
        let line = match event {
            RouterEvent::ClientReady { client } => json!({"event": "client_ready", "client": client.get()}),
            RouterEvent::ClientClosed { client, reason } => {
                json!({"event": "client_closed", "client": client.get(), "reason": reason.to_string()})
            }
            RouterEvent::UpstreamReady { upstream, server_id, replaced } => json!({
                "event": "upstream_ready", "upstream": upstream.get(), "serverId": server_id,
                "replaced": replaced.map(UpstreamKey::get),
            }),
            RouterEvent::UpstreamClosed { upstream, reason, failed } => json!({
                "event": "upstream_closed", "upstream": upstream.get(), "reason": reason.to_string(), "failed": failed,
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

/// Reads messages until the stream ends or breaks, passing each on.
async fn read_loop<R, C, M>(
    mut framed: FramedRead<R, C>,
    inputs: mpsc::Sender<Input>,
    message: impl Fn(M) -> Input,
    gone: impl Fn(Option<String>) -> Input,
) where
    R: AsyncRead + Unpin,
    C: Decoder<Item = M, Error = pi_protocol::io::Error>,
{
    let error = loop {
        match framed.next().await {
            Some(Ok(m)) => {
                if inputs.send(message(m)).await.is_err() {
                    return;
                }
            }
            Some(Err(e)) => break Some(e.to_string()),
            None => break None,
        }
    };
    let _ = inputs.send(gone(error)).await;
}

/// Writes what is queued, a batch per flush, until the queue is dropped; then closes. `alive`
/// is dropped when it returns.
async fn write_loop<W, C, M>(mut sink: FramedWrite<W, C>, mut queue: mpsc::Receiver<M>, alive: mpsc::Sender<()>)
where
    W: AsyncWrite + Unpin,
    C: Encoder<M, Error = pi_protocol::io::Error>,
{
    while let Some(message) = queue.recv().await {
        if sink.feed(message).await.is_err() {
            return;
        }
        while let Ok(message) = queue.try_recv() {
            if sink.feed(message).await.is_err() {
                return;
            }
        }
        if sink.flush().await.is_err() {
            return;
        }
    }
    let _ = sink.close().await;
    drop(alive);
}

/// The application's knowledge the router needs: which calls open and close subscriptions
/// (`$chord.service` `subscribe` / `unsubscribe`, the id first among the arguments).
struct ChordSubscriptions;

impl CallInspector for ChordSubscriptions {
    fn inspect(&mut self, request: &Request) -> CallEffect {
        // Only calls that name the control service are read at all.
        let cbor = request.call.as_cbor();
        if !cbor.windows(b"$chord.service".len()).any(|w| w == b"$chord.service") {
            return CallEffect::Plain;
        }
        let call = request.call.to_value();
        let first = call["args"][0].as_str().and_then(|s| SubscriptionId::new(s).ok());
        match (call["serviceId"].as_str(), call["member"].as_str(), first) {
            (Some("$chord.service"), Some("subscribe"), Some(id)) => CallEffect::Subscribe(id),
            (Some("$chord.service"), Some("unsubscribe"), Some(id)) => CallEffect::Unsubscribe(id),
            _ => CallEffect::Plain,
        }
    }

    fn unsubscribe_call(&mut self, subscription: &SubscriptionId) -> Option<Payload> {
        let call = json!({"serviceId": "$chord.service", "member": "unsubscribe", "args": [subscription.as_str()]});
        Payload::from_value(&call).ok()
    }
}
