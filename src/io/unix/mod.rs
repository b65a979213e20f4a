//! Unix-domain sockets, as the real pi programs use them (docs/PROTOCOL.md section 8): a server
//! listens on `<dir>/<serverId>.sock`, so that a client finds every server of a directory by
//! listing it ([`socket_path`], [`server_id_of_socket`]).
//!
//! The listener (stale-socket replacement, private permissions, unlink on shutdown) lives in
//! `listener`, the client's discovery of a directory in `discover`.

#[cfg(feature = "tokio")]
mod discover;

use std::path::{Path, PathBuf};

#[cfg(feature = "tokio")]
pub use self::discover::{
    discover, discover_with, DiscoverOptions, DiscoveredServer, DEFAULT_MAX_CONCURRENT_PROBES, DEFAULT_PROBE_TIMEOUT,
};

use crate::ServerId;

#[cfg(feature = "tokio")]
mod listener;
#[cfg(feature = "tokio")]
pub use listener::{UnixSocketListener, DEFAULT_SOCKET_MODE};

/// The file-name suffix of a server's socket: `<serverId>.sock`.
pub const SOCKET_SUFFIX: &str = ".sock";

/// Where the server `server_id` listens in `dir`: `dir/<serverId>.sock`.
///
/// ```
/// use pi_protocol::io::unix::socket_path;
/// use pi_protocol::ServerId;
/// let id = ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962")?;
/// assert_eq!(
///     socket_path("/run/pi".as_ref(), &id),
///     std::path::PathBuf::from("/run/pi/3b241101-e2bb-4255-8caf-4136c566a962.sock")
/// );
/// # Ok::<(), pi_protocol::ProtocolError>(())
/// ```
#[must_use]
pub fn socket_path(dir: &Path, server_id: &ServerId) -> PathBuf {
    dir.join(format!("{}{SOCKET_SUFFIX}", server_id.as_str()))
}

/// The `serverId` a socket's file name announces (`<serverId>.sock`), or `None` when the name
/// does not follow the convention (another suffix, not a valid `serverId`, not UTF-8).
///
/// ```
/// use pi_protocol::io::unix::server_id_of_socket;
/// let path = std::path::Path::new("/run/pi/3b241101-e2bb-4255-8caf-4136c566a962.sock");
/// assert_eq!(server_id_of_socket(path).map(|id| id.to_string()).as_deref(), Some("3b241101-e2bb-4255-8caf-4136c566a962"));
/// assert!(server_id_of_socket("/run/pi/notes.txt".as_ref()).is_none());
/// ```
#[must_use]
pub fn server_id_of_socket(path: &Path) -> Option<ServerId> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(SOCKET_SUFFIX)?;
    ServerId::new(stem).ok()
}
