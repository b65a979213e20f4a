//! `#[derive(Codec)]`: the strict decoder, canonical encoder and validator of a Pi protocol
//! envelope type, written against the traits of `pi-protocol-runtime` (`Decode`, `Encode`,
//! `Validate`, `Tagged`, `KeySet`).
//!
//! # Shapes
//!
//! - **String newtype** `struct X(String);` with optional `#[codec(pattern = "...")]` and
//!   `#[codec(min_length = N)]`: a text string meeting the constraints. Besides the codec traits
//!   it gets `new` (validating), `is_valid`, `as_str`, `into_string`, `AsRef<str>`,
//!   `Deref<Target = str>`, `Display`, `FromStr`, `TryFrom<String>`, `TryFrom<&str>`,
//!   `From<X> for String`, `PartialEq<str>` and `PartialEq<&str>`. The text may also be kept in
//!   a `CompactString` (inline up to 24 bytes) or, when a pattern fixes its length at N bytes,
//!   an `ArrayString<N>` (checked against the pattern at compile time): the storages of the
//!   runtime's `TextStorage` trait.
//! - **Struct with named fields**: a map with fixed keys (docs/PROTOCOL.md section 4). Unknown keys,
//!   duplicate keys and missing required keys are errors; key order on the wire is free; the
//!   encoder writes keys in canonical order. Container attribute
//!   `literal(key = "type", value = "hello")` adds a key with a fixed value (a string, `true`,
//!   `false` or an integer; an integer literal also accepts an integral float64), which is not
//!   stored in the struct. Literals come first in canonical order, unless
//!   `after = "<wire key>"` places one right behind another key. Structs also implement
//!   `Tagged` (their literals) and `KeySet` (their keys).
//! - **Tagged enum** `#[codec(tag = "type")] enum E { A(A), B(B) }`: the value of the tag key
//!   picks the first variant whose type accepts it (`Tagged::accepts`). A missing tag key is a
//!   `MissingField` error at the tag, a value no variant accepts a `Literal` error at the tag.
//!   The enum implements `Tagged` itself (any variant accepts), so it can nest in another
//!   tagged enum.
//! - **Key-set enum** `#[codec(key_set)] enum E { A(A), B(B) }`: the set of keys in the map
//!   picks the variant (`KeySet::matches_keys`); no match is a `NoVariant` error.
//!
//! Both enum kinds get `From<T>` for every variant type that no other variant shares.
//!
//! # Field attributes
//!
//! - `rename = "wireKey"`: the key on the wire (default: the field name).
//! - An `Option<T>` field is optional: absent is `None`, and `None` is omitted when encoding.
//!   `null` is not `None` (it decodes only if `T` accepts null).
//! - `nullable` on an `Option<T>` field: the key is required, `null` is `None`.
//! - `minimum = N` on an `Integer` field; `min_length = N` and `pattern = "..."` on a `String`
//!   field.
//!
//! `pattern` accepts the fixed-length subset of `pi_protocol_runtime::pattern`; it is compiled
//! at expansion time into byte comparisons, and a pattern outside the subset is a compile error
//! at the attribute.
//!
//! # Container attribute `crate`
//!
//! Emitted code names the runtime as `::pi_protocol_runtime`; `#[codec(crate = "path")]`
//! changes that (for a crate that re-exports the runtime).
//!
//! # Example
//!
//! ```
//! use pi_protocol_derive::Codec;
//! use pi_protocol_runtime::{decode_message, encode_item, CborLimits, Rule};
//!
//! /// A non-empty request id.
//! #[derive(Debug, Clone, PartialEq, Codec)]
//! #[codec(min_length = 1)]
//! pub struct RequestId(String);
//!
//! /// `{ type: "cancel", id }`.
//! #[derive(Debug, Clone, PartialEq, Codec)]
//! #[codec(literal(key = "type", value = "cancel"))]
//! pub struct Cancel {
//!     /// The request to cancel.
//!     pub id: RequestId,
//! }
//!
//! // {"id": "7", "type": "cancel"}: key order on the wire is free.
//! let bytes = [0xa2, 0x62, b'i', b'd', 0x61, b'7', 0x64, b't', b'y', b'p', b'e',
//!              0x66, b'c', b'a', b'n', b'c', b'e', b'l'];
//! let cancel: Cancel = decode_message(&bytes, CborLimits::default()).unwrap();
//! assert_eq!(cancel.id, "7");
//! // Encoding writes the canonical order: the literal first.
//! let encoded = encode_item(&cancel, CborLimits::default()).unwrap();
//! assert_eq!(encoded[..6], [0xa2, 0x64, b't', b'y', b'p', b'e']);
//! assert_eq!(RequestId::new("").unwrap_err().rule(), Rule::MinLength { min: 1 });
//! ```

mod ast;
mod attr;
mod checks;
mod decode;
mod dispatch;
mod encode;
mod newtype;
mod validate;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

use crate::ast::{Container, Shape};

/// Derives `Decode`, `Encode` and `Validate` (and, by shape, `Tagged`, `KeySet`, `From` impls
/// and the string-newtype API) for a Pi protocol envelope type. See the crate documentation
/// for the shapes and the `#[codec(...)]` attributes.
#[proc_macro_derive(Codec, attributes(codec))]
pub fn derive_codec(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let cx = attr::Ctxt::new();
    let container = Container::from_ast(&cx, input);
    cx.check()?;
    let Some(cont) = container else {
        // `from_ast` returns `None` only after recording an error.
        return Err(syn::Error::new_spanned(&input.ident, "cannot derive Codec"));
    };
    let tokens = match &cont.shape {
        Shape::Newtype(checks, storage) => {
            let mut out = decode::newtype(&cont, storage);
            out.extend(encode::newtype(&cont));
            out.extend(validate::newtype(&cont));
            out.extend(newtype::api(&cont, checks, storage));
            out
        }
        Shape::Struct(data) => {
            let mut out = decode::structure(&cont, data);
            out.extend(encode::structure(&cont, data));
            out.extend(validate::structure(&cont, data));
            out.extend(dispatch::struct_tagged(&cont, data));
            out.extend(dispatch::struct_key_set(&cont, data));
            out
        }
        Shape::Tagged(tag, union) => {
            let mut out = decode::tagged(&cont, union, tag);
            out.extend(encode::union(&cont, union));
            out.extend(validate::union(&cont, union));
            out.extend(dispatch::enum_tagged(&cont, union));
            out.extend(dispatch::enum_from(&cont, union));
            out
        }
        Shape::KeySet(union) => {
            let mut out = decode::key_set(&cont, union);
            out.extend(encode::union(&cont, union));
            out.extend(validate::union(&cont, union));
            out.extend(dispatch::enum_from(&cont, union));
            out
        }
    };
    Ok(tokens)
}
