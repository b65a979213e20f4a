//! The `router` example over loopback TCP, between two `server` examples: the `client` example
//! through it (shared upstreams, then two clients at once on dedicated upstreams, the default), and a raw
//! client that reaches the second server and an unknown one through the same connection.
//!
//! The examples are built first (`cargo build --examples` with this test's features, a no-op
//! when they are fresh); every process runs with a deadline and is killed when the test ends.
#![cfg(feature = "tokio")]

use std::net::TcpStream;
use std::path::Path;

use pi_protocol::io::{write_client_message, ServerMessageReader};
use pi_protocol::{
    ClientHello, ClientMessage, Payload, Request, RequestId, Response, RpcTarget, ServerId, ServerMessage, ServerTarget,
};
use serde_json::{json, Value};

const A: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
const B: &str = "9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f";
const UNKNOWN: &str = "c56a4180-65aa-42ec-a945-5fd21dec0538";

#[path = "support/processes.rs"]
mod processes;

use processes::{built_examples, Process, DEADLINE};

fn events<'a>(lines: &'a [Value], name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    lines.iter().filter(move |l| l["event"] == name)
}

/// Two example servers (A, then B).
fn servers(examples: &Path) -> (Process, Process, String, String) {
    let a = Process::spawn(examples, "server", &["--listen", "127.0.0.1:0"]);
    let b = Process::spawn(examples, "server", &["--listen", "127.0.0.1:0", "--server-id", B]);
    let (address_a, address_b) = (a.address(), b.address());
    (a, b, address_a, address_b)
}

fn request(id: &str, server: &str) -> ClientMessage {
    let call = Payload::from_value(&json!({"serviceId": "$chord.service", "member": "catalogue", "args": []})).unwrap();
    let target = RpcTarget::Server(ServerTarget::new(ServerId::new(server).unwrap()));
    ClientMessage::Request(Request::new(RequestId::new(id).unwrap(), target, call))
}

/// A blocking client of its own: one connection, a request to B and one to an unknown server.
fn raw_client(address: &str) -> Vec<ServerMessage> {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    write_client_message(&mut stream, &ClientMessage::Hello(ClientHello::new(8u32))).unwrap();
    write_client_message(&mut stream, &request("to-b", B)).unwrap();
    write_client_message(&mut stream, &request("to-nobody", UNKNOWN)).unwrap();
    let mut reader = ServerMessageReader::new(stream.try_clone().unwrap());
    let messages = (0..3).map(|_| reader.read_message().unwrap().expect("a message")).collect();
    drop(stream);
    messages
}

#[test]
fn the_client_example_runs_through_the_router_to_two_servers() {
    let examples = built_examples();
    let (server_a, server_b, a, b) = servers(&examples);

    // Shared upstreams (`--shared`): the example client, a raw client, a client offering version 7.
    let router = Process::spawn(
        &examples,
        "router",
        &["--listen", "127.0.0.1:0", "--upstream", &a, "--upstream", &b, "--connections", "3", "--shared"],
    );
    let address = router.address();
    let client = Process::spawn(&examples, "client", &["--connect", &address]);
    let client = client.finish();
    assert_eq!(client[0], json!({"event": "ready", "serverId": A}), "the home server is the first upstream's");
    assert_eq!(events(&client, "update").count(), 1, "one bump of demo.counter");
    assert_eq!(events(&client, "attachment").count(), 2);
    assert!(client.iter().any(|l| l["local"] == "session call refused"));

    let raw = raw_client(&address);
    assert!(matches!(&raw[0], ServerMessage::Hello(hello) if hello.server_id.as_str() == A));
    // The router answers the unknown server at once, B a round trip later: any order.
    let mut answers: Vec<(String, Result<(), String>)> = raw[1..]
        .iter()
        .map(|m| match m {
            ServerMessage::Response(Response::Success(s)) => (s.id.to_string(), Ok(())),
            ServerMessage::Response(Response::Failure(f)) => (f.id.to_string(), Err(f.error.code.to_string())),
            other => panic!("{other:?}"),
        })
        .collect();
    answers.sort();
    assert_eq!(answers, vec![("to-b".to_owned(), Ok(())), ("to-nobody".to_owned(), Err("unknown_server".to_owned()))]);

    let rejected = Process::spawn(&examples, "client", &["--connect", &address, "--version", "7"]).finish();
    assert_eq!(rejected[0]["error"]["code"], "unsupported_version", "the router answers it itself, with its own code");

    let router = router.finish();
    assert_eq!(events(&router, "upstream_ready").count(), 2);
    assert_eq!(events(&router, "client_closed").count(), 3);
    let refused: Vec<&Value> = events(&router, "refused").collect();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["reason"], "UnknownServer");

    // Dedicated upstreams (the default; the flag is still accepted): two example clients at
    // once, each its own presentation.
    let router = Process::spawn(
        &examples,
        "router",
        &["--listen", "127.0.0.1:0", "--upstream", &a, "--upstream", &b, "--connections", "2", "--dedicated"],
    );
    let address = router.address();
    let first = Process::spawn(&examples, "client", &["--connect", &address]);
    let second = Process::spawn(&examples, "client", &["--connect", &address]);
    for lines in [first.finish(), second.finish()] {
        assert_eq!(events(&lines, "update").count(), 1);
        assert!(lines.iter().any(|l| l["local"] == "session call refused"));
    }
    let router = router.finish();
    assert_eq!(events(&router, "upstream_ready").count(), 4, "one connection per client and server");
    assert_eq!(events(&router, "upstream_closed").count(), 4, "closed with their clients");

    // What the servers saw: B got the raw client's request under an id of the router's.
    let seen_by_b: Vec<Value> = events(&server_b.stop(), "request").map(|l| l["message"].clone()).collect();
    assert_eq!(seen_by_b.len(), 1, "only the raw client's request went to B");
    assert_eq!(seen_by_b[0]["id"], "req-1");
    assert_eq!(seen_by_b[0]["target"]["serverId"], B);
    let seen_by_a = server_a.stop();
    assert_eq!(events(&seen_by_a, "request").count(), 3 * 10, "ten requests from each example client");
}
