//! Emission of what unions dispatch on: `Tagged` and `KeySet` for structs, `Tagged` for enums
//! and newtypes (and a `KeySet` matching no map), and `From<Variant>` for enums.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::Type;

use crate::ast::{Container, Newtype, Struct, Tuple, Union};
use crate::decode::literal_test;

/// `impl Tagged` for a struct: it accepts exactly its literal keys with their values.
pub fn struct_tagged(cont: &Container<'_>, data: &Struct<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let literals: Vec<(&str, TokenStream)> =
        data.literals().map(|literal| (literal.key.as_str(), literal_test(krate, &literal.value))).collect();
    if literals.is_empty() {
        return quote! {
            #[automatically_derived]
            impl #krate::Tagged for #ident {}
        };
    }
    let arms = literals.iter().map(|(key, test)| quote!(#key => #test,));
    // Every tag key at which this struct has a literal must hold exactly that literal.
    let all_arms = literals.iter().map(|(key, test)| {
        quote! {
            #key => match __entry {
                ::core::option::Option::Some(__value) => #test,
                ::core::option::Option::None => false,
            },
        }
    });
    quote! {
        #[automatically_derived]
        impl #krate::Tagged for #ident {
            fn accepts(__key: &str, __value: &#krate::Scalar<'_>) -> bool {
                match __key {
                    #(#arms)*
                    _ => false,
                }
            }

            fn accepts_all(__values: &[(&str, ::core::option::Option<#krate::Scalar<'_>>)]) -> bool {
                __values.iter().all(|(__key, __entry)| match *__key {
                    #(#all_arms)*
                    _ => true,
                })
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

/// `impl KeySet` for a newtype or an enum: no map has its key set (a key-set union tells it
/// apart by its JSON type).
pub fn no_key_set(cont: &Container<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    quote! {
        #[automatically_derived]
        impl #krate::KeySet for #ident {
            const KEYS: &'static [&'static str] = &[];
            const REQUIRED: &'static [&'static str] = &[];
            const MAP: bool = false;
        }
    }
}

/// `impl Positional` for a tuple struct: its length, and its literal at position 0 if it has one.
pub fn tuple_positional(cont: &Container<'_>, data: &Tuple<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let len = data.elements.len();
    let head = match data.head() {
        Some(value) => {
            let test = literal_test(krate, value);
            quote! {
                match __head {
                    ::core::option::Option::Some(__value) => #test,
                    ::core::option::Option::None => false,
                }
            }
        }
        None => quote!(true),
    };
    quote! {
        #[automatically_derived]
        impl #krate::Positional for #ident {
            fn accepts_elements(__len: usize, __head: ::core::option::Option<&#krate::Scalar<'_>>) -> bool {
                __len == #len && #head
            }
        }
    }
}

/// `impl Positional` for a newtype: what its inner value accepts (a text newtype: no array).
pub fn newtype_positional(cont: &Container<'_>, newtype: &Newtype<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let inner = newtype.inner;
    let body = if newtype.text {
        quote!(false)
    } else {
        quote_spanned!(inner.span()=> <#inner as #krate::Positional>::accepts_elements(__len, __head))
    };
    quote! {
        #[automatically_derived]
        impl #krate::Positional for #ident {
            fn accepts_elements(__len: usize, __head: ::core::option::Option<&#krate::Scalar<'_>>) -> bool {
                let _ = (__len, __head);
                #body
            }
        }
    }
}

/// `impl Positional` for a map-shaped struct: no array.
pub fn no_positional(cont: &Container<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    quote! {
        #[automatically_derived]
        impl #krate::Positional for #ident {}
    }
}

/// `impl Positional` for an enum: what any of its variants accepts.
pub fn enum_positional(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let tests = union
        .wrapped()
        .map(|(_, ty)| quote_spanned!(ty.span()=> <#ty as #krate::Positional>::accepts_elements(__len, __head)));
    quote! {
        #[automatically_derived]
        impl #krate::Positional for #ident {
            fn accepts_elements(__len: usize, __head: ::core::option::Option<&#krate::Scalar<'_>>) -> bool {
                let _ = (__len, __head);
                false #(|| #tests)*
            }
        }
    }
}

/// `impl Tagged` for a newtype: it is never a map with literal keys.
pub fn newtype_tagged(cont: &Container<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    quote! {
        #[automatically_derived]
        impl #krate::Tagged for #ident {}
    }
}

/// `impl Tagged` for an enum: it accepts what any of its variants accepts, so an enum can itself
/// be the variant of an outer tagged enum (`Response` inside `ServerMessage`).
pub fn enum_tagged(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let krate = &cont.krate;
    let ident = cont.ident;
    let tests =
        union.wrapped().map(|(_, ty)| quote_spanned!(ty.span()=> <#ty as #krate::Tagged>::accepts(__key, __value)));
    let all_tests =
        union.wrapped().map(|(_, ty)| quote_spanned!(ty.span()=> <#ty as #krate::Tagged>::accepts_all(__values)));
    quote! {
        #[automatically_derived]
        impl #krate::Tagged for #ident {
            fn accepts(__key: &str, __value: &#krate::Scalar<'_>) -> bool {
                let _ = (__key, __value);
                false #(|| #tests)*
            }

            fn accepts_all(__values: &[(&str, ::core::option::Option<#krate::Scalar<'_>>)]) -> bool {
                let _ = __values;
                false #(|| #all_tests)*
            }
        }
    }
}

/// `impl From<T> for Enum` for every variant `V(T)` whose type no other variant shares, and
/// for a variant `V(Box<T>)` also `From<T>` (boxing it) when no other variant holds a `T`.
pub fn enum_from(cont: &Container<'_>, union: &Union<'_>) -> TokenStream {
    let ident = cont.ident;
    let unboxed = |ty: &Type| boxed_inner(ty).map(|inner| inner.to_token_stream().to_string());
    let impls = union.wrapped().filter(|(v, _)| v.unique_type).map(|(variant, ty)| {
        let name = variant.ident;
        let doc = format!("Wraps the value as [`{ident}::{name}`].");
        let boxing = boxed_inner(ty).filter(|inner| {
            let inner = inner.to_token_stream().to_string();
            union.wrapped().filter(|(other, _)| other.ident != name).all(|(_, other)| {
                other.to_token_stream().to_string() != inner && unboxed(other).as_deref() != Some(inner.as_str())
            })
        });
        let boxing = boxing.map(|inner| {
            let doc = format!("Boxes the value and wraps it as [`{ident}::{name}`].");
            quote! {
                #[automatically_derived]
                impl ::core::convert::From<#inner> for #ident {
                    #[doc = #doc]
                    fn from(value: #inner) -> Self {
                        #ident::#name(::std::boxed::Box::new(value))
                    }
                }
            }
        });
        quote! {
            #[automatically_derived]
            impl ::core::convert::From<#ty> for #ident {
                #[doc = #doc]
                fn from(value: #ty) -> Self {
                    #ident::#name(value)
                }
            }
            #boxing
        }
    });
    quote!(#(#impls)*)
}

/// `T` when `ty` is written `Box<T>` (or `std::boxed::Box<T>`).
fn boxed_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Box" {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::AngleBracketed(args) if args.args.len() == 1 => match args.args.first()? {
            syn::GenericArgument::Type(inner) => Some(inner),
            _ => None,
        },
        _ => None,
    }
}
