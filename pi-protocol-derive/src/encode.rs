//! Emission of `Encode`: canonical CBOR (docs/PROTOCOL.md section 3).
//!
//! A struct writes a map header counting literals, required and nullable fields and the
//! optional fields that are present, then every key in canonical order; absent optional
//! fields are omitted, `None` of a nullable field is written as `null`.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Container, Entry, Presence, Struct, Union};
use crate::attr::LitValue;

/// `impl Encode` for a string newtype: one text string.
pub fn newtype(cont: &Container<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    quote! {
        #[automatically_derived]
        impl #krate::Encode for #ident {
            fn encode(&self, __writer: &mut #krate::Writer) {
                __writer.text(self.as_str());
            }
        }
    }
}

/// `impl Encode` for a map-shaped struct.
pub fn structure(cont: &Container<'_>, data: &Struct<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let fixed = Literal::usize_unsuffixed(data.entries.iter().filter(|e| e.is_required()).count());
    let mut optional_counts = Vec::new();
    let mut writes = Vec::new();
    for entry in &data.entries {
        let key = entry.key();
        match entry {
            Entry::Literal(literal) => {
                let value = match &literal.value {
                    LitValue::Text(text) => quote!(__writer.text(#text);),
                    LitValue::Bool(b) => quote!(__writer.bool(#b);),
                    LitValue::Integer(n) => {
                        let n = Literal::i64_suffixed(*n);
                        quote!(__writer.integer(#n);)
                    }
                };
                writes.push(quote! {
                    __writer.text(#key);
                    #value
                });
            }
            Entry::Field(field) => {
                let member = field.member;
                let value_ty = field.value_ty;
                let encode = |value: TokenStream| quote_spanned!(value_ty.span()=> <#value_ty as #krate::Encode>::encode(#value, __writer););
                writes.push(match field.presence {
                    Presence::Required => {
                        let encode = encode(quote!(&self.#member));
                        quote! {
                            __writer.text(#key);
                            #encode
                        }
                    }
                    Presence::Optional => {
                        optional_counts.push(quote! {
                            if self.#member.is_some() {
                                __len += 1;
                            }
                        });
                        let value = format_ident!("__value");
                        let encode = encode(quote!(#value));
                        quote! {
                            if let ::core::option::Option::Some(#value) = &self.#member {
                                __writer.text(#key);
                                #encode
                            }
                        }
                    }
                    Presence::Nullable => {
                        let value = format_ident!("__value");
                        let encode = encode(quote!(#value));
                        quote! {
                            __writer.text(#key);
                            match &self.#member {
                                ::core::option::Option::Some(#value) => {
                                    #encode
                                }
                                ::core::option::Option::None => __writer.null(),
                            }
                        }
                    }
                });
            }
        }
    }
    let header = if optional_counts.is_empty() {
        quote!(__writer.map_header(#fixed);)
    } else {
        quote! {
            let mut __len: usize = #fixed;
            #(#optional_counts)*
            __writer.map_header(__len);
        }
    };
    quote! {
        #[automatically_derived]
        impl #krate::Encode for #ident {
            fn encode(&self, __writer: &mut #krate::Writer) {
                #header
                #(#writes)*
            }
        }
    }
}

/// `impl Encode` for an enum of either kind: the variant's own encoding.
pub fn union(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let arms = union.variants.iter().map(|variant| {
        let name = variant.ident;
        let ty = variant.ty;
        let encode = quote_spanned!(ty.span()=> <#ty as #krate::Encode>::encode(__inner, __writer));
        quote!(#ident::#name(__inner) => #encode,)
    });
    quote! {
        #[automatically_derived]
        impl #krate::Encode for #ident {
            fn encode(&self, __writer: &mut #krate::Writer) {
                match self {
                    #(#arms)*
                }
            }
        }
    }
}
