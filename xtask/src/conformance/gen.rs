//! The structure-aware generator of `cargo xtask conformance`: random envelopes of every kind,
//! random opaque JSON with awkward keys and numbers, schema violations, CBOR-level damage,
//! frame-level damage and random chunkings. Every case is a request in the shape of
//! `tests/vectors/vectors.jsonl`'s `request` field.

use super::cbor::{head, Item, Width};
use serde_json::{json, Map, Number, Value};

/// The project's one seeded generator (over `fastrand`), shared with the generator's sampler.
pub use pi_protocol_gen::sample::Rng;

/// Keys that trip up JavaScript objects, sorting, or key-order rules.
const AWKWARD_KEYS: &[&str] = &[
    "",
    "0",
    "1",
    "2",
    "10",
    "01",
    "-1",
    "1.5",
    "4294967294",
    "4294967295",
    "9007199254740993",
    "__proto__",
    "constructor",
    "prototype",
    "toString",
    "hasOwnProperty",
    "valueOf",
    "type",
    "id",
    "ok",
    "serverId",
    "é",
    "e\u{301}",
    "日本語",
    "😀",
    "\u{feff}bom",
    "\u{ffff}",
    "\u{10ffff}",
    "a\u{0}b",
    "Z",
    "a",
    "aa",
    "\u{7f}",
    " ",
];

const AWKWARD_STRINGS: &[&str] = &[
    "",
    "x",
    "hello world",
    "\u{feff}",
    "\u{feff}text",
    "\u{fffd}",
    "\u{0}",
    "line\nbreak\ttab\r",
    "\"quoted\" \\ backslash",
    "日本語のテキスト",
    "😀🎉 emoji",
    "\u{10ffff}",
    "\u{e000}",
    "__proto__",
    "null",
    "8",
];

/// Numbers every strict-JSON payload may carry.
const VALID_NUMBERS: &[f64] = &[
    0.0,
    1.0,
    -1.0,
    23.0,
    24.0,
    -24.0,
    -25.0,
    255.0,
    256.0,
    -256.0,
    -257.0,
    65535.0,
    65536.0,
    4294967295.0,
    4294967296.0,
    -4294967296.0,
    -4294967297.0,
    9007199254740991.0,
    -9007199254740991.0,
    0.5,
    -0.5,
    -0.0,
    5e-324,
    1.5e-10,
    std::f64::consts::PI,
    1e21,
    123456.789,
];

/// Numbers the protocol cannot carry (integral beyond +-(2^53 - 1)).
const UNSAFE_NUMBERS: &[f64] =
    &[9007199254740992.0, -9007199254740992.0, 1e300, f64::MAX, -f64::MAX, 1.8446744073709552e19];

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() <= 9007199254740991.0 && !(n == 0.0 && n.is_sign_negative()) {
        if n >= 0.0 {
            Value::Number(Number::from(n as u64))
        } else {
            Value::Number(Number::from(n as i64))
        }
    } else {
        Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)
    }
}

fn random_string(rng: &mut Rng) -> String {
    match rng.below(10) {
        0..=3 => rng.pick(AWKWARD_STRINGS).to_string(),
        4 => "long ".repeat(1 + rng.index(80)),
        5 => (0..1 + rng.index(12)).map(|_| char::from_u32(0x20 + rng.below(0x5f) as u32).unwrap_or('x')).collect(),
        6 => (0..1 + rng.index(6))
            .map(|_| loop {
                if let Some(c) = char::from_u32(rng.below(0x11_0000) as u32) {
                    break c;
                }
            })
            .collect(),
        _ => format!("{}-{}", rng.pick(&["req", "s", "att", "sub", "code"]), rng.below(1000)),
    }
}

fn random_key(rng: &mut Rng) -> String {
    if rng.chance(50) {
        rng.pick(AWKWARD_KEYS).to_string()
    } else if rng.chance(20) {
        "k".repeat(100 + rng.index(300))
    } else {
        random_string(rng)
    }
}

/// A random finite number, mostly of the valid kind; `allow_unsafe` lets unencodable ones in.
fn random_number(rng: &mut Rng, allow_unsafe: bool) -> Value {
    if allow_unsafe && rng.chance(30) {
        return match rng.below(4) {
            0 => Value::Number(Number::from(u64::MAX)),
            1 => Value::Number(Number::from(i64::MIN)),
            _ => number(*rng.pick(UNSAFE_NUMBERS)),
        };
    }
    match rng.below(5) {
        // An integral value written as a float ("5.0" in JSON text): the reference reads 5.
        4 => Number::from_f64(rng.below(1 << 20) as f64 - 1000.0).map(Value::Number).unwrap_or(Value::Null),
        0 | 1 => number(*rng.pick(VALID_NUMBERS)),
        2 => number(rng.below(100_000) as f64 - 50_000.0),
        _ => loop {
            let f = f64::from_bits(rng.next_u64());
            if f.is_finite() && (f.fract() != 0.0 || f.abs() <= 9007199254740991.0) {
                break number(f);
            }
        },
    }
}

/// Random strict JSON: every value kind, awkward keys, up to `depth` levels of nesting.
pub fn random_json(rng: &mut Rng, depth: u32, allow_unsafe: bool) -> Value {
    let kinds = if depth == 0 { 4 } else { 7 };
    match rng.below(kinds) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(50)),
        2 => {
            let unsafe_ok = allow_unsafe && rng.chance(10);
            random_number(rng, unsafe_ok)
        }
        3 => Value::String(random_string(rng)),
        4 => Value::Array((0..rng.index(5)).map(|_| random_json(rng, depth - 1, allow_unsafe)).collect()),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.index(6) {
                map.insert(random_key(rng), random_json(rng, depth - 1, allow_unsafe));
            }
            Value::Object(map)
        }
    }
}

/// A lowercase UUID version 4 (RFC 4122 variant).
fn server_id(rng: &mut Rng) -> String {
    let hex = |rng: &mut Rng, n: usize| -> String { (0..n).map(|_| format!("{:x}", rng.below(16))).collect() };
    format!(
        "{}-{}-4{}-{}{}-{}",
        hex(rng, 8),
        hex(rng, 4),
        hex(rng, 3),
        rng.pick(&["8", "9", "a", "b"]),
        hex(rng, 3),
        hex(rng, 12)
    )
}

fn bad_server_id(rng: &mut Rng) -> Value {
    let good = server_id(rng);
    Value::String(match rng.below(10) {
        0 => good.to_uppercase(),
        1 => format!("{{{good}}}"),
        2 => format!("urn:uuid:{good}"),
        3 => good.replace('-', ""),
        4 => "00000000-0000-0000-0000-000000000000".to_owned(),
        5 => format!("{good}\n"),
        6 => format!("{}1{}", &good[..14], &good[15..]),
        7 => format!("{}c{}", &good[..19], &good[20..]),
        8 => good[..35].to_owned(),
        _ => String::new(),
    })
}

fn non_empty_id(rng: &mut Rng) -> String {
    loop {
        let s = random_string(rng);
        if !s.is_empty() {
            return s;
        }
    }
}

fn object(entries: Vec<(&str, Value)>) -> Value {
    Value::Object(entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn target(rng: &mut Rng) -> Value {
    if rng.chance(50) {
        object(vec![("serverId", json!(server_id(rng)))])
    } else {
        session_target(rng)
    }
}

fn session_target(rng: &mut Rng) -> Value {
    object(vec![
        ("serverId", json!(server_id(rng))),
        ("sessionId", json!(non_empty_id(rng))),
        ("attachmentId", json!(non_empty_id(rng))),
    ])
}

fn error_body(rng: &mut Rng) -> Value {
    object(vec![("code", json!(non_empty_id(rng))), ("message", json!(random_string(rng)))])
}

fn version(rng: &mut Rng) -> Value {
    match rng.below(6) {
        0..=2 => json!(8),
        3 => json!(rng.below(20)),
        4 => json!(rng.below(u64::from(u32::MAX))),
        _ => json!(9007199254740991u64),
    }
}

/// A valid message for `side` ("client" or "server"), keys in schema order.
pub fn valid_message(rng: &mut Rng, side: &str, payload_depth: u32) -> Value {
    if side == "client" {
        match rng.below(3) {
            0 => object(vec![("type", json!("hello")), ("version", version(rng))]),
            1 => object(vec![
                ("type", json!("request")),
                ("id", json!(non_empty_id(rng))),
                ("target", target(rng)),
                ("call", random_json(rng, payload_depth, false)),
            ]),
            _ => object(vec![("type", json!("cancel")), ("id", json!(non_empty_id(rng))), ("target", target(rng))]),
        }
    } else {
        match rng.below(6) {
            0 => object(vec![("type", json!("hello")), ("version", json!(8)), ("serverId", json!(server_id(rng)))]),
            1 => object(vec![("type", json!("hello_error")), ("error", error_body(rng))]),
            2 => {
                let mut entries =
                    vec![("type", json!("response")), ("id", json!(non_empty_id(rng))), ("ok", json!(true))];
                if rng.chance(70) {
                    entries.push(("result", random_json(rng, payload_depth, false)));
                }
                object(entries)
            }
            3 => object(vec![
                ("type", json!("response")),
                ("id", json!(non_empty_id(rng))),
                ("ok", json!(false)),
                ("error", error_body(rng)),
            ]),
            4 => object(vec![
                ("type", json!("service_update")),
                ("subscriptionId", json!(non_empty_id(rng))),
                ("update", random_json(rng, payload_depth, false)),
            ]),
            _ => object(vec![
                ("type", json!("attachment")),
                ("attachment", if rng.chance(30) { Value::Null } else { session_target(rng) }),
            ]),
        }
    }
}

/// Breaks one schema rule of `message` (JSON level): a missing, unknown, mistyped or
/// out-of-range field.
pub fn violate(rng: &mut Rng, message: &mut Value) {
    let Value::Object(top) = message else { return };
    // Pick the envelope or one of its nested objects (target, error, attachment).
    let nested: Vec<String> = top.iter().filter(|(_, v)| v.is_object()).map(|(k, _)| k.clone()).collect();
    let use_nested = !nested.is_empty() && rng.chance(40);
    let map: &mut Map<String, Value> = if use_nested {
        let key = rng.pick(&nested).clone();
        match top.get_mut(&key) {
            Some(Value::Object(m)) => m,
            _ => return,
        }
    } else {
        top
    };
    let keys: Vec<String> = map.keys().cloned().collect();
    match rng.below(9) {
        0 if !keys.is_empty() => {
            let k = rng.pick(&keys).clone();
            map.shift_remove(&k);
        }
        1 => {
            let k = if rng.chance(50) {
                random_key(rng)
            } else {
                rng.pick(&["extra", "sessionId", "result", "error", "version"]).to_string()
            };
            map.insert(k, random_json(rng, 1, false));
        }
        2 if !keys.is_empty() => {
            let k = rng.pick(&keys).clone();
            let replacement = match rng.below(8) {
                0 => json!(""),
                1 => json!(8),
                2 => Value::Null,
                3 => json!([]),
                4 => json!({}),
                5 => json!(true),
                6 => json!(-1),
                _ => json!(random_string(rng)),
            };
            map.insert(k, replacement);
        }
        3 if map.contains_key("version") => {
            let v = match rng.below(7) {
                0 => json!(-1),
                1 => json!(1.5),
                2 => json!("8"),
                3 => json!(7),
                4 => json!(9),
                5 => number(9007199254740992.0),
                _ => json!(8.0),
            };
            map.insert("version".into(), v);
        }
        4 if map.contains_key("serverId") => {
            map.insert("serverId".into(), bad_server_id(rng));
        }
        5 if map.contains_key("type") => {
            let t = rng.pick(&[
                "hello",
                "request",
                "cancel",
                "response",
                "hello_error",
                "service_update",
                "attachment",
                "Hello",
                "",
                "ping",
            ]);
            map.insert("type".into(), json!(t));
        }
        6 if map.contains_key("ok") => {
            let v = map["ok"].as_bool().unwrap_or(true);
            map.insert("ok".into(), if rng.chance(50) { json!(!v) } else { json!("true") });
        }
        7 => {
            for k in ["id", "sessionId", "attachmentId", "subscriptionId", "code"] {
                if map.contains_key(k) {
                    map.insert(k.into(), json!(""));
                    break;
                }
            }
        }
        _ => {
            // An unencodable number somewhere in a payload or field.
            let k = keys.first().cloned().unwrap_or_else(|| "x".to_owned());
            map.insert(k, number(*rng.pick(UNSAFE_NUMBERS)));
        }
    }
}

/// Shuffles the keys of every envelope-level object (payloads keep their own order).
pub fn shuffle_keys(rng: &mut Rng, value: &mut Value, depth: u32) {
    if let Value::Object(map) = value {
        let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
        for i in (1..entries.len()).rev() {
            let j = rng.index(i + 1);
            entries.swap(i, j);
        }
        for (k, mut v) in entries {
            if depth > 0 && !matches!(k.as_str(), "call" | "result" | "update") {
                shuffle_keys(rng, &mut v, depth - 1);
            }
            map.insert(k, v);
        }
    }
}

/// Whether every object in `value` is already in JavaScript property order.
pub fn in_javascript_order(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().all(in_javascript_order),
        Value::Object(map) => {
            let mut copy = value.clone();
            pi_protocol::runtime::json::to_javascript_key_order(&mut copy);
            let same = copy.as_object().is_some_and(|c| c.keys().eq(map.keys()));
            same && map.values().all(in_javascript_order)
        }
        _ => true,
    }
}

/// Converts JSON to an item, with random but valid encoding choices when `noise` is set
/// (non-minimal widths, integral numbers as float64).
pub fn to_item(rng: &mut Rng, value: &Value, noise: bool) -> Item {
    let width = |rng: &mut Rng| {
        if noise && rng.chance(15) {
            Width::Bytes(*rng.pick(&[1u8, 2, 4, 8]))
        } else {
            Width::Shortest
        }
    };
    match value {
        Value::Null => Item::Simple(0xf6),
        Value::Bool(b) => Item::Simple(if *b { 0xf5 } else { 0xf4 }),
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            let integral = n.is_i64() || n.is_u64();
            if integral && !(noise && rng.chance(10)) {
                if let Some(u) = n.as_u64() {
                    return Item::Int { negative: false, arg: u, width: width(rng) };
                }
                if let Some(i) = n.as_i64() {
                    return Item::Int { negative: true, arg: (-1 - i) as u64, width: width(rng) };
                }
            }
            Item::F64(f.to_bits())
        }
        Value::String(s) => Item::Text { data: s.as_bytes().to_vec(), width: width(rng) },
        Value::Array(items) => {
            Item::Array { items: items.iter().map(|v| to_item(rng, v, noise)).collect(), width: width(rng) }
        }
        Value::Object(map) => {
            let w = width(rng);
            Item::Map {
                entries: map
                    .iter()
                    .map(|(k, v)| {
                        let key = Item::Text { data: k.as_bytes().to_vec(), width: width(rng) };
                        (key, to_item(rng, v, noise))
                    })
                    .collect(),
                width: w,
            }
        }
    }
}

fn nested(rng: &mut Rng, depth: usize) -> Item {
    let mut item = Item::Simple(0xf6);
    for _ in 0..depth {
        item = if rng.chance(50) {
            Item::Array { items: vec![item], width: Width::Shortest }
        } else {
            Item::Map { entries: vec![(Item::text("k"), item)], width: Width::Shortest }
        };
    }
    item
}

/// Replaces one random node of `item` with a damaged or unusual variant. Some variants are
/// valid CBOR of the strict subset (deep nesting within limits, byte strings for `decodeCbor`).
pub fn damage(rng: &mut Rng, item: &mut Item) {
    let index = rng.index(item.size());
    let Some(node) = item.node_mut(index) else { return };
    let original = node.clone();
    *node = match rng.below(17) {
        0 => Item::Tag { tag: *rng.pick(&[0u64, 1, 2, 24, 32, 55799, 0xffff_ffff]), item: Box::new(original) },
        1 => match original {
            Item::Int { negative, arg, .. } if arg < 2048 => {
                let f = if negative { -1.0 - arg as f64 } else { arg as f64 };
                if rng.chance(50) {
                    Item::F32((f as f32).to_bits())
                } else {
                    Item::F16(f16_bits(f))
                }
            }
            _ => Item::F16(rng.below(0x1_0000) as u16),
        },
        2 => match original {
            Item::Array { items, .. } => Item::IndefiniteArray(items),
            Item::Map { entries, .. } => Item::IndefiniteMap(entries),
            Item::Text { data, .. } => {
                let cut = rng.index(data.len() + 1);
                Item::IndefiniteText(vec![data[..cut].to_vec(), data[cut..].to_vec()])
            }
            other => Item::IndefiniteArray(vec![other]),
        },
        3 => match original {
            Item::Map { mut entries, .. } if !entries.is_empty() => {
                let (k, v) = entries[rng.index(entries.len())].clone();
                let k = match k {
                    Item::Text { data, .. } if rng.chance(50) => Item::Text { data, width: Width::Bytes(1) },
                    k => k,
                };
                let at = rng.index(entries.len() + 1);
                entries.insert(at, (k, v));
                Item::Map { entries, width: Width::Shortest }
            }
            other => other,
        },
        4 => {
            let mut data = match original {
                Item::Text { data, .. } => data,
                _ => b"text".to_vec(),
            };
            let bad = BAD_UTF8[rng.index(BAD_UTF8.len())];
            let at = rng.index(data.len() + 1);
            data.splice(at..at, bad.iter().copied());
            Item::Text { data, width: Width::Shortest }
        }
        5 => {
            let body = original.to_bytes();
            let (major, actual) = match &original {
                Item::Text { data, .. } => (3u8, data.len() as u64),
                Item::Array { items, .. } => (4, items.len() as u64),
                Item::Map { entries, .. } => (5, entries.len() as u64),
                Item::Bytes { data, .. } => (2, data.len() as u64),
                _ => (4, 1),
            };
            // The body without the original head.
            let mut h = Vec::new();
            head(&mut h, major, actual, Width::Shortest);
            let content = if body.len() >= h.len() && body.starts_with(&h) { body[h.len()..].to_vec() } else { body };
            let declared = match rng.below(4) {
                0 => actual + 1,
                1 => actual.saturating_sub(1),
                2 => 64 * 1024 * 1024 * 1024,
                _ => 999_999,
            };
            Item::Lying { major, declared, width: Width::Shortest, body: content }
        }
        6 => match original {
            Item::Text { data, width } => Item::Bytes { data, width },
            _ => Item::Bytes { data: vec![1, 2, 3], width: Width::Shortest },
        },
        7 => Item::Simple(*rng.pick(&[0xf7u8, 0xe0, 0xf3, 0xff, 0xf4, 0xf5, 0xf6])),
        8 => Item::Simple8(*rng.pick(&[0u8, 19, 20, 21, 22, 23, 24, 31, 32, 255])),
        9 => Item::Raw(vec![
            *rng.pick(&[0x1cu8, 0x1d, 0x1e, 0x1f, 0x3c, 0x3f, 0x5c, 0x7d, 0x9c, 0xbe, 0xdc, 0xfc, 0xfd, 0xfe])
        ]),
        10 => match original {
            Item::Map { mut entries, width } if !entries.is_empty() => {
                let i = rng.index(entries.len());
                entries[i].0 = match rng.below(4) {
                    0 => Item::Int { negative: false, arg: 1, width: Width::Shortest },
                    1 => Item::Array { items: vec![], width: Width::Shortest },
                    2 => Item::Bytes { data: b"k".to_vec(), width: Width::Shortest },
                    _ => Item::Simple(0xf6),
                };
                Item::Map { entries, width }
            }
            other => Item::Map {
                entries: vec![(Item::Int { negative: false, arg: 0, width: Width::Shortest }, other)],
                width: Width::Shortest,
            },
        },
        11 => match rng.below(8) {
            0 => Item::Int { negative: false, arg: 1 << 53, width: Width::Shortest },
            1 => Item::Int { negative: false, arg: (1 << 53) - 1, width: Width::Bytes(8) },
            2 => Item::Int { negative: true, arg: 1 << 53, width: Width::Shortest },
            3 => Item::Int { negative: true, arg: (1 << 53) - 1, width: Width::Shortest },
            4 => Item::Int { negative: false, arg: 0x0020_0000_0000_0000, width: Width::Bytes(8) },
            5 => Item::Int { negative: false, arg: u64::MAX, width: Width::Shortest },
            6 => Item::F64(*rng.pick(&[
                f64::NAN.to_bits(),
                f64::INFINITY.to_bits(),
                f64::NEG_INFINITY.to_bits(),
                1e300f64.to_bits(),
                9007199254740992f64.to_bits(),
                (-0.0f64).to_bits(),
                0x7ff8_0000_0000_0001,
            ])),
            _ => Item::F64(9007199254740991f64.to_bits()),
        },
        12 => {
            let depth = *rng.pick(&[62usize, 63, 64, 65, 66, 70, 200]);
            nested(rng, depth)
        }
        13 => Item::Raw(Vec::new()),
        14 => match original {
            Item::Array { mut items, width } => {
                items.push(Item::Raw(vec![0x00]));
                Item::Array { items, width }
            }
            other => other,
        },
        15 => Item::Array { items: (0..rng.index(40)).map(|_| Item::Simple(0xf6)).collect(), width: Width::Shortest },
        _ => Item::Text {
            data: "x".repeat(rng.index(300)).into_bytes(),
            width: Width::Bytes(*rng.pick(&[1u8, 2, 4, 8])),
        },
    };
}

/// Byte sequences that are not strict UTF-8 (the BOM, last, is valid and must be kept).
const BAD_UTF8: &[&[u8]] = &[
    &[0xff],
    &[0xc0, 0xaf],
    &[0xe0, 0x80, 0xaf],
    &[0xed, 0xa0, 0x80],
    &[0xed, 0xbf, 0xbf],
    &[0xf4, 0x90, 0x80, 0x80],
    &[0xf8, 0x88, 0x80, 0x80, 0x80],
    &[0xe2, 0x82],
    &[0x80],
    &[0xef, 0xbb, 0xbf],
];

/// float16 bits of a small integral `f` (exact for |f| <= 2048).
fn f16_bits(f: f64) -> u16 {
    if f == 0.0 {
        return if f.is_sign_negative() { 0x8000 } else { 0 };
    }
    let sign = if f < 0.0 { 0x8000u16 } else { 0 };
    let a = f.abs();
    let exp = a.log2().floor() as i32;
    let mantissa = ((a / 2f64.powi(exp) - 1.0) * 1024.0).round() as u16;
    sign | (((exp + 15) as u16) << 10) | (mantissa & 0x3ff)
}

/// Damages the byte stream: flips a bit, inserts, deletes or truncates.
pub fn damage_bytes(rng: &mut Rng, bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        bytes.push(rng.below(256) as u8);
        return;
    }
    let at = rng.index(bytes.len());
    match rng.below(5) {
        0 => bytes[at] ^= 1 << rng.below(8),
        1 => bytes.insert(at, rng.below(256) as u8),
        2 => {
            bytes.remove(at);
        }
        3 => bytes.truncate(at),
        _ => bytes[at] = rng.below(256) as u8,
    }
}

/// Splits `stream` into chunks at random places (empty chunks included).
pub fn chunk(rng: &mut Rng, stream: &[u8]) -> Vec<Vec<u8>> {
    match rng.below(10) {
        0..=2 => vec![stream.to_vec()],
        3 if stream.len() <= 300 => stream.iter().map(|b| vec![*b]).collect(),
        _ => {
            let mut cuts: Vec<usize> = (0..1 + rng.index(6)).map(|_| rng.index(stream.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for c in cuts {
                chunks.push(stream[from..c].to_vec());
                from = c;
            }
            chunks.push(stream[from..].to_vec());
            if rng.chance(10) {
                chunks.insert(0, Vec::new());
            }
            chunks
        }
    }
}

fn frame_option(rng: &mut Rng, longest: usize) -> Option<Value> {
    if rng.chance(85) {
        return None;
    }
    Some(match rng.below(9) {
        0 => json!(longest),
        1 => json!(longest.saturating_sub(1)),
        2 => json!(0),
        3 => json!(rng.below(64)),
        4 => json!(-1),
        5 => json!(1.5),
        6 => json!(4294967296u64),
        7 => json!(4294967295u64),
        _ => json!(16777216),
    })
}

/// A `decode` request: frames of valid, violated or damaged messages, chunked.
pub fn decode_case(rng: &mut Rng) -> Value {
    let side = if rng.chance(50) { "client" } else { "server" };
    let frames = *rng.pick(&[0usize, 1, 1, 1, 2, 2, 3, 4]);
    let mut stream = Vec::new();
    let mut longest = 0;
    for _ in 0..frames {
        let message_side = if rng.chance(8) {
            if side == "client" {
                "server"
            } else {
                "client"
            }
        } else {
            side
        };
        let mut message = valid_message(rng, message_side, 3);
        if rng.chance(15) {
            violate(rng, &mut message);
        }
        if rng.chance(30) {
            shuffle_keys(rng, &mut message, 2);
        }
        let noise = rng.chance(50);
        let mut item = to_item(rng, &message, noise);
        if rng.chance(25) {
            damage(rng, &mut item);
        }
        let mut payload = item.to_bytes();
        if rng.chance(3) {
            payload = (0..rng.index(20)).map(|_| rng.below(256) as u8).collect();
        }
        longest = longest.max(payload.len());
        let declared = if rng.chance(4) {
            match rng.below(4) {
                0 => payload.len() as u64 + 1 + rng.below(3),
                1 => (payload.len() as u64).saturating_sub(1 + rng.below(3)),
                2 => 0xffff_ffff,
                _ => 16 * 1024 * 1024 + 1,
            }
        } else {
            payload.len() as u64
        };
        stream.extend_from_slice(&(declared as u32).to_be_bytes());
        stream.extend_from_slice(&payload);
    }
    if rng.chance(10) {
        damage_bytes(rng, &mut stream);
    }
    let chunks: Vec<Value> = chunk(rng, &stream).iter().map(|c| json!(hex::encode(c))).collect();
    let mut request = object(vec![("op", json!("decode")), ("side", json!(side)), ("chunks", Value::Array(chunks))]);
    if rng.chance(8) {
        request["end"] = json!(false);
    }
    if let Some(limit) = frame_option(rng, longest) {
        request["maxFrameLength"] = limit;
    }
    request
}

/// An `encode` request: a message as JSON (valid mostly), keys in schema order or shuffled.
pub fn encode_case(rng: &mut Rng) -> Value {
    let side = if rng.chance(50) { "client" } else { "server" };
    let mut message = valid_message(rng, side, 3);
    if rng.chance(20) {
        violate(rng, &mut message);
    }
    let mut schema_order = true;
    if rng.chance(40) {
        shuffle_keys(rng, &mut message, 2);
        schema_order = false;
    }
    if !in_javascript_order(&message) {
        schema_order = false;
    }
    let mut request = object(vec![("op", json!("encode")), ("side", json!(side)), ("message", message)]);
    if !schema_order {
        request["schemaOrder"] = json!(false);
    }
    if rng.chance(10) {
        let length = request["message"].to_string().len();
        request["maxFrameLength"] = json!(rng.below(length as u64 + 20));
    }
    request
}

/// Arbitrary CBOR for the raw decoder: JSON-like items, byte strings, damage.
fn random_item(rng: &mut Rng, depth: u32) -> Item {
    if rng.chance(15) {
        return Item::Bytes { data: (0..rng.index(8)).map(|_| rng.below(256) as u8).collect(), width: Width::Shortest };
    }
    if depth > 0 && rng.chance(30) {
        return Item::Array {
            items: (0..rng.index(4)).map(|_| random_item(rng, depth - 1)).collect(),
            width: Width::Shortest,
        };
    }
    if depth > 0 && rng.chance(25) {
        let entries = (0..rng.index(4)).map(|_| (Item::text(&random_key(rng)), random_item(rng, depth - 1))).collect();
        return Item::Map { entries, width: Width::Shortest };
    }
    let value = random_json(rng, depth, true);
    to_item(rng, &value, true)
}

/// A `decodeCbor` request with random (sometimes invalid) limits.
pub fn decode_cbor_case(rng: &mut Rng) -> Value {
    let mut item = random_item(rng, 4);
    if rng.chance(40) {
        damage(rng, &mut item);
    }
    let mut bytes = item.to_bytes();
    if rng.chance(8) {
        damage_bytes(rng, &mut bytes);
    }
    let mut request = object(vec![("op", json!("decodeCbor")), ("hex", json!(hex::encode(&bytes)))]);
    let len = bytes.len() as u64;
    if rng.chance(30) {
        request["maxByteLength"] = match rng.below(6) {
            0 => json!(len),
            1 => json!(len.saturating_sub(1)),
            2 => json!(rng.below(len + 1)),
            3 => json!(-1),
            4 => json!(4294967296u64),
            _ => json!(rng.below(32)),
        };
    }
    if rng.chance(30) {
        request["maxContainerLength"] = match rng.below(4) {
            0 => json!(rng.below(5)),
            1 => json!(0.5),
            2 => json!(4294967295u64),
            _ => json!(rng.below(50)),
        };
    }
    if rng.chance(30) {
        request["maxDepth"] = match rng.below(5) {
            0 => json!(rng.below(6)),
            1 => json!(512),
            2 => json!(513),
            3 => json!(-0.0),
            _ => json!(rng.below(70)),
        };
    }
    request
}

/// Whole frames (header included) cut from the captures of real traffic, by side.
#[derive(Default)]
pub struct Captures {
    /// Frames a client sent.
    pub client: Vec<Vec<u8>>,
    /// Frames a server sent.
    pub server: Vec<Vec<u8>>,
}

impl Captures {
    /// Reads every `*.bin` capture in `dir`, split into frames (a truncated tail is dropped).
    pub fn load(dir: &std::path::Path) -> Captures {
        let mut captures = Captures::default();
        let Ok(entries) = std::fs::read_dir(dir) else { return captures };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".bin") else { continue };
            let Ok(bytes) = std::fs::read(entry.path()) else { continue };
            let frames = if stem.ends_with("server") { &mut captures.server } else { &mut captures.client };
            let mut at = 0;
            while at + 4 <= bytes.len() {
                let length = u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
                if at + 4 + length > bytes.len() {
                    break;
                }
                frames.push(bytes[at..at + 4 + length].to_vec());
                at += 4 + length;
            }
        }
        captures
    }
}

/// A `decode` request built from 1 to 5 consecutive captured frames, often damaged.
pub fn capture_case(rng: &mut Rng, captures: &Captures) -> Option<Value> {
    let side = if rng.chance(50) { "client" } else { "server" };
    let frames = if side == "client" { &captures.client } else { &captures.server };
    if frames.is_empty() {
        return None;
    }
    let start = rng.index(frames.len());
    let count = 1 + rng.index(5);
    let mut stream: Vec<u8> = frames[start..(start + count).min(frames.len())].concat();
    for _ in 0..rng.below(3) {
        damage_bytes(rng, &mut stream);
    }
    let chunks: Vec<Value> = chunk(rng, &stream).iter().map(|c| json!(hex::encode(c))).collect();
    Some(object(vec![("op", json!("decode")), ("side", json!(side)), ("chunks", Value::Array(chunks))]))
}
