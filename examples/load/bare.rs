//! The baseline of the load measurements: a server written straight on `io::ServerCodec` and
//! `tokio_util::codec::Framed`, as a user who skips the connection layer would write it, on the
//! runtime `#[tokio::main]` builds (as the example server's). It
//! answers `hello`, and `catalogue` and `echo` calls (the bench workload) exactly as the example
//! server does, reading calls the same way; it keeps no protocol state (no fencing, no
//! in-flight table, no cancellation, no attachments). Answers are fed to the sink as they are
//! made and flushed once the read buffer holds no further whole frame, so a burst is answered
//! with one write, as the driver does.

use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use pi_protocol::io::ServerCodec;
use pi_protocol::{ClientMessage, ErrorBody, Response, ServerHello, ServerHelloError, ServerId, ServerMessage};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;

#[path = "../../benches/common/service.rs"]
mod service;

use service::Service;

/// Serves every connection of `listener` until the process is stopped.
pub async fn serve(listener: TcpListener, server_id: ServerId) {
    let service = Arc::new(Service::default());
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(stream, server_id.clone(), Arc::clone(&service)));
    }
}

async fn connection(stream: TcpStream, server_id: ServerId, service: Arc<Service>) {
    let mut framed = Framed::new(stream, ServerCodec::new());
    while let Some(Ok(message)) = framed.next().await {
        let answer = match message {
            ClientMessage::Hello(hello) if hello.version.get() == 8 => {
                ServerMessage::Hello(ServerHello::new(server_id.clone()))
            }
            ClientMessage::Hello(_) => {
                let error =
                    ErrorBody::from_code("unsupported_version", "This server speaks version 8").expect("a code");
                let _ = framed.send(ServerMessage::HelloError(ServerHelloError::new(error))).await;
                return;
            }
            ClientMessage::Request(request) => ServerMessage::Response(match service.answer(&request.call) {
                Ok(result) => Response::success(request.id, result),
                Err(error) => Response::failure(request.id, error),
            }),
            _ => continue,
        };
        if framed.feed(answer).await.is_err() {
            return;
        }
        if !holds_a_frame(framed.read_buffer()) && framed.flush().await.is_err() {
            return;
        }
    }
}

/// Whether `buffer` starts with a whole frame (which the next `next()` decodes without reading).
fn holds_a_frame(buffer: &[u8]) -> bool {
    buffer.len() >= 4 && buffer.len() - 4 >= u32::from_be_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]) as usize
}
