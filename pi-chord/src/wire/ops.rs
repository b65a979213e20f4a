//! The shape check of one Delta wire op, as Chord checks every op of a snapshot or an update
//! before its decoder sees it (`assertValidWireOp` of `@earendil-works/chord@0.85.1`).
//!
//! TODO(delta merge): the `delta` module owns the Delta wire grammar; once it exposes its own
//! wire-op check, [`check_wire_op`] calls it and this file goes. Until then this is the one
//! place pi-chord checks an op's shape; it decodes nothing (path ids, short forms and values are
//! the decoder's business).

use serde_json::Value;

/// Path segments Chord refuses anywhere in a path (`RESERVED_SEGMENTS`): they would reach an
/// object's prototype in JavaScript.
pub const RESERVED_SEGMENTS: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// Why an op was refused: the place inside the op (`[1]`, `[2][0]`; empty for the op itself)
/// and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpFault {
    pub(crate) at: String,
    pub(crate) message: &'static str,
}

fn fault(at: impl Into<String>, message: &'static str) -> OpFault {
    OpFault { at: at.into(), message }
}

/// Whether `value` is a JSON number JavaScript's `Number.isInteger` accepts and is at least 0.
fn is_count(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.as_u64().is_some() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0 && f >= 0.0)
        }
        _ => false,
    }
}

/// Checks a path: an array whose segments are strings outside [`RESERVED_SEGMENTS`] or
/// integers from 0 (`assertSafePath`). `at` is the path's place in the op.
fn check_path(path: &[Value], at: &str) -> Result<(), OpFault> {
    for (i, segment) in path.iter().enumerate() {
        let fine = match segment {
            Value::String(s) => !RESERVED_SEGMENTS.contains(&s.as_str()),
            other => is_count(other),
        };
        if !fine {
            return Err(fault(format!("{at}[{i}]"), "unsafe path segment"));
        }
    }
    Ok(())
}

/// Checks a path reference: a path id (an integer from 0) or a path.
fn check_ref(value: &Value, at: &str) -> Result<(), OpFault> {
    match value {
        Value::Number(_) if is_count(value) => Ok(()),
        Value::Number(_) => Err(fault(at, "path id is not an integer from 0")),
        Value::Array(path) => check_path(path, at),
        _ => Err(fault(at, "path is neither a path id nor an array")),
    }
}

/// Checks one wire op: a non-empty array whose first element is a verb (`r`, `s`, `d`, `a`,
/// `t`, `p`, `#`) and whose length and elements fit the verb, long form or short form.
pub(crate) fn check_wire_op(op: &Value) -> Result<(), OpFault> {
    let Value::Array(op) = op else { return Err(fault("", "op is not an array")) };
    let Some(Value::String(verb)) = op.first() else {
        return Err(fault(if op.is_empty() { "" } else { "[0]" }, "op has no verb"));
    };
    let count = |i: usize, message| if is_count(&op[i]) { Ok(()) } else { Err(fault(format!("[{i}]"), message)) };
    let string = |i: usize| if op[i].is_string() { Ok(()) } else { Err(fault(format!("[{i}]"), "not a string")) };
    match (verb.as_str(), op.len()) {
        ("r", 2) | ("s", 2) | ("d", 1) => Ok(()),
        ("s", 3) | ("d", 2) => check_ref(&op[1], "[1]"),
        ("a", 3) => {
            check_ref(&op[1], "[1]")?;
            string(2)
        }
        ("a", 2) => string(1),
        ("t", 3) => {
            check_ref(&op[1], "[1]")?;
            count(2, "count is not an integer from 0")
        }
        ("t", 2) => count(1, "count is not an integer from 0"),
        ("p", 5 | 4) => {
            let first = op.len() - 3;
            if op.len() == 5 {
                check_ref(&op[1], "[1]")?;
            }
            count(first, "index is not an integer from 0")?;
            count(first + 1, "removal count is not an integer from 0")?;
            if op[first + 2].is_array() {
                Ok(())
            } else {
                Err(fault(format!("[{}]", first + 2), "items are not an array"))
            }
        }
        ("#", 3) => {
            count(1, "path id is not an integer from 0")?;
            match &op[2] {
                Value::Array(path) => check_path(path, "[2]"),
                _ => Err(fault("[2]", "path is not an array")),
            }
        }
        ("r" | "s" | "d" | "a" | "t" | "p" | "#", _) => Err(fault("", "wrong number of elements for the verb")),
        _ => Err(fault("[0]", "unknown verb")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_ops_chord_writes_pass() {
        for op in [
            json!(["r", {"value": 0}]),
            json!(["s", ["value"], 2]),
            json!(["#", 0, ["value"]]),
            json!(["s", 0, 5]),
            json!(["a", 1, "+3"]),
            json!(["a", "+3"]),
            json!(["t", ["log"], 2]),
            json!(["t", 2]),
            json!(["p", ["list", 0], 1, 0, [1, 2]]),
            json!(["p", 1, 0, []]),
            json!(["d", ["x"]]),
            json!(["d"]),
            json!(["s", 3]),
        ] {
            assert_eq!(check_wire_op(&op), Ok(()), "{op}");
        }
    }

    #[test]
    fn bad_ops_name_the_element() {
        let cases = [
            (json!({}), ""),
            (json!([]), ""),
            (json!([1]), "[0]"),
            (json!(["x", 1]), "[0]"),
            (json!(["r"]), ""),
            (json!(["s", ["a", "__proto__"], 1]), "[1][1]"),
            (json!(["s", -1, 1]), "[1]"),
            (json!(["s", "a", 1]), "[1]"),
            (json!(["a", ["a"], 1]), "[2]"),
            (json!(["t", ["a"], 1.5]), "[2]"),
            (json!(["p", 0, 0, 0]), "[3]"),
            (json!(["#", 0, "a"]), "[2]"),
            (json!(["#", 0, [true]]), "[2][0]"),
        ];
        for (op, at) in cases {
            assert_eq!(check_wire_op(&op).map_err(|f| f.at), Err(at.to_string()), "{op}");
        }
    }
}
