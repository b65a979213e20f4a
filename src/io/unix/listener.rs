//! [`UnixSocketListener`]: a Unix-domain socket listener as the reference server keeps one
//! (docs/PROTOCOL.md section 8): a stale socket left by a dead server is replaced, a live one is
//! an error, the socket is private (mode 0600 before anybody can see it), and it is unlinked when
//! the listener is dropped (unless another listener replaced it meanwhile).

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The default mode of a listener's socket: 0600, its owner only.
pub const DEFAULT_SOCKET_MODE: u32 = 0o600;

/// A bound Unix-domain listener at a path (feature `tokio`), which implements
/// [`Accept`](crate::io::Accept) and unlinks its socket when dropped.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use pi_protocol::io::unix::{socket_path, UnixSocketListener};
/// let id = pi_protocol::ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962").unwrap();
/// let listener = UnixSocketListener::bind(&socket_path("/tmp/pi".as_ref(), &id))?;
/// let (stream, _) = listener.get_ref().accept().await?;
/// # drop(stream); Ok(()) }
/// ```
#[derive(Debug)]
pub struct UnixSocketListener {
    listener: tokio::net::UnixListener,
    path: PathBuf,
    /// The socket file's device and inode, to unlink it only if it is still ours.
    identity: (u64, u64),
}

impl UnixSocketListener {
    /// Binds `path` with mode [`DEFAULT_SOCKET_MODE`]; see [`bind_with_mode`](Self::bind_with_mode).
    ///
    /// # Errors
    /// As [`bind_with_mode`](Self::bind_with_mode).
    pub fn bind(path: &Path) -> io::Result<Self> {
        Self::bind_with_mode(path, DEFAULT_SOCKET_MODE)
    }

    /// Binds `path` with the permission bits `mode`. The parent directory is created (mode 0700)
    /// if missing. A socket already at `path` is probed: if connecting to it is refused, it is a
    /// stale socket and is replaced; if a server answers, binding fails with `AddrInUse`. A file
    /// that is not a socket is never removed (`AlreadyExists`). The socket is bound under a
    /// temporary name in the same directory, given `mode`, then renamed onto `path`, so it is
    /// never reachable with wider permissions. Must be called inside a tokio runtime.
    ///
    /// # Errors
    /// The I/O errors above, or those of creating the directory, binding, `chmod` and `rename`.
    pub fn bind_with_mode(path: &Path, mode: u32) -> io::Result<Self> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.exists() {
            std::fs::DirBuilder::new().recursive(true).mode_private().create(dir)?;
        }
        remove_stale_socket(path)?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temporary = dir.join(format!(".{name}.{}.bind", std::process::id()));
        let _ = std::fs::remove_file(&temporary);
        let listener = tokio::net::UnixListener::bind(&temporary)?;
        let published = std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(mode))
            .and_then(|()| std::fs::rename(&temporary, path));
        if let Err(error) = published {
            let _ = std::fs::remove_file(&temporary);
            return Err(error);
        }
        let metadata = std::fs::symlink_metadata(path)?;
        Ok(UnixSocketListener { listener, path: path.to_owned(), identity: (metadata.dev(), metadata.ino()) })
    }

    /// The path the socket is published at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tokio listener.
    pub fn get_ref(&self) -> &tokio::net::UnixListener {
        &self.listener
    }
}

/// `DirBuilder::mode(0o700)`, named.
trait PrivateDir {
    fn mode_private(&mut self) -> &mut Self;
}

impl PrivateDir for std::fs::DirBuilder {
    fn mode_private(&mut self) -> &mut Self {
        use std::os::unix::fs::DirBuilderExt;
        self.mode(0o700)
    }
}

/// Removes a stale socket at `path` (nothing there: nothing to do).
fn remove_stale_socket(path: &Path) -> io::Result<()> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    if !metadata.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("refusing to replace {}: not a socket", path.display()),
        ));
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("a server is already listening on {}", path.display()),
        )),
        Err(error) if matches!(error.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound) => {
            match std::fs::remove_file(path) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
                _ => Ok(()),
            }
        }
        Err(error) => Err(error),
    }
}

impl Drop for UnixSocketListener {
    /// Unlinks the socket if the file at the path is still this listener's.
    fn drop(&mut self) {
        if let Ok(metadata) = std::fs::symlink_metadata(&self.path) {
            if (metadata.dev(), metadata.ino()) == self.identity {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

impl crate::io::Accept for UnixSocketListener {
    type Stream = tokio::net::UnixStream;
    type Addr = tokio::net::unix::SocketAddr;

    fn accept(&mut self) -> impl std::future::Future<Output = io::Result<(Self::Stream, Self::Addr)>> + Send {
        self.listener.accept()
    }
}
