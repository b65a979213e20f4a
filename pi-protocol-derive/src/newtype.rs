//! Emission of the inherent API and the standard conversions of a validated newtype.
//!
//! A string newtype `struct X(String);`, `struct X(CompactString);` or
//! `struct X(ArrayString<N>);` (the storage is reached through the runtime's `TextStorage`
//! trait) reads as a `&str`; any other newtype `struct X(T);` as a `&T`. Constructors
//! validate, so outside its defining module a value of the type always satisfies the schema.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::{Checks, Container, Newtype};
use crate::checks;

/// The API of a newtype: the string API for text storages, the value API otherwise.
pub fn api(cont: &Container<'_>, newtype: &Newtype<'_>) -> TokenStream {
    if newtype.text {
        text_api(cont, &newtype.checks, newtype.inner)
    } else {
        value_api(cont, &newtype.checks, newtype.inner)
    }
}

/// The inherent methods (`new`, `get`, `into_inner`) and the trait impls (`AsRef<T>`,
/// `Deref<Target = T>`, `TryFrom<T>`) of a newtype over a non-text value.
fn value_api(cont: &Container<'_>, checks: &Checks, inner: &syn::Type) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let error = quote!(#krate::ProtocolError);
    let statements = checks::statements(krate, &quote!(__inner), inner, checks, &TokenStream::new(), 0);
    let rules = describe(checks);
    let new_doc = format!(" Checks `value` against the constraints of [`{ident}`] ({rules}) and wraps it.");
    quote! {
        impl #ident {
            #[doc = #new_doc]
            ///
            /// # Errors
            /// A Schema `ProtocolError` naming the rule that failed.
            pub fn new(value: #inner) -> ::core::result::Result<Self, #error> {
                #ident::__codec_check(&value)?;
                ::core::result::Result::Ok(#ident(value))
            }

            /// Checks the constraints, naming the rule that fails (emitted by `#[derive(Codec)]`
            /// and shared by `new`, `Decode` and `Validate`).
            #[doc(hidden)]
            #[inline]
            fn __codec_check(__inner: &#inner) -> ::core::result::Result<(), #error> {
                #statements
                ::core::result::Result::Ok(())
            }

            /// The value.
            #[must_use]
            pub fn get(&self) -> &#inner {
                &self.0
            }

            /// The value, consuming `self`.
            #[must_use]
            pub fn into_inner(self) -> #inner {
                self.0
            }
        }

        #[automatically_derived]
        impl ::core::convert::AsRef<#inner> for #ident {
            fn as_ref(&self) -> &#inner {
                &self.0
            }
        }

        #[automatically_derived]
        impl ::core::ops::Deref for #ident {
            type Target = #inner;

            fn deref(&self) -> &#inner {
                &self.0
            }
        }

        #[automatically_derived]
        impl ::core::convert::TryFrom<#inner> for #ident {
            type Error = #error;

            fn try_from(value: #inner) -> ::core::result::Result<Self, #error> {
                #ident::new(value)
            }
        }
    }
}

/// The inherent methods (`new`, `is_valid`, `as_str`, `into_string`) and the trait impls
/// (`AsRef<str>`, `Borrow<str>`, `Deref`, `Display`, `FromStr`, `TryFrom<String>`,
/// `TryFrom<&str>`, `From<X> for String`, `PartialEq<str>`, `PartialEq<&str>`) of a string
/// newtype.
fn text_api(cont: &Container<'_>, checks: &Checks, storage: &syn::Type) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let error = quote!(#krate::ProtocolError);
    let string: syn::Type = syn::parse_quote!(str);
    let statements = checks::statements(krate, &quote!(__text), &string, checks, &TokenStream::new(), 0);
    let rules = describe(checks);
    let new_doc = format!(" Checks `value` against the constraints of [`{ident}`] ({rules}) and wraps it.");
    let is_valid_doc = format!(" Whether `value` satisfies the constraints of [`{ident}`] ({rules}).");
    quote! {
        impl #ident {
            #[doc = #new_doc]
            ///
            /// # Errors
            /// A Schema `ProtocolError` naming the rule that failed (`MinLength`, `MaxLength` or
            /// `Pattern`).
            /// The error never contains `value`.
            pub fn new(value: impl ::core::convert::Into<::std::string::String>) -> ::core::result::Result<Self, #error> {
                let value: ::std::string::String = value.into();
                #ident::__codec_check(&value)?;
                match <#storage as #krate::TextStorage>::store_string(value) {
                    ::core::option::Option::Some(__stored) => ::core::result::Result::Ok(#ident(__stored)),
                    ::core::option::Option::None => ::core::result::Result::Err(#error::schema(#krate::Rule::Pattern)),
                }
            }

            /// Checks the constraints, naming the rule that fails (emitted by `#[derive(Codec)]`
            /// and shared by `new`, `Decode` and `Validate`).
            #[doc(hidden)]
            #[inline]
            fn __codec_check(__text: &str) -> ::core::result::Result<(), #error> {
                #statements
                ::core::result::Result::Ok(())
            }

            #[doc = #is_valid_doc]
            #[must_use]
            pub fn is_valid(value: &str) -> bool {
                #ident::__codec_check(value).is_ok()
            }

            /// The value as a string slice.
            #[must_use]
            pub fn as_str(&self) -> &str {
                <#storage as #krate::TextStorage>::text(&self.0)
            }

            /// The value as an owned `String`, consuming `self`.
            #[must_use]
            pub fn into_string(self) -> ::std::string::String {
                <#storage as #krate::TextStorage>::into_string(self.0)
            }
        }

        #[automatically_derived]
        impl ::core::convert::AsRef<str> for #ident {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        #[automatically_derived]
        impl ::core::borrow::Borrow<str> for #ident {
            fn borrow(&self) -> &str {
                self.as_str()
            }
        }

        #[automatically_derived]
        impl ::core::ops::Deref for #ident {
            type Target = str;

            fn deref(&self) -> &str {
                self.as_str()
            }
        }

        #[automatically_derived]
        impl ::core::fmt::Display for #ident {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        #[automatically_derived]
        impl ::core::str::FromStr for #ident {
            type Err = #error;

            fn from_str(s: &str) -> ::core::result::Result<Self, #error> {
                #ident::new(s)
            }
        }

        #[automatically_derived]
        impl ::core::convert::TryFrom<::std::string::String> for #ident {
            type Error = #error;

            fn try_from(value: ::std::string::String) -> ::core::result::Result<Self, #error> {
                #ident::new(value)
            }
        }

        #[automatically_derived]
        impl<'a> ::core::convert::TryFrom<&'a str> for #ident {
            type Error = #error;

            fn try_from(value: &'a str) -> ::core::result::Result<Self, #error> {
                #ident::new(value)
            }
        }

        #[automatically_derived]
        impl ::core::convert::From<#ident> for ::std::string::String {
            fn from(value: #ident) -> ::std::string::String {
                value.into_string()
            }
        }

        #[automatically_derived]
        impl ::core::cmp::PartialEq<str> for #ident {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        #[automatically_derived]
        impl<'a> ::core::cmp::PartialEq<&'a str> for #ident {
            fn eq(&self, other: &&'a str) -> bool {
                self.as_str() == *other
            }
        }
    }
}

/// The constraints in words, for the emitted doc comments.
fn describe(checks: &Checks) -> String {
    let mut parts = Vec::new();
    if let Some(min) = checks.min_length {
        parts.push(format!("at least {min} character{}", if min == 1 { "" } else { "s" }));
    }
    if let Some(max) = checks.max_length {
        parts.push(format!("at most {max} character{}", if max == 1 { "" } else { "s" }));
    }
    if let Some((_, source)) = &checks.pattern {
        parts.push(format!("matches `{source}`"));
    }
    let bounds = [
        ("at least", checks.minimum),
        ("at most", checks.maximum),
        ("above", checks.exclusive_minimum),
        ("below", checks.exclusive_maximum),
    ];
    for (words, bound) in bounds {
        if let Some(bound) = bound {
            parts.push(format!("{words} {bound}"));
        }
    }
    if let Some(min) = checks.min_items {
        parts.push(format!("at least {min} element{}", if min == 1 { "" } else { "s" }));
    }
    if let Some(max) = checks.max_items {
        parts.push(format!("at most {max} element{}", if max == 1 { "" } else { "s" }));
    }
    if checks.items.is_some() || checks.values.is_some() || checks.keys.is_some() {
        parts.push("constrained elements".to_owned());
    }
    if parts.is_empty() {
        "no constraints".to_owned()
    } else {
        parts.join(", ")
    }
}
