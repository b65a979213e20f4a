//! `--schema FILE` against the built-in path: with the version 8 schema, in this project's form
//! and in the reference's published form, every command prints the same bytes, the same error
//! lines and the same exit status as the compiled-in types, on the bundled captures, on the
//! damaged ones, and on random messages with one byte or one place changed.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use pi_protocol::Payload;
use pi_protocol_gen::model::Side;
use pi_protocol_gen::sample::Sampler;
use pi_protocol_gen::Model;
use serde_json::Value;

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// The two files holding the version 8 schema.
const SCHEMAS: [&str; 2] = ["schema/pi-protocol.v8.json", "tests/vectors/reference-schema.json"];

fn run(args: &[String], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pi-protocol"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().unwrap();
    // The command may stop reading early (at a bad frame): a broken pipe is expected then.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().unwrap()
}

/// Runs `args` built in and with each schema file; fails unless all three agree. Returns the
/// built-in run.
fn agree(args: &[&str], stdin: &[u8]) -> Output {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let builtin = run(&args, stdin);
    for schema in SCHEMAS {
        let mut with_schema = args.clone();
        with_schema.insert(1, "--schema".into());
        with_schema.insert(2, repo(schema).to_str().unwrap().into());
        let other = run(&with_schema, stdin);
        let show = |o: &Output| format!("{:?}\n{}", o.status.code(), String::from_utf8_lossy(&o.stderr));
        assert_eq!(other.status.code(), builtin.status.code(), "{args:?} with {schema}: {}", show(&other));
        assert!(other.stdout == builtin.stdout, "{args:?} with {schema}: stdout differs");
        assert_eq!(
            String::from_utf8_lossy(&other.stderr),
            String::from_utf8_lossy(&builtin.stderr),
            "{args:?} with {schema}"
        );
    }
    builtin
}

const CAPTURES: [(&str, &str); 6] = [
    ("client", "session-client"),
    ("server", "session-server"),
    ("client", "handshake-rejected-client"),
    ("server", "handshake-rejected-server"),
    ("client", "damaged-badframe-client"),
    ("server", "damaged-truncated-server"),
];

#[test]
fn every_command_agrees_on_the_captures() {
    for (side, name) in CAPTURES {
        let bytes = std::fs::read(repo(&format!("tests/captures/{name}.bin"))).unwrap();
        let other = if side == "client" { "server" } else { "client" };
        let damaged = name.starts_with("damaged");
        let runs: [(&str, &str, Option<&str>); 5] = [
            ("decode", side, None),
            ("inspect", side, None),
            ("stats", side, None),
            ("stats", side, Some("--json")),
            ("decode", other, None),
        ];
        for (command, run_side, flag) in runs {
            let mut args = vec![command, "--side", run_side];
            args.extend(flag);
            let out = agree(&args, &bytes);
            assert_eq!(out.status.success(), !damaged && run_side == side, "{name}: {args:?}");
            if run_side != side {
                let stderr = String::from_utf8(out.stderr).unwrap();
                assert!(stderr.contains(&format!("try --side {side}")), "{name}: {stderr}");
            }
        }
        if !damaged {
            let jsonl = std::fs::read(repo(&format!("tests/captures/{name}.jsonl"))).unwrap();
            let out = agree(&["encode", "--side", side], &jsonl);
            assert_eq!(out.stdout, bytes, "{name}: encode gives back the recorded frames");
        }
    }
}

/// Frames of random messages of both sides, valid and changed, from a sampler over version 8.
struct Draws {
    model: Model,
    seed: u64,
}

/// One drawn message: its side, the JSON (changed or not) and its frame.
struct Draw {
    side: &'static str,
    value: Value,
    frame: Vec<u8>,
}

impl Draws {
    fn new(seed: u64) -> Draws {
        let model = Model::from_json(pi_protocol::SCHEMA_JSON, "v8").unwrap();
        Draws { model, seed }
    }

    /// `count` draws: a valid message, then one place of it changed (as JSON) or one byte of
    /// its payload changed, in turn.
    fn draw(&self, count: usize) -> Vec<Draw> {
        let mut sampler = Sampler::new(&self.model, self.seed);
        let mut out = Vec::new();
        let mut round = 0usize;
        while out.len() < count {
            round += 1;
            let (side, name) = if round % 2 == 0 { (Side::Client, "client") } else { (Side::Server, "server") };
            let Some(valid) = sampler.message(side) else { continue };
            let rust_name = self.model.message_type(side).unwrap().rust_name.clone();
            let (value, mut payload) = if round % 4 < 2 {
                let changed = sampler.mutate(&rust_name, &valid);
                let Ok(cbor) = Payload::from_value(&changed) else { continue };
                (changed, cbor.as_cbor().to_vec())
            } else {
                let cbor = Payload::from_value(&valid).unwrap().as_cbor().to_vec();
                (valid, cbor)
            };
            if round % 4 >= 2 {
                let at = sampler.rng().below(payload.len() as u64) as usize;
                payload[at] = sampler.rng().next_u64() as u8;
            }
            let mut frame = (payload.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(&payload);
            out.push(Draw { side: name, value, frame });
        }
        out
    }
}

#[test]
fn decode_and_stats_agree_on_changed_frames() {
    let draws = Draws::new(0x5c4e_0a11).draw(240);
    // Every message type of both sides is drawn (3 client, 5 server), not only the simplest.
    let kinds: std::collections::HashSet<(&str, String)> =
        draws.iter().filter_map(|d| Some((d.side, d.value.get("type")?.as_str()?.to_owned()))).collect();
    for (side, kind) in [("client", "request"), ("client", "cancel"), ("server", "hello"), ("server", "attachment")] {
        assert!(kinds.contains(&(side, kind.to_owned())), "no {side} {kind} drawn: {kinds:?}");
    }
    let mut refused = 0;
    for (i, draw) in draws.iter().enumerate() {
        // A valid frame of the same side first, so that the changed one is not the first.
        let mut stream = Vec::new();
        if i % 3 == 0 {
            let lead = draws.iter().find(|d| d.side == draw.side).unwrap();
            stream.extend_from_slice(&lead.frame);
        }
        stream.extend_from_slice(&draw.frame);
        let command = if i % 4 == 0 { "stats" } else { "decode" };
        let out = agree(&[command, "--side", draw.side], &stream);
        refused += usize::from(!out.status.success());
    }
    // The changes are meant to break the messages; most do.
    assert!(refused > 200, "{refused} of {} refused", draws.len());
}

#[test]
fn inspect_agrees_on_a_stream_of_changed_frames() {
    let draws = Draws::new(0x01a5_7ec7).draw(400);
    for side in ["client", "server"] {
        let stream: Vec<u8> = draws.iter().filter(|d| d.side == side).flat_map(|d| d.frame.clone()).collect();
        let out = agree(&["inspect", "--side", side], &stream);
        assert_eq!(out.status.code(), Some(1));
        let text = String::from_utf8(out.stdout).unwrap();
        let invalid = text.lines().filter(|l| l.starts_with("frame ") && l.contains("INVALID")).count();
        assert!(invalid > 150, "{side}: {invalid} of 200 frames invalid");
    }
}

#[test]
fn encode_agrees_on_changed_messages() {
    let draws = Draws::new(0x00e7_c0de).draw(160);
    let mut refused = 0;
    for draw in draws.iter().step_by(2) {
        let line = format!("{}\n", draw.value);
        let out = agree(&["encode", "--side", draw.side], line.as_bytes());
        refused += usize::from(!out.status.success());
    }
    assert!(refused > 30, "{refused} of 80 refused");
}

#[test]
fn encode_agrees_on_key_order_and_numbers() {
    let request = |call: &str| {
        format!(
            r#"{{"call":{call},"type":"request","id":"r","target":{{"serverId":"3b241101-e2bb-4255-8caf-4136c566a962"}}}}"#
        )
    };
    for call in ["{\"b\":1,\"10\":2,\"a\":[0.1,-0,1.0,1e2]}", "9007199254740991", "9007199254740993", "1e400", "-0.0"] {
        let line = format!("{}\n", request(call));
        agree(&["encode", "--side", "client"], line.as_bytes());
    }
}

#[test]
fn a_side_the_schema_does_not_define_is_a_usage_error() {
    let schema = std::env::temp_dir().join(format!("pi-protocol-client-only-{}.json", std::process::id()));
    let client_only = serde_json::json!({ "$defs": { "ClientMessage": { "type": "object",
        "properties": { "type": { "const": "ping" } }, "required": ["type"], "additionalProperties": false } } });
    std::fs::write(&schema, client_only.to_string()).unwrap();
    let schema_arg = schema.to_str().unwrap().to_owned();
    // {"type": "ping"}
    let frame = [0, 0, 0, 11, 0xa1, 0x64, b't', b'y', b'p', b'e', 0x64, b'p', b'i', b'n', b'g'];
    let ok = run(&["decode".into(), "--side".into(), "client".into(), "--schema".into(), schema_arg.clone()], &frame);
    assert_eq!((ok.status.code(), String::from_utf8(ok.stdout).unwrap()), (Some(0), "{\"type\":\"ping\"}\n".into()));
    let out = run(&["decode".into(), "--side".into(), "server".into(), "--schema".into(), schema_arg.clone()], &frame);
    std::fs::remove_file(&schema).ok();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("pi-protocol: the schema {schema_arg} defines no server messages\n")
    );
}

/// Schemas whose pattern is nested 20,000 groups deep or holds 100,000 alternatives (the
/// ECMAScript parser recursed once per level and aborted the process, exit 134): `decode
/// --schema` and `schema diff` end with exit status 2 and an error naming the keyword's JSON
/// pointer, before any parser reads the pattern.
#[test]
fn hostile_patterns_are_usage_errors_naming_the_pointer() {
    let nested = format!("^{}a{}$", "(".repeat(20_000), ")".repeat(20_000));
    let alternatives = format!("^(?:{})$", vec!["a"; 100_000].join("|"));
    let good = std::env::temp_dir().join(format!("pi-protocol-pattern-good-{}.json", std::process::id()));
    let schema = |pattern: &str| {
        serde_json::json!({ "$defs": { "ClientMessage": { "type": "object",
            "properties": { "id": { "type": "string", "pattern": pattern } },
            "required": ["id"], "additionalProperties": false } } })
        .to_string()
    };
    std::fs::write(&good, schema("^a+$")).unwrap();
    for (name, pattern) in [("nested", nested), ("alternatives", alternatives)] {
        let path = std::env::temp_dir().join(format!("pi-protocol-pattern-{name}-{}.json", std::process::id()));
        std::fs::write(&path, schema(&pattern)).unwrap();
        let file = path.to_str().unwrap().to_owned();
        // {"id": "a"}
        let frame = [0, 0, 0, 6, 0xa1, 0x62, b'i', b'd', 0x61, b'a'];
        let decode = run(&["decode".into(), "--side".into(), "client".into(), "--schema".into(), file.clone()], &frame);
        let diff = run(&["schema".into(), "diff".into(), good.to_str().unwrap().into(), file.clone()], &[]);
        std::fs::remove_file(&path).ok();
        for (command, out) in [("decode", decode), ("schema diff", diff)] {
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert_eq!(out.status.code(), Some(2), "{name}, {command}: {stderr}");
            assert!(
                stderr.starts_with(&format!(
                    "pi-protocol: {file} is not a usable schema: #/$defs/ClientMessage/properties/id/pattern: "
                )),
                "{name}, {command}: {stderr}"
            );
            assert!(stderr.contains("bytes long, more than the 4096"), "{name}, {command}: {stderr}");
        }
    }
    std::fs::remove_file(&good).ok();
}
