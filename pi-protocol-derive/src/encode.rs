//! Emission of `Encode`: canonical CBOR (docs/PROTOCOL.md section 3).
//!
//! A struct writes a map header counting literals, required and nullable fields and the
//! optional fields that are present, then every key in canonical order; absent optional
//! fields are omitted, `None` of a nullable field is written as `null`.

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Container, Element, Entry, Newtype, Presence, Struct, Tuple, Union, VariantKind};
use crate::attr::LitValue;

/// `impl Encode` for a newtype: its inner value (a text newtype: one text string).
pub fn newtype(cont: &Container<'_>, newtype: &Newtype<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let inner = newtype.inner;
    let body = if newtype.text {
        quote!(__writer.text(self.as_str());)
    } else {
        quote!(<#inner as #krate::Encode>::encode(&self.0, __writer);)
    };
    quote! {
        #[automatically_derived]
        impl #krate::Encode for #ident {
            fn encode(&self, __writer: &mut #krate::Writer) {
                #body
            }
        }
    }
}

/// Statements writing a literal value.
pub fn write_literal(value: &LitValue) -> TokenStream {
    match value {
        LitValue::Text(text) => quote!(__writer.text(#text);),
        LitValue::Bool(b) => quote!(__writer.bool(#b);),
        LitValue::Number(n) => {
            let n = Literal::f64_suffixed(*n);
            quote!(__writer.number(#n);)
        }
        LitValue::Null => quote!(__writer.null();),
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
                let value = write_literal(&literal.value);
                writes.push(quote! {
                    __writer.text(#key);
                    #value
                });
            }
            Entry::Field(field) => {
                let member = field.member;
                let value_ty = field.value_ty;
                let encode =
                    quote_spanned!(value_ty.span()=> <#value_ty as #krate::Encode>::encode(__value, __writer););
                if matches!(field.presence, Presence::Optional | Presence::OptionalNullable) {
                    optional_counts.push(quote! {
                        if self.#member.is_some() {
                            __len += 1;
                        }
                    });
                }
                let nullable = quote! {
                    match __nullable {
                        ::core::option::Option::Some(__value) => {
                            #encode
                        }
                        ::core::option::Option::None => __writer.null(),
                    }
                };
                writes.push(match field.presence {
                    Presence::Required => quote! {
                        __writer.text(#key);
                        let __value = &self.#member;
                        #encode
                    },
                    Presence::Optional => quote! {
                        if let ::core::option::Option::Some(__value) = &self.#member {
                            __writer.text(#key);
                            #encode
                        }
                    },
                    Presence::Nullable => quote! {
                        __writer.text(#key);
                        let __nullable = &self.#member;
                        #nullable
                    },
                    Presence::OptionalNullable => quote! {
                        if let ::core::option::Option::Some(__nullable) = &self.#member {
                            __writer.text(#key);
                            #nullable
                        }
                    },
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

/// `impl Encode` for a tuple struct: an array of its elements in position order.
pub fn tuple(cont: &Container<'_>, data: &Tuple<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let len = Literal::usize_unsuffixed(data.elements.len());
    let writes = data.elements.iter().map(|element| match element {
        Element::Literal(value) => write_literal(value),
        Element::Field { index, ty, .. } => {
            quote_spanned!(ty.span()=> <#ty as #krate::Encode>::encode(&self.#index, __writer);)
        }
    });
    quote! {
        #[automatically_derived]
        impl #krate::Encode for #ident {
            fn encode(&self, __writer: &mut #krate::Writer) {
                __writer.array_header(#len);
                #(#writes)*
            }
        }
    }
}

/// `impl Encode` for an enum: the variant's own encoding, or a unit variant's value.
pub fn union(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let arms = union.variants.iter().map(|variant| {
        let name = variant.ident;
        match &variant.kind {
            VariantKind::Wrap(ty) => {
                let encode = quote_spanned!(ty.span()=> <#ty as #krate::Encode>::encode(__inner, __writer));
                quote!(#ident::#name(__inner) => #encode,)
            }
            VariantKind::Unit(value) => {
                let write = write_literal(value);
                quote!(#ident::#name => { #write })
            }
        }
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
