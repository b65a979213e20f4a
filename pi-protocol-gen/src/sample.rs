//! Random instances of a schema, valid and slightly wrong: what the differential tests feed to
//! the generated codecs, to the schema interpreter and to an independent validator.
//!
//! A [`Sampler`] draws a value of any named type of a [`Model`] that satisfies every constraint
//! (lengths as the reference counts them, patterns, bounds, array sizes, record keys), choosing
//! optional fields, union variants, nulls and sizes at random; recursion is cut off by a depth
//! budget. Object keys come shuffled, in the schema's order, or either at random
//! ([`KeyOrder`]). [`Sampler::mutate`] then changes one place of a value the way a faulty or
//! unusual peer would: drops or adds a key, changes a literal, gives a value another JSON type,
//! steps over a bound, writes an integral number as a float, puts in a string where validators
//! tend to disagree (combining marks, joiners, variation selectors, flags, characters outside
//! the BMP, line breaks, UUIDs in both cases). A mutation may happen to stay valid (another
//! union variant can accept it, a combining mark leaves the reference's length unchanged):
//! callers decide validity with a validator, never from the mutation.
//!
//! Valid draws hold no string whose length the reference and the JSON Schema standard count
//! differently (see `SCHEMA.md`, "Where the reference wins"): such strings come only from
//! mutations, so a validator that counts code points agrees with the codecs on every valid draw.
//!
//! Strings that must match a `pattern` are generated from the pattern itself (parsed with
//! `regex-syntax`, checked with the ECMAScript engine the codecs use) and retried; a pattern
//! that cannot be satisfied that way makes the value's optional parts absent or the draw fail
//! (`None`), never an invalid "valid" value.
//!
//! ```
//! use pi_protocol_gen::{model::Side, sample::{KeyOrder, Sampler}, Model};
//! let model = Model::from_json(include_str!("../../schema/pi-protocol.v8.json"), "v8").unwrap();
//! let mut sampler = Sampler::new(&model, 7).key_order(KeyOrder::Schema);
//! let message = sampler.message(Side::Client).expect("v8 messages can always be drawn");
//! assert_eq!(message.as_object().unwrap().keys().next().map(String::as_str), Some("type"));
//! let changed = sampler.mutate("ClientMessage", &message);
//! assert_ne!(changed, message);
//! ```

use std::collections::HashSet;

use pi_protocol_runtime::checks::text_length;
use pi_protocol_runtime::pattern::SchemaPattern;
use serde_json::{Map, Value};

use crate::model::{Checks, Member, Model, Shape, Side, Struct, TypeExpr, TypeKind, Union, VariantKind};

mod mutate;

/// The seeded generator of every draw: a [`fastrand::Rng`] (wyrand) behind the few ways a
/// sampler draws, so that a seed replays the same values (tests, witnesses, the conformance
/// generator of `cargo xtask conformance`, whose `--seed` replays a run). The workspace's
/// tests, benches and examples draw from the same generator.
#[derive(Debug, Clone)]
pub struct Rng(fastrand::Rng);

impl Rng {
    /// A generator seeded with `seed`: two generators of the same seed draw the same numbers.
    #[must_use]
    pub fn new(seed: u64) -> Rng {
        Rng(fastrand::Rng::with_seed(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.u64(..)
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.0.u64(..n)
        }
    }

    /// A number in `lo..=hi` (`lo` when `hi` is below it).
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi < lo {
            lo
        } else {
            self.0.u64(lo..=hi)
        }
    }

    /// `true` with probability `1 / n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// `true` with probability `percent / 100`.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// An index in `0..n` (`0` when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.0.usize(..n)
        }
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.0.f64()
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.0.usize(..items.len())]
    }
}

/// How deep a value may nest before the sampler takes the shortest way out.
const DEPTH_BUDGET: usize = 6;

/// The deepest a draw recurses, in values in place (fields, items, record values, variants,
/// nullable values, newtypes): past it a draw fails (`None`) instead of recursing, so a type
/// that holds itself in a required field, or a long chain of required objects, cannot exhaust
/// the stack (`SCHEMA.md`, "Limits").
pub const MAX_DRAW_DEPTH: usize = 256;

/// The most a single draw may produce, in JSON values plus string characters: past it a draw
/// fails (`None`) instead of allocating, so `minLength`, `minItems` and pattern repetitions in
/// the billions, or required fields doubling at every level, cost bounded time and memory
/// (`SCHEMA.md`, "Limits").
pub const MAX_DRAW_SIZE: u64 = 1 << 16;

/// How many times a string for a pattern is drawn before giving up.
const PATTERN_ATTEMPTS: usize = 64;

/// The longest plain string drawn without a `maxLength`, in characters above `minLength`.
const LONG_STRING: u64 = 300;

/// The most items drawn for a top-level array without `maxItems`, above `minItems`.
const LONG_ARRAY: u64 = 40;

/// The order of an object's keys in drawn values (the wire's key order is free).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum KeyOrder {
    /// A random order for every object: what a decoder must accept.
    #[default]
    Shuffled,
    /// The order of the schema's `properties`: what the generated encoders write, and the order
    /// decoders read fastest.
    Schema,
    /// For each object, at random, the schema's order or a shuffled one.
    Mixed,
}

/// Draws random values of the types of a [`Model`].
#[derive(Debug)]
pub struct Sampler<'m> {
    model: &'m Model,
    rng: Rng,
    key_order: KeyOrder,
    patterns: std::collections::HashMap<String, Option<(SchemaPattern, Option<regex_syntax::hir::Hir>)>>,
    /// What the current draw may still produce (see [`MAX_DRAW_SIZE`]).
    budget: u64,
    /// The values in place the current draw is inside (see [`MAX_DRAW_DEPTH`]).
    levels: usize,
}

impl<'m> Sampler<'m> {
    /// A sampler over `model`, seeded with `seed` (the same seed gives the same values), with
    /// keys shuffled.
    #[must_use]
    pub fn new(model: &'m Model, seed: u64) -> Self {
        Sampler {
            model,
            rng: Rng::new(seed),
            key_order: KeyOrder::default(),
            patterns: std::collections::HashMap::new(),
            budget: MAX_DRAW_SIZE,
            levels: 0,
        }
    }

    /// Draws objects with their keys in `order` (default [`KeyOrder::Shuffled`]).
    #[must_use]
    pub fn key_order(mut self, order: KeyOrder) -> Self {
        self.key_order = order;
        self
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

    /// A valid value of the named type `rust_name`, or `None` when the type has no such value
    /// within [`MAX_DRAW_DEPTH`] and [`MAX_DRAW_SIZE`] (or a pattern could not be met).
    pub fn value(&mut self, rust_name: &str) -> Option<Value> {
        self.budget = MAX_DRAW_SIZE;
        self.named(rust_name, 0)
    }

    /// Takes `units` from the budget of the current draw; `false` (taking nothing) when it
    /// does not hold them.
    fn spend(&mut self, units: u64) -> bool {
        match self.budget.checked_sub(units) {
            Some(rest) => {
                self.budget = rest;
                true
            }
            None => false,
        }
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
        let shuffle = match self.key_order {
            KeyOrder::Shuffled => true,
            KeyOrder::Schema => false,
            KeyOrder::Mixed => self.rng.one_in(2),
        };
        if !shuffle {
            return Some(Value::Object(map));
        }
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
        if self.levels == MAX_DRAW_DEPTH || !self.spend(1) {
            return None;
        }
        self.levels += 1;
        let value = self.shape_in_place(shape, depth);
        self.levels -= 1;
        value
    }

    fn shape_in_place(&mut self, shape: &Shape, depth: usize) -> Option<Value> {
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
                if min > limit {
                    return None;
                }
                let max = limit.min(if depth >= DEPTH_BUDGET { min } else { min + 3 });
                // Now and then exactly at the maximum, where revisions of a schema tend to differ,
                // and near the top without a maximum (a revision adding `maxItems` is witnessed
                // only beyond it).
                let count = if depth < DEPTH_BUDGET && limit <= 64 && self.rng.one_in(8) {
                    limit
                } else if depth == 0 && checks.max_items.is_none() && self.rng.one_in(16) {
                    self.rng.between(min + 4, min + LONG_ARRAY)
                } else {
                    self.rng.between(min, max.max(min))
                };
                if count > self.budget {
                    return None;
                }
                // Grown item by item: the count is within the budget, not yet the memory.
                let mut values = Vec::new();
                for _ in 0..count {
                    values.push(self.shape(items, depth + 1)?);
                }
                Some(Value::Array(values))
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
    /// pattern when there is one; never one whose length the reference and JSON Schema count
    /// differently.
    fn string(&mut self, checks: &Checks) -> Option<Value> {
        let min = checks.min_length.unwrap_or(0);
        let max = checks.max_length.unwrap_or(u64::MAX);
        if min > max {
            return None;
        }
        let fits = |s: &str| {
            let n = text_length(s);
            n == s.chars().count() && (min..=max).contains(&(n as u64))
        };
        match &checks.pattern {
            None => {
                // Now and then right at a bound, where revisions of a schema tend to differ.
                // Without a maximum, now and then a long one: a revision that adds a
                // `maxLength` is witnessed only by strings beyond it.
                let length = match self.rng.below(16) {
                    0 | 1 => min,
                    2 | 3 if max <= 4096 => max,
                    4 if checks.max_length.is_none() => self.rng.between(min + 13, min + LONG_STRING),
                    _ => self.rng.between(min, max.min(min + 12)),
                };
                if !self.spend(length) {
                    return None;
                }
                let text = self.text(length);
                fits(&text).then_some(Value::String(text))
            }
            Some(pattern) => {
                for _ in 0..PATTERN_ATTEMPTS {
                    let text = self.matching(pattern)?;
                    if fits(&text) && self.spend(text.len() as u64) {
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
                    let mut work = usize::try_from(self.budget).unwrap_or(usize::MAX);
                    if !generate(hir, &mut self.rng, &mut out, &mut work) {
                        // Longer than the draw may be: so would every other attempt be.
                        return None;
                    }
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
        // Without a bound on one side, now and then far out on it (up to +-2^53 - 1): a
        // revision that adds a `maximum` or `minimum` is witnessed only beyond it.
        let (lo, hi) = match (checks_lower(checks), checks_upper(checks), self.rng.below(16)) {
            (_, false, 0) => (hi, MAX_SAFE),
            (false, _, 1) => (-MAX_SAFE, lo),
            _ => (lo, hi),
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
}

/// A JSON number for `v`: an integer when integral (and not `-0`), a float otherwise.
/// The largest integer a JSON number holds exactly, as a float: 2^53 - 1.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// Whether `checks` bound a number from below.
fn checks_lower(checks: &Checks) -> bool {
    checks.minimum.is_some() || checks.exclusive_minimum.is_some()
}

/// Whether `checks` bound a number from above.
fn checks_upper(checks: &Checks) -> bool {
    checks.maximum.is_some() || checks.exclusive_maximum.is_some()
}

fn number_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 && !(v == 0.0 && v.is_sign_negative()) {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// Appends to `out` a random string the regular expression `hir` matches (anchors and other
/// assertions are skipped: the caller checks the result with the real engine); `false` once
/// `work` (one unit per step and per byte appended) runs out, so that repetitions counted in
/// the billions, even of an empty expression, end. The recursion follows the expression's
/// nesting, which the parser bounds (`regex_syntax`'s nest limit, 250).
#[must_use]
fn generate(hir: &regex_syntax::hir::Hir, rng: &mut Rng, out: &mut String, work: &mut usize) -> bool {
    use regex_syntax::hir::{Class, HirKind};
    let before = out.len();
    let Some(rest) = work.checked_sub(1) else { return false };
    *work = rest;
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(literal) => out.push_str(&String::from_utf8_lossy(&literal.0)),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges = class.ranges();
            if ranges.is_empty() {
                return true;
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
                if !generate(&rep.sub, rng, out, work) {
                    return false;
                }
            }
            return true;
        }
        HirKind::Capture(capture) => return generate(&capture.sub, rng, out, work),
        HirKind::Concat(parts) => return parts.iter().all(|p| generate(p, rng, out, work)),
        HirKind::Alternation(parts) => return generate(rng.pick(parts), rng, out, work),
    }
    // A leaf: its bytes count too.
    match work.checked_sub(out.len() - before) {
        Some(rest) => {
            *work = rest;
            true
        }
        None => false,
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
    fn chance_and_index_keep_to_their_ranges() {
        let mut rng = Rng::new(7);
        assert!((0..1000).all(|_| !rng.chance(0)));
        assert!((0..1000).all(|_| rng.chance(100)));
        let heads = (0..10_000).filter(|_| rng.chance(30)).count();
        assert!((2_700..3_300).contains(&heads), "{heads} of 10,000 at 30%");
        let indexes: Vec<usize> = (0..300).map(|_| rng.index(3)).collect();
        assert!(indexes.iter().all(|&i| i < 3));
        assert!((0..3).all(|i| indexes.contains(&i)));
        assert_eq!(rng.index(0), 0);
        assert_eq!(rng.below(0), 0);
        assert_eq!((rng.between(5, 5), rng.between(9, 3)), (5, 9));
        let between: Vec<u64> = (0..300).map(|_| rng.between(2, 4)).collect();
        assert!(between.iter().all(|n| (2..=4).contains(n)));
        assert!((2..=4).all(|n| between.contains(&n)));
    }

    /// A pattern without `maxLength` once capped drawn strings at 20 characters, so no UUID
    /// (36) could be drawn and every v8 request, cancel and server hello was `None`.
    #[test]
    fn every_type_of_the_v8_schema_can_be_drawn() {
        let model = Model::from_json(include_str!("../../schema/pi-protocol.v8.json"), "v8").unwrap();
        for def in &model.types {
            let drawn = (0..20).filter(|&seed| Sampler::new(&model, seed).value(&def.rust_name).is_some()).count();
            assert_eq!(drawn, 20, "{}", def.rust_name);
        }
    }

    #[test]
    fn keys_come_in_the_order_asked_for() {
        let model = Model::from_json(include_str!("../../schema/pi-protocol.v8.json"), "v8").unwrap();
        let first_keys = |order: KeyOrder| -> Vec<String> {
            (0..200)
                .map(|seed| {
                    let message = Sampler::new(&model, seed).key_order(order).message(Side::Client).unwrap();
                    message.as_object().unwrap().keys().next().unwrap().clone()
                })
                .collect()
        };
        // Every v8 client message lists `type` first in the schema.
        let in_schema_order = |keys: &[String]| keys.iter().filter(|k| *k == "type").count();
        assert_eq!(in_schema_order(&first_keys(KeyOrder::Schema)), 200);
        let shuffled = in_schema_order(&first_keys(KeyOrder::Shuffled));
        let mixed = in_schema_order(&first_keys(KeyOrder::Mixed));
        assert!(shuffled < 120 && mixed > shuffled && mixed < 200, "shuffled {shuffled}, mixed {mixed}");
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
            by_rust_name: Default::default(),
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
