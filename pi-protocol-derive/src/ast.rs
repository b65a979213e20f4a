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

use pi_protocol_pattern::{Pattern, Regex};

use crate::attr::{self, Attr, CheckAttrs, ContainerAttrs, Ctxt, FieldAttrs, LitValue, LiteralAttr};

/// A type deriving `Codec`, checked.
pub struct Container<'a> {
    /// The type's name.
    pub ident: &'a Ident,
    /// Path of the runtime crate (default `::pi_protocol_runtime`).
    pub krate: syn::Path,
    /// Whether to emit the JSON view (`json`).
    pub json: bool,
    /// What the type looks like on the wire.
    pub shape: Shape<'a>,
}

/// The shapes the derive supports.
pub enum Shape<'a> {
    /// `struct X(T);`: a `T` meeting the type's checks.
    Newtype(Newtype<'a>),
    /// A struct with named fields: a map with fixed keys.
    Struct(Struct<'a>),
    /// An enum: a union of variants.
    Union(Union<'a>),
    /// `#[codec(tuple)] struct X(A, B);`: a fixed-length array.
    Tuple(Tuple<'a>),
}

/// A fixed-length array: one element per field, in order, with literal elements (not stored)
/// at the positions their `literal(index = N, ...)` gives.
pub struct Tuple<'a> {
    /// Every element, in position order.
    pub elements: Vec<Element<'a>>,
}

impl Tuple<'_> {
    /// The literal at position 0, if any (what a union of tuples looks at, with the length).
    pub fn head(&self) -> Option<&LitValue> {
        match self.elements.first() {
            Some(Element::Literal(value)) => Some(value),
            _ => None,
        }
    }
}

/// One element of a tuple.
pub enum Element<'a> {
    /// A fixed value, checked on decode and written on encode.
    Literal(LitValue),
    /// A value stored in the struct's field `index`.
    Field {
        /// The field's position in the struct (`self.0`, `self.1`, ...).
        index: syn::Index,
        /// Its declared type (`Option<T>` is a nullable element).
        ty: &'a Type,
        /// Constraints on the value.
        checks: Checks,
    },
}

/// A newtype `struct X(T);`.
pub struct Newtype<'a> {
    /// `T`.
    pub inner: &'a Type,
    /// Its checks.
    pub checks: Checks,
    /// Whether `T` is a text storage (`String`, `CompactString`, `ArrayString<N>`): such a
    /// newtype gets the string API (`as_str`, `Deref<Target = str>`, ...).
    pub text: bool,
}

/// Value constraints of a field, a newtype or an element, checked in this order.
#[derive(Default)]
pub struct Checks {
    /// Minimum length in characters.
    pub min_length: Option<u64>,
    /// Maximum length in characters.
    pub max_length: Option<u64>,
    /// The pattern: compiled when it is in the fixed-length subset, and its source text.
    pub pattern: Option<(Option<Pattern>, String)>,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `exclusiveMinimum`.
    pub exclusive_minimum: Option<f64>,
    /// `exclusiveMaximum`.
    pub exclusive_maximum: Option<f64>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// Checks of each array element.
    pub items: Option<Box<Checks>>,
    /// Checks of each record value.
    pub values: Option<Box<Checks>>,
    /// Checks of each record key.
    pub keys: Option<Box<Checks>>,
}

impl Checks {
    /// Whether there is nothing to check.
    pub fn is_empty(&self) -> bool {
        !(self.has_text() || self.has_number() || self.has_items() || self.has_record())
    }

    /// Whether any string check is set.
    pub fn has_text(&self) -> bool {
        self.min_length.is_some() || self.max_length.is_some() || self.pattern.is_some()
    }

    /// Whether any numeric check is set.
    pub fn has_number(&self) -> bool {
        self.minimum.is_some()
            || self.maximum.is_some()
            || self.exclusive_minimum.is_some()
            || self.exclusive_maximum.is_some()
    }

    /// Whether any array check is set.
    pub fn has_items(&self) -> bool {
        self.min_items.is_some() || self.max_items.is_some() || self.items.is_some()
    }

    /// Whether any record check is set.
    pub fn has_record(&self) -> bool {
        self.values.is_some() || self.keys.is_some()
    }
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
#[allow(clippy::large_enum_variant)] // Built once per derive; boxing buys nothing.
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
            Entry::Field(f) => matches!(f.presence, Presence::Required | Presence::Nullable),
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
    /// The type of a present, non-null value on the wire (`T` of `Option<T>` and of
    /// `Option<Option<T>>`, else the declared type).
    pub value_ty: &'a Type,
    /// Whether and how the key may be absent or null.
    pub presence: Presence,
    /// Constraints on the value.
    pub checks: Checks,
}

/// How a field's key may be absent or `null`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// `T`: the key must be there.
    Required,
    /// `Option<T>`: the key may be absent (`None`).
    Optional,
    /// `#[codec(nullable)] Option<T>`: the key must be there; `null` is `None`.
    Nullable,
    /// `#[codec(nullable)] Option<Option<T>>`: absent is `None`, `null` is `Some(None)`.
    OptionalNullable,
}

/// The variants of an enum and how a decoder picks one.
pub struct Union<'a> {
    /// How maps are told apart.
    pub dispatch: Dispatch,
    /// Whether arrays are told apart by length and first element (`tuples`, through
    /// `Positional`), instead of going to the first variant that can hold an array.
    pub tuples: bool,
    /// The variants in declared order.
    pub variants: Vec<Variant<'a>>,
}

impl Union<'_> {
    /// The tuple variants, with their types.
    pub fn wrapped(&self) -> impl Iterator<Item = (&Variant<'_>, &Type)> {
        self.variants.iter().filter_map(|v| match v.kind {
            VariantKind::Wrap(ty) => Some((v, ty)),
            VariantKind::Unit(_) => None,
        })
    }

    /// The unit variants, with their values.
    pub fn units(&self) -> impl Iterator<Item = (&Variant<'_>, &LitValue)> {
        self.variants.iter().filter_map(|v| match &v.kind {
            VariantKind::Unit(value) => Some((v, value)),
            VariantKind::Wrap(_) => None,
        })
    }
}

/// How a union tells its map-shaped variants apart.
pub enum Dispatch {
    /// By JSON type only: the first variant whose type can hold the item.
    ByType,
    /// By the value of one literal key.
    Tag(String),
    /// By the values of several literal keys together.
    Tags(Vec<String>),
    /// By the set of keys in the map.
    KeySet,
}

/// One variant.
pub struct Variant<'a> {
    /// The variant's name.
    pub ident: &'a Ident,
    /// What it holds.
    pub kind: VariantKind<'a>,
    /// Whether no other variant has the same type (then `From<T>` is emitted).
    pub unique_type: bool,
}

/// What a variant holds.
pub enum VariantKind<'a> {
    /// `V(T)`.
    Wrap(&'a Type),
    /// `V`, standing for one literal value on the wire.
    Unit(LitValue),
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
                Fields::Unnamed(fields) if attrs.tuple.get().is_some() => {
                    only(cx, &attrs, &["literal", "tuple"], "tuple structs `#[codec(tuple)] struct X(A, B);`");
                    Some(Shape::Tuple(build_tuple(cx, &attrs.literals, fields)))
                }
                Fields::Unnamed(fields) => {
                    only(cx, &attrs, &[], "newtypes `struct X(T);`");
                    if fields.unnamed.len() != 1 {
                        cx.error_spanned_by(
                            fields,
                            "a tuple struct deriving Codec must have exactly one field (a newtype)",
                        );
                        None
                    } else {
                        let field = &fields.unnamed[0];
                        attr::reject_newtype_field_attrs(cx, &field.attrs);
                        check_type(cx, &field.ty);
                        let checks = build_checks(cx, &attrs.checks);
                        let capacity = array_string_capacity(&field.ty);
                        let text =
                            is_named(&field.ty, "String") || is_named(&field.ty, "CompactString") || capacity.is_some();
                        if let Some(capacity) = capacity {
                            // A fixed capacity holds exactly the texts of a pattern of that length.
                            let length = checks.pattern.as_ref().and_then(|(p, _)| p.as_ref()).map(Pattern::length);
                            if capacity != length {
                                cx.error_spanned_by(
                                    &field.ty,
                                    "an `ArrayString<N>` newtype needs a `pattern` whose matches are exactly N bytes \
                                     long (N an integer literal)",
                                );
                            }
                        }
                        check_applicable(cx, &field.ty, &checks, &attrs.checks);
                        Some(Shape::Newtype(Newtype { inner: &field.ty, checks, text }))
                    }
                }
                Fields::Named(fields) => {
                    only(cx, &attrs, &["literal"], "structs with named fields");
                    Some(Shape::Struct(build_struct(cx, &attrs.literals, fields)))
                }
                Fields::Unit => {
                    cx.error_spanned_by(
                        &input.ident,
                        "#[derive(Codec)] needs named fields (a map) or one field (a newtype)",
                    );
                    None
                }
            },
            Data::Enum(data) => {
                only(cx, &attrs, &["tag", "tags", "key_set", "tuples"], "enums");
                let set: Vec<(&str, Span)> =
                    [("tag", attrs.tag.span()), ("tags", attrs.tags.span()), ("key_set", attrs.key_set.span())]
                        .into_iter()
                        .filter_map(|(name, span)| span.map(|s| (name, s)))
                        .collect();
                if let [(first, _), (second, span), ..] = set.as_slice() {
                    cx.error_at(
                        *span,
                        format!(
                            "`{first}` and `{second}` cannot be combined: an enum tells its maps apart by one \
                             tag key, by several (`tags`), or by its key set"
                        ),
                    );
                }
                if data.variants.is_empty() {
                    cx.error_spanned_by(&input.ident, "an enum deriving Codec needs at least one variant");
                }
                let dispatch = if let Some(tag) = attrs.tag.get() {
                    Dispatch::Tag(tag.value())
                } else if let Some(tags) = attrs.tags.get() {
                    Dispatch::Tags(tags.iter().map(LitStr::value).collect())
                } else if attrs.key_set.get().is_some() {
                    Dispatch::KeySet
                } else {
                    Dispatch::ByType
                };
                // Tags and key sets tell maps apart; every other item (unit variants included)
                // goes to the variants of its JSON type, as in any enum.
                let mut union = build_union(cx, data);
                union.tuples = attrs.tuples.get().is_some();
                Some(Shape::Union(union_with(dispatch, union)))
            }
            Data::Union(data) => {
                cx.error_spanned_by(data.union_token, "#[derive(Codec)] does not support unions");
                None
            }
        };
        if cx.has_errors() {
            return None;
        }
        shape.map(|shape| Container { ident: &input.ident, krate, json: attrs.json.get().is_some(), shape })
    }
}

fn union_with(dispatch: Dispatch, mut union: Union<'_>) -> Union<'_> {
    union.dispatch = dispatch;
    union
}

/// Reports every container attribute that is set but not in `allowed` (`crate` and `json`
/// are allowed everywhere; the checks only on newtypes).
fn only(cx: &Ctxt, attrs: &ContainerAttrs, allowed: &[&str], what: &str) {
    let check = |name: &str, span: Option<Span>| {
        if let Some(span) = span {
            if !allowed.contains(&name) {
                let hint = match name {
                    "tag" | "tags" | "key_set" | "tuples" => "enums",
                    "tuple" => "tuple structs with their elements as fields",
                    "literal" => "structs with named fields and tuple structs",
                    _ => "newtypes `struct X(T);` and to fields",
                };
                cx.error_at(span, format!("`{name}` is not allowed on {what}: it applies to {hint}"));
            }
        }
    };
    check(attrs.tag.name(), attrs.tag.span());
    check(attrs.tags.name(), attrs.tags.span());
    check(attrs.key_set.name(), attrs.key_set.span());
    check(attrs.tuple.name(), attrs.tuple.span());
    check(attrs.tuples.name(), attrs.tuples.span());
    for literal in &attrs.literals {
        check("literal", Some(literal.span));
    }
    if !what.starts_with("newtypes") {
        for (name, span) in check_spans(&attrs.checks) {
            check(name, Some(span));
        }
    }
}

/// The name and span of every check that is set at the top level of `attrs`.
fn check_spans(attrs: &CheckAttrs) -> Vec<(&'static str, Span)> {
    fn one<T>(out: &mut Vec<(&'static str, Span)>, attr: &Attr<T>) {
        if let Some(span) = attr.span() {
            out.push((attr.name(), span));
        }
    }
    let mut out = Vec::new();
    one(&mut out, &attrs.min_length);
    one(&mut out, &attrs.max_length);
    one(&mut out, &attrs.pattern);
    one(&mut out, &attrs.minimum);
    one(&mut out, &attrs.maximum);
    one(&mut out, &attrs.exclusive_minimum);
    one(&mut out, &attrs.exclusive_maximum);
    one(&mut out, &attrs.min_items);
    one(&mut out, &attrs.max_items);
    one(&mut out, &attrs.items);
    one(&mut out, &attrs.values);
    one(&mut out, &attrs.keys);
    out
}

/// The checked constraints of `attrs`: patterns compiled (the fixed-length subset at
/// expansion time, anything else checked to be a valid ECMAScript pattern).
fn build_checks(cx: &Ctxt, attrs: &CheckAttrs) -> Checks {
    let pattern = attrs.pattern.get().and_then(|lit| {
        let source = lit.value();
        // The reference compiles patterns as ECMAScript with the u flag: that decides validity;
        // the fixed-length subset, where it applies, only makes the check faster.
        match Regex::new(&source) {
            Ok(_) => Some((Pattern::parse(&source).ok(), source)),
            Err(err) => {
                cx.error_spanned_by(lit, err.to_string());
                None
            }
        }
    });
    let nested = |attr: &Attr<Box<CheckAttrs>>| attr.get().map(|inner| Box::new(build_checks(cx, inner)));
    Checks {
        min_length: attrs.min_length.get().copied(),
        max_length: attrs.max_length.get().copied(),
        pattern,
        minimum: attrs.minimum.get().copied(),
        maximum: attrs.maximum.get().copied(),
        exclusive_minimum: attrs.exclusive_minimum.get().copied(),
        exclusive_maximum: attrs.exclusive_maximum.get().copied(),
        min_items: attrs.min_items.get().copied(),
        max_items: attrs.max_items.get().copied(),
        items: nested(&attrs.items),
        values: nested(&attrs.values),
        keys: nested(&attrs.keys),
    }
}

/// Reports checks that cannot apply to `ty`: array checks need a `Vec<T>`, record checks a
/// `Record<T>` (written out, so the element type is known), key checks only string checks.
/// String and numeric checks are checked by the compiler (`AsRef<str>`, `NumericValue`).
fn check_applicable(cx: &Ctxt, ty: &Type, checks: &Checks, attrs: &CheckAttrs) {
    let ty = peel(ty);
    // Types whose kind is plain from their name: a check of another kind is a mistake.
    let text_types = ["String", "CompactString"];
    let other_types = ["bool", "Integer", "Number", "Null", "Payload"];
    let is_container = container_inner(ty, "Vec").is_some() || container_inner(ty, "Record").is_some();
    let named_in = |names: &[&str]| names.iter().any(|n| is_named(ty, n));
    if named_in(&other_types) || is_container {
        for (attr, name) in [
            (attrs.min_length.span(), "min_length"),
            (attrs.max_length.span(), "max_length"),
            (attrs.pattern.span(), "pattern"),
        ] {
            if let Some(span) = attr {
                cx.error_at(span, format!("`{name}` applies to string values, not to this type"));
            }
        }
    }
    if named_in(&text_types) || named_in(&["bool", "Null", "Payload"]) || is_container {
        let bounds = [
            (attrs.minimum.span(), "minimum"),
            (attrs.maximum.span(), "maximum"),
            (attrs.exclusive_minimum.span(), "exclusive_minimum"),
            (attrs.exclusive_maximum.span(), "exclusive_maximum"),
        ];
        for (attr, name) in bounds {
            if let Some(span) = attr {
                cx.error_at(span, format!("`{name}` applies to numbers (`Integer`, `Number`), not to this type"));
            }
        }
    }
    if checks.has_items() {
        match container_inner(ty, "Vec") {
            Some(inner) => {
                if let (Some(items), Some(item_attrs)) = (&checks.items, attrs.items.get()) {
                    check_applicable(cx, inner, items, item_attrs);
                }
            }
            None => {
                let span = attrs.min_items.span().or(attrs.max_items.span()).or(attrs.items.span());
                cx.error_at(span.unwrap_or_else(Span::call_site), "array checks apply to a `Vec<T>` value");
            }
        }
    }
    if checks.has_record() {
        match container_inner(ty, "Record") {
            Some(inner) => {
                if let (Some(values), Some(value_attrs)) = (&checks.values, attrs.values.get()) {
                    check_applicable(cx, inner, values, value_attrs);
                }
                if let (Some(keys), Some(span)) = (&checks.keys, attrs.keys.span()) {
                    if keys.has_number() || keys.has_items() || keys.has_record() {
                        cx.error_at(span, "`keys(..)` takes only string checks");
                    }
                }
            }
            None => {
                let span = attrs.values.span().or(attrs.keys.span());
                cx.error_at(span.unwrap_or_else(Span::call_site), "record checks apply to a `Record<T>` value");
            }
        }
    }
}

/// `ty` without the `Option<..>` and `Box<..>` around it (checks look through them).
pub fn peel(mut ty: &Type) -> &Type {
    loop {
        match option_inner(ty).or_else(|| container_inner(ty, "Box")) {
            Some(inner) => ty = inner,
            None => return ty,
        }
    }
}

fn build_struct<'a>(cx: &Ctxt, literals: &[LiteralAttr], fields: &'a syn::FieldsNamed) -> Struct<'a> {
    let mut seen_keys: HashSet<String> = HashSet::new();
    let mut heads = Vec::new();
    let mut trailing: Vec<(Literal, LitStr)> = Vec::new();
    for lit in literals {
        if lit.key.is_none() {
            cx.error_at(lit.span, "`literal` needs a wire key: `key = \"...\"`");
        }
        if let Some((span, _)) = lit.index {
            cx.error_at(span, "`index` places a literal in a tuple (`#[codec(tuple)]`); a map's literal has a `key`");
        }
        if !lit.value_written {
            cx.error_at(lit.span, "`literal` needs its value: `value = \"...\"`, `true`, `false` or a number");
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
        let (presence, value_ty) = match (attrs.nullable.span(), option_inner) {
            (Some(_), Some(inner)) => match self::option_inner(inner) {
                Some(innermost) => (Presence::OptionalNullable, innermost),
                None => (Presence::Nullable, inner),
            },
            (Some(span), None) => {
                cx.error_at(span, "`nullable` needs an `Option<T>` field: `null` on the wire is `None`");
                (Presence::Required, &field.ty)
            }
            (None, Some(inner)) => (Presence::Optional, inner),
            (None, None) => (Presence::Required, &field.ty),
        };
        let checks = build_checks(cx, &attrs.checks);
        check_applicable(cx, value_ty, &checks, &attrs.checks);
        heads.push(Entry::Field(Field { member: ident, key, value_ty, presence, checks }));
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
    let mut unit_values: Vec<LitValue> = Vec::new();
    for variant in &data.variants {
        if let Some((eq, expr)) = &variant.discriminant {
            cx.error_spanned_by(quote::quote!(#eq #expr), "enum variants deriving Codec take no discriminant");
        }
        match &variant.fields {
            Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
                attr::reject_variant_attrs(cx, &variant.attrs);
                let ty = &fields.unnamed[0].ty;
                attr::reject_variant_attrs(cx, &fields.unnamed[0].attrs);
                check_type(cx, ty);
                variants.push(Variant { ident: &variant.ident, kind: VariantKind::Wrap(ty), unique_type: true });
            }
            Fields::Unit => {
                if let Some(value) = attr::unit_variant_value(cx, variant) {
                    if unit_values.contains(&value) {
                        cx.error_spanned_by(&variant.ident, format!("the value {} is used twice", value.to_json()));
                    }
                    unit_values.push(value.clone());
                    variants.push(Variant {
                        ident: &variant.ident,
                        kind: VariantKind::Unit(value),
                        unique_type: false,
                    });
                }
            }
            _ => cx.error_spanned_by(
                variant,
                "each variant must be a one-field tuple variant `Name(Type)` or a unit variant with \
                 `#[codec(value = ...)]`",
            ),
        }
    }
    let names: Vec<Option<String>> = variants
        .iter()
        .map(|v| match v.kind {
            VariantKind::Wrap(ty) => Some(ty.to_token_stream().to_string()),
            VariantKind::Unit(_) => None,
        })
        .collect();
    for (i, variant) in variants.iter_mut().enumerate() {
        if names[i].is_some() {
            variant.unique_type = names.iter().filter(|n| **n == names[i]).count() == 1;
        }
    }
    Union { dispatch: Dispatch::ByType, tuples: false, variants }
}

/// The elements of a tuple struct: its literals at their positions, its fields in the others.
fn build_tuple<'a>(cx: &Ctxt, literals: &[LiteralAttr], fields: &'a syn::FieldsUnnamed) -> Tuple<'a> {
    let len = fields.unnamed.len() + literals.len();
    let mut slots: Vec<Option<LitValue>> = vec![None; len];
    for lit in literals {
        if let Some(key) = &lit.key {
            cx.error_spanned_by(key, "a tuple's literal has a position, not a key: `literal(index = 0, value = ...)`");
        }
        if let Some(after) = &lit.after {
            cx.error_spanned_by(
                after,
                "a tuple's literal has a position, not `after`: `literal(index = 0, value = ...)`",
            );
        }
        if !lit.value_written {
            cx.error_at(lit.span, "`literal` needs its value: `value = \"...\"`, `true`, `false` or a number");
        }
        let Some((span, index)) = lit.index else {
            cx.error_at(lit.span, "`literal` in a tuple needs its position: `index = 0`");
            continue;
        };
        let Some(slot) = usize::try_from(index).ok().and_then(|i| slots.get_mut(i)) else {
            cx.error_at(
                span,
                format!("the tuple has {len} elements (fields and literals): positions 0 to {}", len - 1),
            );
            continue;
        };
        if slot.is_some() {
            cx.error_at(span, format!("two literals at position {index}"));
        }
        if let Some(value) = &lit.value {
            *slot = Some(value.clone());
        }
    }
    let mut fields_left = fields.unnamed.iter().enumerate();
    let mut elements = Vec::with_capacity(len);
    for slot in slots {
        let element = match slot {
            Some(value) => Element::Literal(value),
            None => {
                let Some((i, field)) = fields_left.next() else { break };
                let attrs = FieldAttrs::from_attrs(cx, &field.attrs);
                for span in [attrs.rename.span(), attrs.nullable.span()].into_iter().flatten() {
                    cx.error_at(
                        span,
                        "a tuple element takes only value checks (an `Option<T>` element is `null` or a `T`)",
                    );
                }
                check_type(cx, &field.ty);
                let checks = build_checks(cx, &attrs.checks);
                check_applicable(cx, &field.ty, &checks, &attrs.checks);
                Element::Field { index: syn::Index::from(i), ty: &field.ty, checks }
            }
        };
        elements.push(element);
    }
    Tuple { elements }
}

/// `T` when `ty` is `Option<T>` (also spelled `std::option::Option<T>` or `core::...`).
pub fn option_inner(ty: &Type) -> Option<&Type> {
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
    single_argument(&last.arguments)
}

/// `T` when `ty` is `<name><T>` by its last path segment (`Vec<T>`, `Box<T>`, `Record<T>`).
pub fn container_inner<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let Type::Path(path) = ungroup(ty) else { return None };
    let last = path.path.segments.last()?;
    if path.qself.is_some() || last.ident != name {
        return None;
    }
    single_argument(&last.arguments)
}

fn single_argument(arguments: &PathArguments) -> Option<&Type> {
    let PathArguments::AngleBracketed(args) = arguments else { return None };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

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
        Type::Tuple(t) if t.elems.is_empty() => Some("`()` is not supported: use `Null` for a value that is null"),
        Type::Tuple(_) => Some("tuples are not supported: use a struct with named fields (a map)"),
        Type::Array(_) | Type::Slice(_) => Some("fixed arrays and slices are not supported: use `Vec<T>`"),
        Type::BareFn(_) | Type::TraitObject(_) | Type::ImplTrait(_) | Type::Never(_) | Type::Infer(_) => {
            Some("this type cannot be decoded: use a type implementing the codec traits")
        }
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last();
            match last {
                Some(s)
                    if path.path.segments.len() == 1
                        && ["f32", "f64", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize"]
                            .iter()
                            .any(|t| s.ident == t) =>
                {
                    Some("JSON numbers are `Number` (any) or `Integer` (integral) values")
                }
                Some(s) if path.path.segments.len() == 1 && (s.ident == "str" || s.ident == "char") => {
                    Some("use `String` for text")
                }
                Some(s) if s.ident == "Vec" && is_vec_of_u8(&s.arguments) => Some(
                    "byte strings are never valid inside a message (docs/PROTOCOL.md section 2); use `String` or `Payload`",
                ),
                Some(s) if s.ident == "Option" || s.ident == "Vec" || s.ident == "Box" || s.ident == "Record" => {
                    if let Some(inner) = single_argument(&s.arguments) {
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
    single_argument(args).is_some_and(|inner| is_named(inner, "u8"))
}
