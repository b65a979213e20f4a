//! Two clients through `examples/router` to one `examples/server`, each subscribing under the
//! same subscription id (`service-1`, as every real pi-client names its first) and attaching to
//! a Session of its own, then calling it (issue 22 point 3): with the router's default, one
//! upstream connection per client, all of it works; on a shared upstream (`--shared`) the
//! second subscription is refused and the first client's route is fenced once the second
//! attaches, which is what docs/PROTOCOL.md section 8 says shared upstreams cannot carry.
#![cfg(feature = "tokio")]

use std::net::TcpStream;

use pi_protocol::io::{write_client_message, ServerMessageReader};
use pi_protocol::{
    ClientHello, ClientMessage, Payload, Request, RequestId, Response, RpcTarget, ServerId, ServerMessage,
    ServerTarget, SessionTarget,
};
use serde_json::{json, Value};

#[path = "support/processes.rs"]
mod processes;

use processes::{built_examples, Process, DEADLINE};

const A: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

/// What one call gave: its result, or the error code.
type Outcome = Result<Option<Value>, String>;

/// A blocking client of the router.
struct Client {
    stream: TcpStream,
    reader: ServerMessageReader<TcpStream>,
    next: u32,
    route: Option<SessionTarget>,
    updates: usize,
}

impl Client {
    fn connect(address: &str) -> Client {
        let mut stream = TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        write_client_message(&mut stream, &ClientMessage::Hello(ClientHello::new(8u32))).unwrap();
        let mut reader = ServerMessageReader::new(stream.try_clone().unwrap());
        assert!(matches!(reader.read_message().unwrap(), Some(ServerMessage::Hello(h)) if h.server_id.as_str() == A));
        Client { stream, reader, next: 1, route: None, updates: 0 }
    }

    /// Sends `call` to `target` and reads until its answer: `Ok(result)` or `Err(code)`.
    fn call(&mut self, target: RpcTarget, call: Value) -> Result<Option<Value>, String> {
        let id = format!("request-{}", self.next);
        self.next += 1;
        let request = Request::new(RequestId::new(id.as_str()).unwrap(), target, Payload::from_value(&call).unwrap());
        write_client_message(&mut self.stream, &ClientMessage::Request(request)).unwrap();
        loop {
            match self.reader.read_message().unwrap().expect("the router closed the client") {
                ServerMessage::Attachment(a) => self.route = a.attachment,
                ServerMessage::ServiceUpdate(_) => self.updates += 1,
                ServerMessage::Response(Response::Success(s)) if s.id.as_str() == id => {
                    return Ok(s.result.map(|r| r.to_value()))
                }
                ServerMessage::Response(Response::Failure(f)) if f.id.as_str() == id => {
                    return Err(f.error.code.to_string())
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    fn server_call(&mut self, service: &str, member: &str, args: Value) -> Result<Option<Value>, String> {
        let target = RpcTarget::Server(ServerTarget::new(ServerId::new(A).unwrap()));
        self.call(target, json!({"serviceId": service, "member": member, "args": args}))
    }

    /// Attaches to Session `n`, through `pi.session-management` where the server offers it
    /// (real servers), else the example server's `sessions` service.
    fn attach(&mut self, n: u32) -> Result<Option<Value>, String> {
        match self.server_call("pi.session-management", "attach", json!([format!("session-{n}")])) {
            Ok(result) => Ok(result),
            Err(_) => self.server_call("sessions", "attach", json!([format!("s-{n}")])),
        }
    }

    fn session_call(&mut self) -> Result<Option<Value>, String> {
        let route = self.route.clone().expect("attached");
        self.call(RpcTarget::Session(route), json!({"serviceId": "session", "member": "echo", "args": [1]}))
    }
}

/// What each of two clients gets: its subscribe, its attach, then its Session call once both
/// attached.
fn two_clients(address: &str) -> Vec<(Outcome, Outcome, Outcome)> {
    let mut clients = [Client::connect(address), Client::connect(address)];
    let subscribe = |c: &mut Client| {
        c.server_call("$chord.service", "subscribe", json!(["service-1", "demo.counter", "singleton"]))
    };
    let subscribed: Vec<_> = clients.iter_mut().map(subscribe).collect();
    let attached: Vec<_> = clients.iter_mut().zip(1..).map(|(c, n)| c.attach(n)).collect();
    let called: Vec<_> = clients.iter_mut().map(Client::session_call).collect();
    subscribed.into_iter().zip(attached).zip(called).map(|((s, a), c)| (s, a, c)).collect()
}

#[test]
fn two_clients_each_with_its_own_session_work_through_the_router_by_default() {
    let examples = built_examples();
    let server = Process::spawn(&examples, "server", &["--listen", "127.0.0.1:0", "--quiet"]);
    let upstream = server.address();
    let router = Process::spawn(&examples, "router", &["--listen", "127.0.0.1:0", "--upstream", &upstream, "--quiet"]);
    let results = two_clients(&router.address());
    for (n, (subscribed, attached, called)) in results.iter().enumerate() {
        assert!(subscribed.is_ok(), "client {n}: subscribe {subscribed:?}");
        assert!(attached.is_ok(), "client {n}: attach {attached:?}");
        assert!(called.is_ok(), "client {n}: Session call {called:?}");
    }
    drop(router);

    // The same on one shared upstream: the second `service-1` is refused, and the first
    // client's route is no longer the connection's once the second attached.
    let router = Process::spawn(
        &examples,
        "router",
        &["--listen", "127.0.0.1:0", "--upstream", &upstream, "--quiet", "--shared"],
    );
    let results = two_clients(&router.address());
    assert!(results[0].0.is_ok());
    assert_eq!(results[1].0, Err("subscription_in_use".to_owned()));
    assert!(results[0].2.is_err(), "the first client's Session call is fenced: {:?}", results[0].2);
    assert!(results[1].2.is_ok());
}
