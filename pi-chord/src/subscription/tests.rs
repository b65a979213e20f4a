//! The registry and the publisher against each other, and the registry's refusals.

use serde_json::json;

use super::*;
use pi_protocol_runtime::Payload;

fn address(key: &str, generation: i32) -> InstanceAddress {
    InstanceAddress::new(Id::new(key).unwrap(), generation)
}

/// Every value goes through a payload and Chord's grammar on its way, as on a connection.
fn wire_snapshot(snapshot: &Snapshot) -> Snapshot {
    Snapshot::from_payload(&snapshot.to_payload().unwrap()).unwrap()
}

fn wire_update(update: &Update) -> Update {
    Update::from_payload(&update.to_payload().unwrap()).unwrap()
}

fn update(text: &str) -> Update {
    Update::from_payload(&Payload::from_json_str(text).unwrap()).unwrap()
}

#[test]
fn a_keyed_subscription_followed_end_to_end() {
    let mut publisher = SubscriptionPublisher::new(Id::new("demo.rooms").unwrap(), ServiceMode::Keyed);
    let room = |key: &str, generation, count: i64| {
        ServiceInstance::new(vec![
            ServiceMember::method("post").unwrap(),
            ServiceMember::state("count", 3, json!({"n": count})).unwrap(),
        ])
        .with_address(address(key, generation))
    };
    let snapshot = publisher.snapshot(&[room("a", 1, 0), room("b", 1, 10)]).unwrap();
    let mut registry = StateRegistry::new();
    let states = registry.install(&wire_snapshot(&snapshot)).unwrap();
    assert_eq!(states.len(), 2);
    assert_eq!((states[1].sequence, &states[1].value), (3, &json!({"n": 10})));
    assert_eq!(states[1].to_string(), "b@1.count#3");

    let a = address("a", 1);
    assert_eq!(publisher.publish(Some(&a), "count", json!({"n": 0})).unwrap(), None, "no change, no update");
    let bump = publisher.publish(Some(&a), "count", json!({"n": 1})).unwrap().unwrap();
    let Applied::State(change) = registry.apply(&wire_update(&bump)).unwrap() else { panic!("a state change") };
    assert_eq!((change.sequence, &change.value), (4, &json!({"n": 1})));
    assert_eq!(
        change.to_json(),
        json!({"member": "count", "instance": {"key": "a", "generation": 1}, "sequence": 4, "value": {"n": 1}})
    );

    let spawned = publisher.spawn(&room("c", 1, 7)).unwrap();
    let Applied::Spawned { instance, states } = registry.apply(&wire_update(&spawned)).unwrap() else { panic!() };
    assert_eq!((instance, states[0].value.clone()), (Some(address("c", 1)), json!({"n": 7})));
    assert_eq!(registry.len(), 3);

    let closed = publisher.close(&a);
    assert_eq!(registry.apply(&wire_update(&closed)).unwrap(), Applied::Closed(a.clone()));
    assert_eq!((registry.len(), registry.value(Some(&a), "count")), (2, None));
    assert!(matches!(publisher.publish(Some(&a), "count", json!(1)), Err(SubscriptionError::Unknown { .. })));
    let stale = update(
        r#"{"type":"state","instance":{"key":"a","generation":1},"member":"count","sequence":5,"ops":[["r",1]]}"#,
    );
    assert_eq!(registry.apply(&stale).unwrap_err(), SubscriptionError::Unknown { state: "a@1.count".into() });

    for singleton_only in [r#"{"type":"unavailable"}"#, r#"{"type":"replaced","snapshot":{"members":[]}}"#] {
        assert!(matches!(registry.apply(&update(singleton_only)), Err(SubscriptionError::Mode { .. })));
    }
    let no_instance = update(r#"{"type":"state","member":"count","sequence":4,"ops":[["r",1]]}"#);
    assert!(matches!(registry.apply(&no_instance), Err(SubscriptionError::Mode { .. })));
}

#[test]
fn a_singleton_subscription_resets_on_replaced_and_unavailable() {
    let mut publisher = SubscriptionPublisher::new(Id::new("demo.counter").unwrap(), ServiceMode::Singleton);
    let counter = |v: i64| ServiceInstance::new(vec![ServiceMember::state("count", 0, json!(v)).unwrap()]);
    let mut registry = StateRegistry::new();
    registry.install(&wire_snapshot(&publisher.snapshot(&[counter(0)]).unwrap())).unwrap();
    for (value, sequence) in [(1, 1), (2, 2)] {
        let update = publisher.publish(None, "count", json!(value)).unwrap().unwrap();
        let Applied::State(change) = registry.apply(&wire_update(&update)).unwrap() else { panic!() };
        assert_eq!((change.sequence, change.value), (sequence, json!(value)));
    }
    let replaced = publisher.replace(&counter(40)).unwrap();
    let Applied::Replaced(states) = registry.apply(&wire_update(&replaced)).unwrap() else { panic!() };
    assert_eq!((states[0].sequence, states[0].value.clone()), (0, json!(40)));
    assert_eq!(registry.sequence(None, "count"), Some(0));

    let unavailable = publisher.unavailable();
    assert_eq!(registry.apply(&wire_update(&unavailable)).unwrap(), Applied::Unavailable);
    assert!(registry.is_empty());
    let late = update(r#"{"type":"state","member":"count","sequence":1,"ops":[["r",1]]}"#);
    assert_eq!(registry.apply(&late).unwrap_err(), SubscriptionError::Unknown { state: "count".into() });
}

#[test]
fn a_sequence_gap_drops_the_replica() {
    let snapshot = Snapshot::from_payload(
        &Payload::from_json_str(
            r#"{"serviceId":"s","mode":"singleton","instances":[{"members":[{"name":"v","kind":"state","sequence":5,"ops":[["r",0]]}]}]}"#,
        )
        .unwrap(),
    )
    .unwrap();
    let mut registry = StateRegistry::new();
    registry.install(&snapshot).unwrap();
    let gap = update(r#"{"type":"state","member":"v","sequence":7,"ops":[["r",1]]}"#);
    assert_eq!(
        registry.apply(&gap).unwrap_err(),
        SubscriptionError::SequenceGap { state: "v".into(), expected: 6, got: 7 }
    );
    assert_eq!(registry.value(None, "v"), None);
}

#[test]
fn snapshots_that_cannot_be_followed_are_refused() {
    let read = |text: &str| Snapshot::from_payload(&Payload::from_json_str(text).unwrap()).unwrap();
    let mut registry = StateRegistry::new();
    assert_eq!(registry.apply(&update(r#"{"type":"unavailable"}"#)).unwrap_err(), SubscriptionError::NotInstalled);
    let duplicate = read(
        r#"{"serviceId":"s","mode":"singleton","instances":[{"members":[{"name":"v","kind":"state","sequence":0,"ops":[["r",0]]},{"name":"v","kind":"state","sequence":0,"ops":[["r",0]]}]}]}"#,
    );
    assert_eq!(
        registry.install(&duplicate).unwrap_err(),
        SubscriptionError::Duplicate { state: "v".into(), path: "instances[0].members[1]".into() }
    );
    assert!(registry.is_empty());
    let keyed_without_address = read(r#"{"serviceId":"s","mode":"keyed","instances":[{"members":[]}]}"#);
    assert!(matches!(registry.install(&keyed_without_address), Err(SubscriptionError::Mode { .. })));
    let not_a_base = read(
        r#"{"serviceId":"s","mode":"singleton","instances":[{"members":[{"name":"v","kind":"state","sequence":0,"ops":[["s",["a"],1]]}]}]}"#,
    );
    let err = registry.install(&not_a_base).unwrap_err();
    assert!(matches!(&err, SubscriptionError::Delta { path, .. } if path == "instances[0].members[0].ops"), "{err}");
}

#[test]
fn ops_derived_once_publish_as_a_diff_per_subscription_does() {
    let service = || SubscriptionPublisher::new(Id::new("demo.counter").unwrap(), ServiceMode::Singleton);
    let start = json!({"value": 0, "log": ""});
    let instance = ServiceInstance::new(vec![ServiceMember::state("count", 0, start.clone()).unwrap()]);
    let (mut by_value, mut by_ops) = (service(), service());
    by_value.snapshot(std::slice::from_ref(&instance)).unwrap();
    by_ops.snapshot(std::slice::from_ref(&instance)).unwrap();
    let mut before = start;
    for (value, log) in [(2, "+2"), (5, "+2+3"), (9, "+2+3+4")] {
        let next = json!({"value": value, "log": log});
        let ops = crate::delta::diff(&before, &next);
        let expected = by_value.publish(None, "count", next.clone()).unwrap().unwrap();
        assert_eq!(by_ops.publish_ops(None, "count", &ops, &next).unwrap().unwrap(), expected);
        before = next;
    }
    assert_eq!(by_ops.publish_ops(None, "count", &[], &before).unwrap(), None, "no ops, no update");
    assert!(matches!(by_ops.publish_ops(None, "nope", &[], &before), Err(SubscriptionError::Unknown { .. })));
}
