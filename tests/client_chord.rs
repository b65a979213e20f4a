//! Chord on the Client (issue 21 point 4): `catalogue()` read with Chord's strict parser, and
//! `subscribe_service` returning the snapshot and the updates with the replicated values applied,
//! against an in-process server that publishes with `pi_chord::subscription::SubscriptionPublisher`.
#![cfg(all(feature = "tokio", feature = "chord"))]

mod client_support;

use client_support::server_id;
use pi_protocol::chord::subscription::{Applied, ServiceInstance, ServiceMember, SubscriptionPublisher};
use pi_protocol::chord::wire::{Id, ServiceMode, Update};
use pi_protocol::client::{Client, RequestError, ServiceUpdateError};
use pi_protocol::connection::{CallTarget, ServerEvent, ServerOptions};
use pi_protocol::io::ServerDriver;
use pi_protocol::{ErrorBody, ErrorCode, Payload, ServerConnection, SubscriptionId};
use serde_json::{json, Value};

/// A counter service: `count` = `{value, log}`; `bump(n)` publishes the new value to every
/// subscription (before its answer, as the real server does); `skip()` publishes an update
/// whose sequence skips one. `subscribe` publishes one bump of 1 before answering with the
/// snapshot of the value before it. A `bad` server answers `catalogue` with an empty id.
async fn serve(io: tokio::io::DuplexStream, bad: bool) {
    let mut driver = ServerDriver::new(io, ServerConnection::new(server_id(), ServerOptions::default()));
    let mut count = json!({"value": 0, "log": ""});
    let mut subscriptions: Vec<(SubscriptionId, SubscriptionPublisher)> = Vec::new();
    while let Some(event) = driver.next_event().await {
        let ServerEvent::Request(request) = event else { continue };
        let call = request.call.to_value();
        let args = call["args"].clone();
        let connection = driver.connection_mut();
        let publish = |connection: &mut ServerConnection, update: Update, id: &SubscriptionId| {
            connection.publish_update(id.clone(), update.to_payload().unwrap()).unwrap();
        };
        let answer: Result<Option<Value>, ErrorBody> = match (call["serviceId"].as_str(), call["member"].as_str()) {
            (Some("$chord.service"), Some("catalogue")) if bad => {
                Ok(Some(json!([{"serviceId": "", "mode": "singleton"}])))
            }
            (Some("$chord.service"), Some("catalogue")) => {
                Ok(Some(json!([{"serviceId": "demo.counter", "mode": "singleton"}])))
            }
            (Some("$chord.service"), Some("subscribe")) if args[2] == "keyed" => Err(ErrorBody::new(
                ErrorCode::new("service_mode_mismatch").unwrap(),
                "Remote service demo.counter is singleton, not keyed",
            )),
            (Some("$chord.service"), Some("subscribe")) => {
                let id = SubscriptionId::new(args[0].as_str().unwrap()).unwrap();
                let mut publisher =
                    SubscriptionPublisher::new(Id::new("demo.counter").unwrap(), ServiceMode::Singleton);
                let members = vec![
                    ServiceMember::method("bump").unwrap(),
                    ServiceMember::state("count", 0, count.clone()).unwrap(),
                ];
                let snapshot = publisher.snapshot(&[ServiceInstance::new(members)]).unwrap();
                // An update that overtakes the snapshot's answer.
                count = json!({"value": count["value"].as_i64().unwrap() + 1, "log": format!("{}+1", count["log"].as_str().unwrap())});
                let early = publisher.publish(None, "count", count.clone()).unwrap().unwrap();
                publish(connection, early, &id);
                subscriptions.push((id, publisher));
                Ok(Some(snapshot.to_payload().unwrap().to_value()))
            }
            (Some("$chord.service"), Some("unsubscribe")) => {
                subscriptions.retain(|(id, _)| id.as_str() != args[0].as_str().unwrap());
                Ok(None)
            }
            (Some("demo.counter"), Some("bump")) => {
                let n = args[0].as_i64().unwrap();
                count = json!({"value": count["value"].as_i64().unwrap() + n, "log": format!("{}+{n}", count["log"].as_str().unwrap())});
                for (id, publisher) in &mut subscriptions {
                    if let Some(update) = publisher.publish(None, "count", count.clone()).unwrap() {
                        publish(connection, update, id);
                    }
                }
                Ok(None)
            }
            (Some("demo.counter"), Some("skip")) => {
                for (id, _) in &subscriptions {
                    let update =
                        json!({"type": "state", "member": "count", "sequence": 99, "ops": [["r", {"value": -1}]]});
                    connection.publish_update(id.clone(), Payload::from_value(&update).unwrap()).unwrap();
                }
                Ok(None)
            }
            _ => Err(ErrorBody::new(ErrorCode::new("not_found").unwrap(), "no such member")),
        };
        let answer = answer.map(|value| value.map(|v| Payload::from_value(&v).unwrap()));
        connection.respond(&request.id, answer).unwrap();
    }
}

async fn client(bad: bool) -> Client {
    let (io, server) = tokio::io::duplex(64 * 1024);
    tokio::spawn(serve(server, bad));
    Client::connect_stream(io, server_id()).await.unwrap()
}

fn bump(n: i64) -> Payload {
    pi_protocol::client::service_call("demo.counter", "bump", json!([n])).unwrap()
}

#[tokio::test]
async fn the_catalogue_is_read_with_chords_parser() {
    let catalogue = client(false).await.catalogue(CallTarget::Server).await.unwrap();
    let entry = catalogue.entry("demo.counter").expect("demo.counter is listed");
    assert_eq!(entry.mode, ServiceMode::Singleton);
    match client(true).await.catalogue(CallTarget::Server).await {
        Err(RequestError::Invalid(message)) => assert!(message.contains("serviceId"), "{message}"),
        other => panic!("expected an invalid catalogue, got {other:?}"),
    }
}

#[tokio::test]
async fn a_subscription_has_its_snapshot_then_each_update_with_the_value_applied() {
    let client = client(false).await;
    let mut counter =
        client.subscribe_service(CallTarget::Server, "demo.counter", ServiceMode::Singleton).await.unwrap();
    assert_eq!(counter.id().as_str(), "service-1");
    assert_eq!(counter.snapshot().service_id.as_str(), "demo.counter");
    let states: Vec<Value> = counter.states().iter().map(|s| s.to_json()).collect();
    assert_eq!(states, [json!({"member": "count", "instance": null, "sequence": 0, "value": {"value": 0, "log": ""}})]);

    // The update that came before the snapshot's answer, then two bumps.
    client.request(CallTarget::Server, bump(2)).await.unwrap();
    client.request(CallTarget::Server, bump(3)).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let applied = counter.next().await.unwrap().unwrap();
        let Applied::State(change) = applied.applied else { panic!("a state update: {applied:?}") };
        seen.push(change.to_json());
    }
    assert_eq!(
        seen,
        [
            json!({"member": "count", "instance": null, "sequence": 1, "value": {"value": 1, "log": "+1"}}),
            json!({"member": "count", "instance": null, "sequence": 2, "value": {"value": 3, "log": "+1+2"}}),
            json!({"member": "count", "instance": null, "sequence": 3, "value": {"value": 6, "log": "+1+2+3"}}),
        ]
    );
    assert_eq!(counter.value(None, "count"), Some(&json!({"value": 6, "log": "+1+2+3"})));

    // A second subscription gets the next id and the current state.
    let second = client.subscribe_service(CallTarget::Server, "demo.counter", ServiceMode::Singleton).await.unwrap();
    assert_eq!(second.id().as_str(), "service-2");
    assert_eq!(second.states()[0].value, json!({"value": 6, "log": "+1+2+3"}));
    second.unsubscribe().await.unwrap();
    counter.unsubscribe().await.unwrap();
}

#[tokio::test]
async fn an_update_the_registry_refuses_ends_the_subscription() {
    let client = client(false).await;
    let mut counter =
        client.subscribe_service(CallTarget::Server, "demo.counter", ServiceMode::Singleton).await.unwrap();
    assert!(counter.next().await.unwrap().is_ok(), "the early update");
    client
        .request(CallTarget::Server, pi_protocol::client::service_call("demo.counter", "skip", json!([])).unwrap())
        .await
        .unwrap();
    match counter.next().await {
        Some(Err(ServiceUpdateError::Invalid(message))) => assert!(message.contains("gap"), "{message}"),
        other => panic!("expected a refused update, got {other:?}"),
    }
    assert!(counter.next().await.is_none());
    assert!(client.is_connected(), "the connection goes on");
}

#[tokio::test]
async fn a_refused_subscribe_keeps_the_servers_code_and_a_disconnect_ends_the_stream() {
    let client = client(false).await;
    match client.subscribe_service(CallTarget::Server, "demo.counter", ServiceMode::Keyed).await {
        Err(RequestError::Server(error)) => assert_eq!(error.code.as_str(), "service_mode_mismatch"),
        other => panic!("expected service_mode_mismatch, got {other:?}"),
    }
    let mut counter =
        client.subscribe_service(CallTarget::Server, "demo.counter", ServiceMode::Singleton).await.unwrap();
    assert_eq!(counter.id().as_str(), "service-2", "ids are not reused");
    client.disconnect().await;
    assert!(counter.next().await.unwrap().is_ok(), "what arrived before is still applied");
    assert!(matches!(counter.next().await, Some(Err(ServiceUpdateError::Updates(_)))));
    assert!(counter.next().await.is_none());
}
