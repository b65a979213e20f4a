//! Emission of `Validate`: the constraints of a value built in memory (docs/PROTOCOL.md section 4).
//!
//! A newtype checks its own constraints; a struct checks its field-level constraints and
//! recurses into every field, adding the wire key to the error path; an enum delegates to the
//! variant it holds.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Container, Element, Newtype, Presence, Struct, Tuple, Union, VariantKind};
use crate::checks;

/// `impl Validate` for a newtype: its checks, then the inner value's own validation.
pub fn newtype(cont: &Container<'_>, newtype: &Newtype<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let inner = newtype.inner;
    let body = if newtype.text {
        quote!(#ident::__codec_check(self.as_str()))
    } else {
        quote! {
            #ident::__codec_check(&self.0)?;
            <#inner as #krate::Validate>::validate(&self.0)
        }
    };
    quote! {
        #[automatically_derived]
        impl #krate::Validate for #ident {
            fn validate(&self) -> ::core::result::Result<(), #krate::ProtocolError> {
                #body
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
        let checks = checks::statements(krate, &quote!(__value), value_ty, &field.checks, &quote!(.at(#key)), 0);
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
            Presence::OptionalNullable => quote! {
                if let ::core::option::Option::Some(::core::option::Option::Some(__value)) = &self.#member {
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

/// `impl Validate` for a tuple struct: each element's checks and own validation, the error
/// naming its position.
pub fn tuple(cont: &Container<'_>, data: &Tuple<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let elements = data.elements.iter().enumerate().filter_map(|(position, element)| {
        let Element::Field { index, ty, checks } = element else { return None };
        let at = proc_macro2::Literal::u64_unsuffixed(position as u64);
        let checks = checks::statements(krate, &quote!(__value), ty, checks, &quote!(.at_index(#at)), 0);
        Some(quote_spanned! {ty.span()=>
            {
                let __value = &self.#index;
                #checks
                <#ty as #krate::Validate>::validate(__value).map_err(|e| e.at_index(#at))?;
            }
        })
    });
    quote! {
        #[automatically_derived]
        impl #krate::Validate for #ident {
            fn validate(&self) -> ::core::result::Result<(), #krate::ProtocolError> {
                #(#elements)*
                ::core::result::Result::Ok(())
            }
        }
    }
}

/// `impl Validate` for an enum: the variant's own validation (unit variants are always valid).
pub fn union(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let arms = union.variants.iter().map(|variant| {
        let name = variant.ident;
        match &variant.kind {
            VariantKind::Wrap(ty) => {
                let validate = quote_spanned!(ty.span()=> <#ty as #krate::Validate>::validate(__inner));
                quote!(#ident::#name(__inner) => #validate,)
            }
            VariantKind::Unit(_) => quote!(#ident::#name => ::core::result::Result::Ok(()),),
        }
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
