//! The live commands (`discover`, `call`, `catalogue`) against an in-process server on a
//! temporary Unix socket (removed afterwards): what they print, and their exit statuses (0;
//! 1 for a server error, with its code and message; 2 for usage and connection errors).
#![cfg(unix)]

use std::path::PathBuf;
use std::process::{Command, Output};

use pi_protocol::io::unix::socket_path;
use pi_protocol::ServerId;

const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

/// A directory with one server's socket in it, served while the value lives; removed on drop.
struct Served {
    dir: PathBuf,
    socket: PathBuf,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Served {
    /// The documentation's server (`pi_protocol::client::doc_support`).
    fn new(name: &str) -> Served {
        Served::with(name, |listener| {
            pi_protocol::client::doc_support::serve_unix(listener, ServerId::new(SERVER).unwrap())
        })
    }

    /// The server `serve` runs on the socket's listener.
    fn with<F: std::future::Future<Output = ()> + Send + 'static>(
        name: &str,
        serve: impl FnOnce(tokio::net::UnixListener) -> F,
    ) -> Served {
        let dir = std::env::temp_dir().join(format!("pi-protocol-cli-remote-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let socket = socket_path(&dir, &ServerId::new(SERVER).unwrap());
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let listener = runtime.block_on(async { tokio::net::UnixListener::bind(&socket) }).unwrap();
        runtime.spawn(serve(listener));
        Served { dir, socket, runtime: Some(runtime) }
    }

    fn socket(&self) -> &str {
        self.socket.to_str().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi-protocol")).args(args).output().expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn discover_prints_one_line_per_server() {
    let served = Served::new("discover");
    std::fs::write(served.dir.join("notes.sock"), b"not a socket").unwrap();
    let out = run(&["discover", served.dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let line = format!("{{\"serverId\":\"{SERVER}\",\"path\":\"{}\"}}\n", served.socket());
    assert_eq!(text(&out.stdout), line);
    // A directory that does not exist holds no servers.
    let out = run(&["discover", served.dir.join("absent").to_str().unwrap()]);
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(0), true));
}

#[test]
fn call_prints_the_result_as_json() {
    let served = Served::new("call");
    let out = run(&["call", "--unix", served.socket(), "demo.echo", "echo", r#"[1, "two", {"b": 1, "a": 2}]"#]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "{\"echo\":[1,\"two\",{\"b\":1,\"a\":2}]}\n");
    // No arguments: `[]`; a `null` result prints `null`.
    let out = run(&["call", "--unix", served.socket(), "--server-id", SERVER, "pi.session-management", "detach"]);
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(0), "null\n".to_owned()), "{}", text(&out.stderr));
}

#[test]
fn call_with_a_session_attaches_first_and_calls_the_session() {
    let served = Served::new("session");
    let out = run(&["call", "--unix", served.socket(), "--session", "session-1", "session", "prompt", "[\"go\"]"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "{\"ok\":true}\n");
    let out = run(&["call", "--unix", served.socket(), "--session", "session-9", "session", "prompt"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), "pi-protocol: attach: server error session_not_found: No such session\n");
}

#[test]
fn a_server_error_prints_its_code_and_message_and_exits_1() {
    let served = Served::new("error");
    let out = run(&["call", "--unix", served.socket(), "demo.missing", "nothing", "[]"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        text(&out.stderr),
        "pi-protocol: demo.missing.nothing: server error not_found: No such service member\n"
    );
}

#[test]
fn usage_and_connection_errors_exit_2() {
    let served = Served::new("usage");
    let other = "9c858901-8a57-4791-81fe-4c455b099bc9";
    for (args, says) in [
        (vec!["call", "--unix", served.socket(), "demo.echo", "echo", "{not json"], "ARGS_JSON is not JSON"),
        (vec!["call", "--unix", served.socket(), "demo.echo", "echo", "{}"], "ARGS_JSON must be a JSON array"),
        (
            vec!["call", "--unix", served.socket(), "--server-id", "nope", "demo.echo", "echo"],
            "is not a version 4 UUID",
        ),
        (vec!["call", "--unix", served.socket(), "--server-id", other, "demo.echo", "echo"], "not the expected"),
        (vec!["call", "--unix", "/nonexistent/x.sock", "demo.echo", "echo"], "cannot connect to /nonexistent/x.sock"),
        (vec!["call", "demo.echo", "echo"], "--unix"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains(says), "{args:?}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn call_reaches_a_tcp_server_too() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    runtime.spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(pi_protocol::client::doc_support::serve(stream, ServerId::new(SERVER).unwrap()));
        }
    });
    let out = run(&["call", "--tcp", &addr, "demo.echo", "echo", "[true]"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "{\"echo\":[true]}\n");
    runtime.shutdown_background();
}

#[test]
fn catalogue_prints_one_line_per_service() {
    let served = Served::new("catalogue");
    let out = run(&["catalogue", "--unix", served.socket()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "{\"serviceId\":\"demo.echo\",\"mode\":\"singleton\"}\n");
}

/// A counter served with Chord's shapes on a Unix socket: `subscribe` answers the snapshot of
/// `count` = `{value, log}`; `bump(n)` publishes the new value before its answer.
async fn serve_counter(listener: tokio::net::UnixListener) {
    use pi_protocol::chord::subscription::{ServiceInstance, ServiceMember, SubscriptionPublisher};
    use pi_protocol::chord::wire::{Id, ServiceMode};
    use pi_protocol::connection::{ServerEvent, ServerOptions};
    use pi_protocol::io::ServerDriver;
    use pi_protocol::{Payload, ServerConnection, SubscriptionId};
    use serde_json::json;

    let count = std::sync::Arc::new(std::sync::Mutex::new(json!({"value": 0, "log": ""})));
    let publishers = std::sync::Arc::new(tokio::sync::Mutex::new(Vec::<(
        SubscriptionId,
        SubscriptionPublisher,
        tokio::sync::mpsc::UnboundedSender<Payload>,
    )>::new()));
    while let Ok((stream, _)) = listener.accept().await {
        let (count, publishers) = (count.clone(), publishers.clone());
        tokio::spawn(async move {
            let id = ServerId::new(SERVER).unwrap();
            let mut driver = ServerDriver::new(stream, ServerConnection::new(id, ServerOptions::default()));
            let (updates_tx, mut updates) = tokio::sync::mpsc::unbounded_channel::<Payload>();
            let mut mine: Vec<SubscriptionId> = Vec::new();
            loop {
                let event = tokio::select! {
                    event = driver.next_event() => event,
                    Some(update) = updates.recv() => {
                        if let Some(sub) = mine.first() {
                            let _ = driver.connection_mut().publish_update(sub.clone(), update);
                        }
                        continue;
                    }
                };
                let Some(event) = event else { break };
                let ServerEvent::Request(request) = event else { continue };
                let call = request.call.to_value();
                let args = call["args"].clone();
                let answer = match (call["serviceId"].as_str().unwrap(), call["member"].as_str().unwrap()) {
                    ("$chord.service", "subscribe") => {
                        let sub = SubscriptionId::new(args[0].as_str().unwrap()).unwrap();
                        let mut publisher =
                            SubscriptionPublisher::new(Id::new("demo.counter").unwrap(), ServiceMode::Singleton);
                        let value = count.lock().unwrap().clone();
                        let members = vec![
                            ServiceMember::method("bump").unwrap(),
                            ServiceMember::state("count", 0, value).unwrap(),
                        ];
                        let snapshot = publisher.snapshot(&[ServiceInstance::new(members)]).unwrap();
                        publishers.lock().await.push((sub.clone(), publisher, updates_tx.clone()));
                        mine.push(sub);
                        Some(snapshot.to_payload().unwrap())
                    }
                    ("demo.counter", "bump") => {
                        let n = args[0].as_i64().unwrap();
                        let value = {
                            let mut count = count.lock().unwrap();
                            *count = json!({"value": count["value"].as_i64().unwrap() + n, "log": format!("{}+{n}", count["log"].as_str().unwrap())});
                            count.clone()
                        };
                        for (_, publisher, to) in publishers.lock().await.iter_mut() {
                            if let Some(update) = publisher.publish(None, "count", value.clone()).unwrap() {
                                let _ = to.send(update.to_payload().unwrap());
                            }
                        }
                        None
                    }
                    _ => None,
                };
                let _ = driver.connection_mut().respond(&request.id, Ok(answer));
            }
        });
    }
}

#[test]
fn subscribe_prints_the_snapshot_then_each_updated_value() {
    let served = Served::with("subscribe", serve_counter);
    let path = served.socket().to_owned();

    let mut follower = Command::new(env!("CARGO_BIN_EXE_pi-protocol"))
        .args(["subscribe", "--unix", &path, "demo.counter", "--mode", "singleton", "--updates", "2"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Bump once the follower's subscription exists: its first line is the snapshot's.
    let mut stdout = std::io::BufReader::new(follower.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    for n in ["2", "3"] {
        let out = run(&["call", "--unix", &path, "demo.counter", "bump", &format!("[{n}]")]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(follower.wait().unwrap().code(), Some(0));
    assert_eq!(
        format!("{first}{rest}"),
        concat!(
            r#"{"member":"count","instance":null,"sequence":0,"value":{"value":0,"log":""}}"#,
            "\n",
            r#"{"member":"count","instance":null,"sequence":1,"value":{"value":2,"log":"+2"}}"#,
            "\n",
            r#"{"member":"count","instance":null,"sequence":2,"value":{"value":5,"log":"+2+3"}}"#,
            "\n",
        )
    );
}

/// A server that never answers `demo.slow wait`, answers `subscribe` with a snapshot of one
/// method and no state member, and reports what it saw on `seen`: `"request <member>"`,
/// `"cancel <id>"` and `"unsubscribe"`.
async fn serve_recording(listener: tokio::net::UnixListener, seen: std::sync::mpsc::Sender<String>) {
    use pi_protocol::chord::subscription::{ServiceInstance, ServiceMember, SubscriptionPublisher};
    use pi_protocol::chord::wire::{Id, ServiceMode};
    use pi_protocol::connection::{ServerEvent, ServerOptions};
    use pi_protocol::io::ServerDriver;
    use pi_protocol::ServerConnection;

    while let Ok((stream, _)) = listener.accept().await {
        let seen = seen.clone();
        tokio::spawn(async move {
            let id = ServerId::new(SERVER).unwrap();
            let mut driver = ServerDriver::new(stream, ServerConnection::new(id, ServerOptions::default()));
            while let Some(event) = driver.next_event().await {
                let request = match event {
                    ServerEvent::Request(request) => request,
                    ServerEvent::Cancel { id } => {
                        let _ = seen.send(format!("cancel {}", id.as_str()));
                        continue;
                    }
                    _ => continue,
                };
                let call = request.call.to_value();
                let member = call["member"].as_str().unwrap().to_owned();
                let _ = seen.send(format!("request {member}"));
                let answer = match member.as_str() {
                    "subscribe" => {
                        let mut publisher =
                            SubscriptionPublisher::new(Id::new("demo.slow").unwrap(), ServiceMode::Singleton);
                        let members = vec![ServiceMember::method("wait").unwrap()];
                        Some(publisher.snapshot(&[ServiceInstance::new(members)]).unwrap().to_payload().unwrap())
                    }
                    "unsubscribe" => {
                        let _ = seen.send("unsubscribe".to_owned());
                        None
                    }
                    _ => continue,
                };
                let _ = driver.connection_mut().respond(&request.id, Ok(answer));
            }
        });
    }
}

/// Sends SIGINT to `child` (as Ctrl-C in a terminal does).
fn interrupt(child: &std::process::Child) {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

/// Waits for the next line the recording server reports, for at most 10 s.
fn next_seen(seen: &std::sync::mpsc::Receiver<String>) -> String {
    seen.recv_timeout(std::time::Duration::from_secs(10)).expect("the server saw something")
}

#[test]
fn ctrl_c_cancels_a_pending_call_and_exits_130_and_ends_a_subscription_with_0() {
    let (to_test, seen) = std::sync::mpsc::channel();
    let served = Served::with("interrupt", |listener| serve_recording(listener, to_test));
    let path = served.socket().to_owned();
    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pi-protocol"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };

    let caller = spawn(&["call", "--unix", &path, "demo.slow", "wait", "[60000]"]);
    assert_eq!(next_seen(&seen), "request wait");
    interrupt(&caller);
    let out = caller.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    assert!(text(&out.stderr).contains("demo.slow.wait: interrupted; the call was cancelled"), "{}", text(&out.stderr));
    assert_eq!(next_seen(&seen), "cancel req-1");

    let mut follower = spawn(&["subscribe", "--unix", &path, "demo.slow"]);
    assert_eq!(next_seen(&seen), "request subscribe");
    // The note about the empty snapshot comes once the snapshot is read.
    let mut stderr = std::io::BufReader::new(follower.stderr.take().unwrap());
    let mut note = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut note).unwrap();
    assert_eq!(
        note,
        "pi-protocol: the snapshot of demo.slow has no state members: waiting for updates (Ctrl-C to stop)\n"
    );
    interrupt(&follower);
    let out = follower.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(next_seen(&seen), "request unsubscribe");
    assert_eq!(next_seen(&seen), "unsubscribe");
}
