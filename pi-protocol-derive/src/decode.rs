//! Emission of `Decode<'de>` for every shape.
//!
//! Structs read the map in one pass: each key is matched against the wire keys of the type
//! (a `match` on the key's bytes), duplicates and unknown keys stop the decode at once, and
//! missing required keys are reported after the last entry. Every map-shaped type also gets
//! `DecodeMap`, which decodes the entries after the map's head: a tagged enum reads its tag
//! when the map starts with it and hands the reader on to the variant (a peek is needed only
//! when the tag comes later); a key-set enum peeks at the keys, picks the variant and hands on.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Container, Entry, Presence, Struct, Union};
use crate::attr::LitValue;
use crate::checks;

/// `impl Decode<'de>` for a string newtype: a text string meeting the type's constraints.
pub fn newtype(cont: &Container<'_>, storage: &syn::Type) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    quote! {
        #[automatically_derived]
        impl<'de> #krate::Decode<'de> for #ident {
            #[inline]
            fn decode(__reader: &mut #krate::Reader<'de>) -> ::core::result::Result<Self, #krate::ProtocolError> {
                let __text: &'de str = __reader.read_text()?;
                #ident::__codec_check(__text)?;
                match <#storage as #krate::TextStorage>::store(__text) {
                    ::core::option::Option::Some(__stored) => ::core::result::Result::Ok(#ident(__stored)),
                    // Only a fixed capacity below the text's length; the derive rules that out.
                    ::core::option::Option::None => {
                        ::core::result::Result::Err(#krate::ProtocolError::schema(#krate::Rule::Pattern))
                    }
                }
            }
        }
    }
}

/// `impl Decode<'de>` for a map-shaped struct.
pub fn structure(cont: &Container<'_>, data: &Struct<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let error = quote!(#krate::ProtocolError);
    let rule = quote!(#krate::Rule);
    let duplicate = quote!(return ::core::result::Result::Err(#error::cbor(#rule::DuplicateKey)));

    let mut slots = Vec::new();
    let mut arms = Vec::new();
    let mut consumed_arms = Vec::new();
    let mut finish = Vec::new();
    let mut members = Vec::new();
    for (index, entry) in data.entries.iter().enumerate() {
        let key = entry.key();
        // Keys are matched as bytes: a key equal to a schema key is valid UTF-8, and an unknown
        // key ends the decode anyway (the CBOR rescan then reports invalid UTF-8 first).
        let key_bytes = proc_macro2::Literal::byte_string(key.as_bytes());
        let missing = quote!(return ::core::result::Result::Err(#error::schema(#rule::MissingField).at(#key)));
        match entry {
            Entry::Literal(literal) => {
                let seen = format_ident!("__seen{}", index);
                let test = match &literal.value {
                    LitValue::Text(text) => quote!(__value.is_text(#text)),
                    LitValue::Bool(b) => quote!(__value.is_bool(#b)),
                    LitValue::Integer(n) => {
                        // An integral float64 equals the integer (version 8.0 is version 8).
                        #[allow(clippy::cast_precision_loss)] // within +-(2^53 - 1): exact.
                        let n = proc_macro2::Literal::f64_unsuffixed(*n as f64);
                        quote!(__value.is_number(#n))
                    }
                };
                slots.push(quote!(let mut #seen = false;));
                let check = quote! {
                    if #seen {
                        #duplicate;
                    }
                    #seen = true;
                    if !#test {
                        return ::core::result::Result::Err(#error::schema(#rule::Literal).at(#key));
                    }
                };
                arms.push((
                    key_bytes.clone(),
                    quote! {
                        let __value = __reader.read_scalar().map_err(|e| e.at(#key))?;
                        #check
                    },
                ));
                consumed_arms.push(quote! {
                    if #krate::key_equals(__key, #key_bytes) {
                        #check
                        continue;
                    }
                });
                finish.push(quote! {
                    if !#seen {
                        #missing;
                    }
                });
            }
            Entry::Field(field) => {
                let slot = format_ident!("__field{}", index);
                let ty = field.ty;
                let value_ty = field.value_ty;
                let checks = checks::field_statements(krate, &quote!(&__value), &field.checks, key);
                let read = quote_spanned! {value_ty.span()=>
                    <#value_ty as #krate::Decode<'de>>::decode(__reader)
                };
                let read = if checks.is_empty() {
                    quote!(#read.map_err(|e| e.at(#key))?)
                } else {
                    quote! {
                        {
                            let __value = #read.map_err(|e| e.at(#key))?;
                            #checks
                            __value
                        }
                    }
                };
                let store = match field.presence {
                    Presence::Required => read,
                    Presence::Optional => quote!(::core::option::Option::Some(#read)),
                    Presence::Nullable => quote! {
                        if __reader.peek_null() {
                            __reader.read_null().map_err(|e| e.at(#key))?;
                            ::core::option::Option::None
                        } else {
                            ::core::option::Option::Some(#read)
                        }
                    },
                };
                slots.push(quote!(let mut #slot: ::core::option::Option<#ty> = ::core::option::Option::None;));
                arms.push((
                    key_bytes,
                    quote! {
                        if #slot.is_some() {
                            #duplicate;
                        }
                        #slot = ::core::option::Option::Some(#store);
                    },
                ));
                finish.push(match field.presence {
                    Presence::Optional => quote!(let #slot = ::core::option::Option::flatten(#slot);),
                    Presence::Required | Presence::Nullable => quote! {
                        let ::core::option::Option::Some(#slot) = #slot else {
                            #missing;
                        };
                    },
                });
                let member = field.member;
                members.push(quote!(#member: #slot));
            }
        }
    }
    // Literal entries a union already read (its tag) are checked like entries on the wire.
    let consumed = quote! {
        for &(__key, __value) in __consumed {
            #(#consumed_arms)*
            return ::core::result::Result::Err(#error::schema(#rule::UnknownField));
        }
    };
    // Each key is compared word-wise with `key_equals` (a `match` on byte strings compares
    // byte by byte).
    let (arm_keys, arm_bodies): (Vec<_>, Vec<_>) = arms.into_iter().unzip();
    let decode = decode_via_entries(cont);
    quote! {
        #decode

        #[automatically_derived]
        impl<'de> #krate::DecodeMap<'de> for #ident {
            #[inline]
            fn decode_entries(
                __reader: &mut #krate::Reader<'de>,
                __count: usize,
                __consumed: &[#krate::LiteralEntry<'de>],
            ) -> ::core::result::Result<Self, #error> {
                #(#slots)*
                #consumed
                for _ in 0..__count {
                    let __key = __reader.read_key_raw()?;
                    #(
                        if #krate::key_equals(__key, #arm_keys) {
                            #arm_bodies
                            continue;
                        }
                    )*
                    return ::core::result::Result::Err(#error::schema(#rule::UnknownField));
                }
                __reader.leave();
                #(#finish)*
                ::core::result::Result::Ok(#ident { #(#members),* })
            }
        }
    }
}

/// `impl Decode<'de>` for a map-shaped type: enter the map, then decode its entries
/// (`DecodeMap`) with nothing consumed yet.
fn decode_via_entries(cont: &Container<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    quote! {
        #[automatically_derived]
        impl<'de> #krate::Decode<'de> for #ident {
            #[inline]
            fn decode(__reader: &mut #krate::Reader<'de>) -> ::core::result::Result<Self, #krate::ProtocolError> {
                let __count = __reader.enter_map()?;
                <#ident as #krate::DecodeMap<'de>>::decode_entries(__reader, __count, &[])
            }
        }
    }
}

/// `impl Decode<'de>` and `DecodeMap<'de>` for a tagged enum: take the tag's value from the
/// entries already consumed, or read it when it is the next key (consuming it), or peek for it
/// further on; then let the first variant whose type accepts it decode the rest of the map.
pub fn tagged(cont: &Container<'_>, union: &Union<'_>, tag: &str) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let tag_bytes = proc_macro2::Literal::byte_string(tag.as_bytes());
    let attempts = union.variants.iter().map(|variant| {
        let ty = variant.ty;
        let name = variant.ident;
        quote_spanned! {ty.span()=>
            if <#ty as #krate::Tagged>::accepts(#tag, &__tag) {
                return <#ty as #krate::DecodeMap<'de>>::decode_entries(__reader, __count, __consumed).map(#ident::#name);
            }
        }
    });
    let decode = decode_via_entries(cont);
    quote! {
        #decode

        #[automatically_derived]
        impl<'de> #krate::DecodeMap<'de> for #ident {
            #[inline]
            fn decode_entries(
                __reader: &mut #krate::Reader<'de>,
                __count: usize,
                __consumed: &[#krate::LiteralEntry<'de>],
            ) -> ::core::result::Result<Self, #krate::ProtocolError> {
                let mut __held: [#krate::LiteralEntry<'de>; #krate::MAX_CONSUMED_ENTRIES] =
                    [(b"", #krate::Scalar::Null); #krate::MAX_CONSUMED_ENTRIES];
                let (__tag, __consumed, __count) = match __consumed.iter().find(|__entry| #krate::key_equals(__entry.0, #tag_bytes)) {
                    ::core::option::Option::Some(&(_, __value)) => (__value, __consumed, __count),
                    ::core::option::Option::None
                        if __count > 0
                            && __consumed.len() < #krate::MAX_CONSUMED_ENTRIES
                            && __reader.next_key_is(#tag_bytes) =>
                    {
                        __reader.read_key_raw()?;
                        let __value = __reader.read_scalar()?;
                        __held[..__consumed.len()].copy_from_slice(__consumed);
                        __held[__consumed.len()] = (#tag_bytes, __value);
                        (__value, &__held[..__consumed.len() + 1], __count - 1)
                    }
                    ::core::option::Option::None => match __reader.peek_entries_value(__count, #tag)? {
                        ::core::option::Option::Some(__value) => (__value, __consumed, __count),
                        ::core::option::Option::None => {
                            return ::core::result::Result::Err(
                                #krate::ProtocolError::schema(#krate::Rule::MissingField).at(#tag)
                            );
                        }
                    },
                };
                #(#attempts)*
                ::core::result::Result::Err(#krate::ProtocolError::schema(#krate::Rule::Literal).at(#tag))
            }
        }
    }
}

/// `impl Decode<'de>` and `DecodeMap<'de>` for a key-set enum: list the map's keys (those
/// consumed and, by a peek, those ahead), let the first variant whose key set they fit decode
/// the rest of the map; skip the peek when the entry count alone singles out a variant.
pub fn key_set(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let lengths: Vec<TokenStream> = union
        .variants
        .iter()
        .map(|variant| {
            let ty = variant.ty;
            quote_spanned!(ty.span()=> <#ty as #krate::KeySet>::KEYS.len())
        })
        .collect();
    let attempts = union.variants.iter().map(|variant| {
        let ty = variant.ty;
        let name = variant.ident;
        quote_spanned! {ty.span()=>
            if <#ty as #krate::KeySet>::matches_key_bytes(__keys) {
                return <#ty as #krate::DecodeMap<'de>>::decode_entries(__reader, __count, __consumed).map(#ident::#name);
            }
        }
    });
    // Without a peek: when the number of entries fits one variant's range (from its required
    // keys to all its keys) and no other's, that variant is tried directly. If it decodes, the
    // map has exactly its entry count of distinct keys, all known to it and its required ones
    // among them, so it is the one variant whose key set fits: the peek would pick it too. If
    // it fails, the reader is restored and the peek decides (and reports) as always.
    let by_count = union.variants.iter().map(|variant| {
        let ty = variant.ty;
        quote_spanned!(ty.span()=>
            <#ty as #krate::KeySet>::REQUIRED.len() <= __total && __total <= <#ty as #krate::KeySet>::KEYS.len()
        )
    });
    let trials = union.variants.iter().enumerate().map(|(index, variant)| {
        let ty = variant.ty;
        let name = variant.ident;
        quote_spanned! {ty.span()=>
            if __fits[#index] {
                if let ::core::result::Result::Ok(__value) =
                    <#ty as #krate::DecodeMap<'de>>::decode_entries(__reader, __count, __consumed)
                {
                    return ::core::result::Result::Ok(#ident::#name(__value));
                }
            }
        }
    });
    let decode = decode_via_entries(cont);
    quote! {
        #decode

        #[automatically_derived]
        impl<'de> #krate::DecodeMap<'de> for #ident {
            #[inline]
            fn decode_entries(
                __reader: &mut #krate::Reader<'de>,
                __count: usize,
                __consumed: &[#krate::LiteralEntry<'de>],
            ) -> ::core::result::Result<Self, #krate::ProtocolError> {
                let __total = __count + __consumed.len();
                let __fits = [#(#by_count),*];
                if __fits.iter().filter(|__fit| **__fit).count() == 1 {
                    let __saved = __reader.clone();
                    #(#trials)*
                    *__reader = __saved;
                }
                const __MAX_KEYS: usize = {
                    let mut __max = 0usize;
                    #(
                        let __len = #lengths;
                        if __len > __max {
                            __max = __len;
                        }
                    )*
                    __max
                };
                let mut __buffer: [&'de [u8]; __MAX_KEYS] = [b""; __MAX_KEYS];
                if __consumed.len() > __MAX_KEYS {
                    return ::core::result::Result::Err(#krate::ProtocolError::schema(#krate::Rule::NoVariant));
                }
                for (__slot, __entry) in __buffer.iter_mut().zip(__consumed) {
                    *__slot = __entry.0;
                }
                let ::core::option::Option::Some(__ahead) =
                    __reader.peek_entries_keys_into(__count, &mut __buffer[__consumed.len()..])?
                else {
                    return ::core::result::Result::Err(#krate::ProtocolError::schema(#krate::Rule::NoVariant));
                };
                let __keys = &__buffer[..__consumed.len() + __ahead];
                #(#attempts)*
                ::core::result::Result::Err(#krate::ProtocolError::schema(#krate::Rule::NoVariant))
            }
        }
    }
}
