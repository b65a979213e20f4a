//! The router attacks of issue 18, each a bounded test over loopback against `examples/router`
//! (built first), with short deadlines and small budgets so that each ends in seconds.
//!
//! Upstreams are fakes of this file (a thread per connection): one that answers every call at
//! once except `park`, which it holds forever, and one that sends its `hello` and never reads.
//! What each test measured is printed (`cargo test --features tokio --test router_attacks --
//! --nocapture --test-threads 1` shows the figures).
#![cfg(all(feature = "tokio", target_os = "linux"))]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pi_protocol::io::{write_client_message, write_server_message, ClientMessageReader, ServerMessageReader};
use pi_protocol::{
    ClientHello, ClientMessage, Payload, Request, RequestId, Response, RpcTarget, ServerHello, ServerId, ServerMessage,
    ServerTarget, SuccessResponse,
};
use serde_json::{json, Value};

#[path = "support/processes.rs"]
mod processes;

const A: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
const UNKNOWN: &str = "c56a4180-65aa-42ec-a945-5fd21dec0538";
const WAIT: Duration = Duration::from_secs(30);

// ---- The router under test.

struct RouterProcess {
    child: Child,
    address: String,
    lines: mpsc::Receiver<Value>,
}

impl RouterProcess {
    /// `examples/router` in front of `upstream`, with the home `serverId` A and `extra` flags,
    /// run under `wrapper` (such as `prlimit`) when given.
    fn start(upstream: &str, extra: &[&str], wrapper: &[&str]) -> RouterProcess {
        let examples = processes::build_examples(&["router"]);
        let router = examples.join("router");
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(&router);
                command
            }
            None => Command::new(&router),
        };
        command.args(["--listen", "127.0.0.1:0", "--server-id", A, "--upstream", upstream]).args(extra);
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("the router starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let address = first.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{first}")).to_owned();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if let Ok(value) = serde_json::from_str::<Value>(&line) {
                    if send.send(value).is_err() {
                        break;
                    }
                }
            }
        });
        RouterProcess { child, address, lines }
    }

    /// The router's peak resident memory so far, in KiB (`VmHWM`).
    fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM:")
    }

    fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// CPU time used so far (user + system), in clock ticks (1/100 s).
    fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    /// Waits for the first event line for which `wanted` holds.
    fn wait_for(&self, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(_) => {}
                Err(_) => panic!("the router never printed the awaited event"),
            }
        }
    }

    /// Every event line printed so far.
    fn drain(&self) -> Vec<Value> {
        std::iter::from_fn(|| self.lines.recv_timeout(Duration::from_millis(200)).ok()).collect()
    }
}

impl Drop for RouterProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- Fake upstreams.

#[derive(Clone, Copy, PartialEq)]
enum Fake {
    /// Answers each call at once (`{"ok": true}`), except `park`, held forever.
    Answering,
    /// Sends its hello, then never reads.
    NotReading,
}

/// A fake server on a free port: its address.
fn fake_upstream(mode: Fake) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || serve_fake(stream, mode));
        }
    });
    address
}

fn serve_fake(stream: TcpStream, mode: Fake) {
    let mut writer = stream.try_clone().unwrap();
    let hello = ServerMessage::Hello(ServerHello::new(ServerId::new(A).unwrap()));
    if write_server_message(&mut writer, &hello).is_err() {
        return;
    }
    if mode == Fake::NotReading {
        std::thread::sleep(Duration::from_secs(120));
        return;
    }
    // Answers go to a writer thread that sends all it has in one write: a flood costs the fake
    // a write per burst, not per call, so its CPU stays small beside the router's.
    let (answers, queued) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        while let Ok(mut burst) = queued.recv() {
            while let Ok(more) = queued.try_recv() {
                burst.extend_from_slice(&more);
            }
            if writer.write_all(&burst).is_err() {
                return;
            }
        }
    });
    let mut reader = ClientMessageReader::new(BufReader::new(stream));
    let ok = Payload::from_value(&json!({"ok": true})).unwrap();
    while let Ok(Some(message)) = reader.read_message() {
        if let ClientMessage::Request(request) = message {
            if request.call.as_cbor().windows(4).any(|w| w == b"park") {
                continue;
            }
            let answer = Response::Success(SuccessResponse::new(request.id).with_result(ok.clone()));
            let frame = pi_protocol::encode_server_message(&ServerMessage::Response(answer)).unwrap();
            if answers.send(frame).is_err() {
                return;
            }
        }
    }
}

// ---- Clients.

fn call(member: &str, args: Value) -> Payload {
    Payload::from_value(&json!({"serviceId": "demo", "member": member, "args": args})).unwrap()
}

fn request(id: &str, server: &str, call: Payload) -> ClientMessage {
    let target = RpcTarget::Server(ServerTarget::new(ServerId::new(server).unwrap()));
    ClientMessage::Request(Request::new(RequestId::new(id).unwrap(), target, call))
}

/// A client that said hello and read the answer.
fn client(address: &str) -> (TcpStream, ServerMessageReader<TcpStream>) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_nodelay(true).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write_client_message(&mut stream, &ClientMessage::Hello(ClientHello::new(8u32))).unwrap();
    let mut reader = ServerMessageReader::new(stream.try_clone().unwrap());
    assert!(matches!(reader.read_message().unwrap(), Some(ServerMessage::Hello(_))));
    (stream, reader)
}

/// The error code of a response, or `None` for a success.
fn answer(message: ServerMessage) -> (String, Option<String>) {
    match message {
        ServerMessage::Response(Response::Success(s)) => (s.id.to_string(), None),
        ServerMessage::Response(Response::Failure(f)) => (f.id.to_string(), Some(f.error.code.to_string())),
        other => panic!("expected a response, got {other:?}"),
    }
}

/// Reads until the peer closes; how many bytes came, and how long it took.
fn read_to_end(stream: &mut TcpStream) -> (usize, Duration) {
    let start = Instant::now();
    let mut total = 0;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("still open after {:?}: {e}", start.elapsed()),
        }
    }
    (total, start.elapsed())
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

// ---- The attacks.

/// Connections that never say hello, stop after 3 bytes of a header, or announce a 16 MiB
/// frame before hello: all closed, the first two with the reference's `hello_error` at the
/// handshake deadline, the last at once.
#[test]
fn pre_hello_connections_are_closed_within_the_deadline() {
    let upstream = fake_upstream(Fake::Answering);
    let router = RouterProcess::start(&upstream, &["--quiet", "--handshake-timeout-ms", "500", "--shared"], &[]);
    let rss_before = router.rss_kib();
    let start = Instant::now();
    let mut silent: Vec<TcpStream> = (0..100).map(|_| TcpStream::connect(&router.address).unwrap()).collect();
    let mut partial: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = TcpStream::connect(&router.address).unwrap();
            s.write_all(&[0, 0, 0]).unwrap();
            s
        })
        .collect();
    let mut huge: Vec<TcpStream> = (0..50)
        .map(|_| {
            let mut s = TcpStream::connect(&router.address).unwrap();
            s.write_all(&(16u32 << 20).to_be_bytes()).unwrap();
            let _ = s.write_all(&vec![0u8; 64 * 1024]);
            s
        })
        .collect();
    for s in silent.iter().chain(&partial).chain(&huge) {
        s.set_read_timeout(Some(WAIT)).unwrap();
    }
    let mut slowest_huge = Duration::ZERO;
    for s in &mut huge {
        read_to_end(s);
        slowest_huge = slowest_huge.max(start.elapsed());
    }
    let mut slowest = Duration::ZERO;
    for s in silent.iter_mut().chain(partial.iter_mut()) {
        let mut reader = ServerMessageReader::new(s.try_clone().unwrap());
        match reader.read_message().unwrap() {
            Some(ServerMessage::HelloError(e)) => {
                assert_eq!((e.error.code.as_str(), e.error.message.as_str()), ("invalid_request", "Handshake timeout"));
            }
            other => panic!("expected the handshake timeout, got {other:?}"),
        }
        read_to_end(s);
        slowest = slowest.max(start.elapsed());
    }
    let grown = router.peak_rss_kib().saturating_sub(rss_before);
    eprintln!(
        "pre-hello: 200 silent/partial connections closed by {slowest:?} (deadline 500 ms), 50 x 16 MiB headers by {slowest_huge:?}; peak RSS +{grown} KiB"
    );
    assert!(slowest >= Duration::from_millis(450) && slowest < Duration::from_secs(5), "{slowest:?}");
    assert!(slowest_huge < Duration::from_secs(3), "{slowest_huge:?}");
    assert!(grown < 64 * 1024, "+{grown} KiB");
}

/// After hello, a frame whose header came but not the rest is closed at the frame deadline.
#[test]
fn a_frame_begun_after_hello_must_finish_within_the_frame_timeout() {
    let upstream = fake_upstream(Fake::Answering);
    let router = RouterProcess::start(&upstream, &["--frame-timeout-ms", "300", "--shared"], &[]);
    let (mut stream, _reader) = client(&router.address);
    let start = Instant::now();
    stream.write_all(&1000u32.to_be_bytes()).unwrap();
    stream.write_all(&[0xa1; 10]).unwrap();
    let (_, took) = read_to_end(&mut stream);
    let closed = router.wait_for(|l| l["event"] == "client_closed");
    eprintln!("frame deadline: closed after {:?} (deadline 300 ms)", start.elapsed());
    assert_eq!(closed["kind"], "timeout_frame");
    assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(5), "{took:?}");
}

/// Clients that each begin a long frame after hello and stop share one budget for what the
/// router holds of frames not yet decoded: the one whose bytes would pass it is closed at
/// once, the others wait for their frame deadline, and the router's memory stays near the budget.
#[test]
fn frames_partly_received_share_one_process_wide_budget() {
    const BUDGET: usize = 8 << 20;
    const EACH: usize = 3 << 20;
    let upstream = fake_upstream(Fake::Answering);
    let budget = BUDGET.to_string();
    let router = RouterProcess::start(
        &upstream,
        &["--max-partial-frame-bytes", &budget, "--frame-timeout-ms", "3000", "--shared"],
        &[],
    );
    let rss_before = router.rss_kib();
    let body = vec![0x61u8; EACH];
    // Four clients of 3 MiB each against 8 MiB: two fit, the third passes the budget.
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (mut stream, reader) = client(&router.address);
        stream.write_all(&(16u32 << 20).to_be_bytes()).unwrap();
        let _ = stream.write_all(&body);
        clients.push((stream, reader));
        std::thread::sleep(Duration::from_millis(100));
    }
    let closed = router.wait_for(|l| l["event"] == "client_closed");
    let grown = router.rss_kib().saturating_sub(rss_before);
    eprintln!("partial frames: 4 x 3 MiB against 8 MiB: first close {closed}; RSS +{grown} KiB");
    assert_eq!(closed["kind"], "budget_exceeded", "{closed}");
    assert!(grown < 24 * 1024, "+{grown} KiB");
    // The rest end at their frame deadline, and the budget is whole again for new clients.
    let later: Vec<Value> = (0..3).map(|_| router.wait_for(|l| l["event"] == "client_closed")).collect();
    let kinds: Vec<&str> = later.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "timeout_frame").count(), 2, "{kinds:?}");
    drop(clients);
    let (mut stream, mut reader) = client(&router.address);
    write_client_message(&mut stream, &request("after", A, call("ping", json!([])))).unwrap();
    assert_eq!(answer(reader.read_message().unwrap().unwrap()), ("after".to_owned(), None));
}

/// A client that asks for answers and never reads them is closed once its queue passes its
/// budget, and what was queued is dropped: it can read only what the kernel buffered.
#[test]
fn a_client_that_never_reads_is_closed_at_its_queue_budget_and_its_queue_dropped() {
    let upstream = fake_upstream(Fake::Answering);
    let router = RouterProcess::start(&upstream, &["--max-client-queue-bytes", "1048576", "--shared"], &[]);
    let (stream, _reader) = client(&router.address);
    let mut writer = stream.try_clone().unwrap();
    writer.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    // 10,000 refusals of 4 KiB each (the id comes back): 40 MiB asked for.
    let asked = std::thread::spawn(move || {
        let mut sent = 0usize;
        for i in 0..10_000 {
            let id = format!("{i}-{}", "i".repeat(4096));
            if write_client_message(&mut writer, &request(&id, UNKNOWN, Payload::null())).is_err() {
                break;
            }
            sent += 1;
        }
        sent
    });
    let closed = router.wait_for(|l| l["event"] == "client_closed");
    assert_eq!(closed["kind"], "too_slow", "{closed}");
    let sent = asked.join().unwrap();
    let mut stream = stream;
    let (readable, _) = read_to_end(&mut stream);
    eprintln!(
        "non-reading client: closed too_slow after {sent} requests (~{} MiB of answers asked); {} KiB readable after the close; router peak RSS {} KiB",
        sent * 4 / 1024,
        readable / 1024,
        router.peak_rss_kib()
    );
    assert!(readable < 16 << 20, "{readable} bytes delivered after the close");
    assert!(router.peak_rss_kib() < 256 * 1024);
}

/// An upstream that never reads is closed at its queue budget: the calls it held fail with
/// `server_departed` instead of hanging.
#[test]
fn an_upstream_that_never_reads_is_closed_and_the_calls_on_it_fail() {
    let upstream = fake_upstream(Fake::NotReading);
    let router = RouterProcess::start(&upstream, &["--max-upstream-queue-bytes", "1048576", "--shared"], &[]);
    let (stream, mut reader) = client(&router.address);
    let mut writer = stream.try_clone().unwrap();
    let big = call("echo", json!(["x".repeat(64 * 1024)]));
    let start = Instant::now();
    let sender = std::thread::spawn(move || {
        for i in 0..200 {
            write_client_message(&mut writer, &request(&i.to_string(), A, big.clone())).unwrap();
        }
    });
    let mut codes = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..200 {
        let (_, code) = answer(reader.read_message().unwrap().unwrap());
        *codes.entry(code.unwrap_or_else(|| "ok".to_owned())).or_default() += 1;
    }
    sender.join().unwrap();
    let closed = router.wait_for(|l| l["event"] == "upstream_closed");
    eprintln!("non-reading upstream: closed {} after {:?}; answers {codes:?}", closed["kind"], start.elapsed());
    assert_eq!(closed["kind"], "too_slow");
    assert!(codes.get("server_departed").is_some_and(|n| *n > 0), "{codes:?}");
    assert_eq!(codes.get("ok"), None);
}

/// Calls held upstream with long request ids: the ids the router holds are bounded in bytes
/// per client; past them calls are refused at once.
#[test]
fn request_ids_held_for_calls_in_flight_are_bounded_in_bytes() {
    let upstream = fake_upstream(Fake::Answering);
    let router = RouterProcess::start(&upstream, &["--shared", "--quiet"], &[]);
    let rss_before = router.rss_kib();
    let (mut stream, mut reader) = client(&router.address);
    for i in 0..200 {
        let id = format!("{i}-{}", "i".repeat(64 * 1024));
        write_client_message(&mut stream, &request(&id, A, call("park", json!([])))).unwrap();
    }
    let mut refused = 0;
    stream.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    while let Ok(Some(message)) = reader.read_message() {
        let (_, code) = answer(message);
        assert_eq!(code.as_deref(), Some("too_many_requests"));
        refused += 1;
        if refused == 200 - 7 {
            break;
        }
    }
    let grown = router.peak_rss_kib().saturating_sub(rss_before);
    eprintln!(
        "held ids: 200 parked calls with 64 KiB ids: {} admitted, {refused} refused; peak RSS +{grown} KiB",
        200 - refused
    );
    assert_eq!(refused, 193, "1 MiB of held ids admits 7 calls of 2 x 64 KiB");
    assert!(grown < 128 * 1024, "+{grown} KiB");
}

/// One client parking 4,096 calls on a shared upstream takes only its share: every call of
/// another client is admitted and answered.
#[test]
fn one_client_parking_calls_on_a_shared_upstream_never_starves_another() {
    let upstream = fake_upstream(Fake::Answering);
    let router = RouterProcess::start(&upstream, &["--shared", "--quiet"], &[]);
    let (mut greedy, mut greedy_reader) = client(&router.address);
    for i in 0..4096 {
        write_client_message(&mut greedy, &request(&format!("g{i}"), A, call("park", json!([])))).unwrap();
    }
    let mut refused = 0;
    while refused < 4096 - 256 {
        let (_, code) = answer(greedy_reader.read_message().unwrap().unwrap());
        assert_eq!(code.as_deref(), Some("too_many_requests"));
        refused += 1;
    }
    let (mut victim, mut victim_reader) = client(&router.address);
    let mut failures = 0;
    for i in 0..200 {
        write_client_message(&mut victim, &request(&format!("v{i}"), A, call("ping", json!([])))).unwrap();
        let (_, code) = answer(victim_reader.read_message().unwrap().unwrap());
        failures += usize::from(code.is_some());
    }
    eprintln!("parking: greedy client 256 parked, {refused} refused; victim 200 calls, {failures} refused");
    assert_eq!(failures, 0);
}

/// Once the router closed a client, it reads nothing more of it: what the client manages to
/// write is what the kernel buffers.
#[test]
fn a_client_the_router_closed_is_read_no_further() {
    let upstream = fake_upstream(Fake::Answering);
    let router = RouterProcess::start(&upstream, &["--shared"], &[]);
    let (mut stream, _reader) = client(&router.address);
    // A second hello is a violation: the router closes the client.
    write_client_message(&mut stream, &ClientMessage::Hello(ClientHello::new(8u32))).unwrap();
    router.wait_for(|l| l["event"] == "client_closed");
    let cpu_before = router.cpu_ticks();
    stream.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut written = 0usize;
    let start = Instant::now();
    while written < 512 << 20 && start.elapsed() < Duration::from_secs(4) {
        match stream.write(&chunk) {
            Ok(n) => written += n,
            Err(_) => break,
        }
    }
    let cpu = router.cpu_ticks() - cpu_before;
    eprintln!("closed client: it wrote {} KiB after the close; router CPU {} ms", written / 1024, cpu * 10);
    assert!(written < 32 << 20, "{written} bytes accepted after the close");
}

/// One 16 MB call of tiny values, a `$chord.service` call (which the subscription inspector
/// of shared upstreams reads; here each client has its own upstream, so that the fake's one
/// thread per connection does not make the victim wait): the router never builds the whole
/// call, and another client's calls are answered meanwhile.
#[test]
fn one_16_mb_call_is_not_built_whole_and_other_clients_are_served() {
    let upstream = fake_upstream(Fake::Answering);
    let router = RouterProcess::start(&upstream, &["--quiet"], &[]);
    let rss_before = router.rss_kib();
    let (mut victim, mut victim_reader) = client(&router.address);
    let (mut big, mut big_reader) = client(&router.address);
    // 15 million zeros, one byte each in CBOR (in arrays of a million, the container limit).
    let mut args = vec![Value::from("sub-1")];
    args.push(Value::Array(vec![Value::Array(vec![Value::from(0); 999_999]); 15]));
    let call =
        Payload::from_value(&json!({"serviceId": "$chord.service", "member": "subscribe", "args": args})).unwrap();
    drop(args);
    let message = request("big", A, call);
    let sender = std::thread::spawn(move || {
        write_client_message(&mut big, &message).unwrap();
        answer(big_reader.read_message().unwrap().unwrap())
    });
    let mut latencies = Vec::new();
    let start = Instant::now();
    while !sender.is_finished() || latencies.len() < 20 {
        let sent = Instant::now();
        write_client_message(&mut victim, &request(&format!("v{}", latencies.len()), A, self::call("ping", json!([]))))
            .unwrap();
        let (_, code) = answer(victim_reader.read_message().unwrap().unwrap());
        assert_eq!(code, None);
        latencies.push(sent.elapsed());
        if start.elapsed() > WAIT {
            break;
        }
    }
    let (_, code) = sender.join().unwrap();
    let grown = router.peak_rss_kib().saturating_sub(rss_before);
    let worst = latencies.iter().max().copied().unwrap();
    eprintln!(
        "16 MB call: answered {code:?}; router peak RSS +{} MiB; victim's worst latency {worst:?} over {} calls",
        grown / 1024,
        latencies.len()
    );
    assert_eq!(code, None);
    assert!(grown < 200 * 1024, "+{grown} KiB");
    assert!(worst < Duration::from_secs(1), "the victim waited {worst:?}");
}

/// A victim's latency while another client floods the router, compared with its latency alone.
#[test]
fn a_victim_latency_under_another_client_flood_stays_near_its_latency_alone() {
    let upstream = fake_upstream(Fake::Answering);
    let router = RouterProcess::start(&upstream, &["--quiet"], &[]);
    let measure = |samples: usize| {
        let (mut victim, mut reader) = client(&router.address);
        let mut latencies = Vec::new();
        for i in 0..samples {
            let sent = Instant::now();
            write_client_message(&mut victim, &request(&format!("v{i}"), A, call("ping", json!([])))).unwrap();
            let (_, code) = answer(reader.read_message().unwrap().unwrap());
            assert_eq!(code, None, "the victim's call was refused");
            latencies.push(sent.elapsed());
        }
        latencies
    };
    let mut alone = measure(300);
    let (flood, flood_reader) = client(&router.address);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flooding = stop.clone();
    let mut flood_writer = flood.try_clone().unwrap();
    // The flood costs the test little CPU of its own (the machine has two cores to share with
    // the router and the upstream): 8,192 calls encoded once and sent over and over (an id
    // still in flight when it comes round again is answered `duplicate` by the router, which
    // is load all the same), answers read as bytes and not decoded.
    let ring: Vec<u8> = (0..8192)
        .flat_map(|i| {
            pi_protocol::encode_client_message(&request(&format!("f{i}"), A, call("ping", json!([])))).unwrap()
        })
        .collect();
    let per_ring = 8192u64;
    let writer = std::thread::spawn(move || {
        let mut sent = 0u64;
        while !flooding.load(std::sync::atomic::Ordering::Relaxed) {
            if flood_writer.write_all(&ring).is_err() {
                break;
            }
            sent += per_ring;
        }
        sent
    });
    // The answered bytes so far, read at both ends of the victim's measure: the flood's rate.
    let answered_so_far = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = answered_so_far.clone();
    let reader = std::thread::spawn(move || {
        let mut stream = flood_reader.into_inner();
        let mut answered = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n @ 1..) = stream.read(&mut buf) {
            answered += n as u64;
            counter.store(answered, std::sync::atomic::Ordering::Relaxed);
        }
        answered
    });
    std::thread::sleep(Duration::from_millis(300));
    let (ticks, started) = (router.cpu_ticks(), Instant::now());
    let answered_before = answered_so_far.load(std::sync::atomic::Ordering::Relaxed);
    let mut flooded = measure(300);
    let window = started.elapsed();
    let rate = (answered_so_far.load(std::sync::atomic::Ordering::Relaxed) - answered_before) as f64
        / window.as_secs_f64()
        / 1e6;
    let busy = (router.cpu_ticks() - ticks) as f64 / 100.0 / window.as_secs_f64();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = writer.join().unwrap();
    flood.shutdown(std::net::Shutdown::Both).unwrap();
    let answered = reader.join().unwrap();
    let (alone_p50, alone_p99) = (percentile(&mut alone, 0.5), percentile(&mut alone, 0.99));
    let (flood_p50, flood_p99) = (percentile(&mut flooded, 0.5), percentile(&mut flooded, 0.99));
    eprintln!(
        "victim latency: alone p50 {alone_p50:?} p99 {alone_p99:?}; under a flood of {sent} calls ({answered} bytes answered, {rate:.1} MB/s while the victim called, the router {:.0}% busy) p50 {flood_p50:?} p99 {flood_p99:?}",
        busy * 100.0
    );
    // Alone the p99 is 0.3-0.9 ms, under the flood 1-13 ms (the router serves connections
    // round robin by bytes, an idle one first); the floor leaves room for a machine whose two
    // cores other work shares.
    assert!(flood_p99 < (alone_p99 * 3).max(Duration::from_millis(50)), "{flood_p99:?} vs {alone_p99:?}");
}

/// Past the open-file limit, the router's accept loop backs off instead of spinning, reports
/// the error once, and accepts again once connections close.
#[test]
fn past_the_open_file_limit_accepting_backs_off_and_reports_once() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("prlimit is not installed: skipped");
        return;
    }
    let upstream = fake_upstream(Fake::Answering);
    let router = RouterProcess::start(
        &upstream,
        &["--shared", "--handshake-timeout-ms", "60000"],
        &["prlimit", "--nofile=48:48"],
    );
    let held: Vec<TcpStream> = (0..80).map(|_| TcpStream::connect(&router.address).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(500));
    let cpu_before = router.cpu_ticks();
    std::thread::sleep(Duration::from_secs(2));
    let cpu = router.cpu_ticks() - cpu_before;
    let lines = router.drain();
    drop(held);
    std::thread::sleep(Duration::from_millis(500));
    let (_late, _) = client(&router.address);
    let reports: Vec<&Value> = lines.iter().filter(|l| l["event"] == "accept").collect();
    eprintln!("EMFILE: router CPU {} ms over 2 s at the limit; accept reports: {reports:?}", cpu * 10);
    assert!(cpu <= 20, "{cpu} ticks: the accept loop spins");
    let failing = reports.iter().filter(|r| r["report"].as_str().unwrap().starts_with("accept failed")).count();
    assert_eq!(failing, 1, "{reports:?}");
}
