//! The faults workload: `connections` clients at once for `seconds`, each slot running one
//! client after another, of kinds drawn at random:
//!
//! - `session`: a random script of calls (catalogue, echo, subscribe, attach and detach,
//!   session calls on the current route and on stale ones, waits cancelled or not, a call to
//!   another server), pipelined or not, ended in one of four ways: gracefully (every answer,
//!   then the end of the stream), by closing the write side in the middle of a frame, by
//!   dropping the socket at once (possibly in the middle of a frame), or with held calls in
//!   flight;
//! - `slow_writer`: its hello and requests written one byte at a time, a few milliseconds apart;
//! - `slow_reader`: 200 requests with 1 KiB arguments, whose answers it reads one byte at a time
//!   for two seconds (the server has to stop reading it), then at full speed;
//! - `stalled`: requests it never reads the answers of, then the socket dropped;
//! - `idle`: a handshake, then nothing for up to four seconds;
//! - `garbage`: calls, then a frame that is not CBOR: the server must refuse it (`hello_error`
//!   `invalid_request`, as the reference server) and close it.
//!
//! Beside them, `canaries` clients make calls for the whole run; they show that the server
//! keeps serving everybody (answers in every second, and their latencies).
//!
//! Every client checks with its [`Ledger`] that each request gets exactly one answer, the right
//! one, unless the connection ended first; an answer the server owed on a connection still
//! open, missing after 15 seconds, is an error.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use pi_protocol::{ClientHello, ClientMessage, RpcTarget, ServerId, ServerTarget};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::LocalSet;

use crate::ledger::{Expect, Ledger, OTHER_SERVER_ID};
use crate::mark;
use crate::stats::Histogram;
use crate::wire::{connect, Wire};

/// How long a client waits for an answer the server owes it.
const ANSWER_DEADLINE: Duration = Duration::from_secs(15);

/// What to run.
pub struct Settings {
    pub address: String,
    pub connections: usize,
    pub canaries: usize,
    pub duration: Duration,
    pub seed: u64,
}

/// Counts of one client kind.
#[derive(Default)]
struct KindTotals {
    clients: u64,
    requests: u64,
    answered: u64,
    /// Requests the connection's end left unanswered (held calls, or a client that left).
    ended_unanswered: u64,
}

/// What every client adds to.
struct Totals {
    tokens: Cell<u64>,
    open: Cell<u64>,
    most_open: Cell<u64>,
    kinds: RefCell<BTreeMap<&'static str, KindTotals>>,
    errors: RefCell<Vec<String>>,
    error_count: Cell<u64>,
    canary_latency: RefCell<Histogram>,
    /// Canary answers per second of the run.
    canary_seconds: RefCell<Vec<u64>>,
    start: Instant,
    deadline: Instant,
}

impl Totals {
    fn token(&self) -> u64 {
        let token = self.tokens.get() + 1;
        self.tokens.set(token);
        token
    }
    fn fail(&self, messages: impl IntoIterator<Item = String>) {
        for message in messages {
            self.error_count.set(self.error_count.get() + 1);
            let mut errors = self.errors.borrow_mut();
            if errors.len() < 20 {
                errors.push(message);
            }
        }
    }
    fn count(&self, kind: &'static str, client: &Client, left_unanswered: u64) {
        let mut kinds = self.kinds.borrow_mut();
        let totals = kinds.entry(kind).or_default();
        totals.clients += 1;
        totals.requests += client.requests;
        totals.answered += client.ledger.answered;
        totals.ended_unanswered += left_unanswered;
    }
}

/// A client: its wire and its ledger.
struct Client {
    wire: Wire,
    ledger: Ledger,
    requests: u64,
    totals: Rc<Totals>,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.totals.open.set(self.totals.open.get() - 1);
    }
}

impl Client {
    async fn connect(totals: &Rc<Totals>, address: &str) -> Result<Client, String> {
        let stream = connect(address).await.map_err(|e| format!("connect: {e}"))?;
        totals.open.set(totals.open.get() + 1);
        totals.most_open.set(totals.most_open.get().max(totals.open.get()));
        let ledger = Ledger::new(totals.token());
        Ok(Client { wire: Wire::new(stream), ledger, requests: 0, totals: Rc::clone(totals) })
    }

    async fn handshake(&mut self) -> Result<(), String> {
        self.wire.queue(&ClientMessage::Hello(ClientHello::new(8u32)));
        self.wire.flush().await.map_err(|e| format!("write: {e}"))?;
        self.read_until(|ledger| ledger.ready).await
    }

    /// Queues a call of `service` `member` with `args`.
    fn call(&mut self, target: RpcTarget, service: &str, member: &str, args: Value, expect: Expect) -> u64 {
        if let Expect::Subscribe(sub) = &expect {
            self.ledger.updates.insert(sub.clone(), 0);
        }
        let call = json!({"serviceId": service, "member": member, "args": args});
        let (message, seq) = self.ledger.request(target, call, expect);
        self.wire.queue(&message);
        self.requests += 1;
        seq
    }

    /// Queues `session echo` to the server target with `[token, n, extra...]`, whose answer
    /// must give the arguments back.
    fn echo(&mut self, n: u64, extra: &[&str]) {
        let mut args = vec![json!(self.ledger.token), json!(n)];
        args.extend(extra.iter().map(|text| json!(text)));
        let args = Value::Array(args);
        let server = self.ledger.server_target();
        self.call(server, "session", "echo", args.clone(), Expect::Echo(args));
    }

    /// Reads until `done` holds; an error when the stream ends first or after the deadline.
    async fn read_until(&mut self, done: impl Fn(&Ledger) -> bool) -> Result<(), String> {
        self.wire.flush().await.map_err(|e| format!("write: {e}"))?;
        let deadline = tokio::time::Instant::now() + ANSWER_DEADLINE;
        while !done(&self.ledger) {
            let ledger = &mut self.ledger;
            match tokio::time::timeout_at(
                deadline,
                self.wire.read(|m| {
                    let _ = ledger.receive(m);
                }),
            )
            .await
            {
                Err(_) => return Err(format!("{} answers owed for {ANSWER_DEADLINE:?}", ledger.outstanding.len())),
                Ok(Err(message)) => return Err(message),
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => {
                    return Err(format!("the server ended the stream with {} calls owed", ledger.unanswered_calls()))
                }
            }
        }
        Ok(())
    }

    /// Waits for every answer owed.
    async fn barrier(&mut self) -> Result<(), String> {
        self.read_until(|ledger| ledger.outstanding.is_empty()).await
    }

    /// Reads until the end of the stream (every answer owed must come before it).
    async fn read_to_end(&mut self) -> Result<(), String> {
        self.read_to_end_owing(false).await
    }

    /// Reads until the end of the stream; unless `owed_may_be_left`, every answer owed must
    /// come before it.
    async fn read_to_end_owing(&mut self, owed_may_be_left: bool) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + ANSWER_DEADLINE;
        loop {
            let ledger = &mut self.ledger;
            match tokio::time::timeout_at(
                deadline,
                self.wire.read(|m| {
                    let _ = ledger.receive(m);
                }),
            )
            .await
            {
                Err(_) => return Err("the server did not end the stream".to_owned()),
                Ok(Err(message)) if message.contains("reset") => return Ok(()),
                Ok(Err(message)) => return Err(message),
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => break,
            }
        }
        match self.ledger.unanswered_calls() {
            _ if owed_may_be_left => Ok(()),
            0 => Ok(()),
            n => Err(format!("the stream ended with {n} calls owed")),
        }
    }

    /// Writes the first `cut` bytes of a frame (a request that is never completed).
    async fn write_partial_frame(&mut self, rng: &mut fastrand::Rng) -> Result<(), String> {
        self.wire.flush().await.map_err(|e| format!("write: {e}"))?;
        let target = self.ledger.server_target();
        let (message, seq) =
            self.ledger.request(target, json!({"member": "echo", "args": ["cut"]}), Expect::Unsubscribe);
        self.ledger.outstanding.remove(&seq);
        self.wire.queue(&message);
        let frame = self.wire.take_queued();
        let cut = rng.usize(1..frame.len());
        self.wire.stream.write_all(&frame[..cut]).await.map_err(|e| format!("write: {e}"))
    }

    fn finish(self, kind: &'static str, result: Result<(), String>, left_unanswered: u64) {
        self.totals.count(kind, &self, left_unanswered);
        let mut errors = self.ledger.errors.clone();
        if let Err(message) = result {
            errors.push(format!("client {} ({kind}): {message}", self.ledger.token));
        }
        self.totals.fail(errors);
    }
}

/// Runs the workload and returns its result.
pub async fn run(settings: Settings) -> Value {
    LocalSet::new().run_until(run_local(settings)).await
}

async fn run_local(settings: Settings) -> Value {
    let start = Instant::now();
    let totals = Rc::new(Totals {
        tokens: Cell::new(0),
        open: Cell::new(0),
        most_open: Cell::new(0),
        kinds: RefCell::new(BTreeMap::new()),
        errors: RefCell::new(Vec::new()),
        error_count: Cell::new(0),
        canary_latency: RefCell::new(Histogram::default()),
        canary_seconds: RefCell::new(vec![0; settings.duration.as_secs() as usize + 1]),
        start,
        deadline: start + settings.duration,
    });
    mark("faults-start");
    let mut tasks = Vec::new();
    for canary in 0..settings.canaries {
        tasks.push(tokio::task::spawn_local(run_canary(Rc::clone(&totals), settings.address.clone(), canary)));
    }
    for slot in 0..settings.connections.saturating_sub(settings.canaries) {
        let rng = fastrand::Rng::with_seed(settings.seed ^ (slot as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
        tasks.push(tokio::task::spawn_local(run_slot(Rc::clone(&totals), settings.address.clone(), rng)));
    }
    // How many connections are open, sampled every 100 ms.
    let sampler = {
        let totals = Rc::clone(&totals);
        tokio::task::spawn_local(async move {
            let mut samples = Vec::new();
            while Instant::now() < totals.deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
                samples.push(totals.open.get());
            }
            samples
        })
    };
    for task in tasks {
        if let Err(error) = task.await {
            totals.fail([format!("a client task failed: {error}")]);
        }
    }
    let samples = sampler.await.unwrap_or_default();
    mark("faults-end");

    let seconds = totals.canary_seconds.borrow();
    let covered = &seconds[1..(settings.duration.as_secs() as usize).max(1)];
    let silent: Vec<usize> = covered.iter().enumerate().filter(|(_, n)| **n == 0).map(|(s, _)| s + 1).collect();
    if !silent.is_empty() {
        totals.fail([format!("the canaries got no answer in seconds {silent:?} of the run")]);
    }
    let kinds: BTreeMap<&str, Value> = totals
        .kinds
        .borrow()
        .iter()
        .map(|(kind, t)| {
            let value = json!({"clients": t.clients, "requests": t.requests, "answered": t.answered,
                               "ended_unanswered": t.ended_unanswered});
            (*kind, value)
        })
        .collect();
    let mean_open = samples.iter().sum::<u64>() as f64 / samples.len().max(1) as f64;
    json!({
        "workload": "faults",
        "seconds": start.elapsed().as_secs_f64(),
        "slots": settings.connections,
        "connections_opened": totals.tokens.get(),
        "open_mean": mean_open,
        "open_max": totals.most_open.get(),
        "kinds": kinds,
        "canary_latency_us": totals.canary_latency.borrow().summary(),
        "canary_answers_per_second": *seconds,
        "error_count": totals.error_count.get(),
        "errors": *totals.errors.borrow(),
    })
}

/// One slot: clients one after another until the deadline.
async fn run_slot(totals: Rc<Totals>, address: String, mut rng: fastrand::Rng) {
    // Slots start over the first second, not all at once.
    tokio::time::sleep(Duration::from_millis(rng.u64(..1000))).await;
    while Instant::now() < totals.deadline {
        let kind = match rng.u64(..100) {
            0..50 => "session",
            50..60 => "slow_writer",
            60..64 => "slow_reader",
            64..70 => "stalled",
            70..94 => "idle",
            _ => "garbage",
        };
        let client = match Client::connect(&totals, &address).await {
            Ok(client) => client,
            Err(message) => {
                totals.fail([format!("({kind}) {message}")]);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        match kind {
            "session" => session(client, &mut rng).await,
            "slow_writer" => slow_writer(client, &mut rng).await,
            "slow_reader" => slow_reader(client).await,
            "stalled" => stalled(client, &mut rng).await,
            "idle" => idle(client, &mut rng).await,
            _ => garbage(client, &mut rng).await,
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(..50))).await;
    }
}

/// A random script of calls, then one of four endings.
async fn session(mut client: Client, rng: &mut fastrand::Rng) {
    let result = session_script(&mut client, rng).await;
    let (result, left) = match result {
        Err(message) => (Err(message), 0),
        Ok(()) => match rng.u64(..100) {
            0..45 => (graceful_end(&mut client).await, 0),
            45..65 => {
                let result = async {
                    client.write_partial_frame(rng).await?;
                    client.wire.stream.shutdown().await.map_err(|e| format!("shutdown: {e}"))?;
                    client.read_to_end().await
                }
                .await;
                (result, client.ledger.outstanding.len() as u64)
            }
            65..85 => {
                if rng.bool() {
                    let _ = client.write_partial_frame(rng).await;
                } else {
                    let _ = client.wire.flush().await;
                }
                (Ok(()), client.ledger.outstanding.len() as u64)
            }
            _ => {
                for _ in 0..rng.u64(1..4) {
                    let target = client.ledger.server_target();
                    client.call(
                        target,
                        "demo.slow",
                        "wait",
                        json!([30_000]),
                        Expect::Wait { ms: 30_000, cancelled: false },
                    );
                }
                let _ = client.wire.flush().await;
                tokio::time::sleep(Duration::from_millis(rng.u64(..20))).await;
                (Ok(()), client.ledger.outstanding.len() as u64)
            }
        },
    };
    client.finish("session", result, left);
}

/// Every answer, the updates of every subscription, then the end of the stream both ways.
async fn graceful_end(client: &mut Client) -> Result<(), String> {
    client.barrier().await?;
    client.wire.stream.shutdown().await.map_err(|e| format!("shutdown: {e}"))?;
    client.read_to_end().await?;
    client.ledger.check_updates();
    Ok(())
}

async fn session_script(client: &mut Client, rng: &mut fastrand::Rng) -> Result<(), String> {
    client.handshake().await?;
    let token = client.ledger.token;
    let mut subscriptions = 0;
    for step in 0..rng.u64(3..14) {
        let server = client.ledger.server_target();
        match rng.u64(..100) {
            0..15 => {
                client.call(server, "$chord.service", "catalogue", json!([]), Expect::Catalogue);
            }
            15..35 => {
                let args = json!([token, step, "echo"]);
                client.call(server, "session", "echo", args.clone(), Expect::Echo(args));
            }
            35..45 => {
                subscriptions += 1;
                let sub = format!("sub-{token}-{subscriptions}");
                let args = json!([sub, "demo.counter", "singleton"]);
                client.call(server.clone(), "$chord.service", "subscribe", args, Expect::Subscribe(sub.clone()));
                client.call(server, "demo.counter", "bump", json!([1]), Expect::Bump);
            }
            45..58 => {
                // Attach: the route must be stable around it, so everything else settles first.
                client.barrier().await?;
                let before = client.ledger.routes_seen;
                let session = match rng.u64(..5) {
                    0 => "nobody",
                    1 | 2 => "session-1",
                    _ => "session-2",
                };
                let again = client.ledger.route.as_ref().is_some_and(|r| r.session_id.as_str() == session);
                let expect = match session {
                    "nobody" => Expect::AttachUnknown,
                    _ => Expect::Attach { session, routes_before: before, again },
                };
                client.call(server, "pi.session-management", "attach", json!([session]), expect);
                client.barrier().await?;
            }
            58..63 => {
                client.barrier().await?;
                client.call(server, "pi.session-management", "detach", json!([]), Expect::Detach);
                client.barrier().await?;
            }
            63..75 => {
                if let Some(route) = client.ledger.route.clone() {
                    let args = json!([token, step, "session"]);
                    client.call(RpcTarget::Session(route), "demo.echo", "echo", args, Expect::SessionOk);
                }
            }
            75..80 => {
                let current = client.ledger.route.clone();
                if let Some(old) = client.ledger.old_routes.iter().rev().find(|r| Some(*r) != current.as_ref()).cloned()
                {
                    client.call(RpcTarget::Session(old), "session", "echo", json!([]), Expect::Stale);
                }
            }
            80..88 => {
                let seq = client.call(
                    server,
                    "demo.slow",
                    "wait",
                    json!([30_000]),
                    Expect::Wait { ms: 30_000, cancelled: false },
                );
                client.wire.flush().await.map_err(|e| format!("write: {e}"))?;
                tokio::time::sleep(Duration::from_millis(rng.u64(..10))).await;
                if let Some(cancel) = client.ledger.cancel(seq) {
                    client.wire.queue(&cancel);
                }
            }
            88..95 => {
                let ms = rng.u64(1..40);
                client.call(server, "demo.slow", "wait", json!([ms]), Expect::Wait { ms, cancelled: false });
            }
            _ => {
                let other = RpcTarget::Server(ServerTarget::new(ServerId::new(OTHER_SERVER_ID).unwrap()));
                client.call(other, "$chord.service", "catalogue", json!([]), Expect::WrongServer);
            }
        }
        client.wire.flush().await.map_err(|e| format!("write: {e}"))?;
        if rng.u8(..100) < 40 {
            client.barrier().await?;
        }
        tokio::time::sleep(Duration::from_millis(rng.u64(..40))).await;
    }
    Ok(())
}

/// Its hello and three echo requests one byte at a time, then a graceful end.
async fn slow_writer(mut client: Client, rng: &mut fastrand::Rng) {
    let result = async {
        client.wire.queue(&ClientMessage::Hello(ClientHello::new(8u32)));
        for n in 0..3 {
            client.echo(n, &["slow"]);
        }
        let bytes = client.wire.take_queued();
        for byte in bytes {
            client.wire.stream.write_all(&[byte]).await.map_err(|e| format!("write: {e}"))?;
            tokio::time::sleep(Duration::from_millis(rng.u64(..4))).await;
        }
        graceful_end(&mut client).await
    }
    .await;
    client.finish("slow_writer", result, 0);
}

/// 200 requests with 1 KiB arguments; the answers read one byte at a time for two seconds
/// (while the requests are still being written), then at full speed.
async fn slow_reader(mut client: Client) {
    let result = async {
        client.handshake().await?;
        let padding = "x".repeat(1024);
        for n in 0..200 {
            client.echo(n, &[&padding]);
        }
        let requests = client.wire.take_queued();
        let Client { wire, ledger, .. } = &mut client;
        let (mut reader, mut writer) = wire.stream.split();
        let decoder = &mut wire.decoder;
        let write = async { writer.write_all(&requests).await.map_err(|e| format!("write: {e}")) };
        let read = async {
            let dribble_until = Instant::now() + Duration::from_secs(2);
            let mut byte = [0u8; 1];
            while Instant::now() < dribble_until && !ledger.outstanding.is_empty() {
                match reader.read(&mut byte).await {
                    Ok(1) => {}
                    other => return Err(format!("the stream ended while dribbling: {other:?}")),
                }
                for message in decoder.messages(&byte) {
                    let _ = ledger.receive(message.map_err(|e| e.to_string())?);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Ok(())
        };
        let (written, read) = tokio::join!(write, read);
        written?;
        read?;
        graceful_end(&mut client).await
    }
    .await;
    client.finish("slow_reader", result, 0);
}

/// Requests whose answers it never reads, then the socket dropped.
async fn stalled(mut client: Client, rng: &mut fastrand::Rng) {
    let result = async {
        client.handshake().await?;
        let padding = "y".repeat(512);
        for n in 0..rng.u64(50..400) {
            client.echo(n, &[&padding]);
        }
        // The server stops reading once its answers pile up: the write may never finish.
        let _ = tokio::time::timeout(Duration::from_millis(rng.u64(200..1500)), client.wire.flush()).await;
        Ok(())
    }
    .await;
    let left = client.ledger.outstanding.len() as u64;
    client.finish("stalled", result, left);
}

/// A handshake, a pause, a graceful end.
async fn idle(mut client: Client, rng: &mut fastrand::Rng) {
    let result = async {
        client.handshake().await?;
        tokio::time::sleep(Duration::from_millis(rng.u64(500..4000))).await;
        graceful_end(&mut client).await
    }
    .await;
    client.finish("idle", result, 0);
}

/// Calls, then a frame that is not CBOR: the server closes the connection. Calls that reached
/// the server in the same read as the bad frame are admitted, then settled unanswered (the
/// connection stops sending when it sees the violation), so they may be left owed.
async fn garbage(mut client: Client, rng: &mut fastrand::Rng) {
    let result = async {
        client.handshake().await?;
        for n in 0..rng.u64(..4) {
            client.echo(n, &[]);
        }
        client.wire.flush().await.map_err(|e| format!("write: {e}"))?;
        client.ledger.refusal_expected = true;
        client.wire.stream.write_all(&[0, 0, 0, 2, 0xff, 0xff]).await.map_err(|e| format!("write: {e}"))?;
        client.read_to_end_owing(true).await
    }
    .await;
    let left = client.ledger.outstanding.len() as u64;
    client.finish("garbage", result, left);
}

/// Echo calls, two in flight, for the whole run.
async fn run_canary(totals: Rc<Totals>, address: String, canary: usize) {
    let mut client = match Client::connect(&totals, &address).await {
        Ok(client) => client,
        Err(message) => return totals.fail([format!("canary {canary}: {message}")]),
    };
    let result = async {
        client.handshake().await?;
        let mut n = 0u64;
        while Instant::now() < totals.deadline {
            while client.ledger.outstanding.len() < 2 {
                n += 1;
                client.echo(n, &[]);
            }
            client.wire.flush().await.map_err(|e| format!("write: {e}"))?;
            let ledger = &mut client.ledger;
            let latencies = &totals.canary_latency;
            let seconds = &totals.canary_seconds;
            let start = totals.start;
            let read = client.wire.read(|m| {
                if let Some(latency) = ledger.receive(m) {
                    latencies.borrow_mut().record(latency);
                    let second = start.elapsed().as_secs() as usize;
                    if let Some(count) = seconds.borrow_mut().get_mut(second) {
                        *count += 1;
                    }
                }
            });
            match tokio::time::timeout(ANSWER_DEADLINE, read).await {
                Err(_) => return Err("no answer for 15 s".to_owned()),
                Ok(Err(message)) => return Err(message),
                Ok(Ok(false)) => return Err("the server ended the stream".to_owned()),
                Ok(Ok(true)) => {}
            }
        }
        graceful_end(&mut client).await
    }
    .await;
    client.finish("canary", result, 0);
}
