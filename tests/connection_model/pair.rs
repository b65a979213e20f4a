//! A [`ClientProbe`] and a [`ServerProbe`] connected by two byte pipes, driven by a list of
//! operations decoded from fuzzer bytes: application calls on both ends, partial deliveries,
//! transports that stop reading, closes, and hostile bytes or frames injected into either end.
//!
//! Besides what each probe checks, a run without injected input and with the same codec
//! limits on both ends checks what two correct ends guarantee each other: no violation, no
//! fence but a stale route or too many requests, and, when everything has been delivered and
//! answered and neither end closed, every request settled exactly once.

use arbitrary::{Result, Unstructured};
use pi_protocol::connection::{
    CallTarget, ClientOptions, CloseReason, FenceReason, ServerOptions, DEFAULT_MAX_PENDING_TRANSMIT,
};
use pi_protocol::{encode_client_message, encode_server_message, CodecOptions, Payload};

use super::client::ClientProbe;
use super::messages;
use super::server::ServerProbe;

/// Runs the operations that `data` decodes to, then lets everything settle, checking every
/// invariant on the way. Panics on a broken one.
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(mut pair) = Pair::new(&mut u) else { return };
    while !u.is_empty() {
        let Ok(()) = pair.step(&mut u) else { break };
    }
    pair.settle();
    pair.check_final();
}

struct Pair {
    client: ClientProbe,
    server: ServerProbe,
    to_server: Vec<u8>,
    to_client: Vec<u8>,
    /// No hostile input, and both ends under the same codec limits.
    clean: bool,
}

fn codec(u: &mut Unstructured) -> Result<CodecOptions> {
    let frame_limit = match u.arbitrary::<u8>()? % 4 {
        0 | 1 => return Ok(CodecOptions::default()),
        2 => 96,
        _ => 512,
    };
    Ok(CodecOptions::new().max_frame_length(frame_limit).expect("in range"))
}

fn transmit_limit(u: &mut Unstructured) -> Result<usize> {
    Ok(match u.arbitrary::<u8>()? % 4 {
        0 | 1 => DEFAULT_MAX_PENDING_TRANSMIT,
        2 => usize::from(u.arbitrary::<u16>()? % 1024),
        _ => 4096,
    })
}

impl Pair {
    fn new(u: &mut Unstructured) -> Result<Self> {
        let codec = codec(u)?;
        let version = if u.arbitrary::<u8>()? % 8 == 7 { u32::from(u.arbitrary::<u8>()?) } else { 8 };
        let client = ClientOptions::default().codec(codec).version(version).max_pending_transmit(transmit_limit(u)?);
        let max_in_flight = match u.arbitrary::<u8>()? % 4 {
            0 | 1 => pi_protocol::connection::DEFAULT_MAX_IN_FLIGHT,
            2 => 1,
            _ => 3,
        };
        // The pair's calls are arbitrary payloads, not service calls: the shape check is off here
        // (tests/server_rules.rs covers it).
        let server = ServerOptions::default()
            .codec(codec)
            .max_in_flight(max_in_flight)
            .max_pending_transmit(transmit_limit(u)?)
            .invalid_call(None);
        Ok(Pair {
            client: ClientProbe::new(client),
            server: ServerProbe::new(messages::this_server(), server),
            to_server: Vec::new(),
            to_client: Vec::new(),
            clean: true,
        })
    }

    fn flush_client(&mut self) {
        let bytes = self.client.transmit();
        self.to_server.extend(bytes);
    }

    fn flush_server(&mut self) {
        let bytes = self.server.transmit();
        self.to_client.extend(bytes);
    }

    fn deliver_to_server(&mut self, n: usize) {
        let chunk: Vec<u8> = self.to_server.drain(..n.min(self.to_server.len())).collect();
        self.server.receive(&chunk);
    }

    fn deliver_to_client(&mut self, n: usize) {
        let chunk: Vec<u8> = self.to_client.drain(..n.min(self.to_client.len())).collect();
        self.client.receive(&chunk);
    }

    /// Decodes one operation and applies it.
    fn step(&mut self, u: &mut Unstructured) -> Result<()> {
        match u.arbitrary::<u8>()? {
            0..=29 => {
                let target = if u.arbitrary()? { CallTarget::Session } else { CallTarget::Server };
                let call = if u.arbitrary()? { messages::payload(u)? } else { Payload::null() };
                self.client.request(target, call);
            }
            30..=44 => {
                let pending = self.client.pending();
                if !pending.is_empty() {
                    let id = &pending[usize::from(u.arbitrary::<u8>()?) % pending.len()];
                    self.client.cancel(id);
                }
            }
            45..=74 => {
                let in_flight = self.server.in_flight();
                if !in_flight.is_empty() {
                    let id = &in_flight[usize::from(u.arbitrary::<u8>()?) % in_flight.len()];
                    let result = match u.arbitrary::<u8>()? % 3 {
                        0 => Ok(None),
                        1 => Ok(Some(messages::payload(u)?)),
                        _ => Err(messages::error_body("failed", "")),
                    };
                    self.server.respond(id, result);
                }
            }
            75..=79 => self.server.respond(&messages::request_id(u)?, Ok(None)),
            80..=94 => {
                let route = if u.arbitrary()? { Some(messages::session_target(u)?) } else { None };
                self.server.set_attachment(route);
            }
            95..=104 => self.server.publish_update(messages::subscription_id(u)?, messages::payload(u)?),
            105..=144 => {
                if u.arbitrary()? {
                    self.flush_client();
                }
                self.deliver_to_server(usize::from(u.arbitrary::<u16>()?));
            }
            145..=184 => {
                if u.arbitrary()? {
                    self.flush_server();
                }
                self.deliver_to_client(usize::from(u.arbitrary::<u16>()?));
            }
            185..=189 => self.client.close(),
            190..=194 => self.server.disconnect(),
            195..=209 => {
                self.clean = false;
                let len = u.int_in_range(0..=32)?;
                self.server.receive(u.bytes(len)?);
            }
            210..=224 => {
                self.clean = false;
                let frame = encode_client_message(&messages::client_message(u)?).expect("a valid message");
                self.server.receive(&frame);
            }
            225..=239 => {
                self.clean = false;
                let len = u.int_in_range(0..=32)?;
                self.client.receive(u.bytes(len)?);
            }
            _ => {
                self.clean = false;
                let frame = encode_server_message(&messages::server_message(u)?).expect("a valid message");
                self.client.receive(&frame);
            }
        }
        self.check_clean();
        Ok(())
    }

    /// What two correct ends guarantee each other.
    fn check_clean(&self) {
        if !self.clean {
            return;
        }
        if let Some((reason, true)) = self.client.closed() {
            assert!(matches!(reason, CloseReason::Rejected(_)), "a correct server closed the client: {reason:?}");
        }
        if let Some((reason, true)) = self.server.closing() {
            assert!(
                matches!(
                    reason,
                    CloseReason::UnsupportedVersion(_) | CloseReason::Encode(_) | CloseReason::TransmitQueueFull { .. }
                ),
                "a correct client closed the server: {reason:?}"
            );
        }
        for fence in self.server.fences() {
            assert!(matches!(fence, FenceReason::StaleRoute | FenceReason::TooManyRequests), "{fence:?}");
        }
    }

    /// Answers every admitted request and delivers every byte, until nothing moves.
    fn settle(&mut self) {
        for _ in 0..64 {
            for id in self.server.in_flight() {
                self.server.respond(&id, Ok(None));
            }
            self.flush_client();
            self.flush_server();
            if self.to_server.is_empty() && self.to_client.is_empty() && self.server.in_flight().is_empty() {
                return;
            }
            self.deliver_to_server(usize::MAX);
            self.deliver_to_client(usize::MAX);
            self.check_clean();
        }
        panic!("the pair did not settle");
    }

    fn check_final(&self) {
        if self.clean && self.client.closed().is_none() && self.server.closing().is_none() {
            assert!(self.client.all_settled(), "a request never settled between two correct ends");
        }
    }
}
