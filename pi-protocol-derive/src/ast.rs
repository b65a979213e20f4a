//! The checked model of one deriving type: its shape, wire keys in canonical order, literals,
//! presence of every field and the constraints to enforce.
//!
//! [`Container::from_ast`] turns the `syn` input plus the raw attributes of [`crate::attr`]
//! into this model, reporting every inconsistency at the user's span. Emission works only
//! from the model, so it never has to re-check anything.

use std::collections::HashSet;

use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Data, DeriveInput, Fields, GenericArgument, Ident, LitStr, PathArguments, Type};

use pi_protocol_runtime::pattern::Pattern;

use crate::attr::{self, ContainerAttrs, Ctxt, FieldAttrs, LitValue, LiteralAttr};

/// A type deriving `Codec`, checked.
pub struct Container<'a> {
    /// The type's name.
    pub ident: &'a Ident,
    /// Path of the runtime crate (default `::pi_protocol_runtime`).
    pub krate: syn::Path,
    /// What the type looks like on the wire.
    pub shape: Shape<'a>,
}

/// The four shapes the derive supports.
pub enum Shape<'a> {
    /// `struct X(String);` (or `CompactString`, `ArrayString<N>`): a text string with
    /// constraints, and the type that stores it.
    Newtype(StrChecks, &'a Type),
    /// A struct with named fields: a map with fixed keys.
    Struct(Struct<'a>),
    /// `#[codec(tag = "key")] enum`: chosen by the value of the key (the `String`).
    Tagged(String, Union<'a>),
    /// `#[codec(key_set)] enum`: chosen by the set of keys.
    KeySet(Union<'a>),
}

/// Constraints on a text value.
#[derive(Default)]
pub struct StrChecks {
    /// Minimum length in characters.
    pub min_length: Option<u64>,
    /// The compiled pattern and its source text.
    pub pattern: Option<(Pattern, String)>,
}

/// A map-shaped struct.
pub struct Struct<'a> {
    /// Every key in canonical (encoding) order.
    pub entries: Vec<Entry<'a>>,
}

impl Struct<'_> {
    /// The literal entries, in canonical order.
    pub fn literals(&self) -> impl Iterator<Item = &Literal> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Literal(l) => Some(l),
            Entry::Field(_) => None,
        })
    }

    /// The field entries, in canonical order.
    pub fn fields(&self) -> impl Iterator<Item = &Field<'_>> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Field(f) => Some(f),
            Entry::Literal(_) => None,
        })
    }
}

/// One key of a map-shaped struct.
pub enum Entry<'a> {
    /// A key with a fixed value, not stored in the struct.
    Literal(Literal),
    /// A key backed by a struct field.
    Field(Field<'a>),
}

impl Entry<'_> {
    /// The wire key.
    pub fn key(&self) -> &str {
        match self {
            Entry::Literal(l) => &l.key,
            Entry::Field(f) => &f.key,
        }
    }

    /// Whether a map of this type always holds the key.
    pub fn is_required(&self) -> bool {
        match self {
            Entry::Literal(_) => true,
            Entry::Field(f) => f.presence != Presence::Optional,
        }
    }
}

/// A literal key: `type: "hello"`, `ok: true`, `version: 8`.
pub struct Literal {
    /// The wire key.
    pub key: String,
    /// The only value the key may hold.
    pub value: LitValue,
}

/// A field of a map-shaped struct.
pub struct Field<'a> {
    /// The Rust field name.
    pub member: &'a Ident,
    /// The wire key.
    pub key: String,
    /// The field's type as declared (for optional fields, `Option<T>`).
    pub ty: &'a Type,
    /// The type of the value on the wire (`T` of `Option<T>`, else the declared type).
    pub value_ty: &'a Type,
    /// Whether and how the key may be absent.
    pub presence: Presence,
    /// Field-level constraints.
    pub checks: FieldChecks,
}

/// How a field's key may be absent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// The key must be there.
    Required,
    /// `Option<T>`: the key may be absent (`None`).
    Optional,
    /// `#[codec(nullable)] Option<T>`: the key must be there; `null` is `None`.
    Nullable,
}

/// Field-level constraints.
#[derive(Default)]
pub struct FieldChecks {
    /// `minimum = N` on an `Integer` field.
    pub minimum: Option<i64>,
    /// `min_length` / `pattern` on a `String` field.
    pub text: StrChecks,
}

/// The variants of a tagged or key-set enum.
pub struct Union<'a> {
    /// The variants in declared order.
    pub variants: Vec<Variant<'a>>,
}

/// One `V(T)` variant.
pub struct Variant<'a> {
    /// The variant's name.
    pub ident: &'a Ident,
    /// `T`.
    pub ty: &'a Type,
    /// Whether no other variant has the same type (then `From<T>` is emitted).
    pub unique_type: bool,
}

impl<'a> Container<'a> {
    /// Builds the checked model, or records errors in `cx` and returns `None`.
    pub fn from_ast(cx: &Ctxt, input: &'a DeriveInput) -> Option<Container<'a>> {
        let attrs = ContainerAttrs::from_attrs(cx, &input.attrs);
        if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
            cx.error_spanned_by(
                &input.generics,
                "#[derive(Codec)] does not support generic types: envelope types are concrete",
            );
        }
        let krate = attrs.krate.get().cloned().unwrap_or_else(|| syn::parse_quote!(::pi_protocol_runtime));
        let shape = match &input.data {
            Data::Struct(data) => match &data.fields {
                Fields::Unnamed(fields) => {
                    only(cx, &attrs, &["pattern", "min_length"], "string newtypes `struct X(String);`");
                    if fields.unnamed.len() != 1 {
                        cx.error_spanned_by(
                            fields,
                            "a tuple struct must have exactly one `String` field (a validated string newtype)",
                        );
                        None
                    } else {
                        let field = &fields.unnamed[0];
                        attr::reject_newtype_field_attrs(cx, &field.attrs);
                        let capacity = array_string_capacity(&field.ty);
                        if !is_named(&field.ty, "String") && !is_named(&field.ty, "CompactString") && capacity.is_none()
                        {
                            cx.error_spanned_by(
                                &field.ty,
                                "a newtype deriving Codec wraps a `String`, a `CompactString` or an `ArrayString<N>` \
                                 (a validated string newtype)",
                            );
                        }
                        let checks = str_checks(cx, attrs.min_length.get().copied(), attrs.pattern.get());
                        if let Some(capacity) = capacity {
                            // A fixed capacity holds exactly the texts of a pattern of that length.
                            let length = checks.pattern.as_ref().map(|(p, _)| p.length());
                            if capacity != length {
                                cx.error_spanned_by(
                                    &field.ty,
                                    "an `ArrayString<N>` newtype needs a `pattern` whose matches are exactly N bytes \
                                     long (N an integer literal)",
                                );
                            }
                        }
                        Some(Shape::Newtype(checks, &field.ty))
                    }
                }
                Fields::Named(fields) => {
                    only(cx, &attrs, &["literal"], "structs with named fields");
                    Some(Shape::Struct(build_struct(cx, &attrs.literals, fields)))
                }
                Fields::Unit => {
                    cx.error_spanned_by(
                        &input.ident,
                        "#[derive(Codec)] needs named fields (a map) or one `String` field (a string newtype)",
                    );
                    None
                }
            },
            Data::Enum(data) => {
                only(cx, &attrs, &["tag", "key_set"], "enums");
                let tag = attrs.tag.get().map(LitStr::value);
                if let (Some(_), Some(span)) = (attrs.tag.get(), attrs.key_set.span()) {
                    cx.error_at(
                        span,
                        "`tag` and `key_set` cannot be combined: an enum is chosen either by one tag key or by its key set",
                    );
                }
                if attrs.tag.get().is_none() && attrs.key_set.get().is_none() {
                    cx.error_spanned_by(
                        &input.ident,
                        "an enum deriving Codec needs `#[codec(tag = \"<key>\")]` or `#[codec(key_set)]`",
                    );
                }
                if data.variants.is_empty() {
                    cx.error_spanned_by(&input.ident, "an enum deriving Codec needs at least one variant");
                }
                let union = build_union(cx, data);
                match tag {
                    Some(tag) => Some(Shape::Tagged(tag, union)),
                    None => Some(Shape::KeySet(union)),
                }
            }
            Data::Union(data) => {
                cx.error_spanned_by(data.union_token, "#[derive(Codec)] does not support unions");
                None
            }
        };
        if cx.has_errors() {
            return None;
        }
        shape.map(|shape| Container { ident: &input.ident, krate, shape })
    }
}

/// Reports every container attribute that is set but not in `allowed` (or `crate`).
fn only(cx: &Ctxt, attrs: &ContainerAttrs, allowed: &[&str], what: &str) {
    let check = |name: &str, span: Option<Span>| {
        if let Some(span) = span {
            if !allowed.contains(&name) {
                let hint = match name {
                    "tag" | "key_set" => "enums",
                    "literal" => "structs with named fields",
                    _ => "string newtypes `struct X(String);` and to `String` fields",
                };
                cx.error_at(span, format!("`{name}` is not allowed on {what}: it applies to {hint}"));
            }
        }
    };
    check(attrs.tag.name(), attrs.tag.span());
    check(attrs.key_set.name(), attrs.key_set.span());
    check(attrs.pattern.name(), attrs.pattern.span());
    check(attrs.min_length.name(), attrs.min_length.span());
    for literal in &attrs.literals {
        check("literal", Some(literal.span));
    }
}

fn str_checks(cx: &Ctxt, min_length: Option<u64>, pattern: Option<&LitStr>) -> StrChecks {
    let pattern = pattern.and_then(|lit| {
        let source = lit.value();
        match Pattern::parse(&source) {
            Ok(compiled) => Some((compiled, source)),
            Err(err) => {
                cx.error_spanned_by(
                    lit,
                    format!(
                        "{err} (a pattern is `^`, then literal characters or classes such as `[0-9a-f]`, each with an optional `{{n}}` count, then `$`)"
                    ),
                );
                None
            }
        }
    });
    StrChecks { min_length, pattern }
}

fn build_struct<'a>(cx: &Ctxt, literals: &[LiteralAttr], fields: &'a syn::FieldsNamed) -> Struct<'a> {
    let mut seen_keys: HashSet<String> = HashSet::new();
    let mut heads = Vec::new();
    let mut trailing: Vec<(Literal, LitStr)> = Vec::new();
    for lit in literals {
        if lit.key.is_none() {
            cx.error_at(lit.span, "`literal` needs a wire key: `key = \"...\"`");
        }
        if !lit.value_written {
            cx.error_at(lit.span, "`literal` needs its value: `value = \"...\"`, `true`, `false` or an integer");
        }
        let (Some(key), Some(value)) = (&lit.key, &lit.value) else { continue };
        if !seen_keys.insert(key.value()) {
            cx.error_spanned_by(key, format!("duplicate wire key `{}`", key.value()));
        }
        let literal = Literal { key: key.value(), value: value.clone() };
        match &lit.after {
            Some(after) => trailing.push((literal, after.clone())),
            None => heads.push(Entry::Literal(literal)),
        }
    }
    for field in &fields.named {
        let Some(ident) = field.ident.as_ref() else { continue };
        let attrs = FieldAttrs::from_attrs(cx, &field.attrs);
        let key = match attrs.rename.get() {
            Some(lit) => lit.value(),
            None => ident.unraw().to_string(),
        };
        if !seen_keys.insert(key.clone()) {
            match attrs.rename.get() {
                Some(lit) => cx.error_spanned_by(lit, format!("duplicate wire key `{key}`")),
                None => cx.error_spanned_by(ident, format!("duplicate wire key `{key}`")),
            }
        }
        check_type(cx, &field.ty);
        let option_inner = option_inner(&field.ty);
        let presence = match (attrs.nullable.span(), option_inner) {
            (Some(_), Some(_)) => Presence::Nullable,
            (Some(span), None) => {
                cx.error_at(span, "`nullable` needs an `Option<T>` field: `null` on the wire is `None`");
                Presence::Required
            }
            (None, Some(_)) => Presence::Optional,
            (None, None) => Presence::Required,
        };
        let value_ty = option_inner.unwrap_or(&field.ty);
        if let Some(span) = attrs.minimum.span() {
            if !is_named(value_ty, "Integer") {
                cx.error_at(span, "`minimum` applies only to `Integer` fields");
            }
        }
        for (name, span) in [("min_length", attrs.min_length.span()), ("pattern", attrs.pattern.span())] {
            if let Some(span) = span {
                if !is_named(value_ty, "String") {
                    cx.error_at(
                        span,
                        format!("`{name}` applies only to `String` fields; a newtype carries its own constraints"),
                    );
                }
            }
        }
        let checks = FieldChecks {
            minimum: attrs.minimum.get().copied(),
            text: str_checks(cx, attrs.min_length.get().copied(), attrs.pattern.get()),
        };
        heads.push(Entry::Field(Field { member: ident, key, ty: &field.ty, value_ty, presence, checks }));
    }
    // Place each `after` literal right behind its key (chains allowed), keeping declared order.
    let mut entries = Vec::with_capacity(heads.len() + trailing.len());
    let mut placed = vec![false; trailing.len()];
    for head in heads {
        let key = head.key().to_owned();
        entries.push(head);
        place_after(&key, &trailing, &mut placed, &mut entries);
    }
    let mut trailing = trailing.into_iter();
    for done in placed {
        let Some((literal, after)) = trailing.next() else { break };
        if !done {
            if literal.key == after.value() || !seen_keys.contains(&after.value()) {
                cx.error_spanned_by(&after, "`after` must name another wire key of this struct");
            } else {
                cx.error_spanned_by(&after, "`after` entries form a cycle");
            }
        }
    }
    Struct { entries }
}

fn place_after<'a>(key: &str, trailing: &[(Literal, LitStr)], placed: &mut [bool], out: &mut Vec<Entry<'a>>) {
    for (i, (literal, after)) in trailing.iter().enumerate() {
        if !placed[i] && after.value() == key {
            placed[i] = true;
            out.push(Entry::Literal(Literal { key: literal.key.clone(), value: literal.value.clone() }));
            place_after(&literal.key, trailing, placed, out);
        }
    }
}

fn build_union<'a>(cx: &Ctxt, data: &'a syn::DataEnum) -> Union<'a> {
    let mut variants = Vec::new();
    for variant in &data.variants {
        attr::reject_variant_attrs(cx, &variant.attrs);
        if let Some((eq, expr)) = &variant.discriminant {
            cx.error_spanned_by(quote::quote!(#eq #expr), "enum variants deriving Codec take no discriminant");
        }
        match &variant.fields {
            Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
                let ty = &fields.unnamed[0].ty;
                attr::reject_variant_attrs(cx, &fields.unnamed[0].attrs);
                check_type(cx, ty);
                variants.push(Variant { ident: &variant.ident, ty, unique_type: true });
            }
            _ => cx.error_spanned_by(
                variant,
                "each variant must be a one-field tuple variant `Name(Type)` whose type is map-shaped",
            ),
        }
    }
    let names: Vec<String> = variants.iter().map(|v| v.ty.to_token_stream().to_string()).collect();
    for (i, variant) in variants.iter_mut().enumerate() {
        variant.unique_type = names.iter().filter(|n| **n == names[i]).count() == 1;
    }
    Union { variants }
}

/// `T` when `ty` is `Option<T>` (also spelled `std::option::Option<T>` or `core::...`).
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ungroup(ty) else { return None };
    if path.qself.is_some() {
        return None;
    }
    let segments: Vec<_> = path.path.segments.iter().collect();
    let last = segments.last()?;
    let prefix_ok = match segments.len() {
        1 => true,
        3 => {
            (segments[0].ident == "std" || segments[0].ident == "core")
                && segments[1].ident == "option"
                && segments[..2].iter().all(|s| s.arguments.is_none())
        }
        _ => false,
    };
    if !prefix_ok || last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

/// Whether `ty` is a plain path whose last segment is `name` with no generic arguments.
/// `Some(Some(n))` for `ArrayString<n>` with an integer literal `n`, `Some(None)` for any other
/// `ArrayString<..>`, `None` for other types.
fn array_string_capacity(ty: &Type) -> Option<Option<usize>> {
    let Type::Path(path) = ungroup(ty) else { return None };
    let last = path.path.segments.last()?;
    if path.qself.is_some() || last.ident != "ArrayString" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return Some(None) };
    Some(match args.args.first() {
        Some(GenericArgument::Const(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }))) => {
            n.base10_parse().ok()
        }
        _ => None,
    })
}

fn is_named(ty: &Type, name: &str) -> bool {
    match ungroup(ty) {
        Type::Path(path) if path.qself.is_none() => {
            path.path.segments.last().is_some_and(|s| s.ident == name && s.arguments.is_none())
        }
        _ => false,
    }
}

fn ungroup(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(group) => ty = &group.elem,
            Type::Paren(paren) => ty = &paren.elem,
            _ => return ty,
        }
    }
}

/// Rejects field types that can never be a value of a strict-JSON message. Any other type is
/// accepted here; the compiler then checks that it implements the runtime's codec traits.
fn check_type(cx: &Ctxt, ty: &Type) {
    let reason = match ungroup(ty) {
        Type::Reference(_) => {
            Some("references are not supported: a decoded message owns its data, use an owned type such as `String`")
        }
        Type::Ptr(_) => Some("raw pointers are not supported"),
        Type::Tuple(t) if t.elems.is_empty() => {
            Some("`()` is not supported: use `Payload` for a value that may be null")
        }
        Type::Tuple(_) => Some("tuples are not supported: use a struct with named fields (a map)"),
        Type::Array(_) | Type::Slice(_) => Some("arrays and slices are not supported: use `Payload` for opaque JSON"),
        Type::BareFn(_) | Type::TraitObject(_) | Type::ImplTrait(_) | Type::Never(_) | Type::Infer(_) => {
            Some("this type cannot be decoded: use a type implementing the codec traits")
        }
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last();
            match last {
                Some(s) if path.path.segments.len() == 1 && (s.ident == "f32") => {
                    Some("`f32` is not supported: JSON numbers are float64 values; use `Integer` for integers")
                }
                Some(s) if path.path.segments.len() == 1 && (s.ident == "str" || s.ident == "char") => {
                    Some("use `String` for text")
                }
                Some(s) if s.ident == "Vec" && is_vec_of_u8(&s.arguments) => Some(
                    "byte strings are never valid inside a message (docs/PROTOCOL.md section 2); use `String` or `Payload`",
                ),
                Some(s) if s.ident == "Option" => {
                    // `Option<T>`: check `T`.
                    if let Some(inner) = option_inner(ty) {
                        check_type(cx, inner);
                    }
                    None
                }
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(reason) = reason {
        cx.error_spanned_by(ty, format!("unsupported field type: {reason}"));
    }
}

fn is_vec_of_u8(args: &PathArguments) -> bool {
    let PathArguments::AngleBracketed(args) = args else { return false };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => is_named(inner, "u8"),
        _ => false,
    }
}
