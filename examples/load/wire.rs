//! One client connection of the load generator, on the codec alone: frames are encoded into an
//! output buffer and written with one `write_all`, what is read is decoded pull style from one
//! reused buffer. The generator knows nothing of the connection layer it tests.

use std::io;
use std::time::Duration;

use pi_protocol::{encode_message_into, ClientMessage, CodecOptions, ServerMessage, ServerMessageDecoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Size of the read buffer of a generator connection.
const READ_BUFFER: usize = 16 * 1024;

/// Connects to `address` with `TCP_NODELAY`, retrying for a while when the machine is out of
/// ephemeral ports or the listener's backlog is full.
pub async fn connect(address: &str) -> io::Result<TcpStream> {
    let mut delay = Duration::from_millis(5);
    for _ in 0..12 {
        match TcpStream::connect(address).await {
            Ok(stream) => {
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::AddrNotAvailable | io::ErrorKind::ConnectionRefused | io::ErrorKind::TimedOut
                ) =>
            {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(500));
            }
            Err(error) => return Err(error),
        }
    }
    TcpStream::connect(address).await
}

/// A socket, the frames waiting to be written, and the decoder of what it reads.
pub struct Wire {
    pub stream: TcpStream,
    pub decoder: ServerMessageDecoder,
    buf: Vec<u8>,
    out: Vec<u8>,
    options: CodecOptions,
}

impl Wire {
    pub fn new(stream: TcpStream) -> Self {
        Wire {
            stream,
            decoder: ServerMessageDecoder::new(),
            buf: vec![0; READ_BUFFER],
            out: Vec::with_capacity(4096),
            options: CodecOptions::default(),
        }
    }

    /// Encodes `message` after the frames already queued.
    pub fn queue(&mut self, message: &ClientMessage) {
        encode_message_into(message, &self.options, &mut self.out).expect("the generator builds valid messages");
    }

    /// The frames queued and not written yet (to write a part of them by hand).
    pub fn take_queued(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// Writes every queued frame.
    pub async fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out).await?;
            self.out.clear();
        }
        Ok(())
    }

    /// Reads once and hands every message the bytes complete to `on_message`: `Ok(false)` at
    /// the end of the stream.
    ///
    /// # Errors
    /// The read's error, or the decoder's (the server sent a bad frame), as text.
    pub async fn read(&mut self, mut on_message: impl FnMut(ServerMessage)) -> Result<bool, String> {
        let n = self.stream.read(&mut self.buf).await.map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            self.decoder.end().map_err(|e| format!("the server's stream ended inside a frame: {e}"))?;
            return Ok(false);
        }
        for message in self.decoder.messages(&self.buf[..n]) {
            on_message(message.map_err(|e| format!("the server sent a bad frame: {e}"))?);
        }
        Ok(true)
    }
}
