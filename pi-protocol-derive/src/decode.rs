//! Emission of `Decode<'de>` for every shape.
//!
//! Structs read the map in one pass: each key is matched against the wire keys of the type,
//! duplicates and unknown keys stop the decode at once, and missing required keys are reported
//! after the last entry. Map-shaped types also implement `Decode::decode_entries`, which decodes
//! the entries after the map's head: a tagged union reads its tag when the map starts with it and
//! hands the reader on to the variant (a peek is needed only when the tag comes later); a union
//! told apart by several tags or by its key set peeks, picks the variant and hands on.
//!
//! A union first narrows its variants by the JSON type of the item (`Decode::TYPES`); when all
//! its variants are maps this costs nothing (the test is a constant).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Container, Dispatch, Element, Entry, Newtype, Presence, Struct, Tuple, Union, VariantKind};
use crate::attr::LitValue;
use crate::checks;

/// `impl Decode<'de>` for a newtype: the inner value, then the type's checks.
pub fn newtype(cont: &Container<'_>, newtype: &Newtype<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let storage = newtype.inner;
    let body = if newtype.text {
        quote! {
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
    } else {
        quote! {
            let __inner = <#storage as #krate::Decode<'de>>::decode(__reader)?;
            #ident::__codec_check(&__inner)?;
            ::core::result::Result::Ok(#ident(__inner))
        }
    };
    let types =
        if newtype.text { quote!(#krate::JsonTypes::STRING) } else { quote!(<#storage as #krate::Decode<'de>>::TYPES) };
    quote! {
        #[automatically_derived]
        impl<'de> #krate::Decode<'de> for #ident {
            const TYPES: #krate::JsonTypes = #types;

            #[inline]
            fn decode(__reader: &mut #krate::Reader<'de>) -> ::core::result::Result<Self, #krate::ProtocolError> {
                #body
            }
        }
    }
}

/// The test of a literal value against a `Scalar` bound to `__value`.
pub fn literal_test(krate: &syn::Path, value: &LitValue) -> TokenStream {
    match value {
        LitValue::Text(text) => quote!(__value.is_text(#text)),
        LitValue::Bool(b) => quote!(__value.is_bool(#b)),
        // An integral float64 equals the integer (version 8.0 is version 8).
        LitValue::Number(n) => {
            let n = proc_macro2::Literal::f64_unsuffixed(*n);
            quote!(__value.is_number(#n))
        }
        LitValue::Null => quote!(::core::matches!(__value, #krate::Scalar::Null)),
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
                let test = literal_test(krate, &literal.value);
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
                let value_ty = field.value_ty;
                let checks =
                    checks::statements(krate, &quote!(&__value), value_ty, &field.checks, &quote!(.at(#key)), 0);
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
                let nullable = quote! {
                    if __reader.peek_null() {
                        __reader.read_null().map_err(|e| e.at(#key))?;
                        ::core::option::Option::None
                    } else {
                        ::core::option::Option::Some(#read)
                    }
                };
                // The slot holds what was read: the value, or (nullable) `Option` of it.
                let (slot_ty, store) = match field.presence {
                    Presence::Required | Presence::Optional => (quote!(#value_ty), read),
                    Presence::Nullable | Presence::OptionalNullable => {
                        (quote!(::core::option::Option<#value_ty>), nullable)
                    }
                };
                slots.push(quote!(let mut #slot: ::core::option::Option<#slot_ty> = ::core::option::Option::None;));
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
                    Presence::Optional | Presence::OptionalNullable => TokenStream::new(),
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
    quote! {
        #[automatically_derived]
        impl<'de> #krate::Decode<'de> for #ident {
            const TYPES: #krate::JsonTypes = #krate::JsonTypes::OBJECT;

            #[inline]
            fn decode(__reader: &mut #krate::Reader<'de>) -> ::core::result::Result<Self, #krate::ProtocolError> {
                let __count = __reader.enter_map()?;
                <#ident as #krate::Decode<'de>>::decode_entries(__reader, __count, &[])
            }

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

/// `impl Decode<'de>` for a tuple struct: an array of exactly its length (`MinItems` or
/// `MaxItems` at the array otherwise), each element read in turn, a literal checked
/// (`Literal`), a value decoded and checked; errors name the element (`[2]`).
pub fn tuple(cont: &Container<'_>, data: &Tuple<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let error = quote!(#krate::ProtocolError);
    let rule = quote!(#krate::Rule);
    let len = data.elements.len();
    let len_u64 = proc_macro2::Literal::u64_unsuffixed(len as u64);
    let mut reads = Vec::new();
    let mut fields = Vec::new();
    for (position, element) in data.elements.iter().enumerate() {
        let at = proc_macro2::Literal::u64_unsuffixed(position as u64);
        match element {
            Element::Literal(value) => {
                let test = literal_test(krate, value);
                reads.push(quote! {
                    let __value = __reader.read_scalar().map_err(|e| e.at_index(#at))?;
                    if !#test {
                        return ::core::result::Result::Err(#error::schema(#rule::Literal).at_index(#at));
                    }
                });
            }
            Element::Field { index, ty, checks } => {
                let slot = format_ident!("__element{}", index.index);
                let check = checks::statements(krate, &quote!(&#slot), ty, checks, &quote!(.at_index(#at)), 0);
                reads.push(quote_spanned! {ty.span()=>
                    let #slot = <#ty as #krate::Decode<'de>>::decode(__reader).map_err(|e| e.at_index(#at))?;
                });
                reads.push(check);
                fields.push(slot);
            }
        }
    }
    quote! {
        #[automatically_derived]
        impl<'de> #krate::Decode<'de> for #ident {
            const TYPES: #krate::JsonTypes = #krate::JsonTypes::ARRAY;

            #[inline]
            fn decode(__reader: &mut #krate::Reader<'de>) -> ::core::result::Result<Self, #error> {
                let __count = __reader.enter_array()?;
                if __count < #len {
                    return ::core::result::Result::Err(#error::schema(#rule::MinItems { min: #len_u64 }));
                }
                if __count > #len {
                    return ::core::result::Result::Err(#error::schema(#rule::MaxItems { max: #len_u64 }));
                }
                #(#reads)*
                __reader.leave();
                ::core::result::Result::Ok(#ident(#(#fields),*))
            }
        }
    }
}

/// `impl Decode<'de>` for an enum.
///
/// `decode` looks at the JSON type of the item: a map goes to `decode_entries` when the enum
/// tells maps apart (tags, key sets), any other item to the unit variants whose value has its
/// type, then to the first tuple variant whose type can hold it. `decode_entries` picks among
/// the map-shaped variants by the enum's dispatch.
pub fn union(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let error = quote!(#krate::ProtocolError);
    let json_types = quote!(#krate::JsonTypes);

    let types = union.variants.iter().map(|variant| match &variant.kind {
        VariantKind::Wrap(ty) => quote_spanned!(ty.span()=> <#ty as #krate::Decode<'de>>::TYPES),
        VariantKind::Unit(value) => literal_type(krate, value),
    });
    // Whether some item other than a map can be a value of the enum (a constant: for unions of
    // maps the test below folds away).
    let map_dispatch = !matches!(union.dispatch, Dispatch::ByType);
    let has_units = union.units().next().is_some();
    let non_map = union
        .wrapped()
        .map(|(_, ty)| quote_spanned!(ty.span()=> (<#ty as #krate::Decode<'de>>::TYPES != #json_types::OBJECT)));
    let non_map = quote!(#has_units #(|| #non_map)*);

    let unit_tests = union.units().map(|(variant, value)| {
        let name = variant.ident;
        let test = literal_test(krate, value);
        let ty = literal_type(krate, value);
        quote! {
            if #ty.contains(__type) {
                let mut __probe = __reader.clone();
                let __value = __probe.read_scalar()?;
                if #test {
                    *__reader = __probe;
                    return ::core::result::Result::Ok(#ident::#name);
                }
            }
        }
    });
    let wrap_attempts = union.wrapped().map(|(variant, ty)| {
        let name = variant.ident;
        quote_spanned! {ty.span()=>
            if <#ty as #krate::Decode<'de>>::TYPES.contains(__type) {
                return <#ty as #krate::Decode<'de>>::decode(__reader).map(#ident::#name);
            }
        }
    });
    let unit_types = union.units().map(|(_, value)| literal_type(krate, value));
    // `tuples`: an array goes to the first variant that accepts its length and first element.
    let tuple_dispatch = union.tuples.then(|| {
        let attempts = union.wrapped().map(|(variant, ty)| {
            let name = variant.ident;
            quote_spanned! {ty.span()=>
                if <#ty as #krate::Decode<'de>>::TYPES.contains(#json_types::ARRAY)
                    && <#ty as #krate::Positional>::accepts_elements(__len, __head.as_ref())
                {
                    return <#ty as #krate::Decode<'de>>::decode(__reader).map(#ident::#name);
                }
            }
        });
        quote! {
            if __type == #json_types::ARRAY {
                let mut __probe = __reader.clone();
                let __len = __probe.enter_array()?;
                let __head = if __len > 0 && !__probe.peek_json_type().contains(#json_types::ARRAY.union(#json_types::OBJECT)) {
                    ::core::option::Option::Some(__probe.read_scalar()?)
                } else {
                    ::core::option::Option::None
                };
                #(#attempts)*
                return ::core::result::Result::Err(#error::schema(#krate::Rule::NoVariant));
            }
        }
    });
    let by_type = quote! {
        #(#unit_tests)*
        #tuple_dispatch
        #(#wrap_attempts)*
        let __unit_types: #json_types = #json_types::NONE #(.union(#unit_types))*;
        ::core::result::Result::Err(#error::schema(if __unit_types.contains(__type) {
            #krate::Rule::NotInEnum
        } else {
            #krate::Rule::NoVariant
        }))
    };
    let decode_body = if map_dispatch {
        quote! {
            if !(#non_map) {
                let __count = __reader.enter_map()?;
                return <#ident as #krate::Decode<'de>>::decode_entries(__reader, __count, &[]);
            }
            let __type = __reader.peek_json_type();
            if __type == #json_types::OBJECT {
                let __count = __reader.enter_map()?;
                return <#ident as #krate::Decode<'de>>::decode_entries(__reader, __count, &[]);
            }
            #by_type
        }
    } else {
        quote! {
            let __type = __reader.peek_json_type();
            #by_type
        }
    };
    let entries_body = match &union.dispatch {
        Dispatch::Tag(tag) => tagged_entries(cont, union, tag),
        Dispatch::Tags(tags) => multi_tagged_entries(cont, union, tags),
        Dispatch::KeySet => key_set_entries(cont, union),
        Dispatch::ByType => {
            let attempts = union.wrapped().map(|(variant, ty)| {
                let name = variant.ident;
                quote_spanned! {ty.span()=>
                    if <#ty as #krate::Decode<'de>>::TYPES.contains(#json_types::OBJECT) {
                        return <#ty as #krate::Decode<'de>>::decode_entries(__reader, __count, __consumed)
                            .map(#ident::#name);
                    }
                }
            });
            quote! {
                #(#attempts)*
                ::core::result::Result::Err(#error::schema(#krate::Rule::NoVariant))
            }
        }
    };
    quote! {
        #[automatically_derived]
        impl<'de> #krate::Decode<'de> for #ident {
            const TYPES: #json_types = #json_types::NONE #(.union(#types))*;

            #[inline]
            fn decode(__reader: &mut #krate::Reader<'de>) -> ::core::result::Result<Self, #error> {
                #decode_body
            }

            #[inline]
            fn decode_entries(
                __reader: &mut #krate::Reader<'de>,
                __count: usize,
                __consumed: &[#krate::LiteralEntry<'de>],
            ) -> ::core::result::Result<Self, #error> {
                #entries_body
            }
        }
    }
}

/// The JSON type of a literal value, as a `JsonTypes` constant.
fn literal_type(krate: &syn::Path, value: &LitValue) -> TokenStream {
    match value {
        LitValue::Text(_) => quote!(#krate::JsonTypes::STRING),
        LitValue::Bool(_) => quote!(#krate::JsonTypes::BOOLEAN),
        LitValue::Number(_) => quote!(#krate::JsonTypes::NUMBER),
        LitValue::Null => quote!(#krate::JsonTypes::NULL),
    }
}

/// A tagged union's `decode_entries`: take the tag's value from the entries already consumed,
/// or read it when it is the next key (consuming it), or peek for it further on; then let the
/// first variant whose type accepts it decode the rest of the map.
fn tagged_entries(cont: &Container<'_>, union: &Union<'_>, tag: &str) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let tag_bytes = proc_macro2::Literal::byte_string(tag.as_bytes());
    let attempts = union.wrapped().map(|(variant, ty)| {
        let name = variant.ident;
        quote_spanned! {ty.span()=>
            if <#ty as #krate::Tagged>::accepts(#tag, &__tag) {
                return <#ty as #krate::Decode<'de>>::decode_entries(__reader, __count, __consumed).map(#ident::#name);
            }
        }
    });
    quote! {
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

/// `decode_entries` of a union told apart by several literal keys together: the value of each
/// tag key (from the consumed entries or a peek), then the first variant that accepts them all.
/// When none does, the error names the first tag key at which no variant accepting the keys
/// before it accepts its value (`MissingField` when absent, `Literal` otherwise).
fn multi_tagged_entries(cont: &Container<'_>, union: &Union<'_>, tags: &[String]) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let count = tags.len();
    let lookups = tags.iter().map(|tag| {
        let tag_bytes = proc_macro2::Literal::byte_string(tag.as_bytes());
        quote! {
            (#tag, match __consumed.iter().find(|__entry| #krate::key_equals(__entry.0, #tag_bytes)) {
                ::core::option::Option::Some(&(_, __value)) => ::core::option::Option::Some(__value),
                ::core::option::Option::None => __reader.peek_entries_value(__count, #tag)?,
            })
        }
    });
    let attempts = union.wrapped().map(|(variant, ty)| {
        let name = variant.ident;
        quote_spanned! {ty.span()=>
            if <#ty as #krate::Tagged>::accepts_all(&__values) {
                return <#ty as #krate::Decode<'de>>::decode_entries(__reader, __count, __consumed).map(#ident::#name);
            }
        }
    });
    let accepts_prefix = union
        .wrapped()
        .map(|(_, ty)| quote_spanned!(ty.span()=> <#ty as #krate::Tagged>::accepts_all(&__values[..=__i])));
    quote! {
        let __values: [(&str, ::core::option::Option<#krate::Scalar<'de>>); #count] = [#(#lookups),*];
        #(#attempts)*
        for __i in 0..#count {
            if !(false #(|| #accepts_prefix)*) {
                let __rule = if __values[__i].1.is_none() { #krate::Rule::MissingField } else { #krate::Rule::Literal };
                return ::core::result::Result::Err(#krate::ProtocolError::schema(__rule).at(__values[__i].0));
            }
        }
        ::core::result::Result::Err(#krate::ProtocolError::schema(#krate::Rule::NoVariant))
    }
}

/// A key-set union's `decode_entries`: list the map's keys (those consumed and, by a peek,
/// those ahead), let the first variant whose key set they fit decode the rest of the map; skip
/// the peek when the entry count alone singles out a variant.
fn key_set_entries(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let lengths: Vec<TokenStream> =
        union.wrapped().map(|(_, ty)| quote_spanned!(ty.span()=> <#ty as #krate::KeySet>::KEYS.len())).collect();
    let attempts = union.wrapped().map(|(variant, ty)| {
        let name = variant.ident;
        quote_spanned! {ty.span()=>
            if <#ty as #krate::KeySet>::matches_key_bytes(__keys) {
                return <#ty as #krate::Decode<'de>>::decode_entries(__reader, __count, __consumed).map(#ident::#name);
            }
        }
    });
    // Without a peek: when the number of entries fits one variant's range (from its required
    // keys to all its keys) and no other's, that variant is tried directly. If it decodes, the
    // map has exactly its entry count of distinct keys, all known to it and its required ones
    // among them, so it is the one variant whose key set fits: the peek would pick it too. If
    // it fails, the reader is restored and the peek decides (and reports) as always.
    let by_count = union.wrapped().map(|(_, ty)| {
        quote_spanned!(ty.span()=>
            <#ty as #krate::KeySet>::MAP
                && <#ty as #krate::KeySet>::REQUIRED.len() <= __total
                && __total <= <#ty as #krate::KeySet>::KEYS.len()
        )
    });
    let trials = union.wrapped().enumerate().map(|(index, (variant, ty))| {
        let name = variant.ident;
        quote_spanned! {ty.span()=>
            if __fits[#index] {
                if let ::core::result::Result::Ok(__value) =
                    <#ty as #krate::Decode<'de>>::decode_entries(__reader, __count, __consumed)
                {
                    return ::core::result::Result::Ok(#ident::#name(__value));
                }
            }
        }
    });
    quote! {
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
