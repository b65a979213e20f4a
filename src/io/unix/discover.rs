//! [`discover`]: the servers listening in a directory, as pi-client's `discoverUnixServers`
//! finds them (feature `tokio`).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use crate::connection::ClientEvent;
use crate::io::ClientDriver;
use crate::{ClientConnection, ClientOptions, ServerId};

/// The default of [`DiscoverOptions::probe_timeout`]: 1,000 ms, as pi-client.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_millis(1_000);

/// The default of [`DiscoverOptions::max_concurrent_probes`]: 16, as pi-client.
pub const DEFAULT_MAX_CONCURRENT_PROBES: usize = 16;

/// How [`discover_with`] probes.
///
/// ```
/// use std::time::Duration;
/// use pi_protocol::io::unix::DiscoverOptions;
/// let options = DiscoverOptions::default().probe_timeout(Duration::from_millis(250));
/// assert_eq!(options.probe_timeout, Duration::from_millis(250));
/// assert_eq!(options.max_concurrent_probes, 16);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiscoverOptions {
    /// The longest one probe may take, from connecting to the server's `hello` (default
    /// [`DEFAULT_PROBE_TIMEOUT`], 1,000 ms); a server slower than that is left out.
    pub probe_timeout: Duration,
    /// How many sockets are probed at once, at most (default
    /// [`DEFAULT_MAX_CONCURRENT_PROBES`], 16; 0 counts as 1).
    pub max_concurrent_probes: usize,
    /// The connection options of each probe (default [`ClientOptions::default`]); its expected
    /// `serverId` is always the socket's own.
    pub connection: ClientOptions,
}

impl Default for DiscoverOptions {
    fn default() -> Self {
        DiscoverOptions {
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            max_concurrent_probes: DEFAULT_MAX_CONCURRENT_PROBES,
            connection: ClientOptions::default(),
        }
    }
}

impl DiscoverOptions {
    /// Sets [`probe_timeout`](Self::probe_timeout).
    #[must_use]
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// Sets [`max_concurrent_probes`](Self::max_concurrent_probes).
    #[must_use]
    pub fn max_concurrent_probes(mut self, probes: usize) -> Self {
        self.max_concurrent_probes = probes;
        self
    }

    /// Sets [`connection`](Self::connection).
    #[must_use]
    pub fn connection(mut self, options: ClientOptions) -> Self {
        self.connection = options;
        self
    }
}

/// A server [`discover`] found: it answered the handshake on `path` with the `serverId` the
/// socket's name announces.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct DiscoveredServer {
    /// The server's `serverId`.
    pub server_id: ServerId,
    /// Its socket, `<dir>/<serverId>.sock`.
    pub path: PathBuf,
}

/// [`discover_with`] with the default options (16 probes at once, 1,000 ms each).
///
/// # Errors
/// As [`discover_with`].
pub async fn discover(dir: impl AsRef<Path>) -> io::Result<Vec<DiscoveredServer>> {
    discover_with(dir, &DiscoverOptions::default()).await
}

/// The servers listening in `dir`, sorted by `serverId`, found as pi-client finds them: every
/// entry named `<serverId>.sock` (with a valid `serverId`) that is a socket is probed (at most
/// [`DiscoverOptions::max_concurrent_probes`] at once): connect, send `hello`, and wait at most
/// [`DiscoverOptions::probe_timeout`] for a `hello` naming that `serverId`; the probe's
/// connection is then closed. Left out, and never an error: malformed names, entries that are
/// not sockets (or vanish while listed), stale sockets nobody listens on (refused), servers
/// that hang up, refuse the handshake, name another `serverId`, speak something else or answer
/// too late. (pi-client skips the same entries, but fails the whole discovery on an unexpected
/// error of one probe, such as a permission error; this leaves such a socket out.)
///
/// A directory that does not exist holds no servers: `Ok` with none.
///
/// # Errors
/// Reading the directory failed for another reason than its absence.
pub async fn discover_with(dir: impl AsRef<Path>, options: &DiscoverOptions) -> io::Result<Vec<DiscoveredServer>> {
    let dir = dir.as_ref();
    let mut entries = match tokio::fs::read_dir(dir).await {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut candidates = Vec::new();
    while let Some(entry) = entries.next_entry().await? {
        let path = entry.path();
        if let Some(server_id) = super::server_id_of_socket(&path) {
            candidates.push(DiscoveredServer { server_id, path });
        }
    }
    let permits = Arc::new(Semaphore::new(options.max_concurrent_probes.max(1)));
    let mut probes = tokio::task::JoinSet::new();
    for candidate in candidates {
        let permits = permits.clone();
        let options = options.clone();
        probes.spawn(async move {
            let _permit = permits.acquire_owned().await.ok()?;
            probe(&candidate, &options).await.then_some(candidate)
        });
    }
    let mut found = Vec::new();
    while let Some(outcome) = probes.join_next().await {
        if let Ok(Some(server)) = outcome {
            found.push(server);
        }
    }
    found.sort_by(|a, b| a.server_id.as_str().cmp(b.server_id.as_str()));
    Ok(found)
}

/// Whether the server at `candidate.path` answers the handshake as `candidate.server_id`.
async fn probe(candidate: &DiscoveredServer, options: &DiscoverOptions) -> bool {
    match tokio::fs::symlink_metadata(&candidate.path).await {
        Ok(metadata) if is_socket(&metadata) => {}
        _ => return false,
    }
    let handshake = async {
        let stream = tokio::net::UnixStream::connect(&candidate.path).await.ok()?;
        let connection = options.connection.clone().expected_server_id(Some(candidate.server_id.clone()));
        let mut driver = ClientDriver::new(stream, ClientConnection::new(connection));
        let ready = loop {
            match driver.next_event().await {
                Some(ClientEvent::Ready { .. }) => break true,
                Some(ClientEvent::Closed { .. }) | None => break false,
                Some(_) => {}
            }
        };
        // Close at once; the server sees the end of the stream.
        driver.connection_mut().close();
        while driver.next_event().await.is_some() {}
        Some(ready)
    };
    matches!(tokio::time::timeout(options.probe_timeout, handshake).await, Ok(Some(true)))
}

fn is_socket(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    metadata.file_type().is_socket()
}
