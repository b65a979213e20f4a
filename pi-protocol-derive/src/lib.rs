//! `#[derive(Codec)]`: the strict decoder, canonical encoder and validator of a Pi protocol
//! envelope type, written against the traits of `pi-protocol-runtime` (`Decode`, `Encode`,
//! `Validate`, `Tagged`, `KeySet`).
//!
//! # Shapes
//!
//! - **Newtype** `struct X(T);` with value checks on the type (below): a `T` meeting them. Over a
//!   text storage (`String`, `CompactString`, or `ArrayString<N>` when a `pattern` fixes the
//!   length at N bytes, checked at compile time) it reads as a string: `new` (validating),
//!   `is_valid`, `as_str`, `into_string`, `AsRef<str>`, `Borrow<str>`, `Deref<Target = str>`,
//!   `Display`, `FromStr`, `TryFrom<String>`, `TryFrom<&str>`, `From<X> for String`,
//!   `PartialEq<str>` and `PartialEq<&str>`. Over any other type it gets `new` (validating),
//!   `get`, `into_inner`, `AsRef<T>`, `Deref<Target = T>` and `TryFrom<T>`.
//! - **Struct with named fields**: a map with fixed keys (docs/PROTOCOL.md section 4). Unknown keys,
//!   duplicate keys and missing required keys are errors; key order on the wire is free; the
//!   encoder writes keys in canonical order. Container attribute
//!   `literal(key = "type", value = "hello")` adds a key with a fixed value (a string, `true`,
//!   `false` or a number; a number literal equals any float64 of the same value), which is not
//!   stored in the struct. Literals come first in canonical order, unless
//!   `after = "<wire key>"` places one right behind another key. Structs also implement
//!   `Tagged` (their literals) and `KeySet` (their keys).
//! - **Tuple** `#[codec(tuple)] struct X(A, B);`: a fixed-length array, one element per field
//!   in order. `literal(index = 0, value = "s")` puts a fixed element (not stored) at a
//!   position, the fields filling the others: `["s", path, value]` is
//!   `#[codec(tuple, literal(index = 0, value = "s"))] struct Set(Path, Payload);`. An array of
//!   another length is a `MinItems`/`MaxItems` error; an element's error names its position
//!   (`[1][0]`). Fields take value checks; an `Option<T>` element is `null` or a `T`. Tuples
//!   implement `Positional` (their length and first literal).
//! - **Enum**: a union. A value is first told apart by its JSON type (each variant's
//!   `Decode::TYPES`): a unit variant `#[codec(value = "off")] Off` stands for one literal
//!   (a string, a number, `true`/`false`, or `null`), a tuple variant `V(T)` for any value of
//!   `T`; the first variant that can hold the value's type decodes it. Maps, when several
//!   variants are map-shaped, are told apart by the enum's container attribute:
//!   - `tag = "type"`: the value of one key picks the first variant whose type accepts it
//!     (`Tagged::accepts`). A missing tag key is a `MissingField` error at the tag, a value no
//!     variant accepts a `Literal` error at the tag.
//!   - `tags("role", "status")`: the values of several keys together; a variant accepts them
//!     when each key at which it has a literal holds that literal (`Tagged::accepts_all`). The
//!     error names the first key at which no variant fits.
//!   - `key_set`: the set of keys in the map picks the variant (`KeySet::matches_keys`); no
//!     match is a `NoVariant` error.
//!
//!   - `tuples`: arrays (whatever tells the maps apart) go to the first variant whose
//!     `Positional` accepts their length and first element (a union of `#[codec(tuple)]`
//!     structs such as `["t", count]` and `["t", path, count]`); none is a `NoVariant` error.
//!
//!   An enum told apart by tags or key sets may also hold variants that are not maps
//!   (`V(String)`, unit variants): an item that is not a map goes to them by its JSON type
//!   (newtypes and enums implement `KeySet` matching no map for that purpose). Enums implement
//!   `Tagged` themselves (any variant accepts), so they nest in other unions, and get `From<T>`
//!   for every variant type no other variant shares.
//!
//! # Field attributes
//!
//! - `rename = "wireKey"`: the key on the wire (default: the field name).
//! - An `Option<T>` field is optional: absent is `None`, and `None` is omitted when encoding.
//!   `null` is not `None` (it decodes only if `T` accepts null).
//! - `nullable` on an `Option<T>` field: the key is required, `null` is `None`; on an
//!   `Option<Option<T>>` field: the key is optional (`None`), and `null` is `Some(None)`.
//! - Value checks, as on newtypes.
//!
//! # Value checks
//!
//! On a field (of the value inside its `Option`s) or on a newtype: `min_length = N`,
//! `max_length = N` (lengths as the reference counts them, `pi_protocol_runtime::checks`),
//! `pattern = "..."` (an ECMAScript pattern, `u` flag, tested anywhere in the string);
//! `minimum = N`, `maximum = N`, `exclusive_minimum = N`, `exclusive_maximum = N` (integer or
//! float literals); `min_items = N`, `max_items = N` on a `Vec<T>`, and `items(...)` checks of
//! every element; `values(...)` and `keys(...)` checks of every entry of a `Record<T>`. Checks
//! look through `Option` (a `None` has nothing to check) and `Box`. A pattern of the
//! fixed-length subset of `pi-protocol-pattern` is compiled at expansion time into byte
//! comparisons; any other is compiled once, at first use, by the same engine (which emitted code
//! reaches as `pi_protocol_runtime::pattern`); an invalid pattern is a compile error at the
//! attribute.
//!
//! # Container attributes `crate` and `json`
//!
//! Emitted code names the runtime as `::pi_protocol_runtime`; `#[codec(crate = "path")]`
//! changes that (for a crate that re-exports the runtime). `#[codec(json)]` adds the JSON view:
//! `serde::Serialize` and `serde::Deserialize` in the exact wire shape (through the wire
//! encoding, every rule of the decoder applied on the way in), and inherent `to_json()` and
//! `from_json(&Value)`.
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
mod json;
mod newtype;
mod validate;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

use crate::ast::{Container, Shape};

/// Derives `Decode`, `Encode`, `Validate` and `Tagged` (and, by shape, `KeySet`, `From` impls,
/// the newtype API and, with `#[codec(json)]`, the JSON view) for a Pi protocol envelope type.
/// See the crate documentation for the shapes and the `#[codec(...)]` attributes.
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
    let mut out = match &cont.shape {
        Shape::Newtype(newtype) => {
            let mut out = decode::newtype(&cont, newtype);
            out.extend(encode::newtype(&cont, newtype));
            out.extend(validate::newtype(&cont, newtype));
            out.extend(dispatch::newtype_tagged(&cont));
            out.extend(dispatch::no_key_set(&cont));
            out.extend(dispatch::newtype_positional(&cont, newtype));
            out.extend(newtype::api(&cont, newtype));
            out
        }
        Shape::Struct(data) => {
            let mut out = decode::structure(&cont, data);
            out.extend(encode::structure(&cont, data));
            out.extend(validate::structure(&cont, data));
            out.extend(dispatch::struct_tagged(&cont, data));
            out.extend(dispatch::struct_key_set(&cont, data));
            out.extend(dispatch::no_positional(&cont));
            out
        }
        Shape::Tuple(data) => {
            let mut out = decode::tuple(&cont, data);
            out.extend(encode::tuple(&cont, data));
            out.extend(validate::tuple(&cont, data));
            out.extend(dispatch::newtype_tagged(&cont));
            out.extend(dispatch::no_key_set(&cont));
            out.extend(dispatch::tuple_positional(&cont, data));
            out
        }
        Shape::Union(union) => {
            let mut out = decode::union(&cont, union);
            out.extend(encode::union(&cont, union));
            out.extend(validate::union(&cont, union));
            out.extend(dispatch::enum_tagged(&cont, union));
            out.extend(dispatch::no_key_set(&cont));
            out.extend(dispatch::enum_from(&cont, union));
            out.extend(dispatch::enum_positional(&cont, union));
            out
        }
    };
    if cont.json {
        out.extend(json::view(&cont));
    }
    Ok(out)
}
