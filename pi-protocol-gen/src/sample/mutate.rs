//! [`Sampler::mutate`]: one place of a value changed the way a faulty or unusual peer would
//! change it, with the values where validators and decoders tend to part ways favoured.

use serde_json::{Map, Value};

use super::{number_value, Sampler, DEPTH_BUDGET};
use crate::model::{Field, Literal, LiteralValue, Shape, Struct, TypeExpr, TypeKind, VariantKind};

/// Strings a mutation puts in place of a string or uses as a new record key. The first ones are
/// counted differently by the reference (one character each) and by JSON Schema (code points);
/// then characters outside the BMP, line breaks (which `.` in a pattern does not match), a UUID
/// in both cases, and short ASCII in both cases.
const TRICKY_STRINGS: &[&str] = &[
    "e\u{301}",
    "e\u{301}\u{302}x",
    "a\u{200D}b",
    "\u{2764}\u{FE0F}",
    "\u{1F1EB}\u{1F1F7}",
    "\u{1F600}\u{1F600}",
    "\u{1D11E}",
    "x\ny",
    "x\r\ny",
    "\u{2028}",
    "3b241101-e2bb-4255-8caf-4136c566a962",
    "3B241101-E2BB-4255-8CAF-4136C566A962",
    "",
    "abc",
    "ABC",
    "é",
];

/// Characters that join the one before them for the reference's length (a combining mark, a
/// variation selector, a combining mark of the supplement block) but count for JSON Schema.
const JOINING: &[char] = &['\u{301}', '\u{FE0F}', '\u{1DC0}'];

/// The largest integer a float64 holds exactly, and the bound of the integers the codecs take.
const MAX_SAFE_INTEGER: f64 = pi_protocol_runtime::MAX_SAFE_INTEGER as f64;

impl Sampler<'_> {
    /// `value` (of the named type `rust_name`) with one place changed the way a faulty or
    /// unusual peer might change it. The result may still be valid: decide with a validator.
    #[must_use]
    pub fn mutate(&mut self, rust_name: &str, value: &Value) -> Value {
        let mut out = value.clone();
        self.budget = super::MAX_DRAW_SIZE;
        let model = self.model;
        let Some(def) = model.by_rust_name(rust_name) else { return out };
        let kind = def.kind.clone();
        self.mutate_kind(&kind, &mut out, 0);
        out
    }

    fn mutate_kind(&mut self, kind: &TypeKind, value: &mut Value, depth: usize) {
        match kind {
            TypeKind::Newtype(shape) => self.mutate_shape(shape, value, depth),
            TypeKind::Struct(s) => self.mutate_object(s, value, depth),
            TypeKind::Union(u) => {
                // Descend into a variant the value looks like, or mutate here.
                let candidates: Vec<&Shape> = u
                    .variants
                    .iter()
                    .filter_map(|v| match &v.kind {
                        VariantKind::Value(shape) if self.resembles(shape, value, 0) => Some(shape),
                        _ => None,
                    })
                    .collect();
                let literals: Vec<&LiteralValue> = u
                    .variants
                    .iter()
                    .filter_map(|v| match &v.kind {
                        VariantKind::Literal(literal) => Some(literal),
                        VariantKind::Value(_) => None,
                    })
                    .collect();
                if !literals.is_empty() && (candidates.is_empty() || self.rng.one_in(4)) && self.rng.one_in(2) {
                    // A value of a literal's type that is none of the literals (most often).
                    let literal = *self.rng.pick(&literals);
                    *value = near_miss(literal);
                } else if candidates.is_empty() || self.rng.one_in(6) {
                    *value = self.wrong_type(value);
                } else {
                    let shape = (*self.rng.pick(&candidates)).clone();
                    self.mutate_shape(&shape, value, depth);
                }
            }
        }
    }

    fn mutate_object(&mut self, s: &Struct, value: &mut Value, depth: usize) {
        let Value::Object(map) = value else {
            *value = self.wrong_type(value);
            return;
        };
        let fields: Vec<&Field> = s.fields().filter(|f| map.contains_key(&f.key)).collect();
        match self.rng.below(6) {
            0 if !map.is_empty() => {
                let keys: Vec<String> = map.keys().cloned().collect();
                let key = self.rng.pick(&keys).clone();
                map.remove(&key);
            }
            1 => {
                let length = self.rng.between(1, 6);
                let key = self.text(length);
                let extra = self.any_json(DEPTH_BUDGET);
                map.insert(key, extra);
            }
            2 => {
                let literals: Vec<&Literal> = s.literals().collect();
                if let Some(literal) = literals.get(self.rng.below(literals.len().max(1) as u64) as usize) {
                    map.insert(literal.key.clone(), near_miss(&literal.value));
                }
            }
            _ if !fields.is_empty() && depth < 12 => {
                let field = (*self.rng.pick(&fields)).clone();
                if let Some(inner) = map.get_mut(&field.key) {
                    self.mutate_shape(&field.shape, inner, depth + 1);
                }
            }
            _ => {
                let keys: Vec<String> = map.keys().cloned().collect();
                if let Some(key) = keys.get(self.rng.below(keys.len().max(1) as u64) as usize).cloned() {
                    if let Some(inner) = map.get_mut(&key) {
                        *inner = self.wrong_type(inner);
                    }
                }
            }
        }
    }

    fn mutate_shape(&mut self, shape: &Shape, value: &mut Value, depth: usize) {
        let checks = &shape.checks;
        match (&shape.ty, &mut *value) {
            (TypeExpr::Named { name, .. }, _) => {
                let model = self.model;
                if let Some(def) = model.by_rust_name(name) {
                    let kind = def.kind.clone();
                    self.mutate_kind(&kind, value, depth + 1);
                }
            }
            (TypeExpr::Nullable(inner), Value::Null) => {
                if let Some(v) = self.shape(inner, DEPTH_BUDGET) {
                    *value = v;
                }
                let inner = (**inner).clone();
                self.mutate_shape(&inner, value, depth);
            }
            (TypeExpr::Nullable(inner), _) => {
                let inner = (**inner).clone();
                self.mutate_shape(&inner, value, depth);
            }
            (TypeExpr::String, Value::String(text)) => match self.rng.below(7) {
                0 => {
                    // Within the draw's budget: a `maxLength` in the billions is not stepped over.
                    let n = checks.max_length.unwrap_or(8) + 1;
                    if self.spend(n) {
                        text.push_str(&self.text(n));
                    }
                }
                1 => {
                    let keep = checks.min_length.unwrap_or(1).saturating_sub(1) as usize;
                    *text = text.chars().take(keep).collect();
                }
                2 => text.insert(0, '\u{1F600}'),
                // At a length bound, one more code point that the reference does not count.
                3 => text.push(*self.rng.pick(JOINING)),
                4 | 5 => *text = (*self.rng.pick(TRICKY_STRINGS)).to_owned(),
                _ => *value = self.wrong_type(value),
            },
            (TypeExpr::Integer | TypeExpr::Number, Value::Number(n)) => {
                let v = n.as_f64().unwrap_or(0.0);
                let bounds: Vec<f64> =
                    [checks.minimum, checks.maximum, checks.exclusive_minimum, checks.exclusive_maximum]
                        .into_iter()
                        .flatten()
                        .collect();
                *value = match self.rng.below(8) {
                    0 | 1 if !bounds.is_empty() => {
                        let b = *self.rng.pick(&bounds);
                        number_value(b + [-1.0, -0.5, 0.0, 0.5, 1.0][self.rng.below(5) as usize])
                    }
                    2 => number_value(v + 0.25),
                    3 => number_value(-v - 1.0),
                    // The same number written as a float (an integer for the schema), or `-0`.
                    4 | 5 => float_value(if v == 0.0 { -0.0 } else { v.trunc() }),
                    6 => number_value(if self.rng.one_in(2) { MAX_SAFE_INTEGER } else { -MAX_SAFE_INTEGER }),
                    _ => self.wrong_type(value),
                };
            }
            (TypeExpr::Array(items), Value::Array(elements)) => match self.rng.below(4) {
                0 => {
                    elements.clear();
                }
                1 => {
                    let n = checks.max_items.unwrap_or(3) as usize + 1;
                    while elements.len() < n {
                        match self.shape(items, DEPTH_BUDGET) {
                            Some(v) => elements.push(v),
                            None => break,
                        }
                    }
                }
                2 if !elements.is_empty() => {
                    let i = self.rng.below(elements.len() as u64) as usize;
                    let items = (**items).clone();
                    self.mutate_shape(&items, &mut elements[i], depth + 1);
                }
                _ => *value = self.wrong_type(value),
            },
            (TypeExpr::Record(record), Value::Object(map)) => match self.rng.below(4) {
                0 => {
                    let length = self.rng.between(0, 3);
                    let key = format!("{}-{}", self.text(length), self.rng.below(100));
                    let extra = self.any_json(DEPTH_BUDGET);
                    map.insert(key, extra);
                }
                1 => {
                    // A key where patterns and validators tend to differ, with a valid value.
                    let key = (*self.rng.pick(TRICKY_STRINGS)).to_owned();
                    if let Some(extra) = self.shape(&record.values, DEPTH_BUDGET) {
                        map.insert(key, extra);
                    }
                }
                2 if !map.is_empty() => {
                    let keys: Vec<String> = map.keys().cloned().collect();
                    let key = self.rng.pick(&keys).clone();
                    let values = record.values.clone();
                    if let Some(inner) = map.get_mut(&key) {
                        self.mutate_shape(&values, inner, depth + 1);
                    }
                }
                _ => *value = self.wrong_type(value),
            },
            _ => *value = self.wrong_type(value),
        }
    }

    /// Whether `value` has the JSON type of `shape` and, for a struct, its literals.
    fn resembles(&self, shape: &Shape, value: &Value, depth: usize) -> bool {
        match &shape.ty {
            TypeExpr::Named { name, .. } => match self.model.by_rust_name(name).map(|def| &def.kind) {
                _ if depth > 8 => true,
                Some(TypeKind::Newtype(inner)) => self.resembles(inner, value, depth + 1),
                Some(TypeKind::Struct(s)) => {
                    value.is_object() && s.literals().all(|l| value.get(&l.key) == Some(&l.value.to_json()))
                }
                Some(TypeKind::Union(u)) => u.variants.iter().any(|v| match &v.kind {
                    VariantKind::Literal(literal) => *value == literal.to_json(),
                    VariantKind::Value(inner) => self.resembles(inner, value, depth + 1),
                }),
                None => false,
            },
            TypeExpr::String => value.is_string(),
            TypeExpr::Integer | TypeExpr::Number => value.is_number(),
            TypeExpr::Boolean => value.is_boolean(),
            TypeExpr::Null => value.is_null(),
            TypeExpr::Payload => true,
            TypeExpr::Array(_) => value.is_array(),
            TypeExpr::Record(_) => value.is_object(),
            TypeExpr::Nullable(inner) => value.is_null() || self.resembles(inner, value, depth),
        }
    }

    /// A value of another JSON type than `value`.
    fn wrong_type(&mut self, value: &Value) -> Value {
        let options = [
            Value::Null,
            Value::Bool(true),
            Value::from(7),
            Value::from(-2.5),
            Value::String("x".into()),
            Value::Array(vec![Value::from(1)]),
            Value::Object(Map::new()),
        ];
        let same_type = |a: &Value, b: &Value| std::mem::discriminant(a) == std::mem::discriminant(b);
        let others: Vec<&Value> = options.iter().filter(|o| !same_type(o, value)).collect();
        (*self.rng.pick(&others)).clone()
    }
}

/// A value of the literal's JSON type (a boolean for `null`) that is not the literal.
fn near_miss(literal: &LiteralValue) -> Value {
    match literal {
        LiteralValue::String(t) => Value::String(format!("{t}x")),
        LiteralValue::Bool(b) => Value::Bool(!b),
        LiteralValue::Number(n) => number_value(n + 1.0),
        LiteralValue::Null => Value::Bool(false),
    }
}

/// A JSON number for `v` written as a float even when it is integral (`3.0`, `-0.0`).
fn float_value(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Side;
    use crate::Model;
    use pi_protocol_runtime::checks::text_length;

    fn strings(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            Value::Object(map) => map.iter().for_each(|(k, v)| {
                out.push(k.clone());
                strings(v, out);
            }),
            _ => {}
        }
    }

    /// Integral numbers other than zero written as floats (valid draws hold `-0.0` at times).
    fn floats(value: &Value) -> usize {
        match value {
            Value::Number(n) => usize::from(n.is_f64() && n.as_f64().is_some_and(|f| f.fract() == 0.0 && f != 0.0)),
            Value::Array(items) => items.iter().map(floats).sum(),
            Value::Object(map) => map.values().map(floats).sum(),
            _ => 0,
        }
    }

    /// Valid draws never hold a string counted differently by the reference and by JSON Schema;
    /// mutations put such strings, integral floats and UUIDs in, often enough to matter.
    #[test]
    fn tricky_values_come_from_mutations_only() {
        let model = Model::from_json(include_str!("../../tests/schemas/rich.json"), "rich").unwrap();
        let (mut counted_apart, mut integral_floats, mut uuids) = (0, 0, 0);
        for seed in 0..2_000 {
            let mut sampler = Sampler::new(&model, seed);
            let valid = sampler.message(Side::Client).expect("v8 draws");
            let mut found = Vec::new();
            strings(&valid, &mut found);
            assert!(found.iter().all(|s| text_length(s) == s.chars().count()), "{valid}");
            assert_eq!(floats(&valid), 0, "{valid}");
            let mut value = valid;
            for _ in 0..3 {
                value = sampler.mutate("ClientMessage", &value);
            }
            let mut found = Vec::new();
            strings(&value, &mut found);
            counted_apart += usize::from(found.iter().any(|s| text_length(s) != s.chars().count()));
            uuids += usize::from(found.iter().any(|s| s.eq_ignore_ascii_case(TRICKY_STRINGS[10])));
            integral_floats += floats(&value);
        }
        eprintln!("{counted_apart} counted apart, {integral_floats} integral floats, {uuids} UUIDs");
        assert!(counted_apart > 40, "{counted_apart} values with strings counted apart");
        assert!(integral_floats > 10, "{integral_floats} integral floats");
        assert!(uuids > 8, "{uuids} tricky UUIDs");
    }
}
