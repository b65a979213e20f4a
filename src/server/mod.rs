//! [`Server`]: a Pi server over tokio (feature `tokio`) that runs the sans-IO
//! [`ServerConnection`] for every connection, so that an application writes services, not event
//! loops (docs/PROTOCOL.md section 8; `docs/ASYNC.md`).
//!
//! The application implements [`Service`]: an async function per call, given the [`Call`]
//! (`serviceId`, `member`, `args`, `instance`), and a [`Context`] with the call's cancellation
//! signal and a handle to publish subscription updates. The server does the rest, with the
//! reference server's behaviour (`@earendil-works/pi-server` 0.85.1) as its defaults:
//!
//! - the connection rules and fences of [`ServerConnection`] ([`ServerOptions`]: handshake
//!   deadline, pre-hello frame limit, `hello_error` on violations, the reference's codes);
//! - the transport's deadlines and a byte budget shared by every connection
//!   ([`DriverOptions`], [`ServerBuilder::budget`]), at most
//!   [`ServerBuilder::max_connections`] connections with accepting paused at the limit, accept
//!   errors backed off and reported once ([`Acceptor`]);
//! - Sessions: `pi.session-management` `attach [sessionId]` publishes an `attachment` with a
//!   fresh `attachmentId` before its `null` result (attaching again to the same Session sends
//!   nothing new; a Session [`Service::session_exists`] denies is `session_not_found`), `detach []`
//!   publishes `attachment: null` then answers; one attachment per connection; Session calls go
//!   to [`Service::session_call`]; an attachment is released only once the calls admitted on it
//!   settled;
//! - subscriptions: the server follows the `$chord.service` control calls of each connection,
//!   whatever their target (`subscribe [subscriptionId, serviceId, mode]`, `unsubscribe
//!   [subscriptionId]`; docs/PROTOCOL.md section 8): a second subscribe with an active id is
//!   `invalid_request` "Duplicate service subscription sub-1", a subscribe answered with no
//!   result is `invalid_request` "Service subscription did not return a snapshot" and one
//!   answered with anything but a snapshot an internal error, updates published for a
//!   subscription before its snapshot is sent follow the snapshot, and updates of
//!   subscriptions the connection does not hold are dropped;
//! - Chord services (feature `chord`): [`ChordEndpoint`] declares them and answers the control
//!   calls, Chord's refusals and an unknown `unsubscribe` as the reference's provider does,
//!   publishing state changes as Delta `service_update`s;
//! - cancellation: a `cancel` fires the call's [`Context::cancelled`]; a call that then fails is
//!   answered `cancelled` "RPC request cancelled", one that still succeeds with its result;
//! - failures: [`CallError::internal`] and a handler that panics are answered `internal_error`
//!   "Internal server error", and the error goes to [`ServerBuilder::on_error`] only;
//! - graceful shutdown ([`Serving::shutdown`]): stop accepting, answer new calls
//!   `server_draining`, let the calls in flight settle (at most
//!   [`ServerBuilder::drain_timeout`], then they are cancelled), close every connection, unlink
//!   the Unix socket.
//!
//! Memory: each connection costs its state and read buffer (about 4 KiB) plus what it holds for
//! its peer, and what all connections hold together (transmit queues, partial frames, ids in
//! flight) is bounded by the budget (default [`DEFAULT_BUDGET`], 256 MiB): the connection that
//! would pass it is closed at once and its queue dropped.
//!
//! A Session exists only when [`Service::session_exists`] says so (by default none does, and
//! every `attach` is `session_not_found`).
//!
//! ```no_run
//! use pi_protocol::server::{Call, CallError, CallResult, Context, Server, Service};
//! use pi_protocol::{Payload, ServerId};
//!
//! struct Echo;
//! impl Service for Echo {
//!     async fn call(&self, call: Call, _cx: Context) -> CallResult {
//!         match (call.service_id(), call.member()) {
//!             ("demo.echo", "echo") => Ok(Some(call.args().clone())),
//!             _ => Err(CallError::new("unknown_member", "No such member")),
//!         }
//!     }
//! }
//!
//! # async fn run() -> std::io::Result<()> {
//! let id = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962").unwrap();
//! let serving = Server::builder(id, Echo).build().serve_tcp("127.0.0.1:0").await?;
//! println!("listening on {}", serving.local_addr());
//! serving.shutdown().await;
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use compact_str::CompactString;
use pi_chord::wire::{ControlCall, Id, ServiceCall, Snapshot, SERVICE_CONTROL_ID};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use cancel::CallCancel;

mod cancel;
#[cfg(feature = "chord")]
mod endpoint;
#[cfg(feature = "chord")]
pub use endpoint::{ChordEndpoint, ChordEndpointBuilder, ChordError, ChordService, DEFAULT_MAX_SUBSCRIPTIONS};

use crate::connection::service_call::call_layout;
use crate::connection::{CallLayout, ServerConnection, ServerEvent, ServerOptions};
use crate::io::{Accept, AcceptOptions, Acceptor, ByteBudget, DriverOptions, ServerDriver};
use crate::{
    AttachmentId, ErrorBody, ErrorCode, Payload, Request, RequestId, RpcTarget, ServerId, SessionId, SessionTarget,
    SubscriptionId,
};

/// The default of [`ServerBuilder::budget`]: 256 MiB held for all peers together.
pub const DEFAULT_BUDGET: usize = 256 * 1024 * 1024;

/// The default of [`ServerBuilder::drain_timeout`]: 5 s.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The service id of the Session attach and detach calls.
pub const SESSION_MANAGEMENT: &str = "pi.session-management";

/// What a call answers: a result (`None`: no `result` key) or an error.
pub type CallResult = Result<Option<Payload>, CallError>;

/// A service call `{serviceId, member, args, instance?}` (its shape was checked by the
/// connection): the two names, read once and kept inline when short, and the rest as payloads,
/// not parsed further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    service_id: CompactString,
    member: CompactString,
    args: Payload,
    instance: Option<Payload>,
}

impl Call {
    /// Reads the call's parts from its payload where the connection's shape check found them
    /// (`layout`), or where the same walk finds them when the application turned the check off.
    fn read(call: &Payload, layout: Option<CallLayout>) -> Option<Call> {
        let layout = layout.or_else(|| call_layout(call))?;
        Some(Call {
            service_id: CompactString::from(layout.service_id(call)?),
            member: CompactString::from(layout.member(call)?),
            args: layout.args(call)?,
            instance: if layout.has_instance() { Some(layout.instance(call)?) } else { None },
        })
    }

    /// `serviceId`.
    #[inline]
    pub fn service_id(&self) -> &str {
        &self.service_id
    }

    /// `member`.
    #[inline]
    pub fn member(&self) -> &str {
        &self.member
    }

    /// `args`: the argument array, as received.
    #[inline]
    pub fn args(&self) -> &Payload {
        &self.args
    }

    /// `instance`, when the call names one (`{key, generation}`).
    #[inline]
    pub fn instance(&self) -> Option<&Payload> {
        self.instance.as_ref()
    }

    /// The `$chord.service` control call this is, by Chord's grammar
    /// (`pi_chord::wire::ControlCall::from_call`: no instance, a known member, arguments that
    /// fit), or `None`. A call to another service is told apart by its name alone; only a
    /// control call's arguments are read.
    pub(crate) fn control_call(&self) -> Option<ControlCall> {
        if self.service_id != SERVICE_CONTROL_ID || self.instance.is_some() {
            return None;
        }
        let args: Vec<Payload> = self.args.deserialize().ok()?;
        let call = ServiceCall::new(Id::new(self.service_id()).ok()?, Id::new(self.member()).ok()?, args);
        ControlCall::from_call(&call)
    }

    /// The arguments as JSON values (an empty list when they are not an array).
    pub fn args_json(&self) -> Vec<serde_json::Value> {
        match self.args.to_value() {
            serde_json::Value::Array(values) => values,
            _ => Vec::new(),
        }
    }
}

/// Why a call failed: an error the client sees (`code`, `message`), or an internal failure the
/// client sees only as `internal_error` "Internal server error".
#[derive(Debug)]
pub struct CallError {
    kind: CallErrorKind,
}

#[derive(Debug)]
enum CallErrorKind {
    Client(ErrorBody),
    Internal(Box<dyn std::error::Error + Send + Sync>),
}

impl CallError {
    /// An error the client sees as it is. An empty `code` becomes `internal_error`.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        let code = ErrorCode::new(code).unwrap_or_else(|_| internal_code());
        CallError { kind: CallErrorKind::Client(ErrorBody::new(code, message.into())) }
    }

    /// An unexpected failure: answered `internal_error` "Internal server error", and `error`
    /// goes to [`ServerBuilder::on_error`].
    pub fn internal(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        CallError { kind: CallErrorKind::Internal(error.into()) }
    }

    /// `cancelled` "RPC request cancelled", as the reference answers a call stopped by its cancel.
    pub fn cancelled() -> Self {
        CallError::new("cancelled", "RPC request cancelled")
    }
}

impl From<ErrorBody> for CallError {
    fn from(body: ErrorBody) -> Self {
        CallError { kind: CallErrorKind::Client(body) }
    }
}

fn internal_code() -> ErrorCode {
    ErrorCode::new("internal_error").expect("a non-empty code")
}

fn internal_error() -> ErrorBody {
    ErrorBody::new(internal_code(), "Internal server error")
}

/// A handler panicked: what [`ServerBuilder::on_error`] is given.
#[derive(Debug, thiserror::Error)]
#[error("a service handler panicked: {0}")]
pub struct HandlerPanic(pub String);

/// What the application serves. Every method is an async function of one call; the server runs
/// them concurrently (each call that does not complete at once becomes a task of its own).
pub trait Service: Send + Sync + 'static {
    /// A server call (target `{serverId}`), except `pi.session-management`, which the server
    /// answers itself.
    fn call(&self, call: Call, cx: Context) -> impl Future<Output = CallResult> + Send;

    /// A server call answered at once, without a future: `Some` answers it as
    /// [`call`](Self::call) would (failures hidden, panics caught, updates it publishes sent
    /// first, a subscription it opens followed), `None` (the default) hands it to `call`. For
    /// calls that never wait, this saves the boxed future each call costs (allocation, moving
    /// the call and its context into it): about a sixth of the Server's time per call in
    /// `benches/server_driver`. Session calls always go to
    /// [`session_call`](Self::session_call).
    fn call_now(&self, call: &Call, cx: &Context) -> Option<CallResult> {
        let _ = (call, cx);
        None
    }

    /// Whether the Session `session` exists, for `attach` (default: none does).
    fn session_exists(&self, session: &SessionId) -> bool {
        let _ = session;
        false
    }

    /// A call on the attached Session `session` (default: `{"ok": true}`, as the reference
    /// testing host answers).
    fn session_call(&self, session: SessionId, call: Call, cx: Context) -> impl Future<Output = CallResult> + Send {
        let _ = (session, call, cx);
        async { Ok(Some(Payload::from_value(&serde_json::json!({"ok": true})).expect("a payload"))) }
    }
}

/// What a handler is given besides its call: the cancellation signal, and a handle to publish
/// `service_update`s on its connection.
#[derive(Debug, Clone)]
pub struct Context {
    cancel: CallCancel,
    /// The connection's side of it, shared by every call's context (one reference count per
    /// call, not a sender's two).
    link: Arc<Link>,
}

/// What every call's [`Context`] on one connection shares.
#[derive(Debug)]
struct Link {
    out: mpsc::UnboundedSender<Outgoing>,
    connection: u64,
    /// Unique per connection in the process (the Chord endpoint's subscription table).
    #[cfg_attr(not(feature = "chord"), allow(dead_code))]
    key: u64,
}

impl Context {
    /// Completes when the client cancels the call (or the connection closes).
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Queues a `service_update` of `subscription` on this call's connection; updates published
    /// before the call returns are sent before its response. Returns `false` once the
    /// connection is gone.
    pub fn publish(&self, subscription: SubscriptionId, update: Payload) -> bool {
        self.link.out.send(Outgoing::Update(subscription, update)).is_ok()
    }

    /// The connection's number (from 1, in the order connections were accepted).
    pub fn connection(&self) -> u64 {
        self.link.connection
    }

    /// Unique per connection in the process.
    #[cfg(feature = "chord")]
    fn key(&self) -> u64 {
        self.link.key
    }

    /// Whether the connection is gone.
    #[cfg(feature = "chord")]
    fn is_closed(&self) -> bool {
        self.link.out.is_closed()
    }
}

/// What a call's task sends back to its connection, in order.
#[derive(Debug)]
enum Outgoing {
    Update(SubscriptionId, Payload),
    Done(RequestId, Result<Option<Payload>, ErrorBody>),
}

type ErrorHook = Arc<dyn Fn(&(dyn std::error::Error + 'static)) + Send + Sync>;
type EventHook = Arc<dyn Fn(u64, Observation<'_>) + Send + Sync>;

/// What [`ServerBuilder::on_event`] sees of a connection: its events, and what the server did
/// about them.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Observation<'a> {
    /// An event of the connection, before the server acts on it.
    Event(&'a ServerEvent),
    /// The server settled the admitted request `id` (`ok`: with a result; answers while the
    /// connection closes are settled without being sent).
    Answered {
        /// The request.
        id: &'a RequestId,
        /// Whether it succeeded.
        ok: bool,
    },
    /// The server published this attachment route (`None`: detached).
    Route(Option<&'a SessionTarget>),
}

/// Builds a [`Server`]: see [`Server::builder`].
pub struct ServerBuilder<S> {
    server_id: ServerId,
    service: S,
    options: ServerOptions,
    driver: DriverOptions,
    accept: AcceptOptions,
    budget: Option<usize>,
    drain_timeout: Duration,
    on_error: Option<ErrorHook>,
    on_event: Option<EventHook>,
}

impl<S> fmt::Debug for ServerBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder").field("server_id", &self.server_id).finish_non_exhaustive()
    }
}

impl<S: Service> ServerBuilder<S> {
    /// The connection rules, codes and limits (default [`ServerOptions::default`], the
    /// reference server's). [`ServerOptions::report_call_layouts`] is always on: the server
    /// reads each call's parts where the connection's shape check found them (admitted requests
    /// still reach [`on_event`](Self::on_event) as [`ServerEvent::Request`]).
    #[must_use]
    pub fn options(mut self, options: ServerOptions) -> Self {
        self.options = options;
        self
    }

    /// The transport's buffers and deadlines (default [`DriverOptions::default`]); its `budget`
    /// is replaced by the server's ([`budget`](Self::budget)).
    #[must_use]
    pub fn driver_options(mut self, driver: DriverOptions) -> Self {
        self.driver = driver;
        self
    }

    /// At most `connections` at once (default 1,024): accepting pauses at the limit.
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.accept = self.accept.max_connections(connections);
        self
    }

    /// The accept loop's limit and backoff (default [`AcceptOptions::default`]).
    #[must_use]
    pub fn accept_options(mut self, accept: AcceptOptions) -> Self {
        self.accept = accept;
        self
    }

    /// The bytes all connections may hold for their peers together (default
    /// [`DEFAULT_BUDGET`]; `None`: no shared budget, each connection bounded by its own limits).
    #[must_use]
    pub fn budget(mut self, bytes: Option<usize>) -> Self {
        self.budget = bytes;
        self
    }

    /// How long a graceful shutdown waits for calls in flight (default
    /// [`DEFAULT_DRAIN_TIMEOUT`]) before cancelling them.
    #[must_use]
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// Sees every failure the clients do not: [`CallError::internal`] errors, handler panics
    /// ([`HandlerPanic`]), accept errors (once per run, as [`Acceptor`] reports them).
    #[must_use]
    pub fn on_error(mut self, hook: impl Fn(&(dyn std::error::Error + 'static)) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(hook));
        self
    }

    /// Sees every event of every connection (its number from 1) before the server acts on it,
    /// every answer and every route it publishes ([`Observation`]): for logs and metrics. The
    /// hook runs on the connection's task, so it should be quick.
    #[must_use]
    pub fn on_event(mut self, hook: impl Fn(u64, Observation<'_>) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(hook));
        self
    }

    /// The server.
    pub fn build(self) -> Server<S> {
        let budget = self.budget.map(ByteBudget::new);
        Server {
            shared: Arc::new(Shared {
                server_id: self.server_id,
                service: self.service,
                // Each admitted call comes with where its parts lie: read once, by the
                // connection's shape check.
                options: self.options.report_call_layouts(true),
                driver: self.driver.budget(budget.clone()),
                drain_timeout: self.drain_timeout,
                on_error: self.on_error,
                on_event: self.on_event,
                budget,
            }),
            accept: self.accept,
        }
    }
}

/// What every connection of a server shares.
struct Shared<S> {
    server_id: ServerId,
    service: S,
    options: ServerOptions,
    driver: DriverOptions,
    drain_timeout: Duration,
    on_error: Option<ErrorHook>,
    on_event: Option<EventHook>,
    budget: Option<ByteBudget>,
}

impl<S> Shared<S> {
    fn report(&self, error: &(dyn std::error::Error + 'static)) {
        if let Some(hook) = &self.on_error {
            hook(error);
        }
    }

    /// The answer the client sees for `error`.
    fn answer(&self, error: CallError) -> ErrorBody {
        match error.kind {
            CallErrorKind::Client(body) => body,
            CallErrorKind::Internal(error) => {
                self.report(&*error);
                internal_error()
            }
        }
    }
}

/// A Pi server: see the [module docs](self). Build it with [`Server::builder`], then serve it on
/// a Unix socket, a TCP address or any [`Accept`] listener.
pub struct Server<S> {
    shared: Arc<Shared<S>>,
    accept: AcceptOptions,
}

impl<S> fmt::Debug for Server<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server").field("server_id", &self.shared.server_id).finish_non_exhaustive()
    }
}

impl<S: Service> Server<S> {
    /// A builder for the server `server_id` serving `service`, with the defaults.
    pub fn builder(server_id: ServerId, service: S) -> ServerBuilder<S> {
        ServerBuilder {
            server_id,
            service,
            options: ServerOptions::default(),
            driver: DriverOptions::default(),
            accept: AcceptOptions::default(),
            budget: Some(DEFAULT_BUDGET),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            on_error: None,
            on_event: None,
        }
    }

    /// Serves on the Unix socket `path` ([`UnixSocketListener`](crate::io::unix::UnixSocketListener):
    /// a stale socket is replaced, a live one is an error, mode 0600, unlinked on shutdown).
    /// The real programs' convention for `path` is `<dir>/<serverId>.sock`, which
    /// [`socket_path`](crate::io::unix::socket_path)`(dir, &server_id)` gives, and where
    /// [`discover`](crate::io::unix::discover) finds it.
    ///
    /// # Errors
    /// Binding errors.
    #[cfg(unix)]
    pub async fn serve_unix(self, path: impl AsRef<Path>) -> io::Result<Serving> {
        let listener = crate::io::unix::UnixSocketListener::bind(path.as_ref())?;
        let path = listener.path().to_owned();
        let mut serving = self.serve(listener);
        serving.path = Some(path);
        Ok(serving)
    }

    /// Serves on the TCP address `addr` (port 0 picks a free one: [`Serving::local_addr`]).
    /// Sockets get `TCP_NODELAY`.
    ///
    /// # Errors
    /// Binding errors.
    pub async fn serve_tcp(self, addr: impl tokio::net::ToSocketAddrs) -> io::Result<Serving> {
        let listener = NoDelay(tokio::net::TcpListener::bind(addr).await?);
        let local = listener.0.local_addr()?;
        let mut serving = self.serve(listener);
        serving.local_addr = Some(local);
        Ok(serving)
    }

    /// Serves connections `listener` accepts, in a task of the current runtime.
    pub fn serve<L>(self, listener: L) -> Serving
    where
        L: Accept + 'static,
        L::Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let shared = Arc::clone(&self.shared);
        let hook = shared.on_error.clone();
        let mut acceptor = Acceptor::new(listener, self.accept);
        if let Some(hook) = hook {
            acceptor = acceptor.on_report(move |report| hook(&io::Error::other(report.to_string())));
        }
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            let mut count = 0u64;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    accepted = acceptor.accept() => match accepted {
                        Ok(accepted) => {
                            count += 1;
                            let shared = Arc::clone(&shared);
                            let stop = stop.clone();
                            connections.spawn(async move {
                                let _permit = accepted.permit;
                                serve_connection(shared, accepted.stream, count, stop).await;
                            });
                        }
                        Err(error) => {
                            shared.report(&error);
                            break;
                        }
                    },
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
            drop(acceptor); // closes the listener (and unlinks a Unix socket)
            while connections.join_next().await.is_some() {}
        });
        Serving { shutdown, task, local_addr: None, path: None, budget: self.shared.budget.clone(), finished: false }
    }

    /// Serves one already connected byte stream (a test's `tokio::io::duplex` end, a socket
    /// accepted elsewhere) until it closes.
    pub async fn serve_stream<IO>(&self, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        serve_connection(Arc::clone(&self.shared), io, 1, CancellationToken::new()).await;
    }
}

/// A TCP listener whose sockets get `TCP_NODELAY` (answers leave at once).
struct NoDelay(tokio::net::TcpListener);

impl Accept for NoDelay {
    type Stream = tokio::net::TcpStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> io::Result<(Self::Stream, Self::Addr)> {
        let (stream, addr) = self.0.accept().await?;
        let _ = stream.set_nodelay(true);
        Ok((stream, addr))
    }
}

/// A running server: its address, and its graceful shutdown.
#[derive(Debug)]
#[must_use = "dropping it leaves the server running; call shutdown to stop it"]
pub struct Serving {
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    local_addr: Option<std::net::SocketAddr>,
    path: Option<PathBuf>,
    budget: Option<ByteBudget>,
    finished: bool,
}

impl Serving {
    /// The TCP address served ([`Server::serve_tcp`]); for other listeners, `0.0.0.0:0`.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.local_addr.unwrap_or_else(|| std::net::SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// The Unix socket served ([`Server::serve_unix`]).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The shared byte budget, to read what the connections hold ([`ByteBudget::used`]).
    pub fn budget(&self) -> Option<&ByteBudget> {
        self.budget.as_ref()
    }

    /// Stops accepting, lets the calls in flight settle (new calls are answered
    /// `server_draining`), closes every connection and returns once all are closed (and the Unix
    /// socket unlinked).
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        self.wait().await;
    }

    /// Completes when the server stops (after [`shutdown`](Self::shutdown), or when the
    /// listener fails for good). Cancel safe: it can be one branch of a `select!` whose other
    /// branches call [`shutdown`](Self::shutdown) afterwards.
    pub async fn wait(&mut self) {
        if !self.finished {
            let _ = (&mut self.task).await;
            self.finished = true;
        }
    }
}

/// A fresh attachment id: 122 random bits (std's per-process random hasher keys, re-seeded per
/// call) in the UUIDv4 layout, as the reference's `randomUUID` gives.
fn attachment_id() -> AttachmentId {
    let mut words = [0u64; 2];
    for (n, word) in words.iter_mut().enumerate() {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_usize(n);
        hasher
            .write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        *word = hasher.finish();
    }
    let bytes: u128 = (u128::from(words[0]) << 64) | u128::from(words[1]);
    let bytes = (bytes & !(0xf000u128 << 64) | (0x4000u128 << 64)) & !(0xc000u128 << 48) | (0x8000u128 << 48);
    let hex = format!("{bytes:032x}");
    let text = format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32]);
    AttachmentId::new(text).expect("a UUID is a valid attachment id")
}

/// A number per connection, unique in the process (the connection numbers of
/// [`Context::connection`] repeat across [`Server::serve_stream`] calls).
fn next_connection_key() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A Session operation waiting for the Session calls in flight to settle.
struct PendingSessionOp {
    id: RequestId,
    /// `Some`: attach to this Session; `None`: detach.
    attach: Option<SessionId>,
}

/// One connection's application state around its driver.
struct ConnectionState<S> {
    shared: Arc<Shared<S>>,
    number: u64,
    /// What each call's context holds of the connection (its sender of [`Outgoing`]).
    link: Arc<Link>,
    /// The calls running as tasks, with their cancellation.
    running: HashMap<RequestId, CallCancel>,
    /// A call's cancellation signal no one holds any more, for the next call.
    spare_cancel: Option<CallCancel>,
    /// The Session calls in flight on the current attachment.
    session_calls: usize,
    /// Which of the running calls are Session calls.
    session_ids: std::collections::HashSet<RequestId>,
    pending_op: Option<PendingSessionOp>,
    draining: bool,
    /// Admitted calls not started yet because the transmit queue is past
    /// [`DriverOptions::pause_reading_at`]: they start as it drains, and nothing more is read
    /// meanwhile, so a peer that does not read costs at most that much plus one answer.
    backlog: std::collections::VecDeque<(Request, Option<CallLayout>)>,
    pause_at: usize,
    /// The subscriptions this connection holds (`$chord.service` `subscribe` answered with a
    /// snapshot, not unsubscribed): updates of any other subscription are dropped.
    subscriptions: std::collections::HashSet<SubscriptionId>,
    /// Subscriptions whose snapshot is not sent yet, with the updates published meanwhile: they
    /// follow the snapshot, as the reference sends them.
    subscribing: HashMap<SubscriptionId, Vec<Payload>>,
    /// The control calls among the running calls.
    controls: HashMap<RequestId, Control>,
}

/// A `$chord.service` control call the server follows (docs/PROTOCOL.md section 8): the
/// subscription it opens or ends.
#[derive(Debug, Clone)]
enum Control {
    Subscribe(SubscriptionId),
    Unsubscribe(SubscriptionId),
}

impl Control {
    /// The subscription `call` opens or ends, if it is a `subscribe` or `unsubscribe`
    /// control call ([`Call::control_call`]).
    fn of(call: &Call) -> Option<Control> {
        // Told apart by the member's name first: a `catalogue` (or any other call) reads no
        // arguments here.
        if !matches!(call.member(), "subscribe" | "unsubscribe") {
            return None;
        }
        let subscription = |id: &str| SubscriptionId::new(id).ok();
        match call.control_call()? {
            ControlCall::Subscribe { subscription_id, .. } => subscription(&subscription_id).map(Control::Subscribe),
            ControlCall::Unsubscribe { subscription_id } => subscription(&subscription_id).map(Control::Unsubscribe),
            _ => None,
        }
    }
}

/// Whether `result` is a subscription snapshot, as Chord's parser reads one
/// (`pi-chord/schema/chord.json` `Snapshot`, ops checked).
fn is_snapshot(result: &Payload) -> bool {
    Snapshot::from_payload(result).is_ok()
}

async fn serve_connection<S: Service, IO>(shared: Arc<Shared<S>>, io: IO, number: u64, stop: CancellationToken)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let connection = ServerConnection::new_at(
        shared.server_id.clone(),
        shared.options.clone(),
        tokio::time::Instant::now().into_std(),
    );
    let mut driver = ServerDriver::with_options(io, connection, shared.driver.clone());
    let (out, mut incoming) = mpsc::unbounded_channel();
    let mut state = ConnectionState {
        shared: Arc::clone(&shared),
        number,
        link: Arc::new(Link { out, connection: number, key: next_connection_key() }),
        running: HashMap::new(),
        session_calls: 0,
        session_ids: std::collections::HashSet::new(),
        pending_op: None,
        draining: false,
        backlog: std::collections::VecDeque::new(),
        pause_at: shared.driver.pause_reading_at.max(1),
        subscriptions: std::collections::HashSet::new(),
        spare_cancel: None,
        subscribing: HashMap::new(),
        controls: HashMap::new(),
    };
    let drain = tokio::time::sleep(Duration::MAX.min(Duration::from_secs(1 << 40)));
    tokio::pin!(drain);
    let mut drain_armed = false;
    // Made once: a new `cancelled()` future per turn would register with the token each time.
    let stopped = stop.cancelled();
    tokio::pin!(stopped);
    loop {
        let backed_up = !state.backlog.is_empty();
        tokio::select! {
            biased;
            step = async {
                // With calls waiting to start, only write (no reading) until the queue drains.
                if backed_up { Err(driver.flush().await) } else { Ok(driver.next_event().await) }
            } => match step {
                Ok(None) => break,
                Ok(Some(event)) => {
                    state.event(driver.connection_mut(), event, &mut incoming);
                    // The rest of what the last read decoded, without a turn of the select per
                    // event: the driver hands queued events out before anything else anyway.
                    while state.backlog.is_empty() {
                        let Some(event) = driver.connection_mut().poll_event() else { break };
                        state.event(driver.connection_mut(), event, &mut incoming);
                    }
                }
                Err(flushed) => {
                    if flushed.is_err() || !driver.connection().is_ready() {
                        state.drop_backlog(driver.connection_mut());
                    }
                }
            },
            Some(outgoing) = incoming.recv() => state.outgoing(driver.connection_mut(), outgoing),
            () = &mut stopped, if !state.draining => {
                state.draining = true;
                drain.as_mut().reset(tokio::time::Instant::now() + shared.drain_timeout);
                drain_armed = true;
                state.close_if_drained(driver.connection_mut());
            }
            _ = &mut drain, if drain_armed => {
                drain_armed = false;
                for token in state.running.values() {
                    token.cancel();
                }
                driver.connection_mut().disconnect();
            }
        }
        state.run_backlog(driver.connection_mut(), &mut incoming);
    }
    for token in state.running.values() {
        token.cancel();
    }
}

impl<S: Service> ConnectionState<S> {
    /// Settles `id` with `answer`, telling the observer.
    fn respond(&self, connection: &mut ServerConnection, id: &RequestId, answer: Result<Option<Payload>, ErrorBody>) {
        let ok = answer.is_ok();
        if connection.respond(id, answer).is_ok() {
            if let Some(hook) = &self.shared.on_event {
                hook(self.number, Observation::Answered { id, ok });
            }
        }
    }

    fn event(
        &mut self,
        connection: &mut ServerConnection,
        event: ServerEvent,
        incoming: &mut mpsc::UnboundedReceiver<Outgoing>,
    ) {
        // Observers see an admitted request as `ServerEvent::Request`, with or without the
        // layout the server asked its connection for.
        let (event, layout) = match event {
            ServerEvent::ServiceRequest { request, layout } if self.shared.on_event.is_none() => {
                return self.request(connection, request, Some(layout), incoming);
            }
            ServerEvent::ServiceRequest { request, layout } => (ServerEvent::Request(request), Some(layout)),
            other => (other, None),
        };
        if let Some(hook) = &self.shared.on_event {
            hook(self.number, Observation::Event(&event));
        }
        match event {
            ServerEvent::Request(request) => self.request(connection, request, layout, incoming),
            ServerEvent::Cancel { id } => {
                if let Some(token) = self.running.get(&id) {
                    token.cancel();
                }
            }
            ServerEvent::Closing { .. } => {
                for token in self.running.values() {
                    token.cancel();
                }
                self.drop_backlog(connection);
                // A Session operation left waiting settles now: nothing more is sent.
                if let Some(op) = self.pending_op.take() {
                    self.respond(connection, &op.id, Ok(None));
                }
            }
            _ => {}
        }
    }

    /// Starts the calls of the backlog while the transmit queue is below the pause threshold.
    fn run_backlog(&mut self, connection: &mut ServerConnection, incoming: &mut mpsc::UnboundedReceiver<Outgoing>) {
        if !connection.is_ready() {
            return self.drop_backlog(connection);
        }
        while connection.pending_transmit_len() < self.pause_at {
            let Some((request, layout)) = self.backlog.pop_front() else { break };
            self.start(connection, request, layout, incoming);
        }
    }

    /// The connection is closing: the calls not started settle without running.
    fn drop_backlog(&mut self, connection: &mut ServerConnection) {
        for (request, _) in std::mem::take(&mut self.backlog) {
            self.respond(connection, &request.id, Err(ErrorBody::new(code("cancelled"), "RPC request cancelled")));
        }
    }

    fn request(
        &mut self,
        connection: &mut ServerConnection,
        request: Request,
        layout: Option<CallLayout>,
        incoming: &mut mpsc::UnboundedReceiver<Outgoing>,
    ) {
        if !self.backlog.is_empty() || connection.pending_transmit_len() >= self.pause_at {
            self.backlog.push_back((request, layout));
            return;
        }
        self.start(connection, request, layout, incoming);
    }

    fn start(
        &mut self,
        connection: &mut ServerConnection,
        request: Request,
        layout: Option<CallLayout>,
        incoming: &mut mpsc::UnboundedReceiver<Outgoing>,
    ) {
        let Request { id, target, call, .. } = request;
        if self.draining {
            self.respond(connection, &id, Err(ErrorBody::new(code("server_draining"), "Server is draining")));
            return;
        }
        let Some(call) = Call::read(&call, layout) else {
            // The connection checked the shape, unless the application turned the check off.
            self.respond(connection, &id, Err(ErrorBody::new(code("invalid_request"), "Invalid service call")));
            return;
        };
        let session = match &target {
            RpcTarget::Session(route) => Some(route.session_id.clone()),
            _ => None,
        };
        if session.is_none() && call.service_id == SESSION_MANAGEMENT && call.instance.is_none() {
            return self.session_management(connection, id, &call);
        }
        // Followed whatever the target (the reference server does): a Session's answer to a
        // subscribe must be a snapshot too.
        let control = Control::of(&call);
        match &control {
            Some(Control::Subscribe(sub)) if self.subscriptions.contains(sub) || self.subscribing.contains_key(sub) => {
                let message = format!("Duplicate service subscription {}", sub.as_str());
                self.respond(connection, &id, Err(ErrorBody::new(code("invalid_request"), message)));
                return;
            }
            Some(Control::Subscribe(sub)) => {
                self.subscribing.insert(sub.clone(), Vec::new());
            }
            _ => {}
        }
        let cancel = self.spare_cancel.take().unwrap_or_default();
        let cx = Context { cancel: cancel.clone(), link: Arc::clone(&self.link) };
        // Answered at once when the service can, without a future.
        if session.is_none() {
            let now = std::panic::catch_unwind(AssertUnwindSafe(|| self.shared.service.call_now(&call, &cx)));
            match now {
                Ok(None) => {}
                Ok(Some(result)) => {
                    drop(cx);
                    return self.answered_at_once(connection, &id, false, control, result, cancel, incoming);
                }
                Err(panic) => return self.panicked(connection, &id, false, control, &*panic),
            }
        }
        let shared = Arc::clone(&self.shared);
        let is_session = session.is_some();
        let mut work: Pin<Box<dyn Future<Output = CallResult> + Send>> = match session {
            Some(session) => Box::pin(async move { shared.service.session_call(session, call, cx).await }),
            None => Box::pin(async move { shared.service.call(call, cx).await }),
        };
        if is_session {
            self.session_calls += 1;
        }
        // Polled once here: a call that completes at once is answered without a task.
        let waker = std::task::Waker::noop();
        let polled =
            std::panic::catch_unwind(AssertUnwindSafe(|| work.as_mut().poll(&mut TaskContext::from_waker(waker))));
        match polled {
            Ok(Poll::Ready(result)) => {
                drop(work);
                self.answered_at_once(connection, &id, is_session, control, result, cancel, incoming);
            }
            Ok(Poll::Pending) => {
                if is_session {
                    self.session_ids.insert(id.clone());
                }
                if let Some(control) = control {
                    self.controls.insert(id.clone(), control);
                }
                self.running.insert(id.clone(), cancel.clone());
                let shared = Arc::clone(&self.shared);
                let reply = Reply { id: Some(id), out: self.link.out.clone() };
                tokio::spawn(async move {
                    let mut reply = reply;
                    let result = work.await;
                    let answer = settle(&shared, result, &cancel);
                    reply.send(answer);
                });
            }
            Err(panic) => self.panicked(connection, &id, is_session, control, &*panic),
        }
    }

    /// Answers a call whose handler returned without waiting: the updates it published first,
    /// then its response; its cancellation signal, if nobody kept it, serves the next call.
    #[allow(clippy::too_many_arguments)]
    fn answered_at_once(
        &mut self,
        connection: &mut ServerConnection,
        id: &RequestId,
        is_session: bool,
        control: Option<Control>,
        result: CallResult,
        cancel: CallCancel,
        incoming: &mut mpsc::UnboundedReceiver<Outgoing>,
    ) {
        // Updates it published go out before its response.
        while let Ok(outgoing) = incoming.try_recv() {
            self.outgoing(connection, outgoing);
        }
        let answer = self.settle(result, &cancel);
        self.finish(connection, id, is_session, control, answer);
        // Nobody else holds it (the handler kept no clone) and it never fired: the next call's,
        // saving an allocation per call answered at once.
        if cancel.is_unshared() {
            self.spare_cancel = Some(cancel);
        }
    }

    /// A handler panicked: reported to the error hook, answered `internal_error`.
    fn panicked(
        &mut self,
        connection: &mut ServerConnection,
        id: &RequestId,
        is_session: bool,
        control: Option<Control>,
        panic: &(dyn std::any::Any + Send),
    ) {
        self.shared.report(&HandlerPanic(panic_message(panic)));
        self.finish(connection, id, is_session, control, Err(internal_error()));
    }

    fn settle(&self, result: CallResult, cancel: &CallCancel) -> Result<Option<Payload>, ErrorBody> {
        settle(&self.shared, result, cancel)
    }

    fn finish(
        &mut self,
        connection: &mut ServerConnection,
        id: &RequestId,
        is_session: bool,
        control: Option<Control>,
        mut answer: Result<Option<Payload>, ErrorBody>,
    ) {
        let mut updates = Vec::new();
        match control {
            Some(Control::Subscribe(sub)) => {
                let pending = self.subscribing.remove(&sub).unwrap_or_default();
                match &answer {
                    Ok(Some(snapshot)) if is_snapshot(snapshot) => {
                        self.subscriptions.insert(sub.clone());
                        updates = pending.into_iter().map(|update| (sub.clone(), update)).collect();
                    }
                    Ok(None) => {
                        // The reference's own validation error, shown to the client.
                        answer = Err(ErrorBody::new(
                            code("invalid_request"),
                            "Service subscription did not return a snapshot",
                        ));
                    }
                    Ok(Some(_)) => {
                        // The reference's snapshot parser throws: hidden, as any failure.
                        let error = io::Error::other("a subscribe call answered with no subscription snapshot");
                        self.shared.report(&error);
                        answer = Err(internal_error());
                    }
                    Err(_) => {}
                }
            }
            Some(Control::Unsubscribe(sub)) if answer.is_ok() => {
                self.subscriptions.remove(&sub);
            }
            _ => {}
        }
        self.respond(connection, id, answer);
        for (sub, update) in updates {
            let _ = connection.publish_update(sub, update);
        }
        if is_session {
            self.session_calls = self.session_calls.saturating_sub(1);
            if self.session_calls == 0 {
                self.run_pending_op(connection);
            }
        }
        self.close_if_drained(connection);
    }

    fn outgoing(&mut self, connection: &mut ServerConnection, outgoing: Outgoing) {
        match outgoing {
            Outgoing::Update(subscription, update) => {
                if let Some(pending) = self.subscribing.get_mut(&subscription) {
                    pending.push(update);
                } else if self.subscriptions.contains(&subscription) {
                    let _ = connection.publish_update(subscription, update);
                }
            }
            Outgoing::Done(id, answer) => {
                self.running.remove(&id);
                let is_session = self.session_ids.remove(&id);
                let control = self.controls.remove(&id);
                self.finish(connection, &id, is_session, control, answer);
            }
        }
    }

    /// `pi.session-management` `attach [sessionId]` and `detach []`.
    fn session_management(&mut self, connection: &mut ServerConnection, id: RequestId, call: &Call) {
        let args = call.args_json();
        let attach = match (call.member.as_str(), &args[..]) {
            ("attach", [serde_json::Value::String(session)]) => match SessionId::new(session.as_str()) {
                Ok(session) if self.shared.service.session_exists(&session) => Some(session),
                _ => {
                    let error = ErrorBody::new(code("session_not_found"), format!("Unknown session: {session}"));
                    self.respond(connection, &id, Err(error));
                    return;
                }
            },
            ("detach", []) => None,
            _ => {
                let error =
                    std::io::Error::other(format!("Unsupported session call {}.{}", call.service_id, call.member));
                self.shared.report(&error);
                self.respond(connection, &id, Err(internal_error()));
                return;
            }
        };
        if let (Some(session), Some(current)) = (&attach, connection.attachment()) {
            if current.session_id == *session {
                // Attaching again to the same Session: nothing new to publish.
                self.respond(connection, &id, Ok(Some(Payload::null())));
                return;
            }
        }
        self.pending_op = Some(PendingSessionOp { id, attach });
        if self.session_calls == 0 {
            self.run_pending_op(connection);
        }
    }

    /// The waiting Session operation, now that no Session call is in flight on the attachment
    /// it replaces or releases.
    fn run_pending_op(&mut self, connection: &mut ServerConnection) {
        let Some(op) = self.pending_op.take() else { return };
        let route =
            op.attach.map(|session| SessionTarget::new(self.shared.server_id.clone(), session, attachment_id()));
        let changed = match (&route, connection.attachment()) {
            (None, None) => Ok(()),
            _ => {
                if let Some(hook) = &self.shared.on_event {
                    hook(self.number, Observation::Route(route.as_ref()));
                }
                connection.set_attachment(route)
            }
        };
        let answer = match changed {
            Ok(()) => Ok(Some(Payload::null())),
            Err(error) => Err(self.shared.answer(CallError::internal(error.to_string()))),
        };
        self.respond(connection, &op.id, answer);
    }

    /// While draining: once nothing is in flight, close.
    fn close_if_drained(&mut self, connection: &mut ServerConnection) {
        if self.draining && connection.in_flight_len() == 0 && !connection.is_closed() {
            connection.disconnect();
        }
    }
}

/// The answer of a call that completed: an error of a cancelled call is `cancelled`.
fn settle<S>(shared: &Shared<S>, result: CallResult, cancel: &CallCancel) -> Result<Option<Payload>, ErrorBody> {
    match result {
        Ok(result) => Ok(result),
        Err(_) if cancel.is_cancelled() => Err(ErrorBody::new(code("cancelled"), "RPC request cancelled")),
        Err(error) => Err(shared.answer(error)),
    }
}

/// Sends a running call's answer back to its connection; if the task ends without one (a
/// panic), the call is answered `internal_error`.
struct Reply {
    id: Option<RequestId>,
    out: mpsc::UnboundedSender<Outgoing>,
}

impl Reply {
    fn send(&mut self, answer: Result<Option<Payload>, ErrorBody>) {
        if let Some(id) = self.id.take() {
            let _ = self.out.send(Outgoing::Done(id, answer));
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if self.id.is_some() {
            self.send(Err(internal_error()));
        }
    }
}

fn code(code: &str) -> ErrorCode {
    ErrorCode::new(code).expect("a non-empty code")
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}
