//! Shared by the interpreter tests of this crate: the comparisons of `verdicts` (which the
//! schema suite's interpreter test includes too), the repository's files, and the corpus of
//! recorded streams (conformance vectors and captures).

#![allow(dead_code)]

mod verdicts;

use std::path::{Path, PathBuf};

use pi_protocol::runtime::CodecOptions;
use pi_protocol_gen::interpret::Interpreter;
use pi_protocol_gen::model::Side;
use pi_protocol_gen::Model;
use serde_json::Value;
pub use verdicts::*;

/// A path in the repository: the test crate including this file may sit at any depth below its
/// root (the nearest folder above the crate that holds `schema/pi-protocol.v8.json`).
pub fn repo_path(relative: &str) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir
        .ancestors()
        .find(|dir| dir.join("schema/pi-protocol.v8.json").is_file())
        .expect("the repository root above the test crate");
    root.join(relative)
}

/// A file of the repository.
pub fn repo_file(relative: &str) -> Vec<u8> {
    let path = repo_path(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The interpreter of a schema file of the repository.
pub fn interpreter_of(relative: &str) -> Interpreter {
    let text = String::from_utf8(repo_file(relative)).expect("UTF-8 schema");
    let model = Model::from_json(&text, relative).unwrap_or_else(|e| panic!("{relative}: {e}"));
    Interpreter::new(&model).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// One recorded stream: who sends it, its bytes, the options to decode it with.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub name: String,
    pub side: Side,
    pub stream: Vec<u8>,
    pub options: CodecOptions,
}

/// Every decode case of the conformance vectors (`tests/vectors/*.jsonl`) and every capture
/// (`tests/captures/*.bin`).
pub fn recorded_streams() -> Vec<Recorded> {
    let mut out = Vec::new();
    for file in ["vectors.jsonl", "rfc8949-examples.jsonl", "regressions.jsonl"] {
        let text = String::from_utf8(repo_file(&format!("tests/vectors/{file}"))).expect("UTF-8");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let case: Value = serde_json::from_str(line).expect("JSON line");
            let request = &case["request"];
            if request["op"] != "decode" {
                continue;
            }
            let side = if request["side"] == "server" { Side::Server } else { Side::Client };
            let options = match request.get("maxFrameLength").and_then(Value::as_u64) {
                None => CodecOptions::new(),
                Some(n) => match CodecOptions::new().max_frame_length(n) {
                    Ok(options) => options,
                    Err(_) => continue,
                },
            };
            let chunks = request["chunks"].as_array().map(Vec::as_slice).unwrap_or_default();
            let stream: Vec<u8> =
                chunks.iter().flat_map(|c| hex::decode(c.as_str().unwrap_or("")).unwrap_or_default()).collect();
            out.push(Recorded { name: case["id"].as_str().unwrap_or("?").to_owned(), side, stream, options });
        }
    }
    let mut captures: Vec<PathBuf> = std::fs::read_dir(repo_path("tests/captures"))
        .expect("captures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    captures.sort();
    for path in captures {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_owned();
        let side = if name.ends_with("-server") { Side::Server } else { Side::Client };
        let stream = std::fs::read(&path).expect("capture");
        out.push(Recorded { name, side, stream, options: CodecOptions::new() });
    }
    out
}
