//! Resource bounds under hostile input (docs/PROTOCOL.md sections 1, 2 and 6), measured with a
//! counting global allocator (`peak_alloc`): nesting far beyond the limits fails with an error
//! instead of overflowing the stack; declared lengths far beyond the input allocate nothing; a
//! large frame header reserves nothing; a 16 MiB amplification frame stays far below 400 MiB;
//! error messages are bounded and never quote what was received.
//!
//! Every test takes the same lock, so that one test's allocations never show up in another's
//! peak. Figures are printed (run with `--nocapture` to see them).

use std::sync::Mutex;

use peak_alloc::PeakAlloc;
use pi_protocol::{
    decode_cbor, encode_client_json, encode_client_message, encode_server_json, parse_client_message,
    parse_server_message, CborLimits, ClientMessage, ClientMessageDecoder, CodecOptions, ErrorKind, Payload,
    ProtocolError, Request, RequestId, RpcTarget, Rule, ServerId, ServerMessageDecoder, ServerTarget,
};
use serde_json::{json, Value};

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

static SERIAL: Mutex<()> = Mutex::new(());

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;
const SERVER_ID: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

/// Runs `f` and returns its result with the peak number of heap bytes allocated during it,
/// above what was allocated before.
fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let result = f();
    (result, ALLOCATOR.peak_usage().saturating_sub(base))
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// The CBOR payload of a `request` whose `call` is the raw item `call` (`call` is the last
/// field in schema order, so the item replaces the encoded `null`).
fn request_with_call(call: &[u8]) -> Vec<u8> {
    let request = ClientMessage::Request(Request::new(
        RequestId::new("r").unwrap(),
        RpcTarget::Server(ServerTarget::new(ServerId::new(SERVER_ID).unwrap())),
        Payload::null(),
    ));
    let mut payload = encode_client_message(&request).unwrap()[4..].to_vec();
    assert_eq!(payload.pop(), Some(0xf6), "call is the last field");
    payload.extend_from_slice(call);
    payload
}

/// The CBOR payload of a successful `response` whose `result` is the raw item `result`.
fn response_with_result(result: &[u8]) -> Vec<u8> {
    let mut payload = vec![0xa4];
    for (key, value) in [("type", "response"), ("id", "r")] {
        payload.extend_from_slice(&text(key));
        payload.extend_from_slice(&text(value));
    }
    payload.extend_from_slice(&text("ok"));
    payload.push(0xf5);
    payload.extend_from_slice(&text("result"));
    payload.extend_from_slice(result);
    payload
}

fn text(s: &str) -> Vec<u8> {
    assert!(s.len() < 24);
    let mut out = vec![0x60 | s.len() as u8];
    out.extend_from_slice(s.as_bytes());
    out
}

fn decode_client(stream: &[u8], options: &CodecOptions) -> Result<Vec<ClientMessage>, ProtocolError> {
    let mut decoder = ClientMessageDecoder::with_options(options);
    let messages = decoder.push(stream).into_iter().collect::<Result<Vec<_>, _>>()?;
    decoder.end()?;
    Ok(messages)
}

fn decode_server(stream: &[u8], options: &CodecOptions) -> Result<usize, ProtocolError> {
    let mut decoder = ServerMessageDecoder::with_options(options);
    let count = decoder.push(stream).into_iter().collect::<Result<Vec<_>, _>>()?.len();
    decoder.end()?;
    Ok(count)
}

fn deepest_options() -> CodecOptions {
    CodecOptions::new().cbor_limits(CborLimits::widest())
}

/// 100,000 openers of one kind, then a null.
fn nest(opener: &[u8], depth: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(opener.len() * depth + 1);
    for _ in 0..depth {
        out.extend_from_slice(opener);
    }
    out.push(0xf6);
    out
}

const DEPTH: usize = 100_000;

/// (name, opener bytes, the rule the first failure must be)
/// A nest to try: its name, the opener bytes, and which rule its first failure must be.
type Opener = (&'static str, Vec<u8>, fn(Rule) -> bool);

fn openers() -> Vec<Opener> {
    vec![
        ("arrays", vec![0x81], |r| matches!(r, Rule::DepthLimit { .. })),
        ("maps", vec![0xa1, 0x61, b'k'], |r| matches!(r, Rule::DepthLimit { .. })),
        ("non-minimal arrays", vec![0x9b, 0, 0, 0, 0, 0, 0, 0, 1], |r| matches!(r, Rule::DepthLimit { .. })),
        ("indefinite arrays", vec![0x9f], |r| r == Rule::IndefiniteLength),
        ("indefinite maps", vec![0xbf], |r| r == Rule::IndefiniteLength),
        ("indefinite maps after a key", vec![0xa1, 0x61, b'k', 0xbf, 0x61, b'k'], |r| r == Rule::IndefiniteLength),
        ("tags", vec![0xc6], |r| r == Rule::Tag),
        ("self-describe tags", vec![0xd9, 0xd9, 0xf7], |r| r == Rule::Tag),
        ("tags inside arrays", vec![0x81, 0xc1], |r| r == Rule::Tag),
    ]
}

/// Decodes every 100,000-deep nest with `limits` through `decode_cbor` and both message
/// decoders (as the whole payload, as a request's `call`, as a response's `result`).
fn check_deep_nesting(limits: CborLimits) {
    let options = CodecOptions::new().cbor_limits(limits);
    for (name, opener, expected) in openers() {
        let item = nest(&opener, DEPTH);
        let error = decode_cbor(&item, limits).expect_err(name);
        assert!(expected(error.rule()), "{name}: decode_cbor failed with {error:?}");
        let error = decode_client(&frame(&item), &options).expect_err(name);
        assert!(error.kind() == ErrorKind::Cbor || error.kind() == ErrorKind::Schema, "{name}: {error:?}");
        let error = decode_client(&frame(&request_with_call(&item)), &options).expect_err(name);
        assert!(expected(error.rule()), "{name} as call: {error:?}");
        let error = decode_server(&frame(&response_with_result(&item)), &options).expect_err(name);
        assert!(expected(error.rule()), "{name} as result: {error:?}");
    }
}

/// maxDepth 512: nesting at the limit is accepted, one level deeper is not, and the error of
/// a failure 500 levels down still has a bounded message.
fn check_nesting_at_the_limit() {
    let limits = CborLimits::widest();
    assert!(decode_cbor(&nest(&[0x81], 512), limits).is_ok());
    assert!(matches!(decode_cbor(&nest(&[0x81], 513), limits).unwrap_err().rule(), Rule::DepthLimit { limit: 512 }));
    // `call` sits at depth 1: 511 more levels fit under maxDepth 512, 512 do not.
    let options = deepest_options();
    assert_eq!(decode_client(&frame(&request_with_call(&nest(&[0x81], 511))), &options).unwrap().len(), 1);
    let error = decode_client(&frame(&request_with_call(&nest(&[0x81], 512))), &options).unwrap_err();
    assert!(matches!(error.rule(), Rule::DepthLimit { limit: 512 }), "{error:?}");
    let mut deep_bytes = nest(&[0x81], 500);
    *deep_bytes.last_mut().unwrap() = 0x40; // a byte string, refused inside a message
    let error = decode_client(&frame(&request_with_call(&deep_bytes)), &options).unwrap_err();
    assert!(error.to_string().chars().count() <= pi_protocol::runtime::MAX_ERROR_MESSAGE_LENGTH, "{error}");
}

#[test]
fn nesting_100000_deep_fails_with_an_error_not_a_stack_overflow() {
    let _guard = serial();
    check_deep_nesting(CborLimits::default());
}

/// The same with `maxDepth` 512, the deepest configurable (and nesting right at that limit), on
/// a thread with the default stack
/// of a spawned thread (2 MiB). A stack overflow aborts the process, so the check runs in a
/// child process (this test binary again, running `deep_nesting_child` alone) and this test
/// looks at how it ended.
#[test]
fn nesting_at_max_depth_512_fits_a_2_mib_stack() {
    let _guard = serial();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "deep_nesting_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env("PI_DEEP_NESTING_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "decoding with maxDepth 512 on a 2 MiB stack ended with {}: {}",
        output.status,
        stderr.lines().filter(|l| l.contains("overflow") || l.contains("panicked")).collect::<Vec<_>>().join("; ")
    );
}

#[test]
#[ignore = "run in a child process by nesting_at_max_depth_512_fits_a_2_mib_stack"]
fn deep_nesting_child() {
    if std::env::var_os("PI_DEEP_NESTING_CHILD").is_none() {
        return;
    }
    let limits = CborLimits::widest();
    // PI_STACK_KIB lets one probe how small a stack still works (2 MiB when unset).
    let stack = std::env::var("PI_STACK_KIB").ok().and_then(|k| k.parse::<usize>().ok()).map_or(2 * MIB, |k| k * KIB);
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            check_nesting_at_the_limit();
            check_deep_nesting(limits);
        })
        .unwrap()
        .join()
        .unwrap();
}

/// A serde_json value nested `depth` deep, built without recursion.
fn deep_json(depth: usize) -> Value {
    let mut v = Value::Null;
    for i in 0..depth {
        v = if i % 2 == 0 {
            Value::Array(vec![v])
        } else {
            let mut map = serde_json::Map::new();
            map.insert("k".to_owned(), v);
            Value::Object(map)
        };
    }
    v
}

#[test]
fn deep_json_fails_on_the_json_path_without_a_stack_overflow() {
    let _guard = serial();
    // serde_json itself recurses when it drops a deep value, so the value lives on a thread
    // with a large stack; our code runs on threads with the default stack of spawned threads (2 MiB).
    std::thread::Builder::new()
        .stack_size(512 * MIB)
        .spawn(|| {
            let call = deep_json(DEPTH);
            let message = json!({"type": "request", "id": "r", "target": {"serverId": SERVER_ID}, "call": Value::Null});
            let mut message = message;
            message["call"] = call;
            let calls: [(&str, &(dyn Fn() -> bool + Sync)); 3] = [
                ("Payload::from_value", &|| Payload::from_value(&message["call"]).is_err()),
                ("parse_client_message", &|| parse_client_message(&message).is_err()),
                ("encode_client_json", &|| encode_client_json(&message, &CodecOptions::new()).is_err()),
            ];
            for (name, call) in calls {
                eprintln!("{name} on a 2 MiB stack");
                let failed = std::thread::scope(|scope| {
                    std::thread::Builder::new().stack_size(2 * MIB).spawn_scoped(scope, call).unwrap().join().unwrap()
                });
                assert!(failed, "{name} accepted {DEPTH} levels");
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn declared_lengths_beyond_the_input_allocate_nothing() {
    let _guard = serial();
    let unbounded = CborLimits::widest();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("64 GiB text", [&[0x7b, 0, 0, 0, 0x10, 0, 0, 0, 0][..], b"abc"].concat()),
        ("4 GiB text", [&[0x7a, 0xff, 0xff, 0xff, 0xfe][..], b"abc"].concat()),
        ("4 GiB byte string", [&[0x5a, 0xff, 0xff, 0xff, 0xfe][..], b"abc"].concat()),
        ("999,999-item array", vec![0x9a, 0x00, 0x0f, 0x42, 0x3f, 0xf6, 0xf6, 0xf6]),
        ("999,999-entry map", vec![0xba, 0x00, 0x0f, 0x42, 0x3f, 0x61, b'a', 0xf6]),
        ("2^53-1-item array", vec![0x9b, 0x00, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf6]),
        ("nested 999,999-item arrays", [&[0x9a, 0x00, 0x0f, 0x42, 0x3f][..]; 40].concat()),
        ("999,999-item arrays of 4 GiB texts", vec![0x9a, 0x00, 0x0f, 0x42, 0x3f, 0x7a, 0xff, 0xff, 0xff, 0xff, b'x']),
    ];
    for (name, item) in &cases {
        let request = frame(&request_with_call(item));
        let response = frame(&response_with_result(item));
        let (errors, peak) = peak_during(|| {
            [
                decode_cbor(item, unbounded).err(),
                decode_cbor(item, CborLimits::default()).err(),
                decode_client(&request, &CodecOptions::new()).err(),
                decode_client(&request, &deepest_options()).err(),
                decode_server(&response, &deepest_options()).err(),
                decode_client(&frame(item), &deepest_options()).err(),
            ]
        });
        for (i, e) in errors.iter().enumerate() {
            assert!(e.is_some(), "{name}: path {i} accepted");
        }
        println!("{name}: peak {peak} bytes");
        assert!(peak < 64 * KIB, "{name}: {peak} bytes allocated for a {}-byte input", item.len());
    }
}

#[test]
fn a_large_frame_header_reserves_nothing_beyond_what_arrived() {
    let _guard = serial();
    let mut chunk = 0xffff_fffeu32.to_be_bytes().to_vec();
    chunk.extend_from_slice(&[0xa4; 100]);
    let (results, peak) = peak_during(|| {
        let mut decoder = ClientMessageDecoder::with_max_frame_length(u64::from(u32::MAX)).unwrap();
        let results = decoder.push(&chunk);
        let end = decoder.end();
        (results.len(), end.is_err())
    });
    assert_eq!(results, (0, true));
    println!("4 GiB header + 100 bytes: peak {peak} bytes");
    assert!(peak < 16 * KIB, "{peak} bytes reserved for 104 bytes received");

    // A 16 MiB frame arriving in 64 KiB chunks: memory follows what arrived.
    let header = (16 * MIB as u32).to_be_bytes();
    let piece = vec![0u8; 64 * KIB];
    let (_, peak) = peak_during(|| {
        let mut decoder = ServerMessageDecoder::new();
        assert!(decoder.push(&header).is_empty());
        for _ in 0..16 {
            assert!(decoder.push(&piece).is_empty());
        }
    });
    println!("1 MiB of a 16 MiB frame: peak {peak} bytes");
    assert!(peak < 4 * MIB, "{peak} bytes held for 1 MiB received");
}

/// `call` = 16 arrays of 1,000,000 nulls: a 16,000,081-byte item that a tree decoder would turn
/// into 16 million values.
fn amplification_frame() -> Vec<u8> {
    let mut call = vec![0x90];
    for _ in 0..16 {
        call.extend_from_slice(&[0x9a, 0x00, 0x0f, 0x42, 0x40]);
        call.resize(call.len() + 1_000_000, 0xf6);
    }
    let payload = request_with_call(&call);
    assert!(payload.len() <= 16 * MIB);
    frame(&payload)
}

#[test]
fn sixteen_arrays_of_a_million_nulls_decode_under_400_mib() {
    let _guard = serial();
    let stream = amplification_frame();
    for chunk_size in [stream.len(), 64 * KIB] {
        let (call, peak) = peak_during(|| {
            let mut decoder = ClientMessageDecoder::new();
            let mut messages = Vec::new();
            for chunk in stream.chunks(chunk_size) {
                for m in decoder.push(chunk) {
                    messages.push(m.expect("a valid frame"));
                }
            }
            decoder.end().unwrap();
            assert_eq!(messages.len(), 1);
            match messages.pop() {
                Some(ClientMessage::Request(r)) => r.call,
                other => panic!("not a request: {other:?}"),
            }
        });
        assert_eq!(call.widest_container(), 1_000_000);
        assert_eq!(call.depth(), 2);
        println!(
            "16 arrays of 1,000,000 nulls ({} byte frame, {} byte chunks): peak {:.1} MiB",
            stream.len(),
            chunk_size,
            peak as f64 / MIB as f64
        );
        assert!(peak < 400 * MIB, "peak {peak} bytes");
    }
}

const MARKER: &str = "Xy9MARKERq7Z";

/// Rejected inputs that each carry the marker somewhere: (name, side, frame payload).
fn marked_payloads() -> Vec<(String, &'static str, Vec<u8>)> {
    let m = MARKER;
    let long = MARKER.repeat(200);
    let json_cases: Vec<(&str, &'static str, Value)> = vec![
        ("unknown top-level key", "client", json!({"type": "hello", "version": 8, m: 1})),
        ("long unknown key", "client", json!({"type": "hello", "version": 8, long.as_str(): 1})),
        ("unknown type", "client", json!({"type": m, "version": 8})),
        ("version as text", "client", json!({"type": "hello", "version": m})),
        (
            "bad serverId",
            "client",
            json!({"type": "cancel", "id": "r", "target": {"serverId": format!("{m}-e2bb-4255-8caf-4136c566a962")}}),
        ),
        ("unknown target key", "client", json!({"type": "cancel", "id": m, "target": {"serverId": SERVER_ID, m: m}})),
        (
            "session target missing a key",
            "client",
            json!({"type": "cancel", "id": m, "target": {"serverId": SERVER_ID, "sessionId": m}}),
        ),
        ("id as array", "client", json!({"type": "cancel", "id": [m], "target": {"serverId": SERVER_ID}})),
        (
            "unknown key next to a payload",
            "client",
            json!({"type": "request", "id": "r", "target": {"serverId": SERVER_ID}, "call": {m: [m, {m: m}]}, "x": m}),
        ),
        ("server message to a client decoder", "client", json!({"type": "hello", "version": 8, "serverId": m})),
        ("ok as text", "server", json!({"type": "response", "id": m, "ok": m})),
        ("error with an extra key", "server", json!({"type": "hello_error", "error": {"code": m, "message": m, m: m}})),
        (
            "empty code",
            "server",
            json!({"type": "response", "id": m, "ok": false, "error": {"code": "", "message": m}}),
        ),
        (
            "result and error",
            "server",
            json!({"type": "response", "id": m, "ok": true, "result": m, "error": {"code": m, "message": m}}),
        ),
        ("server target as attachment", "server", json!({"type": "attachment", "attachment": {"serverId": m}})),
        ("hello version 7", "server", json!({"type": "hello", "version": 7, "serverId": m})),
        (
            "unknown update key",
            "server",
            json!({"type": "service_update", "subscriptionId": m, "update": {m: m}, m: null}),
        ),
    ];
    let mut out: Vec<(String, &'static str, Vec<u8>)> = json_cases
        .into_iter()
        .map(|(name, side, v)| (name.to_owned(), side, Payload::from_value(&v).unwrap().as_cbor().to_vec()))
        .collect();
    // CBOR-level damage right next to the marker, inside payloads.
    let marker_text = |extra: &[u8]| {
        let mut t = vec![0x78, (m.len() + extra.len()) as u8];
        t.extend_from_slice(m.as_bytes());
        t.extend_from_slice(extra);
        t
    };
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("invalid UTF-8 after the marker", marker_text(&[0xff])),
        ("a surrogate after the marker", marker_text(&[0xed, 0xa0, 0x80])),
        ("an overlong form after the marker", marker_text(&[0xc0, 0xaf])),
        ("a byte string holding the marker", [&[0x58, m.len() as u8][..], m.as_bytes()].concat()),
        (
            "a duplicate key holding the marker",
            [&[0xa2][..], &marker_text(&[]), &[0x01], &marker_text(&[]), &[0x02]].concat(),
        ),
        ("a tag before the marker", [&[0xc1][..], &marker_text(&[])].concat()),
        ("a float16 after the marker", [&[0x82][..], &marker_text(&[]), &[0xf9, 0x3c, 0x00]].concat()),
        ("a map key that is not text", [&[0xa1, 0x01][..], &marker_text(&[])].concat()),
        ("a truncated marker", [&[0x78, 200][..], m.as_bytes()].concat()),
        ("trailing data after the marker", [&marker_text(&[])[..], &[0xf6]].concat()),
        (
            "an unsafe integer next to the marker",
            [&[0x82][..], &marker_text(&[]), &[0x1b, 0x00, 0x20, 0, 0, 0, 0, 0, 0]].concat(),
        ),
    ];
    for (name, item) in damaged {
        out.push((format!("call: {name}"), "client", request_with_call(&item)));
        out.push((format!("result: {name}"), "server", response_with_result(&item)));
        out.push((format!("frame: {name}"), "client", item));
    }
    out
}

fn check_error(context: &str, error: &ProtocolError) {
    let display = error.to_string();
    let debug = format!("{error:?}");
    assert!(display.chars().count() <= pi_protocol::runtime::MAX_ERROR_MESSAGE_LENGTH, "{context}: {display}");
    for text in [&display, &debug, &error.path_string()] {
        assert!(!text.contains(MARKER), "{context}: the error quotes the input: {text}");
        assert!(!text.contains("MARKER"), "{context}: the error quotes the input: {text}");
    }
}

#[test]
fn errors_are_bounded_and_never_quote_rejected_input() {
    let _guard = serial();
    let mut checked = 0;
    for (name, side, payload) in marked_payloads() {
        let stream = frame(&payload);
        let error = if side == "client" {
            decode_client(&stream, &CodecOptions::new()).expect_err(&name)
        } else {
            decode_server(&stream, &CodecOptions::new()).expect_err(&name)
        };
        check_error(&name, &error);
        // The failed decoder's later errors too.
        let mut decoder = ClientMessageDecoder::new();
        let _ = decoder.push(&stream);
        if let Err(e) = decoder.end() {
            check_error(&format!("{name}, after failing"), &e);
        }
        let limits = CborLimits::default();
        if let Err(e) = decode_cbor(&payload, limits) {
            check_error(&format!("{name}, decode_cbor"), &e);
        }
        if let Err(e) = Payload::from_cbor(payload.clone().into(), limits) {
            check_error(&format!("{name}, Payload::from_cbor"), &e);
        }
        checked += 1;
    }
    assert!(checked >= 40, "{checked}");
    // The JSON path and the encoders.
    for (name, side, payload) in marked_payloads() {
        let Ok(value) = decode_cbor(&payload, CborLimits::default()) else { continue };
        let Ok(json) = Payload::from_cbor(payload.into(), CborLimits::default()).map(|p| p.to_value()) else {
            let _ = value;
            continue;
        };
        let errors = if side == "client" {
            [parse_client_message(&json).err(), encode_client_json(&json, &CodecOptions::new()).err()]
        } else {
            [parse_server_message(&json).err(), encode_server_json(&json, &CodecOptions::new()).err()]
        };
        for e in errors {
            let e = e.unwrap_or_else(|| panic!("{name}: the JSON path accepted it"));
            check_error(&format!("{name}, JSON path"), &e);
        }
    }
    for text in [format!("{{\"{MARKER}\": }}"), format!("[\"{MARKER}\", 1e999]"), format!("\"{MARKER}")] {
        let e = Payload::from_json_str(&text).expect_err(&text);
        check_error(&text, &e);
    }
}

/// An error 500 levels down a payload keeps a short path and a bounded message. (Run on a thread with a large stack: this test is about the message, the stack
/// is `nesting_at_max_depth_512_fits_a_2_mib_stack`'s business.)
#[test]
fn the_message_of_an_error_deep_in_a_payload_is_bounded() {
    let _guard = serial();
    std::thread::Builder::new()
        .stack_size(64 * MIB)
        .spawn(|| {
            let mut item = nest(&[0x81], 500);
            *item.last_mut().unwrap() = 0x40; // a byte string, refused inside a message
            let error = decode_client(&frame(&request_with_call(&item)), &deepest_options()).unwrap_err();
            assert_eq!(error.rule(), Rule::ByteString);
            // The path names the schema field only, not the 500 levels inside the payload.
            assert_eq!(error.path_string(), "call");
            let text = error.to_string();
            assert!(text.chars().count() <= pi_protocol::runtime::MAX_ERROR_MESSAGE_LENGTH, "{text}");
        })
        .unwrap()
        .join()
        .unwrap();
}

/// A stream that yields `input` once, then waits forever, and takes every write.
#[cfg(feature = "tokio")]
struct QuietPeer {
    input: Option<Vec<u8>>,
}

#[cfg(feature = "tokio")]
impl tokio::io::AsyncRead for QuietPeer {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.input.take() {
            Some(input) => {
                buf.put_slice(&input);
                std::task::Poll::Ready(Ok(()))
            }
            None => std::task::Poll::Pending,
        }
    }
}

#[cfg(feature = "tokio")]
impl tokio::io::AsyncWrite for QuietPeer {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::task::Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// A server connection run by the tokio driver, past its handshake and idle, holds its read
/// chunk (4 KiB by default) and little else: the driver itself, the connection's options and
/// queues. Counted over 100 connections.
#[cfg(feature = "tokio")]
#[test]
fn an_idle_driven_connection_holds_little_more_than_its_read_chunk() {
    use pi_protocol::connection::{ServerConnection, ServerEvent, ServerOptions};
    use pi_protocol::io::{DriverOptions, ServerDriver};
    use pi_protocol::ClientHello;
    use std::task::{Context, Poll, Waker};

    let _guard = serial();
    let hello = encode_client_message(&ClientMessage::Hello(ClientHello::new(8u32))).unwrap();
    let server_id = ServerId::new(SERVER_ID).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    for read_chunk in [4 * KIB, KIB] {
        let base = ALLOCATOR.current_usage();
        let mut drivers = Vec::with_capacity(100);
        for _ in 0..100 {
            let connection = ServerConnection::new(server_id.clone(), ServerOptions::default());
            let options = DriverOptions::default().read_chunk(read_chunk);
            let mut driver = ServerDriver::with_options(QuietPeer { input: Some(hello.clone()) }, connection, options);
            assert!(matches!(driver.poll_event(&mut cx), Poll::Ready(Some(ServerEvent::Ready))));
            assert!(driver.poll_event(&mut cx).is_pending(), "idle: hello answered, nothing to read");
            assert_eq!(driver.connection().pending_transmit_len(), 0);
            drivers.push(driver);
        }
        let per_connection = (ALLOCATOR.current_usage() - base) / drivers.len();
        println!("an idle driven connection with a {read_chunk}-byte read chunk: {per_connection} bytes");
        assert!(per_connection >= read_chunk, "the read chunk is allocated ({per_connection} bytes)");
        assert!(per_connection <= read_chunk + 3 * KIB, "{per_connection} bytes per idle connection");
    }
}
