//! What is wrong with a JSON line `encode` refuses, in the terms of the line itself.
//!
//! The library's errors name the field path and the rule but never quote what they were given
//! (a peer's data). The line is the user's own, so here the error is walked back through the
//! line along the field path, with the schema's model, to name the unknown key and the keys
//! allowed there, the missing key, the literal values allowed, or the key sets a map could have
//! had. Any other error, or a path the walk cannot follow, reads as the library says it.

use pi_protocol::runtime::json::to_javascript_key_order;
use pi_protocol::{PathSegment, ProtocolError, Rule};
use pi_protocol_gen::model::{LiteralValue, Model, Side, TypeDef, TypeExpr, TypeKind, VariantKind};
use serde_json::{Map, Value};

use crate::resolve::{self, Fit, Resolved};

/// Longest quotation of the user's text (a key or a value), in characters.
const MAX_QUOTE: usize = 60;

/// Describes `error`, refused by the schema `model` for `value`, a message `side` sends:
/// `invalid message at target: unknown key "x" (allowed: serverId)`.
pub fn explain(model: &Model, side: Side, value: &Value, error: &ProtocolError) -> String {
    let plain = crate::describe(error);
    let Some(root) = model.message_type(side) else { return plain };
    // Entry positions count keys in the order the encoder wrote them: JavaScript's.
    let mut ordered = value.clone();
    to_javascript_key_order(&mut ordered);
    let path: Vec<PathSegment> = error.path().collect();
    let full = error.path_string();
    let detail = match error.rule() {
        Rule::MissingField => match path.split_last() {
            Some((PathSegment::Key(key), _)) => {
                Some(format!("invalid message{}: missing required key {}", at(&parent(error, key)), quote(key)))
            }
            _ => None,
        },
        Rule::UnknownField => walk(model, root, &ordered, &path).and_then(|(def, object)| {
            let object = object.as_object()?;
            let resolved = resolve_map(model, def, object)?;
            let unknown: Vec<String> =
                object.keys().filter(|k| resolved.fields.keys().all(|own| own != *k)).map(|k| quote(k)).collect();
            let allowed: Vec<&str> = resolved.fields.keys().collect();
            let noun = if unknown.len() == 1 { "key" } else { "keys" };
            (!unknown.is_empty()).then(|| {
                format!(
                    "invalid message{}: unknown {noun} {} (allowed: {})",
                    at(&full),
                    unknown.join(", "),
                    allowed.join(", ")
                )
            })
        }),
        Rule::Literal => match path.split_last() {
            Some((PathSegment::Key(key), holder)) => walk(model, root, &ordered, holder).and_then(|(def, object)| {
                let given = object.get(*key)?;
                let mut allowed = Vec::new();
                allowed_literals(model, def, key, model.types().len(), &mut allowed);
                let allowed: Vec<String> = allowed.iter().map(ToString::to_string).collect();
                (!allowed.is_empty()).then(|| {
                    format!(
                        "invalid message{}: {} is not an allowed value (allowed: {})",
                        at(&full),
                        quote_value(given),
                        allowed.join(", ")
                    )
                })
            }),
            _ => None,
        },
        Rule::NoVariant => walk(model, root, &ordered, &path).and_then(|(def, object)| {
            let object = object.as_object()?;
            let TypeKind::Union(union) = &def.kind else { return None };
            let mut shapes = Vec::new();
            for variant in &union.variants {
                let VariantKind::Value(shape) = &variant.kind else { continue };
                match resolve::named(model, shape).map(|d| &d.kind) {
                    Some(TypeKind::Struct(fields)) => {
                        shapes.push(format!("{{{}}}", fields.keys().collect::<Vec<_>>().join(", ")))
                    }
                    _ => return None,
                }
            }
            let keys: Vec<String> = object.keys().map(|k| quote(k)).collect();
            Some(format!(
                "invalid message{}: the keys {{{}}} fit none of the allowed shapes: {}",
                at(&full),
                keys.join(", "),
                shapes.join(" or ")
            ))
        }),
        _ => None,
    };
    detail.unwrap_or(plain)
}

/// The struct an object of `def` is: one it fits exactly, or else the one its literals pick.
fn resolve_map<'m>(model: &'m Model, def: &'m TypeDef, object: &Map<String, Value>) -> Option<Resolved<'m>> {
    resolve::resolve(model, def, object, Fit::Exact).or_else(|| resolve::resolve(model, def, object, Fit::Literals))
}

/// The named type and the value at `path` in `value`, a `root`.
fn walk<'m, 'v>(
    model: &'m Model,
    root: &'m TypeDef,
    value: &'v Value,
    path: &[PathSegment],
) -> Option<(&'m TypeDef, &'v Value)> {
    let mut def = Some(root);
    let mut ty: Option<&TypeExpr> = None;
    let mut value = value;
    for segment in path {
        // A newtype holds its shape's type (a bounded array or record).
        let container = match def.map(|d| &d.kind) {
            Some(TypeKind::Newtype(shape)) => Some(unwrap_null(&shape.ty)),
            _ => ty,
        };
        let (next_ty, next_value) = match (segment, value) {
            (PathSegment::Key(key), Value::Object(object)) => {
                let resolved = resolve_map(model, def?, object)?;
                (&resolve::field(resolved.fields, key)?.ty, object.get(*key)?)
            }
            (PathSegment::Index(i), Value::Array(items)) => match container? {
                TypeExpr::Array(element) => (&element.ty, items.get(usize::try_from(*i).ok()?)?),
                _ => return None,
            },
            (PathSegment::Entry(i), Value::Object(object)) => match container? {
                TypeExpr::Record(record) => (&record.values.ty, object.values().nth(usize::try_from(*i).ok()?)?),
                _ => return None,
            },
            _ => return None,
        };
        let next_ty = unwrap_null(next_ty);
        def = match next_ty {
            TypeExpr::Named { name, .. } => model.by_rust_name(name),
            _ => None,
        };
        ty = Some(next_ty);
        value = next_value;
    }
    Some((def?, value))
}

/// ` at target.serverId` for a non-empty path text, nothing at the top level.
fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at {path}")
    }
}

/// The path text of the object holding `key`, the last segment of `error`'s path.
fn parent(error: &ProtocolError, key: &str) -> String {
    let full = error.path_string();
    let parent = full.strip_suffix(key).unwrap_or(&full);
    parent.strip_suffix('.').unwrap_or(parent).to_owned()
}

fn unwrap_null(ty: &TypeExpr) -> &TypeExpr {
    match ty {
        TypeExpr::Nullable(inner) => unwrap_null(&inner.ty),
        other => other,
    }
}

/// The literal values `key` may hold in a map of `def` (every variant's, for a union).
fn allowed_literals(model: &Model, def: &TypeDef, key: &str, budget: usize, out: &mut Vec<LiteralValue>) {
    if budget == 0 {
        return;
    }
    match &def.kind {
        TypeKind::Struct(fields) => {
            if let Some(literal) = fields.literal(key) {
                if !out.contains(&literal.value) {
                    out.push(literal.value.clone());
                }
            }
        }
        TypeKind::Union(union) => {
            for variant in &union.variants {
                if let VariantKind::Value(shape) = &variant.kind {
                    if let Some(inner) = resolve::named(model, shape) {
                        allowed_literals(model, inner, key, budget - 1, out);
                    }
                }
            }
        }
        TypeKind::Newtype(shape) => {
            if let Some(inner) = resolve::named(model, shape) {
                allowed_literals(model, inner, key, budget - 1, out);
            }
        }
    }
}

/// `text` as a JSON string, clipped to [`MAX_QUOTE`] characters.
fn quote(text: &str) -> String {
    let clipped: String = text.chars().take(MAX_QUOTE).collect();
    let quoted = serde_json::to_string(&clipped).unwrap_or_default();
    if clipped.len() < text.len() {
        format!("{quoted}...")
    } else {
        quoted
    }
}

/// `value` as JSON, clipped to [`MAX_QUOTE`] characters.
fn quote_value(value: &Value) -> String {
    match value {
        Value::String(text) => quote(text),
        Value::Array(_) | Value::Object(_) => {
            let text = value.to_string();
            if text.chars().count() > MAX_QUOTE {
                format!("{}...", text.chars().take(MAX_QUOTE).collect::<String>())
            } else {
                text
            }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn explained(value: Value) -> String {
        let model = Model::from_json(pi_protocol::SCHEMA_JSON, "v8").unwrap();
        let error = pi_protocol::parse_client_message(&value).unwrap_err();
        explain(&model, Side::Client, &value, &error)
    }

    const SERVER_ID: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

    #[test]
    fn names_the_keys_at_fault() {
        assert_eq!(
            explained(json!({"type": "hello", "version": 8, "extra": 1, "more": 2})),
            r#"invalid message: unknown keys "extra", "more" (allowed: type, version)"#
        );
        assert_eq!(
            explained(json!({"type": "request", "id": "r", "target": {"serverId": SERVER_ID}})),
            r#"invalid message: missing required key "call""#
        );
        assert_eq!(
            explained(json!({"type": "helo", "version": 8})),
            r#"invalid message at type: "helo" is not an allowed value (allowed: "hello", "request", "cancel")"#
        );
        assert_eq!(
            explained(json!({"type": "cancel", "id": "r", "target": {"serverId": SERVER_ID, "x": 1}})),
            "invalid message at target: the keys {\"serverId\", \"x\"} fit none of the allowed shapes: {serverId} or \
             {serverId, sessionId, attachmentId}"
        );
    }

    #[test]
    fn other_errors_read_as_the_library_says() {
        assert_eq!(
            explained(json!({"type": "cancel", "id": "", "target": {"serverId": SERVER_ID}})),
            "invalid message at id: string is empty (at least 1 character required)"
        );
    }
}
