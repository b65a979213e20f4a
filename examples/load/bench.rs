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

use pi_protocol::{ClientHello, ClientMessage, Payload, Request, RequestId, Response, ServerMessage};
use serde_json::{json, Value};
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
#[derive(Clone, Copy)]
enum Kind {
    Catalogue,
    Echo,
}

/// Keeps `in_flight` requests in flight until the measurement ends, then drains.
///
/// Cheap per message, so that one core can keep a server busy: the requests of a batch share
/// one send time and the answers of a read one receive time; the requests in flight are a
/// queue in sending order, which the server answers in.
async fn drive(mut wire: Wire, token: u64, in_flight: usize, shared: Rc<Shared>) {
    let ledger = Ledger::new(token);
    let target = ledger.server_target();
    let catalogue = Payload::from_value(&json!({"serviceId": "$chord.service", "member": "catalogue", "args": []}))
        .expect("a valid call");
    let echo =
        Payload::from_value(&json!({"serviceId": "session", "member": "echo", "args": [token]})).expect("a valid call");
    let echo_answer = json!({"echo": [token]});
    // The bytes of an answer already checked: the same bytes again need no second look.
    let mut checked: [Option<Vec<u8>>; 2] = [None, None];
    let mut pending: VecDeque<(u64, Instant, Kind)> = VecDeque::with_capacity(in_flight);
    let mut seq = 0u64;
    loop {
        if shared.phase.get() != Phase::Drain && pending.len() < in_flight {
            let now = Instant::now();
            while pending.len() < in_flight {
                seq += 1;
                let kind = if seq % 2 == 0 { Kind::Echo } else { Kind::Catalogue };
                let call = match kind {
                    Kind::Catalogue => catalogue.clone(),
                    Kind::Echo => echo.clone(),
                };
                let id = RequestId::new(seq.to_string()).expect("digits");
                wire.queue(&ClientMessage::Request(Request::new(id, target.clone(), call)));
                pending.push_back((seq, now, kind));
            }
        }
        if pending.is_empty() {
            break;
        }
        if let Err(e) = wire.flush().await {
            shared.fail(format!("client {token}: write: {e}"));
            return;
        }
        let mut received = None;
        let read = wire
            .read(|message| {
                let (id, result) = match message {
                    ServerMessage::Response(Response::Success(success)) => (success.id, success.result),
                    other => return shared.fail(format!("client {token}: unexpected {}", other.to_json())),
                };
                let position = id.as_str().parse().ok().and_then(|seq: u64| pending.iter().position(|p| p.0 == seq));
                let Some((_, sent, kind)) = position.and_then(|position| pending.remove(position)) else {
                    return shared.fail(format!("client {token}: a response to {id}, never asked for or answered"));
                };
                let received = *received.get_or_insert_with(Instant::now);
                if shared.phase.get() == Phase::Measure {
                    shared.responses.set(shared.responses.get() + 1);
                    shared.latencies.borrow_mut().record(received - sent);
                }
                let slot = &mut checked[kind as usize];
                let bytes = result.as_ref().map(Payload::as_cbor).unwrap_or_default();
                if slot.as_deref() == Some(bytes) {
                    return;
                }
                let value = result.as_ref().map(Payload::to_value).unwrap_or(Value::Null);
                let good = match kind {
                    Kind::Catalogue => value.as_array().is_some_and(|services| services.len() == 2),
                    Kind::Echo => value == echo_answer,
                };
                if good {
                    *slot = Some(bytes.to_vec());
                } else {
                    shared.fail(format!("client {token}: request {id} answered {value}"));
                }
            })
            .await;
        match read {
            Ok(true) => {}
            Ok(false) => {
                return shared.fail(format!("client {token}: the server closed with {} pending", pending.len()))
            }
            Err(message) => return shared.fail(format!("client {token}: {message}")),
        }
    }
}
