//! The changes a schema edit makes to the generated Rust source, and which of them break code
//! that uses the types (so the release can be versioned honestly).
//!
//! Generated structs and enums are `#[non_exhaustive]` and built with `new` and `with_*`
//! setters, so adding a type, an optional field, a variant or an enumeration value breaks no
//! user; removing or retyping anything, adding a required field (a new argument of `new`) or
//! changing whether a field is optional does.

use std::collections::BTreeMap;

use crate::model::{Field, Model, Shape, TypeDef, TypeExpr, TypeKind, VariantKind};

/// One change of the generated Rust source.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RustChange {
    /// What changed.
    pub kind: RustChangeKind,
    /// The item: a type (`Request`), a field (`Request.call`) or a variant
    /// (`ServerMessage::Notice`).
    pub item: String,
    /// Details in words (old and new types, the old name).
    pub detail: String,
}

/// The kinds of change of the generated source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RustChangeKind {
    /// A type was added.
    TypeAdded,
    /// A type was removed.
    TypeRemoved,
    /// A type was removed and an identical one added under another name.
    TypeRenamed,
    /// A type changed its shape (a struct became an enum, a newtype holds another type).
    TypeRetyped,
    /// A required field was added (`new` takes one more argument).
    RequiredFieldAdded,
    /// An optional field was added (a new `with_*` setter).
    OptionalFieldAdded,
    /// A field was removed.
    FieldRemoved,
    /// A field changed its type.
    FieldRetyped,
    /// An optional field became required, or the other way round (its type gains or loses an
    /// `Option`).
    FieldPresenceChanged,
    /// A variant was added.
    VariantAdded,
    /// A variant was removed.
    VariantRemoved,
    /// A variant holds another type.
    VariantRetyped,
}

impl RustChangeKind {
    /// A short name (`optional field added`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RustChangeKind::TypeAdded => "type added",
            RustChangeKind::TypeRemoved => "type removed",
            RustChangeKind::TypeRenamed => "type renamed",
            RustChangeKind::TypeRetyped => "type retyped",
            RustChangeKind::RequiredFieldAdded => "required field added",
            RustChangeKind::OptionalFieldAdded => "optional field added",
            RustChangeKind::FieldRemoved => "field removed",
            RustChangeKind::FieldRetyped => "field retyped",
            RustChangeKind::FieldPresenceChanged => "field presence changed",
            RustChangeKind::VariantAdded => "variant added",
            RustChangeKind::VariantRemoved => "variant removed",
            RustChangeKind::VariantRetyped => "variant retyped",
        }
    }
}

impl RustChange {
    /// Whether code using the old types may stop compiling (a major version).
    #[must_use]
    pub fn is_breaking(&self) -> bool {
        !matches!(
            self.kind,
            RustChangeKind::TypeAdded | RustChangeKind::OptionalFieldAdded | RustChangeKind::VariantAdded
        )
    }
}

/// The changes from the types of `old` to those of `new`, types in name order.
pub(crate) fn changes(old: &Model, new: &Model) -> Vec<RustChange> {
    let old_types: BTreeMap<&str, &TypeDef> = old.types.iter().map(|t| (t.rust_name.as_str(), t)).collect();
    let new_types: BTreeMap<&str, &TypeDef> = new.types.iter().map(|t| (t.rust_name.as_str(), t)).collect();
    let mut out = Vec::new();
    let removed: Vec<&TypeDef> =
        old_types.iter().filter(|(n, _)| !new_types.contains_key(*n)).map(|(_, t)| *t).collect();
    let mut added: Vec<&TypeDef> =
        new_types.iter().filter(|(n, _)| !old_types.contains_key(*n)).map(|(_, t)| *t).collect();
    for gone in removed {
        match added.iter().position(|candidate| same_shape(gone, candidate)) {
            Some(i) => {
                let renamed = added.remove(i);
                out.push(change(RustChangeKind::TypeRenamed, &renamed.rust_name, format!("was {}", gone.rust_name)));
            }
            None => out.push(change(RustChangeKind::TypeRemoved, &gone.rust_name, String::new())),
        }
    }
    for new_type in added {
        out.push(change(RustChangeKind::TypeAdded, &new_type.rust_name, kind_name(&new_type.kind).to_string()));
    }
    for (name, old_def) in &old_types {
        let Some(new_def) = new_types.get(name) else { continue };
        compare(old_def, new_def, &mut out);
    }
    out
}

fn change(kind: RustChangeKind, item: &str, detail: String) -> RustChange {
    RustChange { kind, item: item.to_string(), detail }
}

/// The changes within one type kept under its name.
fn compare(old: &TypeDef, new: &TypeDef, out: &mut Vec<RustChange>) {
    let name = &old.rust_name;
    match (&old.kind, &new.kind) {
        (TypeKind::Struct(a), TypeKind::Struct(b)) => {
            for fa in a.fields() {
                let item = format!("{name}.{}", fa.rust_name);
                match b.fields().find(|fb| fb.rust_name == fa.rust_name) {
                    None => out.push(change(RustChangeKind::FieldRemoved, &item, String::new())),
                    Some(fb) => {
                        if fa.optional != fb.optional {
                            let detail = format!("{} -> {}", field_text(fa), field_text(fb));
                            out.push(change(RustChangeKind::FieldPresenceChanged, &item, detail));
                        } else if type_text(&fa.shape) != type_text(&fb.shape) {
                            let detail = format!("{} -> {}", field_text(fa), field_text(fb));
                            out.push(change(RustChangeKind::FieldRetyped, &item, detail));
                        }
                    }
                }
            }
            for fb in b.fields().filter(|fb| !a.fields().any(|fa| fa.rust_name == fb.rust_name)) {
                let kind =
                    if fb.optional { RustChangeKind::OptionalFieldAdded } else { RustChangeKind::RequiredFieldAdded };
                out.push(change(kind, &format!("{name}.{}", fb.rust_name), field_text(fb)));
            }
        }
        (TypeKind::Union(a), TypeKind::Union(b)) => {
            for va in &a.variants {
                let item = format!("{name}::{}", va.rust_name);
                match b.variants.iter().find(|vb| vb.rust_name == va.rust_name) {
                    None => out.push(change(RustChangeKind::VariantRemoved, &item, String::new())),
                    Some(vb) if variant_text(&va.kind) != variant_text(&vb.kind) => {
                        let detail = format!("{} -> {}", variant_text(&va.kind), variant_text(&vb.kind));
                        out.push(change(RustChangeKind::VariantRetyped, &item, detail));
                    }
                    Some(_) => {}
                }
            }
            for vb in b.variants.iter().filter(|vb| !a.variants.iter().any(|va| va.rust_name == vb.rust_name)) {
                out.push(change(
                    RustChangeKind::VariantAdded,
                    &format!("{name}::{}", vb.rust_name),
                    variant_text(&vb.kind),
                ));
            }
        }
        (TypeKind::Newtype(a), TypeKind::Newtype(b)) => {
            if type_text(a) != type_text(b) {
                out.push(change(
                    RustChangeKind::TypeRetyped,
                    name,
                    format!("({}) -> ({})", type_text(a), type_text(b)),
                ));
            }
        }
        (a, b) => out.push(change(RustChangeKind::TypeRetyped, name, format!("{} -> {}", kind_name(a), kind_name(b)))),
    }
}

/// Whether two types (of different names) have the same fields or variants with the same types.
fn same_shape(a: &TypeDef, b: &TypeDef) -> bool {
    match (&a.kind, &b.kind) {
        (TypeKind::Struct(x), TypeKind::Struct(y)) => {
            x.members.len() == y.members.len()
                && x.members.iter().zip(&y.members).all(|(m, n)| m.key() == n.key())
                && x.fields().zip(y.fields()).all(|(f, g)| field_text(f) == field_text(g))
        }
        (TypeKind::Union(x), TypeKind::Union(y)) => {
            x.variants.len() == y.variants.len()
                && x.variants
                    .iter()
                    .zip(&y.variants)
                    .all(|(v, w)| v.rust_name == w.rust_name && variant_text(&v.kind) == variant_text(&w.kind))
        }
        (TypeKind::Newtype(x), TypeKind::Newtype(y)) => type_text(x) == type_text(y) && x.checks == y.checks,
        _ => false,
    }
}

fn kind_name(kind: &TypeKind) -> &'static str {
    match kind {
        TypeKind::Newtype(_) => "newtype",
        TypeKind::Struct(_) => "struct",
        TypeKind::Union(_) => "enum",
    }
}

/// The Rust type of a field, as the generator writes it.
fn field_text(field: &Field) -> String {
    if field.optional {
        format!("Option<{}>", type_text(&field.shape))
    } else {
        type_text(&field.shape)
    }
}

fn variant_text(kind: &VariantKind) -> String {
    match kind {
        VariantKind::Value(shape) => format!("({})", type_text(shape)),
        VariantKind::Literal(value) => format!("= {value}"),
    }
}

/// The Rust type of a shape, as the generator writes it.
fn type_text(shape: &Shape) -> String {
    match &shape.ty {
        TypeExpr::Named { name, boxed: true } => format!("Box<{name}>"),
        TypeExpr::Named { name, .. } => name.clone(),
        TypeExpr::String => "String".into(),
        TypeExpr::Integer => "Integer".into(),
        TypeExpr::Number => "Number".into(),
        TypeExpr::Boolean => "bool".into(),
        TypeExpr::Null => "Null".into(),
        TypeExpr::Payload => "Payload".into(),
        TypeExpr::Array(inner) => format!("Vec<{}>", type_text(inner)),
        TypeExpr::Record(record) => format!("Record<{}>", type_text(&record.values)),
        TypeExpr::Nullable(inner) => format!("Option<{}>", type_text(inner)),
    }
}
