//! [`Driver`]: runs a sans-IO connection ([`ServerConnection`], [`ClientConnection`]) over a
//! tokio byte stream (feature `tokio`; docs/PROTOCOL.md section 8, `docs/ASYNC.md`).

use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::io::poll_read_buf;

use crate::connection::options::option_setters;
use crate::connection::{ClientConnection, ClientEvent, Deadline, ServerConnection, ServerEvent};

use super::budget::{ByteBudget, ByteCharge};

/// The default of [`DriverOptions::read_chunk`]: 4 KiB.
const DEFAULT_READ_CHUNK: usize = 4 * 1024;

/// The default of [`DriverOptions::pause_reading_at`]: 64 KiB.
const DEFAULT_PAUSE_READING_AT: usize = 64 * 1024;

/// The default of [`DriverOptions::frame_timeout`]: 30 s.
pub const DEFAULT_FRAME_TIMEOUT: Duration = Duration::from_secs(30);

/// The default of [`DriverOptions::write_timeout`]: 30 s.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// How a [`Driver`] uses its transport: its buffers, and the transport's deadlines and byte
/// budget (docs/PROTOCOL.md section 8, "Deadlines and budgets"), which apply to a
/// [`ServerDriver`] (a [`ClientDriver`] keeps no deadline and charges no budget).
///
/// | field | default |
/// |---|---|
/// | [`read_chunk`](Self::read_chunk) | 4 KiB |
/// | [`pause_reading_at`](Self::pause_reading_at) | 64 KiB |
/// | [`frame_timeout`](Self::frame_timeout) | 30 s |
/// | [`idle_timeout`](Self::idle_timeout) | none |
/// | [`write_timeout`](Self::write_timeout) | 30 s |
/// | [`budget`](Self::budget) | none |
///
/// ```
/// use pi_protocol::io::DriverOptions;
/// let options = DriverOptions::default().read_chunk(16 * 1024).pause_reading_at(1 << 20);
/// assert_eq!((options.read_chunk, options.pause_reading_at), (16 * 1024, 1 << 20));
/// assert_eq!(DriverOptions::default().read_chunk, 4096);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriverOptions {
    /// The most bytes asked of the transport in one read (default 4 KiB; 0 counts as 1). This is
    /// the driver's read buffer: frames longer than it are gathered by the connection's decoder
    /// in a buffer that grows only with the bytes of that frame that arrived, so a connection
    /// holds one small buffer while it idles, whatever the frame limit.
    pub read_chunk: usize,
    /// The driver stops reading while at least this many bytes wait to be written (default
    /// 64 KiB): a peer that sends requests but does not read their answers is slowed down by
    /// TCP instead of growing the queue up to the connection's `max_pending_transmit`.
    pub pause_reading_at: usize,
    /// Once the first bytes of a frame (its header included) arrived, how long the rest may
    /// take (default [`DEFAULT_FRAME_TIMEOUT`], 30 s; `None`: forever): a peer that stops inside
    /// a frame is closed with [`Deadline::Frame`], and the partial frame freed.
    pub frame_timeout: Option<Duration>,
    /// How long a connection may go without reading or writing a byte (default `None`: no idle
    /// limit); closed with [`Deadline::Idle`].
    pub idle_timeout: Option<Duration>,
    /// How long bytes may wait to be written without the peer taking any (default
    /// [`DEFAULT_WRITE_TIMEOUT`], 30 s; `None`: forever): the clock starts when a write finds the
    /// transport full and restarts at each write that makes progress. A peer that does not read
    /// is closed with [`Deadline::Write`] and what was queued for it dropped.
    pub write_timeout: Option<Duration>,
    /// The byte budget this connection charges, shared with others (default `None`); see
    /// [`ByteBudget`].
    pub budget: Option<ByteBudget>,
}

option_setters! {
    DriverOptions {
        /// Sets [`read_chunk`](Self::read_chunk), in bytes.
        read_chunk: usize;
        /// Sets [`pause_reading_at`](Self::pause_reading_at), in bytes.
        pause_reading_at: usize;
        /// Sets [`frame_timeout`](Self::frame_timeout).
        frame_timeout: Option<Duration>;
        /// Sets [`idle_timeout`](Self::idle_timeout).
        idle_timeout: Option<Duration>;
        /// Sets [`write_timeout`](Self::write_timeout).
        write_timeout: Option<Duration>;
        /// Sets [`budget`](Self::budget).
        budget: Option<ByteBudget>;
    }
}

impl Default for DriverOptions {
    fn default() -> Self {
        DriverOptions {
            read_chunk: DEFAULT_READ_CHUNK,
            pause_reading_at: DEFAULT_PAUSE_READING_AT,
            frame_timeout: Some(DEFAULT_FRAME_TIMEOUT),
            idle_timeout: None,
            write_timeout: Some(DEFAULT_WRITE_TIMEOUT),
            budget: None,
        }
    }
}

mod sealed {
    use bytes::Bytes;

    /// What a [`Driver`](super::Driver) needs of a connection.
    pub trait Ops {
        /// What the connection reports to the application.
        type Event;
        fn next_event(&mut self) -> Option<Self::Event>;
        fn receive_chunk(&mut self, chunk: &Bytes);
        fn transmit(&self) -> &[u8];
        fn transmitted(&mut self, written: usize);
        fn transmit_len(&self) -> usize;
        /// The peer ended the stream.
        fn peer_closed(&mut self);
        /// The transport failed.
        fn transport_failed(&mut self, error: &std::io::Error);
        /// Whether the connection still takes bytes.
        fn takes_bytes(&self) -> bool;
        /// Whether the connection reported its last event.
        fn is_done(&self) -> bool;
    }

    /// What a [`Driver`](super::Driver) needs of a connection for its deadlines and budget.
    pub trait Deadlines {
        /// Whether the driver's deadlines and budget apply.
        fn keeps_deadlines(&self) -> bool;
        /// The connection's own next deadline.
        fn poll_timeout(&self) -> Option<std::time::Instant>;
        /// The connection's own deadlines, at `now`.
        fn handle_timeout(&mut self, now: std::time::Instant);
        /// A deadline of the driver passed.
        fn timed_out(&mut self, deadline: crate::connection::Deadline);
        /// The budget was exceeded.
        fn exceeded_budget(&mut self, limit: usize);
        /// The bytes held for the peer.
        fn held_bytes(&self) -> usize;
        /// A frame is partly received.
        fn receiving_frame(&self) -> bool;
    }
}

/// A sans-IO connection a [`Driver`] can run: [`ServerConnection`] and [`ClientConnection`]
/// (sealed: no other type implements it). Its events are `Self::Event`: [`ServerEvent`] or
/// [`ClientEvent`].
pub trait Endpoint: sealed::Ops + sealed::Deadlines {}

impl Endpoint for ServerConnection {}
impl Endpoint for ClientConnection {}

/// `sealed::Ops` for a connection type: both have the same inherent methods under the same
/// names; they differ only in whether they still take bytes (`$takes_bytes`).
macro_rules! ops {
    ($connection:ty, $event:ty, takes_bytes: |$this:ident| $takes_bytes:expr) => {
        impl sealed::Ops for $connection {
            type Event = $event;
            fn next_event(&mut self) -> Option<$event> {
                self.poll_event()
            }
            fn receive_chunk(&mut self, chunk: &Bytes) {
                self.receive_shared(chunk);
            }
            fn transmit(&self) -> &[u8] {
                self.pending_transmit()
            }
            fn transmitted(&mut self, written: usize) {
                self.advance_transmit(written);
            }
            fn transmit_len(&self) -> usize {
                self.pending_transmit_len()
            }
            fn peer_closed(&mut self) {
                self.peer_closed();
            }
            fn transport_failed(&mut self, error: &std::io::Error) {
                self.transport_failed(error);
            }
            fn takes_bytes(&self) -> bool {
                let $this = self;
                $takes_bytes
            }
            fn is_done(&self) -> bool {
                self.is_closed()
            }
        }
    };
}

ops!(ServerConnection, ServerEvent, takes_bytes: |connection| connection.reading());
ops!(ClientConnection, ClientEvent, takes_bytes: |connection| !connection.is_closed());

impl sealed::Deadlines for ServerConnection {
    fn keeps_deadlines(&self) -> bool {
        true
    }
    fn poll_timeout(&self) -> Option<Instant> {
        ServerConnection::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Instant) {
        ServerConnection::handle_timeout(self, now);
    }
    fn timed_out(&mut self, deadline: Deadline) {
        ServerConnection::timed_out(self, deadline);
    }
    fn exceeded_budget(&mut self, limit: usize) {
        ServerConnection::exceeded_budget(self, limit);
    }
    fn held_bytes(&self) -> usize {
        ServerConnection::held_bytes(self)
    }
    fn receiving_frame(&self) -> bool {
        ServerConnection::receiving_frame(self)
    }
}

/// The client keeps no transport deadline here (its application bounds its own waits).
impl sealed::Deadlines for ClientConnection {
    fn keeps_deadlines(&self) -> bool {
        false
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn timed_out(&mut self, _deadline: Deadline) {}
    fn exceeded_budget(&mut self, _limit: usize) {}
    fn held_bytes(&self) -> usize {
        0
    }
    fn receiving_frame(&self) -> bool {
        false
    }
}

/// Runs one sans-IO connection over a byte stream `IO` (a `TcpStream`, a `UnixStream`, one end
/// of `tokio::io::duplex`, a TLS stream...): it reads the stream into the connection, writes what
/// the connection queues, and hands the connection's events to the application, one at a time,
/// from [`next_event`](Self::next_event).
///
/// Use the aliases: [`ServerDriver`] runs a [`ServerConnection`] (events: [`ServerEvent`]),
/// [`ClientDriver`] a [`ClientConnection`] (events: [`ClientEvent`]). The application acts
/// through [`connection_mut`](Self::connection_mut) (`respond`, `set_attachment`,
/// `publish_update`; `request`, `cancel`), and what it queues is written the next time the
/// driver is polled. The protocol's rules are the connection's (docs/PROTOCOL.md section 8); the
/// driver adds only the transport's:
///
/// - **Reading.** One read asks for at most [`DriverOptions::read_chunk`] bytes, into a buffer
///   whose frames' payloads the messages then share (`receive_shared`): no payload beyond 46
///   bytes is copied, no buffer is allocated per message. The end of the stream ends the
///   connection with [`CloseReason::PeerClosed`](crate::CloseReason::PeerClosed), a read error
///   with [`CloseReason::Transport`](crate::CloseReason::Transport) (`peer_closed`,
///   `transport_failed`), which it reports as an event (a stream that stops inside a frame is a
///   violation, see there); [`CloseReason::Local`](crate::CloseReason::Local) is the
///   application's own `close` or `disconnect` alone.
/// - **Writing.** The connection queues whole frames in one buffer; the driver writes that
///   buffer in place, once every event of the bytes read so far has been handed out, so the
///   answers to a burst of requests leave in one write. Reading pauses while
///   [`DriverOptions::pause_reading_at`] bytes or more wait to be written. A write error ends
///   the connection like a read error, and what was queued is dropped.
/// - **The end.** Once the connection reported its last event ([`ServerEvent::Closed`]: every
///   admitted request settled; [`ClientEvent::Closed`]), the driver writes what is still queued,
///   shuts the stream's write side down, and `next_event` returns `None`.
///
/// `next_event` is cancel-safe: every state lives in the driver, so it can be one branch of a
/// `tokio::select!` whose other branch answers requests completed elsewhere.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use pi_protocol::connection::{CallTarget, ClientEvent, ServerEvent};
/// use pi_protocol::io::{ClientDriver, ServerDriver};
/// use pi_protocol::{ClientConnection, ClientOptions, Payload, ServerConnection, ServerId, ServerOptions};
///
/// let (client_io, server_io) = tokio::io::duplex(4096);
/// let server_id = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?;
///
/// // A server that answers every request with its own call.
/// let mut server = ServerDriver::new(server_io, ServerConnection::new(server_id, ServerOptions::default()));
/// let serving = tokio::spawn(async move {
///     while let Some(event) = server.next_event().await {
///         if let ServerEvent::Request(request) = event {
///             server.connection_mut().respond(&request.id, Ok(Some(request.call))).unwrap();
///         }
///     }
/// });
///
/// let mut client = ClientDriver::new(client_io, ClientConnection::new(ClientOptions::default()));
/// assert!(matches!(client.next_event().await, Some(ClientEvent::Ready { .. })));
/// let call = serde_json::json!({"serviceId": "demo.echo", "member": "echo", "args": [1, 2]});
/// let id = client.connection_mut().request(CallTarget::Server, Payload::from_value(&call)?)?;
/// match client.next_event().await {
///     Some(ClientEvent::Response { id: answered, result: Ok(Some(result)) }) => {
///         assert_eq!(answered, id);
///         assert_eq!(result.to_value(), call);
///     }
///     other => panic!("{other:?}"),
/// }
/// client.connection_mut().close();
/// assert!(matches!(client.next_event().await, Some(ClientEvent::Closed { .. })));
/// assert!(client.next_event().await.is_none()); // written, shut down
/// serving.await?; // the server saw the end of the stream, closed, and returned `None`
/// # Ok(()) }
/// ```
pub struct Driver<IO, C> {
    io: IO,
    connection: C,
    options: DriverOptions,
    /// Read into, then split off and shared with the messages decoded from it.
    read_buf: BytesMut,
    /// The stream's read side ended (end of stream, an I/O error).
    read_ended: bool,
    /// A write failed: nothing more is written.
    write_failed: bool,
    /// Bytes were written since the last flush.
    unflushed: bool,
    /// `None` was returned: the connection is done and the stream shut down.
    finished: bool,
    /// The first I/O error of the stream.
    error: Option<io::Error>,
    /// The deadlines of the transport (server connections), and the timer that wakes for the
    /// earliest.
    timers: Timers,
    /// What this connection charged to the shared byte budget.
    charge: Option<ByteCharge>,
}

/// The transport's deadlines of one connection, and the one timer that wakes for the earliest
/// (with the connection's own, `poll_timeout`).
#[derive(Default)]
struct Timers {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The instant the sleep is set for.
    armed: Option<Instant>,
    /// When the frame partly received must be complete.
    frame: Option<Instant>,
    /// When the bytes waiting to be written must have made progress.
    write: Option<Instant>,
    /// When a byte was last read or written (kept only with an idle timeout).
    last_activity: Option<Instant>,
}

/// The time now on tokio's clock (virtual under a paused clock), as a std instant.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// A [`Driver`] of a [`ServerConnection`]: the documented way to serve a Pi connection over
/// tokio (see `docs/ASYNC.md` and the repository's `examples/server.rs`).
///
/// ```no_run
/// # async fn serve() -> std::io::Result<()> {
/// use pi_protocol::connection::{ServerConnection, ServerEvent, ServerOptions};
/// use pi_protocol::io::ServerDriver;
/// use pi_protocol::{Payload, ServerId};
///
/// let server_id = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962").unwrap();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:7878").await?;
/// loop {
///     let (socket, _) = listener.accept().await?;
///     socket.set_nodelay(true)?;
///     let connection = ServerConnection::new(server_id.clone(), ServerOptions::default());
///     let mut driver = ServerDriver::new(socket, connection);
///     tokio::spawn(async move {
///         while let Some(event) = driver.next_event().await {
///             if let ServerEvent::Request(request) = event {
///                 let _ = driver.connection_mut().respond(&request.id, Ok(Some(Payload::null())));
///             }
///         }
///     });
/// }
/// # }
/// ```
pub type ServerDriver<IO> = Driver<IO, ServerConnection>;

/// A [`Driver`] of a [`ClientConnection`] (see the repository's `examples/client.rs`).
pub type ClientDriver<IO> = Driver<IO, ClientConnection>;

impl<IO, C> std::fmt::Debug for Driver<IO, C>
where
    C: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("connection", &self.connection)
            .field("options", &self.options)
            .field("read_ended", &self.read_ended)
            .field("write_failed", &self.write_failed)
            .field("finished", &self.finished)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<IO, C> Driver<IO, C>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    C: Endpoint,
{
    /// Runs `connection` over `io` with the default [`DriverOptions`].
    pub fn new(io: IO, connection: C) -> Self {
        Self::with_options(io, connection, DriverOptions::default())
    }

    /// Runs `connection` over `io` with `options`.
    pub fn with_options(io: IO, connection: C, options: DriverOptions) -> Self {
        let keeps = connection.keeps_deadlines();
        let timers = Timers { last_activity: (keeps && options.idle_timeout.is_some()).then(now), ..Timers::default() };
        let charge = if keeps { options.budget.as_ref().map(ByteBudget::charge) } else { None };
        Driver {
            timers,
            charge,
            io,
            connection,
            options,
            read_buf: BytesMut::new(),
            read_ended: false,
            write_failed: false,
            unflushed: false,
            finished: false,
            error: None,
        }
    }

    /// The next event of the connection, reading and writing the stream as needed; `None` once
    /// the connection is done and the stream shut down (see [`Driver`]). Cancel-safe.
    pub async fn next_event(&mut self) -> Option<C::Event> {
        poll_fn(|cx| self.poll_event(cx)).await
    }

    /// [`next_event`](Self::next_event) as a poll function, for hand-written futures and
    /// streams: `Ready(Some(event))`, `Ready(None)` when done, `Pending` when the stream has
    /// to be waited for (the task is woken when it is ready).
    pub fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<C::Event>> {
        loop {
            if let Some(event) = self.connection.next_event() {
                return Poll::Ready(Some(event));
            }
            if self.finished {
                return Poll::Ready(None);
            }
            if self.account() {
                // Past the budget: the connection is closing, its events come first.
                continue;
            }
            let failed = self.write_failed;
            self.poll_write(cx);
            if self.write_failed && !failed {
                // The failure ended the connection: its events come first.
                continue;
            }
            // What was written is no longer held.
            if self.account() {
                continue;
            }
            if self.connection.is_done() && self.connection.transmit_len() == 0 {
                if !self.write_failed {
                    match Pin::new(&mut self.io).poll_shutdown(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(result) => self.note(result.err()),
                    }
                }
                self.finished = true;
                return Poll::Ready(None);
            }
            if !self.may_read() {
                if self.poll_deadlines(cx) {
                    continue;
                }
                return Poll::Pending;
            }
            let spare = self.read_buf.capacity() - self.read_buf.len();
            let chunk = self.options.read_chunk.max(1);
            if spare < chunk.div_ceil(2) {
                // Reuses the buffer when every message read from it is gone; else a new one.
                self.read_buf.reserve(chunk);
            }
            match poll_read_buf(Pin::new(&mut self.io), cx, &mut self.read_buf) {
                Poll::Pending => {
                    if self.poll_deadlines(cx) {
                        continue;
                    }
                    return Poll::Pending;
                }
                Poll::Ready(Ok(0)) => {
                    self.read_ended = true;
                    self.connection.peer_closed();
                }
                Poll::Ready(Ok(_)) => {
                    let chunk: Bytes = self.read_buf.split().freeze();
                    self.connection.receive_chunk(&chunk);
                    self.after_read();
                }
                Poll::Ready(Err(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(error)) => self.fail(error),
            }
        }
    }

    /// Writes what the connection queued, without reading (the next
    /// [`next_event`](Self::next_event) does that too): for a client that sends a request or
    /// a cancel and then waits for something else. Cancel-safe.
    ///
    /// # Errors
    /// The I/O error that ended the connection, when a write failed (now or before); the
    /// connection then reports its end as an event.
    pub async fn flush(&mut self) -> io::Result<()> {
        poll_fn(|cx| self.poll_flush(cx)).await
    }

    /// [`flush`](Self::flush) as a poll function.
    ///
    /// # Errors
    /// As [`flush`](Self::flush).
    pub fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_write(cx);
        // The write deadline runs while a flush waits (a peer that does not read); when it
        // passes, the queue is dropped and the flush completes.
        while self.connection.transmit_len() != 0 && !self.write_failed && self.poll_deadlines(cx) {
            self.poll_write(cx);
        }
        self.account();
        if self.write_failed {
            let (kind, text) = match &self.error {
                Some(error) => (error.kind(), error.to_string()),
                None => (io::ErrorKind::BrokenPipe, "the stream failed".to_owned()),
            };
            return Poll::Ready(Err(io::Error::new(kind, text)));
        }
        if self.connection.transmit_len() != 0 || self.unflushed {
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    /// Whether the next step is a read: the stream has not ended, the connection takes bytes,
    /// and not too much waits to be written.
    fn may_read(&self) -> bool {
        !self.read_ended
            && self.connection.takes_bytes()
            && self.connection.transmit_len() < self.options.pause_reading_at.max(1)
    }

    /// Charges what the connection holds to the byte budget: `true` when that passed the budget,
    /// and the connection was told so (it is closing and dropped its queue).
    fn account(&mut self) -> bool {
        let Some(charge) = &mut self.charge else { return false };
        if charge.set(self.connection.held_bytes()) {
            return false;
        }
        let limit = charge.limit();
        self.connection.exceeded_budget(limit);
        // Closing dropped the queue: the charge falls to what is still held.
        charge.lower_to(self.connection.held_bytes());
        true
    }

    /// After bytes were read: the frame deadline starts with a frame's first bytes and ends
    /// with the frame; the idle clock restarts.
    fn after_read(&mut self) {
        if !self.connection.keeps_deadlines() {
            return;
        }
        if let Some(timeout) = self.options.frame_timeout {
            if !self.connection.receiving_frame() {
                self.timers.frame = None;
            } else if self.timers.frame.is_none() {
                self.timers.frame = now().checked_add(timeout);
            }
        }
        if self.timers.last_activity.is_some() {
            self.timers.last_activity = Some(now());
        }
    }

    /// Sets the timer for the earliest deadline and polls it: `true` when it fired (and the
    /// deadlines that passed were handled; the connection may have events), `false` when the
    /// task will be woken by it (or there is no deadline).
    fn poll_deadlines(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.connection.keeps_deadlines() {
            return false;
        }
        let idle = match (self.timers.last_activity, self.options.idle_timeout) {
            (Some(at), Some(timeout)) => at.checked_add(timeout),
            _ => None,
        };
        let next =
            [self.connection.poll_timeout(), self.timers.frame, self.timers.write, idle].into_iter().flatten().min();
        let Some(next) = next else {
            self.timers.armed = None;
            return false;
        };
        let deadline = tokio::time::Instant::from_std(next);
        let sleep = self.timers.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if self.timers.armed != Some(next) {
            sleep.as_mut().reset(deadline);
            self.timers.armed = Some(next);
        }
        if sleep.as_mut().poll(cx).is_pending() {
            return false;
        }
        self.timers.armed = None;
        let now = now();
        self.connection.handle_timeout(now);
        if self.timers.frame.is_some_and(|at| now >= at) {
            self.timers.frame = None;
            self.connection.timed_out(Deadline::Frame);
        }
        if self.timers.write.is_some_and(|at| now >= at) {
            self.timers.write = None;
            self.connection.timed_out(Deadline::Write);
        }
        if idle.is_some_and(|at| now >= at) {
            self.timers.last_activity = None;
            self.connection.timed_out(Deadline::Idle);
        }
        true
    }

    /// Writes what the connection queued until it is all written or the stream has to be
    /// waited for, then flushes.
    fn poll_write(&mut self, cx: &mut Context<'_>) {
        let mut progress = false;
        while !self.write_failed && self.connection.transmit_len() != 0 {
            match Pin::new(&mut self.io).poll_write(cx, self.connection.transmit()) {
                Poll::Pending => {
                    self.write_blocked(progress);
                    return;
                }
                Poll::Ready(Ok(0)) => self.fail(io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(written)) => {
                    self.connection.transmitted(written);
                    self.unflushed = true;
                    progress = true;
                }
                Poll::Ready(Err(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(error)) => self.fail(error),
            }
        }
        self.timers.write = None;
        if progress && self.timers.last_activity.is_some() {
            self.timers.last_activity = Some(now());
        }
        if self.unflushed && !self.write_failed {
            match Pin::new(&mut self.io).poll_flush(cx) {
                Poll::Pending => {}
                Poll::Ready(Ok(())) => self.unflushed = false,
                Poll::Ready(Err(error)) => self.fail(error),
            }
        }
    }

    /// A write found the transport full: the write deadline starts (again, after `progress`).
    fn write_blocked(&mut self, progress: bool) {
        if !self.connection.keeps_deadlines() {
            return;
        }
        if let Some(timeout) = self.options.write_timeout {
            if progress || self.timers.write.is_none() {
                let now = now();
                self.timers.write = now.checked_add(timeout);
                if self.timers.last_activity.is_some() && progress {
                    self.timers.last_activity = Some(now);
                }
            }
        }
    }

    /// The stream failed: nothing more is read or written, what was queued is dropped, and the
    /// connection ends.
    fn fail(&mut self, error: io::Error) {
        self.connection.transport_failed(&error);
        self.note(Some(error));
        self.read_ended = true;
        self.write_failed = true;
        let queued = self.connection.transmit_len();
        self.connection.transmitted(queued);
    }

    fn note(&mut self, error: Option<io::Error>) {
        if self.error.is_none() {
            self.error = error;
        }
    }
}

impl<IO, C> Driver<IO, C> {
    /// The connection, to read its state (`in_flight_len`, `attachment`, `route`...).
    pub fn connection(&self) -> &C {
        &self.connection
    }

    /// The connection, to act on it (`respond`, `set_attachment`, `publish_update`; `request`,
    /// `cancel`; `disconnect`, `close` to end it). What it queues is written the next time the
    /// driver is polled.
    pub fn connection_mut(&mut self) -> &mut C {
        &mut self.connection
    }

    /// The stream.
    pub fn get_ref(&self) -> &IO {
        &self.io
    }

    /// The stream, mutably (reading from or writing to it directly breaks the framing).
    pub fn get_mut(&mut self) -> &mut IO {
        &mut self.io
    }

    /// The options in force.
    pub fn options(&self) -> &DriverOptions {
        &self.options
    }

    /// The first I/O error of the stream, if one ended the connection (a failed read, write,
    /// flush or shutdown). The end of the stream itself is not an error.
    pub fn io_error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// The stream and the connection. Every byte read was given to the connection; bytes the
    /// connection queued and the driver did not write are still in it (`pending_transmit`).
    pub fn into_parts(self) -> (IO, C) {
        (self.io, self.connection)
    }
}
