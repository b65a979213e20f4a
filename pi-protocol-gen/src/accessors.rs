//! Accessors on generated unions for the fields their variants share: `RpcTarget::server_id()`,
//! `ClientMessage::id()`, `Response::id()`.
//!
//! The rule, applied to every union of the model: a field gets an accessor on the union when at
//! least two variants hold a field of that Rust name and of the same type, either directly (the
//! variant is a struct) or through the accessor of a union the variant holds. It returns `&T`
//! when every variant holds the field, required and not `null`; otherwise `Option<&T>`, `None`
//! for the variants without it. Boxed values and strings are handed out dereferenced (`&T`,
//! `&str`). The accessors follow from the schema, so a revision that adds a variant without
//! the field turns `&T` into `Option<&T>`, which the compatibility report lists as a Rust change.

use std::collections::BTreeMap;

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::model::{Field, Model, Shape, TypeExpr, TypeKind, Union, VariantKind};
use crate::rust_type::type_tokens;

/// Names an accessor may not take: the inherent and trait methods generated types already
/// answer to, which an accessor would shadow or collide with.
const RESERVED: &[&str] =
    &["new", "to_json", "from_json", "validate", "encode", "decode", "is_valid", "clone", "eq", "hash", "fmt"];

/// One accessor of a union.
#[derive(Debug, Clone)]
pub(crate) struct Accessor {
    /// The method name, the fields' Rust name (`server_id`).
    pub name: String,
    /// The type handed out by reference (`ServerId`, `str`).
    target: TokenStream,
    /// Every variant holds it, required and not `null`: the accessor returns `&T`, not
    /// `Option<&T>`.
    always: bool,
    /// Every variant holds it (its value may still be absent).
    in_every_variant: bool,
    /// For each variant that holds it: the variant name and how to reach it from `v`.
    arms: Vec<(Ident, Reach)>,
}

/// The variants that hold a field and how each reaches it; `None` once two disagree on its type.
type Arms = Option<Vec<(Ident, Reach)>>;

/// How a variant's value `v` leads to the field.
#[derive(Debug, Clone)]
struct Reach {
    /// An expression of `v`: `&T` when `always`, else `Option<&T>`.
    expr: TokenStream,
    /// Whether `expr` is a plain reference.
    always: bool,
    /// The borrowed type, as text, to tell equal types apart from different ones.
    target_key: String,
    target: TokenStream,
}

/// The accessors of `u`, in the order their fields first appear.
pub(crate) fn union_accessors(model: &Model, u: &Union) -> Vec<Accessor> {
    accessors_within(model, u, &mut Vec::new())
}

fn accessors_within(model: &Model, u: &Union, visiting: &mut Vec<*const Union>) -> Vec<Accessor> {
    let key = u as *const Union;
    if visiting.contains(&key) || u.is_enumeration() {
        return Vec::new();
    }
    visiting.push(key);
    // Field name -> (order of first sight, arms).
    let mut found: BTreeMap<String, (usize, Arms)> = BTreeMap::new();
    let mut order = 0;
    for variant in &u.variants {
        let VariantKind::Value(Shape { ty: TypeExpr::Named { name, .. }, .. }) = &variant.kind else { continue };
        let Some(def) = model.by_rust_name(name) else { continue };
        let reaches: Vec<(String, Reach)> = match &def.kind {
            TypeKind::Struct(s) => s.fields().map(|f| (f.rust_name.clone(), field_reach(f))).collect(),
            TypeKind::Union(inner) => accessors_within(model, inner, visiting)
                .into_iter()
                .map(|a| {
                    let method = format_ident!("{}", a.name);
                    let reach = Reach {
                        expr: quote!(v.#method()),
                        always: a.always,
                        target_key: a.target.to_string(),
                        target: a.target,
                    };
                    (a.name, reach)
                })
                .collect(),
            TypeKind::Newtype(_) => Vec::new(),
        };
        let vname = format_ident!("{}", variant.rust_name);
        for (field, reach) in reaches {
            let entry = found.entry(field).or_insert_with(|| {
                order += 1;
                (order, Some(Vec::new()))
            });
            if let Some(arms) = &mut entry.1 {
                if arms.first().is_some_and(|(_, first): &(Ident, Reach)| first.target_key != reach.target_key) {
                    entry.1 = None;
                } else {
                    arms.push((vname.clone(), reach));
                }
            }
        }
    }
    visiting.pop();
    let mut accessors: Vec<(usize, Accessor)> = found
        .into_iter()
        .filter(|(name, _)| !RESERVED.contains(&name.as_str()))
        .filter_map(|(name, (order, arms))| {
            let arms = arms.filter(|arms| arms.len() >= 2)?;
            let in_every_variant = arms.len() == u.variants.len();
            let always = in_every_variant && arms.iter().all(|(_, r)| r.always);
            let target = arms[0].1.target.clone();
            Some((order, Accessor { name, target, always, in_every_variant, arms }))
        })
        .collect();
    accessors.sort_by_key(|(order, _)| *order);
    accessors.into_iter().map(|(_, a)| a).collect()
}

/// How to reach a struct's field from `v`, dereferencing boxes and strings.
fn field_reach(field: &Field) -> Reach {
    let (value, nullable) = match &field.shape.ty {
        TypeExpr::Nullable(inner) => (inner.as_ref(), true),
        _ => (&field.shape, false),
    };
    let (target, deref) = match &value.ty {
        TypeExpr::Named { name, boxed } => {
            let name = format_ident!("{}", name);
            (quote!(#name), *boxed)
        }
        TypeExpr::String => (quote!(str), true),
        _ => (type_tokens(value), false),
    };
    let name = format_ident!("{}", field.rust_name);
    let options = usize::from(field.optional) + usize::from(nullable);
    let expr = match (options, deref) {
        (0, true) if matches!(value.ty, TypeExpr::String) => quote!(v.#name.as_str()),
        (0, true) => quote!(&*v.#name),
        (0, false) => quote!(&v.#name),
        (1, true) => quote!(v.#name.as_deref()),
        (1, false) => quote!(v.#name.as_ref()),
        (_, true) => quote!(v.#name.as_ref().and_then(|inner| inner.as_deref())),
        (_, false) => quote!(v.#name.as_ref().and_then(Option::as_ref)),
    };
    Reach { expr, always: options == 0, target_key: target.to_string(), target }
}

/// The `impl` block of `name`'s accessors, or nothing when it has none.
pub(crate) fn emit_accessors(name: &Ident, accessors: &[Accessor]) -> TokenStream {
    if accessors.is_empty() {
        return TokenStream::new();
    }
    let methods = accessors.iter().map(|a| {
        let method = format_ident!("{}", a.name);
        let target = &a.target;
        let holders: Vec<String> = a.arms.iter().map(|(v, _)| format!("`{v}`")).collect();
        let arms = a.arms.iter().map(|(variant, reach)| {
            let expr = &reach.expr;
            if a.always || !reach.always {
                quote!(#name::#variant(v) => #expr,)
            } else {
                quote!(#name::#variant(v) => Some(#expr),)
            }
        });
        if a.always {
            let doc = format!(" The `{}` every variant holds.", a.name);
            quote! {
                #[doc = #doc]
                #[must_use]
                pub fn #method(&self) -> &#target {
                    match self {
                        #(#arms)*
                    }
                }
            }
        } else {
            let doc = if a.in_every_variant {
                format!(" The `{}` every variant may hold; `None` when it is absent.", a.name)
            } else {
                format!(
                    " The `{}` of the variants that hold one ({}); `None` for the others.",
                    a.name,
                    holders.join(", ")
                )
            };
            let wildcard = (!a.in_every_variant).then(|| quote!(_ => None,));
            quote! {
                #[doc = #doc]
                #[must_use]
                pub fn #method(&self) -> Option<&#target> {
                    match self {
                        #(#arms)*
                        #wildcard
                    }
                }
            }
        }
    });
    quote! {
        impl #name {
            #(#methods)*
        }
    }
}
