//! `T` -> [`Payload`] with no `serde_json::Value` in between: a `serde::Serializer` that writes
//! the strict CBOR subset directly (PROTOCOL.md sections 3 and 5).
//!
//! [`Payload::from_serialize`] gives the value that `Payload::from_value(&serde_json::to_value(t)?)`
//! gives (values take the shapes `serde_json` gives them: a unit struct is `null`, an enum
//! variant with data is `{"Variant": data}`, map keys that are integers, booleans or chars
//! become strings, ...), with keys in the order `t` serializes them (the bytes are the same
//! when `serde_json::Map` keeps that order, with `preserve_order`), and with the rules of
//! [`Payload::from_value`] and its errors:
//!
//! - a number must be finite, and within +-(2^53 - 1) when integral: `Encode`/`UnencodableNumber`
//!   (`serde_json::to_value` would turn NaN and the infinities into `null` instead);
//! - at most 512 levels of nesting below the payload: `Encode`/`DepthLimit`;
//! - no byte strings (`serialize_bytes`, as `serde_bytes` uses): `Encode`/`ByteString`
//!   (`serde_json` would write an array of numbers);
//! - map keys must be strings, or integers, booleans, chars or finite floats written as
//!   strings: `Encode`/`NonTextKey` for any other key;
//! - a key written twice in one map keeps its first place and takes the last value, as
//!   `serde_json::Map` with `preserve_order` does;
//! - an error raised by `t`'s own `Serialize` implementation: `Encode`/`TypeRejected`.
//!
//! ```
//! use pi_protocol_runtime::Payload;
//! use serde::Serialize;
//!
//! #[derive(Serialize)]
//! #[serde(rename_all = "camelCase")]
//! struct Call<'a> {
//!     service_id: &'a str,
//!     member: &'a str,
//!     args: (u32, Option<f64>),
//! }
//!
//! let call = Call { service_id: "session", member: "seek", args: (7, Some(0.5)) };
//! let payload = Payload::from_serialize(&call)?;
//! assert_eq!(serde_json::to_string(&payload).unwrap(), r#"{"serviceId":"session","member":"seek","args":[7,0.5]}"#);
//! assert_eq!(payload.to_value(), serde_json::to_value(&call).unwrap());
//!
//! // The strict-JSON rules apply as the value is written.
//! let too_big = Call { service_id: "s", member: "m", args: (0, Some(f64::INFINITY)) };
//! assert_eq!(Payload::from_serialize(&too_big).unwrap_err().rule(), pi_protocol_runtime::Rule::UnencodableNumber);
//! # Ok::<(), pi_protocol_runtime::ProtocolError>(())
//! ```

use std::fmt::Display;

use serde::ser::{self, Impossible, Serialize};

use crate::cbor::builder::Builder;
use crate::error::{ErrorKind, ProtocolError, Rule};
use crate::payload::Payload;

impl Payload {
    /// Serializes `value` into a payload directly, with the rules and errors of
    /// [`from_value`](Self::from_value) (see [`crate::serde_ser`]): the value of
    /// `Payload::from_value(&serde_json::to_value(value)?)`, keys in the order `value` writes
    /// them.
    ///
    /// # Errors
    /// `Encode` errors: `UnencodableNumber`, `DepthLimit`, `ByteString`, `NonTextKey`,
    /// `TypeRejected`.
    ///
    /// ```
    /// let payload = pi_protocol_runtime::Payload::from_serialize(&("write", ["a", "b"], 2.5))?;
    /// assert_eq!(serde_json::to_string(&payload).unwrap(), r#"["write",["a","b"],2.5]"#);
    /// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
    /// ```
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Payload, ProtocolError> {
        let mut builder = Builder::new();
        value.serialize(&mut builder)?;
        builder.finish()
    }
}

/// Errors raised by a type's own `Serialize` implementation. The message is dropped: it may
/// quote the value, and a [`ProtocolError`] never does.
impl ser::Error for ProtocolError {
    fn custom<T: Display>(_msg: T) -> Self {
        ProtocolError::new(ErrorKind::Encode, Rule::TypeRejected)
    }
}

fn byte_string() -> ProtocolError {
    ProtocolError::new(ErrorKind::Encode, Rule::ByteString)
}

fn non_text_key() -> ProtocolError {
    ProtocolError::new(ErrorKind::Encode, Rule::NonTextKey)
}

impl<'b> ser::Serializer for &'b mut Builder {
    type Ok = ();
    type Error = ProtocolError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Variant<'b>;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Variant<'b>;

    fn serialize_bool(self, v: bool) -> Result<(), ProtocolError> {
        self.bool(v)
    }

    fn serialize_i8(self, v: i8) -> Result<(), ProtocolError> {
        self.integer(v.into())
    }

    fn serialize_i16(self, v: i16) -> Result<(), ProtocolError> {
        self.integer(v.into())
    }

    fn serialize_i32(self, v: i32) -> Result<(), ProtocolError> {
        self.integer(v.into())
    }

    fn serialize_i64(self, v: i64) -> Result<(), ProtocolError> {
        self.integer(v.into())
    }

    fn serialize_i128(self, v: i128) -> Result<(), ProtocolError> {
        self.integer(v)
    }

    fn serialize_u8(self, v: u8) -> Result<(), ProtocolError> {
        self.integer(v.into())
    }

    fn serialize_u16(self, v: u16) -> Result<(), ProtocolError> {
        self.integer(v.into())
    }

    fn serialize_u32(self, v: u32) -> Result<(), ProtocolError> {
        self.integer(v.into())
    }

    fn serialize_u64(self, v: u64) -> Result<(), ProtocolError> {
        self.integer(v.into())
    }

    fn serialize_u128(self, v: u128) -> Result<(), ProtocolError> {
        self.integer(i128::try_from(v).unwrap_or(i128::MAX))
    }

    fn serialize_f32(self, v: f32) -> Result<(), ProtocolError> {
        self.float(v.into())
    }

    fn serialize_f64(self, v: f64) -> Result<(), ProtocolError> {
        self.float(v)
    }

    fn serialize_char(self, v: char) -> Result<(), ProtocolError> {
        self.text(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<(), ProtocolError> {
        self.text(v)
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<(), ProtocolError> {
        Err(byte_string())
    }

    fn serialize_none(self) -> Result<(), ProtocolError> {
        self.null()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), ProtocolError> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), ProtocolError> {
        self.null()
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), ProtocolError> {
        self.null()
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), ProtocolError> {
        self.text(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), ProtocolError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), ProtocolError> {
        self.begin_object(Some(1))?;
        self.key(variant)?;
        value.serialize(&mut *self)?;
        self.end()
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self, ProtocolError> {
        self.begin_array(len)?;
        Ok(self)
    }

    fn serialize_tuple(self, len: usize) -> Result<Self, ProtocolError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Self, ProtocolError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<'b>, ProtocolError> {
        self.begin_object(Some(1))?;
        self.key(variant)?;
        self.begin_array(Some(len))?;
        Ok(Variant(self))
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self, ProtocolError> {
        self.begin_object(len)?;
        Ok(self)
    }

    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Self, ProtocolError> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<'b>, ProtocolError> {
        self.begin_object(Some(1))?;
        self.key(variant)?;
        self.begin_object(Some(len))?;
        Ok(Variant(self))
    }
}

impl ser::SerializeSeq for &mut Builder {
    type Ok = ();
    type Error = ProtocolError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProtocolError> {
        value.serialize(&mut **self)
    }

    fn end(self) -> Result<(), ProtocolError> {
        Builder::end(self)
    }
}

impl ser::SerializeTuple for &mut Builder {
    type Ok = ();
    type Error = ProtocolError;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProtocolError> {
        value.serialize(&mut **self)
    }

    fn end(self) -> Result<(), ProtocolError> {
        Builder::end(self)
    }
}

impl ser::SerializeTupleStruct for &mut Builder {
    type Ok = ();
    type Error = ProtocolError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProtocolError> {
        value.serialize(&mut **self)
    }

    fn end(self) -> Result<(), ProtocolError> {
        Builder::end(self)
    }
}

impl ser::SerializeMap for &mut Builder {
    type Ok = ();
    type Error = ProtocolError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), ProtocolError> {
        key.serialize(KeySerializer(&mut **self))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProtocolError> {
        value.serialize(&mut **self)
    }

    fn end(self) -> Result<(), ProtocolError> {
        Builder::end(self)
    }
}

impl ser::SerializeStruct for &mut Builder {
    type Ok = ();
    type Error = ProtocolError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), ProtocolError> {
        self.key(key)?;
        value.serialize(&mut **self)
    }

    fn end(self) -> Result<(), ProtocolError> {
        Builder::end(self)
    }
}

/// The data of a tuple or struct variant, inside its one-entry `{"Variant": ...}` object.
pub(crate) struct Variant<'b>(&'b mut Builder);

impl ser::SerializeTupleVariant for Variant<'_> {
    type Ok = ();
    type Error = ProtocolError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProtocolError> {
        value.serialize(&mut *self.0)
    }

    fn end(self) -> Result<(), ProtocolError> {
        self.0.end()?;
        self.0.end()
    }
}

impl ser::SerializeStructVariant for Variant<'_> {
    type Ok = ();
    type Error = ProtocolError;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), ProtocolError> {
        self.0.key(key)?;
        value.serialize(&mut *self.0)
    }

    fn end(self) -> Result<(), ProtocolError> {
        self.0.end()?;
        self.0.end()
    }
}

/// Writes a map key: strings as they are; integers, booleans, chars and finite floats as the
/// strings `serde_json` makes of them; anything else is `Encode`/`NonTextKey`.
struct KeySerializer<'b>(&'b mut Builder);

impl KeySerializer<'_> {
    fn display(self, value: impl Display) -> Result<(), ProtocolError> {
        self.0.key(&value.to_string())
    }
}

impl ser::Serializer for KeySerializer<'_> {
    type Ok = ();
    type Error = ProtocolError;
    type SerializeSeq = Impossible<(), ProtocolError>;
    type SerializeTuple = Impossible<(), ProtocolError>;
    type SerializeTupleStruct = Impossible<(), ProtocolError>;
    type SerializeTupleVariant = Impossible<(), ProtocolError>;
    type SerializeMap = Impossible<(), ProtocolError>;
    type SerializeStruct = Impossible<(), ProtocolError>;
    type SerializeStructVariant = Impossible<(), ProtocolError>;

    fn serialize_str(self, v: &str) -> Result<(), ProtocolError> {
        self.0.key(v)
    }

    fn serialize_char(self, v: char) -> Result<(), ProtocolError> {
        self.0.key(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_bool(self, v: bool) -> Result<(), ProtocolError> {
        self.0.key(if v { "true" } else { "false" })
    }

    fn serialize_i8(self, v: i8) -> Result<(), ProtocolError> {
        self.display(v)
    }

    fn serialize_i16(self, v: i16) -> Result<(), ProtocolError> {
        self.display(v)
    }

    fn serialize_i32(self, v: i32) -> Result<(), ProtocolError> {
        self.display(v)
    }

    fn serialize_i64(self, v: i64) -> Result<(), ProtocolError> {
        self.display(v)
    }

    fn serialize_i128(self, v: i128) -> Result<(), ProtocolError> {
        self.display(v)
    }

    fn serialize_u8(self, v: u8) -> Result<(), ProtocolError> {
        self.display(v)
    }

    fn serialize_u16(self, v: u16) -> Result<(), ProtocolError> {
        self.display(v)
    }

    fn serialize_u32(self, v: u32) -> Result<(), ProtocolError> {
        self.display(v)
    }

    fn serialize_u64(self, v: u64) -> Result<(), ProtocolError> {
        self.display(v)
    }

    fn serialize_u128(self, v: u128) -> Result<(), ProtocolError> {
        self.display(v)
    }

    fn serialize_f32(self, v: f32) -> Result<(), ProtocolError> {
        if !v.is_finite() {
            return Err(non_text_key());
        }
        self.0.key(ryu::Buffer::new().format_finite(v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), ProtocolError> {
        if !v.is_finite() {
            return Err(non_text_key());
        }
        self.0.key(ryu::Buffer::new().format_finite(v))
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<(), ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_none(self) -> Result<(), ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_unit(self) -> Result<(), ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), ProtocolError> {
        self.0.key(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), ProtocolError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, ProtocolError> {
        Err(non_text_key())
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, ProtocolError> {
        Err(non_text_key())
    }
}
