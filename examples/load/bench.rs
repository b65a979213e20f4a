//! The throughput workload: `connections` clients, each keeping `in_flight` requests in flight
//! (`$chord.service catalogue` and `session echo`, alternately, to the server target) for the
//! whole run, every answer checked. Phases, announced on stdout as `{"mark": ...}` lines so that
//! the harness can sample the server process at each: `idle` (every client connected and past
//! its handshake, nothing sent), `busy` (the load runs, warming up), `measure-start` and
//! `measure-end` (the window whose answers and latencies are counted), then `drained`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use pi_protocol::{
    decode_message, encode_client_message, CborLimits, ClientHello, ClientMessage, Payload, Request, RequestId,
    Response, ServerMessage,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::LocalSet;

use crate::ledger::Ledger;
use crate::mark;
use crate::stats::Histogram;
use crate::wire::{connect, Wire};

/// What to run.
pub struct Settings {
    pub address: String,
    pub connections: usize,
    pub in_flight: usize,
    pub idle: Duration,
    pub warmup: Duration,
    pub measure: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Warmup,
    Measure,
    Drain,
}

/// What the clients share.
struct Shared {
    phase: Cell<Phase>,
    responses: Cell<u64>,
    latencies: RefCell<Histogram>,
    errors: RefCell<Vec<String>>,
    error_count: Cell<u64>,
}

impl Shared {
    fn fail(&self, message: String) {
        self.error_count.set(self.error_count.get() + 1);
        let mut errors = self.errors.borrow_mut();
        if errors.len() < 10 {
            errors.push(message);
        }
    }
}

/// Runs the workload and returns its result.
pub async fn run(settings: Settings) -> Value {
    let local = LocalSet::new();
    local.run_until(run_local(settings)).await
}

async fn run_local(settings: Settings) -> Value {
    let shared = Rc::new(Shared {
        phase: Cell::new(Phase::Warmup),
        responses: Cell::new(0),
        latencies: RefCell::new(Histogram::default()),
        errors: RefCell::new(Vec::new()),
        error_count: Cell::new(0),
    });
    // Connect and handshake in batches, so that the listener's backlog never overflows.
    let mut wires = Vec::with_capacity(settings.connections);
    for batch in (0..settings.connections).collect::<Vec<_>>().chunks(64) {
        let mut pending = Vec::new();
        for &index in batch {
            let address = settings.address.clone();
            pending.push(tokio::task::spawn_local(async move { handshake(&address, index).await }));
        }
        for task in pending {
            match task.await.expect("the handshake task runs") {
                Ok(wire) => wires.push(wire),
                Err(message) => shared.fail(message),
            }
        }
    }
    let connected = wires.len();
    mark("idle");
    tokio::time::sleep(settings.idle).await;

    mark("busy");
    let mut tasks = Vec::with_capacity(connected);
    for (index, wire) in wires.into_iter().enumerate() {
        tasks.push(tokio::task::spawn_local(drive(wire, index as u64, settings.in_flight, Rc::clone(&shared))));
    }
    tokio::time::sleep(settings.warmup).await;
    shared.phase.set(Phase::Measure);
    mark("measure-start");
    let start = Instant::now();
    tokio::time::sleep(settings.measure).await;
    shared.phase.set(Phase::Drain);
    let window = start.elapsed();
    mark("measure-end");
    // The harness samples this process's CPU time on reading that line: stay alive long enough
    // for it (a fast server drains in well under a millisecond, and a process that has exited
    // cannot be sampled). Outside the window, so no figure moves.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for task in tasks {
        let _ = task.await;
    }
    mark("drained");

    let responses = shared.responses.get();
    let errors = shared.errors.borrow().clone();
    json!({
        "workload": "bench",
        "connections": settings.connections,
        "connected": connected,
        "in_flight": settings.in_flight,
        "seconds": window.as_secs_f64(),
        "responses": responses,
        "messages_per_second": responses as f64 / window.as_secs_f64(),
        "latency_us": shared.latencies.borrow().summary(),
        "error_count": shared.error_count.get(),
        "errors": errors,
    })
}

/// Connects client `index` and completes its handshake.
async fn handshake(address: &str, index: usize) -> Result<Wire, String> {
    let stream = connect(address).await.map_err(|e| format!("client {index}: connect: {e}"))?;
    let mut wire = Wire::new(stream);
    wire.queue(&ClientMessage::Hello(ClientHello::new(8u32)));
    wire.flush().await.map_err(|e| format!("client {index}: write: {e}"))?;
    let mut ledger = Ledger::new(index as u64);
    while !ledger.ready {
        let open = wire
            .read(|message| {
                let _ = ledger.receive(message);
            })
            .await?;
        if !open {
            return Err(format!("client {index}: the server closed during the handshake"));
        }
    }
    match ledger.errors.first() {
        Some(error) => Err(error.clone()),
        None => Ok(wire),
    }
}

/// What a client's request was, to check its answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Catalogue,
    Echo,
}

/// Digits of a request id: every id of the bench has this many, so that frames differ only there.
const ID_DIGITS: usize = 10;

/// `seq` as the fixed-width id `0000000042`.
fn id_digits(seq: u64) -> [u8; ID_DIGITS] {
    let mut digits = [b'0'; ID_DIGITS];
    let mut n = seq;
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
    digits
}

/// Where the id's digits are in `frame` (they appear once).
fn id_offset(frame: &[u8], digits: &[u8; ID_DIGITS]) -> Option<usize> {
    let mut found = frame.windows(ID_DIGITS).enumerate().filter(|(_, w)| w == digits).map(|(i, _)| i);
    let offset = found.next()?;
    found.next().is_none().then_some(offset)
}

/// A frame whose only varying part is a request id: the bytes, and where the id is.
struct Template {
    frame: Vec<u8>,
    id_at: usize,
}

impl Template {
    /// Learns the template from `frame`, which carries the id of `seq`.
    fn learn(frame: &[u8], seq: u64) -> Option<Template> {
        let id_at = id_offset(frame, &id_digits(seq))?;
        Some(Template { frame: frame.to_vec(), id_at })
    }

    /// Appends the frame with the id of `seq`.
    fn write(&self, seq: u64, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.frame);
        out[start + self.id_at..start + self.id_at + ID_DIGITS].copy_from_slice(&id_digits(seq));
    }

    /// Whether `frame` is this template with the id of `seq`.
    fn matches(&self, frame: &[u8], seq: u64) -> bool {
        let end = self.id_at + ID_DIGITS;
        frame.len() == self.frame.len()
            && frame[..self.id_at] == self.frame[..self.id_at]
            && frame[self.id_at..end] == id_digits(seq)
            && frame[end..] == self.frame[end..]
    }
}

/// Keeps `in_flight` requests in flight until the measurement ends, then drains.
///
/// Cheap per message, so that one core can keep a server busy. The requests are prepared
/// frames in which only the id changes (`Template`); each answer is checked the first time in
/// full (decoded, its result compared with what the call asks for), and from then on as bytes:
/// the same frame with the id of the oldest request in flight, which the server answers first.
/// An answer that differs is decoded and checked in full again. The requests of a batch share
/// one send time and the answers of a read one receive time.
async fn drive(wire: Wire, token: u64, in_flight: usize, shared: Rc<Shared>) {
    let Wire { mut stream, .. } = wire;
    let ledger = Ledger::new(token);
    let target = ledger.server_target();
    let call = |value: Value| Payload::from_value(&value).expect("a valid call");
    let calls = [
        call(json!({"serviceId": "$chord.service", "member": "catalogue", "args": []})),
        call(json!({"serviceId": "session", "member": "echo", "args": [token]})),
    ];
    let requests = calls.map(|call| {
        let id = RequestId::new(String::from_utf8(id_digits(0).to_vec()).expect("digits")).expect("an id");
        let frame = encode_client_message(&ClientMessage::Request(Request::new(id, target.clone(), call)))
            .expect("a valid request");
        Template::learn(&frame, 0).expect("the id appears once in the request")
    });
    let echo_answer = json!({"echo": [token]});
    let mut answers: [Option<Template>; 2] = [None, None];
    let mut pending: VecDeque<(u64, Instant, Kind)> = VecDeque::with_capacity(in_flight);
    let mut out = Vec::with_capacity(in_flight * requests[0].frame.len().max(requests[1].frame.len()));
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut seq = 0u64;
    loop {
        if shared.phase.get() != Phase::Drain && pending.len() < in_flight {
            let now = Instant::now();
            while pending.len() < in_flight {
                seq += 1;
                let kind = if seq % 2 == 0 { Kind::Echo } else { Kind::Catalogue };
                requests[kind as usize].write(seq, &mut out);
                pending.push_back((seq, now, kind));
            }
        }
        if pending.is_empty() {
            break;
        }
        if !out.is_empty() {
            if let Err(e) = stream.write_all(&out).await {
                return shared.fail(format!("client {token}: write: {e}"));
            }
            out.clear();
        }
        match stream.read_buf(&mut buf).await {
            Ok(0) => return shared.fail(format!("client {token}: the server closed with {} pending", pending.len())),
            Ok(_) => {}
            Err(e) => return shared.fail(format!("client {token}: read: {e}")),
        }
        let received = Instant::now();
        let mut consumed = 0;
        while let Some(frame) = whole_frame(&buf[consumed..]) {
            consumed += frame.len();
            let Some((seq, sent, kind)) = pending.pop_front() else {
                return shared.fail(format!("client {token}: an answer nobody waits for"));
            };
            let checked = answers[kind as usize].as_ref().is_some_and(|template| template.matches(frame, seq));
            if !checked {
                match check_answer(frame, seq, kind, &echo_answer) {
                    Ok(()) => answers[kind as usize] = Template::learn(frame, seq),
                    Err(message) => return shared.fail(format!("client {token}: request {seq}: {message}")),
                }
            }
            if shared.phase.get() == Phase::Measure {
                shared.responses.set(shared.responses.get() + 1);
                shared.latencies.borrow_mut().record(received - sent);
            }
        }
        buf.drain(..consumed);
    }
}

/// The whole frame at the front of `bytes`, if it is all there.
fn whole_frame(bytes: &[u8]) -> Option<&[u8]> {
    let header: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    bytes.get(..4 + u32::from_be_bytes(header) as usize)
}

/// Decodes `frame` and checks that it answers request `seq` of `kind` as the call asks.
fn check_answer(frame: &[u8], seq: u64, kind: Kind, echo_answer: &Value) -> Result<(), String> {
    let message: ServerMessage =
        decode_message(&frame[4..], CborLimits::default()).map_err(|e| format!("a bad frame: {e}"))?;
    let ServerMessage::Response(Response::Success(success)) = message else {
        return Err(format!("expected its answer, got {}", message.to_json()));
    };
    let expected_id = String::from_utf8(id_digits(seq).to_vec()).expect("digits");
    if success.id.as_str() != expected_id {
        return Err(format!("the answer to {} came first", success.id));
    }
    let value = success.result.as_ref().map(Payload::to_value).unwrap_or(Value::Null);
    let good = match kind {
        // A catalogue of any server: the example server lists three services, the real
        // pi-server's load profile two.
        Kind::Catalogue => value.as_array().is_some_and(|services| {
            !services.is_empty() && services.iter().all(|service| service["serviceId"].is_string())
        }),
        Kind::Echo => value == *echo_answer,
    };
    if good {
        Ok(())
    } else {
        Err(format!("answered {value}"))
    }
}
