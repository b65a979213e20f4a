//! Random instances of a schema, valid and slightly wrong: what the differential tests feed to
//! the generated codecs and to an independent validator, and what the compatibility check
//! decodes with the other revision of a schema to find a witness.
//!
//! A [`Sampler`] draws a value of any named type of a [`Model`] that satisfies every constraint
//! (lengths as the reference counts them, patterns, bounds, array sizes, record keys), choosing
//! optional fields, union variants, nulls and sizes at random; recursion is cut off by a depth
//! budget. [`Sampler::mutate`] then changes one place of a value the way a faulty peer would:
//! drops or adds a key, changes a literal, gives a value another JSON type, steps over a bound.
//! A mutation may happen to stay valid (another union variant can accept it): callers decide
//! validity with a validator, never from the mutation.
//!
//! Strings that must match a `pattern` are generated from the pattern itself (parsed with
//! `regex-syntax`, checked with the ECMAScript engine the codecs use) and retried; a pattern
//! that cannot be satisfied that way makes the value's optional parts absent or the draw fail
//! (`None`), never an invalid "valid" value.
//!
//! ```
//! use pi_protocol_gen::{model::Side, sample::Sampler, Model};
//! let model = Model::from_json(include_str!("../../schema/pi-protocol.v8.json"), "v8").unwrap();
//! let mut sampler = Sampler::new(&model, 7);
//! let message = sampler.message(Side::Client).expect("v8 messages can always be drawn");
//! assert!(message.get("type").is_some());
//! ```

use std::collections::HashSet;

use pi_protocol_runtime::checks::text_length;
use pi_protocol_runtime::pattern::SchemaPattern;
use serde_json::{Map, Value};

use crate::model::{Checks, LiteralValue, Member, Model, Shape, Side, Struct, TypeExpr, TypeKind, Union, VariantKind};

/// A small, fast, seeded generator (SplitMix64): reproducible draws for tests and witnesses.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }

    /// `true` with probability `1 / n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// How deep a value may nest before the sampler takes the shortest way out.
const DEPTH_BUDGET: usize = 6;

/// How many times a string for a pattern is drawn before giving up.
const PATTERN_ATTEMPTS: usize = 64;

/// Draws random values of the types of a [`Model`].
#[derive(Debug)]
pub struct Sampler<'m> {
    model: &'m Model,
    rng: Rng,
    patterns: std::collections::HashMap<String, Option<(SchemaPattern, Option<regex_syntax::hir::Hir>)>>,
}

impl<'m> Sampler<'m> {
    /// A sampler over `model`, seeded with `seed` (the same seed gives the same values).
    #[must_use]
    pub fn new(model: &'m Model, seed: u64) -> Self {
        Sampler { model, rng: Rng::new(seed), patterns: std::collections::HashMap::new() }
    }

    /// The random source, for callers that draw their own choices alongside.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// A valid message of `side`, or `None` when the model has no message type for it or a
    /// draw could not satisfy a pattern.
    pub fn message(&mut self, side: Side) -> Option<Value> {
        let name = self.model.message_type(side)?.rust_name.clone();
        self.value(&name)
    }

    /// A valid value of the named type `rust_name`.
    pub fn value(&mut self, rust_name: &str) -> Option<Value> {
        self.named(rust_name, 0)
    }

    fn named(&mut self, rust_name: &str, depth: usize) -> Option<Value> {
        let model = self.model;
        let def = model.by_rust_name(rust_name)?;
        match &def.kind {
            TypeKind::Newtype(shape) => self.shape(shape, depth),
            TypeKind::Struct(s) => self.object(s, depth),
            TypeKind::Union(u) => self.union(u, depth),
        }
    }

    fn object(&mut self, s: &Struct, depth: usize) -> Option<Value> {
        let mut map = Map::new();
        for member in &s.members {
            match member {
                Member::Literal(l) => {
                    map.insert(l.key.clone(), l.value.to_json());
                }
                Member::Field(f) => {
                    let present = !f.optional || (depth < DEPTH_BUDGET && !self.rng.one_in(3));
                    if !present {
                        continue;
                    }
                    match self.shape(&f.shape, depth + 1) {
                        Some(v) => {
                            map.insert(f.key.clone(), v);
                        }
                        None if f.optional => {}
                        None => return None,
                    }
                }
            }
        }
        // Keys in a random order: the wire order is free.
        let mut entries: Vec<(String, Value)> = map.into_iter().collect();
        for i in (1..entries.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            entries.swap(i, j);
        }
        Some(Value::Object(entries.into_iter().collect()))
    }

    fn union(&mut self, u: &Union, depth: usize) -> Option<Value> {
        // Past the budget, prefer variants that end the recursion (literals, scalars).
        let order: Vec<usize> = if depth >= DEPTH_BUDGET {
            let mut shallow: Vec<usize> =
                (0..u.variants.len()).filter(|&i| self.is_shallow(&u.variants[i].kind)).collect();
            if shallow.is_empty() {
                shallow = (0..u.variants.len()).collect();
            }
            shallow
        } else {
            (0..u.variants.len()).collect()
        };
        let start = self.rng.below(order.len() as u64) as usize;
        for k in 0..order.len() {
            let variant = &u.variants[order[(start + k) % order.len()]];
            let value = match &variant.kind {
                VariantKind::Literal(value) => Some(value.to_json()),
                VariantKind::Value(shape) => self.shape(shape, depth + 1),
            };
            if value.is_some() {
                return value;
            }
        }
        None
    }

    fn is_shallow(&self, kind: &VariantKind) -> bool {
        match kind {
            VariantKind::Literal(_) => true,
            VariantKind::Value(shape) => !matches!(shape.ty, TypeExpr::Named { .. }),
        }
    }

    fn shape(&mut self, shape: &Shape, depth: usize) -> Option<Value> {
        let checks = &shape.checks;
        match &shape.ty {
            TypeExpr::Named { name, .. } => self.named(name, depth),
            TypeExpr::String => self.string(checks),
            TypeExpr::Integer => self.number(checks, true),
            TypeExpr::Number => self.number(checks, false),
            TypeExpr::Boolean => Some(Value::Bool(self.rng.one_in(2))),
            TypeExpr::Null => Some(Value::Null),
            TypeExpr::Payload => Some(self.any_json(depth)),
            TypeExpr::Nullable(inner) => {
                if depth >= DEPTH_BUDGET || self.rng.one_in(4) {
                    Some(Value::Null)
                } else {
                    self.shape(inner, depth).or(Some(Value::Null))
                }
            }
            TypeExpr::Array(items) => {
                let min = checks.min_items.unwrap_or(0);
                let limit = checks.max_items.unwrap_or(u64::MAX);
                let max = limit.min(if depth >= DEPTH_BUDGET { min } else { min + 3 });
                // Now and then exactly at the maximum, where revisions of a schema tend to differ.
                let count = if depth < DEPTH_BUDGET && limit <= 64 && self.rng.one_in(8) {
                    limit
                } else {
                    self.rng.between(min, max.max(min))
                };
                (0..count).map(|_| self.shape(items, depth + 1)).collect::<Option<Vec<_>>>().map(Value::Array)
            }
            TypeExpr::Record(record) => {
                let count = if depth >= DEPTH_BUDGET { 0 } else { self.rng.below(4) };
                let mut map = Map::new();
                for _ in 0..count {
                    let Some(key) = self.key(&record.keys) else { continue };
                    if let Some(value) = self.shape(&record.values, depth + 1) {
                        map.insert(key, value);
                    }
                }
                Some(Value::Object(map))
            }
        }
    }

    /// A record key: a string meeting the key checks, never holding a line terminator (keys
    /// with one are where validators disagree on `.`; see `docs/SCHEMA.md`).
    fn key(&mut self, checks: &Checks) -> Option<String> {
        for _ in 0..PATTERN_ATTEMPTS {
            let key = self.string(checks)?;
            if let Value::String(key) = key {
                if !key.contains(['\n', '\r', '\u{2028}', '\u{2029}']) {
                    return Some(key);
                }
            }
        }
        None
    }

    /// A string meeting `checks`: its length drawn between the bounds, its text from the
    /// pattern when there is one.
    fn string(&mut self, checks: &Checks) -> Option<Value> {
        let min = checks.min_length.unwrap_or(0);
        // Plain strings are drawn short; a pattern decides its own lengths (a UUID is 36
        // characters), bounded only by the schema's `maxLength`.
        let max = checks.max_length.unwrap_or(min.max(12) + 8).max(min);
        let schema_max = checks.max_length.unwrap_or(u64::MAX);
        let fits = |s: &str| {
            let n = text_length(s) as u64;
            n >= min && n <= schema_max
        };
        match &checks.pattern {
            None => {
                // Now and then right at a bound, where revisions of a schema tend to differ.
                let length = match self.rng.below(8) {
                    0 => min,
                    1 if max <= 4096 => max,
                    _ => self.rng.between(min, max.min(min + 12)),
                };
                let text = self.text(length);
                fits(&text).then_some(Value::String(text))
            }
            Some(pattern) => {
                for _ in 0..PATTERN_ATTEMPTS {
                    let text = self.matching(pattern)?;
                    if fits(&text) {
                        return Some(Value::String(text));
                    }
                }
                None
            }
        }
    }

    /// `length` characters, each counted once by [`text_length`]: ASCII mostly, some Latin,
    /// other scripts and characters outside the BMP.
    pub fn text(&mut self, length: u64) -> String {
        const OTHERS: &[char] = &['é', 'ß', 'Ж', 'ش', '中', '😀', '𝄞', ' ', '"', '\\', '\n', '\t', '\u{7f}'];
        (0..length)
            .map(
                |_| {
                    if self.rng.one_in(6) {
                        *self.rng.pick(OTHERS)
                    } else {
                        char::from(b'a' + self.rng.below(26) as u8)
                    }
                },
            )
            .collect()
    }

    /// A string matching `pattern`, or `None` when none was found.
    fn matching(&mut self, pattern: &str) -> Option<String> {
        let entry = self.patterns.entry(pattern.to_string()).or_insert_with(|| {
            let compiled = SchemaPattern::compile(pattern).ok()?;
            let hir = regex_syntax::ParserBuilder::new().build().parse(pattern).ok();
            Some((compiled, hir))
        });
        let (compiled, hir) = entry.clone()?;
        for _ in 0..PATTERN_ATTEMPTS {
            let candidate = match &hir {
                Some(hir) => {
                    let mut out = String::new();
                    generate(hir, &mut self.rng, &mut out);
                    out
                }
                None => {
                    let length = self.rng.below(12);
                    self.text(length)
                }
            };
            if compiled.matches(&candidate) {
                return Some(candidate);
            }
        }
        None
    }

    /// A number meeting the bounds: integral for integers, otherwise integral or not.
    fn number(&mut self, checks: &Checks, integer: bool) -> Option<Value> {
        let lo = checks.minimum.into_iter().chain(checks.exclusive_minimum).fold(f64::NEG_INFINITY, f64::max);
        let hi = checks.maximum.into_iter().chain(checks.exclusive_maximum).fold(f64::INFINITY, f64::min);
        let (lo, hi) = match (lo.is_finite(), hi.is_finite()) {
            (true, true) => (lo, hi),
            (true, false) => (lo, lo + 1000.0),
            (false, true) => (hi - 1000.0, hi),
            (false, false) => (-1000.0, 1000.0),
        };
        let ok = |v: f64| {
            checks.minimum.is_none_or(|m| v >= m)
                && checks.maximum.is_none_or(|m| v <= m)
                && checks.exclusive_minimum.is_none_or(|m| v > m)
                && checks.exclusive_maximum.is_none_or(|m| v < m)
                && pi_protocol_runtime::Number::new(v).is_some()
        };
        for _ in 0..16 {
            let mut v = lo + (hi - lo) * self.rng.unit();
            if integer || self.rng.one_in(2) {
                v = v.round();
            }
            if self.rng.one_in(8) {
                v = if self.rng.one_in(2) { lo.ceil() } else { hi.floor() };
            }
            if ok(v) && (!integer || v.fract() == 0.0) {
                return Some(number_value(v));
            }
        }
        None
    }

    /// Any JSON value, small.
    fn any_json(&mut self, depth: usize) -> Value {
        let choice = if depth >= DEPTH_BUDGET { self.rng.below(4) } else { self.rng.below(6) };
        match choice {
            0 => Value::Null,
            1 => Value::Bool(self.rng.one_in(2)),
            2 => number_value((self.rng.unit() * 2000.0 - 1000.0).round() / if self.rng.one_in(2) { 1.0 } else { 8.0 }),
            3 => {
                let length = self.rng.below(8);
                Value::String(self.text(length))
            }
            4 => Value::Array((0..self.rng.below(3)).map(|_| self.any_json(depth + 1)).collect()),
            _ => {
                let mut map = Map::new();
                for _ in 0..self.rng.below(3) {
                    let length = self.rng.between(1, 5);
                    let key = self.text(length);
                    map.insert(key, self.any_json(depth + 1));
                }
                Value::Object(map)
            }
        }
    }

    /// `value` (of the named type `rust_name`) with one place changed the way a faulty peer
    /// might change it. The result may still be valid.
    pub fn mutate(&mut self, rust_name: &str, value: &Value) -> Value {
        let mut out = value.clone();
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
                // Descend into the variant the value most likely is, or mutate here.
                let candidates: Vec<&Shape> = u
                    .variants
                    .iter()
                    .filter_map(|v| match &v.kind {
                        VariantKind::Value(shape) => Some(shape),
                        VariantKind::Literal(_) => None,
                    })
                    .collect();
                if candidates.is_empty() || self.rng.one_in(3) {
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
        let fields: Vec<&crate::model::Field> = s.fields().filter(|f| map.contains_key(&f.key)).collect();
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
                let literals: Vec<&crate::model::Literal> = s.literals().collect();
                if let Some(literal) = literals.get(self.rng.below(literals.len().max(1) as u64) as usize) {
                    let wrong = match &literal.value {
                        LiteralValue::String(t) => Value::String(format!("{t}x")),
                        LiteralValue::Bool(b) => Value::Bool(!b),
                        LiteralValue::Number(n) => number_value(n + 1.0),
                        LiteralValue::Null => Value::Bool(false),
                    };
                    map.insert(literal.key.clone(), wrong);
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
            (TypeExpr::String, Value::String(text)) => match self.rng.below(4) {
                0 => {
                    let n = checks.max_length.unwrap_or(8) + 1;
                    text.push_str(&self.text(n));
                }
                1 => {
                    let keep = checks.min_length.unwrap_or(1).saturating_sub(1) as usize;
                    *text = text.chars().take(keep).collect();
                }
                2 => text.insert(0, '\u{1F600}'),
                _ => *value = self.wrong_type(value),
            },
            (TypeExpr::Integer | TypeExpr::Number, Value::Number(n)) => {
                let v = n.as_f64().unwrap_or(0.0);
                let bounds: Vec<f64> =
                    [checks.minimum, checks.maximum, checks.exclusive_minimum, checks.exclusive_maximum]
                        .into_iter()
                        .flatten()
                        .collect();
                *value = match self.rng.below(4) {
                    0 if !bounds.is_empty() => {
                        let b = *self.rng.pick(&bounds);
                        number_value(b + [-1.0, -0.5, 0.0, 0.5, 1.0][self.rng.below(5) as usize])
                    }
                    1 => number_value(v + 0.25),
                    2 => number_value(-v - 1.0),
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
            (TypeExpr::Record(record), Value::Object(map)) => match self.rng.below(3) {
                0 => {
                    let length = self.rng.between(0, 3);
                    let key = format!("{}-{}", self.text(length), self.rng.below(100));
                    let extra = self.any_json(DEPTH_BUDGET);
                    map.insert(key, extra);
                }
                1 if !map.is_empty() => {
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

/// A JSON number for `v`: an integer when integral (and not `-0`), a float otherwise.
fn number_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 && !(v == 0.0 && v.is_sign_negative()) {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// Appends to `out` a random string the regular expression `hir` matches (anchors and other
/// assertions are skipped: the caller checks the result with the real engine).
fn generate(hir: &regex_syntax::hir::Hir, rng: &mut Rng, out: &mut String) {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(literal) => out.push_str(&String::from_utf8_lossy(&literal.0)),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges = class.ranges();
            if ranges.is_empty() {
                return;
            }
            // Mostly ASCII: a narrow range when the class has one, to keep strings readable.
            let ascii: Vec<_> = ranges.iter().filter(|r| (r.start() as u32) < 0x80).collect();
            let range = if !ascii.is_empty() && !rng.one_in(8) { *rng.pick(&ascii) } else { rng.pick(ranges) };
            let (start, end) = (range.start() as u32, (range.end() as u32).min(range.start() as u32 + 0x3ff));
            let mut c = char::from_u32(start + rng.below(u64::from(end - start) + 1) as u32).unwrap_or(range.start());
            if c.is_control() && !matches!(c, '\t') {
                c = range.start();
            }
            out.push(c);
        }
        HirKind::Class(Class::Bytes(class)) => {
            let ranges = class.ranges();
            if let Some(range) = (!ranges.is_empty()).then(|| rng.pick(ranges)) {
                let b = range.start() + rng.below(u64::from(range.end() - range.start()) + 1) as u8;
                if b.is_ascii() {
                    out.push(char::from(b));
                }
            }
        }
        HirKind::Repetition(rep) => {
            let max = rep.max.unwrap_or(rep.min + 3).min(rep.min + 3);
            let count = rng.between(u64::from(rep.min), u64::from(max));
            for _ in 0..count {
                generate(&rep.sub, rng, out);
            }
        }
        HirKind::Capture(capture) => generate(&capture.sub, rng, out),
        HirKind::Concat(parts) => parts.iter().for_each(|p| generate(p, rng, out)),
        HirKind::Alternation(parts) => generate(rng.pick(parts), rng, out),
    }
}

/// Every named type reachable from the message types, for callers that sample them one by one.
#[must_use]
pub fn message_types(model: &Model) -> Vec<String> {
    let mut seen = HashSet::new();
    for side in Side::BOTH {
        if let Some(def) = model.message_type(side) {
            seen.insert(def.rust_name.clone());
        }
    }
    let mut out: Vec<String> = seen.into_iter().collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_reproducible_and_spread() {
        let mut a = Rng::new(1);
        let mut b = Rng::new(1);
        let draws: Vec<u64> = (0..100).map(|_| a.below(10)).collect();
        assert_eq!(draws, (0..100).map(|_| b.below(10)).collect::<Vec<_>>());
        for digit in 0..10 {
            assert!(draws.contains(&digit), "{digit} never drawn");
        }
        assert!((0..1000).map(|_| a.unit()).all(|u| (0.0..1.0).contains(&u)));
    }

    #[test]
    fn strings_from_patterns_match_them() {
        let model = Model {
            protocol_version: None,
            limits: Default::default(),
            title: None,
            description: None,
            types: Vec::new(),
            client_message: None,
            server_message: None,
        };
        let mut sampler = Sampler::new(&model, 3);
        for pattern in ["^[a-z][a-z0-9]*(-[a-z0-9]+)*$", "^https://", "^[0-9a-f]{8}-[0-9a-f]{4}$", "^(ab|cd)+x?$"] {
            let compiled = SchemaPattern::compile(pattern).unwrap();
            for _ in 0..50 {
                let text = sampler.matching(pattern).expect("a match");
                assert!(compiled.matches(&text), "{pattern} on {text:?}");
            }
        }
    }
}

#[cfg(test)]
mod pattern_length_tests {
    use super::*;

    /// A pattern longer than the lengths drawn for plain strings (a UUID: 36 characters), with
    /// no `maxLength`, must still be drawn: every version 8 message type comes up.
    #[test]
    fn long_patterns_without_a_max_length_are_drawn() {
        let model = Model::from_json(include_str!("../../schema/pi-protocol.v8.json"), "v8").unwrap();
        let mut sampler = Sampler::new(&model, 11);
        let id = sampler.value("ServerId").expect("a server id");
        assert_eq!(id.as_str().map(str::len), Some(36), "{id}");
        for side in Side::BOTH {
            let mut kinds = HashSet::new();
            for _ in 0..200 {
                let message = sampler.message(side).expect("a message");
                kinds.insert(message["type"].to_string());
            }
            let want = if side == Side::Client { 3 } else { 5 };
            assert_eq!(kinds.len(), want, "{} messages drawn: {kinds:?}", side.as_str());
        }
    }
}
