//! Emission of `Validate`: the constraints of a value built in memory (docs/PROTOCOL.md section 4).
//!
//! A newtype checks its own constraints; a struct checks its field-level constraints and
//! recurses into every field, adding the wire key to the error path; an enum delegates to the
//! variant it holds.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Container, Presence, Struct, Union};
use crate::checks;

/// `impl Validate` for a string newtype.
pub fn newtype(cont: &Container<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    quote! {
        #[automatically_derived]
        impl #krate::Validate for #ident {
            fn validate(&self) -> ::core::result::Result<(), #krate::ProtocolError> {
                #ident::__codec_check(self.as_str())
            }
        }
    }
}

/// `impl Validate` for a map-shaped struct.
pub fn structure(cont: &Container<'_>, data: &Struct<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let fields = data.fields().map(|field| {
        let key = field.key.as_str();
        let member = field.member;
        let value_ty = field.value_ty;
        let checks = checks::field_statements(krate, &quote!(__value), &field.checks, key);
        let recurse = quote_spanned! {value_ty.span()=>
            <#value_ty as #krate::Validate>::validate(__value).map_err(|e| e.at(#key))?;
        };
        let body = quote! {
            #checks
            #recurse
        };
        match field.presence {
            Presence::Required => quote! {
                {
                    let __value = &self.#member;
                    #body
                }
            },
            Presence::Optional | Presence::Nullable => quote! {
                if let ::core::option::Option::Some(__value) = &self.#member {
                    #body
                }
            },
        }
    });
    quote! {
        #[automatically_derived]
        impl #krate::Validate for #ident {
            fn validate(&self) -> ::core::result::Result<(), #krate::ProtocolError> {
                #(#fields)*
                ::core::result::Result::Ok(())
            }
        }
    }
}

/// `impl Validate` for an enum of either kind: the variant's own validation.
pub fn union(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let arms = union.variants.iter().map(|variant| {
        let name = variant.ident;
        let ty = variant.ty;
        let validate = quote_spanned!(ty.span()=> <#ty as #krate::Validate>::validate(__inner));
        quote!(#ident::#name(__inner) => #validate,)
    });
    quote! {
        #[automatically_derived]
        impl #krate::Validate for #ident {
            fn validate(&self) -> ::core::result::Result<(), #krate::ProtocolError> {
                match self {
                    #(#arms)*
                }
            }
        }
    }
}
