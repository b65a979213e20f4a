//! What one faults-workload client sent and what it must get back: every request is answered
//! exactly once, with the answer its call asks for, on the connection that sent it. Ids and
//! arguments carry the client's unique token, so an answer, update or route that belongs to
//! another connection is caught.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use pi_protocol::{
    Cancel, ClientMessage, Payload, Request, RequestId, Response, RpcTarget, ServerId, ServerMessage, ServerTarget,
    SessionTarget,
};
use serde_json::{json, Value};

/// The server every client talks to.
pub const SERVER_ID: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
/// A server nobody talks to: requests naming it are fenced.
pub const OTHER_SERVER_ID: &str = "9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f";

/// What the answer to a request must be.
#[derive(Debug, Clone)]
pub enum Expect {
    /// `ok`, the three-service catalogue of the example server.
    Catalogue,
    /// `ok`, `{"echo": args}`.
    Echo(Value),
    /// `ok` with the `demo.counter` snapshot; its updates come with the bumps (at least one:
    /// the client bumps the counter after subscribing).
    Subscribe(String),
    /// `ok` without a result: `demo.counter` `bump` (as the reference answers it).
    Bump,
    /// `ok` `{"ok": true}`: a Session call.
    SessionOk,
    /// `ok`.
    Unsubscribe,
    /// `ok`, after an `attachment` to this session published since the request was sent (none
    /// when it was attached already: `again`).
    Attach { session: &'static str, routes_before: u64, again: bool },
    /// `session_not_found`.
    AttachUnknown,
    /// `ok` (`null`), after an `attachment: null`.
    Detach,
    /// `ok` with `waitedMs`, or `cancelled` when a cancel was sent.
    Wait { ms: u64, cancelled: bool },
    /// `session_not_attached`: a session call on a route that is no longer current.
    Stale,
    /// `wrong_server`.
    WrongServer,
}

impl Expect {
    /// Whether the server may leave it unanswered when the connection ends (held calls are
    /// settled without an answer once a connection closes).
    pub fn is_held(&self) -> bool {
        matches!(self, Expect::Wait { .. })
    }
}

/// A client's record of its connection.
#[derive(Debug)]
pub struct Ledger {
    /// Unique among every client of the run.
    pub token: u64,
    seq: u64,
    pub server_id: ServerId,
    pub ready: bool,
    /// The client broke the protocol on purpose: the server's `hello_error` saying so (the
    /// reference server's rule) is expected before the close.
    pub refusal_expected: bool,
    /// Requests sent and not answered: sequence number -> expectation, target, send time.
    pub outstanding: HashMap<u64, (Expect, RpcTarget, Instant)>,
    pub answered: u64,
    /// Updates received per subscription of this client.
    pub updates: HashMap<String, u32>,
    /// The current route, and how many `attachment` messages arrived.
    pub route: Option<SessionTarget>,
    pub routes_seen: u64,
    /// Routes that were current once and are not any more.
    pub old_routes: Vec<SessionTarget>,
    attachment_ids: HashSet<String>,
    pub errors: Vec<String>,
}

impl Ledger {
    pub fn new(token: u64) -> Self {
        Ledger {
            token,
            seq: 0,
            server_id: ServerId::new(SERVER_ID).unwrap(),
            ready: false,
            refusal_expected: false,
            outstanding: HashMap::new(),
            answered: 0,
            updates: HashMap::new(),
            route: None,
            routes_seen: 0,
            old_routes: Vec::new(),
            attachment_ids: HashSet::new(),
            errors: Vec::new(),
        }
    }

    fn fail(&mut self, message: String) {
        if self.errors.len() < 8 {
            self.errors.push(format!("client {}: {message}", self.token));
        }
    }

    /// The target of a server call.
    pub fn server_target(&self) -> RpcTarget {
        RpcTarget::Server(ServerTarget::new(self.server_id.clone()))
    }

    /// A request to `target` with `call`, recorded with what its answer must be; its id is
    /// `<token>-<sequence>`.
    pub fn request(&mut self, target: RpcTarget, call: Value, expect: Expect) -> (ClientMessage, u64) {
        self.seq += 1;
        let id = RequestId::new(format!("{}-{}", self.token, self.seq)).unwrap();
        let message = ClientMessage::Request(Request::new(id, target.clone(), Payload::from_value(&call).unwrap()));
        self.outstanding.insert(self.seq, (expect, target, Instant::now()));
        (message, self.seq)
    }

    /// The cancel of request `seq` (with its target), marking its wait cancelled.
    pub fn cancel(&mut self, seq: u64) -> Option<ClientMessage> {
        let (expect, target, _) = self.outstanding.get_mut(&seq)?;
        if let Expect::Wait { cancelled, .. } = expect {
            *cancelled = true;
        }
        let id = RequestId::new(format!("{}-{}", self.token, seq)).unwrap();
        Some(ClientMessage::Cancel(Cancel::new(id, target.clone())))
    }

    /// The sequence number of id `<token>-<seq>`, or `None` for an id of another client.
    fn own_seq(&self, id: &str) -> Option<u64> {
        let (token, seq) = id.split_once('-')?;
        (token.parse() == Ok(self.token)).then(|| seq.parse().ok())?
    }

    /// Checks one message from the server; returns the latency of a response.
    pub fn receive(&mut self, message: ServerMessage) -> Option<std::time::Duration> {
        match message {
            ServerMessage::HelloError(refusal) if self.ready && self.refusal_expected => {
                if refusal.error.code.as_str() != "invalid_request" {
                    self.fail(format!("refused with {}", refusal.error.code.as_str()));
                }
                None
            }
            ServerMessage::Hello(hello) if !self.ready => {
                self.ready = true;
                if hello.server_id != self.server_id {
                    self.fail(format!("hello names {}", hello.server_id));
                }
                None
            }
            ServerMessage::Response(response) => self.response(response),
            ServerMessage::ServiceUpdate(update) => {
                let id = update.subscription_id.to_string();
                match self.updates.get_mut(&id) {
                    Some(count) => *count += 1,
                    None => self.fail(format!("an update of subscription {id}, which is not this client's")),
                }
                None
            }
            ServerMessage::Attachment(attachment) => {
                self.routes_seen += 1;
                if let Some(route) = &attachment.attachment {
                    self.check_route(route);
                }
                if let Some(old) = std::mem::replace(&mut self.route, attachment.attachment) {
                    self.old_routes.push(old);
                }
                None
            }
            other => {
                self.fail(format!("unexpected {}", other.to_json()));
                None
            }
        }
    }

    fn check_route(&mut self, route: &SessionTarget) {
        // Attachment ids are random UUIDs (as the reference server's): each is published once.
        let id = route.attachment_id.to_string();
        if route.server_id != self.server_id {
            self.fail(format!("a route of server {}", route.server_id));
        }
        if !self.attachment_ids.insert(id.clone()) {
            self.fail(format!("attachment id {id} published twice"));
        }
    }

    fn response(&mut self, response: Response) -> Option<std::time::Duration> {
        let (id, result) = match response {
            Response::Success(success) => (success.id, Ok(success.result)),
            Response::Failure(failure) => (failure.id, Err(failure.error.code.to_string())),
            other => {
                self.fail(format!("a response of an unknown shape: {other:?}"));
                return None;
            }
        };
        let Some(seq) = self.own_seq(id.as_str()) else {
            self.fail(format!("a response to {id}, which is not this client's"));
            return None;
        };
        let Some((expect, _, sent)) = self.outstanding.remove(&seq) else {
            self.fail(format!("a second response to {id}, or one never asked for"));
            return None;
        };
        self.answered += 1;
        let value = result.map(|r| r.map(|p| p.to_value()));
        let verdict = match (&expect, &value) {
            (Expect::Catalogue, Ok(Some(Value::Array(services)))) if services.len() == 3 => Ok(()),
            (Expect::Echo(args), Ok(Some(result))) if *result == json!({"echo": args}) => Ok(()),
            (Expect::Subscribe(_), Ok(Some(result))) if result["serviceId"] == "demo.counter" => Ok(()),
            (Expect::Bump, Ok(None)) => Ok(()),
            (Expect::SessionOk, Ok(Some(result))) if *result == json!({"ok": true}) => Ok(()),
            (Expect::Unsubscribe, Ok(_)) => Ok(()),
            (Expect::Attach { session, routes_before, again }, Ok(_)) => match &self.route {
                Some(route)
                    if route.session_id.as_str() == *session && (*again || self.routes_seen > *routes_before) =>
                {
                    Ok(())
                }
                route => Err(format!("attach to {session} answered while the route is {route:?}")),
            },
            (Expect::AttachUnknown, Err(code)) if code == "session_not_found" => Ok(()),
            (Expect::Detach, Ok(None | Some(Value::Null))) if self.route.is_none() => Ok(()),
            (Expect::Wait { ms, .. }, Ok(Some(result))) if result["waitedMs"] == json!(ms) => Ok(()),
            (Expect::Wait { cancelled: true, .. }, Err(code)) if code == "cancelled" => Ok(()),
            (Expect::Stale, Err(code)) if code == "session_not_attached" => Ok(()),
            (Expect::WrongServer, Err(code)) if code == "wrong_server" => Ok(()),
            _ => Err(format!("{id} expected {expect:?}, got {value:?}")),
        };
        if let Err(message) = verdict {
            self.fail(message);
        }
        Some(sent.elapsed())
    }

    /// Checks, at a moment when every request is answered, that each subscription got at least
    /// the update of the client's own bump.
    pub fn check_updates(&mut self) {
        let short: Vec<String> =
            self.updates.iter().filter(|(_, n)| **n == 0).map(|(id, n)| format!("{id}: {n} updates")).collect();
        for message in short {
            self.fail(message);
        }
    }

    /// Requests still unanswered that the server had to answer (not held calls).
    pub fn unanswered_calls(&self) -> usize {
        self.outstanding.values().filter(|(expect, _, _)| !expect.is_held()).count()
    }
}
