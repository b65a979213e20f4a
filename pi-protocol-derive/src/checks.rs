//! Emission of constraint checks: `min_length`, `pattern` (compiled at expansion time into
//! straight-line byte comparisons) and `minimum`.
//!
//! The same checks run when decoding (a decoded value is always valid) and in `Validate`.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use pi_protocol_runtime::pattern::{Pattern, WordWindow};

use crate::ast::{FieldChecks, StrChecks};

/// A `bool` expression: whether the `&str` expression `value` has at least `min` characters.
///
/// Characters are Unicode scalar values; the byte length bounds the count from both sides
/// (`chars <= bytes <= 4 * chars`), so most strings are decided without counting.
pub fn min_length_ok(value: &TokenStream, min: u64) -> TokenStream {
    match min {
        0 => quote!(true),
        1 => quote!(!#value.is_empty()),
        _ => {
            let min_lit = Literal::u64_unsuffixed(min);
            let sure = Literal::u64_unsuffixed(min.saturating_mul(4));
            quote! {
                {
                    let __len = #value.len() as u64;
                    __len >= #min_lit && (__len >= #sure || #value.chars().count() as u64 >= #min_lit)
                }
            }
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
/// runtime's `word_matches` when the pattern is eight bytes or longer (the 36-byte UUID: five
/// words), one table lookup per byte otherwise.
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

/// A `bool` expression: whether the `&str` expression `value` satisfies every text check.
pub fn text_ok(krate: &syn::Path, value: &TokenStream, checks: &StrChecks) -> TokenStream {
    let mut parts = Vec::new();
    if let Some(min) = checks.min_length {
        parts.push(min_length_ok(value, min));
    }
    if let Some((pattern, _)) = &checks.pattern {
        parts.push(pattern_ok(krate, value, pattern));
    }
    if parts.is_empty() {
        quote!(true)
    } else {
        quote!(#((#parts))&&*)
    }
}

/// Statements returning a Schema error (with `.at(key)` when a key is given) as soon as the
/// `&str` expression `value` breaks a text check.
pub fn text_statements(krate: &syn::Path, value: &TokenStream, checks: &StrChecks, key: Option<&str>) -> TokenStream {
    let at = at(key);
    let mut out = TokenStream::new();
    if let Some(min) = checks.min_length {
        let ok = min_length_ok(value, min);
        let min_lit = Literal::u64_unsuffixed(min);
        out.extend(quote! {
            if !(#ok) {
                return ::core::result::Result::Err(
                    #krate::ProtocolError::schema(#krate::Rule::MinLength { min: #min_lit })#at
                );
            }
        });
    }
    if let Some((pattern, _)) = &checks.pattern {
        let ok = pattern_ok(krate, value, pattern);
        out.extend(quote! {
            if !(#ok) {
                return ::core::result::Result::Err(#krate::ProtocolError::schema(#krate::Rule::Pattern)#at);
            }
        });
    }
    out
}

/// Statements checking the field-level constraints of a field whose value (not the
/// `Option`) is the expression `value`, returning the error at `key`.
pub fn field_statements(krate: &syn::Path, value: &TokenStream, checks: &FieldChecks, key: &str) -> TokenStream {
    let mut out = TokenStream::new();
    if let Some(min) = checks.minimum {
        // An `Integer` may hold -0.0, which compares equal to 0: `-0.0 >= 0.0` holds, as in JSON Schema.
        #[allow(clippy::cast_precision_loss)] // `min` is within +-(2^53 - 1): exact in f64.
        let min_f64 = Literal::f64_unsuffixed(min as f64);
        let min_i64 = Literal::i64_unsuffixed(min);
        let at = at(Some(key));
        out.extend(quote! {
            if !((#value).value() >= #min_f64) {
                return ::core::result::Result::Err(
                    #krate::ProtocolError::schema(#krate::Rule::Minimum { min: #min_i64 })#at
                );
            }
        });
    }
    let text = quote!(::core::convert::AsRef::<str>::as_ref(#value));
    out.extend(text_statements(krate, &text, &checks.text, Some(key)));
    out
}

fn at(key: Option<&str>) -> TokenStream {
    match key {
        Some(key) => quote!(.at(#key)),
        None => TokenStream::new(),
    }
}
