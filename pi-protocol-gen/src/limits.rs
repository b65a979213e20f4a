//! The limits every schema stays within (`SCHEMA.md`, "Limits").
//!
//! A schema file may come from anyone: the generator reads it in a `build.rs`, the CLI reads it
//! with `--schema` and `schema diff`. Each limit bounds one way a document could make the
//! generator or a consumer of its [`Model`](crate::Model) recurse without end, take time beyond
//! reason, or emit code that does not compile; a document beyond a limit is refused with a
//! [`GenError::Schema`](crate::GenError::Schema) naming the JSON pointer where the limit was
//! passed. The values leave real protocols far inside (the version 8 schema: a document 7 levels
//! deep, 22 named types, 5 members at most) and keep the deepest accepted schema
//! within a 2 MiB stack (a test thread's) in every consumer, in debug builds.

use serde_json::Value;

use crate::error::{GenError, Result};
use crate::pointer::escape_pointer;

/// The deepest nesting of JSON arrays and objects in a schema document (the root counts as
/// one level): the deepest `serde_json` parses from text, so
/// [`Model::from_json`](crate::Model::from_json) and [`Model::from_value`](crate::Model::from_value)
/// accept the same documents.
pub const MAX_DOCUMENT_DEPTH: usize = 127;

/// The deepest nesting of a value written in place inside one type: each array, record,
/// nullable value and reference followed where it is used (to a schema that is not a named
/// type) is one level. Deeper values must name an inner schema in `$defs`.
pub const MAX_NESTING: usize = 32;

/// The most types one chain of named types may hold one another with no object or array in
/// between (a newtype holding a nullable newtype holding a union ...): decoders recurse once
/// per type of such a chain without reading anything.
pub const MAX_CHAIN: usize = 32;

/// The most named types a schema may define or have named after the place they are found.
pub const MAX_TYPES: usize = 4096;

/// The most members of one union (`anyOf`, `oneOf`), values of one `enum`, or properties of
/// one object.
pub const MAX_MEMBERS: usize = 1024;

/// The most literal keys a union of objects may need to tell its members apart (`tags(...)`).
pub const MAX_TAG_KEYS: usize = 16;

/// The most heap bytes the distinct patterns of one schema may take compiled, together (each
/// one is also bounded by the runtime's `pattern` limits: `MAX_PATTERN_LENGTH`,
/// `MAX_PATTERN_NESTING`, `MAX_PATTERN_ALTERNATIVES`, `MAX_PATTERN_AUTOMATON`): a short pattern
/// such as `.{500}` compiles to a large automaton, and a document may hold many.
pub const MAX_PATTERN_MEMORY: usize = 64 << 20;

/// Fails at the first value of `document` nested deeper than [`MAX_DOCUMENT_DEPTH`], naming
/// its pointer; walks the document without recursion.
pub(crate) fn check_document_depth(document: &Value) -> Result<()> {
    // Every container met, with its parent's index and its key in the parent: enough to spell
    // the pointer of the one that is too deep.
    struct Seen<'v> {
        parent: usize,
        segment: String,
        depth: usize,
        value: &'v Value,
    }
    let mut seen = vec![Seen { parent: 0, segment: String::new(), depth: 1, value: document }];
    let mut next = 0;
    while next < seen.len() {
        let (depth, value) = (seen[next].depth, seen[next].value);
        let children: Box<dyn Iterator<Item = (String, &Value)>> = match value {
            Value::Object(map) => Box::new(map.iter().map(|(k, v)| (escape_pointer(k), v))),
            Value::Array(items) => Box::new(items.iter().enumerate().map(|(i, v)| (i.to_string(), v))),
            _ => Box::new(std::iter::empty()),
        };
        for (segment, child) in children {
            if !matches!(child, Value::Object(_) | Value::Array(_)) {
                continue;
            }
            seen.push(Seen { parent: next, segment, depth: depth + 1, value: child });
            if depth + 1 > MAX_DOCUMENT_DEPTH {
                let mut segments = Vec::new();
                let mut at = seen.len() - 1;
                while at != 0 {
                    segments.push(std::mem::take(&mut seen[at].segment));
                    at = seen[at].parent;
                }
                segments.push("#".to_string());
                segments.reverse();
                return Err(GenError::schema(
                    segments.join("/"),
                    format!("the document is nested more than {MAX_DOCUMENT_DEPTH} levels deep"),
                ));
            }
        }
        next += 1;
    }
    Ok(())
}
