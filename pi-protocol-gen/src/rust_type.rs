//! The Rust type a model [`Shape`] becomes, as tokens: what the emitted fields, newtypes and
//! constructors (`emit`) and the shared-field accessors (`accessors`) both write.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::model::{Shape, TypeExpr};

/// The Rust type of a shape: a named type (boxed when the model says so), a leaf type of the
/// runtime, or `Vec`, `Record` or `Option` of the inner shape's type.
pub(crate) fn type_tokens(shape: &Shape) -> TokenStream {
    match &shape.ty {
        TypeExpr::Named { name, boxed } => {
            let name = format_ident!("{}", name);
            if *boxed {
                quote!(Box<#name>)
            } else {
                quote!(#name)
            }
        }
        TypeExpr::String => quote!(String),
        TypeExpr::Integer => quote!(Integer),
        TypeExpr::Number => quote!(Number),
        TypeExpr::Boolean => quote!(bool),
        TypeExpr::Null => quote!(Null),
        TypeExpr::Payload => quote!(Payload),
        TypeExpr::Array(inner) => {
            let inner = type_tokens(inner);
            quote!(Vec<#inner>)
        }
        TypeExpr::Record(record) => {
            let values = type_tokens(&record.values);
            quote!(Record<#values>)
        }
        TypeExpr::Nullable(inner) => {
            let inner = type_tokens(inner);
            quote!(Option<#inner>)
        }
    }
}
