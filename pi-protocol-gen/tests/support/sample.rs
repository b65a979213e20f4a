//! Random JSON instances of any schema, read from its checked [`Model`]: mostly valid (values
//! picked to meet the constraints, required keys present), sometimes not (a value breaking a
//! constraint, a required key left out, an unknown key), keys in schema or shuffled order, so
//! that decoders see both what they must accept and what they must refuse with every rule.

use pi_protocol_gen::model::{Checks, Member, Model, Shape, Struct, TypeDef, TypeExpr, TypeKind, Union, VariantKind};
use pi_protocol_runtime::checks::{has_max_length, has_min_length};
use pi_protocol_runtime::pattern::SchemaPattern;
use serde_json::{json, Map, Value};

/// Strings tried for string values and record keys: the empty string, letters in both cases,
/// digits, punctuation, combining marks, characters outside the BMP, a line break, a UUID.
const STRINGS: &[&str] = &[
    "",
    "a",
    "ab",
    "abc",
    "abcd",
    "abcde",
    "ABC",
    "AB",
    "A",
    "a-b",
    "ab-cd",
    "a--b",
    "#",
    "#x",
    "#tag",
    "1",
    "12",
    "x1",
    "é",
    "e\u{301}x",
    "\u{1F600}\u{1F600}",
    "\u{1F1EB}\u{1F1F7}",
    "x\ny",
    "hello world",
    "0123456789ab",
    "low",
    "red",
    "type",
    "op",
    "kind",
    "3b241101-e2bb-4255-8caf-4136c566a962",
    "3B241101-E2BB-4255-8CAF-4136C566A962",
];

/// Integers tried: around zero, around common bounds, the safe-integer edges.
const INTEGERS: &[i64] =
    &[0, 1, -1, 2, 3, 7, 8, 9, 10, 11, -2, -3, -4, 999, 1000, 1001, 9_007_199_254_740_991, -9_007_199_254_740_991];

/// Fractional and other numbers tried.
const NUMBERS: &[f64] = &[0.0, -0.0, 0.5, -0.5, -1.5, -1.6, 2.5, 2.4, 9.0, 9.5, 1e-7, 3.0, 1e15, -1e15];

/// A small deterministic random source (xorshift), seeded by the property test.
pub struct Sampler<'m> {
    model: &'m Model,
    state: u64,
    /// How often (in 1000ths) a value is picked without regard to its constraints.
    pub invalid_rate: u64,
}

impl<'m> Sampler<'m> {
    pub fn new(model: &'m Model, seed: u64) -> Self {
        Sampler { model, state: seed | 1, invalid_rate: 30 }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, per_thousand: u64) -> bool {
        self.next() % 1000 < per_thousand
    }

    /// An instance of the named type `def`.
    pub fn instance(&mut self, def: &TypeDef) -> Value {
        self.named(def, 0)
    }

    fn named(&mut self, def: &TypeDef, depth: u32) -> Value {
        match &def.kind {
            TypeKind::Newtype(shape) => self.shape(shape, depth),
            TypeKind::Struct(s) => self.object(s, depth),
            TypeKind::Union(u) => self.union(u, depth),
        }
    }

    fn shape(&mut self, shape: &Shape, depth: u32) -> Value {
        let deep = depth > 5;
        match &shape.ty {
            TypeExpr::Named { name, .. } => match self.model.by_rust_name(name) {
                Some(def) if depth < 12 => self.named(def, depth + 1),
                _ => Value::Null,
            },
            TypeExpr::String => Value::String(self.string(&shape.checks)),
            TypeExpr::Integer => self.integer(&shape.checks),
            TypeExpr::Number => self.number(&shape.checks),
            TypeExpr::Boolean => Value::Bool(self.chance(500)),
            TypeExpr::Null => Value::Null,
            TypeExpr::Payload => self.payload(depth),
            TypeExpr::Array(inner) => {
                let len = self.length(&shape.checks, deep);
                Value::Array((0..len).map(|_| self.shape(inner, depth + 1)).collect())
            }
            TypeExpr::Record(record) => {
                let len = if deep { 0 } else { self.below(4) };
                let mut map = Map::new();
                for _ in 0..len {
                    let key = self.string(&record.keys);
                    map.insert(key, self.shape(&record.values, depth + 1));
                }
                Value::Object(map)
            }
            TypeExpr::Nullable(inner) => {
                if deep || self.chance(250) {
                    Value::Null
                } else {
                    self.shape(inner, depth)
                }
            }
        }
    }

    fn object(&mut self, s: &Struct, depth: u32) -> Value {
        let deep = depth > 5;
        let mut entries: Vec<(String, Value)> = Vec::new();
        for member in &s.members {
            match member {
                Member::Literal(literal) => {
                    if !self.chance(10) {
                        let value = if self.chance(15) { json!("other") } else { literal.value.to_json() };
                        entries.push((literal.key.clone(), value));
                    }
                }
                Member::Field(field) => {
                    let present = if field.optional { !deep && self.chance(500) } else { !self.chance(10) };
                    if present {
                        entries.push((field.key.clone(), self.shape(&field.shape, depth)));
                    }
                }
            }
        }
        if self.chance(10) {
            entries.push(("unknown".to_owned(), Value::Null));
        }
        if self.chance(300) {
            // Any order: the wire's key order is free.
            for i in (1..entries.len()).rev() {
                let j = self.below(i + 1);
                entries.swap(i, j);
            }
        }
        Value::Object(entries.into_iter().collect())
    }

    fn union(&mut self, u: &Union, depth: u32) -> Value {
        if self.chance(self.invalid_rate) {
            // A value of no variant, or of a type the union has but not one of its values.
            return match self.below(3) {
                0 => Value::String(STRINGS[self.below(STRINGS.len())].to_owned()),
                1 => json!(INTEGERS[self.below(INTEGERS.len())]),
                _ => Value::Bool(self.chance(500)),
            };
        }
        let variant = &u.variants[self.below(u.variants.len())];
        match &variant.kind {
            VariantKind::Literal(value) => value.to_json(),
            VariantKind::Value(shape) => self.shape(shape, depth),
        }
    }

    fn string(&mut self, checks: &Checks) -> String {
        let pattern = checks.pattern.as_deref().and_then(|p| SchemaPattern::compile(p).ok());
        let fits = |s: &str| {
            checks.min_length.is_none_or(|min| has_min_length(s, min))
                && checks.max_length.is_none_or(|max| has_max_length(s, max))
                && pattern.as_ref().is_none_or(|p| p.matches(s))
        };
        let candidates: Vec<&str> = STRINGS.iter().copied().filter(|s| fits(s)).collect();
        if candidates.is_empty() || self.chance(self.invalid_rate) {
            STRINGS[self.below(STRINGS.len())].to_owned()
        } else {
            candidates[self.below(candidates.len())].to_owned()
        }
    }

    fn fits_bounds(checks: &Checks, n: f64) -> bool {
        checks.minimum.is_none_or(|b| n >= b)
            && checks.maximum.is_none_or(|b| n <= b)
            && checks.exclusive_minimum.is_none_or(|b| n > b)
            && checks.exclusive_maximum.is_none_or(|b| n < b)
    }

    fn integer(&mut self, checks: &Checks) -> Value {
        if self.chance(20) {
            // A float64 on the wire that is an integer for the schema, or is not.
            return json!([0.0, -0.0, 3.0, 2.5][self.below(4)]);
        }
        let candidates: Vec<i64> = INTEGERS.iter().copied().filter(|&n| Self::fits_bounds(checks, n as f64)).collect();
        let n = if candidates.is_empty() || self.chance(self.invalid_rate) {
            INTEGERS[self.below(INTEGERS.len())]
        } else {
            candidates[self.below(candidates.len())]
        };
        json!(n)
    }

    fn number(&mut self, checks: &Checks) -> Value {
        if self.chance(300) {
            return self.integer(checks);
        }
        let candidates: Vec<f64> = NUMBERS.iter().copied().filter(|&n| Self::fits_bounds(checks, n)).collect();
        let n = if candidates.is_empty() || self.chance(self.invalid_rate) {
            NUMBERS[self.below(NUMBERS.len())]
        } else {
            candidates[self.below(candidates.len())]
        };
        json!(n)
    }

    fn length(&mut self, checks: &Checks, deep: bool) -> usize {
        let min = checks.min_items.unwrap_or(0) as usize;
        let max = checks.max_items.map_or(4, |m| (m as usize).min(4)).max(min);
        if self.chance(self.invalid_rate) {
            return self.below(6);
        }
        if deep {
            return min;
        }
        min + self.below(max - min + 1)
    }

    fn payload(&mut self, depth: u32) -> Value {
        match self.below(if depth > 5 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance(500)),
            2 => self.number(&Checks::default()),
            3 => Value::String(STRINGS[self.below(STRINGS.len())].to_owned()),
            4 => Value::Array((0..self.below(3)).map(|_| self.payload(depth + 1)).collect()),
            _ => {
                let mut map = Map::new();
                for _ in 0..self.below(3) {
                    map.insert(STRINGS[self.below(STRINGS.len())].to_owned(), self.payload(depth + 1));
                }
                Value::Object(map)
            }
        }
    }
}
