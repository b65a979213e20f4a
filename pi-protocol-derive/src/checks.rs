//! Emission of value checks (string lengths, patterns, numeric bounds, array sizes, and the
//! same for array elements and record entries), as statements returning the first `Schema`
//! error with its field path.
//!
//! Patterns of the fixed-length subset are compiled at expansion time into straight-line byte
//! comparisons; any other pattern is compiled once, on first use, by the ECMAScript engine of
//! `pi-protocol-pattern` (named through the runtime's re-export, `#krate::pattern`). The same
//! checks run when decoding (a decoded value is always valid) and in `Validate`. Checks look
//! through `Option` (nothing to check in `None`) and `Box`, and follow the declared type into
//! `Vec<T>` elements and `Record<T>` entries.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use syn::Type;

use pi_protocol_pattern::{Pattern, WordWindow};

use crate::ast::{container_inner, option_inner, Checks};

/// Statements checking `checks` on `value`, an expression of type `&T` where `T` is `ty`;
/// each failure returns `Err(ProtocolError)` with `path` appended (a chain of `.at(..)` calls,
/// innermost first). `depth` keeps the bindings of nested loops apart.
pub fn statements(
    krate: &syn::Path,
    value: &TokenStream,
    ty: &Type,
    checks: &Checks,
    path: &TokenStream,
    depth: usize,
) -> TokenStream {
    if checks.is_empty() {
        return TokenStream::new();
    }
    let fail = |rule: TokenStream| {
        quote! {
            return ::core::result::Result::Err(#krate::ProtocolError::schema(#krate::Rule::#rule) #path);
        }
    };
    if let Some(inner) = option_inner(ty) {
        let bound = format_ident!("__some{}", depth);
        let body = statements(krate, &quote!(#bound), inner, checks, path, depth + 1);
        return quote! {
            if let ::core::option::Option::Some(#bound) = #value {
                #body
            }
        };
    }
    if let Some(inner) = container_inner(ty, "Box") {
        return statements(krate, &quote!(&**#value), inner, checks, path, depth);
    }
    let mut out = TokenStream::new();
    if checks.has_text() {
        let text = format_ident!("__text{}", depth);
        out.extend(quote!(let #text: &str = ::core::convert::AsRef::<str>::as_ref(#value);));
        if let Some(min) = checks.min_length {
            let min = Literal::u64_unsuffixed(min);
            let error = fail(quote!(MinLength { min: #min }));
            out.extend(quote!(if !#krate::checks::has_min_length(#text, #min) { #error }));
        }
        if let Some(max) = checks.max_length {
            let max = Literal::u64_unsuffixed(max);
            let error = fail(quote!(MaxLength { max: #max }));
            out.extend(quote!(if !#krate::checks::has_max_length(#text, #max) { #error }));
        }
        if let Some((compiled, source)) = &checks.pattern {
            let ok = match compiled {
                Some(pattern) => pattern_ok(krate, &quote!(#text), pattern),
                None => regex_ok(krate, &quote!(#text), source),
            };
            let error = fail(quote!(Pattern));
            out.extend(quote!(if !(#ok) { #error }));
        }
    }
    if checks.has_number() {
        let number = format_ident!("__number{}", depth);
        out.extend(quote!(let #number: f64 = #krate::checks::NumericValue::numeric_value(#value);));
        // `!(a >= b)` rather than `a < b`: the same for finite values, and explicit about intent.
        let bounds = [
            (checks.minimum, quote!(>=), quote!(Minimum), quote!(min)),
            (checks.maximum, quote!(<=), quote!(Maximum), quote!(max)),
            (checks.exclusive_minimum, quote!(>), quote!(ExclusiveMinimum), quote!(min)),
            (checks.exclusive_maximum, quote!(<), quote!(ExclusiveMaximum), quote!(max)),
        ];
        for (bound, op, rule, field) in bounds {
            if let Some(bound) = bound {
                let bound = Literal::f64_unsuffixed(bound);
                let error = fail(quote!(#rule { #field: #krate::checks::bound(#bound) }));
                out.extend(quote!(if !(#number #op #bound) { #error }));
            }
        }
    }
    if checks.has_items() {
        if let Some(min) = checks.min_items {
            let min_lit = Literal::u64_unsuffixed(min);
            let error = fail(quote!(MinItems { min: #min_lit }));
            out.extend(quote!(if ((#value).len() as u64) < #min_lit { #error }));
        }
        if let Some(max) = checks.max_items {
            let max_lit = Literal::u64_unsuffixed(max);
            let error = fail(quote!(MaxItems { max: #max_lit }));
            out.extend(quote!(if ((#value).len() as u64) > #max_lit { #error }));
        }
        if let (Some(items), Some(element)) = (&checks.items, container_inner(ty, "Vec")) {
            let index = format_ident!("__index{}", depth);
            let item = format_ident!("__item{}", depth);
            let inner_path = quote!(.at_index(#index as u64) #path);
            let body = statements(krate, &quote!(#item), element, items, &inner_path, depth + 1);
            if !body.is_empty() {
                out.extend(quote!(for (#index, #item) in (#value).iter().enumerate() { #body }));
            }
        }
    }
    if checks.has_record() {
        let index = format_ident!("__index{}", depth);
        let key = format_ident!("__key{}", depth);
        let entry = format_ident!("__entry{}", depth);
        let inner_path = quote!(.at_entry(#index as u64) #path);
        let key_checks = checks.keys.as_ref().map(|keys| {
            let string: Type = syn::parse_quote!(str);
            statements(krate, &quote!(#key), &string, keys, &inner_path, depth + 1)
        });
        let value_checks = match (&checks.values, container_inner(ty, "Record")) {
            (Some(values), Some(element)) => {
                statements(krate, &quote!(#entry), element, values, &inner_path, depth + 1)
            }
            _ => TokenStream::new(),
        };
        out.extend(quote! {
            for (#index, (#key, #entry)) in (#value).iter().enumerate() {
                let _ = (#key, #entry);
                #key_checks
                #value_checks
            }
        });
    }
    out
}

/// A `bool` expression: whether the `&str` expression `value` matches the ECMAScript pattern
/// `source`, compiled once per program on first use.
fn regex_ok(krate: &syn::Path, value: &TokenStream, source: &str) -> TokenStream {
    quote! {
        {
            static __PATTERN: ::std::sync::OnceLock<::core::option::Option<#krate::pattern::Regex>> =
                ::std::sync::OnceLock::new();
            // Checked to compile when the type was derived; `None` would refuse every string.
            __PATTERN
                .get_or_init(|| #krate::pattern::Regex::new(#source).ok())
                .as_ref()
                .is_some_and(|__regex| __regex.is_match(#value))
        }
    }
}

/// Positions of one pattern segment tested one by one; longer runs use a loop over the rest.
const SPELLED_OUT: usize = 16;

/// A `bool` expression: whether the `&str` expression `value` matches `pattern`.
///
/// Every supported pattern matches strings of one fixed byte length, so the check converts
/// the bytes to a fixed-size array (one length comparison) and then tests constant positions
/// (no bounds checks, no loop over the pattern, no allocation): eight at a time with the
/// pattern engine's `word_matches` when the pattern is eight bytes or longer (the 36-byte
/// UUID: five words), one table lookup per byte otherwise.
pub fn pattern_ok(krate: &syn::Path, value: &TokenStream, pattern: &Pattern) -> TokenStream {
    let length = Literal::usize_unsuffixed(pattern.length());
    let (tables, tests) = match pattern.word_windows() {
        Some(windows) => (Vec::new(), word_tests(krate, &windows)),
        None => byte_tests(pattern),
    };
    if tests.is_empty() {
        return quote!(#value.is_empty());
    }
    quote! {
        {
            #(#tables)*
            match <&[u8; #length] as ::core::convert::TryFrom<&[u8]>>::try_from(#value.as_bytes()) {
                ::core::result::Result::Ok(__bytes) => #(#tests)&*,
                ::core::result::Result::Err(_) => false,
            }
        }
    }
}

/// One `word_matches` call per window, on the window's eight bytes read little-endian.
fn word_tests(krate: &syn::Path, windows: &[WordWindow]) -> Vec<TokenStream> {
    windows
        .iter()
        .map(|window| {
            let start = Literal::usize_unsuffixed(window.offset);
            let end = Literal::usize_unsuffixed(window.offset + 8);
            let ranges = window.ranges.iter().map(|r| {
                let above_low = Literal::u64_unsuffixed(r.above_low);
                let above_high = Literal::u64_unsuffixed(r.above_high);
                quote!(#krate::pattern::LaneRanges { above_low: #above_low, above_high: #above_high })
            });
            // One load (a constant range of an array: the conversion cannot fail).
            quote! {
                (match <[u8; 8] as ::core::convert::TryFrom<&[u8]>>::try_from(&__bytes[#start..#end]) {
                    ::core::result::Result::Ok(__word) => {
                        #krate::pattern::word_matches(u64::from_le_bytes(__word), &[#(#ranges),*])
                    }
                    ::core::result::Result::Err(_) => false,
                })
            }
        })
        .collect()
}

/// One lookup per position in a 256-entry table per segment, combined with `&` (no branch
/// per byte): the tables (constant items) and the tests.
fn byte_tests(pattern: &Pattern) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut tables = Vec::new();
    let mut tests = Vec::new();
    let mut offset = 0usize;
    for (index, segment) in pattern.segments().iter().enumerate() {
        let table = quote::format_ident!("__CLASS{}", index);
        let alternatives = segment.ranges.iter().map(|&(lo, hi)| {
            let lo_lit = Literal::byte_character(lo);
            let hi_lit = Literal::byte_character(hi);
            quote!(#lo_lit..=#hi_lit)
        });
        tables.push(quote! {
            const #table: [bool; 256] = {
                let mut __t = [false; 256];
                let mut __b = 0usize;
                while __b < 256 {
                    __t[__b] = ::core::matches!(__b as u8, #(#alternatives)|*);
                    __b += 1;
                }
                __t
            };
        });
        for i in offset..offset + segment.count.min(SPELLED_OUT) {
            let at = Literal::usize_unsuffixed(i);
            tests.push(quote!(#table[__bytes[#at] as usize]));
        }
        if segment.count > SPELLED_OUT {
            let start = Literal::usize_unsuffixed(offset + SPELLED_OUT);
            let end = Literal::usize_unsuffixed(offset + segment.count);
            tests.push(quote!(__bytes[#start..#end].iter().all(|&__b| #table[__b as usize])));
        }
        offset += segment.count;
    }
    (tables, tests)
}
