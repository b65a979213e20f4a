//! Hostile inputs for the strict CBOR reader's fast paths: the iterative skip walker
//! (`Reader::skip_nested`: short-text and float64 fast paths, duplicate keys through `KeyStack`
//! fingerprints, the hash set of maps above 16 entries, the spill past the inline keys), the
//! word-at-a-time ASCII test behind `utf8_str`, the unvalidated key reads of the derived decoders
//! (`read_key_raw`) and the peeks (`peek_map_value`, `peek_map_keys_into`), and the vectored
//! encoder.
//!
//! Every case asserts real values: the verdict and the rule of the raw validator
//! (`decode_cbor`) against an independent model, and the typed decoders
//! (`ClientMessageDecoder`, `ServerMessageDecoder`) against the raw validator: when the raw
//! validator refuses a payload for a CBOR rule, both typed decoders must refuse it for the same
//! CBOR rule (docs/PROTOCOL.md section 2: the reference reads the whole item before the schema);
//! when it accepts, a typed decoder may only add schema errors.

use std::collections::HashSet;

use pi_protocol::runtime::{
    encode_message, encode_message_vectored, Decode, Encode, MessageDecoder, Reader, Scalar, Validate,
};
use pi_protocol::{
    decode_cbor, AttachmentId, Cancel, CborLimits, CborValue, ClientHello, ClientMessage, ClientMessageDecoder,
    CodecOptions, ErrorBody, ErrorCode, ErrorKind, ErrorResponse, Integer, Payload, ProtocolError, Request, RequestId,
    Response, RpcTarget, Rule, ServerHello, ServerHelloError, ServerId, ServerMessage, ServerMessageDecoder,
    ServerTarget, ServiceUpdate, SessionId, SessionTarget, SubscriptionId, SuccessResponse,
};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};

const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

// ------------------------------------------------------------------ CBOR builders

/// A head of major type `major` with argument `n` in its shortest form.
fn head(major: u8, n: u64) -> Vec<u8> {
    let ai = match n {
        0..=23 => n as u8,
        24..=0xff => 24,
        0x100..=0xffff => 25,
        0x1_0000..=0xffff_ffff => 26,
        _ => 27,
    };
    head_as(major, n, ai)
}

/// A head of major type `major` with argument `n` written with additional information `ai`
/// (below 24: `n` itself, which must equal `ai`; 24-27: 1, 2, 4 or 8 argument bytes, so a
/// non-minimal width when `n` is small).
fn head_as(major: u8, n: u64, ai: u8) -> Vec<u8> {
    let first = (major << 5) | ai;
    match ai {
        0..=23 => {
            assert_eq!(n, u64::from(ai));
            vec![first]
        }
        24 => vec![first, n as u8],
        25 => [&[first][..], &(n as u16).to_be_bytes()].concat(),
        26 => [&[first][..], &(n as u32).to_be_bytes()].concat(),
        27 => [&[first][..], &n.to_be_bytes()].concat(),
        _ => unreachable!(),
    }
}

fn text(s: &[u8]) -> Vec<u8> {
    [head(3, s.len() as u64), s.to_vec()].concat()
}

/// A text string whose length head uses additional information `ai` (24-27), or the shortest
/// head when `ai` is 0.
fn text_as(s: &[u8], ai: u8) -> Vec<u8> {
    if ai == 0 {
        return text(s);
    }
    [head_as(3, s.len() as u64, ai), s.to_vec()].concat()
}

fn map(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut out = head(5, entries.len() as u64);
    for (k, v) in entries {
        out.extend_from_slice(k);
        out.extend_from_slice(v);
    }
    out
}

fn array(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = head(4, items.len() as u64);
    for item in items {
        out.extend_from_slice(item);
    }
    out
}

fn entry(key: &str, value: Vec<u8>) -> (Vec<u8>, Vec<u8>) {
    (text(key.as_bytes()), value)
}

fn server_target() -> Vec<u8> {
    map(&[entry("serverId", text(SERVER.as_bytes()))])
}

/// A `request` payload with the given id and call items (already encoded).
fn request(id: Vec<u8>, call: Vec<u8>) -> Vec<u8> {
    map(&[entry("type", text(b"request")), entry("id", id), entry("target", server_target()), entry("call", call)])
}

/// A `service_update` payload carrying `update`.
fn service_update(update: Vec<u8>) -> Vec<u8> {
    map(&[entry("type", text(b"service_update")), entry("subscriptionId", text(b"sub-1")), entry("update", update)])
}

/// A frame: the 4-byte big-endian length, then `payload`.
fn frame(payload: &[u8]) -> Vec<u8> {
    [&(payload.len() as u32).to_be_bytes()[..], payload].concat()
}

fn limits(max_byte_length: u64, max_container_length: u64, max_depth: u64) -> CborLimits {
    CborLimits::new(max_byte_length, max_container_length, max_depth).expect("limits in range")
}

// ------------------------------------------------------------------ decoding helpers

/// One frame of `payload` through a message decoder of `T` with `limits`.
fn typed<T: for<'de> Decode<'de>>(payload: &[u8], limits: CborLimits) -> Result<T, ProtocolError> {
    let mut decoder = MessageDecoder::<T>::with_options(&CodecOptions::new().cbor_limits(limits));
    let mut results = decoder.push(&frame(payload));
    assert_eq!(results.len(), 1, "one frame gives one result: {}", hex::encode(payload));
    let result = results.pop().expect("one result");
    if result.is_ok() {
        decoder.end().expect("a complete stream ends cleanly");
    }
    result
}

/// One frame of `payload` through a client decoder with `limits`.
fn typed_client(payload: &[u8], limits: CborLimits) -> Result<ClientMessage, ProtocolError> {
    typed(payload, limits)
}

/// One frame of `payload` through a server decoder with `limits`.
fn typed_server(payload: &[u8], limits: CborLimits) -> Result<ServerMessage, ProtocolError> {
    typed(payload, limits)
}

/// How the typed decoders' verdict on a payload relates to the raw validator's, or `Err` with
/// a description of the disagreement.
fn typed_agrees_with_raw(payload: &[u8], limits: CborLimits) -> Result<(), String> {
    let raw = decode_cbor(payload, limits);
    let typed =
        [("client", typed_client(payload, limits).map(drop)), ("server", typed_server(payload, limits).map(drop))];
    for (side, verdict) in typed {
        match (&raw, verdict) {
            (Err(raw), Err(typed)) => {
                assert_eq!(raw.kind(), ErrorKind::Cbor, "decode_cbor only reports CBOR errors");
                if typed.kind() != ErrorKind::Cbor || typed.rule() != raw.rule() {
                    return Err(format!(
                        "{side} decoder: {typed:?}; decode_cbor: {raw:?}; payload {}",
                        hex::encode(payload)
                    ));
                }
            }
            (Err(raw), Ok(())) => {
                return Err(format!("{side} decoder accepted; decode_cbor: {raw:?}; payload {}", hex::encode(payload)))
            }
            (Ok(_), Err(typed)) => {
                if typed.kind() != ErrorKind::Schema {
                    return Err(format!(
                        "{side} decoder: {typed:?}; decode_cbor accepted; payload {}",
                        hex::encode(payload)
                    ));
                }
            }
            (Ok(_), Ok(())) => {}
        }
    }
    Ok(())
}

/// Asserts [`typed_agrees_with_raw`] and returns the raw verdict.
fn agree(payload: &[u8], limits: CborLimits) -> Result<CborValue, ProtocolError> {
    if let Err(disagreement) = typed_agrees_with_raw(payload, limits) {
        panic!("{disagreement}");
    }
    decode_cbor(payload, limits)
}

fn rule_of<T: std::fmt::Debug>(result: Result<T, ProtocolError>) -> Rule {
    match result {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Cbor, "{e:?}");
            e.rule()
        }
    }
}

fn defaults() -> CborLimits {
    CborLimits::default()
}

// ------------------------------------------------------------------ text strings

/// Lengths around every boundary of the fast paths: the 8-byte word, the short-text head (23/24)
/// and the one-byte length (255/256).
const LENGTHS: [usize; 21] = [0, 1, 2, 6, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 63, 64, 255, 256, 257];

/// Strings of length `len`: ASCII, valid non-ASCII, and invalid UTF-8 at every position (a byte
/// 0xFF, a lone continuation byte, a lead byte without its continuation, an overlong form and
/// a surrogate), each with its expected validity.
fn strings_of_length(len: usize) -> Vec<(Vec<u8>, bool)> {
    let mut out = vec![(vec![b'a'; len], true)];
    for at in 0..len {
        for bad in [0xffu8, 0x80, 0xc3, 0xc0, 0xed] {
            let mut s = vec![b'a'; len];
            s[at] = bad;
            out.push((s, false));
        }
        if at + 2 <= len {
            let mut s = vec![b'a'; len];
            s[at..at + 2].copy_from_slice("é".as_bytes());
            out.push((s, true));
            // An overlong '/', and the first half of a surrogate followed by a continuation.
            let mut s = vec![b'a'; len];
            s[at..at + 2].copy_from_slice(&[0xc0, 0xaf]);
            out.push((s, false));
        }
        if at + 3 <= len {
            let mut s = vec![b'a'; len];
            s[at..at + 3].copy_from_slice(&[0xed, 0xa0, 0x80]); // U+D800
            out.push((s, false));
            let mut s = vec![b'a'; len];
            s[at..at + 3].copy_from_slice("€".as_bytes());
            out.push((s, true));
        }
        if at + 4 <= len {
            let mut s = vec![b'a'; len];
            s[at..at + 4].copy_from_slice(&[0xf4, 0x90, 0x80, 0x80]); // above U+10FFFF
            out.push((s, false));
        }
    }
    for (s, valid) in &out {
        assert_eq!(std::str::from_utf8(s).is_ok(), *valid, "test table: {}", hex::encode(s));
    }
    out
}

/// Every header form of a text string of `len` bytes: the shortest, and 1, 2, 4 and 8-byte
/// length arguments where they are not the shortest.
fn header_forms(len: usize) -> Vec<u8> {
    let mut forms = vec![0];
    for ai in 24..=27u8 {
        let fits = match ai {
            24 => len <= 0xff,
            _ => true,
        };
        if fits && head(3, len as u64).len() != head_as(3, len as u64, ai).len() {
            forms.push(ai);
        }
    }
    forms
}

#[test]
fn text_reads_match_the_standard_utf8_validator() {
    for len in LENGTHS {
        for (s, valid) in strings_of_length(len) {
            for ai in header_forms(len) {
                let item = text_as(&s, ai);
                let expect = |r: Result<&str, ProtocolError>, what: &str| match r {
                    Ok(t) => {
                        assert!(valid, "{what} accepted invalid UTF-8 {}", hex::encode(&s));
                        assert_eq!(t.as_bytes(), &s[..], "{what}");
                    }
                    Err(e) => {
                        assert!(!valid, "{what} refused valid UTF-8 {}: {e:?}", hex::encode(&s));
                        assert_eq!(e.rule(), Rule::InvalidUtf8, "{what}");
                    }
                };
                expect(Reader::new(&item, defaults()).read_text(), "read_text");
                expect(Reader::new(&item, defaults()).read_key(), "read_key");
                match Reader::new(&item, defaults()).read_scalar() {
                    Ok(Scalar::Text(t)) => {
                        assert!(valid);
                        assert_eq!(t.as_bytes(), &s[..]);
                    }
                    Ok(other) => panic!("read_scalar gave {other:?}"),
                    Err(e) => {
                        assert!(!valid);
                        assert_eq!(e.rule(), Rule::InvalidUtf8);
                    }
                }
                let bytes = Reader::new(&item, defaults()).read_key_bytes();
                assert_eq!(bytes.is_ok(), valid, "read_key_bytes {}", hex::encode(&s));
                // The raw key read returns the bytes whatever they are.
                assert_eq!(Reader::new(&item, defaults()).read_key_raw().expect("raw key"), &s[..]);
                let mut skip = Reader::new(&item, defaults());
                assert_eq!(skip.skip().is_ok(), valid, "skip {}", hex::encode(&s));
                match decode_cbor(&item, defaults()) {
                    Ok(v) => {
                        assert!(valid);
                        assert_eq!(v, CborValue::Text(String::from_utf8(s.clone()).unwrap()));
                    }
                    Err(e) => {
                        assert!(!valid);
                        assert_eq!(e.rule(), Rule::InvalidUtf8);
                    }
                }
            }
        }
    }
}

/// The place of a string inside a frame; `true` when the frame is otherwise valid for the
/// client side, so that a valid string makes the whole message valid.
type Placement = (&'static str, fn(Vec<u8>) -> Vec<u8>);

fn place(name: &'static str, f: fn(Vec<u8>) -> Vec<u8>) -> Placement {
    (name, f)
}

fn placements() -> Vec<Placement> {
    vec![
        place("call value", |t| request(text(b"r1"), map(&[entry("member", t)]))),
        place("call key", |t| request(text(b"r1"), map(&[(t, text(b"x")), entry("z", Vec::from([0xf6]))]))),
        place("call key after 16 others", |t| {
            let mut entries: Vec<_> = (0..16).map(|i| entry(&format!("k{i:02}"), vec![i as u8])).collect();
            entries.push((t, vec![0xf5]));
            request(text(b"r1"), map(&entries))
        }),
        place("nested call key", |t| request(text(b"r1"), array(&[array(&[map(&[(t, array(&[]))])])]))),
        place("call element between floats", |t| {
            let f = [vec![0xfb], 0.5f64.to_be_bytes().to_vec()].concat();
            request(text(b"r1"), array(&[f.clone(), t, f]))
        }),
        place("call, last byte of the frame", |t| request(text(b"r1"), t)),
        place("request id", |t| request(t, Vec::from([0xf6]))),
        place("id before type", |t| {
            map(&[
                entry("id", t),
                entry("type", text(b"request")),
                entry("target", server_target()),
                entry("call", vec![0xf6]),
            ])
        }),
        place("session id (key-set peek)", |t| {
            let target = map(&[
                entry("sessionId", t),
                entry("serverId", text(SERVER.as_bytes())),
                entry("attachmentId", text(b"a1")),
            ]);
            map(&[entry("type", text(b"cancel")), entry("id", text(b"r1")), entry("target", target)])
        }),
        place("type literal", |t| map(&[entry("type", t), entry("version", vec![8])])),
        place("envelope key", |t| map(&[entry("type", text(b"hello")), (t, vec![8])])),
        place("target key", |t| {
            map(&[entry("type", text(b"cancel")), entry("id", text(b"r1")), entry("target", map(&[(t, text(b"x"))]))])
        }),
        place("update value", |t| service_update(array(&[t]))),
    ]
}

#[test]
fn typed_decoders_agree_with_raw_on_text_everywhere() {
    for len in LENGTHS {
        for (s, valid) in strings_of_length(len) {
            for ai in header_forms(len) {
                for (name, place) in placements() {
                    let payload = place(text_as(&s, ai));
                    if let Err(disagreement) = typed_agrees_with_raw(&payload, defaults()) {
                        panic!("{name}, length {len}, header {ai}: {disagreement}");
                    }
                    let raw = decode_cbor(&payload, defaults());
                    assert_eq!(raw.is_ok(), valid, "{name}: {}", hex::encode(&payload));
                    if !valid {
                        assert_eq!(raw.unwrap_err().rule(), Rule::InvalidUtf8, "{name}");
                    }
                }
            }
        }
    }
}

#[test]
fn valid_text_in_ids_and_payloads_decodes_to_the_same_string() {
    for len in LENGTHS.into_iter().filter(|&l| l > 0) {
        for (s, valid) in strings_of_length(len) {
            if !valid {
                continue;
            }
            let string = String::from_utf8(s.clone()).unwrap();
            for ai in header_forms(len) {
                let payload = request(text_as(&s, ai), map(&[(text_as(&s, ai), text_as(&s, ai))]));
                match typed_client(&payload, defaults()).expect("valid request") {
                    ClientMessage::Request(r) => {
                        assert_eq!(r.id.as_str(), string);
                        let mut object = serde_json::Map::new();
                        object.insert(string.clone(), Value::String(string.clone()));
                        assert_eq!(r.call.to_value(), Value::Object(object));
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }
}

// ------------------------------------------------------------------ the peeks

/// Found by this file: the peeks of the tagged and key-set unions (`peek_map_value`,
/// `peek_map_keys_into`) pass over short text strings by their length, read keys without
/// checking their UTF-8 and check no duplicate keys, so when a later entry breaks another CBOR
/// rule the typed decoders reported that later rule, although the raw validator (and the
/// reference, asked through `xtask/oracle`) report the invalid UTF-8 or the duplicate key that
/// comes first. The verdict (refused) was right; the rule was not.
#[test]
fn peek_reports_the_first_cbor_error_in_wire_order() {
    let cases: [(&str, Vec<u8>, Rule); 6] = [
        // {"id": "\xff", "call": tag(0) 0}: invalid UTF-8 first, then a tag.
        ("value then tag", hex::decode("a262696461ff6463616c6cc000").unwrap(), Rule::InvalidUtf8),
        // {"\xff": 1, "call": tag(0) 0}: an invalid key first, then a tag.
        ("key then tag", hex::decode("a261ff016463616c6cc000").unwrap(), Rule::InvalidUtf8),
        // {"id": "\xff", "type": 1.0e300}: invalid UTF-8, then an unsafe integer as the tag value.
        (
            "value then bad tag value",
            hex::decode("a262696461ff6474797065fb7e37e43c8800759c").unwrap(),
            Rule::InvalidUtf8,
        ),
        // {"id": "a", "id": "b", "call": tag(0) 0}: a duplicate key, then a tag.
        ("duplicate then tag", hex::decode("a3626964616162696461626463616c6cc000").unwrap(), Rule::DuplicateKey),
        // A cancel whose target has an invalid sessionId, then a serverId that is a tag: the
        // key-set peek of the target.
        (
            "key-set peek, invalid UTF-8",
            map(&[
                entry("type", text(b"cancel")),
                entry("id", text(b"r1")),
                entry("target", map(&[entry("sessionId", vec![0x61, 0xff]), entry("serverId", vec![0xc0, 0x00])])),
            ]),
            Rule::InvalidUtf8,
        ),
        // The same target with serverId twice before the tag.
        (
            "key-set peek, duplicate",
            map(&[
                entry("type", text(b"cancel")),
                entry("id", text(b"r1")),
                entry(
                    "target",
                    map(&[
                        entry("serverId", text(SERVER.as_bytes())),
                        entry("serverId", text(SERVER.as_bytes())),
                        entry("sessionId", vec![0xc0, 0x00]),
                    ]),
                ),
            ]),
            Rule::DuplicateKey,
        ),
    ];
    for (name, payload, first) in cases {
        assert_eq!(rule_of(decode_cbor(&payload, defaults())), first, "{name}");
        assert_eq!(rule_of(typed_client(&payload, defaults())), first, "{name}: {}", hex::encode(&payload));
        assert_eq!(rule_of(typed_server(&payload, defaults())), first, "{name}: {}", hex::encode(&payload));
    }
    // Found by `typed_and_raw_agree_on_damaged_payloads`: an invalid key, then a truncated string.
    let damaged = hex::decode("a26480007970656a6174746163686d656e746a6174746163686d656e74f6").unwrap();
    assert_eq!(rule_of(decode_cbor(&damaged, defaults())), Rule::InvalidUtf8);
    assert_eq!(rule_of(typed_client(&damaged, limits(40, 1000, 1))), Rule::InvalidUtf8);
}

#[test]
fn peeks_on_hostile_maps() {
    // The tag value is found after entries of every kind; passed-over values are not trusted.
    let long = text(&[b'x'; 300]);
    let payload = map(&[
        entry("a", text(b"short")),
        entry("b", long.clone()),
        entry("c", array(&[long, vec![0xfb, 0, 0, 0, 0, 0, 0, 0, 0]])),
        entry("type", text(b"hello")),
    ]);
    let r = Reader::new(&payload, defaults());
    assert_eq!(r.peek_map_value("type").unwrap(), Some(Scalar::Text("hello")));
    assert_eq!(r.peek_map_value("zzz").unwrap(), None);
    assert_eq!(r.position(), 0, "a peek does not move the cursor");
    let mut keys = [&b""[..]; 4];
    assert_eq!(r.peek_map_keys_into(&mut keys).unwrap(), Some(4));
    assert_eq!(keys, [&b"a"[..], &b"b"[..], &b"c"[..], &b"type"[..]]);
    let mut few = [&b""[..]; 3];
    assert_eq!(r.peek_map_keys_into(&mut few).unwrap(), None);

    // A passed-over short string longer than the byte limit, or truncated: errors, not panics.
    let tight = limits(4, 100, 10);
    let payload = map(&[entry("a", text(b"12345")), entry("type", text(b"x"))]);
    assert_eq!(rule_of(Reader::new(&payload, tight).peek_map_value("type")), Rule::ByteLengthLimit { limit: 4 });
    let truncated = [0xa2, 0x61, b'a', 0x78, 0x05, b'1', b'2'];
    assert_eq!(rule_of(Reader::new(&truncated, defaults()).peek_map_value("type")), Rule::Truncated);
    let mut keys = [&b""[..]; 2];
    assert_eq!(rule_of(Reader::new(&truncated, defaults()).peek_map_keys_into(&mut keys)), Rule::Truncated);
    // A key head with its one-byte length missing (0x78 at the very end).
    assert_eq!(rule_of(Reader::new(&[0xa1, 0x78], defaults()).peek_map_value("type")), Rule::Truncated);
    // Depth: with maxDepth 0 the keys of the top-level map are too deep.
    let hello = map(&[entry("type", text(b"hello")), entry("version", vec![8])]);
    assert_eq!(rule_of(Reader::new(&hello, limits(100, 100, 0)).peek_map_value("type")), Rule::DepthLimit { limit: 0 });
    assert_eq!(rule_of(typed_client(&hello, limits(100, 100, 0))), Rule::DepthLimit { limit: 0 });
    assert!(typed_client(&hello, limits(100, 100, 1)).is_ok());
}

// ------------------------------------------------------------------ duplicate keys

/// Keys that share their length and first seven bytes (the fingerprint), or only the
/// fingerprint's bytes modulo 256 in length, or that differ only in how their head is written.
fn confusable_keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"a".to_vec(),
        b"abcdef".to_vec(),
        b"abcdefg".to_vec(),
        b"abcdefh".to_vec(),
        b"abcdef\0".to_vec(),
        b"abcdefgh".to_vec(),
        b"abcdefgi".to_vec(),
        b"abcdefg\xc3\xa9".to_vec(),
        "abcdefgé".as_bytes().to_vec(),
        b"abcdefghijklmnopqrstuvw".to_vec(), // 23: the last short key
        b"abcdefghijklmnopqrstuvx".to_vec(),
        b"abcdefghijklmnopqrstuvwx".to_vec(), // 24: the first long key
        b"abcdefghijklmnopqrstuvwy".to_vec(),
    ];
    // 257 bytes: the length's top byte is 1 in a u64 fingerprint shifted by 56 bits, as for "a".
    let mut k257 = b"a".to_vec();
    k257.resize(257, 0);
    keys.push(k257.clone());
    let mut k257b = k257.clone();
    k257b[256] = 1;
    keys.push(k257b);
    let mut k263 = b"abcdefg".to_vec();
    k263.resize(263, b'z');
    keys.push(k263.clone());
    let mut k263b = k263.clone();
    k263b[262] = b'y';
    keys.push(k263b);
    keys.dedup();
    keys
}

#[test]
fn confusable_keys_are_distinct_and_each_is_its_own_duplicate() {
    let keys = confusable_keys();
    for (i, a) in keys.iter().enumerate() {
        for (j, b) in keys.iter().enumerate() {
            for (ai_a, ai_b) in [(0, 0), (0, 24), (25, 0), (26, 27)] {
                if (ai_a == 24 || ai_b == 24) && (a.len() > 255 || b.len() > 255) {
                    continue;
                }
                let m = map(&[(text_as(a, ai_a), vec![0x01]), (text_as(b, ai_b), vec![0x02])]);
                let result = decode_cbor(&m, defaults());
                if i == j {
                    assert_eq!(rule_of(result), Rule::DuplicateKey, "{}", hex::encode(&m));
                } else {
                    assert!(result.is_ok(), "{} and {} are different keys: {result:?}", hex::encode(a), hex::encode(b));
                }
                // The same map at depth 3 of a request's call, and as an update.
                let nested = array(&[map(&[entry("x", m.clone())])]);
                let want_ok = i != j;
                assert_eq!(agree(&request(text(b"r1"), nested.clone()), defaults()).is_ok(), want_ok);
                assert_eq!(agree(&service_update(nested), defaults()).is_ok(), want_ok);
            }
        }
    }
}

#[test]
fn duplicate_keys_around_the_hash_set_switch() {
    let keys = confusable_keys();
    for n in [2usize, 15, 16, 17, 18, 31, 32, 33, 40] {
        // n distinct keys, built from the confusable ones, then each position duplicated.
        let distinct: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let mut k = keys[i % keys.len()].clone();
                if i >= keys.len() {
                    k.extend_from_slice(format!("~{i}").as_bytes());
                }
                k
            })
            .collect();
        assert_eq!(distinct.iter().collect::<HashSet<_>>().len(), n);
        let entries: Vec<_> = distinct.iter().map(|k| (text(k), vec![0xf6])).collect();
        assert!(decode_cbor(&map(&entries), defaults()).is_ok(), "{n} distinct keys");
        for (dup, key) in distinct.iter().enumerate() {
            for at in [0, dup, n - 1] {
                // Replace the key at `at` (not `dup` itself) by a copy of key `dup`.
                let mut e = entries.clone();
                let victim = if at == dup { (dup + 1) % n } else { at };
                e[victim].0 = text_as(key, if key.len() < 256 { 24 } else { 25 });
                let m = map(&e);
                assert_eq!(rule_of(decode_cbor(&m, defaults())), Rule::DuplicateKey, "n {n}, dup {dup}, at {victim}");
                let payload = request(text(b"r1"), array(&[m]));
                assert_eq!(rule_of(agree(&payload, defaults())), Rule::DuplicateKey);
            }
        }
    }
}

/// A map of `n` keys `prefix0..`, whose entry `at` has `inner` as its value.
fn keyed_map(prefix: &str, n: usize, at: usize, inner: Option<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let value = if i == at { inner.clone().unwrap_or_else(|| vec![0xf6]) } else { vec![i as u8 & 0x17] };
            (text(format!("{prefix}{i:03}").as_bytes()), value)
        })
        .collect()
}

#[test]
fn inline_key_spill_keeps_each_maps_keys_apart() {
    // Small maps (16 entries, below the hash-set switch) nested three deep hold 48 keys on the
    // key stack: past the 16 inline slots. Keys of the same text in different maps are fine.
    for depth_at in [0usize, 7, 10, 15] {
        let innermost = map(&keyed_map("key-long-", 16, 99, None));
        let middle = map(&keyed_map("key-long-", 16, depth_at, Some(innermost)));
        let outer_entries = keyed_map("key-long-", 16, depth_at, Some(middle));
        let outer = map(&outer_entries);
        assert!(decode_cbor(&outer, defaults()).is_ok());
        assert!(agree(&request(text(b"r1"), outer.clone()), defaults()).is_ok());

        // A duplicate in the innermost map, reached with more than 16 keys on the stack.
        let mut inner_entries = keyed_map("key-long-", 16, 99, None);
        inner_entries[15].0 = inner_entries[3].0.clone();
        let middle = map(&keyed_map("key-long-", 16, depth_at, Some(map(&inner_entries))));
        let outer = map(&keyed_map("key-long-", 16, depth_at, Some(middle)));
        assert_eq!(rule_of(decode_cbor(&outer, defaults())), Rule::DuplicateKey);
        assert_eq!(rule_of(agree(&request(text(b"r1"), outer), defaults())), Rule::DuplicateKey);

        // A duplicate in the outer map after the inner maps were closed (the stack shrank back).
        let innermost = map(&keyed_map("key-long-", 16, 99, None));
        let middle = map(&keyed_map("key-long-", 16, depth_at, Some(innermost)));
        let mut outer_entries = keyed_map("key-long-", 16, depth_at, Some(middle));
        let last = outer_entries.len() - 1;
        outer_entries[last].0 = outer_entries[0].0.clone();
        if depth_at == 0 {
            outer_entries[last].0 = outer_entries[1].0.clone();
        }
        let outer = map(&outer_entries);
        assert_eq!(rule_of(decode_cbor(&outer, defaults())), Rule::DuplicateKey, "depth_at {depth_at}");
        assert_eq!(rule_of(agree(&request(text(b"r1"), outer), defaults())), Rule::DuplicateKey);
    }
    // Repeated spills and shrinks: an array of such nests, the last one with a duplicate.
    let nest = |dup: bool| {
        let mut inner = keyed_map("k", 16, 99, None);
        if dup {
            inner[15].0 = inner[14].0.clone();
        }
        let middle = map(&keyed_map("k", 16, 8, Some(map(&inner))));
        map(&keyed_map("k", 16, 8, Some(middle)))
    };
    let ok = array(&(0..5).map(|_| nest(false)).collect::<Vec<_>>());
    assert!(decode_cbor(&ok, defaults()).is_ok());
    let mut items: Vec<_> = (0..5).map(|_| nest(false)).collect();
    items.push(nest(true));
    assert_eq!(rule_of(decode_cbor(&array(&items), defaults())), Rule::DuplicateKey);
}

#[test]
fn keys_at_the_very_end_of_the_input() {
    // A duplicate key is found before its (missing) value, as the reference does, also with
    // the empty key: `a2 60 00 60` has 3 bytes for 2 entries, and the entries present are read
    // for an earlier error before the map is refused as truncated (docs/PROTOCOL.md section 6).
    for key in [&b""[..], b"a", b"abcdef", b"abcdefg", b"abcdefgh", b"abcdefghijklmnopqrstuvwxyz"] {
        let k = text(key);
        let dup_last = [head(5, 2), k.clone(), vec![0x00], k.clone()].concat();
        assert_eq!(rule_of(decode_cbor(&dup_last, defaults())), Rule::DuplicateKey, "{}", hex::encode(&dup_last));
        let mut padded = dup_last.clone();
        padded.push(0xf6);
        assert_eq!(rule_of(decode_cbor(&padded, defaults())), Rule::DuplicateKey, "{}", hex::encode(&padded));
        // Not a duplicate, value missing: truncated. A map of 2 needs at least 4 bytes, so the
        // declared count fits but the walk runs out.
        let mut other = key.to_vec();
        other.push(b'!');
        let missing = [head(5, 2), k.clone(), vec![0x00], text(&other)].concat();
        assert_eq!(rule_of(decode_cbor(&missing, defaults())), Rule::Truncated, "{}", hex::encode(&missing));
        // The key itself cut short.
        for cut in 1..k.len() {
            let short = [head(5, 1), k[..cut].to_vec()].concat();
            assert!(decode_cbor(&short, defaults()).is_err());
        }
    }
    // A float64 (the walker's other fast path) or any other non-text item as a key.
    for key in [vec![0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0], vec![0x01], vec![0x80], vec![0xf6], vec![0x41, 0x61]] {
        let m = [vec![0xa2, 0x61, b'a', 0x00], key, vec![0x00]].concat();
        assert_eq!(rule_of(decode_cbor(&m, defaults())), Rule::NonTextKey, "{}", hex::encode(&m));
    }
    // A float64 at the end with fewer than 8 bytes: truncated, never a read past the end.
    for n in 0..8 {
        let item = [vec![0x81, 0xfb], vec![0x3f; n]].concat();
        assert_eq!(rule_of(decode_cbor(&item, defaults())), Rule::Truncated);
    }
}

// --------------------------------------------- random trees of maps with confusable keys

#[derive(Debug, Clone)]
enum Node {
    Null,
    Int(u64),
    Float(f64),
    Text(Vec<u8>, u8),
    Array(Vec<Node>),
    Map(Vec<(usize, u8, Node)>),
}

/// The keys of random maps: the confusable ones, and each again with three suffixes (so that a
/// map can hold more than 16 distinct keys and use the hash set).
fn key_pool() -> Vec<Vec<u8>> {
    let base = confusable_keys();
    let mut pool = base.clone();
    for suffix in ["~0", "~1", "\u{e9}"] {
        pool.extend(base.iter().map(|k| [k.as_slice(), suffix.as_bytes()].concat()));
    }
    pool
}

fn node() -> impl Strategy<Value = Node> {
    let pool = key_pool().len();
    let leaf = prop_oneof![
        Just(Node::Null),
        any::<u32>().prop_map(|n| Node::Int(u64::from(n))),
        (-1e9f64..1e9).prop_map(Node::Float),
        // Arbitrary bytes: mostly invalid UTF-8 beyond a few bytes; validity is in the model.
        (vec(any::<u8>(), 0..12), prop::sample::select(vec![0u8, 24, 25])).prop_map(|(b, ai)| Node::Text(b, ai)),
        ("[a-z\u{e9}\u{20ac}]{0,30}", prop::sample::select(vec![0u8, 24, 25]))
            .prop_map(|(s, ai)| Node::Text(s.into_bytes(), ai)),
    ];
    leaf.prop_recursive(5, 200, 24, move |inner| {
        let entries = vec((prop::sample::select(vec![0u8, 24, 25, 26]), inner.clone()), 0..24)
            .prop_flat_map(move |values| {
                let n = values.len();
                (
                    Just(values),
                    prop::sample::subsequence((0..pool).collect::<Vec<_>>(), n).prop_shuffle(),
                    prop::option::weighted(0.3, (any::<prop::sample::Index>(), any::<prop::sample::Index>())),
                )
            })
            .prop_map(|(values, mut keys, duplicate)| {
                // Distinct keys, except for one copied over another now and then.
                if let (Some((from, to)), false) = (duplicate, keys.is_empty()) {
                    let from = keys[from.index(keys.len())];
                    let to = to.index(keys.len());
                    keys[to] = from;
                }
                Node::Map(keys.into_iter().zip(values).map(|(k, (ai, v))| (k, ai, v)).collect())
            });
        prop_oneof![vec(inner, 0..5).prop_map(Node::Array), entries]
    })
}

fn encode_node(node: &Node, keys: &[Vec<u8>], out: &mut Vec<u8>) {
    match node {
        Node::Null => out.push(0xf6),
        Node::Int(n) => out.extend_from_slice(&head(0, *n)),
        Node::Float(f) => {
            out.push(0xfb);
            out.extend_from_slice(&f.to_be_bytes());
        }
        Node::Text(s, ai) => out.extend_from_slice(&text_as(s, *ai)),
        Node::Array(items) => {
            out.extend_from_slice(&head(4, items.len() as u64));
            for item in items {
                encode_node(item, keys, out);
            }
        }
        Node::Map(entries) => {
            out.extend_from_slice(&head(5, entries.len() as u64));
            for (k, ai, value) in entries {
                let key = &keys[*k];
                let ai = if *ai == 24 && key.len() > 255 { 25 } else { *ai };
                out.extend_from_slice(&text_as(key, ai));
                encode_node(value, keys, out);
            }
        }
    }
}

/// The model: the first rule the item breaks in wire order (invalid UTF-8 or a duplicate key),
/// or the decoded value.
fn model(node: &Node, keys: &[Vec<u8>]) -> Result<CborValue, Rule> {
    Ok(match node {
        Node::Null => CborValue::Null,
        Node::Int(n) => CborValue::Number(*n as f64),
        Node::Float(f) => CborValue::Number(*f),
        Node::Text(s, _) => CborValue::Text(String::from_utf8(s.clone()).map_err(|_| Rule::InvalidUtf8)?),
        Node::Array(items) => CborValue::Array(items.iter().map(|i| model(i, keys)).collect::<Result<_, _>>()?),
        Node::Map(entries) => {
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for (k, _, value) in entries {
                let key = String::from_utf8(keys[*k].clone()).expect("pool keys are valid");
                if !seen.insert(key.clone()) {
                    return Err(Rule::DuplicateKey);
                }
                out.push((key, model(value, keys)?));
            }
            CborValue::Map(out)
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn skip_walker_matches_the_model_on_random_trees(tree in node()) {
        let keys = key_pool();
        let mut item = Vec::new();
        encode_node(&tree, &keys, &mut item);
        let expected = model(&tree, &keys);
        match (decode_cbor(&item, defaults()), &expected) {
            (Ok(v), Ok(m)) => prop_assert_eq!(&v, m),
            (Err(e), Err(rule)) => prop_assert_eq!(e.rule(), *rule, "{}", hex::encode(&item)),
            (got, want) => prop_assert!(false, "got {:?}, model {:?}, item {}", got, want, hex::encode(&item)),
        }
        // The same tree inside envelopes, at depth 1 (call) and 2 (inside an array of update).
        let in_call = request(text(b"r1"), item.clone());
        prop_assert!(typed_agrees_with_raw(&in_call, defaults()).is_ok(), "{:?}", typed_agrees_with_raw(&in_call, defaults()));
        prop_assert_eq!(typed_client(&in_call, defaults()).is_ok(), expected.is_ok());
        let in_update = service_update(array(&[item]));
        prop_assert!(typed_agrees_with_raw(&in_update, defaults()).is_ok(), "{:?}", typed_agrees_with_raw(&in_update, defaults()));
        prop_assert_eq!(typed_server(&in_update, defaults()).is_ok(), expected.is_ok());
    }
}

// ------------------------------------------------------------------ limits

#[test]
fn byte_limits_smaller_than_strings() {
    // A declared length above the limit is refused for the limit before any truncation, in every
    // place the fast paths read strings; a length within the limit but beyond the input is
    // truncated.
    for limit in [0u64, 1, 6, 7, 8, 9, 22, 23, 24, 25] {
        for declared in 0..=30usize {
            for available in [0, declared / 2, declared] {
                let body = vec![b'q'; available];
                let string = [head(3, declared as u64), body].concat();
                let want = if declared as u64 > limit {
                    Some(Rule::ByteLengthLimit { limit })
                } else if available < declared {
                    Some(Rule::Truncated)
                } else {
                    None
                };
                // The string as the last item: as a top-level item, an array element and a map
                // value; as a map key when it is complete (else the value would become its body).
                let items = [
                    string.clone(),
                    [vec![0x81], string.clone()].concat(),
                    [vec![0xa1, 0x60], string.clone()].concat(),
                ];
                let lim = limits(limit, 100, 10);
                for item in items
                    .iter()
                    .chain((available == declared).then(|| [vec![0xa1], string.clone(), vec![0xf6]].concat()).as_ref())
                {
                    let got = Reader::new(item, lim).skip().err().map(|e| e.rule());
                    assert_eq!(got, want, "limit {limit}, item {}", hex::encode(item));
                }
                // The raw key read of the derived decoders and the peek.
                let got = Reader::new(&string, lim).read_key_raw().err().map(|e| e.rule());
                assert_eq!(got, want, "read_key_raw, limit {limit}, {}", hex::encode(&string));
                let got = Reader::new(&string, lim).read_text().err().map(|e| e.rule());
                assert_eq!(got, want, "read_text, limit {limit}, {}", hex::encode(&string));
                // Passed over by the peek (a complete string, or one declared over the limit).
                if limit >= 5 && (available == declared || want != Some(Rule::Truncated)) {
                    let peeked = [vec![0xa2, 0x61, b'a'], string.clone(), text(b"type"), text(b"hello")].concat();
                    let got = Reader::new(&peeked, lim).peek_map_value("type").map(|v| v.is_some());
                    match want {
                        None => assert_eq!(got.ok(), Some(true), "peek, limit {limit}, {}", hex::encode(&peeked)),
                        Some(rule) => assert_eq!(rule_of(got), rule, "peek, limit {limit}, {}", hex::encode(&peeked)),
                    }
                }
            }
        }
    }
}

#[test]
fn byte_limit_on_strings_inside_frames() {
    // With a frame limit as the byte limit, a frame that fits is accepted, and a declared string
    // longer than the limit inside a frame that lies about it fails for the limit.
    let id = "x".repeat(40);
    let payload = request(text(id.as_bytes()), vec![0xf6]);
    let fits = limits(payload.len() as u64, 100, 10);
    assert!(agree(&payload, fits).is_ok());
    let one_less = limits(payload.len() as u64 - 1, 100, 10);
    assert_eq!(
        rule_of(agree(&payload, one_less)),
        Rule::ByteLengthLimit { limit: payload.len() as u64 - 1 },
        "the whole item is over the limit"
    );
    // The id declares 200 bytes (over a limit of 100) and the frame ends there.
    let lying = [vec![0xa4], text(b"type"), text(b"request"), text(b"id"), head(3, 200)].concat();
    assert_eq!(rule_of(agree(&lying, limits(100, 100, 10))), Rule::ByteLengthLimit { limit: 100 });
    assert_eq!(rule_of(agree(&lying, limits(1000, 100, 10))), Rule::Truncated);
}

#[test]
fn container_limits_and_empty_containers() {
    for limit in [0u64, 1, 16, 17] {
        for n in [0usize, 1, 16, 17, 18] {
            let lim = limits(1 << 20, limit, 10);
            let arr = array(&vec![vec![0xf6]; n]);
            let m = map(&(0..n).map(|i| (text(format!("k{i}").as_bytes()), vec![0xf6])).collect::<Vec<_>>());
            for item in [arr, m] {
                let got = decode_cbor(&item, lim).err().map(|e| e.rule());
                let want = (n as u64 > limit).then_some(Rule::ContainerLengthLimit { limit });
                assert_eq!(got, want, "limit {limit}, {}", hex::encode(&item));
                // The envelope's own maps hold up to 4 entries.
                let raw = agree(&request(text(b"r1"), item), lim);
                assert_eq!(raw.is_ok(), want.is_none() && limit >= 4, "limit {limit}, n {n}");
            }
        }
    }
}

/// `levels` nested containers (alternating arrays and maps) around `leaf`.
fn nest(levels: usize, leaf: Vec<u8>) -> Vec<u8> {
    (0..levels).fold(leaf, |inner, i| if i % 2 == 0 { array(&[inner]) } else { map(&[entry("k", inner)]) })
}

#[test]
fn depth_limits() {
    for max_depth in [0u64, 1, 2, 3, 7, 8, 63, 64, 65] {
        let lim = limits(1 << 20, 100, max_depth);
        for levels in 0..=70usize {
            for leaf in [vec![0x01], text(b"abc"), vec![0xfb, 0, 0, 0, 0, 0, 0, 0, 0], vec![0x80], vec![0xa0]] {
                let item = nest(levels, leaf.clone());
                // The leaf sits at depth `levels`; an empty container adds no level.
                let ok = levels as u64 <= max_depth;
                let got = decode_cbor(&item, lim);
                match got {
                    Ok(_) => assert!(ok, "max {max_depth}, {levels} levels accepted"),
                    Err(e) => {
                        assert!(!ok, "max {max_depth}, {levels} levels: {e:?}");
                        assert_eq!(e.rule(), Rule::DepthLimit { limit: max_depth });
                    }
                }
                let mut r = Reader::new(&item, lim);
                if ok {
                    let shape = r.skip_item().expect("skip");
                    let below = levels as u32 + u32::from(leaf[0] == 0x80 || leaf[0] == 0xa0);
                    assert_eq!(shape.depth, below, "{}", hex::encode(&item));
                }
                // Inside a call the item sits one level deeper.
                if levels < 66 {
                    let payload = request(text(b"r1"), item);
                    let typed = typed_client(&payload, lim);
                    // The envelope needs depth 2 itself (target.serverId).
                    let ok = (levels as u64) < max_depth && max_depth >= 2;
                    assert_eq!(typed.is_ok(), ok, "max {max_depth}, {levels} in call");
                    assert_eq!(agree(&payload, lim).is_ok(), ok);
                }
            }
        }
    }
}

// ------------------------------------------------------------------ truncation

fn sample_messages() -> (Vec<ClientMessage>, Vec<ServerMessage>) {
    let big = json!({"serviceId": "$chord.service", "member": "x", "args": ["é".repeat(300), {"abcdefgh": 1, "abcdefgi": [0.5, -1, null, true]}],
        "many": (0..20).map(|i| (format!("key-{i:02}-abcdefgh"), json!(i))).collect::<serde_json::Map<_, _>>()});
    let server_id = ServerId::new(SERVER).unwrap();
    let clients = vec![
        ClientMessage::Hello(ClientHello::new(Integer::new(8).unwrap())),
        ClientMessage::Request(Request::new(
            RequestId::new("req-ÿ-1234567890").unwrap(),
            RpcTarget::Session(SessionTarget::new(
                server_id.clone(),
                SessionId::new("s").unwrap(),
                AttachmentId::new("a".repeat(30)).unwrap(),
            )),
            Payload::from_value(&big).unwrap(),
        )),
        ClientMessage::Cancel(Cancel::new(
            RequestId::new("c").unwrap(),
            RpcTarget::Server(ServerTarget::new(server_id.clone())),
        )),
    ];
    let servers = vec![
        ServerMessage::Hello(ServerHello::new(server_id)),
        ServerMessage::HelloError(ServerHelloError::new(ErrorBody::new(ErrorCode::new("bad").unwrap(), String::new()))),
        ServerMessage::Response(Response::Success(
            SuccessResponse::new(RequestId::new("r").unwrap()).with_result(Payload::from_value(&big).unwrap()),
        )),
        ServerMessage::Response(Response::Failure(ErrorResponse::new(
            RequestId::new("r").unwrap(),
            ErrorBody::new(ErrorCode::new("E").unwrap(), "é".repeat(10)),
        ))),
        ServerMessage::ServiceUpdate(ServiceUpdate::new(
            SubscriptionId::new("sub").unwrap(),
            Payload::from_value(&big).unwrap(),
        )),
        ServerMessage::Attachment(pi_protocol::Attachment::new(None)),
    ];
    (clients, servers)
}

#[test]
fn truncation_at_every_byte_is_an_error() {
    let (clients, servers) = sample_messages();
    let frames: Vec<(bool, Vec<u8>)> = clients
        .iter()
        .map(|m| (true, pi_protocol::encode_client_message(m).unwrap()))
        .chain(servers.iter().map(|m| (false, pi_protocol::encode_server_message(m).unwrap())))
        .collect();
    for (client, whole) in frames {
        let payload = &whole[4..];
        assert!(decode_cbor(payload, defaults()).is_ok());
        for cut in 0..payload.len() {
            let prefix = &payload[..cut];
            // As a payload of its own: truncated CBOR, for the raw and the typed decoders alike.
            assert_eq!(rule_of(decode_cbor(prefix, defaults())), Rule::Truncated, "cut {cut}");
            let typed = if client {
                typed_client(prefix, defaults()).map(drop)
            } else {
                typed_server(prefix, defaults()).map(drop)
            };
            assert_eq!(rule_of(typed), Rule::Truncated, "cut {cut} of {}", hex::encode(payload));
        }
        // The stream cut inside the frame: nothing is delivered and `end` fails.
        for cut in 1..whole.len() {
            let mut results = Vec::new();
            let end = if client {
                let mut d = ClientMessageDecoder::new();
                results.extend(d.push(&whole[..cut]).into_iter().map(|r| r.map(drop)));
                d.end()
            } else {
                let mut d = ServerMessageDecoder::new();
                results.extend(d.push(&whole[..cut]).into_iter().map(|r| r.map(drop)));
                d.end()
            };
            assert!(results.is_empty(), "cut {cut}: {results:?}");
            let e = end.expect_err("a cut frame never ends cleanly");
            assert_eq!(e.rule(), Rule::TruncatedFrame);
        }
    }
}

// ------------------------------------------------------------------ random damage

fn valid_payloads() -> Vec<Vec<u8>> {
    let (clients, servers) = sample_messages();
    clients
        .iter()
        .map(|m| pi_protocol::encode_client_message(m).unwrap()[4..].to_vec())
        .chain(servers.iter().map(|m| pi_protocol::encode_server_message(m).unwrap()[4..].to_vec()))
        .chain([
            request(text(b"abcdefgh"), map(&[entry("abcdefgh", text(b"v")), entry("abcdefgi", vec![0x80])])),
            map(&[entry("id", text(b"r")), entry("target", server_target()), entry("type", text(b"cancel"))]),
        ])
        .collect()
}

/// `payload` after `edits`: each an (index, kind, byte) that overwrites, flips the top bit of,
/// inserts, removes, or inserts one of a few troublesome bytes (break, tag, continuation,
/// float64 head, a high ASCII byte) at the index.
fn damaged(payload: &[u8], edits: &[(prop::sample::Index, u8, u8)]) -> Vec<u8> {
    let mut payload = payload.to_vec();
    for (at, kind, byte) in edits {
        let i = at.index(payload.len() + 1);
        match kind {
            0 if i < payload.len() => payload[i] = *byte,
            1 if i < payload.len() => payload[i] ^= 0x80,
            2 => payload.insert(i, *byte),
            3 if i < payload.len() => {
                payload.remove(i);
            }
            _ => payload.insert(i, [0xff, 0xc0, 0x80, 0xfb, 0x7f][usize::from(*byte) % 5]),
        }
    }
    payload
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// Damaged payloads: the typed decoders and the raw validator agree on every CBOR rule.
    #[test]
    fn typed_and_raw_agree_on_damaged_payloads(
        which in any::<prop::sample::Index>(),
        edits in vec((any::<prop::sample::Index>(), 0u8..5, any::<u8>()), 1..4),
        max_depth in prop::sample::select(vec![1u64, 2, 3, 64]),
        max_bytes in prop::sample::select(vec![5u64, 40, 1 << 20]),
    ) {
        let payloads = valid_payloads();
        let payload = damaged(which.get::<Vec<u8>>(&payloads), &edits);
        let lim = limits(max_bytes, 1000, max_depth);
        let verdict = typed_agrees_with_raw(&payload, lim);
        prop_assert!(verdict.is_ok(), "{}", verdict.unwrap_err());
    }

    /// The ASCII word test and the UTF-8 view agree with the standard library on arbitrary bytes.
    #[test]
    fn read_text_matches_from_utf8(bytes in vec(prop_oneof![0u8..0x80, any::<u8>()], 0..80)) {
        let item = text(&bytes);
        let got = Reader::new(&item, defaults()).read_text().ok().map(str::as_bytes);
        let want = std::str::from_utf8(&bytes).ok().map(str::as_bytes);
        prop_assert_eq!(got, want);
        prop_assert_eq!(Reader::new(&item, defaults()).skip().is_ok(), want.is_some());
        let as_key = map(&[(item.clone(), vec![0xf6])]);
        prop_assert_eq!(decode_cbor(&as_key, defaults()).is_ok(), want.is_some());
    }
}

// ------------------------------------------------------------------ the vectored encoder

fn id_text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9-]{1,30}", "\\PC{1,40}"]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1_000_000i64..1_000_000).prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        "\\PC{0,20}".prop_map(Value::String),
        // Long strings put payloads above the 4 KiB segment threshold.
        (0usize..6000).prop_map(|n| Value::String("w".repeat(n))),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec(("[a-h]{0,9}", inner), 0..6).prop_map(|e| Value::Object(e.into_iter().collect())),
        ]
    })
}

fn target() -> impl Strategy<Value = RpcTarget> {
    prop_oneof![
        Just(RpcTarget::Server(ServerTarget::new(ServerId::new(SERVER).unwrap()))),
        (id_text(), id_text()).prop_map(|(s, a)| RpcTarget::Session(SessionTarget::new(
            ServerId::new(SERVER).unwrap(),
            SessionId::new(s).unwrap(),
            AttachmentId::new(a).unwrap()
        ))),
    ]
}

fn client_message() -> impl Strategy<Value = ClientMessage> {
    prop_oneof![
        (0i64..100).prop_map(|v| ClientMessage::Hello(ClientHello::new(Integer::new(v).unwrap()))),
        (id_text(), target(), json_value()).prop_map(|(id, target, call)| ClientMessage::Request(Request::new(
            RequestId::new(id).unwrap(),
            target,
            Payload::from_value(&call).unwrap()
        ))),
        (id_text(), target())
            .prop_map(|(id, target)| ClientMessage::Cancel(Cancel::new(RequestId::new(id).unwrap(), target))),
    ]
}

fn server_message() -> impl Strategy<Value = ServerMessage> {
    prop_oneof![
        (id_text(), prop::option::of(json_value())).prop_map(|(id, result)| {
            let mut success = SuccessResponse::new(RequestId::new(id).unwrap());
            success.result = result.map(|r| Payload::from_value(&r).unwrap());
            ServerMessage::Response(Response::Success(success))
        }),
        (id_text(), json_value()).prop_map(|(s, u)| ServerMessage::ServiceUpdate(ServiceUpdate::new(
            SubscriptionId::new(s).unwrap(),
            Payload::from_value(&u).unwrap()
        ))),
        (id_text(), "\\PC{0,20}").prop_map(|(code, message)| ServerMessage::HelloError(ServerHelloError::new(
            ErrorBody::new(ErrorCode::new(code).unwrap(), message)
        ))),
    ]
}

fn options() -> impl Strategy<Value = CodecOptions> {
    prop_oneof![
        Just(CodecOptions::new()),
        (prop::sample::select(vec![0u64, 10, 100, 4100, 6000, 20_000]), 0u64..9, 0u64..70).prop_map(
            |(frame, container, depth)| {
                CodecOptions::new().max_frame_length(frame).unwrap().cbor_limits(limits(frame, container, depth))
            }
        ),
        (prop::sample::select(vec![100u64, 4100, 20_000, 1 << 20]))
            .prop_map(|frame| CodecOptions::new().max_frame_length(frame).unwrap()),
    ]
}

/// The vectored frame has the contiguous frame's bytes (or its error), and whatever the encoder
/// accepts, a decoder with the same options reads back (the envelope's own maps included,
/// under a tiny maxContainerLength).
fn vectored_matches_contiguous<T>(m: T, opts: &CodecOptions) -> Result<(), TestCaseError>
where
    T: Encode + Validate + for<'de> Decode<'de> + PartialEq + std::fmt::Debug,
{
    let contiguous = encode_message(&m, opts);
    let vectored = encode_message_vectored(&m, opts).map(|f| f.to_vec());
    prop_assert_eq!(&vectored, &contiguous);
    if let Ok(bytes) = contiguous {
        let mut d = MessageDecoder::<T>::with_options(opts);
        let got: Vec<T> = d.push(&bytes).into_iter().collect::<Result<_, _>>().expect("decodes");
        prop_assert_eq!(got, vec![m]);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn vectored_client_frames_equal_contiguous(m in client_message(), opts in options()) {
        vectored_matches_contiguous(m, &opts)?;
    }

    #[test]
    fn vectored_server_frames_equal_contiguous(m in server_message(), opts in options()) {
        vectored_matches_contiguous(m, &opts)?;
    }
}

// ------------------------------------------------------------------ the reference, on these cases

mod common;

/// The rule a reference error message stands for (its `decodeCbor` messages), to compare rules
/// as well as verdicts.
fn reference_rule(message: &str) -> &'static str {
    const TABLE: [(&str, &str); 17] = [
        ("Truncated", "Truncated"),
        ("trailing data", "TrailingData"),
        ("duplicate key", "DuplicateKey"),
        ("keys must be strings", "NonTextKey"),
        ("invalid UTF-8", "InvalidUtf8"),
        ("tags are not supported", "Tag"),
        ("nesting depth", "DepthLimit"),
        ("array length exceeds", "ContainerLengthLimit"),
        ("map length exceeds", "ContainerLengthLimit"),
        ("length exceeds", "ByteLengthLimit"),
        ("integer or length is outside", "UnsafeInteger|LengthOutOfRange"),
        ("integer is outside", "UnsafeInteger"),
        ("must be finite", "NonFiniteNumber"),
        ("Indefinite-length", "IndefiniteLength"),
        ("additional information", "ReservedAdditionalInfo"),
        ("break marker", "UnexpectedBreak"),
        ("simple value", "UnsupportedSimple"),
    ];
    TABLE.iter().find(|(needle, _)| message.contains(needle)).map_or("?", |(_, rule)| rule)
}

fn rule_name(rule: Rule) -> String {
    let debug = format!("{rule:?}");
    debug.split([' ', '{']).next().unwrap_or_default().to_owned()
}

/// Every hostile payload of this file as oracle requests: raw items (`decodeCbor`, with limits
/// where the case has them) and envelopes (`decode`, both sides).
fn hostile_requests() -> Vec<Value> {
    let mut out = Vec::new();
    let raw = |out: &mut Vec<Value>, item: &[u8], lim: Option<(u64, u64, u64)>| {
        let mut r = json!({"op": "decodeCbor", "hex": hex::encode(item)});
        if let Some((b, c, d)) = lim {
            r["maxByteLength"] = json!(b);
            r["maxContainerLength"] = json!(c);
            r["maxDepth"] = json!(d);
        }
        out.push(r);
    };
    let frames = |out: &mut Vec<Value>, payload: &[u8]| {
        for side in ["client", "server"] {
            out.push(json!({"op": "decode", "side": side, "chunks": [hex::encode(frame(payload))], "end": true}));
        }
    };
    for len in LENGTHS {
        for (s, _) in strings_of_length(len) {
            for ai in header_forms(len) {
                let t = text_as(&s, ai);
                raw(&mut out, &t, None);
                raw(&mut out, &map(&[(t.clone(), vec![0xf6]), entry("z", vec![0x01])]), None);
                raw(&mut out, &array(&[vec![0xfb, 0x3f, 0xe0, 0, 0, 0, 0, 0, 0], t.clone(), vec![0xc0]]), None);
                if [0, 1, 7, 8, 9, 23, 24, 255, 256].contains(&len) {
                    for (_, place) in placements() {
                        frames(&mut out, &place(t.clone()));
                    }
                }
            }
        }
    }
    let keys = confusable_keys();
    for a in &keys {
        for b in &keys {
            for (ai_a, ai_b) in [(0, 0), (0, 26), (27, 0)] {
                let m =
                    map(&[(text_as(a, ai_a), vec![0x01]), (text_as(b, ai_b), array(&[map(&[(text(a), vec![0xf6])])]))]);
                raw(&mut out, &m, None);
                frames(&mut out, &request(text(b"r1"), array(std::slice::from_ref(&m))));
            }
        }
    }
    for n in [15usize, 16, 17, 33] {
        for dup in [None, Some(0), Some(n - 1)] {
            let mut e: Vec<_> = (0..n).map(|i| entry(&format!("abcdefg-{i}"), vec![0xf6])).collect();
            if let Some(d) = dup {
                e[(d + 1) % n].0 = text_as(format!("abcdefg-{d}").as_bytes(), 25);
            }
            raw(&mut out, &map(&e), None);
        }
    }
    for depth_at in [0usize, 7, 10, 15] {
        for dup in [false, true] {
            let mut inner = keyed_map("key-long-", 16, 99, None);
            if dup {
                inner[15].0 = inner[3].0.clone();
            }
            let middle = map(&keyed_map("key-long-", 16, depth_at, Some(map(&inner))));
            let outer = map(&keyed_map("key-long-", 16, depth_at, Some(middle)));
            raw(&mut out, &outer, None);
            frames(&mut out, &service_update(outer));
        }
    }
    for max_depth in [0u64, 1, 2, 3, 64] {
        for levels in 0..=66usize {
            for leaf in [vec![0x01], vec![0x80], vec![0xa0], text(b"abcdefgh")] {
                raw(&mut out, &nest(levels, leaf), Some((1 << 20, 100, max_depth)));
            }
        }
    }
    for limit in [0u64, 1, 7, 8, 23, 24, 25] {
        for declared in 0..=30usize {
            for available in [0, declared / 2, declared] {
                let string = [head(3, declared as u64), vec![b'q'; available]].concat();
                for item in [string.clone(), [vec![0x81], string.clone()].concat(), [vec![0xa1, 0x60], string].concat()]
                {
                    raw(&mut out, &item, Some((limit, 100, 10)));
                }
            }
        }
    }
    for payload in valid_payloads() {
        for cut in 0..payload.len() {
            raw(&mut out, &payload[..cut], None);
        }
    }
    // Random trees and damaged envelopes, reproducibly.
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let pool = key_pool();
    for _ in 0..5000 {
        let tree = node().new_tree(&mut runner).expect("a tree").current();
        let mut item = Vec::new();
        encode_node(&tree, &pool, &mut item);
        raw(&mut out, &item, None);
        frames(&mut out, &request(text(b"r1"), item));
    }
    let payloads = valid_payloads();
    let edits = (any::<prop::sample::Index>(), vec((any::<prop::sample::Index>(), 0u8..5, any::<u8>()), 1..4));
    for _ in 0..20_000 {
        let (which, edits) = edits.new_tree(&mut runner).expect("edits").current();
        let payload = damaged(which.get::<Vec<u8>>(&payloads), &edits);
        raw(&mut out, &payload, None);
        frames(&mut out, &payload);
    }
    out
}

/// Asks the reference package (through `xtask/oracle/oracle.mjs`, installed by
/// `cargo xtask conformance` into `target/oracle/` or `$PI_ORACLE_DIR`) for its verdict on every
/// hostile case of this file, and checks this crate's verdicts with the conformance checks.
/// Rules are compared too for raw items and reported (the reference's order of checks differs
/// in a few known places, so they are not asserted).
#[test]
#[ignore = "needs node and the oracle installed by `cargo xtask conformance`"]
fn reference_agrees_on_hostile_cases() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};

    let dir =
        std::env::var("PI_ORACLE_DIR").unwrap_or_else(|_| format!("{}/target/oracle", env!("CARGO_MANIFEST_DIR")));
    let script = format!("{dir}/oracle.mjs");
    assert!(std::path::Path::new(&script).is_file(), "no oracle at {script}: run `cargo xtask conformance` once");
    let requests = hostile_requests();
    let mut child = Command::new("node")
        .arg(&script)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let verdicts: Vec<Value> = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut w = std::io::BufWriter::new(&mut stdin);
            for r in &requests {
                serde_json::to_writer(&mut w, r).expect("write");
                w.write_all(b"\n").expect("write");
            }
            w.flush().expect("flush");
            drop(w);
            drop(stdin);
        });
        BufReader::new(stdout).lines().map(|l| serde_json::from_str(&l.expect("line")).expect("json")).collect()
    });
    assert!(child.wait().expect("node exits").success());
    assert_eq!(verdicts.len(), requests.len());

    let mut disagreements = Vec::new();
    let mut rule_pairs: std::collections::BTreeMap<(String, String), (usize, String)> = Default::default();
    for (i, (request, expect)) in requests.iter().zip(&verdicts).enumerate() {
        if let Err(e) = common::checks::check_case(&format!("hostile-{i}"), request, expect) {
            disagreements.push(e);
        }
        if request["op"] == "decodeCbor" && expect["ok"] == false {
            let ours = common::checks::cbor_limits(request)
                .and_then(|l| decode_cbor(&common::unhex(request["hex"].as_str().unwrap()), l))
                .err()
                .map(|e| rule_name(e.rule()))
                .unwrap_or_default();
            let theirs = reference_rule(expect["error"].as_str().unwrap_or_default()).to_owned();
            if !theirs.split('|').any(|r| r == ours) {
                let slot = rule_pairs.entry((theirs, ours)).or_insert((0, request["hex"].to_string()));
                slot.0 += 1;
            }
        }
    }
    println!("{} requests, {} verdict disagreements", requests.len(), disagreements.len());
    for ((theirs, ours), (count, example)) in &rule_pairs {
        println!("rule differs: reference {theirs}, ours {ours}: {count} cases, e.g. {example}");
    }
    assert!(disagreements.is_empty(), "{} disagreements, first: {}", disagreements.len(), disagreements[0]);
}

// ------------------------------------------------------------------ fast paths of the decoders

/// The `ServerId` pattern tested byte by byte, independently of `word_matches`.
fn server_id_model(s: &[u8]) -> bool {
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    s.len() == 36
        && s.iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            14 => b == b'4',
            19 => matches!(b, b'8' | b'9' | b'a' | b'b'),
            _ => hex(b),
        })
}

/// A request to `{serverId: id}` and a server hello with `serverId: id`, checked against the
/// model: accepted with the same string, refused for the pattern, or refused as invalid UTF-8.
fn check_server_id(id: &[u8]) {
    let client = map(&[
        entry("type", text(b"request")),
        entry("id", text(b"r")),
        entry("target", map(&[entry("serverId", text(id))])),
        entry("call", vec![0xf6]),
    ]);
    let server = map(&[entry("type", text(b"hello")), entry("version", vec![0x08]), entry("serverId", text(id))]);
    let utf8 = std::str::from_utf8(id).ok();
    let expected = server_id_model(id);
    assert_eq!(utf8.map(|s| ServerId::new(s).is_ok()), utf8.map(|_| expected), "ServerId::new {}", hex::encode(id));
    for (side, payload) in [("client", &client), ("server", &server)] {
        let raw = agree(payload, defaults());
        let verdict = if side == "client" {
            typed_client(payload, defaults()).map(|m| match m {
                ClientMessage::Request(r) => match r.target {
                    RpcTarget::Server(t) => t.server_id.as_str().to_owned(),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
        } else {
            typed_server(payload, defaults()).map(|m| match m {
                ServerMessage::Hello(h) => h.server_id.as_str().to_owned(),
                other => panic!("{other:?}"),
            })
        };
        match (utf8, verdict) {
            (None, Err(e)) => {
                assert_eq!((e.kind(), e.rule()), (ErrorKind::Cbor, Rule::InvalidUtf8), "{side} {}", hex::encode(id));
                assert!(raw.is_err());
            }
            (Some(s), Ok(got)) if expected => assert_eq!(got, s),
            (Some(_), Err(e)) if !expected => {
                assert_eq!((e.kind(), e.rule()), (ErrorKind::Schema, Rule::Pattern), "{side} {}", hex::encode(id));
            }
            (_, verdict) => panic!("{side}: {verdict:?} for {} (model {expected})", hex::encode(id)),
        }
    }
}

#[test]
fn server_ids_with_one_byte_changed_anywhere_to_anything() {
    let valid = SERVER.as_bytes();
    assert!(server_id_model(valid));
    check_server_id(valid);
    for at in 0..36 {
        for b in 0..=255u8 {
            let mut id = valid.to_vec();
            id[at] = b;
            check_server_id(&id);
        }
        // Multi-byte characters over this position (same length, and one or more longer),
        // a byte removed (35) and one inserted (37).
        for ch in ["é", "€", "😀", "\u{7f}", "\u{80}"] {
            let mut id = valid.to_vec();
            id.splice(at..(at + ch.len()).min(36), ch.bytes());
            check_server_id(&id);
            let mut id = valid.to_vec();
            id.splice(at..=at, ch.bytes());
            check_server_id(&id);
        }
        let mut shorter = valid.to_vec();
        shorter.remove(at);
        check_server_id(&shorter);
        for b in [b'0', b'4', b'a', b'-'] {
            let mut longer = valid.to_vec();
            longer.insert(at, b);
            check_server_id(&longer);
        }
    }
    // Every valid id class boundary, the highest and lowest byte of each class.
    for id in [
        "00000000-0000-4000-8000-000000000000",
        "ffffffff-ffff-4fff-bfff-ffffffffffff",
        "99999999-9999-4999-9999-999999999999",
        "aaaaaaaa-aaaa-4aaa-aaaa-aaaaaaaaaaaa",
    ] {
        assert!(server_id_model(id.as_bytes()));
        check_server_id(id.as_bytes());
    }
    check_server_id(b"");
    check_server_id(&valid[..35]);
    check_server_id(&[valid, b"0"].concat());
    check_server_id(&[valid, b"\n"].concat());
}

/// A map tree whose keys can be changed one at a time (values are encoded items).
#[derive(Clone)]
enum Envelope {
    Map(Vec<(Vec<u8>, Envelope)>),
    Item(Vec<u8>),
}

impl Envelope {
    fn encode(&self) -> Vec<u8> {
        match self {
            Envelope::Item(bytes) => bytes.clone(),
            Envelope::Map(entries) => map(&entries.iter().map(|(k, v)| (text(k), v.encode())).collect::<Vec<_>>()),
        }
    }

    fn key_count(&self) -> usize {
        match self {
            Envelope::Item(_) => 0,
            Envelope::Map(entries) => entries.iter().map(|(_, v)| 1 + v.key_count()).sum(),
        }
    }

    /// The `index`th key (depth first, in wire order).
    fn key_mut(&mut self, index: usize) -> Option<&mut Vec<u8>> {
        let Envelope::Map(entries) = self else { return None };
        let mut index = index;
        for (k, v) in entries {
            if index == 0 {
                return Some(k);
            }
            index -= 1;
            let inside = v.key_count();
            if index < inside {
                return v.key_mut(index);
            }
            index -= inside;
        }
        None
    }
}

fn envelopes() -> Vec<(bool, Envelope)> {
    use Envelope::{Item, Map};
    let t = |s: &str| Item(text(s.as_bytes()));
    let k = |s: &str| s.as_bytes().to_vec();
    let session = || {
        Map(vec![(k("serverId"), t(SERVER)), (k("sessionId"), t("session-1")), (k("attachmentId"), t("attachment-1"))])
    };
    let error = || Map(vec![(k("code"), t("E")), (k("message"), t("m"))]);
    vec![
        (true, Map(vec![(k("type"), t("hello")), (k("version"), Item(vec![0x08]))])),
        (
            true,
            Map(vec![
                (k("type"), t("request")),
                (k("id"), t("r")),
                (k("target"), session()),
                (k("call"), Item(vec![0xf6])),
            ]),
        ),
        (
            true,
            Map(vec![
                (k("type"), t("cancel")),
                (k("id"), t("c")),
                (k("target"), Map(vec![(k("serverId"), t(SERVER))])),
            ]),
        ),
        (false, Map(vec![(k("type"), t("hello")), (k("version"), Item(vec![0x08])), (k("serverId"), t(SERVER))])),
        (false, Map(vec![(k("type"), t("hello_error")), (k("error"), error())])),
        (
            false,
            Map(vec![
                (k("type"), t("response")),
                (k("id"), t("r")),
                (k("ok"), Item(vec![0xf5])),
                (k("result"), Item(vec![0x01])),
            ]),
        ),
        (
            false,
            Map(vec![
                (k("type"), t("response")),
                (k("id"), t("r")),
                (k("ok"), Item(vec![0xf4])),
                (k("error"), error()),
            ]),
        ),
        (
            false,
            Map(vec![(k("type"), t("service_update")), (k("subscriptionId"), t("s")), (k("update"), Item(vec![0x80]))]),
        ),
        (false, Map(vec![(k("type"), t("attachment")), (k("attachment"), session())])),
    ]
}

#[test]
fn schema_keys_changed_in_one_byte_are_refused_in_real_envelopes() {
    // Every key of every envelope with one byte changed (at every position, to bytes around
    // the letters, case, high bits, multi-byte UTF-8), one byte shorter and one longer: the
    // word-wise key comparison must refuse them all, as the raw validator's rule says.
    let decode = |client: bool, payload: &[u8]| {
        // Keys that are not UTF-8 are refused by both for that CBOR rule (checked by `agree`).
        let _ = agree(payload, defaults());
        if client {
            typed_client(payload, defaults()).map(drop)
        } else {
            typed_server(payload, defaults()).map(drop)
        }
    };
    let mut checked = 0;
    for (client, envelope) in envelopes() {
        decode(client, &envelope.encode()).unwrap_or_else(|e| panic!("{e:?}: {}", hex::encode(envelope.encode())));
        for index in 0..envelope.key_count() {
            let key = envelope.clone().key_mut(index).expect("key").clone();
            let mut variants = Vec::new();
            for at in 0..key.len() {
                for b in [0x00, 0x01, 0x20, 0x40, 0x7f, 0x80, 0xc3, 0xff, b'/', b':', b'`', b'g', b'G', b'@', b'{'] {
                    let mut v = key.clone();
                    v[at] = b;
                    variants.push(v);
                }
                for flip in [0x01u8, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80] {
                    let mut v = key.clone();
                    v[at] ^= flip;
                    variants.push(v);
                }
                let mut v = key.clone();
                v.splice(at..=at, "é".bytes());
                variants.push(v);
            }
            variants.push(key[..key.len() - 1].to_vec());
            variants.push(key[1..].to_vec());
            variants.push([&key[..], b"d"].concat());
            variants.push([&key[..], b"\0"].concat());
            variants.push([b"x", &key[..]].concat());
            for variant in variants {
                if variant == key {
                    continue;
                }
                let mut changed = envelope.clone();
                *changed.key_mut(index).expect("key") = variant.clone();
                let payload = changed.encode();
                let verdict = decode(client, &payload);
                assert!(
                    verdict.is_err(),
                    "key {:?} accepted: {}",
                    String::from_utf8_lossy(&variant),
                    hex::encode(&payload)
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 5_000, "{checked}");
}

#[test]
fn inline_payloads_of_every_length_keep_their_bytes() {
    // Payloads of 1 to 50 bytes (around the 46-byte inline limit and the 4/8/16/32-byte copy
    // sizes), every byte distinct where possible: decoded, re-encoded and compared byte for byte.
    for len in 1..=50usize {
        let mut candidates = Vec::new();
        // A text: head + body.
        let body_length = if len - 1 < 24 { Some(len - 1) } else { (len - 2 >= 24).then_some(len - 2) };
        if let Some(n) = body_length {
            let body: Vec<u8> = (0..n).map(|i| b'!' + (i * 7 % 90) as u8).collect();
            candidates.push(text(&body));
        }
        // An array of distinct small integers.
        if (1..=24).contains(&len) {
            candidates.push(array(&(0..len - 1).map(|i| vec![i as u8]).collect::<Vec<_>>()));
        }
        // A float64 followed by text in an array.
        if len >= 11 {
            let mut items = vec![[&[0xfbu8][..], &0x433f_ffff_ffff_ffffu64.to_be_bytes()].concat()];
            items.push(text(&(0..len - 11).map(|i| b'A' + (i as u8 % 26)).collect::<Vec<_>>()));
            let a = array(&items);
            if a.len() == len {
                candidates.push(a);
            }
        }
        for call in candidates {
            assert_eq!(call.len(), len, "{}", hex::encode(&call));
            let payload = request(text(b"r"), call.clone());
            let message = typed_client(&payload, defaults()).unwrap_or_else(|e| panic!("{e:?}"));
            let ClientMessage::Request(r) = &message else { panic!("{message:?}") };
            assert_eq!(r.call.as_cbor(), &call[..], "length {len}");
            let again = encode_message(&message, &CodecOptions::new()).expect("encodes");
            assert_eq!(again, frame(&payload), "length {len}");
            let direct = Payload::from_cbor(bytes::Bytes::from(call.clone()), defaults()).expect("valid");
            assert_eq!(direct.as_cbor(), &call[..]);
            assert_eq!((direct.depth(), direct.widest_container()), (r.call.depth(), r.call.widest_container()));
        }
    }
}
