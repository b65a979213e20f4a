//! One end of a connection against a hostile peer: the bytes after a control byte are the
//! peer's whole stream, delivered in chunks, while a small application drives the probed end.
//!
//! The control byte: bit 0 picks the end (0: a server receiving client frames, 1: a client
//! receiving server frames), bits 1-3 the chunk size (1, 2, 3, 5, 8, 64, 1024 bytes or the
//! whole stream), bit 4 a transport that never takes the transmitted bytes, bit 5 a transmit
//! limit of 256 bytes.

use pi_protocol::connection::{CallTarget, ClientOptions, ServerOptions};
use pi_protocol::Payload;

use super::client::ClientProbe;
use super::messages;
use super::server::ServerProbe;

/// Runs `data` (control byte, then the peer's stream) against the end it picks, checking
/// every invariant on the way. Panics on a broken one.
pub fn run(data: &[u8]) {
    let Some((&control, stream)) = data.split_first() else { return };
    let chunk = [1, 2, 3, 5, 8, 64, 1024, usize::MAX][usize::from(control >> 1 & 7)];
    let reads = control & 0x10 == 0;
    let limit = if control & 0x20 == 0 { None } else { Some(256) };
    if control & 1 == 0 {
        serve(stream.chunks(chunk.min(stream.len().max(1))), reads, limit);
    } else {
        call(stream.chunks(chunk.min(stream.len().max(1))), reads, limit);
    }
}

/// A server whose application publishes route `att-0` once ready and answers every request,
/// alternately with a result and with an error.
fn serve<'a>(chunks: impl Iterator<Item = &'a [u8]>, reads: bool, limit: Option<usize>) {
    let mut options = ServerOptions::default();
    if let Some(limit) = limit {
        options = options.max_pending_transmit(limit);
    }
    let mut server = ServerProbe::new(messages::this_server(), options);
    let mut attached = false;
    let mut answered = 0u32;
    for chunk in chunks {
        server.receive(chunk);
        if server.is_ready() && !attached {
            server.set_attachment(Some(messages::route(0)));
            attached = true;
        }
        for id in server.in_flight() {
            answered += 1;
            let result =
                if answered % 2 == 0 { Ok(Some(Payload::null())) } else { Err(messages::error_body("failed", "")) };
            server.respond(&id, result);
        }
        if reads {
            server.transmit();
        }
    }
    server.disconnect();
    for id in server.in_flight() {
        server.respond(&id, Ok(None));
    }
    assert!(server.is_closed(), "a server with nothing in flight closes at once");
    server.transmit();
}

/// A client whose application keeps up to three requests pending (a session call when there
/// is a route) and cancels the oldest one every other chunk.
fn call<'a>(chunks: impl Iterator<Item = &'a [u8]>, reads: bool, limit: Option<usize>) {
    let mut options = ClientOptions::default();
    if let Some(limit) = limit {
        options = options.max_pending_transmit(limit);
    }
    let mut client = ClientProbe::new(options);
    for (n, chunk) in chunks.enumerate() {
        client.receive(chunk);
        if client.is_ready() && client.pending().len() < 3 {
            let target = if client.route().is_some() { CallTarget::Session } else { CallTarget::Server };
            client.request(target, Payload::null());
        }
        if n % 2 == 1 {
            if let Some(oldest) = client.pending().first() {
                client.cancel(oldest);
            }
        }
        if reads {
            client.transmit();
        }
    }
    client.close();
    client.transmit();
}
