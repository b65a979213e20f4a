//! The interpreter's program: a [`Model`] with every reference resolved to an index, every key
//! interned, every pattern compiled and everything the derive works out per type at compile
//! time (the JSON types a type decodes from, its literal keys, its key set) computed once.
//!
//! It mirrors what `emit` hands the derive: a field's presence comes from its optionality and a
//! nullable shape; the constraints of a value are collected the way `emit::check_args` collects
//! them (through nullable shapes, into array items, record values and record keys, never into a
//! named type, which checks its own).

use std::collections::HashMap;

use pi_protocol_runtime::pattern::SchemaPattern;
use pi_protocol_runtime::{JsonTypes, Scalar};

use crate::error::{GenError, Result};
use crate::model::{Checks, Dispatch, LiteralValue, Member, Model, Shape, TypeExpr, TypeKind, VariantKind};

use super::intern::intern;
use super::leaf::{self, Leaf};

/// A model compiled for decoding.
#[derive(Debug)]
pub(super) struct Program {
    /// The named types, in model order.
    pub types: Vec<TypeCode>,
    /// The Rust name of each type.
    pub names: Vec<String>,
    /// The JSON types each named type decodes from (the derive's `Decode::TYPES`).
    pub json_types: Vec<JsonTypes>,
    /// Every compiled pattern, referred to by index.
    pub patterns: Vec<SchemaPattern>,
}

/// A named type.
#[derive(Debug)]
pub(super) enum TypeCode {
    /// A newtype over a string (`struct X(CompactString)`): a text string and its checks.
    Text(TextChecks),
    /// Any other newtype: the value and the checks on it.
    Newtype { value: Ty, checks: Option<Box<CheckTree>> },
    /// An object with fixed keys.
    Struct(StructCode),
    /// A union.
    Union(UnionCode),
}

/// The type of a value (the derive's Rust type: `Box` is left out, it changes nothing).
#[derive(Debug)]
pub(super) enum Ty {
    /// A named type, by index.
    Named(usize),
    /// A type that holds no other (a string, a number, a boolean, `null`, an opaque payload):
    /// the JSON types it decodes from, and its decoder.
    Leaf { types: JsonTypes, decode: Leaf },
    /// `Vec<T>`.
    Array(Box<Ty>),
    /// `Record<T>`.
    Record(Box<Ty>),
    /// `Option<T>`: `null` or a `T`.
    Nullable(Box<Ty>),
}

/// An object with fixed keys.
#[derive(Debug)]
pub(super) struct StructCode {
    /// Every key, in canonical order.
    pub members: Vec<MemberCode>,
    /// Every key (the derive's `KeySet::KEYS`).
    pub keys: Vec<&'static str>,
    /// The keys a map must hold (`KeySet::REQUIRED`).
    pub required: Vec<&'static str>,
    /// Whether the struct has a literal key (a struct without one accepts no tag set).
    pub has_literals: bool,
}

impl StructCode {
    /// The index of the member whose key is `key`.
    pub fn member(&self, key: &[u8]) -> Option<usize> {
        self.members.iter().position(|m| pi_protocol_runtime::key_equals(key, m.key().as_bytes()))
    }

    /// The literal stored under `key`, if any.
    pub fn literal(&self, key: &str) -> Option<&LiteralValue> {
        self.members.iter().find_map(|m| match m {
            MemberCode::Literal { key: k, value } if *k == key => Some(value),
            _ => None,
        })
    }
}

/// One key of an object.
#[derive(Debug)]
pub(super) enum MemberCode {
    /// A key with a fixed value.
    Literal {
        /// The key.
        key: &'static str,
        /// The value it must hold.
        value: LiteralValue,
    },
    /// A stored value.
    Field {
        /// The key.
        key: &'static str,
        /// The type of a present, non-null value.
        value: Ty,
        /// The checks on it.
        checks: Option<Box<CheckTree>>,
        /// Whether the key may be absent and whether `null` stands for no value.
        presence: Presence,
    },
}

impl MemberCode {
    /// The wire key.
    pub fn key(&self) -> &'static str {
        match self {
            MemberCode::Literal { key, .. } | MemberCode::Field { key, .. } => key,
        }
    }
}

/// How a field may be absent or `null` (the derive's presence of a field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Presence {
    /// The key must be there, with a value.
    Required,
    /// The key may be absent.
    Optional,
    /// The key must be there; `null` means no value.
    Nullable,
    /// The key may be absent; `null` means no value.
    OptionalNullable,
}

/// A union.
#[derive(Debug)]
pub(super) struct UnionCode {
    /// How maps are told apart (keys interned).
    pub dispatch: DispatchCode,
    /// The literal variants, in order: each value, its JSON type and its JSON rendering.
    pub units: Vec<(LiteralValue, JsonTypes, serde_json::Value)>,
    /// The variants holding a value, in order.
    pub wrapped: Vec<VariantCode>,
    /// The JSON types of the literal variants together.
    pub unit_types: JsonTypes,
    /// Whether some item other than a map can be a value of the union.
    pub non_map: bool,
}

/// How a union tells its map-shaped variants apart.
#[derive(Debug)]
pub(super) enum DispatchCode {
    /// By JSON type only.
    ByType,
    /// By one literal key.
    Tag(&'static str),
    /// By several literal keys together.
    Tags(Vec<&'static str>),
    /// By the set of keys.
    KeySet,
}

/// A variant holding a value.
#[derive(Debug)]
pub(super) struct VariantCode {
    /// The value's type.
    pub value: Ty,
    /// The checks on the value (a variant's shape keeps its constraints).
    pub checks: Option<Box<CheckTree>>,
}

/// String constraints.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TextChecks {
    /// `minLength`.
    pub min_length: Option<u64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `pattern`, by index into [`Program::patterns`].
    pub pattern: Option<usize>,
}

impl TextChecks {
    fn is_empty(&self) -> bool {
        self.min_length.is_none() && self.max_length.is_none() && self.pattern.is_none()
    }
}

/// A numeric bound.
#[derive(Debug, Clone, Copy)]
pub(super) enum Bound {
    /// `minimum`.
    Minimum(f64),
    /// `maximum`.
    Maximum(f64),
    /// `exclusiveMinimum`.
    ExclusiveMinimum(f64),
    /// `exclusiveMaximum`.
    ExclusiveMaximum(f64),
}

/// The constraints on one value and, nested, on its elements, record values and record keys.
#[derive(Debug, Default)]
pub(super) struct CheckTree {
    /// String constraints.
    pub text: TextChecks,
    /// Numeric bounds, in the order they are checked.
    pub bounds: Vec<Bound>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// The checks of each array element.
    pub items: Option<Box<CheckTree>>,
    /// The checks of each record value.
    pub values: Option<Box<CheckTree>>,
    /// The checks of each record key.
    pub keys: Option<TextChecks>,
}

/// What decoding an opaque payload (`{}`) gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Payloads {
    /// Its value, as JSON.
    Values,
    /// `null` once it is checked: for verdicts only, so that a large payload never becomes a
    /// value tree.
    Checked,
    /// Its CBOR bytes once it is checked, a slice of the input, streamed as JSON when the
    /// message is serialized.
    Spans,
}

impl Program {
    /// Compiles `model`, decoding payloads as `payloads` says.
    pub fn compile(model: &Model, payloads: Payloads) -> Result<Program> {
        let index: HashMap<&str, usize> =
            model.types.iter().enumerate().map(|(i, t)| (t.rust_name.as_str(), i)).collect();
        let payload = match payloads {
            Payloads::Values => leaf::payload as Leaf,
            Payloads::Checked => leaf::payload_checked,
            Payloads::Spans => leaf::payload_span,
        };
        let mut cx = Compiler { index: &index, patterns: Vec::new(), pointer: String::new(), payload };
        let mut types = Vec::with_capacity(model.types.len());
        for def in &model.types {
            cx.pointer.clone_from(&def.pointer);
            types.push(cx.type_code(&def.kind)?);
        }
        let mut program = Program {
            types,
            names: model.types.iter().map(|t| t.rust_name.clone()).collect(),
            json_types: Vec::new(),
            patterns: cx.patterns,
        };
        program.check_progress(model)?;
        program.json_types = program.fixed_json_types();
        let non_map: Vec<bool> = program
            .types
            .iter()
            .map(|code| match code {
                TypeCode::Union(union) => {
                    !union.units.is_empty()
                        || union.wrapped.iter().any(|v| program.ty_types(&v.value) != JsonTypes::OBJECT)
                }
                _ => false,
            })
            .collect();
        for (code, non_map) in program.types.iter_mut().zip(non_map) {
            if let TypeCode::Union(union) = code {
                union.non_map = non_map;
            }
        }
        Ok(program)
    }

    /// The JSON types a value of `ty` decodes from.
    pub fn ty_types(&self, ty: &Ty) -> JsonTypes {
        match ty {
            Ty::Named(i) => self.json_types[*i],
            Ty::Leaf { types, .. } => *types,
            Ty::Array(_) => JsonTypes::ARRAY,
            Ty::Record(_) => JsonTypes::OBJECT,
            Ty::Nullable(inner) => self.ty_types(inner).union(JsonTypes::NULL),
        }
    }

    /// Every named type's JSON types: the least fixed point of the derive's `TYPES` constants
    /// (a type nested in itself without a container in between never reaches here).
    fn fixed_json_types(&mut self) -> Vec<JsonTypes> {
        self.json_types = vec![JsonTypes::NONE; self.types.len()];
        loop {
            let next: Vec<JsonTypes> = self
                .types
                .iter()
                .map(|code| match code {
                    TypeCode::Text(_) => JsonTypes::STRING,
                    TypeCode::Newtype { value, .. } => self.ty_types(value),
                    TypeCode::Struct(_) => JsonTypes::OBJECT,
                    TypeCode::Union(union) => {
                        let units = union.units.iter().fold(JsonTypes::NONE, |all, unit| all.union(unit.1));
                        union.wrapped.iter().fold(units, |all, v| all.union(self.ty_types(&v.value)))
                    }
                })
                .collect();
            if next == self.json_types {
                return next;
            }
            self.json_types = next;
        }
    }

    /// Refuses a type that holds itself without an object or array in between (through
    /// newtypes, nullable values and union variants): decoding it would recurse without reading
    /// anything, and the derive could not compute its JSON types either.
    fn check_progress(&self, model: &Model) -> Result<()> {
        fn direct(ty: &Ty, out: &mut Vec<usize>) {
            match ty {
                Ty::Named(i) => out.push(*i),
                Ty::Nullable(inner) => direct(inner, out),
                _ => {}
            }
        }
        let edges: Vec<Vec<usize>> = self
            .types
            .iter()
            .map(|code| {
                let mut out = Vec::new();
                match code {
                    TypeCode::Newtype { value, .. } => direct(value, &mut out),
                    TypeCode::Union(union) => union.wrapped.iter().for_each(|v| direct(&v.value, &mut out)),
                    TypeCode::Text(_) | TypeCode::Struct(_) => {}
                }
                out
            })
            .collect();
        // Depth-first search with colours: 0 unvisited, 1 on the path, 2 done.
        let mut colour = vec![0u8; edges.len()];
        for start in 0..edges.len() {
            if colour[start] != 0 {
                continue;
            }
            let mut stack = vec![(start, 0usize)];
            colour[start] = 1;
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                if let Some(&target) = edges[node].get(*next) {
                    *next += 1;
                    match colour[target] {
                        0 => {
                            colour[target] = 1;
                            stack.push((target, 0));
                        }
                        1 => {
                            return Err(GenError::schema(
                                model.types[target].pointer.clone(),
                                format!(
                                    "the type {} holds itself without an object or array in between: no value \
                                     could be decoded",
                                    model.types[target].rust_name
                                ),
                            ))
                        }
                        _ => {}
                    }
                } else {
                    colour[node] = 2;
                    stack.pop();
                }
            }
        }
        Ok(())
    }

    /// Whether a map whose key `key` holds `value` can be a `ty` (the derive's
    /// `Tagged::accepts`).
    pub fn accepts(&self, ty: &Ty, key: &str, value: &Scalar<'_>) -> bool {
        match ty {
            Ty::Named(i) => match &self.types[*i] {
                TypeCode::Struct(s) => s.literal(key).is_some_and(|literal| literal_matches(literal, value)),
                TypeCode::Union(u) => u.wrapped.iter().any(|v| self.accepts(&v.value, key, value)),
                TypeCode::Text(_) | TypeCode::Newtype { .. } => false,
            },
            _ => false,
        }
    }

    /// Whether a map whose tag keys hold `values` can be a `ty` (the derive's
    /// `Tagged::accepts_all`).
    pub fn accepts_all(&self, ty: &Ty, values: &[(&str, Option<Scalar<'_>>)]) -> bool {
        match ty {
            Ty::Named(i) => match &self.types[*i] {
                TypeCode::Struct(s) => {
                    s.has_literals
                        && values.iter().all(|(key, entry)| match s.literal(key) {
                            Some(literal) => entry.as_ref().is_some_and(|v| literal_matches(literal, v)),
                            None => true,
                        })
                }
                TypeCode::Union(u) => u.wrapped.iter().any(|v| self.accepts_all(&v.value, values)),
                TypeCode::Text(_) | TypeCode::Newtype { .. } => false,
            },
            _ => false,
        }
    }

    /// The struct a key-set variant holds.
    pub fn key_set(&self, ty: &Ty) -> Option<&StructCode> {
        match ty {
            Ty::Named(i) => match &self.types[*i] {
                TypeCode::Struct(s) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Whether the scalar `value` is the literal `literal` (an integral float64 equals the integer).
pub(super) fn literal_matches(literal: &LiteralValue, value: &Scalar<'_>) -> bool {
    match literal {
        LiteralValue::String(s) => value.is_text(s),
        LiteralValue::Bool(b) => value.is_bool(*b),
        LiteralValue::Number(n) => value.is_number(*n),
        LiteralValue::Null => matches!(value, Scalar::Null),
    }
}

/// The JSON type of a literal.
fn literal_types(value: &LiteralValue) -> JsonTypes {
    match value {
        LiteralValue::String(_) => JsonTypes::STRING,
        LiteralValue::Bool(_) => JsonTypes::BOOLEAN,
        LiteralValue::Number(_) => JsonTypes::NUMBER,
        LiteralValue::Null => JsonTypes::NULL,
    }
}

/// A literal as JSON, as the derived encoder writes it and the JSON view reads it back.
pub(super) fn literal_json(value: &LiteralValue) -> serde_json::Value {
    match value {
        LiteralValue::Number(n) => pi_protocol_runtime::payload::number_value(*n),
        other => other.to_json(),
    }
}

/// The compilation state.
struct Compiler<'m> {
    index: &'m HashMap<&'m str, usize>,
    patterns: Vec<SchemaPattern>,
    /// The pointer of the type being compiled, for errors.
    pointer: String,
    /// The decoder of opaque payloads.
    payload: Leaf,
}

impl Compiler<'_> {
    fn type_code(&mut self, kind: &TypeKind) -> Result<TypeCode> {
        Ok(match kind {
            TypeKind::Newtype(shape) if shape.ty == TypeExpr::String => TypeCode::Text(self.text(&shape.checks)?),
            TypeKind::Newtype(shape) => TypeCode::Newtype { value: self.ty(&shape.ty)?, checks: self.checks(shape)? },
            TypeKind::Struct(s) => {
                let mut members = Vec::with_capacity(s.members.len());
                for member in &s.members {
                    members.push(match member {
                        Member::Literal(literal) => {
                            MemberCode::Literal { key: intern(&literal.key), value: literal.value.clone() }
                        }
                        Member::Field(field) => {
                            let (nullable, value) = match &field.shape.ty {
                                TypeExpr::Nullable(inner) => (true, inner.as_ref()),
                                _ => (false, &field.shape),
                            };
                            let presence = match (field.optional, nullable) {
                                (false, false) => Presence::Required,
                                (true, false) => Presence::Optional,
                                (false, true) => Presence::Nullable,
                                (true, true) => Presence::OptionalNullable,
                            };
                            MemberCode::Field {
                                key: intern(&field.key),
                                value: self.ty(&value.ty)?,
                                checks: self.checks(value)?,
                                presence,
                            }
                        }
                    });
                }
                TypeCode::Struct(StructCode {
                    keys: s.keys().map(intern).collect(),
                    required: s.required_keys().map(intern).collect(),
                    has_literals: s.literals().next().is_some(),
                    members,
                })
            }
            TypeKind::Union(u) => {
                let mut units = Vec::new();
                let mut wrapped = Vec::new();
                for variant in &u.variants {
                    match &variant.kind {
                        VariantKind::Literal(value) => {
                            units.push((value.clone(), literal_types(value), literal_json(value)));
                        }
                        VariantKind::Value(shape) => {
                            wrapped.push(VariantCode { value: self.ty(&shape.ty)?, checks: self.checks(shape)? });
                        }
                    }
                }
                let dispatch = match &u.dispatch {
                    Dispatch::ByType => DispatchCode::ByType,
                    Dispatch::Tag(key) => DispatchCode::Tag(intern(key)),
                    Dispatch::Tags(keys) => DispatchCode::Tags(keys.iter().map(|k| intern(k)).collect()),
                    Dispatch::KeySet => DispatchCode::KeySet,
                };
                let unit_types = units.iter().fold(JsonTypes::NONE, |all, unit| all.union(unit.1));
                TypeCode::Union(UnionCode { dispatch, units, wrapped, unit_types, non_map: false })
            }
        })
    }

    fn ty(&self, ty: &TypeExpr) -> Result<Ty> {
        Ok(match ty {
            TypeExpr::Named { name, .. } => match self.index.get(name.as_str()) {
                Some(&i) => Ty::Named(i),
                None => return Err(GenError::schema(self.pointer.clone(), format!("no type named {name}"))),
            },
            TypeExpr::String => Ty::Leaf { types: JsonTypes::STRING, decode: leaf::string },
            TypeExpr::Integer => Ty::Leaf { types: JsonTypes::NUMBER, decode: leaf::integer },
            TypeExpr::Number => Ty::Leaf { types: JsonTypes::NUMBER, decode: leaf::number },
            TypeExpr::Boolean => Ty::Leaf { types: JsonTypes::BOOLEAN, decode: leaf::boolean },
            TypeExpr::Null => Ty::Leaf { types: JsonTypes::NULL, decode: leaf::null },
            TypeExpr::Payload => Ty::Leaf { types: JsonTypes::ANY, decode: self.payload },
            TypeExpr::Array(inner) => Ty::Array(Box::new(self.ty(&inner.ty)?)),
            TypeExpr::Record(record) => Ty::Record(Box::new(self.ty(&record.values.ty)?)),
            TypeExpr::Nullable(inner) => Ty::Nullable(Box::new(self.ty(&inner.ty)?)),
        })
    }

    /// The checks of a value of `shape`, collected like `emit::check_args`; `None` when there
    /// is nothing to check.
    fn checks(&mut self, shape: &Shape) -> Result<Option<Box<CheckTree>>> {
        let mut tree = self.own(&shape.checks)?;
        match &shape.ty {
            TypeExpr::Nullable(inner) => {
                if let Some(inner) = self.checks(inner)? {
                    merge(&mut tree, *inner);
                }
            }
            TypeExpr::Array(inner) => tree.items = self.checks(inner)?,
            TypeExpr::Record(record) => {
                tree.values = self.checks(&record.values)?;
                let keys = self.text(&record.keys)?;
                tree.keys = (!keys.is_empty()).then_some(keys);
            }
            _ => {}
        }
        let empty = tree.text.is_empty()
            && tree.bounds.is_empty()
            && tree.min_items.is_none()
            && tree.max_items.is_none()
            && tree.items.is_none()
            && tree.values.is_none()
            && tree.keys.is_none();
        Ok((!empty).then(|| Box::new(tree)))
    }

    /// The constraints of `checks` itself.
    fn own(&mut self, checks: &Checks) -> Result<CheckTree> {
        let mut bounds = Vec::new();
        bounds.extend(checks.minimum.map(Bound::Minimum));
        bounds.extend(checks.maximum.map(Bound::Maximum));
        bounds.extend(checks.exclusive_minimum.map(Bound::ExclusiveMinimum));
        bounds.extend(checks.exclusive_maximum.map(Bound::ExclusiveMaximum));
        Ok(CheckTree {
            text: self.text(checks)?,
            bounds,
            min_items: checks.min_items,
            max_items: checks.max_items,
            ..CheckTree::default()
        })
    }

    fn text(&mut self, checks: &Checks) -> Result<TextChecks> {
        let pattern = match &checks.pattern {
            Some(source) => {
                let compiled = SchemaPattern::compile(source).map_err(|e| {
                    GenError::schema(self.pointer.clone(), format!("pattern {:?}: {e}", shortened(source)))
                })?;
                self.patterns.push(compiled);
                Some(self.patterns.len() - 1)
            }
            None => None,
        };
        Ok(TextChecks { min_length: checks.min_length, max_length: checks.max_length, pattern })
    }
}

/// `source`, cut to its first 64 characters (a pattern refused for its length may be long).
fn shortened(source: &str) -> String {
    match source.char_indices().nth(64) {
        Some((at, _)) => format!("{}...", &source[..at]),
        None => source.to_owned(),
    }
}

/// Adds the checks of a nullable shape's inner value to the (empty) checks of the nullable
/// shape itself: the derive reads both as one set on `Option<T>`.
fn merge(tree: &mut CheckTree, inner: CheckTree) {
    let CheckTree { text, bounds, min_items, max_items, items, values, keys } = inner;
    tree.text.min_length = tree.text.min_length.or(text.min_length);
    tree.text.max_length = tree.text.max_length.or(text.max_length);
    tree.text.pattern = tree.text.pattern.or(text.pattern);
    tree.bounds.extend(bounds);
    tree.min_items = tree.min_items.or(min_items);
    tree.max_items = tree.max_items.or(max_items);
    tree.items = tree.items.take().or(items);
    tree.values = tree.values.take().or(values);
    tree.keys = tree.keys.or(keys);
}
