//! [`Acceptor`]: an accept loop with a connection limit and backoff on accept errors (feature
//! `tokio`; docs/PROTOCOL.md section 8, "The coordinator", for the router that uses it).
//!
//! A server or coordinator that calls `listener.accept()` in a bare loop has two failure modes
//! under a hostile or merely busy world: it accepts without limit (every connection costs
//! buffers and a task), and when the process runs out of file descriptors (`EMFILE`, `ENFILE`)
//! or kernel buffers (`ENOBUFS`, `ENOMEM`) every `accept` fails at once, so the loop spins on a
//! core and logs a line per attempt while the pending connection stays in the kernel's queue.
//!
//! An [`Acceptor`] wraps any listener that implements [`Accept`] (tokio's `TcpListener` and,
//! on Unix, `UnixListener` do) and:
//!
//! - holds at most [`AcceptOptions::max_connections`] connections: each accepted stream comes
//!   with a [`ConnectionPermit`], and once every permit is out, [`Acceptor::accept`] waits for
//!   one to be dropped before it calls the listener again (new connections wait in the
//!   kernel's backlog instead of costing the process anything);
//! - on a resource error ([`AcceptErrorClass::Resources`]) sleeps before the next attempt,
//!   [`AcceptOptions::backoff_min`] first, doubling up to [`AcceptOptions::backoff_max`], back
//!   to the minimum after a success;
//! - retries at once after an error that concerns only the one connection being accepted
//!   ([`AcceptErrorClass::Connection`]: the peer reset or aborted it before it was accepted);
//! - returns any other error (the listener itself is broken) to the caller;
//! - reports each kind of error once per run of failures, not once per attempt, through an
//!   optional hook ([`Acceptor::on_report`]): [`AcceptReport::Failing`] when a kind of error
//!   first appears, [`AcceptReport::Recovered`] with the number of failed attempts once an
//!   accept succeeds again.
//!
//! ```no_run
//! use pi_protocol::io::{AcceptOptions, AcceptReport, Acceptor};
//! # async fn serve() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let mut acceptor = Acceptor::new(listener, AcceptOptions::default().max_connections(256))
//!     .on_report(|report: &AcceptReport| eprintln!("accept: {report}"));
//! loop {
//!     let accepted = acceptor.accept().await?;
//!     tokio::spawn(async move {
//!         let _permit = accepted.permit; // the connection's slot, freed when the task ends
//!         let _stream = accepted.stream;
//!         // ... serve the connection ...
//!     });
//! }
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::connection::options::option_setters;

/// The default of [`AcceptOptions::max_connections`]: 1,024 connections at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// The default of [`AcceptOptions::backoff_min`]: 5 ms.
pub const DEFAULT_ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(5);
/// The default of [`AcceptOptions::backoff_max`]: 1 s.
pub const DEFAULT_ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// A listener an [`Acceptor`] can drive: one call accepts one connection.
///
/// Implemented for `tokio::net::TcpListener` and, on Unix, `tokio::net::UnixListener`; implement
/// it for any other listener (a TLS acceptor, a test double).
pub trait Accept: Send {
    /// The accepted connection.
    type Stream: Send;
    /// The peer's address.
    type Addr: Send;

    /// Accepts one connection, or fails with the listener's I/O error.
    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Stream, Self::Addr)>> + Send;
}

impl Accept for tokio::net::TcpListener {
    type Stream = tokio::net::TcpStream;
    type Addr = std::net::SocketAddr;

    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Stream, Self::Addr)>> + Send {
        tokio::net::TcpListener::accept(self)
    }
}

#[cfg(unix)]
impl Accept for tokio::net::UnixListener {
    type Stream = tokio::net::UnixStream;
    type Addr = tokio::net::unix::SocketAddr;

    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Stream, Self::Addr)>> + Send {
        tokio::net::UnixListener::accept(self)
    }
}

/// The limits of an [`Acceptor`].
///
/// ```
/// use pi_protocol::io::AcceptOptions;
/// use std::time::Duration;
/// let options = AcceptOptions::default().max_connections(64).backoff_max(Duration::from_millis(200));
/// assert_eq!(options.max_connections, 64);
/// assert_eq!(AcceptOptions::default().backoff_min, Duration::from_millis(5));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AcceptOptions {
    /// How many accepted connections may hold a [`ConnectionPermit`] at once (default
    /// [`DEFAULT_MAX_CONNECTIONS`]; 0 counts as 1). At the limit, accepting pauses until a
    /// permit is dropped.
    pub max_connections: usize,
    /// The first pause after a resource error (default [`DEFAULT_ACCEPT_BACKOFF_MIN`]).
    pub backoff_min: Duration,
    /// The longest pause; each further resource error doubles the pause up to it (default
    /// [`DEFAULT_ACCEPT_BACKOFF_MAX`]).
    pub backoff_max: Duration,
}

impl Default for AcceptOptions {
    fn default() -> Self {
        AcceptOptions {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            backoff_min: DEFAULT_ACCEPT_BACKOFF_MIN,
            backoff_max: DEFAULT_ACCEPT_BACKOFF_MAX,
        }
    }
}

option_setters! {
    AcceptOptions {
        /// Sets [`max_connections`](Self::max_connections).
        max_connections: usize;
        /// Sets [`backoff_min`](Self::backoff_min).
        backoff_min: Duration;
        /// Sets [`backoff_max`](Self::backoff_max).
        backoff_max: Duration;
    }
}

/// What an accept error means for the loop, by its `errno` (or, without one, its
/// [`io::ErrorKind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AcceptErrorClass {
    /// The process or the system ran out of something (`EMFILE`, `ENFILE`, `ENOBUFS`,
    /// `ENOMEM`, or [`io::ErrorKind::OutOfMemory`]): the next attempt waits (backoff).
    Resources,
    /// Only the connection being accepted failed (`ECONNABORTED`, `ECONNRESET`, `EPROTO`,
    /// `EPERM`, `EINTR`, `EAGAIN`, or the matching kinds): the next attempt is made at once.
    Connection,
    /// Anything else: the listener is unusable, and [`Acceptor::accept`] returns the error.
    Fatal,
}

impl AcceptErrorClass {
    /// The class of `error`.
    ///
    /// ```
    /// use pi_protocol::io::AcceptErrorClass;
    /// # #[cfg(target_os = "linux")] {
    /// let emfile = std::io::Error::from_raw_os_error(24);
    /// assert_eq!(AcceptErrorClass::of(&emfile), AcceptErrorClass::Resources);
    /// # }
    /// let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    /// assert_eq!(AcceptErrorClass::of(&reset), AcceptErrorClass::Connection);
    /// ```
    #[must_use]
    pub fn of(error: &io::Error) -> Self {
        #[cfg(unix)]
        if let Some(code) = error.raw_os_error() {
            if let Some(class) = unix_class(code) {
                return class;
            }
        }
        match error.kind() {
            io::ErrorKind::OutOfMemory => AcceptErrorClass::Resources,
            io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
            | io::ErrorKind::PermissionDenied => AcceptErrorClass::Connection,
            _ => AcceptErrorClass::Fatal,
        }
    }
}

/// The `errno` values of Linux and the BSDs this module knows (their numbers differ, so they
/// are compared by name through `io::Error`'s own mapping where one exists).
#[cfg(unix)]
fn unix_class(code: i32) -> Option<AcceptErrorClass> {
    // EMFILE, ENFILE, ENOBUFS and ENOMEM have no io::ErrorKind of their own on every toolchain;
    // their numbers on Linux, macOS and the BSDs.
    #[cfg(target_os = "linux")]
    const RESOURCES: [i32; 4] = [24, 23, 105, 12];
    #[cfg(not(target_os = "linux"))]
    const RESOURCES: [i32; 4] = [24, 23, 55, 12];
    #[cfg(target_os = "linux")]
    const EPROTO: i32 = 71;
    #[cfg(not(target_os = "linux"))]
    const EPROTO: i32 = 100;
    if RESOURCES.contains(&code) {
        Some(AcceptErrorClass::Resources)
    } else if code == EPROTO {
        Some(AcceptErrorClass::Connection)
    } else {
        None
    }
}

/// What an [`Acceptor`] tells its hook ([`Acceptor::on_report`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum AcceptReport {
    /// A kind of error appeared for the first time since the last successful accept. Further
    /// errors of the same kind are counted, not reported, until the next success.
    Failing {
        /// The error.
        error: io::Error,
        /// What the loop does about it.
        class: AcceptErrorClass,
        /// The pause before the next attempt (zero for [`AcceptErrorClass::Connection`]).
        retry_in: Duration,
    },
    /// An accept succeeded after `failures` failed attempts (of any kind).
    Recovered {
        /// How many attempts failed since the last success.
        failures: u64,
    },
}

impl fmt::Display for AcceptReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AcceptReport::Failing { error, class, retry_in } => {
                write!(f, "accept failed ({class:?}): {error}; retrying in {} ms", retry_in.as_millis())
            }
            AcceptReport::Recovered { failures } => write!(f, "accepting again after {failures} failed attempts"),
        }
    }
}

/// One connection's slot under [`AcceptOptions::max_connections`]: keep it as long as the
/// connection lives, drop it when the connection ends.
#[derive(Debug)]
#[must_use = "dropping the permit frees the connection's slot at once"]
pub struct ConnectionPermit(#[allow(dead_code)] OwnedSemaphorePermit);

/// A connection an [`Acceptor`] accepted.
#[derive(Debug)]
#[non_exhaustive]
pub struct Accepted<S, A> {
    /// The connection.
    pub stream: S,
    /// The peer's address.
    pub addr: A,
    /// Its slot: drop it when the connection ends.
    pub permit: ConnectionPermit,
}

type Hook = Box<dyn FnMut(&AcceptReport) + Send>;

/// An accept loop with a connection limit and backoff on resource errors (the bounds are
/// [`AcceptOptions`], what is reported [`AcceptReport`]).
pub struct Acceptor<L> {
    listener: L,
    options: AcceptOptions,
    slots: Arc<Semaphore>,
    hook: Option<Hook>,
    /// The error kinds reported since the last success (`errno`, or the kind's debug name).
    reported: Vec<ErrorKey>,
    failures: u64,
    backoff: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ErrorKey {
    Os(i32),
    Kind(io::ErrorKind),
}

impl<L> fmt::Debug for Acceptor<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acceptor")
            .field("options", &self.options)
            .field("available_slots", &self.slots.available_permits())
            .field("failures", &self.failures)
            .finish_non_exhaustive()
    }
}

impl<L: Accept> Acceptor<L> {
    /// An acceptor over `listener` with `options`.
    pub fn new(listener: L, options: AcceptOptions) -> Self {
        let slots = Arc::new(Semaphore::new(options.max_connections.max(1)));
        let backoff = options.backoff_min;
        Acceptor { listener, options, slots, hook: None, reported: Vec::new(), failures: 0, backoff }
    }

    /// The same acceptor, telling `hook` about accept errors (once per kind per run of
    /// failures) and recoveries. Without a hook, errors are only counted.
    #[must_use]
    pub fn on_report(mut self, hook: impl FnMut(&AcceptReport) + Send + 'static) -> Self {
        self.hook = Some(Box::new(hook));
        self
    }

    /// How many accepted connections hold their permit now.
    pub fn active(&self) -> usize {
        self.options.max_connections.max(1) - self.slots.available_permits()
    }

    /// The listener.
    pub fn listener(&self) -> &L {
        &self.listener
    }

    /// The options in force.
    pub fn options(&self) -> &AcceptOptions {
        &self.options
    }

    /// Waits for a free slot, then accepts the next connection, pausing after resource errors
    /// and retrying at once after errors that concern one connection only.
    ///
    /// Cancel safe: dropping the future loses no accepted connection (the listener's own
    /// `accept` is cancel safe, and the permit is taken before it).
    ///
    /// # Errors
    /// An error of class [`AcceptErrorClass::Fatal`], as the listener returned it.
    pub async fn accept(&mut self) -> io::Result<Accepted<L::Stream, L::Addr>> {
        loop {
            let permit = match Arc::clone(&self.slots).acquire_owned().await {
                Ok(permit) => permit,
                Err(_) => return Err(io::Error::other("the acceptor's connection slots are closed")),
            };
            match self.listener.accept().await {
                Ok((stream, addr)) => {
                    if self.failures > 0 {
                        let failures = std::mem::take(&mut self.failures);
                        self.report(&AcceptReport::Recovered { failures });
                    }
                    self.reported.clear();
                    self.backoff = self.options.backoff_min;
                    return Ok(Accepted { stream, addr, permit: ConnectionPermit(permit) });
                }
                Err(error) => {
                    drop(permit);
                    let class = AcceptErrorClass::of(&error);
                    if class == AcceptErrorClass::Fatal {
                        return Err(error);
                    }
                    self.failures += 1;
                    let retry_in = match class {
                        AcceptErrorClass::Resources => self.backoff,
                        _ => Duration::ZERO,
                    };
                    let key = match error.raw_os_error() {
                        Some(code) => ErrorKey::Os(code),
                        None => ErrorKey::Kind(error.kind()),
                    };
                    if !self.reported.contains(&key) {
                        self.reported.push(key);
                        self.report(&AcceptReport::Failing { error, class, retry_in });
                    }
                    if !retry_in.is_zero() {
                        tokio::time::sleep(retry_in).await;
                        self.backoff = (self.backoff * 2).min(self.options.backoff_max.max(self.options.backoff_min));
                    }
                }
            }
        }
    }

    fn report(&mut self, report: &AcceptReport) {
        if let Some(hook) = self.hook.as_mut() {
            hook(report);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;

    /// A listener that plays a script: each entry is an error code to fail with, or `None` for
    /// a connection (numbered from 1). Past the script it waits forever.
    struct Scripted {
        script: VecDeque<Option<io::Error>>,
        attempts: Arc<Mutex<Vec<tokio::time::Instant>>>,
        next: u32,
    }

    impl Scripted {
        fn new(script: Vec<Option<io::Error>>) -> (Self, Arc<Mutex<Vec<tokio::time::Instant>>>) {
            let attempts = Arc::new(Mutex::new(Vec::new()));
            (Scripted { script: script.into(), attempts: Arc::clone(&attempts), next: 1 }, attempts)
        }
    }

    impl Accept for Scripted {
        type Stream = u32;
        type Addr = ();

        fn accept(&mut self) -> impl Future<Output = io::Result<(u32, ())>> + Send {
            self.attempts.lock().unwrap().push(tokio::time::Instant::now());
            let step = self.script.pop_front();
            let n = self.next;
            if matches!(step, Some(None)) {
                self.next += 1;
            }
            async move {
                match step {
                    Some(Some(error)) => Err(error),
                    Some(None) => Ok((n, ())),
                    None => std::future::pending().await,
                }
            }
        }
    }

    const EMFILE: i32 = 24;

    fn emfile() -> Option<io::Error> {
        Some(io::Error::from_raw_os_error(EMFILE))
    }

    #[tokio::test(start_paused = true)]
    async fn emfile_backs_off_doubling_and_is_reported_once_until_recovery() {
        let mut script: Vec<_> = (0..10).map(|_| emfile()).collect();
        script.push(None);
        let (listener, attempts) = Scripted::new(script);
        let reports = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&reports);
        let options =
            AcceptOptions::default().backoff_min(Duration::from_millis(5)).backoff_max(Duration::from_millis(100));
        let mut acceptor =
            Acceptor::new(listener, options).on_report(move |r| seen.lock().unwrap().push(r.to_string()));
        let start = tokio::time::Instant::now();
        let accepted = acceptor.accept().await.unwrap();
        assert_eq!(accepted.stream, 1);
        // 5 + 10 + 20 + 40 + 80 + 100 * 5 ms of pauses between 11 attempts: no spinning.
        assert_eq!(start.elapsed(), Duration::from_millis(5 + 10 + 20 + 40 + 80 + 500));
        assert_eq!(attempts.lock().unwrap().len(), 11);
        let reports = reports.lock().unwrap();
        assert_eq!(reports.len(), 2, "{reports:?}");
        assert!(reports[0].starts_with("accept failed (Resources)") && reports[0].ends_with("retrying in 5 ms"));
        assert_eq!(reports[1], "accepting again after 10 failed attempts");
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_success_the_backoff_starts_over_and_errors_are_reported_again() {
        let (listener, _) = Scripted::new(vec![emfile(), emfile(), None, emfile(), None]);
        let count = Arc::new(Mutex::new(0));
        let seen = Arc::clone(&count);
        let mut acceptor = Acceptor::new(listener, AcceptOptions::default()).on_report(move |r| {
            if matches!(r, AcceptReport::Failing { .. }) {
                *seen.lock().unwrap() += 1;
            }
        });
        let start = tokio::time::Instant::now();
        let _first = acceptor.accept().await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(15));
        let start = tokio::time::Instant::now();
        let _second = acceptor.accept().await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(5));
        assert_eq!(*count.lock().unwrap(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn connection_errors_retry_at_once_and_fatal_errors_are_returned() {
        let reset = Some(io::Error::from(io::ErrorKind::ConnectionReset));
        let aborted = Some(io::Error::from(io::ErrorKind::ConnectionAborted));
        let fatal = Some(io::Error::from(io::ErrorKind::InvalidInput));
        let (listener, _) = Scripted::new(vec![reset, aborted, None, fatal]);
        let mut acceptor = Acceptor::new(listener, AcceptOptions::default());
        let start = tokio::time::Instant::now();
        assert_eq!(acceptor.accept().await.unwrap().stream, 1);
        assert_eq!(start.elapsed(), Duration::ZERO);
        let error = acceptor.accept().await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }

    #[tokio::test(start_paused = true)]
    async fn accepting_pauses_at_the_connection_limit_and_resumes_when_one_ends() {
        let (listener, attempts) = Scripted::new(vec![None, None, None]);
        let mut acceptor = Acceptor::new(listener, AcceptOptions::default().max_connections(2));
        let first = acceptor.accept().await.unwrap();
        let second = acceptor.accept().await.unwrap();
        assert_eq!(acceptor.active(), 2);
        // The third accept waits for a slot: the listener is not even asked.
        let waited = tokio::time::timeout(Duration::from_secs(60), acceptor.accept()).await;
        assert!(waited.is_err());
        assert_eq!(attempts.lock().unwrap().len(), 2);
        drop(first.permit);
        let third = acceptor.accept().await.unwrap();
        assert_eq!((second.stream, third.stream), (2, 3));
        assert_eq!(acceptor.active(), 2);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_errno_classes() {
        for (code, class) in [
            (24, AcceptErrorClass::Resources),   // EMFILE
            (23, AcceptErrorClass::Resources),   // ENFILE
            (105, AcceptErrorClass::Resources),  // ENOBUFS
            (12, AcceptErrorClass::Resources),   // ENOMEM
            (103, AcceptErrorClass::Connection), // ECONNABORTED
            (71, AcceptErrorClass::Connection),  // EPROTO
            (4, AcceptErrorClass::Connection),   // EINTR
            (9, AcceptErrorClass::Fatal),        // EBADF
            (22, AcceptErrorClass::Fatal),       // EINVAL
        ] {
            assert_eq!(AcceptErrorClass::of(&io::Error::from_raw_os_error(code)), class, "errno {code}");
        }
    }
}
