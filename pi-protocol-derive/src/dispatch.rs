//! Emission of what unions dispatch on: `Tagged` and `KeySet` for structs, `Tagged` for tagged
//! enums, and `From<Variant>` for both enum kinds.

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Container, Struct, Union};
use crate::attr::LitValue;

/// `impl Tagged` for a struct: it accepts exactly its literal keys with their values.
pub fn struct_tagged(cont: &Container<'_>, data: &Struct<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let arms: Vec<TokenStream> = data
        .literals()
        .map(|literal| {
            let key = literal.key.as_str();
            let test = match &literal.value {
                LitValue::Text(text) => quote!(__value.is_text(#text)),
                LitValue::Bool(b) => quote!(__value.is_bool(#b)),
                LitValue::Integer(n) => {
                    #[allow(clippy::cast_precision_loss)] // within +-(2^53 - 1): exact.
                    let n = Literal::f64_unsuffixed(*n as f64);
                    quote!(__value.is_number(#n))
                }
            };
            quote!(#key => #test,)
        })
        .collect();
    let body = if arms.is_empty() {
        quote! {
            let _ = (__key, __value);
            false
        }
    } else {
        quote! {
            match __key {
                #(#arms)*
                _ => false,
            }
        }
    };
    quote! {
        #[automatically_derived]
        impl #krate::Tagged for #ident {
            fn accepts(__key: &str, __value: &#krate::Scalar<'_>) -> bool {
                #body
            }
        }
    }
}

/// `impl KeySet` for a struct: every wire key in canonical order, and the required ones.
pub fn struct_key_set(cont: &Container<'_>, data: &Struct<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let keys = data.entries.iter().map(|e| e.key());
    let required = data.entries.iter().filter(|e| e.is_required()).map(|e| e.key());
    quote! {
        #[automatically_derived]
        impl #krate::KeySet for #ident {
            const KEYS: &'static [&'static str] = &[#(#keys),*];
            const REQUIRED: &'static [&'static str] = &[#(#required),*];
        }
    }
}

/// `impl Tagged` for a tagged enum: it accepts what any of its variants accepts, so a tagged
/// enum can itself be the variant of an outer tagged enum (`Response` inside `ServerMessage`).
pub fn enum_tagged(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let tests = union.variants.iter().map(|variant| {
        let ty = variant.ty;
        quote_spanned!(ty.span()=> <#ty as #krate::Tagged>::accepts(__key, __value))
    });
    quote! {
        #[automatically_derived]
        impl #krate::Tagged for #ident {
            fn accepts(__key: &str, __value: &#krate::Scalar<'_>) -> bool {
                #(#tests)||*
            }
        }
    }
}

/// `impl From<T> for Enum` for every variant `V(T)` whose type no other variant shares.
pub fn enum_from(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let ident = cont.ident;
    let impls = union.variants.iter().filter(|v| v.unique_type).map(|variant| {
        let ty = variant.ty;
        let name = variant.ident;
        let doc = format!("Wraps the value as [`{ident}::{name}`].");
        quote! {
            #[automatically_derived]
            impl ::core::convert::From<#ty> for #ident {
                #[doc = #doc]
                fn from(value: #ty) -> Self {
                    #ident::#name(value)
                }
            }
        }
    });
    quote!(#(#impls)*)
}
