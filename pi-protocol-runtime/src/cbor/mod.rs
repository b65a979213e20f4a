//! The strict CBOR subset of docs/PROTOCOL.md sections 2 and 3: [`Reader`], [`Writer`] and the raw
//! [`decode_cbor`] / [`encode_cbor`] entry points over [`CborValue`].

pub(crate) mod builder;
pub(crate) mod object;
pub mod reader;
pub(crate) mod tree;
pub mod value;
pub mod writer;

pub use reader::{ItemShape, Reader, MAX_SAFE_INTEGER};
pub use value::{decode_cbor, encode_cbor, CborValue};
pub use writer::{is_encodable_number, Writer};
