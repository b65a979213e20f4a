//! Hand-made cases: the payloads the real server sent (/work/shared/realpeer/FACTS.md, as data),
//! and one refusal of each kind with the path it names.

use super::*;

fn payload(text: &str) -> Payload {
    Payload::from_json_str(text).expect("test JSON")
}

#[test]
fn the_real_servers_values_read_and_write_back_unchanged() {
    let catalogue =
        payload(r##"[{"serviceId":"demo.counter","mode":"singleton"},{"serviceId":"demo.rooms","mode":"keyed"}]"##);
    let read = Catalogue::from_payload(&catalogue).unwrap();
    assert_eq!(read.entry("demo.rooms").map(|e| e.mode), Some(ServiceMode::Keyed));
    assert_eq!(read.to_payload().unwrap(), catalogue);

    let snapshot = payload(
        r##"{"serviceId":"demo.counter","mode":"singleton","instances":[{"members":[{"name":"bump","kind":"method"},{"name":"count","kind":"state","sequence":0,"ops":[["r",{"value":0,"log":""}]]}]}]}"##,
    );
    let read = Snapshot::from_payload(&snapshot).unwrap();
    let state = read.instances[0].states().next().unwrap();
    assert_eq!((state.name.as_str(), state.sequence.get()), ("count", 0));
    assert_eq!(state.ops.to_value(), serde_json::json!([["r", {"value": 0, "log": ""}]]));
    assert_eq!(read.to_payload().unwrap(), snapshot);

    for text in [
        r##"{"type":"state","member":"count","sequence":1,"ops":[["s",["value"],2],["a",["log"],"+2"]]}"##,
        r##"{"type":"state","member":"count","sequence":2,"ops":[["#",0,["value"]],["s",0,5],["#",1,["log"]],["a",1,"+3"]]}"##,
        r##"{"type":"state","instance":{"key":"a","generation":1},"member":"count","sequence":3,"ops":[["s",0,9],["a",1,"+4"]]}"##,
        r##"{"type":"unavailable"}"##,
        r##"{"type":"replaced","snapshot":{"members":[]}}"##,
        r##"{"type":"spawned","instance":{"instance":{"key":"a","generation":2},"members":[]}}"##,
        r##"{"type":"closed","instance":{"key":"a","generation":2}}"##,
    ] {
        let update = Update::from_payload(&payload(text)).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(update.to_payload().unwrap(), payload(text), "{text}");
        assert!(text.contains(&format!("\"type\":\"{}\"", update.kind())), "{text}");
    }
}

#[test]
fn refusals_name_the_field() {
    type Read = fn(&Payload) -> Result<(), WireError>;
    let cases: [(&str, Read, &str); 9] = [
        (r##"{"serviceId":"s","member":"","args":[]}"##, |p| ServiceCall::from_payload(p).map(drop), "member"),
        (
            r##"{"serviceId":"s","member":"m","args":[],"instance":{"key":"k","generation":0}}"##,
            |p| ServiceCall::from_payload(p).map(drop),
            "instance.generation",
        ),
        (
            r##"[{"serviceId":"a","mode":"keyed"},{"serviceId":"a","mode":"keyed"}]"##,
            |p| Catalogue::from_payload(p).map(drop),
            "[1].serviceId",
        ),
        (r##"[{"serviceId":"a","mode":"plural"}]"##, |p| Catalogue::from_payload(p).map(drop), "[0].mode"),
        (
            r##"{"serviceId":"s","mode":"keyed","instances":[{"members":[{"name":"n","kind":"state","sequence":0,"ops":[["s",["__proto__"],1]]}]}]}"##,
            |p| Snapshot::from_payload(p).map(drop),
            "instances[0].members[0].ops[0][1][0]",
        ),
        (
            r##"{"serviceId":"s","mode":"keyed","instances":[{"members":[{"name":"n","kind":"state","sequence":-1,"ops":[]}]}]}"##,
            |p| Snapshot::from_payload(p).map(drop),
            "instances[0].members[0].sequence",
        ),
        (r##"{"type":"state","member":"m","sequence":0,"ops":[]}"##, |p| Update::from_payload(p).map(drop), "sequence"),
        (
            r##"{"type":"state","member":"m","sequence":1,"ops":[["a",["x"],1]]}"##,
            |p| Update::from_payload(p).map(drop),
            "ops[0][2]",
        ),
        (
            r##"{"type":"replaced","snapshot":{"members":[{"name":"m","kind":"state","sequence":1.5,"ops":[]}]}}"##,
            |p| Update::from_payload(p).map(drop),
            "snapshot.members[0].sequence",
        ),
    ];
    for (text, read, path) in cases {
        let err = read(&payload(text)).unwrap_err();
        assert_eq!(err.path(), path, "{text}: {err}");
    }
}

#[test]
fn control_calls_are_read_as_chord_reads_them() {
    let call = |text: &str| ControlCall::from_call(&ServiceCall::from_payload(&payload(text)).unwrap());
    assert_eq!(
        call(r##"{"serviceId":"$chord.service","member":"catalogue","args":[]}"##),
        Some(ControlCall::Catalogue)
    );
    assert_eq!(
        call(r##"{"serviceId":"$chord.service","member":"unsubscribe","args":["service-1"]}"##),
        Some(ControlCall::unsubscribe("service-1").unwrap())
    );
    for not_control in [
        r##"{"serviceId":"$chord.service","member":"catalogue","args":[1]}"##,
        r##"{"serviceId":"$chord.service","member":"subscribe","args":["a","b","plural"]}"##,
        r##"{"serviceId":"$chord.service","member":"subscribe","args":["","b","keyed"]}"##,
        r##"{"serviceId":"$chord.service","member":"unsubscribe","args":[1]}"##,
        r##"{"serviceId":"$chord.service","instance":{"key":"k","generation":1},"member":"catalogue","args":[]}"##,
        r##"{"serviceId":"demo.counter","member":"catalogue","args":[]}"##,
    ] {
        assert_eq!(call(not_control), None, "{not_control}");
    }
    let subscribe = ControlCall::subscribe("service-1", "demo.counter", ServiceMode::Keyed).unwrap();
    assert_eq!(
        subscribe.to_payload().unwrap(),
        payload(r##"{"serviceId":"$chord.service","member":"subscribe","args":["service-1","demo.counter","keyed"]}"##)
    );
    assert_eq!(ControlCall::subscribe("", "x", ServiceMode::Keyed).unwrap_err().path(), "args[0]");
}

#[test]
fn error_codes_are_the_eight() {
    let texts: Vec<&str> = RemoteServiceErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(texts.len(), 8);
    for code in RemoteServiceErrorCode::ALL {
        assert_eq!(RemoteServiceErrorCode::from_wire(code.as_str()), Some(code));
        let p = Payload::from_value(&serde_json::Value::String(code.as_str().into())).unwrap();
        assert_eq!(decode::<RemoteServiceErrorCode>(&p, "remote service error code").unwrap(), code);
    }
    assert_eq!(RemoteServiceErrorCode::from_wire("internal_error"), None);
}
