//! Which type of a schema a map is: a side's message type, and the unions inside it, resolved
//! against a map's keys and literal values (the schema path `$defs`, the unions' `anyOf`).
//!
//! `inspect` and `stats` label every frame with the struct a valid message resolves to (see
//! `summary`); `encode` walks a refused line along the error's field path to name the keys at
//! fault (see `explain`). Both only read the [`Model`]: a message type added to the schema needs
//! no edit here.

use pi_protocol_gen::model::{Dispatch, LiteralValue, Model, Shape, Struct, TypeDef, TypeExpr, TypeKind, VariantKind};

/// A map's entries as the resolver sees them.
pub trait MapView {
    /// Whether the map holds `key`.
    fn has_key(&self, key: &str) -> bool;
    /// Every key, in map order.
    fn keys(&self) -> Vec<&str>;
    /// Whether the value under `key` is the scalar `literal` (an integral number equals the
    /// integer, as in JSON).
    fn holds(&self, key: &str, literal: &LiteralValue) -> bool;
}

/// How closely a map must match a struct to be resolved to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Every literal holds, every key is one of the struct's and every required key is there:
    /// what a valid message matches.
    Exact,
    /// The struct has literals and every one holds, whatever the other keys: the variant a
    /// decoder dispatching on the literals picks for a map it then refuses.
    Literals,
}

/// The struct a map resolved to, and the union tags chosen on the way.
#[derive(Debug)]
pub struct Resolved<'m> {
    /// The tags of every variant chosen, outermost union first.
    pub tags: Vec<(String, LiteralValue)>,
    /// The Rust name of the outermost variant chosen, when the type is a union.
    pub variant: Option<&'m str>,
    /// The named type of the struct.
    pub def: &'m TypeDef,
    /// Its members.
    pub fields: &'m Struct,
}

impl Resolved<'_> {
    /// The message type's name: its tags (`request`, `response ok=false`), else the variant's
    /// or the struct's Rust name (`pi_protocol_gen::model::tags_name`, as `schema diff` names
    /// message types).
    pub fn name(&self) -> String {
        pi_protocol_gen::model::tags_name(&self.tags)
            .unwrap_or_else(|| self.variant.unwrap_or(&self.def.rust_name).to_owned())
    }
}

/// Resolves `map` as a value of `def`: a struct is itself (when it fits); a union picks its
/// first variant that fits, or, dispatching by JSON type, its one map-shaped variant; a
/// newtype of a named type is that type.
pub fn resolve<'m>(model: &'m Model, def: &'m TypeDef, map: &dyn MapView, fit: Fit) -> Option<Resolved<'m>> {
    let mut tags = Vec::new();
    let mut variant = None;
    let mut def = def;
    // Each step enters another named type; more steps than types would be a cycle.
    for _ in 0..=model.types().len() {
        match &def.kind {
            TypeKind::Struct(fields) => {
                return (fit == Fit::Literals || fits_struct(fields, map, fit)).then_some(Resolved {
                    tags,
                    variant,
                    def,
                    fields,
                });
            }
            TypeKind::Newtype(shape) => def = named(model, shape)?,
            TypeKind::Union(union) => {
                let values = || {
                    union.variants.iter().filter_map(|v| match &v.kind {
                        VariantKind::Value(shape) => Some((v, shape)),
                        VariantKind::Literal(_) => None,
                    })
                };
                let chosen = values()
                    .find_map(|(v, shape)| {
                        named(model, shape).filter(|d| fits(model, d, map, fit, model.types().len())).map(|d| (v, d))
                    })
                    .or_else(|| match union.dispatch {
                        Dispatch::ByType => values().find_map(|(v, shape)| {
                            named(model, shape).filter(|d| !matches!(d.kind, TypeKind::Newtype(_))).map(|d| (v, d))
                        }),
                        _ => None,
                    });
                let (chosen, next) = chosen?;
                tags.extend(chosen.tags.iter().cloned());
                variant.get_or_insert(chosen.rust_name.as_str());
                def = next;
            }
        }
    }
    None
}

/// Whether `map` can be a `def` under `fit` (`budget` bounds the nesting of unions).
fn fits(model: &Model, def: &TypeDef, map: &dyn MapView, fit: Fit, budget: usize) -> bool {
    if budget == 0 {
        return false;
    }
    match &def.kind {
        TypeKind::Struct(fields) => fits_struct(fields, map, fit),
        TypeKind::Newtype(shape) => named(model, shape).is_some_and(|d| fits(model, d, map, fit, budget - 1)),
        TypeKind::Union(union) => union.variants.iter().any(|v| match &v.kind {
            VariantKind::Value(shape) => named(model, shape).is_some_and(|d| fits(model, d, map, fit, budget - 1)),
            VariantKind::Literal(_) => false,
        }),
    }
}

fn fits_struct(fields: &Struct, map: &dyn MapView, fit: Fit) -> bool {
    let literals_hold = fields.literals().all(|l| map.holds(&l.key, &l.value));
    match fit {
        Fit::Literals => literals_hold && fields.literals().next().is_some(),
        Fit::Exact => {
            literals_hold
                && fields.required_keys().all(|k| map.has_key(k))
                && map.keys().iter().all(|k| fields.keys().any(|own| own == *k))
        }
    }
}

/// The named type `shape` refers to, through `null`.
pub fn named<'m>(model: &'m Model, shape: &Shape) -> Option<&'m TypeDef> {
    match &shape.ty {
        TypeExpr::Named { name, .. } => model.by_rust_name(name),
        TypeExpr::Nullable(inner) => named(model, inner),
        _ => None,
    }
}

/// The shape of the field stored under `key`.
pub fn field<'m>(fields: &'m Struct, key: &str) -> Option<&'m Shape> {
    fields.fields().find(|f| f.key == key).map(|f| &f.shape)
}

/// Whether `shape` holds a text string (directly, through `null`, or through a string newtype).
pub fn is_text(model: &Model, shape: &Shape) -> bool {
    match &shape.ty {
        TypeExpr::String => true,
        TypeExpr::Nullable(inner) => is_text(model, inner),
        TypeExpr::Named { name, .. } => {
            matches!(model.by_rust_name(name).map(|d| &d.kind), Some(TypeKind::Newtype(s)) if s.ty == TypeExpr::String)
        }
        _ => false,
    }
}

/// Whether `shape` is an opaque payload (`{}`), possibly `null`.
pub fn is_payload(shape: &Shape) -> bool {
    match &shape.ty {
        TypeExpr::Payload => true,
        TypeExpr::Nullable(inner) => is_payload(inner),
        _ => false,
    }
}

/// The key a side's message union is told apart by, if it has one (`type` for version 8): the
/// one tag, or the first of several.
pub fn tag_key(def: &TypeDef) -> Option<&str> {
    match &def.kind {
        TypeKind::Union(union) => match &union.dispatch {
            Dispatch::Tag(key) => Some(key),
            Dispatch::Tags(keys) => keys.first().map(String::as_str),
            Dispatch::ByType | Dispatch::KeySet => None,
        },
        _ => None,
    }
}

/// The JSON view of a map for [`resolve`].
impl MapView for serde_json::Map<String, serde_json::Value> {
    fn has_key(&self, key: &str) -> bool {
        self.contains_key(key)
    }

    fn keys(&self) -> Vec<&str> {
        self.keys().map(String::as_str).collect()
    }

    fn holds(&self, key: &str, literal: &LiteralValue) -> bool {
        use serde_json::Value;
        match (self.get(key), literal) {
            (Some(Value::String(s)), LiteralValue::String(l)) => s == l,
            (Some(Value::Bool(b)), LiteralValue::Bool(l)) => b == l,
            (Some(Value::Number(n)), LiteralValue::Number(l)) => n.as_f64() == Some(*l),
            (Some(Value::Null), LiteralValue::Null) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_protocol_gen::model::Side;
    use serde_json::json;

    fn v8() -> Model {
        Model::from_json(pi_protocol::SCHEMA_JSON, "v8").unwrap()
    }

    fn map(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn resolves_nested_unions_by_their_tags() {
        let model = v8();
        let server = model.message_type(Side::Server).unwrap();
        let failure = map(json!({"type": "response", "id": "r", "ok": false, "error": {"code": "c", "message": ""}}));
        let resolved = resolve(&model, server, &failure, Fit::Exact).unwrap();
        assert_eq!(resolved.name(), "response ok=false");
        assert_eq!(resolved.def.rust_name, "ErrorResponse");
        assert_eq!(resolved.variant, Some("Response"));
        // An extra key: no exact fit, but the literals still pick the struct.
        let extra = map(json!({"type": "response", "id": "r", "ok": true, "x": 1}));
        assert!(resolve(&model, server, &extra, Fit::Exact).is_none());
        assert_eq!(resolve(&model, server, &extra, Fit::Literals).unwrap().def.rust_name, "SuccessResponse");
        assert!(resolve(&model, server, &map(json!({"type": "helo"})), Fit::Literals).is_none());
        assert_eq!(tag_key(server), Some("type"));
    }

    #[test]
    fn key_set_unions_resolve_by_their_keys() {
        let model = v8();
        let target = model.by_rust_name("RpcTarget").unwrap();
        let session = map(json!({"serverId": "s", "sessionId": "x", "attachmentId": "a"}));
        assert_eq!(resolve(&model, target, &session, Fit::Exact).unwrap().def.rust_name, "SessionTarget");
        assert_eq!(resolve(&model, target, &map(json!({"serverId": "s"})), Fit::Exact).unwrap().name(), "Server");
        assert!(resolve(&model, target, &map(json!({"serverId": "s", "x": 1})), Fit::Exact).is_none());
    }
}
