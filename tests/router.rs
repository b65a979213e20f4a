//! The coordinator (`pi_protocol::connection::Router`): one test per rule of its module docs
//! (rule numbers in the test names), the zero-copy forwarding of payloads, then a property test
//! driving many clients and server connections through it in random interleavings.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use pi_protocol::connection::{
    CallEffect, CallInspector, ClientKey, CloseReason, Deadline, FenceReason, Refusal, Router, RouterEvent,
    RouterOptions, ServerConnection, ServerEvent, ServerOptions, Transmit, UpstreamKey, Violation,
};
use pi_protocol::{
    encode_client_message, Attachment, AttachmentId, Cancel, ClientHello, ClientMessage, ErrorBody, ErrorCode,
    ErrorResponse, Payload, Request, RequestId, Response, RpcTarget, ServerHello, ServerHelloError, ServerId,
    ServerMessage, ServerMessageDecoder, ServerTarget, ServiceUpdate, SessionId, SessionTarget, SubscriptionId,
    SuccessResponse,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{json, Value};

const A: &str = "3b241101-e2bb-4255-8caf-4136c566a962";
const B: &str = "9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f";
const UNKNOWN: &str = "c56a4180-65aa-42ec-a945-5fd21dec0538";

// ---- Values and envelopes, built in one place.

fn sid(server: &str) -> ServerId {
    ServerId::new(server).unwrap()
}

fn rid(id: &str) -> RequestId {
    RequestId::new(id).unwrap()
}

fn sub(id: &str) -> SubscriptionId {
    SubscriptionId::new(id).unwrap()
}

fn server_target(server: &str) -> RpcTarget {
    RpcTarget::Server(ServerTarget::new(sid(server)))
}

fn route(server: &str, attachment: &str) -> SessionTarget {
    SessionTarget::new(sid(server), SessionId::new("s-1").unwrap(), AttachmentId::new(attachment).unwrap())
}

fn payload(value: Value) -> Payload {
    Payload::from_value(&value).unwrap()
}

fn call(member: &str, args: Value) -> Payload {
    payload(json!({"serviceId": "$chord.service", "member": member, "args": args}))
}

fn error_body(code: &str) -> ErrorBody {
    ErrorBody::new(ErrorCode::new(code).unwrap(), "")
}

fn hello(version: u32) -> ClientMessage {
    ClientMessage::Hello(ClientHello::new(version))
}

fn request(id: &str, target: RpcTarget, call: Payload) -> ClientMessage {
    ClientMessage::Request(Request::new(rid(id), target, call))
}

fn cancel(id: &str, target: RpcTarget) -> ClientMessage {
    ClientMessage::Cancel(Cancel::new(rid(id), target))
}

fn server_hello(server: &str) -> ServerMessage {
    ServerMessage::Hello(ServerHello::new(sid(server)))
}

fn success(id: &str, result: Option<Payload>) -> ServerMessage {
    let mut success = SuccessResponse::new(rid(id));
    success.result = result;
    ServerMessage::Response(Response::Success(success))
}

fn failure(id: &str, error: ErrorBody) -> ServerMessage {
    ServerMessage::Response(Response::Failure(ErrorResponse::new(rid(id), error)))
}

fn update(subscription: &str, value: Payload) -> ServerMessage {
    ServerMessage::ServiceUpdate(ServiceUpdate::new(sub(subscription), value))
}

fn attachment(route: Option<SessionTarget>) -> ServerMessage {
    ServerMessage::Attachment(Attachment::new(route))
}

fn to_client(client: ClientKey, message: ServerMessage) -> Transmit {
    Transmit::ToClient { client, message }
}

fn to_upstream(upstream: UpstreamKey, message: ClientMessage) -> Transmit {
    Transmit::ToUpstream { upstream, message }
}

/// The id and payload of a response, whatever its shape.
fn response_parts(message: &ServerMessage) -> (&RequestId, Result<Option<&Payload>, &ErrorBody>) {
    match message {
        ServerMessage::Response(Response::Success(s)) => (&s.id, Ok(s.result.as_ref())),
        ServerMessage::Response(Response::Failure(f)) => (&f.id, Err(&f.error)),
        other => panic!("expected a response, got {other:?}"),
    }
}

/// The inspector of these tests: `$chord.service` `subscribe` / `unsubscribe` with the
/// subscription id as first argument, and the unsubscribe call to send for a departed client.
struct Chord;

impl CallInspector for Chord {
    fn inspect(&mut self, request: &Request) -> CallEffect {
        let call = request.call.to_value();
        let first = call["args"][0].as_str().and_then(|s| SubscriptionId::new(s).ok());
        match (call["member"].as_str(), first) {
            (Some("subscribe"), Some(id)) => CallEffect::Subscribe(id),
            (Some("unsubscribe"), Some(id)) => CallEffect::Unsubscribe(id),
            _ => CallEffect::Plain,
        }
    }

    fn unsubscribe_call(&mut self, subscription: &SubscriptionId) -> Option<Payload> {
        Some(call("unsubscribe", json!([subscription.as_str()])))
    }
}

/// A router and what it produced.
struct Harness {
    router: Router,
}

impl Harness {
    fn new() -> Self {
        Harness { router: Router::new(sid(A), RouterOptions::default()) }
    }

    fn with(router: Router) -> Self {
        Harness { router }
    }

    /// What the router queued, reported written as a driver would once it wrote them (rule 11).
    fn transmits(&mut self) -> Vec<Transmit> {
        let out = self.unwritten();
        for transmit in &out {
            match transmit {
                Transmit::ToClient { client, .. } => self.router.client_written(*client, transmit.queued_bytes()),
                Transmit::ToUpstream { upstream, .. } => {
                    self.router.upstream_written(*upstream, transmit.queued_bytes())
                }
                _ => {}
            }
        }
        out
    }

    /// What the router queued, taken without reporting it written: a peer that does not read.
    fn unwritten(&mut self) -> Vec<Transmit> {
        std::iter::from_fn(|| self.router.poll_transmit()).collect()
    }

    fn events(&mut self) -> Vec<RouterEvent> {
        std::iter::from_fn(|| self.router.poll_event()).collect()
    }

    /// A shared upstream that announced `server`.
    fn shared(&mut self, server: &str) -> UpstreamKey {
        let upstream = self.router.add_upstream();
        self.router.upstream_message(upstream, server_hello(server));
        self.transmits();
        self.events();
        upstream
    }

    /// A dedicated upstream of `client` that announced `server`.
    fn dedicated(&mut self, client: ClientKey, server: &str) -> UpstreamKey {
        let upstream = self.router.add_dedicated_upstream(client).unwrap();
        self.router.upstream_message(upstream, server_hello(server));
        self.transmits();
        self.events();
        upstream
    }

    /// A client whose handshake completed.
    fn client(&mut self) -> ClientKey {
        let client = self.router.add_client();
        self.router.client_message(client, hello(8));
        self.transmits();
        self.events();
        client
    }

    fn send(&mut self, client: ClientKey, message: ClientMessage) -> Vec<Transmit> {
        self.router.client_message(client, message);
        self.transmits()
    }

    fn receive(&mut self, upstream: UpstreamKey, message: ServerMessage) -> Vec<Transmit> {
        self.router.upstream_message(upstream, message);
        self.transmits()
    }
}

// ---- Keys.

#[test]
fn client_and_upstream_keys_count_up_from_one_and_are_never_reused() {
    let mut h = Harness::new();
    let first = h.router.add_client();
    h.router.disconnect_client(first);
    let second = h.router.add_client();
    assert_eq!((first.get(), second.get()), (1, 2));
    let shared = h.router.add_upstream();
    let dedicated = h.router.add_dedicated_upstream(second).unwrap();
    assert_eq!((shared.get(), dedicated.get()), (1, 2));
    assert_eq!((second.to_string(), dedicated.to_string()), ("client 2".to_owned(), "upstream 2".to_owned()));
}

#[test]
fn the_router_keeps_the_options_it_was_given() {
    let options = RouterOptions::default().max_in_flight(2).request_id_prefix("via-");
    assert_eq!(Router::new(sid(A), options.clone()).options(), &options);
}

#[test]
fn an_upstream_counts_its_requests_in_flight_until_each_is_answered() {
    let mut h = Harness::new();
    let upstream = h.shared(A);
    let client = h.client();
    h.send(client, request("1", server_target(A), Payload::null()));
    h.send(client, request("2", server_target(A), Payload::null()));
    assert_eq!(h.router.upstream_in_flight_len(upstream), 2);
    h.receive(upstream, success("req-1", None));
    assert_eq!(h.router.upstream_in_flight_len(upstream), 1);
}

// ---- Rule 1: the client handshake.

#[test]
fn rule1_client_hello_is_answered_with_the_home_server_id_without_any_upstream() {
    let mut h = Harness::new();
    let client = h.router.add_client();
    assert!(!h.router.is_client_ready(client));
    assert_eq!(h.send(client, hello(8)), vec![to_client(client, server_hello(A))]);
    assert_eq!(h.events(), vec![RouterEvent::ClientReady { client }]);
    assert!(h.router.is_client_ready(client));
}

#[test]
fn rule1_client_offering_another_version_gets_hello_error_and_is_closed() {
    let mut h =
        Harness::with(Router::new(sid(A), RouterOptions::default().unsupported_version(error_body("speak_eight"))));
    let client = h.router.add_client();
    let hello_error = ServerMessage::HelloError(ServerHelloError::new(error_body("speak_eight")));
    assert_eq!(h.send(client, hello(7)), vec![to_client(client, hello_error)]);
    assert_eq!(h.events(), vec![RouterEvent::ClientClosed { client, reason: CloseReason::UnsupportedVersion(7) }]);
    assert_eq!(h.send(client, hello(8)), vec![], "a closed client is ignored");
}

#[test]
fn rule1_first_frame_other_than_hello_or_a_second_hello_closes_the_client() {
    let mut h = Harness::new();
    let upstream = h.shared(A);
    let early = h.router.add_client();
    assert_eq!(h.send(early, request("x", server_target(A), Payload::null())), vec![]);
    let expected = CloseReason::Violation(Violation::ExpectedHello);
    assert_eq!(h.events(), vec![RouterEvent::ClientClosed { client: early, reason: expected }]);

    let twice = h.client();
    assert_eq!(h.send(twice, hello(8)), vec![]);
    let expected = CloseReason::Violation(Violation::UnexpectedHello);
    assert_eq!(h.events(), vec![RouterEvent::ClientClosed { client: twice, reason: expected }]);
    assert_eq!(h.router.upstream_in_flight_len(upstream), 0, "nothing of either reached the upstream");
}

// ---- Rule 2: the upstream handshake.

#[test]
fn rule2_upstream_gets_the_router_hello_and_registers_under_its_announced_server_id() {
    let mut h = Harness::new();
    let upstream = h.router.add_upstream();
    assert_eq!(h.transmits(), vec![to_upstream(upstream, hello(8))]);
    assert_eq!(h.router.upstream_server_id(upstream), None);
    h.router.upstream_message(upstream, server_hello(B));
    assert_eq!(h.events(), vec![RouterEvent::UpstreamReady { upstream, server_id: sid(B), replaced: None }]);
    assert_eq!(h.router.upstream_server_id(upstream), Some(&sid(B)));
    assert_eq!(h.router.shared_upstream(&sid(B)), Some(upstream));
    assert_eq!(h.router.shared_upstream(&sid(A)), None, "the home id is not served by announcing another");
}

#[test]
fn rule2_upstream_hello_error_other_first_frame_or_late_hello_closes_it() {
    let mut h = Harness::new();
    let late = h.shared(A);
    let rejected = h.router.add_upstream();
    let refusal = ServerMessage::HelloError(ServerHelloError::new(error_body("unsupported_version")));
    h.router.upstream_message(rejected, refusal);
    let early = h.router.add_upstream();
    h.router.upstream_message(early, attachment(None));
    h.router.upstream_message(late, server_hello(A));
    h.router.upstream_message(late, success("req-1", None)); // ignored: closed
    assert_eq!(
        h.events(),
        vec![
            RouterEvent::UpstreamClosed {
                upstream: rejected,
                reason: CloseReason::Rejected(error_body("unsupported_version")),
                failed: 0
            },
            RouterEvent::UpstreamClosed {
                upstream: early,
                reason: CloseReason::Violation(Violation::ExpectedHello),
                failed: 0
            },
            RouterEvent::UpstreamClosed {
                upstream: late,
                reason: CloseReason::Violation(Violation::UnexpectedHello),
                failed: 0
            },
        ]
    );
    assert_eq!(h.router.shared_upstream(&sid(A)), None);
}

#[test]
fn rule2_an_upstream_sending_hello_error_after_its_handshake_is_closed() {
    let mut h = Harness::new();
    let upstream = h.shared(A);
    let hello_error = ServerMessage::HelloError(ServerHelloError::new(error_body("late")));
    h.receive(upstream, hello_error);
    let reason = CloseReason::Violation(Violation::UnexpectedHelloError);
    assert_eq!(h.events(), vec![RouterEvent::UpstreamClosed { upstream, reason, failed: 0 }]);
    assert_eq!(h.router.shared_upstream(&sid(A)), None);
}

#[test]
fn rule2_a_new_shared_upstream_takes_over_its_server_id_and_the_old_one_finishes() {
    let mut h = Harness::new();
    let old = h.shared(A);
    let client = h.client();
    h.send(client, request("before", server_target(A), Payload::null()));
    let new = h.router.add_upstream();
    h.router.upstream_message(new, server_hello(A));
    let ready = h.events();
    assert_eq!(ready, vec![RouterEvent::UpstreamReady { upstream: new, server_id: sid(A), replaced: Some(old) }]);
    h.transmits();
    assert_eq!(
        h.send(client, request("after", server_target(A), Payload::null())),
        vec![to_upstream(new, request("req-1", server_target(A), Payload::null()))]
    );
    // The old one still answers what it admitted.
    assert_eq!(h.receive(old, success("req-1", None)), vec![to_client(client, success("before", None))]);
    assert_eq!(h.router.upstream_in_flight_len(old), 0);
}

#[test]
fn rule2_a_dedicated_upstream_serves_only_its_client_ahead_of_the_shared_one() {
    let mut h = Harness::new();
    let shared = h.shared(A);
    let (mine, other) = (h.client(), h.client());
    let dedicated = h.dedicated(mine, A);
    let call = Payload::null();
    assert_eq!(
        h.send(mine, request("m", server_target(A), call.clone())),
        vec![to_upstream(dedicated, request("req-1", server_target(A), call.clone()))]
    );
    assert_eq!(
        h.send(other, request("o", server_target(A), call.clone())),
        vec![to_upstream(shared, request("req-1", server_target(A), call))]
    );
    assert!(h.router.add_dedicated_upstream(mine).is_ok());
    h.router.disconnect_client(other);
    assert!(h.router.add_dedicated_upstream(other).is_err(), "no dedicated upstream for a closed client");
}

#[test]
fn rule9_when_a_dedicated_upstream_departs_its_client_falls_back_to_the_shared_one() {
    let mut h = Harness::new();
    let shared = h.shared(A);
    let client = h.client();
    let dedicated = h.dedicated(client, A);
    h.router.disconnect_upstream(dedicated);
    h.events();
    let call = Payload::null();
    assert_eq!(
        h.send(client, request("m", server_target(A), call.clone())),
        vec![to_upstream(shared, request("req-1", server_target(A), call))]
    );
}

// ---- Rule 3: routing.

#[test]
fn rule3_requests_route_by_target_server_id_session_targets_included() {
    let mut h = Harness::new();
    let (a, b) = (h.shared(A), h.shared(B));
    let client = h.client();
    let session = RpcTarget::Session(route(B, "att-1"));
    let out = h.send(client, request("1", server_target(B), Payload::null()));
    assert_eq!(out, vec![to_upstream(b, request("req-1", server_target(B), Payload::null()))]);
    let out = h.send(client, request("2", session.clone(), Payload::null()));
    assert_eq!(out, vec![to_upstream(b, request("req-2", session, Payload::null()))]);
    let out = h.send(client, request("3", server_target(A), Payload::null()));
    assert_eq!(out, vec![to_upstream(a, request("req-1", server_target(A), Payload::null()))]);
}

#[test]
fn rule3_a_request_for_an_unknown_server_is_answered_by_the_router() {
    let mut h = Harness::new();
    h.shared(A);
    let client = h.client();
    let out = h.send(client, request("lost", server_target(UNKNOWN), Payload::null()));
    let unknown = RouterOptions::default().unknown_server;
    assert_eq!(unknown.code.as_str(), "unknown_server");
    assert_eq!(out, vec![to_client(client, failure("lost", unknown))]);
    assert_eq!(h.events(), vec![RouterEvent::Refused { client, id: rid("lost"), reason: Refusal::UnknownServer }]);
    assert_eq!(h.router.client_pending_len(client), 0);
}

#[test]
fn rule3_a_duplicate_pending_id_and_requests_beyond_the_limit_are_refused() {
    let mut h = Harness::with(Router::new(sid(A), RouterOptions::default().max_in_flight(2)));
    let upstream = h.shared(A);
    let client = h.client();
    h.send(client, request("1", server_target(A), Payload::null()));
    let out = h.send(client, request("1", server_target(A), Payload::null()));
    assert_eq!(out, vec![to_client(client, failure("1", RouterOptions::default().duplicate_id))]);
    h.send(client, request("2", server_target(A), Payload::null()));
    let out = h.send(client, request("3", server_target(A), Payload::null()));
    assert_eq!(out, vec![to_client(client, failure("3", RouterOptions::default().too_many_requests))]);
    let reasons: Vec<Refusal> = h
        .events()
        .into_iter()
        .filter_map(|e| match e {
            RouterEvent::Refused { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, vec![Refusal::DuplicateId, Refusal::TooManyRequests]);
    // Settling one frees both the id and a place.
    h.receive(upstream, success("req-1", None));
    let out = h.send(client, request("1", server_target(A), Payload::null()));
    assert_eq!(out, vec![to_upstream(upstream, request("req-3", server_target(A), Payload::null()))]);
}

#[test]
fn rule3_a_cancel_follows_its_request_once_with_its_target() {
    let mut h = Harness::new();
    let (a, b) = (h.shared(A), h.shared(B));
    let client = h.client();
    h.send(client, request("x", server_target(A), Payload::null()));
    h.send(client, request("y", server_target(B), Payload::null()));
    assert_eq!(h.send(client, cancel("y", server_target(B))), vec![to_upstream(b, cancel("req-1", server_target(B)))]);
    assert_eq!(h.send(client, cancel("y", server_target(B))), vec![], "a second cancel does nothing");
    assert_eq!(h.send(client, cancel("x", server_target(B))), vec![], "a cancel naming another target does nothing");
    assert_eq!(h.send(client, cancel("nope", server_target(A))), vec![], "an unknown id does nothing");
    assert_eq!(h.send(client, cancel("x", server_target(A))), vec![to_upstream(a, cancel("req-1", server_target(A)))]);
    // A cancelled request still settles with its response, then cancelling it does nothing.
    assert_eq!(
        h.receive(b, failure("req-1", error_body("cancelled"))),
        vec![to_client(client, failure("y", error_body("cancelled")))]
    );
    assert_eq!(h.send(client, cancel("y", server_target(B))), vec![]);
}

// ---- Rule 4: request ids.

#[test]
fn rule4_ids_chosen_by_different_clients_never_collide_upstream_and_map_back() {
    let mut h = Harness::with(Router::new(sid(A), RouterOptions::default().request_id_prefix("r")));
    let upstream = h.shared(A);
    let (one, two) = (h.client(), h.client());
    let out_one = h.send(one, request("same", server_target(A), payload(json!(1))));
    let out_two = h.send(two, request("same", server_target(A), payload(json!(2))));
    assert_eq!(out_one, vec![to_upstream(upstream, request("r1", server_target(A), payload(json!(1))))]);
    assert_eq!(out_two, vec![to_upstream(upstream, request("r2", server_target(A), payload(json!(2))))]);
    // Answered in the other order, each under its client's own id.
    assert_eq!(
        h.receive(upstream, success("r2", Some(payload(json!("two"))))),
        vec![to_client(two, success("same", Some(payload(json!("two")))))]
    );
    assert_eq!(
        h.receive(upstream, success("r1", Some(payload(json!("one"))))),
        vec![to_client(one, success("same", Some(payload(json!("one")))))]
    );
}

#[test]
fn rule4_a_response_for_an_id_never_sent_or_settled_closes_the_upstream() {
    let mut h = Harness::new();
    let upstream = h.shared(A);
    let client = h.client();
    h.send(client, request("1", server_target(A), Payload::null()));
    h.send(client, request("2", server_target(A), Payload::null()));
    h.receive(upstream, success("req-1", None));
    let out = h.receive(upstream, success("req-1", None));
    let departed = RouterOptions::default().server_departed;
    assert_eq!(out, vec![to_client(client, failure("2", departed))], "the other pending request fails");
    let reason = CloseReason::Violation(Violation::UnknownResponse(rid("req-1")));
    assert_eq!(h.events(), vec![RouterEvent::UpstreamClosed { upstream, reason, failed: 1 }]);
}

// ---- Rule 5: subscriptions.

#[test]
fn rule5_updates_reach_the_client_the_inspector_names_as_holder() {
    let mut h = Harness::with(Router::new(sid(A), RouterOptions::default()).with_inspector(Chord));
    let upstream = h.shared(A);
    let (holder, other) = (h.client(), h.client());
    h.send(other, request("o", server_target(A), call("catalogue", json!([]))));
    h.send(holder, request("s", server_target(A), call("subscribe", json!(["sub-1"]))));
    // An update may come before the subscribe call is answered.
    let early = update("sub-1", payload(json!({"sequence": 1})));
    assert_eq!(h.receive(upstream, early.clone()), vec![to_client(holder, early)]);
    h.receive(upstream, success("req-2", None));
    let late = update("sub-1", payload(json!({"sequence": 2})));
    assert_eq!(h.receive(upstream, late.clone()), vec![to_client(holder, late)]);
}

#[test]
fn rule5_a_failed_subscribe_or_a_successful_unsubscribe_stops_routing() {
    let mut h = Harness::with(Router::new(sid(A), RouterOptions::default()).with_inspector(Chord));
    let upstream = h.shared(A);
    let client = h.client();
    h.send(client, request("s1", server_target(A), call("subscribe", json!(["sub-1"]))));
    h.receive(upstream, failure("req-1", error_body("bad_arguments")));
    assert_eq!(h.receive(upstream, update("sub-1", Payload::null())), vec![]);
    h.send(client, request("s2", server_target(A), call("subscribe", json!(["sub-2"]))));
    h.receive(upstream, success("req-2", None));
    h.send(client, request("u2", server_target(A), call("unsubscribe", json!(["sub-2"]))));
    let during = update("sub-2", Payload::null());
    assert_eq!(h.receive(upstream, during.clone()), vec![to_client(client, during)], "until the answer");
    h.receive(upstream, success("req-3", None));
    assert_eq!(h.receive(upstream, update("sub-2", Payload::null())), vec![]);
    let unrouted: Vec<SubscriptionId> = h
        .events()
        .into_iter()
        .filter_map(|e| match e {
            RouterEvent::UnroutedUpdate { subscription_id, .. } => Some(subscription_id),
            _ => None,
        })
        .collect();
    assert_eq!(unrouted, vec![sub("sub-1"), sub("sub-2")]);
}

#[test]
fn rule5_a_subscription_id_held_by_another_client_and_too_many_are_refused() {
    let router = Router::new(sid(A), RouterOptions::default().max_subscriptions(1)).with_inspector(Chord);
    let mut h = Harness::with(router);
    let (a, b) = (h.shared(A), h.shared(B));
    let (one, two) = (h.client(), h.client());
    h.send(one, request("1", server_target(A), call("subscribe", json!(["sub-x"]))));
    let out = h.send(two, request("2", server_target(A), call("subscribe", json!(["sub-x"]))));
    assert_eq!(out, vec![to_client(two, failure("2", RouterOptions::default().subscription_in_use))]);
    // The same id on another upstream is another subscription.
    let out = h.send(two, request("3", server_target(B), call("subscribe", json!(["sub-x"]))));
    assert_eq!(out, vec![to_upstream(b, request("req-1", server_target(B), call("subscribe", json!(["sub-x"]))))]);
    let out = h.send(two, request("4", server_target(A), call("subscribe", json!(["sub-y"]))));
    assert_eq!(out, vec![to_client(two, failure("4", RouterOptions::default().too_many_subscriptions))]);
    // Its holder subscribing again is the server's business.
    let again = h.send(one, request("5", server_target(A), call("subscribe", json!(["sub-x"]))));
    assert_eq!(again, vec![to_upstream(a, request("req-2", server_target(A), call("subscribe", json!(["sub-x"]))))]);
}

#[test]
fn rule5_closing_a_subscription_another_client_holds_is_refused() {
    let mut h = Harness::with(Router::new(sid(A), RouterOptions::default()).with_inspector(Chord));
    let upstream = h.shared(A);
    let (holder, other) = (h.client(), h.client());
    h.send(holder, request("s", server_target(A), call("subscribe", json!(["sub-x"]))));
    let out = h.send(other, request("u", server_target(A), call("unsubscribe", json!(["sub-x"]))));
    assert_eq!(out, vec![to_client(other, failure("u", RouterOptions::default().subscription_in_use))]);
    let news = update("sub-x", Payload::null());
    assert_eq!(h.receive(upstream, news.clone()), vec![to_client(holder, news)]);
}

#[test]
fn rule5_a_refused_unsubscribe_leaves_the_subscription_with_its_client() {
    let mut h = Harness::with(Router::new(sid(A), RouterOptions::default()).with_inspector(Chord));
    let upstream = h.shared(A);
    let client = h.client();
    h.send(client, request("s", server_target(A), call("subscribe", json!(["sub-1"]))));
    h.receive(upstream, success("req-1", None));
    h.send(client, request("u", server_target(A), call("unsubscribe", json!(["sub-1"]))));
    h.receive(upstream, failure("req-2", error_body("no_such_subscription")));
    let news = update("sub-1", Payload::null());
    assert_eq!(h.receive(upstream, news.clone()), vec![to_client(client, news)]);
}

/// Found by the property test `every_request_is_answered_once_to_its_own_client` (its saved
/// case in tests/router.proptest-regressions): the answer to an `unsubscribe` forwarded
/// before a `subscribe` of the same id freed the newer subscription, so another client could
/// take the id and receive the first one's updates.
#[test]
fn rule5_an_answer_to_an_unsubscribe_sent_before_a_resubscribe_keeps_the_subscription() {
    let mut h = Harness::with(Router::new(sid(A), RouterOptions::default()).with_inspector(Chord));
    let upstream = h.shared(A);
    let (first, second) = (h.client(), h.client());
    // An unsubscribe of an id it does not hold yet, then a subscribe of it.
    h.send(first, request("u0", server_target(A), call("unsubscribe", json!(["sub-1"]))));
    h.send(first, request("s1", server_target(A), call("subscribe", json!(["sub-1"]))));
    h.receive(upstream, success("req-1", None));
    // A held id, unsubscribed and subscribed again before the unsubscribe's answer.
    h.send(first, request("s2", server_target(A), call("subscribe", json!(["sub-2"]))));
    h.receive(upstream, success("req-2", None));
    h.receive(upstream, success("req-3", None));
    h.send(first, request("u2", server_target(A), call("unsubscribe", json!(["sub-2"]))));
    h.send(first, request("s3", server_target(A), call("subscribe", json!(["sub-2"]))));
    h.receive(upstream, success("req-4", None));
    for (n, id) in ["sub-1", "sub-2"].into_iter().enumerate() {
        let out = h.send(second, request(&format!("t{n}"), server_target(A), call("subscribe", json!([id]))));
        let in_use = failure(&format!("t{n}"), RouterOptions::default().subscription_in_use);
        assert_eq!(out, vec![to_client(second, in_use)], "{id} is still the first client's");
        let news = update(id, Payload::null());
        assert_eq!(h.receive(upstream, news.clone()), vec![to_client(first, news)], "{id}'s updates");
    }
}

#[test]
fn rule5_without_an_inspector_updates_of_a_shared_upstream_are_unrouted() {
    let mut h = Harness::new();
    let upstream = h.shared(A);
    let client = h.client();
    h.send(client, request("s", server_target(A), call("subscribe", json!(["sub-1"]))));
    assert_eq!(h.receive(upstream, update("sub-1", Payload::null())), vec![]);
    assert_eq!(h.events(), vec![RouterEvent::UnroutedUpdate { upstream, subscription_id: sub("sub-1") }]);
}

#[test]
fn rule5_and_6_a_dedicated_upstream_sends_its_updates_and_routes_to_its_client_at_once() {
    let mut h = Harness::new();
    h.shared(A);
    let (owner, other) = (h.client(), h.client());
    let dedicated = h.dedicated(owner, A);
    h.send(other, request("o", server_target(A), Payload::null()));
    let news = update("anything", Payload::null());
    assert_eq!(h.receive(dedicated, news.clone()), vec![to_client(owner, news)]);
    let published = attachment(Some(route(A, "att-d")));
    assert_eq!(h.receive(dedicated, published.clone()), vec![to_client(owner, published)]);
}

// ---- Rule 6: attachments.

#[test]
fn rule6_an_attachment_goes_to_the_client_whose_response_follows_it_attachment_first() {
    let mut h = Harness::new();
    let upstream = h.shared(A);
    let (one, two) = (h.client(), h.client());
    h.send(one, request("echo", server_target(A), Payload::null()));
    h.send(two, request("attach", server_target(A), call("attach", json!(["s-1"]))));
    let published = attachment(Some(route(A, "att-2")));
    assert_eq!(h.receive(upstream, published.clone()), vec![], "held until the next response");
    assert_eq!(
        h.receive(upstream, success("req-2", None)),
        vec![to_client(two, published), to_client(two, success("attach", None))]
    );
    assert_eq!(h.receive(upstream, success("req-1", None)), vec![to_client(one, success("echo", None))]);
    // A detach clears the route the same way.
    h.send(two, request("detach", server_target(A), call("detach", json!(["s-1"]))));
    h.receive(upstream, attachment(None));
    assert_eq!(
        h.receive(upstream, success("req-3", None)),
        vec![to_client(two, attachment(None)), to_client(two, success("detach", None))]
    );
    h.router.disconnect_client(two);
    assert!(!h.events().iter().any(|e| matches!(e, RouterEvent::Release { .. })), "a cleared route is not released");
}

// ---- Rule 7: client departure.

#[test]
fn rule7_a_departing_client_cancels_what_is_pending_and_its_late_answers_are_dropped() {
    let mut h = Harness::new();
    let upstream = h.shared(A);
    let (leaving, staying) = (h.client(), h.client());
    let session = RpcTarget::Session(route(A, "att-1"));
    h.send(leaving, request("1", server_target(A), Payload::null()));
    h.send(leaving, request("2", session.clone(), Payload::null()));
    h.send(leaving, cancel("2", session.clone()));
    h.send(staying, request("1", server_target(A), Payload::null()));
    h.router.disconnect_client(leaving);
    assert_eq!(h.transmits(), vec![to_upstream(upstream, cancel("req-1", server_target(A)))], "req-2 had its cancel");
    assert_eq!(h.events(), vec![RouterEvent::ClientClosed { client: leaving, reason: CloseReason::Local }]);
    assert_eq!(h.receive(upstream, failure("req-1", error_body("cancelled"))), vec![]);
    assert_eq!(h.receive(upstream, success("req-2", None)), vec![]);
    assert_eq!(h.receive(upstream, success("req-3", None)), vec![to_client(staying, success("1", None))]);
    assert_eq!(h.router.client_pending_len(leaving), 0);
    assert!(h.events().is_empty(), "answers to a departed client are not violations");
}

#[test]
fn rule7_a_departing_client_route_is_released_once_its_calls_there_settled() {
    let mut h = Harness::new();
    let (a, b) = (h.shared(A), h.shared(B));
    let client = h.client();
    h.send(client, request("attach", server_target(A), call("attach", json!(["s-1"]))));
    h.receive(a, attachment(Some(route(A, "att-1"))));
    h.receive(a, success("req-1", None));
    h.send(client, request("slow", RpcTarget::Session(route(A, "att-1")), Payload::null()));
    h.send(client, request("elsewhere", server_target(B), Payload::null()));
    h.router.disconnect_client(client);
    h.transmits();
    assert_eq!(h.events(), vec![RouterEvent::ClientClosed { client, reason: CloseReason::Local }]);
    h.receive(a, failure("req-2", error_body("cancelled")));
    assert_eq!(
        h.events(),
        vec![RouterEvent::Release { upstream: a, route: route(A, "att-1") }],
        "B's call does not hold A's route"
    );
    h.receive(b, success("req-1", None));
    assert!(h.events().is_empty());
}

#[test]
fn rule7_a_departing_client_with_nothing_pending_has_its_route_released_at_once() {
    let mut h = Harness::new();
    let (a, b) = (h.shared(A), h.shared(B));
    let (holder, other) = (h.client(), h.client());
    h.send(other, request("attach", server_target(B), call("attach", json!(["s-2"]))));
    h.receive(b, attachment(Some(route(B, "att-2"))));
    h.receive(b, success("req-1", None));
    h.send(holder, request("attach", server_target(A), call("attach", json!(["s-1"]))));
    h.receive(a, attachment(Some(route(A, "att-1"))));
    h.receive(a, success("req-1", None));
    h.transmits();
    h.events();
    h.router.disconnect_client(holder);
    assert_eq!(
        h.events(),
        vec![
            RouterEvent::ClientClosed { client: holder, reason: CloseReason::Local },
            RouterEvent::Release { upstream: a, route: route(A, "att-1") },
        ],
        "only the departing client's own route, and at once"
    );
}

#[test]
fn rule7_an_attach_answered_after_its_client_left_is_released_at_once() {
    let mut h = Harness::new();
    let upstream = h.shared(A);
    let client = h.client();
    h.send(client, request("attach", server_target(A), call("attach", json!(["s-1"]))));
    h.router.disconnect_client(client);
    h.transmits();
    h.events();
    h.receive(upstream, attachment(Some(route(A, "att-9"))));
    assert_eq!(h.receive(upstream, success("req-1", None)), vec![]);
    assert_eq!(h.events(), vec![RouterEvent::Release { upstream, route: route(A, "att-9") }]);
}

#[test]
fn rule7_a_departing_client_closes_its_dedicated_upstreams() {
    let mut h = Harness::new();
    let client = h.client();
    let (a, b) = (h.dedicated(client, A), h.dedicated(client, B));
    h.send(client, request("1", server_target(A), Payload::null()));
    h.router.disconnect_client(client);
    assert_eq!(h.transmits(), vec![], "no cancels: the server settles a closed connection itself");
    assert_eq!(
        h.events(),
        vec![
            RouterEvent::ClientClosed { client, reason: CloseReason::Local },
            RouterEvent::UpstreamClosed { upstream: a, reason: CloseReason::Local, failed: 0 },
            RouterEvent::UpstreamClosed { upstream: b, reason: CloseReason::Local, failed: 0 },
        ]
    );
    assert_eq!(h.router.upstream_server_id(a), None);
}

#[test]
fn rule9_a_dedicated_upstream_that_departs_leaves_its_client_the_others() {
    let mut h = Harness::new();
    let client = h.client();
    let (a, b) = (h.dedicated(client, A), h.dedicated(client, B));
    h.router.disconnect_upstream(a);
    h.events();
    // The client still reaches B through its own upstream, and B closes with the client.
    h.send(client, request("1", server_target(B), Payload::null()));
    assert_eq!(h.router.upstream_in_flight_len(b), 1);
    h.router.disconnect_client(client);
    assert_eq!(
        h.events(),
        vec![
            RouterEvent::ClientClosed { client, reason: CloseReason::Local },
            RouterEvent::UpstreamClosed { upstream: b, reason: CloseReason::Local, failed: 0 },
        ]
    );
}

/// A router with `inspector`, one shared upstream on which a client subscribed to `sub-1` and
/// then left, and another client.
fn departed_subscriber(inspector: impl CallInspector + 'static) -> (Harness, UpstreamKey, ClientKey) {
    let mut h = Harness::with(Router::new(sid(A), RouterOptions::default()).with_inspector(inspector));
    let upstream = h.shared(A);
    let (leaving, next) = (h.client(), h.client());
    h.send(leaving, request("s", server_target(A), call("subscribe", json!(["sub-1"]))));
    h.receive(upstream, success("req-1", None));
    h.router.disconnect_client(leaving);
    (h, upstream, next)
}

#[test]
fn rule7_a_departed_holder_subscription_is_unsubscribed_and_reserved_until_answered() {
    let (mut h, upstream, next) = departed_subscriber(Chord);
    let unsubscribe = request("req-2", server_target(A), call("unsubscribe", json!(["sub-1"])));
    assert_eq!(h.transmits(), vec![to_upstream(upstream, unsubscribe)]);
    let out = h.send(next, request("n", server_target(A), call("subscribe", json!(["sub-1"]))));
    assert_eq!(out, vec![to_client(next, failure("n", RouterOptions::default().subscription_in_use))]);
    assert_eq!(h.receive(upstream, update("sub-1", Payload::null())), vec![], "still the old stream");
    assert_eq!(h.receive(upstream, success("req-2", None)), vec![], "the answer is dropped");
    let out = h.send(next, request("n2", server_target(A), call("subscribe", json!(["sub-1"]))));
    assert_eq!(
        out,
        vec![to_upstream(upstream, request("req-3", server_target(A), call("subscribe", json!(["sub-1"]))))]
    );
}

#[test]
fn rule7_any_answer_to_an_unsubscribe_on_behalf_frees_the_id_and_a_late_route_is_released() {
    let (mut h, upstream, next) = departed_subscriber(Chord);
    h.transmits();
    h.events();
    // A route published just before that answer is the departed client's: released at once.
    h.receive(upstream, attachment(Some(route(A, "att-late"))));
    assert_eq!(h.receive(upstream, failure("req-2", error_body("not_found"))), vec![]);
    assert_eq!(h.events(), vec![RouterEvent::Release { upstream, route: route(A, "att-late") }]);
    let out = h.send(next, request("n", server_target(A), call("subscribe", json!(["sub-1"]))));
    assert_eq!(
        out,
        vec![to_upstream(upstream, request("req-3", server_target(A), call("subscribe", json!(["sub-1"]))))]
    );
}

#[test]
fn rule7_without_an_unsubscribe_call_a_departed_holder_subscription_is_freed_at_once() {
    let (mut h, upstream, next) = departed_subscriber(|request: &Request| Chord.inspect(request));
    assert_eq!(h.transmits(), vec![]);
    let out = h.send(next, request("n", server_target(A), call("subscribe", json!(["sub-1"]))));
    assert_eq!(
        out,
        vec![to_upstream(upstream, request("req-2", server_target(A), call("subscribe", json!(["sub-1"]))))]
    );
}

// ---- Rule 9: upstream departure.

#[test]
fn rule9_a_departing_upstream_fails_its_pending_requests_and_stops_serving_its_id() {
    let mut h = Harness::new();
    let (a, b) = (h.shared(A), h.shared(B));
    let (one, two) = (h.client(), h.client());
    h.send(one, request("x", server_target(A), Payload::null()));
    h.send(two, request("y", server_target(A), Payload::null()));
    h.send(two, request("z", server_target(B), Payload::null()));
    h.router.disconnect_upstream(a);
    let departed = RouterOptions::default().server_departed;
    assert_eq!(departed.code.as_str(), "server_departed");
    assert_eq!(
        h.transmits(),
        vec![to_client(one, failure("x", departed.clone())), to_client(two, failure("y", departed))]
    );
    assert_eq!(h.events(), vec![RouterEvent::UpstreamClosed { upstream: a, reason: CloseReason::Local, failed: 2 }]);
    let out = h.send(one, request("again", server_target(A), Payload::null()));
    assert_eq!(out, vec![to_client(one, failure("again", RouterOptions::default().unknown_server))]);
    assert_eq!(h.receive(b, success("req-1", None)), vec![to_client(two, success("z", None))]);
    assert_eq!(h.receive(a, success("req-1", None)), vec![], "a closed upstream is ignored");
}

// ---- Rule 10: deadlines, on the router's clock.

fn closed_client(events: &[RouterEvent]) -> Vec<(ClientKey, CloseReason)> {
    events
        .iter()
        .filter_map(|e| match e {
            RouterEvent::ClientClosed { client, reason } => Some((*client, reason.clone())),
            _ => None,
        })
        .collect()
}

fn closed_upstream(events: &[RouterEvent]) -> Vec<(UpstreamKey, CloseReason, usize)> {
    events
        .iter()
        .filter_map(|e| match e {
            RouterEvent::UpstreamClosed { upstream, reason, failed } => Some((*upstream, reason.clone(), *failed)),
            _ => None,
        })
        .collect()
}

/// A harness whose router's clock is set to the instant returned.
fn timed(options: RouterOptions) -> (Harness, Instant) {
    let mut h = Harness::with(Router::new(sid(A), options));
    let t0 = Instant::now();
    h.router.handle_timeout(t0);
    (h, t0)
}

#[test]
fn rule10_a_client_without_hello_gets_hello_error_handshake_timeout_at_the_deadline_and_is_closed() {
    let (mut h, t0) = timed(RouterOptions::default());
    let silent = h.router.add_client();
    let greeted = h.router.add_client();
    assert_eq!(h.router.poll_timeout(), Some(t0 + Duration::from_secs(5)));
    h.router.handle_timeout(t0 + Duration::from_millis(100));
    h.send(greeted, hello(8));
    h.events();
    h.router.handle_timeout(t0 + Duration::from_millis(4999));
    assert!(h.transmits().is_empty() && h.events().is_empty(), "nothing before the deadline");
    h.router.handle_timeout(t0 + Duration::from_secs(5));
    let error = ErrorBody::new(ErrorCode::new("invalid_request").unwrap(), "Handshake timeout");
    assert_eq!(h.transmits(), vec![to_client(silent, ServerMessage::HelloError(ServerHelloError::new(error)))]);
    assert_eq!(closed_client(&h.events()), vec![(silent, CloseReason::Timeout(Deadline::Handshake))]);
    assert!(h.router.is_client_ready(greeted), "a client that said hello in time is untouched");
    assert!(!CloseReason::Timeout(Deadline::Handshake).peer_not_reading(), "the hello_error is written");
}

#[test]
fn rule10_an_upstream_that_does_not_answer_the_router_hello_in_time_is_closed() {
    let (mut h, t0) = timed(RouterOptions::default().upstream_handshake_timeout(Duration::from_secs(2)));
    let slow = h.router.add_upstream();
    let quick = h.router.add_upstream();
    h.router.upstream_message(quick, server_hello(B));
    h.transmits();
    h.events();
    h.router.handle_timeout(t0 + Duration::from_secs(2));
    assert_eq!(closed_upstream(&h.events()), vec![(slow, CloseReason::Timeout(Deadline::Handshake), 0)]);
    assert_eq!(h.router.upstream_server_id(quick), Some(&sid(B)));
}

#[test]
fn rule10_a_peer_that_reads_nothing_for_the_write_timeout_is_closed_and_progress_keeps_it_open() {
    let options = RouterOptions::default().write_timeout(Duration::from_secs(10));
    let (mut h, t0) = timed(options);
    let upstream = h.shared(A);
    let reading = h.client();
    let stuck = h.client();
    for client in [reading, stuck] {
        for transmit in h.send(client, request("1", server_target(A), Payload::null())) {
            h.router.upstream_written(upstream, transmit.queued_bytes());
        }
    }
    h.router.upstream_message(upstream, success("req-1", None));
    h.router.upstream_message(upstream, success("req-2", None));
    assert_eq!(h.unwritten().len(), 2);
    assert!(h.router.client_queued_bytes(stuck) > 0);
    // The reading client writes half of it at 6 s, the rest at 12 s; the stuck one never.
    h.router.handle_timeout(t0 + Duration::from_secs(6));
    h.router.client_written(reading, 10);
    h.router.handle_timeout(t0 + Duration::from_secs(10));
    assert_eq!(closed_client(&h.events()), vec![(stuck, CloseReason::Timeout(Deadline::Write))]);
    assert_eq!(h.router.client_queued_bytes(stuck), 0, "its queue left the budget");
    h.router.handle_timeout(t0 + Duration::from_secs(15));
    assert!(h.router.is_client_ready(reading), "progress at 6 s moved its deadline to 16 s");
    h.router.handle_timeout(t0 + Duration::from_secs(16));
    assert_eq!(closed_client(&h.events()), vec![(reading, CloseReason::Timeout(Deadline::Write))]);
    assert!(CloseReason::Timeout(Deadline::Write).peer_not_reading());
    assert_eq!(h.router.total_queued_bytes(), 0);
}

#[test]
fn rule10_an_idle_client_is_closed_unless_a_call_is_pending() {
    let (mut h, t0) = timed(RouterOptions::default().idle_timeout(Some(Duration::from_secs(30))));
    let upstream = h.shared(A);
    let idle = h.client();
    let waiting = h.client();
    h.send(waiting, request("1", server_target(A), Payload::null()));
    h.events();
    h.router.handle_timeout(t0 + Duration::from_secs(29));
    assert!(h.events().is_empty());
    h.router.handle_timeout(t0 + Duration::from_secs(30));
    assert_eq!(closed_client(&h.events()), vec![(idle, CloseReason::Timeout(Deadline::Idle))]);
    h.router.handle_timeout(t0 + Duration::from_secs(100));
    assert!(h.events().is_empty(), "a client waiting for an answer is not idle");
    h.receive(upstream, success("req-1", None));
    h.router.handle_timeout(t0 + Duration::from_secs(129));
    assert!(h.events().is_empty());
    h.router.handle_timeout(t0 + Duration::from_secs(130));
    assert_eq!(closed_client(&h.events()), vec![(waiting, CloseReason::Timeout(Deadline::Idle))]);
    let (mut h, t0) = timed(RouterOptions::default());
    h.client();
    h.router.handle_timeout(t0 + Duration::from_secs(3600));
    assert!(h.events().is_empty(), "no idle timeout by default");
}

// ---- Rule 11: byte budgets.

fn blob(bytes: usize) -> Payload {
    payload(json!("x".repeat(bytes)))
}

#[test]
fn rule11_a_client_past_its_queue_budget_is_closed_at_once_and_its_queue_dropped() {
    let (mut h, _) = timed(RouterOptions::default().max_client_queue_bytes(2000));
    let upstream = h.shared(A);
    let client = h.client();
    let other = h.client();
    for id in ["1", "2", "3"] {
        h.send(client, request(id, server_target(A), Payload::null()));
    }
    h.send(other, request("1", server_target(A), Payload::null()));
    h.router.upstream_written(upstream, usize::MAX);
    // Two answers of 900 bytes fit, the third does not: the client is closed, nothing of it
    // stays queued in the router, and its answers after that are dropped.
    h.router.upstream_message(upstream, success("req-1", Some(blob(900))));
    h.router.upstream_message(upstream, success("req-2", Some(blob(900))));
    assert!(h.router.client_queued_bytes(client) > 1800);
    h.router.upstream_message(upstream, success("req-3", Some(blob(900))));
    h.router.upstream_message(upstream, success("req-4", Some(blob(900))));
    let out = h.unwritten();
    assert!(out.iter().all(|t| !matches!(t, Transmit::ToClient { client: to, .. } if *to == client)), "{out:?}");
    assert_eq!(out.len(), 1, "the other client's answer: {out:?}");
    let events = h.events();
    assert_eq!(closed_client(&events), vec![(client, CloseReason::TransmitQueueFull { limit: 2000 })]);
    assert!(CloseReason::TransmitQueueFull { limit: 2000 }.peer_not_reading());
    assert_eq!(h.router.client_queued_bytes(client), 0);
    assert_eq!(h.router.total_queued_bytes(), out[0].queued_bytes());
}

#[test]
fn rule11_a_connection_past_its_driver_s_budget_is_closed_and_its_queue_dropped() {
    let (mut h, _) = timed(RouterOptions::default());
    let upstream = h.shared(A);
    let (client, other) = (h.client(), h.client());
    h.send(client, request("1", server_target(A), Payload::null()));
    h.send(other, request("1", server_target(A), Payload::null()));
    h.router.upstream_message(upstream, success("req-1", Some(blob(100))));
    h.router.upstream_message(upstream, success("req-2", Some(blob(100))));
    let queued = h.router.client_queued_bytes(client);
    assert!(queued > 100, "{queued}");
    h.router.client_budget_exceeded(client, 4096);
    let out = h.unwritten();
    assert_eq!(out.len(), 1, "only the other client's answer stays: {out:?}");
    assert!(matches!(out[0], Transmit::ToClient { client: to, .. } if to == other), "{out:?}");
    assert_eq!(closed_client(&h.events()), vec![(client, CloseReason::BudgetExceeded { limit: 4096 })]);
    assert!(CloseReason::BudgetExceeded { limit: 4096 }.drops_queue());
    assert!(!CloseReason::BudgetExceeded { limit: 4096 }.peer_not_reading());
    assert!(!CloseReason::PeerClosed.drops_queue());
    assert_eq!(h.router.client_queued_bytes(client), 0);
    // An upstream past it fails what it holds.
    h.send(other, request("2", server_target(A), Payload::null()));
    h.router.upstream_budget_exceeded(upstream, 8192);
    assert_eq!(closed_upstream(&h.events()), vec![(upstream, CloseReason::BudgetExceeded { limit: 8192 }, 1)]);
    assert_eq!(h.router.upstream_queued_bytes(upstream), 0);
}

#[test]
fn rule11_an_upstream_past_its_queue_budget_is_closed_and_its_requests_fail() {
    let (mut h, _) = timed(RouterOptions::default().max_upstream_queue_bytes(4000));
    let upstream = h.shared(A);
    let client = h.client();
    let mut sent = 0;
    for i in 0..10 {
        h.router.client_message(client, request(&i.to_string(), server_target(A), blob(1000)));
        sent += h.unwritten().iter().filter(|t| matches!(t, Transmit::ToUpstream { .. })).count();
    }
    // The fourth 1,000-byte call would take the queue past 4,000 bytes: the upstream is closed
    // instead, failing the four it was given; the next six find no upstream.
    assert_eq!(sent, 3);
    let events = h.events();
    assert_eq!(closed_upstream(&events), vec![(upstream, CloseReason::TransmitQueueFull { limit: 4000 }, 4)]);
    assert_eq!(h.router.upstream_queued_bytes(upstream), 0);
}

#[test]
fn rule11_past_the_total_budget_the_connection_with_the_longest_queue_is_closed() {
    let (mut h, _) = timed(RouterOptions::default().max_total_queue_bytes(10_000));
    let upstream = h.shared(A);
    let (big, small) = (h.client(), h.client());
    for id in 0..8 {
        h.send(big, request(&format!("b{id}"), server_target(A), Payload::null()));
    }
    h.send(small, request("s", server_target(A), Payload::null()));
    h.router.upstream_written(upstream, usize::MAX);
    for n in 1..=6 {
        h.router.upstream_message(upstream, success(&format!("req-{n}"), Some(blob(1500))));
    }
    h.router.upstream_message(upstream, success("req-9", Some(blob(1500))));
    h.unwritten();
    let events = h.events();
    assert_eq!(closed_client(&events), vec![(big, CloseReason::TransmitQueueFull { limit: 10_000 })]);
    assert!(h.router.is_client_ready(small));
    assert!(h.router.total_queued_bytes() <= 10_000);
    // What remains: the small client's answer, and the cancels of the big one's two calls.
    let remaining = h.router.client_queued_bytes(small) + h.router.upstream_queued_bytes(upstream);
    assert_eq!(h.router.total_queued_bytes(), remaining);
    assert!(h.router.upstream_queued_bytes(upstream) > 0);
}

#[test]
fn rule11_the_ids_and_targets_held_for_calls_in_flight_are_bounded_in_bytes() {
    let (mut h, _) = timed(RouterOptions::default().max_held_bytes(10_000));
    let upstream = h.shared(A);
    let client = h.client();
    let long = |n: u32| format!("{n}-{}", "i".repeat(2000));
    h.send(client, request(&long(1), server_target(A), Payload::null()));
    h.send(client, request(&long(2), server_target(A), Payload::null()));
    assert!(h.router.client_held_bytes(client) > 8000);
    let out = h.send(client, request(&long(3), server_target(A), Payload::null()));
    assert_eq!(out, vec![to_client(client, failure(&long(3), RouterOptions::default().too_many_requests))]);
    assert!(h.events().iter().any(|e| matches!(e, RouterEvent::Refused { reason: Refusal::TooManyHeldBytes, .. })));
    h.receive(upstream, success("req-1", None));
    assert!(h.router.client_held_bytes(client) < 5000, "settling frees what it held");
    let out = h.send(client, request(&long(3), server_target(A), Payload::null()));
    assert!(matches!(out[..], [Transmit::ToUpstream { .. }]));
    h.router.disconnect_upstream(upstream);
    assert_eq!(h.router.client_held_bytes(client), 0, "so does the upstream's departure");
}

#[test]
fn rule3_one_client_holds_at_most_its_share_of_a_shared_upstream_and_never_starves_another() {
    let options = RouterOptions::default().max_in_flight_per_shared_upstream(4).upstream_max_in_flight(6);
    let mut h = Harness::with(Router::new(sid(A), options));
    let upstream = h.shared(A);
    let (greedy, victim, third) = (h.client(), h.client(), h.client());
    let mut refused = Vec::new();
    for i in 0..10 {
        let out = h.send(greedy, request(&i.to_string(), server_target(A), Payload::null()));
        if matches!(out[..], [Transmit::ToClient { .. }]) {
            refused.push(i);
        }
    }
    assert_eq!(refused, (4..10).collect::<Vec<_>>(), "4 of the greedy client's calls are forwarded");
    let out = h.send(victim, request("v", server_target(A), Payload::null()));
    assert_eq!(out, vec![to_upstream(upstream, request("req-5", server_target(A), Payload::null()))]);
    h.send(third, request("t", server_target(A), Payload::null()));
    // The upstream holds 6: a seventh is refused for everybody until one settles.
    let out = h.send(victim, request("v2", server_target(A), Payload::null()));
    assert_eq!(out, vec![to_client(victim, failure("v2", RouterOptions::default().too_many_requests))]);
    let reasons: Vec<Refusal> = h
        .events()
        .into_iter()
        .filter_map(|e| match e {
            RouterEvent::Refused { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.last(), Some(&Refusal::UpstreamFull));
    assert!(reasons[..6].iter().all(|r| *r == Refusal::TooManyOnSharedUpstream), "{reasons:?}");
}

#[test]
fn a_peer_hang_up_a_transport_failure_and_a_local_close_are_three_close_reasons() {
    let mut h = Harness::new();
    let (a, b, c) = (h.client(), h.client(), h.client());
    h.router.client_peer_closed(a);
    h.router.client_transport_failed(b, &std::io::Error::from(std::io::ErrorKind::ConnectionReset));
    h.router.disconnect_client(c);
    let reasons: Vec<CloseReason> = closed_client(&h.events()).into_iter().map(|(_, r)| r).collect();
    assert_eq!(reasons[0], CloseReason::PeerClosed);
    assert!(matches!(&reasons[1], CloseReason::Transport(e) if e.kind() == std::io::ErrorKind::ConnectionReset));
    assert_eq!(reasons[2], CloseReason::Local);
    let (u, v) = (h.shared(A), h.shared(B));
    h.router.upstream_peer_closed(u);
    h.router.upstream_transport_failed(v, &std::io::Error::from(std::io::ErrorKind::BrokenPipe));
    let reasons: Vec<CloseReason> = closed_upstream(&h.events()).into_iter().map(|(_, r, _)| r).collect();
    assert_eq!(reasons[0], CloseReason::PeerClosed);
    assert!(matches!(&reasons[1], CloseReason::Transport(e) if e.kind() == std::io::ErrorKind::BrokenPipe));
}

// ---- Payloads are moved, never copied or re-encoded.

/// A payload of 1 KiB, in a buffer of its own (beyond the inline size).
fn large(tag: &str) -> Payload {
    let bytes: Bytes = payload(json!({"tag": tag, "text": "x".repeat(1024)})).to_bytes();
    Payload::from_cbor(bytes, pi_protocol::CborLimits::default()).unwrap()
}

#[test]
fn payloads_cross_the_router_as_the_same_bytes_in_the_same_memory() {
    let mut h = Harness::with(Router::new(sid(A), RouterOptions::default()).with_inspector(Chord));
    let upstream = h.shared(A);
    let client = h.client();
    h.send(client, request("s", server_target(A), call("subscribe", json!(["sub-1"]))));

    let call = large("call");
    let at = call.as_cbor().as_ptr();
    let out = h.send(client, request("1", server_target(A), call.clone()));
    let [Transmit::ToUpstream { message: ClientMessage::Request(forwarded), .. }] = &out[..] else { panic!("{out:?}") };
    assert_eq!(forwarded.call.as_cbor(), call.as_cbor());
    assert_eq!(forwarded.call.as_cbor().as_ptr(), at, "the call was moved, not copied");

    let result = large("result");
    let at = result.as_cbor().as_ptr();
    let out = h.receive(upstream, success("req-2", Some(result.clone())));
    let [Transmit::ToClient { message, .. }] = &out[..] else { panic!("{out:?}") };
    let (_, Ok(Some(back))) = response_parts(message) else { panic!("{message:?}") };
    assert_eq!((back.as_cbor(), back.as_cbor().as_ptr()), (result.as_cbor(), at), "the result was moved");

    let news = large("update");
    let at = news.as_cbor().as_ptr();
    let out = h.receive(upstream, update("sub-1", news.clone()));
    let [Transmit::ToClient { message: ServerMessage::ServiceUpdate(forwarded), .. }] = &out[..] else {
        panic!("{out:?}")
    };
    assert_eq!((forwarded.update.as_cbor(), forwarded.update.as_cbor().as_ptr()), (news.as_cbor(), at));
}

// ---- The property: many clients, many servers, any interleaving.

const SERVERS: [&str; 3] = [A, B, UNKNOWN];
const CLIENTS: usize = 4;

/// What a client asks a server application to do.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Answer at once with the call itself.
    Echo,
    /// Answer when a step says so (or when cancelled).
    Hold,
    /// Open a subscription with an id of this client's own.
    Subscribe,
    /// Open the subscription `sub-common`, which every client competes for.
    SubscribeCommon,
    /// Close a subscription this client opened.
    Unsubscribe,
    /// Attach: the application publishes a route, then answers.
    Attach,
    /// Detach: the application clears the route, then answers.
    Detach,
    /// An echo over the route this client was given by that server, if any.
    Session,
}

#[derive(Debug, Clone)]
enum Step {
    Send { client: usize, server: usize, kind: Kind },
    Cancel { client: usize, pick: usize },
    Leave { client: usize },
    Answer { server: usize, pick: usize },
    Publish { server: usize, pick: usize },
    ToServer { server: usize, count: usize },
    FromServer { server: usize, count: usize },
    Depart { server: usize },
}

fn step() -> impl Strategy<Value = Step> {
    // Mostly the two servers behind the router, sometimes one nobody serves.
    let server = prop_oneof![4 => Just(0usize), 4 => Just(1usize), 1 => Just(2usize)];
    let kind = prop_oneof![
        3 => Just(Kind::Echo),
        2 => Just(Kind::Hold),
        1 => Just(Kind::Subscribe),
        1 => Just(Kind::SubscribeCommon),
        1 => Just(Kind::Unsubscribe),
        1 => Just(Kind::Attach),
        1 => Just(Kind::Detach),
        2 => Just(Kind::Session),
    ];
    prop_oneof![
        12 => (0..CLIENTS, server, kind).prop_map(|(client, server, kind)| Step::Send { client, server, kind }),
        2 => (0..CLIENTS, 0..8usize).prop_map(|(client, pick)| Step::Cancel { client, pick }),
        1 => (0..CLIENTS).prop_map(|client| Step::Leave { client }),
        3 => (0..2usize, 0..8usize).prop_map(|(server, pick)| Step::Answer { server, pick }),
        2 => (0..2usize, 0..8usize).prop_map(|(server, pick)| Step::Publish { server, pick }),
        8 => (0..2usize, 1..4usize).prop_map(|(server, count)| Step::ToServer { server, count }),
        8 => (0..2usize, 1..4usize).prop_map(|(server, count)| Step::FromServer { server, count }),
        1 => (0..2usize).prop_map(|server| Step::Depart { server }),
    ]
}

/// What a model client expects of one of its requests.
#[derive(Debug)]
struct Expected {
    call: Payload,
    server: usize,
}

/// A client of the model: it checks that everything it receives is its own.
#[derive(Debug)]
struct ModelClient {
    key: ClientKey,
    tag: u64,
    next: u64,
    pending: HashMap<RequestId, Expected>,
    /// Every subscription id it ever asked for.
    opened: HashSet<SubscriptionId>,
    /// The routes it was given, by server.
    routes: HashMap<usize, SessionTarget>,
    /// A `null` attachment arrived: it clears the route of the server whose response follows.
    clearing: bool,
    closed: bool,
}

/// A server connection behind the router, and its stand-in application.
struct ModelServer {
    key: UpstreamKey,
    index: usize,
    connection: ServerConnection,
    /// Frames from the router not yet read by the connection.
    down: VecDeque<Vec<u8>>,
    /// Messages from the connection not yet read by the router.
    up: VecDeque<ServerMessage>,
    decoder: ServerMessageDecoder,
    held: Vec<(RequestId, Payload)>,
    /// Open subscriptions and the client tag of the call that opened them.
    subscriptions: BTreeMap<SubscriptionId, Value>,
    attachments: u64,
}

fn server_index(server_id: &ServerId) -> usize {
    SERVERS.iter().position(|s| server_id.as_str() == *s).unwrap()
}

impl ModelServer {
    fn new(router: &mut Router, index: usize) -> Self {
        let key = router.add_upstream();
        ModelServer {
            key,
            index,
            connection: ServerConnection::new(sid(SERVERS[index]), ServerOptions::default().invalid_call(None)),
            down: VecDeque::new(),
            up: VecDeque::new(),
            decoder: ServerMessageDecoder::new(),
            held: Vec::new(),
            subscriptions: BTreeMap::new(),
            attachments: 0,
        }
    }

    /// Reads `count` frames from the router, runs the application, queues what it sends.
    fn read(&mut self, count: usize) {
        for _ in 0..count {
            let Some(frame) = self.down.pop_front() else { break };
            self.connection.receive(&frame);
            self.run();
        }
    }

    fn run(&mut self) {
        while let Some(event) = self.connection.poll_event() {
            match event {
                ServerEvent::Request(request) => self.handle(request),
                ServerEvent::Cancel { id } => {
                    if let Some(at) = self.held.iter().position(|(held, _)| *held == id) {
                        self.held.remove(at);
                        self.connection.respond(&id, Err(error_body("cancelled"))).unwrap();
                    }
                }
                ServerEvent::Fenced { reason, .. } => {
                    assert_eq!(reason, FenceReason::StaleRoute, "the router never reuses an upstream id");
                }
                ServerEvent::Ready => {}
                other => panic!("unexpected server event {other:?}"),
            }
        }
        if let Some(bytes) = self.connection.poll_transmit() {
            for message in self.decoder.push(&bytes) {
                self.up.push_back(message.unwrap());
            }
        }
    }

    fn handle(&mut self, request: Request) {
        let value = request.call.to_value();
        let subscription = value["args"][0].as_str().map(sub);
        match value["member"].as_str().unwrap() {
            "hold" => return self.held.push((request.id, request.call)),
            "subscribe" => {
                self.subscriptions.insert(subscription.unwrap(), value["client"].clone());
            }
            "unsubscribe" => {
                self.subscriptions.remove(&subscription.unwrap());
            }
            "attach" => {
                self.attachments += 1;
                let tag = value["client"].as_u64().unwrap();
                let route = route(SERVERS[self.index], &format!("att-{tag}-{}", self.attachments));
                self.connection.set_attachment(Some(route)).unwrap();
            }
            "detach" => self.connection.set_attachment(None).unwrap(),
            _ => {}
        }
        self.connection.respond(&request.id, Ok(Some(request.call))).unwrap();
    }

    fn answer(&mut self, pick: usize) {
        if self.held.is_empty() {
            return;
        }
        let (id, call) = self.held.remove(pick % self.held.len());
        self.connection.respond(&id, Ok(Some(call))).unwrap();
        self.run();
    }

    fn publish(&mut self, pick: usize) {
        let Some((subscription, tag)) = self.subscriptions.iter().nth(pick % self.subscriptions.len().max(1)) else {
            return;
        };
        let news = payload(json!({"client": tag, "subscription": subscription.as_str()}));
        self.connection.publish_update(subscription.clone(), news).unwrap();
        self.run();
    }
}

struct Model {
    router: Router,
    clients: Vec<ModelClient>,
    servers: Vec<ModelServer>,
    tags: u64,
    /// Upstreams the router closed or was told about: nothing may be sent to them afterwards.
    gone: HashSet<UpstreamKey>,
    /// How often each kind of thing happened, to show the property reaches every rule.
    seen: BTreeMap<String, usize>,
}

impl Model {
    fn new() -> Self {
        let mut router = Router::new(sid(A), RouterOptions::default()).with_inspector(ModelInspector);
        let servers = vec![ModelServer::new(&mut router, 0), ModelServer::new(&mut router, 1)];
        let mut model =
            Model { router, clients: Vec::new(), servers, tags: 0, gone: HashSet::new(), seen: BTreeMap::new() };
        for _ in 0..CLIENTS {
            let client = model.new_client();
            model.clients.push(client);
        }
        model.settle();
        model
    }

    fn new_client(&mut self) -> ModelClient {
        self.tags += 1;
        let key = self.router.add_client();
        self.router.client_message(key, hello(8));
        ModelClient {
            key,
            tag: self.tags,
            next: 1,
            pending: HashMap::new(),
            opened: HashSet::new(),
            routes: HashMap::new(),
            clearing: false,
            closed: false,
        }
    }

    /// Hands every transmit to its connection (checking it is addressed to a live one), then
    /// takes in the events.
    fn pump(&mut self) {
        while let Some(transmit) = self.router.poll_transmit() {
            match transmit {
                Transmit::ToClient { client, message } => {
                    let model = self.clients.iter_mut().find(|c| c.key == client);
                    let model = model.unwrap_or_else(|| panic!("{client} left, yet it was sent {message:?}"));
                    assert!(!model.closed, "{client} was closed, yet it was sent {message:?}");
                    *self.seen.entry(kind_of(&message)).or_default() += 1;
                    model.receive(message);
                }
                Transmit::ToUpstream { upstream, message } => {
                    assert!(!self.gone.contains(&upstream), "{upstream} is closed, yet it was sent {message:?}");
                    let server = self.servers.iter_mut().find(|s| s.key == upstream).unwrap();
                    server.down.push_back(encode_client_message(&message).unwrap());
                }
                other => panic!("unknown transmit {other:?}"),
            }
        }
        while let Some(event) = self.router.poll_event() {
            let name = format!("{event:?}");
            *self.seen.entry(name[..name.find(' ').unwrap_or(name.len())].to_owned()).or_default() += 1;
            match event {
                RouterEvent::ClientClosed { client, reason } => {
                    assert_eq!(reason, CloseReason::Local);
                    self.clients.iter_mut().filter(|c| c.key == client).for_each(|c| c.closed = true);
                }
                RouterEvent::UpstreamClosed { upstream, reason, .. } => {
                    assert_eq!(reason, CloseReason::Local, "no upstream broke a rule");
                    self.gone.insert(upstream);
                }
                _ => {}
            }
        }
    }

    fn apply(&mut self, step: &Step) {
        match *step {
            Step::Send { client, server, kind } => {
                let message = self.clients[client].request(server, kind);
                if let Some(message) = message {
                    let key = self.clients[client].key;
                    self.router.client_message(key, message);
                }
            }
            Step::Cancel { client, pick } => {
                let model = &self.clients[client];
                let mut ids: Vec<&RequestId> = model.pending.keys().collect();
                ids.sort();
                if let Some(id) = ids.get(pick % ids.len().max(1)) {
                    let expected = &model.pending[*id];
                    // A cancel names the target of its request; session calls are not cancelled here.
                    let message = cancel(id.as_str(), server_target(SERVERS[expected.server]));
                    self.router.client_message(model.key, message);
                }
            }
            Step::Leave { client } => {
                let key = self.clients[client].key;
                self.router.disconnect_client(key);
                self.pump();
                self.clients[client] = self.new_client();
            }
            Step::Answer { server, pick } => self.servers[server].answer(pick),
            Step::Publish { server, pick } => self.servers[server].publish(pick),
            Step::ToServer { server, count } => self.servers[server].read(count),
            Step::FromServer { server, count } => {
                for _ in 0..count {
                    let Some(message) = self.servers[server].up.pop_front() else { break };
                    let key = self.servers[server].key;
                    self.router.upstream_message(key, message);
                    self.pump();
                }
            }
            Step::Depart { server } => {
                let key = self.servers[server].key;
                self.router.disconnect_upstream(key);
                self.pump();
                self.servers[server] = ModelServer::new(&mut self.router, server);
            }
        }
        self.pump();
    }

    /// Runs every connection until nothing moves, answering everything held.
    fn settle(&mut self) {
        for _ in 0..1000 {
            let mut moved = false;
            for server in 0..self.servers.len() {
                let s = &mut self.servers[server];
                moved |= !s.down.is_empty() || !s.up.is_empty() || !s.held.is_empty();
                s.read(usize::MAX);
                while !s.held.is_empty() {
                    s.answer(0);
                }
                self.apply(&Step::FromServer { server, count: usize::MAX });
            }
            if !moved {
                return;
            }
        }
        panic!("the connections never settled");
    }
}

/// A name for what a client was sent: the message type, the response's error code.
fn kind_of(message: &ServerMessage) -> String {
    match message {
        ServerMessage::Response(_) => match response_parts(message).1 {
            Ok(_) => "response ok".to_owned(),
            Err(error) => format!("response {}", error.code.as_str()),
        },
        ServerMessage::Attachment(attachment) => format!("attachment {}", attachment.attachment.is_some()),
        other => format!("{other:?}")[..5].to_owned(),
    }
}

/// The model's inspector: `subscribe` / `unsubscribe` with the id as first argument.
struct ModelInspector;

impl CallInspector for ModelInspector {
    fn inspect(&mut self, request: &Request) -> CallEffect {
        let value = request.call.to_value();
        let first = value["args"][0].as_str().map(sub);
        match (value["member"].as_str(), first) {
            (Some("subscribe"), Some(id)) => CallEffect::Subscribe(id),
            (Some("unsubscribe"), Some(id)) => CallEffect::Unsubscribe(id),
            _ => CallEffect::Plain,
        }
    }

    fn unsubscribe_call(&mut self, subscription: &SubscriptionId) -> Option<Payload> {
        Some(payload(json!({"member": "unsubscribe", "args": [subscription.as_str()], "client": 0})))
    }
}

impl ModelClient {
    /// The request for `kind` to `server`, recorded as pending; `None` when it makes no sense.
    fn request(&mut self, server: usize, kind: Kind) -> Option<ClientMessage> {
        let n = self.next;
        let (member, subscription) = match kind {
            Kind::Echo | Kind::Session => ("echo", None),
            Kind::Hold => ("hold", None),
            Kind::Subscribe => ("subscribe", Some(format!("sub-{}-{n}", self.tag))),
            Kind::SubscribeCommon => ("subscribe", Some("sub-common".to_owned())),
            Kind::Unsubscribe => {
                let mut opened: Vec<&SubscriptionId> = self.opened.iter().collect();
                opened.sort();
                ("unsubscribe", Some(opened.first()?.as_str().to_owned()))
            }
            Kind::Attach => ("attach", None),
            Kind::Detach => ("detach", None),
        };
        let target = match kind {
            Kind::Session => RpcTarget::Session(self.routes.get(&server)?.clone()),
            _ => server_target(SERVERS[server]),
        };
        if let (Kind::Subscribe | Kind::SubscribeCommon, Some(id)) = (kind, &subscription) {
            self.opened.insert(sub(id));
        }
        self.next += 1;
        // Ids are the same sequence in every client: only the router keeps them apart upstream.
        let id = format!("q-{n}");
        let call = payload(json!({"member": member, "args": [subscription], "client": self.tag, "n": n}));
        self.pending.insert(rid(&id), Expected { call: call.clone(), server });
        Some(request(&id, target, call))
    }

    /// Checks one message the router sent this client.
    fn receive(&mut self, message: ServerMessage) {
        match message {
            ServerMessage::Hello(hello) => assert_eq!(hello.server_id, sid(A)),
            ServerMessage::Response(_) => {
                let (id, result) = response_parts(&message);
                let expected = self.pending.remove(id).unwrap_or_else(|| {
                    panic!("client {} got a response for {id:?}, which it has not pending", self.tag)
                });
                if std::mem::take(&mut self.clearing) {
                    self.routes.remove(&expected.server);
                }
                match result {
                    Ok(result) => assert_eq!(result, Some(&expected.call), "client {} got another's answer", self.tag),
                    Err(error) => {
                        let allowed = [
                            "unknown_server",
                            "server_departed",
                            "cancelled",
                            "session_not_attached",
                            "subscription_in_use",
                        ];
                        assert!(allowed.contains(&error.code.as_str()), "unexpected error {error:?}");
                    }
                }
            }
            ServerMessage::ServiceUpdate(update) => {
                let value = update.update.to_value();
                assert_eq!(value["client"], json!(self.tag), "client {} got another's update", self.tag);
                assert!(self.opened.contains(&update.subscription_id));
            }
            ServerMessage::Attachment(attachment) => match attachment.attachment {
                Some(route) => {
                    let prefix = format!("att-{}-", self.tag);
                    assert!(route.attachment_id.starts_with(&prefix), "client {} got {route:?}", self.tag);
                    self.routes.insert(server_index(&route.server_id), route);
                }
                None => self.clearing = true,
            },
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// The property is not vacuous: over a fixed set of runs, every rule it checks is reached.
#[test]
fn the_property_reaches_every_rule() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut seen = BTreeMap::new();
    for _ in 0..64 {
        let steps = proptest::collection::vec(step(), 100..150).new_tree(&mut runner).unwrap().current();
        let mut model = Model::new();
        for step in &steps {
            model.apply(step);
        }
        model.settle();
        for (kind, count) in model.seen {
            *seen.entry(kind).or_insert(0) += count;
        }
    }
    let expected = [
        "response ok",
        "response cancelled",
        "response unknown_server",
        "response server_departed",
        "response session_not_attached",
        "response subscription_in_use",
        "Servi",
        "attachment true",
        "attachment false",
        "Refused",
        "Release",
        "UnroutedUpdate",
        "UpstreamReady",
        "UpstreamClosed",
        "ClientClosed",
    ];
    for kind in expected {
        assert!(seen.get(kind).is_some_and(|n| *n > 0), "never saw {kind}: {seen:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Every request is answered exactly once, to the client that sent it, under its own id and
    /// with its own answer; updates and routes reach only the client they belong to; nothing is
    /// ever sent to a closed connection.
    #[test]
    fn every_request_is_answered_once_to_its_own_client(steps in proptest::collection::vec(step(), 0..150)) {
        let mut model = Model::new();
        for step in &steps {
            model.apply(step);
        }
        model.settle();
        for client in &model.clients {
            prop_assert!(client.pending.is_empty(), "client {} still waits for {:?}", client.tag, client.pending);
            prop_assert_eq!(model.router.client_pending_len(client.key), 0);
        }
        for server in &model.servers {
            prop_assert_eq!(model.router.upstream_in_flight_len(server.key), 0);
        }
    }
}
