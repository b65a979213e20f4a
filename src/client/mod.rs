//! [`Client`]: an async Pi client over tokio (feature `tokio`): connect over a Unix socket, TCP
//! or any byte stream, make requests and await their answers, follow the attachment and the
//! updates of subscriptions, disconnect and reconnect; and find the servers of a directory with
//! [`crate::io::unix::discover`].
//!
//! One background task per connection owns the [`crate::io::ClientDriver`] and the
//! sans-IO [`crate::ClientConnection`], which holds every protocol rule
//! (docs/PROTOCOL.md section 8): the handshake and the expected `serverId`, request ids,
//! correlation, cancels carrying their request's target, Session calls on the current
//! attachment. The [`Client`] handle is cheap to clone and may be used from many tasks at once.
//!
//! It behaves as the real `@earendil-works/pi-client` 0.85.1 does: the `hello` must name the
//! server that was dialled; an attachment naming another server ends the connection; when a
//! connection ends, every pending call fails at once and nothing is sent again on the next
//! one ([`reconnect`](Client::reconnect)); a request whose future is dropped before it settles
//! (or whose [`CancellationToken`] fires) sends `cancel`.
//!
//! With the `chord` feature, [`Client::catalogue`] reads the `$chord.service` catalogue with
//! Chord's strict parser and [`Client::subscribe_service`] follows a service: its snapshot, then
//! each update decoded with the replicated state applied (`ServiceSubscription`).
//!
//! # Example
//!
//! A session against a server (here one in the same process, answering over
//! `tokio::io::duplex`): connect, attach to a Session through `pi.session-management`, call a
//! service of the server and one of the Session.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use pi_protocol::client::{service_call, Client, RequestError};
//! use pi_protocol::{CallTarget, ServerId};
//! use serde_json::json;
//!
//! let server_id = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?;
//! # let (io, server_io) = tokio::io::duplex(64 * 1024);
//! # tokio::spawn(pi_protocol::client::doc_support::serve(server_io, server_id.clone()));
//! let client = Client::connect_stream(io, server_id).await?;
//!
//! let echo = client.request(CallTarget::Server, service_call("demo.echo", "echo", json!(["hi"]))?).await?;
//! assert_eq!(echo.map(|p| p.to_value()), Some(json!({"echo": ["hi"]})));
//!
//! let route = client.attach("session-1").await?;
//! assert_eq!(route.session_id.as_str(), "session-1");
//! let answer = client.request(CallTarget::Session, service_call("session", "prompt", json!(["go"]))?).await?;
//! assert_eq!(answer.map(|p| p.to_value()), Some(json!({"ok": true})));
//!
//! match client.attach("session-9").await {
//!     Err(RequestError::Server(error)) => assert_eq!(error.code.as_str(), "session_not_found"),
//!     other => panic!("{other:?}"),
//! }
//! client.disconnect().await;
//! # Ok(()) }
//! ```

#[cfg(feature = "chord")]
mod chord;
mod error;
mod task;
mod updates;

#[doc(hidden)]
pub mod doc_support;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
pub use tokio_util::sync::CancellationToken;

#[cfg(feature = "chord")]
pub use self::chord::{AppliedUpdate, ServiceSubscription, ServiceUpdateError};
pub use self::error::{ConnectError, RequestError};
use self::task::{BoxedTransport, Command, Shared, UpdateCopy};
pub use self::updates::{Updates, UpdatesError};
/// The mode [`Client::subscribe_service`] subscribes in (Chord's `singleton` or `keyed`).
#[cfg(feature = "chord")]
pub use crate::chord::wire::ServiceMode;
use crate::connection::{CallTarget, CloseReason};
/// Discovery of the servers of a directory, as pi-client's `discoverUnixServers` (the same items
/// as in [`crate::io::unix`]).
#[cfg(unix)]
pub use crate::io::unix::{discover, discover_with, DiscoverOptions, DiscoveredServer};
use crate::io::{ClientDriver, DriverOptions};
use crate::{ClientConnection, ClientOptions, Payload, ProtocolError, ServerId, SessionTarget, SubscriptionId};

/// The default of [`ClientBuilder::handshake_timeout`]: 10 s.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The default of [`ClientBuilder::shutdown_timeout`]: 5 s.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The default of [`ClientBuilder::max_buffered_update_bytes`]: 16 MiB, one frame of the
/// default frame limit.
pub const DEFAULT_MAX_BUFFERED_UPDATE_BYTES: usize = 16 * 1024 * 1024;

/// The service the real pi-server offers for attaching to a Session and detaching
/// ([`Client::attach`], [`Client::detach`]).
pub const SESSION_MANAGEMENT_SERVICE: &str = "pi.session-management";

/// A service call payload `{serviceId, member, args}` (the shape the real pi-server checks and
/// Chord's `ServiceCall` reads), from JSON arguments.
///
/// ```
/// let call = pi_protocol::client::service_call("demo.echo", "echo", serde_json::json!([1, "a"]))?;
/// assert_eq!(call.to_value(), serde_json::json!({"serviceId": "demo.echo", "member": "echo", "args": [1, "a"]}));
/// # Ok::<(), pi_protocol::ProtocolError>(())
/// ```
///
/// # Errors
/// When `args` holds a value JSON payloads refuse (a number that is not a safe integer or a
/// float64, too deep a nesting).
pub fn service_call(service_id: &str, member: &str, args: serde_json::Value) -> Result<Payload, ProtocolError> {
    let mut call = serde_json::Map::new();
    call.insert("serviceId".to_owned(), service_id.into());
    call.insert("member".to_owned(), member.into());
    call.insert("args".to_owned(), args);
    Payload::from_value(&serde_json::Value::Object(call))
}

/// Where a [`Client`] stands, as [`Client::state`] and [`Client::watch_state`] tell.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionState {
    /// A connection is being opened (transport and handshake).
    Connecting,
    /// The handshake completed: requests may be made.
    Connected {
        /// The `serverId` of the server's `hello`.
        server_id: ServerId,
    },
    /// No connection is open. `reason` says how the last one ended (`None`: it never opened).
    Disconnected {
        /// How the last connection ended: [`CloseReason::PeerClosed`] (the server hung up),
        /// [`CloseReason::Local`] ([`Client::disconnect`]), [`CloseReason::Transport`] (an I/O
        /// error), a violation, ...
        reason: Option<CloseReason>,
    },
}

/// An async connector for [`ClientBuilder::connect_with`]: opens a fresh byte stream for each
/// connection.
type Factory = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = std::io::Result<BoxedTransport>> + Send>> + Send + Sync>;

/// How a [`Client`] opens its connections.
enum Connector {
    Unix(PathBuf),
    Tcp(String),
    Factory(Factory),
    /// A stream given once: taken by the first connection.
    Once(Mutex<Option<BoxedTransport>>),
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Connector::Unix(path) => f.debug_tuple("Unix").field(path).finish(),
            Connector::Tcp(addr) => f.debug_tuple("Tcp").field(addr).finish(),
            Connector::Factory(_) => f.write_str("Factory"),
            Connector::Once(_) => f.write_str("Once"),
        }
    }
}

impl Connector {
    async fn open(&self) -> Result<BoxedTransport, ConnectError> {
        match self {
            #[cfg(unix)]
            Connector::Unix(path) => Ok(Box::new(tokio::net::UnixStream::connect(path).await?)),
            #[cfg(not(unix))]
            Connector::Unix(_) => {
                Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "no Unix sockets here").into())
            }
            Connector::Tcp(addr) => {
                let stream = tokio::net::TcpStream::connect(addr.as_str()).await?;
                stream.set_nodelay(true)?;
                Ok(Box::new(stream))
            }
            Connector::Factory(factory) => Ok(factory().await?),
            Connector::Once(stream) => stream
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
                .ok_or(ConnectError::NotReconnectable),
        }
    }
}

/// How a [`Client`] connects: the sans-IO connection's [`ClientOptions`] (frame and CBOR
/// limits, version, request id prefix, transmit cap, expected `serverId`), the driver's
/// [`DriverOptions`], a handshake deadline and the bound of each update stream. Start from
/// [`Client::builder`].
///
/// ```
/// use std::time::Duration;
/// use pi_protocol::client::{Client, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_BUFFERED_UPDATE_BYTES};
/// use pi_protocol::ServerId;
/// let builder = Client::builder()
///     .server_id(ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?)
///     .handshake_timeout(Duration::from_secs(2))
///     .max_buffered_update_bytes(1 << 20);
/// assert_eq!(builder.handshake_timeout, Duration::from_secs(2));
/// assert_eq!(Client::builder().handshake_timeout, DEFAULT_HANDSHAKE_TIMEOUT);
/// assert_eq!(Client::builder().max_buffered_update_bytes, DEFAULT_MAX_BUFFERED_UPDATE_BYTES);
/// # Ok::<(), pi_protocol::ProtocolError>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use = "a builder does nothing until one of its connect methods is called"]
pub struct ClientBuilder {
    /// The sans-IO connection's options (default [`ClientOptions::default`]); its
    /// `expected_server_id` is what [`server_id`](Self::server_id) sets.
    pub connection: ClientOptions,
    /// How the driver uses the transport (default [`DriverOptions::default`]).
    pub driver: DriverOptions,
    /// The longest a connection may take from opening the transport to the server's `hello`
    /// (default [`DEFAULT_HANDSHAKE_TIMEOUT`], 10 s); past it, connecting fails with
    /// [`ConnectError::Timeout`].
    pub handshake_timeout: Duration,
    /// The longest a connection that ended may take to write what it had queued and shut its
    /// stream down (default [`DEFAULT_SHUTDOWN_TIMEOUT`], 5 s): a server that stops reading
    /// cannot hold [`Client::disconnect`], or a dropped client's task, longer. Past it the
    /// stream is dropped unwritten. Pending calls have failed before that.
    pub shutdown_timeout: Duration,
    /// The most bytes of unread updates each [`Updates`] stream holds (default
    /// [`DEFAULT_MAX_BUFFERED_UPDATE_BYTES`], 16 MiB; each update counts its payload bytes plus
    /// 64): past it the stream ends with [`UpdatesError::Overflow`].
    pub max_buffered_update_bytes: usize,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            connection: ClientOptions::default(),
            driver: DriverOptions::default(),
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            max_buffered_update_bytes: DEFAULT_MAX_BUFFERED_UPDATE_BYTES,
        }
    }
}

impl ClientBuilder {
    /// The server the client must reach: a `hello` naming another fails the connection with
    /// [`ConnectError::ServerIdMismatch`] (sets `connection.expected_server_id`).
    pub fn server_id(mut self, server_id: ServerId) -> Self {
        self.connection.expected_server_id = Some(server_id);
        self
    }

    /// Sets [`connection`](Self::connection), keeping an expected `serverId` set before when
    /// `options` has none.
    pub fn connection_options(mut self, options: ClientOptions) -> Self {
        let expected = self.connection.expected_server_id.take();
        self.connection = options;
        if self.connection.expected_server_id.is_none() {
            self.connection.expected_server_id = expected;
        }
        self
    }

    /// Sets [`driver`](Self::driver).
    pub fn driver_options(mut self, options: DriverOptions) -> Self {
        self.driver = options;
        self
    }

    /// Sets [`handshake_timeout`](Self::handshake_timeout).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Sets [`shutdown_timeout`](Self::shutdown_timeout).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Sets [`max_buffered_update_bytes`](Self::max_buffered_update_bytes), in bytes.
    pub fn max_buffered_update_bytes(mut self, bytes: usize) -> Self {
        self.max_buffered_update_bytes = bytes;
        self
    }

    /// Connects to the Unix socket at `path` (each [`reconnect`](Client::reconnect) opens it
    /// again). Without an expected `serverId`, the socket's name gives it when it follows the
    /// `<serverId>.sock` convention ([`crate::io::unix::server_id_of_socket`]).
    ///
    /// # Errors
    /// See [`ConnectError`].
    #[cfg(unix)]
    pub async fn connect_unix(mut self, path: impl AsRef<Path>) -> Result<Client, ConnectError> {
        let path = path.as_ref().to_owned();
        if self.connection.expected_server_id.is_none() {
            self.connection.expected_server_id = crate::io::unix::server_id_of_socket(&path);
        }
        Client::open(self, Connector::Unix(path)).await
    }

    /// Connects over TCP to `addr` (`host:port`; each [`reconnect`](Client::reconnect) resolves
    /// and connects again), with `TCP_NODELAY` set.
    ///
    /// # Errors
    /// See [`ConnectError`].
    pub async fn connect_tcp(self, addr: impl Into<String>) -> Result<Client, ConnectError> {
        Client::open(self, Connector::Tcp(addr.into())).await
    }

    /// Connects over `io`, a byte stream already open (one end of `tokio::io::duplex`, a TLS
    /// stream...). Such a client cannot [`reconnect`](Client::reconnect)
    /// ([`ConnectError::NotReconnectable`]); use [`connect_with`](Self::connect_with) for that.
    ///
    /// # Errors
    /// See [`ConnectError`].
    pub async fn connect_stream<IO>(self, io: IO) -> Result<Client, ConnectError>
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        Client::open(self, Connector::Once(Mutex::new(Some(Box::new(io))))).await
    }

    /// Connects over the byte streams `open` makes, one for this connection and one for each
    /// [`reconnect`](Client::reconnect).
    ///
    /// # Errors
    /// See [`ConnectError`]; an error of `open` is [`ConnectError::Io`].
    pub async fn connect_with<F, Fut, IO>(self, open: F) -> Result<Client, ConnectError>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::io::Result<IO>> + Send + 'static,
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let factory: Factory = Arc::new(move || {
            let opening = open();
            Box::pin(async move { Ok(Box::new(opening.await?) as BoxedTransport) })
        });
        Client::open(self, Connector::Factory(factory)).await
    }
}

/// The live connection of a [`Client`]: where its commands go.
#[derive(Debug)]
struct Link {
    commands: mpsc::UnboundedSender<Command>,
}

#[derive(Debug)]
struct Inner {
    builder: ClientBuilder,
    connector: Connector,
    link: Mutex<Option<Link>>,
    /// Held while a connection is being opened, so that two reconnects do not race.
    opening: tokio::sync::Mutex<()>,
    shared: Arc<Shared>,
    next_token: AtomicU64,
    /// The number of the last subscription [`Client::subscribe_service`] named (`service-N`).
    #[cfg_attr(not(feature = "chord"), allow(dead_code))]
    next_subscription: AtomicU64,
}

/// An async Pi client (feature `tokio`): see the [module docs](self) for an example.
///
/// Cheap to clone (an `Arc`); every clone speaks on the same connection. When the last clone is
/// dropped, the connection closes.
///
/// - [`request`](Self::request) sends a call to the server ([`CallTarget::Server`]) or to the
///   attached Session ([`CallTarget::Session`]) and returns its result; dropping the future
///   before it settles sends `cancel` ([`request_with_cancel`](Self::request_with_cancel) adds an
///   explicit signal).
/// - [`attach`](Self::attach) and [`detach`](Self::detach) call `pi.session-management`;
///   [`attachment`](Self::attachment) and [`watch_attachment`](Self::watch_attachment) follow
///   the route the server publishes.
/// - [`updates`](Self::updates) follows one subscription's `service_update`s, bounded in bytes.
/// - [`disconnect`](Self::disconnect) and [`reconnect`](Self::reconnect): pending calls fail
///   with [`RequestError::Disconnected`], nothing is replayed.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl Client {
    /// The defaults, to adjust before connecting.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Connects to the Unix socket at `path`, expecting the server `server_id` (see
    /// [`ClientBuilder::connect_unix`]).
    ///
    /// # Errors
    /// See [`ConnectError`].
    #[cfg(unix)]
    pub async fn connect_unix(path: impl AsRef<Path>, server_id: ServerId) -> Result<Client, ConnectError> {
        Client::builder().server_id(server_id).connect_unix(path).await
    }

    /// Connects over TCP to `addr`, expecting the server `server_id` (see
    /// [`ClientBuilder::connect_tcp`]).
    ///
    /// # Errors
    /// See [`ConnectError`].
    pub async fn connect_tcp(addr: impl Into<String>, server_id: ServerId) -> Result<Client, ConnectError> {
        Client::builder().server_id(server_id).connect_tcp(addr).await
    }

    /// Connects over a byte stream already open, expecting the server `server_id` (see
    /// [`ClientBuilder::connect_stream`]).
    ///
    /// # Errors
    /// See [`ConnectError`].
    pub async fn connect_stream<IO>(io: IO, server_id: ServerId) -> Result<Client, ConnectError>
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        Client::builder().server_id(server_id).connect_stream(io).await
    }

    async fn open(builder: ClientBuilder, connector: Connector) -> Result<Client, ConnectError> {
        let (state, _) = watch::channel(ConnectionState::Disconnected { reason: None });
        let (attachment, _) = watch::channel(None);
        let client = Client {
            inner: Arc::new(Inner {
                builder,
                connector,
                link: Mutex::new(None),
                opening: tokio::sync::Mutex::new(()),
                shared: Arc::new(Shared { state, attachment }),
                next_token: AtomicU64::new(0),
                next_subscription: AtomicU64::new(0),
            }),
        };
        client.connect().await?;
        Ok(client)
    }

    /// Opens a connection and waits for its handshake.
    async fn connect(&self) -> Result<(), ConnectError> {
        let _opening = self.inner.opening.lock().await;
        if self.is_connected() {
            return Err(ConnectError::AlreadyConnected);
        }
        let builder = &self.inner.builder;
        let shared = &self.inner.shared;
        shared.state.send_replace(ConnectionState::Connecting);
        let deadline = tokio::time::Instant::now() + builder.handshake_timeout;
        let opened = tokio::time::timeout_at(deadline, self.inner.connector.open()).await;
        let transport = match opened {
            Ok(Ok(transport)) => transport,
            Ok(Err(error)) => return Err(self.failed(error)),
            Err(_) => return Err(self.failed(ConnectError::Timeout(builder.handshake_timeout))),
        };
        let connection = ClientConnection::new(builder.connection.clone());
        let driver = ClientDriver::with_options(transport, connection, builder.driver.clone());
        let (commands, receiver) = mpsc::unbounded_channel();
        let (ready, handshake) = oneshot::channel();
        let copy = UpdateCopy {
            below: builder.driver.read_chunk.max(1),
            codec: builder.connection.codec,
            shutdown_timeout: builder.shutdown_timeout,
        };
        tokio::spawn(task::run(driver, receiver, shared.clone(), ready, copy));
        match tokio::time::timeout_at(deadline, handshake).await {
            Ok(Ok(Ok(_server_id))) => {
                *self.lock_link() = Some(Link { commands });
                Ok(())
            }
            Ok(Ok(Err(reason))) => Err(ConnectError::from_close(reason)),
            Ok(Err(_)) => Err(ConnectError::Closed(CloseReason::Local)),
            Err(_) => {
                let _ = commands.send(Command::Close);
                Err(self.failed(ConnectError::Timeout(builder.handshake_timeout)))
            }
        }
    }

    /// Records a connection attempt that failed before its task reported anything.
    fn failed(&self, error: ConnectError) -> ConnectError {
        self.inner.shared.state.send_replace(ConnectionState::Disconnected { reason: None });
        error
    }

    fn lock_link(&self) -> std::sync::MutexGuard<'_, Option<Link>> {
        self.inner.link.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The command channel of the open connection, if any.
    fn commands(&self) -> Option<mpsc::UnboundedSender<Command>> {
        self.lock_link().as_ref().map(|link| link.commands.clone()).filter(|commands| !commands.is_closed())
    }

    /// Sends `call` to `target` and waits for its answer: `Ok(result)` for `ok: true` (`None`
    /// when the response has no `result`), or a [`RequestError`].
    ///
    /// [`CallTarget::Server`] addresses the server of the handshake; [`CallTarget::Session`]
    /// the attached Session (the route of the last `attachment` message). Dropping the future
    /// before it settles sends `cancel` (with the request's own target) and drops the late
    /// answer.
    ///
    /// # Errors
    /// [`RequestError::Server`] for an error response; [`RequestError::NoAttachment`],
    /// [`RequestError::NotConnected`], [`RequestError::Encode`] when nothing was sent;
    /// [`RequestError::Disconnected`] when the connection ended first.
    pub async fn request(&self, target: CallTarget, call: Payload) -> Result<Option<Payload>, RequestError> {
        self.call(target, call, None).await
    }

    /// [`request`](Self::request) that `cancel` also stops: once it is cancelled the call
    /// returns [`RequestError::Cancelled`] at once and `cancel` goes to the server (as
    /// pi-client's `AbortSignal`). A token cancelled before the call sends nothing.
    ///
    /// # Errors
    /// As [`request`](Self::request), and [`RequestError::Cancelled`].
    pub async fn request_with_cancel(
        &self,
        target: CallTarget,
        call: Payload,
        cancel: &CancellationToken,
    ) -> Result<Option<Payload>, RequestError> {
        if cancel.is_cancelled() {
            return Err(RequestError::Cancelled);
        }
        self.call(target, call, Some(cancel)).await
    }

    async fn call(
        &self,
        target: CallTarget,
        call: Payload,
        cancel: Option<&CancellationToken>,
    ) -> Result<Option<Payload>, RequestError> {
        let commands = self.commands().ok_or(RequestError::NotConnected)?;
        let token = self.inner.next_token.fetch_add(1, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        commands.send(Command::Request { token, target, call, reply }).map_err(|_| RequestError::NotConnected)?;
        let mut guard = CancelOnDrop { commands, token, armed: true };
        let outcome = match cancel {
            None => answer.await,
            Some(cancel) => tokio::select! {
                outcome = answer => outcome,
                () = cancel.cancelled() => return Err(RequestError::Cancelled),
            },
        };
        guard.armed = false;
        outcome.unwrap_or(Err(RequestError::NotConnected))
    }

    /// Attaches to the Session `session_id` through `pi.session-management` `attach`, and returns
    /// the route the server published for it (the route of [`CallTarget::Session`] calls from
    /// now on).
    ///
    /// # Errors
    /// As [`request`](Self::request) (the real server answers an unknown Session with
    /// `session_not_found`); [`RequestError::Invalid`] when the server answered without
    /// publishing a route for that Session.
    pub async fn attach(&self, session_id: &str) -> Result<SessionTarget, RequestError> {
        let call = service_call(SESSION_MANAGEMENT_SERVICE, "attach", serde_json::json!([session_id]))
            .map_err(RequestError::Encode)?;
        self.request(CallTarget::Server, call).await?;
        match self.attachment() {
            Some(route) if route.session_id.as_str() == session_id => Ok(route),
            _ => Err(RequestError::Invalid(format!(
                "attach answered but no route to Session {session_id:?} was published"
            ))),
        }
    }

    /// Detaches from the current Session through `pi.session-management` `detach`.
    ///
    /// # Errors
    /// As [`request`](Self::request).
    pub async fn detach(&self) -> Result<(), RequestError> {
        let call =
            service_call(SESSION_MANAGEMENT_SERVICE, "detach", serde_json::json!([])).map_err(RequestError::Encode)?;
        self.request(CallTarget::Server, call).await.map(|_| ())
    }

    /// Follows the `service_update`s of `subscription_id` on the current connection, from now
    /// on. Call it before the call that starts the subscription (the server may send updates
    /// before it answers). A second stream for the same id takes over
    /// ([`UpdatesError::Superseded`] ends the first). Updates for an id nobody follows are
    /// dropped.
    ///
    /// # Errors
    /// [`RequestError::NotConnected`] without an open connection.
    pub fn updates(&self, subscription_id: SubscriptionId) -> Result<Updates, RequestError> {
        let commands = self.commands().ok_or(RequestError::NotConnected)?;
        let queue = updates::Queue::new(self.inner.builder.max_buffered_update_bytes);
        commands
            .send(Command::Subscribe { subscription_id: subscription_id.clone(), queue: queue.clone() })
            .map_err(|_| RequestError::NotConnected)?;
        Ok(Updates::new(subscription_id, queue, Some(commands)))
    }

    /// The current Session route: the last `attachment` the server published on the open
    /// connection (`None` when there is none, or no connection).
    pub fn attachment(&self) -> Option<SessionTarget> {
        self.inner.shared.attachment.borrow().clone()
    }

    /// A receiver of the current Session route that sees each change (an attachment published
    /// again unchanged is no change; a disconnect makes it `None`). It lives across reconnects.
    pub fn watch_attachment(&self) -> watch::Receiver<Option<SessionTarget>> {
        self.inner.shared.attachment.subscribe()
    }

    /// Where the client stands now.
    pub fn state(&self) -> ConnectionState {
        self.inner.shared.state.borrow().clone()
    }

    /// A receiver of [`state`](Self::state) that sees each change, across reconnects.
    pub fn watch_state(&self) -> watch::Receiver<ConnectionState> {
        self.inner.shared.state.subscribe()
    }

    /// Whether a connection is open and its handshake complete.
    pub fn is_connected(&self) -> bool {
        matches!(self.state(), ConnectionState::Connected { .. })
    }

    /// The `serverId` of the open connection's handshake.
    pub fn server_id(&self) -> Option<ServerId> {
        match self.state() {
            ConnectionState::Connected { server_id } => Some(server_id),
            _ => None,
        }
    }

    /// Waits until the open connection ends and returns how ([`CloseReason::PeerClosed`] when the
    /// server hangs up); at once when no connection is open (`None` if none ever ended).
    pub async fn closed(&self) -> Option<CloseReason> {
        let mut state = self.watch_state();
        let state = state.wait_for(|state| matches!(state, ConnectionState::Disconnected { .. })).await;
        match state.as_deref() {
            Ok(ConnectionState::Disconnected { reason }) => reason.clone(),
            _ => None,
        }
    }

    /// Closes the open connection ([`CloseReason::Local`]) and waits until it is closed: every
    /// pending call fails with [`RequestError::Disconnected`], every update stream ends, the
    /// attachment becomes `None`. Does nothing without an open connection.
    pub async fn disconnect(&self) {
        let link = self.lock_link().take();
        if let Some(link) = link {
            let _ = link.commands.send(Command::Close);
            // The task ends when the connection closed and the stream was shut down.
            link.commands.closed().await;
        }
    }

    /// Opens a new connection the way the first was opened, after the last one ended (a
    /// [`disconnect`](Self::disconnect), or the server going away). Nothing of the old
    /// connection is sent again: its pending calls failed when it ended.
    ///
    /// # Errors
    /// [`ConnectError::AlreadyConnected`] while connected (as pi-client: disconnect first);
    /// [`ConnectError::NotReconnectable`] for a client made over one byte stream; otherwise as
    /// connecting.
    pub async fn reconnect(&self) -> Result<(), ConnectError> {
        self.connect().await
    }
}

/// Sends `cancel` for a request whose future is dropped before it settled.
struct CancelOnDrop {
    commands: mpsc::UnboundedSender<Command>,
    token: u64,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.commands.send(Command::Cancel { token: self.token });
        }
    }
}
