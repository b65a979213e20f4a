//! Emission of the inherent API and the standard conversions of a validated string newtype
//! `struct X(String);`, `struct X(CompactString);` or `struct X(ArrayString<N>);` (the storage
//! is reached through the runtime's `TextStorage` trait).
//!
//! Constructors validate, so outside its defining module a value of the type always satisfies
//! the schema; read access goes through `&str`.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::{Container, StrChecks};
use crate::checks;

/// The inherent methods (`new`, `is_valid`, `as_str`, `into_string`) and the trait impls
/// (`AsRef<str>`, `Deref`, `Display`, `FromStr`, `TryFrom<String>`, `TryFrom<&str>`,
/// `From<X> for String`, `PartialEq<str>`, `PartialEq<&str>`).
pub fn api(cont: &Container<'_>, checks: &StrChecks, storage: &syn::Type) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let error = quote!(#krate::ProtocolError);
    let value = quote!(__text);
    let statements = checks::text_statements(krate, &value, checks, None);
    let ok = checks::text_ok(krate, &quote!(value), checks);
    let rules = describe(checks);
    let new_doc = format!(" Checks `value` against the constraints of [`{ident}`] ({rules}) and wraps it.");
    let is_valid_doc = format!(" Whether `value` satisfies the constraints of [`{ident}`] ({rules}).");
    quote! {
        impl #ident {
            #[doc = #new_doc]
            ///
            /// # Errors
            /// A Schema `ProtocolError` naming the rule that failed (`MinLength` or `Pattern`).
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
                #ok
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
fn describe(checks: &StrChecks) -> String {
    let mut parts = Vec::new();
    if let Some(min) = checks.min_length {
        parts.push(format!("at least {min} character{}", if min == 1 { "" } else { "s" }));
    }
    if let Some((_, source)) = &checks.pattern {
        parts.push(format!("matches `{source}`"));
    }
    if parts.is_empty() {
        "any string".to_owned()
    } else {
        parts.join(", ")
    }
}
