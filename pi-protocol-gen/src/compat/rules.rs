//! The wire rules: does every value one schema accepts decode under the other?
//!
//! [`Checker::fits`] walks two shapes together (one from each model) and lists every reason a
//! value valid under the first could be refused by the second, each with the JSON pointers of
//! the two schema places. Named types are compared once per pair (the reasons are remembered,
//! without repeats); a pair met again while it is being compared (a recursive type) is assumed
//! to fit, which is sound for the finite values a message holds. The walk recurses at most
//! [`MAX_COMPARE_DEPTH`] places deep; what lies deeper is assumed to fit as well, and is left to
//! the witness search.

use std::collections::{HashMap, HashSet};

use crate::model::{
    Checks, LiteralValue, Member, Model, Record, Shape, Struct, TypeDef, TypeExpr, TypeKind, Union, VariantKind,
};

use super::{Change, Reason};

/// A place to compare: a named type, or a shape written in place (with its pointer).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'m> {
    /// A named type.
    Def(&'m TypeDef),
    /// A shape in place.
    Shape(&'m Shape, &'m str),
}

/// What a value of some schema place is, resolved through named types.
enum Resolved<'m> {
    Shape(&'m Shape, &'m str),
    Struct(&'m Struct, &'m str),
    Union(&'m Union, &'m str),
}

/// The most places (named types and shapes in place) one comparison walks down at once: two
/// chains of a thousand types are not compared to their ends, on any stack (`SCHEMA.md`,
/// "Limits").
pub const MAX_COMPARE_DEPTH: usize = 256;

/// Compares the shapes of two models.
pub(crate) struct Checker<'m> {
    from: &'m Model,
    to: &'m Model,
    /// The direction the reasons are reported in: `true` when `from` is the old schema.
    from_is_old: bool,
    in_progress: HashSet<(String, String)>,
    /// The reasons of every pair of named types compared to the end.
    done: HashMap<(String, String), Vec<Reason>>,
    /// The places being compared (see [`MAX_COMPARE_DEPTH`]).
    depth: usize,
}

impl<'m> Checker<'m> {
    /// A checker of values of `from` against `to`.
    pub(crate) fn new(from: &'m Model, to: &'m Model, from_is_old: bool) -> Self {
        Checker { from, to, from_is_old, in_progress: HashSet::new(), done: HashMap::new(), depth: 0 }
    }

    /// The schema edit (old to new) a finding stands for: `if_old` when the values come from the
    /// old schema, else `if_new` (the same finding, read the other way).
    fn edit(&self, if_old: Change, if_new: Change) -> Change {
        if self.from_is_old {
            if_old
        } else {
            if_new
        }
    }

    fn reason(&self, change: Change, from_pointer: &str, to_pointer: &str, detail: impl Into<String>) -> Reason {
        let (old, new) = if self.from_is_old { (from_pointer, to_pointer) } else { (to_pointer, from_pointer) };
        Reason { change, old_pointer: Some(old.to_string()), new_pointer: Some(new.to_string()), detail: detail.into() }
    }

    /// `name: old -> new`, whichever of `from` and `to` is the old schema (`none` for an absent
    /// keyword).
    fn values<T: std::fmt::Display>(&self, name: &str, from: Option<T>, to: Option<T>) -> String {
        let text = |v: Option<T>| v.map_or_else(|| "none".to_string(), |v| v.to_string());
        let (old, new) = if self.from_is_old { (text(from), text(to)) } else { (text(to), text(from)) };
        format!("{name}: {old} -> {new}")
    }

    /// Every reason why a value of `from` (a place of the first model) could be refused as a
    /// value of `to` (of the second).
    pub(crate) fn fits_targets(&mut self, from: Target<'m>, to: Target<'m>) -> Vec<Reason> {
        match (from, to) {
            (Target::Def(a), Target::Def(b)) => self.fits_types(a, b),
            (Target::Shape(a, pa), Target::Shape(b, pb)) => self.fits_shape(a, pa, b, pb),
            (Target::Def(a), Target::Shape(b, pb)) => {
                let to = resolve_shape(self.to, b, pb);
                self.fits_resolved(resolve_def(a), to)
            }
            (Target::Shape(a, pa), Target::Def(b)) => {
                let from = resolve_shape(self.from, a, pa);
                self.fits_resolved(from, resolve_def(b))
            }
        }
    }

    /// Every reason why a value of type `from` (a named type of the first model) could be
    /// refused as a value of type `to` (of the second).
    pub(crate) fn fits_types(&mut self, from: &'m TypeDef, to: &'m TypeDef) -> Vec<Reason> {
        let key = (from.rust_name.clone(), to.rust_name.clone());
        if let Some(reasons) = self.done.get(&key) {
            return reasons.clone();
        }
        if self.depth == MAX_COMPARE_DEPTH || !self.in_progress.insert(key.clone()) {
            return Vec::new();
        }
        self.depth += 1;
        let mut reasons = self.fits_resolved(resolve_def(from), resolve_def(to));
        self.depth -= 1;
        self.in_progress.remove(&key);
        // Types reached by several paths report their reasons once.
        let mut seen = HashSet::new();
        reasons.retain(|r| seen.insert(r.clone()));
        self.done.insert(key, reasons.clone());
        reasons
    }

    fn fits_resolved(&mut self, from: Resolved<'m>, to: Resolved<'m>) -> Vec<Reason> {
        match (from, to) {
            (Resolved::Shape(a, pa), Resolved::Shape(b, pb)) => self.fits_shape(a, pa, b, pb),
            (Resolved::Struct(a, pa), Resolved::Struct(b, pb)) => self.fits_struct(a, pa, b, pb),
            (Resolved::Union(a, _), to) => {
                let mut reasons = Vec::new();
                for variant in &a.variants {
                    let pointer: &'m str = &variant.pointer;
                    match &variant.kind {
                        VariantKind::Literal(value) => {
                            if !accepts_literal(self.to, &to, value) {
                                let to_pointer = resolved_pointer(&to);
                                let change = self.edit(Change::ValueRemoved, Change::ValueAdded);
                                reasons.push(self.reason(
                                    change,
                                    pointer,
                                    to_pointer,
                                    format!("the value {value} is no longer accepted"),
                                ));
                            }
                        }
                        VariantKind::Value(shape) => {
                            let from = resolve_shape(self.from, shape, pointer);
                            let types = types_of_shape(self.from, shape);
                            reasons.extend(self.fits_any(from, types, &variant.tags, resolve_again(&to)));
                        }
                    }
                }
                reasons
            }
            (from, to @ Resolved::Union(..)) => {
                let (types, tags) = match &from {
                    Resolved::Struct(s, _) => {
                        (OBJECT, s.literals().map(|l| (l.key.clone(), l.value.clone())).collect())
                    }
                    Resolved::Shape(s, _) => (types_of_shape(self.from, s), Vec::new()),
                    Resolved::Union(..) => unreachable!("handled above"),
                };
                self.fits_any(from, types, &tags, to)
            }
            (Resolved::Struct(_, pa), Resolved::Shape(b, pb)) => self.object_into_shape(pa, b, pb),
            (Resolved::Shape(a, pa), Resolved::Struct(_, pb)) => {
                if types_of_shape(self.from, a) & OBJECT != 0 && !matches!(a.ty, TypeExpr::Record(_)) {
                    Vec::new()
                } else {
                    vec![self.reason(
                        Change::TypeChanged,
                        pa,
                        pb,
                        "an object with fixed keys takes the place of another type",
                    )]
                }
            }
        }
    }

    /// A value (of JSON types `types`, with the literals `tags` where known) as a value of `to`:
    /// when `to` is a union, the first member that takes it wholly, else the member that comes
    /// closest (its reasons).
    fn fits_any(
        &mut self,
        from: Resolved<'m>,
        types: u8,
        tags: &[(String, LiteralValue)],
        to: Resolved<'m>,
    ) -> Vec<Reason> {
        let Resolved::Union(b, pb) = to else { return self.fits_resolved(from, to) };
        let mut best: Option<Vec<Reason>> = None;
        for candidate in &b.variants {
            let VariantKind::Value(other) = &candidate.kind else { continue };
            if types_of_shape(self.to, other) & types == 0 {
                continue;
            }
            if !tags.is_empty() && !candidate.tags.iter().all(|t| tags.contains(t)) {
                continue;
            }
            let reasons = self.fits_resolved(resolve_again(&from), resolve_shape(self.to, other, &candidate.pointer));
            if reasons.is_empty() {
                return reasons;
            }
            if best.as_ref().is_none_or(|b| reasons.len() < b.len()) {
                best = Some(reasons);
            }
        }
        let from_pointer = resolved_pointer(&from);
        best.unwrap_or_else(|| {
            let change = self.edit(Change::VariantRemoved, Change::VariantAdded);
            vec![self.reason(change, from_pointer, pb, "no member of the other union takes these values")]
        })
    }

    fn object_into_shape(&self, pa: &str, b: &Shape, pb: &str) -> Vec<Reason> {
        match &b.ty {
            TypeExpr::Payload => Vec::new(),
            TypeExpr::Nullable(inner) => self.object_into_shape(pa, inner, pb),
            TypeExpr::Record(_) => vec![self.reason(Change::TypeChanged, pa, pb, "the fixed keys became a record")],
            _ => vec![self.reason(Change::TypeChanged, pa, pb, "the object became another type")],
        }
    }

    /// Every reason a value of shape `a` could be refused by shape `b`.
    fn fits_shape(&mut self, a: &'m Shape, pa: &'m str, b: &'m Shape, pb: &'m str) -> Vec<Reason> {
        if self.depth == MAX_COMPARE_DEPTH {
            return Vec::new();
        }
        self.depth += 1;
        let reasons = self.fits_shape_in_place(a, pa, b, pb);
        self.depth -= 1;
        reasons
    }

    fn fits_shape_in_place(&mut self, a: &'m Shape, pa: &'m str, b: &'m Shape, pb: &'m str) -> Vec<Reason> {
        // Named types: resolve and compare by kind.
        if let TypeExpr::Named { name, .. } = &a.ty {
            let from = self.from.by_rust_name(name).expect("named types exist");
            return match &b.ty {
                TypeExpr::Named { name: other, .. } => {
                    let to = self.to.by_rust_name(other).expect("named types exist");
                    self.fits_types(from, to)
                }
                _ => self.fits_resolved(resolve_def(from), Resolved::Shape(b, pb)),
            };
        }
        if let TypeExpr::Named { name, .. } = &b.ty {
            let to = self.to.by_rust_name(name).expect("named types exist");
            return self.fits_resolved(Resolved::Shape(a, pa), resolve_def(to));
        }
        let mut reasons = Vec::new();
        match (&a.ty, &b.ty) {
            (_, TypeExpr::Payload) => {}
            (TypeExpr::Payload, _) => {
                let change = self.edit(Change::TypeNarrowed, Change::TypeWidened);
                reasons.push(self.reason(change, pa, pb, "any JSON value on one side, only some on the other"))
            }
            (TypeExpr::Nullable(x), TypeExpr::Nullable(y)) => reasons.extend(self.fits_shape(x, pa, y, pb)),
            (TypeExpr::Nullable(x), _) => {
                let change = self.edit(Change::NullableRemoved, Change::NullableAdded);
                reasons.push(self.reason(change, pa, pb, "null is accepted on one side only"));
                reasons.extend(self.fits_shape(x, pa, b, pb));
            }
            (_, TypeExpr::Nullable(y)) => reasons.extend(self.fits_shape(a, pa, y, pb)),
            (TypeExpr::String, TypeExpr::String) => self.fits_text(&a.checks, pa, &b.checks, pb, &mut reasons),
            (TypeExpr::Integer | TypeExpr::Number, TypeExpr::Integer | TypeExpr::Number) => {
                if a.ty == TypeExpr::Number && b.ty == TypeExpr::Integer {
                    let change = self.edit(Change::TypeNarrowed, Change::TypeWidened);
                    reasons.push(self.reason(change, pa, pb, "a number on one side, an integer on the other"));
                }
                self.fits_bounds(&a.checks, pa, &b.checks, pb, &mut reasons);
            }
            (TypeExpr::Boolean, TypeExpr::Boolean) | (TypeExpr::Null, TypeExpr::Null) => {}
            (TypeExpr::Array(x), TypeExpr::Array(y)) => {
                self.fits_count(&a.checks, pa, &b.checks, pb, &mut reasons);
                reasons.extend(self.fits_shape(x, pa, y, pb));
            }
            (TypeExpr::Record(x), TypeExpr::Record(y)) => reasons.extend(self.fits_record(x, pa, y, pb)),
            _ => reasons.push(self.reason(
                Change::TypeChanged,
                pa,
                pb,
                format!("{} became {}", describe(&a.ty), describe(&b.ty)),
            )),
        }
        reasons
    }

    fn fits_record(&mut self, a: &'m Record, pa: &'m str, b: &'m Record, pb: &'m str) -> Vec<Reason> {
        let mut reasons = Vec::new();
        if b.keys.pattern.is_some() && a.keys.pattern != b.keys.pattern {
            reasons.push(self.reason(Change::PatternChanged, pa, pb, "the record's key pattern changed"));
        }
        reasons.extend(self.fits_shape(&a.values, pa, &b.values, pb));
        reasons
    }

    fn fits_text(&self, a: &Checks, pa: &str, b: &Checks, pb: &str, reasons: &mut Vec<Reason>) {
        let change = self.edit(Change::BoundTightened, Change::BoundLoosened);
        if b.min_length.unwrap_or(0) > a.min_length.unwrap_or(0) {
            reasons.push(self.reason(change, pa, pb, self.values("minLength", a.min_length, b.min_length)));
        }
        if let Some(max) = b.max_length {
            if a.max_length.is_none_or(|m| m > max) {
                reasons.push(self.reason(change, pa, pb, self.values("maxLength", a.max_length, b.max_length)));
            }
        }
        if b.pattern.is_some() && a.pattern != b.pattern {
            reasons.push(self.reason(Change::PatternChanged, pa, pb, "the pattern changed"));
        }
    }

    fn fits_count(&self, a: &Checks, pa: &str, b: &Checks, pb: &str, reasons: &mut Vec<Reason>) {
        let change = self.edit(Change::BoundTightened, Change::BoundLoosened);
        if b.min_items.unwrap_or(0) > a.min_items.unwrap_or(0) {
            reasons.push(self.reason(change, pa, pb, self.values("minItems", a.min_items, b.min_items)));
        }
        if let Some(max) = b.max_items {
            if a.max_items.is_none_or(|m| m > max) {
                reasons.push(self.reason(change, pa, pb, self.values("maxItems", a.max_items, b.max_items)));
            }
        }
    }

    fn fits_bounds(&self, a: &Checks, pa: &str, b: &Checks, pb: &str, reasons: &mut Vec<Reason>) {
        let lower = |c: &Checks| lower_bound(c);
        let upper = |c: &Checks| upper_bound(c);
        if let Some((bv, bx)) = lower(b) {
            let tighter = match lower(a) {
                None => true,
                Some((av, ax)) => bv > av || (bv == av && bx && !ax),
            };
            if tighter {
                let change = self.edit(Change::BoundTightened, Change::BoundLoosened);
                reasons.push(self.reason(change, pa, pb, self.values("lower bound", lower_text(a), lower_text(b))));
            }
        }
        if let Some((bv, bx)) = upper(b) {
            let tighter = match upper(a) {
                None => true,
                Some((av, ax)) => bv < av || (bv == av && bx && !ax),
            };
            if tighter {
                let change = self.edit(Change::BoundTightened, Change::BoundLoosened);
                reasons.push(self.reason(change, pa, pb, self.values("upper bound", upper_text(a), upper_text(b))));
            }
        }
    }

    fn fits_struct(&mut self, a: &'m Struct, pa: &'m str, b: &'m Struct, pb: &'m str) -> Vec<Reason> {
        let mut reasons = Vec::new();
        for member in &a.members {
            let key = member.key();
            let Some(other) = b.members.iter().find(|m| m.key() == key) else {
                let change = match member.is_required() {
                    true => self.edit(Change::RequiredPropertyRemoved, Change::RequiredPropertyAdded),
                    false => self.edit(Change::OptionalPropertyRemoved, Change::OptionalPropertyAdded),
                };
                reasons.push(self.reason(
                    change,
                    &member_pointer(member, pa),
                    pb,
                    format!("`{key}` is refused as unknown"),
                ));
                continue;
            };
            let mp = member_pointer(member, pa);
            let op = member_pointer(other, pb);
            match (member, other) {
                (Member::Literal(x), Member::Literal(y)) => {
                    if x.value != y.value {
                        reasons.push(self.reason(
                            Change::LiteralChanged,
                            &mp,
                            &op,
                            format!("`{key}`: {} became {}", x.value, y.value),
                        ));
                    }
                }
                (Member::Literal(x), Member::Field(y)) => {
                    let (ys, yp): (&'m Shape, &'m str) = (&y.shape, &y.pointer);
                    if !accepts_literal(self.to, &resolve_shape(self.to, ys, yp), &x.value) {
                        reasons.push(self.reason(
                            Change::LiteralChanged,
                            &mp,
                            &op,
                            format!("`{key}`: {} is refused", x.value),
                        ));
                    }
                }
                (Member::Field(_), Member::Literal(y)) => {
                    reasons.push(self.reason(
                        Change::LiteralChanged,
                        &mp,
                        &op,
                        format!("`{key}` must now be {}", y.value),
                    ));
                }
                (Member::Field(x), Member::Field(y)) => {
                    if x.optional && !y.optional {
                        let change = self.edit(Change::MadeRequired, Change::MadeOptional);
                        reasons.push(self.reason(change, &mp, &op, format!("`{key}` may be absent on one side only")));
                    }
                    let (xs, ys) = (&x.shape, &y.shape);
                    let (xp, yp): (&'m str, &'m str) = (&x.pointer, &y.pointer);
                    reasons.extend(self.fits_shape(xs, xp, ys, yp));
                }
            }
        }
        for member in &b.members {
            if member.is_required() && !a.members.iter().any(|m| m.key() == member.key()) {
                let change = self.edit(Change::RequiredPropertyAdded, Change::RequiredPropertyRemoved);
                reasons.push(self.reason(
                    change,
                    pa,
                    &member_pointer(member, pb),
                    format!("`{}` is required and missing", member.key()),
                ));
            }
        }
        reasons
    }
}

/// The pointer of a member's schema (a literal sits in its struct's `properties`).
fn member_pointer(member: &Member, struct_pointer: &str) -> String {
    match member {
        Member::Field(f) => f.pointer.clone(),
        Member::Literal(l) => format!("{struct_pointer}/properties/{}", crate::pointer::escape_pointer(&l.key)),
    }
}

/// The lowest value allowed: the bound and whether it is exclusive.
fn lower_bound(c: &Checks) -> Option<(f64, bool)> {
    match (c.minimum, c.exclusive_minimum) {
        (Some(m), Some(x)) => Some(if x >= m { (x, true) } else { (m, false) }),
        (Some(m), None) => Some((m, false)),
        (None, Some(x)) => Some((x, true)),
        (None, None) => None,
    }
}

/// The lowest value allowed, as the schema says it: `>= 0`, `> 0.5`.
fn lower_text(c: &Checks) -> Option<String> {
    lower_bound(c).map(|(v, exclusive)| format!("{} {v}", if exclusive { ">" } else { ">=" }))
}

/// The highest value allowed, as the schema says it: `<= 10`, `< 1`.
fn upper_text(c: &Checks) -> Option<String> {
    upper_bound(c).map(|(v, exclusive)| format!("{} {v}", if exclusive { "<" } else { "<=" }))
}

/// The highest value allowed: the bound and whether it is exclusive.
fn upper_bound(c: &Checks) -> Option<(f64, bool)> {
    match (c.maximum, c.exclusive_maximum) {
        (Some(m), Some(x)) => Some(if x <= m { (x, true) } else { (m, false) }),
        (Some(m), None) => Some((m, false)),
        (None, Some(x)) => Some((x, true)),
        (None, None) => None,
    }
}

const OBJECT: u8 = 32;

/// The JSON types a shape accepts, as bits (null 1, boolean 2, number 4, string 8, array 16,
/// object 32).
pub(crate) fn types_of_shape(model: &Model, shape: &Shape) -> u8 {
    types_of(model, shape, &mut Vec::new())
}

fn types_of(model: &Model, shape: &Shape, stack: &mut Vec<String>) -> u8 {
    match &shape.ty {
        TypeExpr::Named { name, .. } => {
            if stack.contains(name) {
                return 0;
            }
            stack.push(name.clone());
            let bits = match model.by_rust_name(name).map(|t| &t.kind) {
                Some(TypeKind::Struct(_)) => OBJECT,
                Some(TypeKind::Newtype(inner)) => types_of(model, inner, stack),
                Some(TypeKind::Union(u)) => u
                    .variants
                    .iter()
                    .map(|v| match &v.kind {
                        VariantKind::Literal(l) => literal_type(l),
                        VariantKind::Value(s) => types_of(model, s, stack),
                    })
                    .fold(0, |a, b| a | b),
                None => 63,
            };
            stack.pop();
            bits
        }
        TypeExpr::String => 8,
        TypeExpr::Integer | TypeExpr::Number => 4,
        TypeExpr::Boolean => 2,
        TypeExpr::Null => 1,
        TypeExpr::Payload => 63,
        TypeExpr::Array(_) => 16,
        TypeExpr::Record(_) => OBJECT,
        TypeExpr::Nullable(inner) => types_of(model, inner, stack) | 1,
    }
}

fn literal_type(value: &LiteralValue) -> u8 {
    match value {
        LiteralValue::Null => 1,
        LiteralValue::Bool(_) => 2,
        LiteralValue::Number(_) => 4,
        LiteralValue::String(_) => 8,
    }
}

/// The pointer of a resolved place.
fn resolved_pointer<'m>(r: &Resolved<'m>) -> &'m str {
    match r {
        Resolved::Shape(_, p) | Resolved::Struct(_, p) | Resolved::Union(_, p) => p,
    }
}

/// A copy of a resolved place (they are references).
fn resolve_again<'m>(r: &Resolved<'m>) -> Resolved<'m> {
    match r {
        Resolved::Shape(s, p) => Resolved::Shape(s, p),
        Resolved::Struct(s, p) => Resolved::Struct(s, p),
        Resolved::Union(u, p) => Resolved::Union(u, p),
    }
}

fn resolve_def(def: &TypeDef) -> Resolved<'_> {
    match &def.kind {
        TypeKind::Struct(s) => Resolved::Struct(s, &def.pointer),
        TypeKind::Union(u) => Resolved::Union(u, &def.pointer),
        TypeKind::Newtype(shape) => Resolved::Shape(shape, &def.pointer),
    }
}

fn resolve_shape<'m>(model: &'m Model, shape: &'m Shape, pointer: &'m str) -> Resolved<'m> {
    match &shape.ty {
        TypeExpr::Named { name, .. } => model.by_rust_name(name).map_or(Resolved::Shape(shape, pointer), resolve_def),
        _ => Resolved::Shape(shape, pointer),
    }
}

/// Whether the literal `value` is a valid value of `to` (as far as its type, bounds and
/// enumerations tell).
fn accepts_literal(model: &Model, to: &Resolved<'_>, value: &LiteralValue) -> bool {
    match to {
        Resolved::Struct(..) => false,
        Resolved::Union(u, _) => u.variants.iter().any(|v| match &v.kind {
            VariantKind::Literal(l) => l == value,
            VariantKind::Value(shape) => accepts_literal(model, &resolve_shape(model, shape, ""), value),
        }),
        Resolved::Shape(shape, _) => {
            let c = &shape.checks;
            match (&shape.ty, value) {
                (TypeExpr::Payload, _) => true,
                (TypeExpr::Nullable(_), LiteralValue::Null) => true,
                (TypeExpr::Nullable(inner), v) => accepts_literal(model, &resolve_shape(model, inner, ""), v),
                (TypeExpr::Named { .. }, v) => accepts_literal(model, &resolve_shape(model, shape, ""), v),
                (TypeExpr::String, LiteralValue::String(s)) => {
                    let n = pi_protocol_runtime::checks::text_length(s) as u64;
                    c.min_length.is_none_or(|m| n >= m)
                        && c.max_length.is_none_or(|m| n <= m)
                        && c.pattern.as_deref().is_none_or(|p| {
                            pi_protocol_runtime::pattern::SchemaPattern::compile(p).is_ok_and(|p| p.matches(s))
                        })
                }
                (TypeExpr::Integer | TypeExpr::Number, LiteralValue::Number(n)) => {
                    (shape.ty == TypeExpr::Number || n.fract() == 0.0)
                        && c.minimum.is_none_or(|m| *n >= m)
                        && c.maximum.is_none_or(|m| *n <= m)
                        && c.exclusive_minimum.is_none_or(|m| *n > m)
                        && c.exclusive_maximum.is_none_or(|m| *n < m)
                }
                (TypeExpr::Boolean, LiteralValue::Bool(_)) | (TypeExpr::Null, LiteralValue::Null) => true,
                _ => false,
            }
        }
    }
}

fn describe(ty: &TypeExpr) -> &'static str {
    match ty {
        TypeExpr::Named { .. } => "a named type",
        TypeExpr::String => "a string",
        TypeExpr::Integer => "an integer",
        TypeExpr::Number => "a number",
        TypeExpr::Boolean => "a boolean",
        TypeExpr::Null => "null",
        TypeExpr::Payload => "any value",
        TypeExpr::Array(_) => "an array",
        TypeExpr::Record(_) => "a record",
        TypeExpr::Nullable(_) => "a nullable value",
    }
}
