//! [`Payload`] -> `T` with no `serde_json::Value` in between: a `serde::Deserializer` reading a
//! payload's validated CBOR bytes (docs/PROTOCOL.md section 5).
//!
//! [`Payload::deserialize`] gives `T` what `serde_json::from_value(payload.to_value())` gives
//! it: the same JSON shapes (an integral number is an integer, `-0` stays a float; an enum is a
//! string or a one-entry object; a struct may also be read from an array; `Option` reads `null`
//! as `None`; map keys are strings, parsed when the key type is an integer or a boolean), and
//! strings are borrowed from the payload where `T` borrows (`&'a str`, `Cow<'a, str>` with
//! `#[serde(borrow)]`). A [`Payload`] inside `T` is a copy of its bytes, with no conversion.
//!
//! The payload itself was validated when it was built (strict CBOR, safe integers, finite
//! float64 numbers, no byte strings, the limits), so what can fail is `T` refusing the value,
//! reported as a [`ProtocolError`] of kind `Schema` that names the struct fields and array
//! indices on the way (`args[0].items[3].score`), never the data:
//!
//! - a value of the wrong JSON type where `T` asks for one: `WrongType` (`expected string`);
//! - a missing field: `MissingField`; an unknown field under `deny_unknown_fields`:
//!   `UnknownField`; an unknown enum variant: `NoVariant`; a field given twice (aliases):
//!   `DuplicateKey`;
//! - anything else `T` refuses (a number out of its range, a wrong length, its own checks):
//!   `TypeRejected`.
//!
//! ```
//! use pi_protocol_runtime::{Payload, Rule};
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, Debug, PartialEq)]
//! #[serde(rename_all = "camelCase")]
//! struct Call<'a> {
//!     service_id: &'a str,
//!     instance: Option<&'a str>,
//!     member: &'a str,
//!     args: Vec<f64>,
//! }
//!
//! let payload = Payload::from_json_str(r#"{"serviceId":"$chord.service","member":"add","args":[1,2.5]}"#)?;
//! let call: Call<'_> = payload.deserialize()?; // strings borrowed from `payload`
//! assert_eq!(call, Call { service_id: "$chord.service", instance: None, member: "add", args: vec![1.0, 2.5] });
//!
//! let bad = Payload::from_json_str(r#"{"serviceId":"s","member":"add","args":[1,"two"]}"#)?;
//! let error = bad.deserialize::<Call<'_>>().unwrap_err();
//! assert_eq!((error.rule(), error.path_string().as_str()), (Rule::WrongType { expected: "number" }, "args[1]"));
//! # Ok::<(), pi_protocol_runtime::ProtocolError>(())
//! ```

use std::fmt::Display;

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::Deserialize;

use crate::cbor::reader::utf8_str;
use crate::error::{ProtocolError, Rule};
use crate::payload::Payload;
use crate::serde_impls::PAYLOAD_TOKEN;

impl Payload {
    /// Converts the payload to `T` directly from its bytes, borrowing strings from it where `T`
    /// borrows (see [`crate::serde_de`]). Gives what
    /// `serde_json::from_value(payload.to_value())` gives, without building the value.
    ///
    /// (`Payload` also implements `serde::Deserialize`, whose associated function has the same
    /// name; call that one as `<Payload as serde::Deserialize>::deserialize(deserializer)`.)
    ///
    /// # Errors
    /// `Schema` errors naming the field path: `WrongType`, `MissingField`, `UnknownField`,
    /// `NoVariant`, `DuplicateKey`, `TypeRejected`.
    ///
    /// ```
    /// let payload = pi_protocol_runtime::Payload::from_json_str(r#"["notes.txt", 3]"#)?;
    /// let (name, size): (&str, u32) = payload.deserialize()?;
    /// assert_eq!((name, size), ("notes.txt", 3));
    /// assert!(payload.deserialize::<(String, u8, bool)>().is_err());
    /// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
    /// ```
    pub fn deserialize<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ProtocolError> {
        T::deserialize(&mut PayloadDeserializer::new(self))
    }
}

/// A `serde::Deserializer` over one payload's bytes (see the module documentation); use it
/// through [`Payload::deserialize`], or directly with tools that take a deserializer.
///
/// ```
/// use pi_protocol_runtime::{serde_de::PayloadDeserializer, Payload};
/// use serde::Deserialize;
/// let payload = Payload::from_json_str(r#"{"b": 1, "a": [true, null]}"#)?;
/// let value = serde_json::Value::deserialize(&mut PayloadDeserializer::new(&payload))?;
/// assert_eq!(value, payload.to_value());
/// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
/// ```
#[derive(Debug, Clone)]
pub struct PayloadDeserializer<'de> {
    input: &'de [u8],
    pos: usize,
}

/// One item's head, with the content of a text string.
#[derive(Debug, Clone, Copy)]
enum Item<'de> {
    Unsigned(u64),
    /// `-1 - n`.
    Negative(u64),
    Float(f64),
    /// A text string's bytes (validated UTF-8 when the payload was built).
    Text(&'de [u8]),
    Array(usize),
    Map(usize),
    Bool(bool),
    Null,
}

impl<'de> PayloadDeserializer<'de> {
    /// A deserializer positioned at the start of `payload`.
    pub fn new(payload: &'de Payload) -> Self {
        PayloadDeserializer { input: payload.as_cbor(), pos: 0 }
    }

    /// Reads the head at the cursor (and a text string's content).
    #[inline(always)]
    fn item(&mut self) -> Result<Item<'de>, ProtocolError> {
        let Some(&b) = self.input.get(self.pos) else { return Err(ProtocolError::cbor(Rule::Truncated)) };
        let ai = b & 0x1f;
        let arg = if ai < 24 {
            self.pos += 1;
            u64::from(ai)
        } else {
            self.wide_argument(ai)?
        };
        Ok(match b >> 5 {
            0 => Item::Unsigned(arg),
            1 => Item::Negative(arg),
            3 => {
                let start = self.pos;
                let end = usize::try_from(arg).ok().and_then(|n| start.checked_add(n));
                let text = end.and_then(|end| self.input.get(start..end)).ok_or_else(truncated)?;
                self.pos += text.len();
                Item::Text(text)
            }
            4 => Item::Array(usize::try_from(arg).map_err(|_| truncated())?),
            5 => Item::Map(usize::try_from(arg).map_err(|_| truncated())?),
            7 => match ai {
                20 => Item::Bool(false),
                21 => Item::Bool(true),
                22 => Item::Null,
                27 => Item::Float(f64::from_bits(arg)),
                _ => return Err(ProtocolError::cbor(Rule::UnsupportedSimple)),
            },
            2 => return Err(ProtocolError::schema(Rule::ByteString)),
            _ => return Err(ProtocolError::cbor(Rule::Tag)),
        })
    }

    /// The argument of `1 << (ai - 24)` bytes after the initial byte at the cursor.
    #[inline]
    fn wide_argument(&mut self, ai: u8) -> Result<u64, ProtocolError> {
        let after = self.pos + 1;
        // One load of each width (a fold over the bytes took a loop of up to eight steps).
        let (arg, width) = match ai {
            24 => (self.input.get(after).map(|&b| u64::from(b)), 1),
            25 => (self.be_bytes(after).map(|b| u64::from(u16::from_be_bytes(b))), 2),
            26 => (self.be_bytes(after).map(|b| u64::from(u32::from_be_bytes(b))), 4),
            27 => (self.be_bytes(after).map(u64::from_be_bytes), 8),
            _ => return Err(ProtocolError::cbor(Rule::ReservedAdditionalInfo)),
        };
        let arg = arg.ok_or_else(truncated)?;
        self.pos = after + width;
        Ok(arg)
    }

    /// The `N` bytes at `at`, when the input holds them.
    #[inline(always)]
    fn be_bytes<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.input.get(at..at + N).and_then(|b| b.try_into().ok())
    }

    /// Moves past the item at the cursor.
    fn skip(&mut self) -> Result<(), ProtocolError> {
        let mut pending = 1usize;
        while pending > 0 {
            pending -= 1;
            match self.item()? {
                Item::Array(n) => pending = pending.saturating_add(n),
                Item::Map(n) => pending = pending.saturating_add(n.saturating_mul(2)),
                _ => {}
            }
        }
        Ok(())
    }

    /// Hands `item` (already read) to `visitor` as `serde_json::Value` would.
    #[inline]
    fn visit_item<V: Visitor<'de>>(&mut self, item: Item<'de>, visitor: V) -> Result<V::Value, ProtocolError> {
        match item {
            Item::Unsigned(_) | Item::Negative(_) | Item::Float(_) => visit_number(item, visitor),
            Item::Text(text) => visitor.visit_borrowed_str(text_str(text)?),
            Item::Array(n) => self.visit_array(n, visitor),
            Item::Map(n) => self.visit_map(n, &[], visitor),
            Item::Bool(b) => visitor.visit_bool(b),
            Item::Null => visitor.visit_unit(),
        }
    }

    fn visit_array<V: Visitor<'de>>(&mut self, n: usize, visitor: V) -> Result<V::Value, ProtocolError> {
        let mut seq = Seq { de: self, remaining: n, index: 0 };
        let value = visitor.visit_seq(&mut seq)?;
        if seq.remaining != 0 {
            return Err(rejected());
        }
        Ok(value)
    }

    fn visit_map<V: Visitor<'de>>(
        &mut self,
        n: usize,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProtocolError> {
        let mut map = Map { de: self, remaining: n, fields, key_at: 0 };
        let value = visitor.visit_map(&mut map)?;
        if map.remaining != 0 {
            return Err(rejected());
        }
        Ok(value)
    }
}

/// The text of a validated payload as `&str`.
#[inline]
fn text_str(text: &[u8]) -> Result<&str, ProtocolError> {
    utf8_str(text).ok_or_else(|| ProtocolError::cbor(Rule::InvalidUtf8))
}

/// Hands a number to `visitor` as `serde_json::Value` would: an integral value (except `-0`)
/// as `u64` when not negative, else `i64`; any other as `f64`.
#[inline]
fn visit_number<'de, V: Visitor<'de>>(item: Item<'de>, visitor: V) -> Result<V::Value, ProtocolError> {
    match item {
        Item::Unsigned(n) => visitor.visit_u64(n),
        // Validated: n < 2^53 - 1.
        Item::Negative(n) => visitor.visit_i64(-1 - n as i64),
        Item::Float(v) if (v as i64) as f64 == v && !(v == 0.0 && v.is_sign_negative()) => {
            if v >= 0.0 {
                visitor.visit_u64(v as u64)
            } else {
                visitor.visit_i64(v as i64)
            }
        }
        Item::Float(v) => visitor.visit_f64(v),
        _ => Err(wrong_type("number")),
    }
}

#[cold]
fn truncated() -> ProtocolError {
    ProtocolError::cbor(Rule::Truncated)
}

#[cold]
fn rejected() -> ProtocolError {
    ProtocolError::schema(Rule::TypeRejected)
}

#[cold]
fn wrong_type(expected: &'static str) -> ProtocolError {
    ProtocolError::schema(Rule::WrongType { expected })
}

/// Errors raised by `T`'s `Deserialize` implementation (serde derive's included). Messages are
/// dropped: they may quote the value, and a [`ProtocolError`] never does.
impl de::Error for ProtocolError {
    #[cold]
    fn custom<T: Display>(_msg: T) -> Self {
        rejected()
    }

    #[cold]
    fn unknown_variant(_variant: &str, _expected: &'static [&'static str]) -> Self {
        ProtocolError::schema(Rule::NoVariant)
    }

    #[cold]
    fn unknown_field(_field: &str, _expected: &'static [&'static str]) -> Self {
        ProtocolError::schema(Rule::UnknownField)
    }

    #[cold]
    fn missing_field(field: &'static str) -> Self {
        ProtocolError::schema(Rule::MissingField).at(field)
    }

    #[cold]
    fn duplicate_field(field: &'static str) -> Self {
        ProtocolError::schema(Rule::DuplicateKey).at(field)
    }
}

macro_rules! numbers {
    ($($method:ident)*) => {$(
        #[inline]
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
            let item = self.item()?;
            visit_number(item, visitor)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut PayloadDeserializer<'de> {
    type Error = ProtocolError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        let item = self.item()?;
        self.visit_item(item, visitor)
    }

    numbers!(
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64
    );

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        match self.item()? {
            Item::Bool(b) => visitor.visit_bool(b),
            _ => Err(wrong_type("boolean")),
        }
    }

    #[inline]
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        match self.item()? {
            Item::Text(text) => visitor.visit_borrowed_str(text_str(text)?),
            _ => Err(wrong_type("string")),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        self.deserialize_str(visitor)
    }

    /// Bytes are not JSON: a string gives its UTF-8 bytes, an array its elements (as
    /// `serde_json::Value` does).
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        match self.item()? {
            Item::Text(text) => visitor.visit_borrowed_str(text_str(text)?),
            Item::Array(n) => self.visit_array(n, visitor),
            _ => Err(wrong_type("string")),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        self.deserialize_bytes(visitor)
    }

    #[inline]
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        if self.input.get(self.pos) == Some(&0xf6) {
            self.pos += 1;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        match self.item()? {
            Item::Null => visitor.visit_unit(),
            _ => Err(wrong_type("null")),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, ProtocolError> {
        self.deserialize_unit(visitor)
    }

    /// A [`Payload`] inside `T` takes the item's bytes as they are.
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProtocolError> {
        if name == PAYLOAD_TOKEN {
            let start = self.pos;
            self.skip()?;
            return visitor.visit_borrowed_bytes(&self.input[start..self.pos]);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        match self.item()? {
            Item::Array(n) => self.visit_array(n, visitor),
            _ => Err(wrong_type("array")),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, ProtocolError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, ProtocolError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        match self.item()? {
            Item::Map(n) => self.visit_map(n, &[], visitor),
            _ => Err(wrong_type("object")),
        }
    }

    /// An object, or an array of the fields in order (as `serde_json::Value` allows).
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProtocolError> {
        match self.item()? {
            Item::Map(n) => self.visit_map(n, fields, visitor),
            Item::Array(n) => self.visit_array(n, visitor),
            _ => Err(wrong_type("object")),
        }
    }

    /// A unit variant as its name; a variant with data as a one-entry object.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProtocolError> {
        match self.item()? {
            Item::Text(text) => visitor.visit_enum(text_str(text)?.into_deserializer()),
            Item::Map(1) => visitor.visit_enum(Enum { de: self }),
            Item::Map(_) => Err(rejected()),
            _ => Err(wrong_type("string or object")),
        }
    }

    #[inline]
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        self.skip()?;
        visitor.visit_unit()
    }
}

/// The elements of an array.
struct Seq<'a, 'de> {
    de: &'a mut PayloadDeserializer<'de>,
    remaining: usize,
    index: u64,
}

impl<'de> de::SeqAccess<'de> for Seq<'_, 'de> {
    type Error = ProtocolError;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, ProtocolError> {
        if self.remaining == 0 {
            return Ok(None);
        }
        self.remaining -= 1;
        let index = self.index;
        self.index += 1;
        seed.deserialize(&mut *self.de).map(Some).map_err(|e| e.at_index(index))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.remaining)
    }
}

/// The entries of an object; `fields` are the struct's field names, for error paths.
struct Map<'a, 'de> {
    de: &'a mut PayloadDeserializer<'de>,
    remaining: usize,
    fields: &'static [&'static str],
    /// Where the last key read starts.
    key_at: usize,
}

impl Map<'_, '_> {
    /// Adds the struct field whose value failed to `error`'s path.
    #[cold]
    fn at_field(&self, error: ProtocolError) -> ProtocolError {
        let mut key = PayloadDeserializer { input: self.de.input, pos: self.key_at };
        match key.item() {
            Ok(Item::Text(text)) => match self.fields.iter().find(|field| field.as_bytes() == text) {
                Some(field) => error.at(field),
                None => error,
            },
            _ => error,
        }
    }
}

impl<'de> de::MapAccess<'de> for Map<'_, 'de> {
    type Error = ProtocolError;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, ProtocolError> {
        if self.remaining == 0 {
            return Ok(None);
        }
        self.remaining -= 1;
        self.key_at = self.de.pos;
        seed.deserialize(Key { de: &mut *self.de }).map(Some)
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ProtocolError> {
        seed.deserialize(&mut *self.de).map_err(|e| self.at_field(e))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.remaining)
    }
}

/// A map key: a string, which integer and boolean key types parse (as `serde_json` does).
struct Key<'a, 'de> {
    de: &'a mut PayloadDeserializer<'de>,
}

impl<'de> Key<'_, 'de> {
    #[inline]
    fn text(&mut self) -> Result<&'de str, ProtocolError> {
        match self.de.item()? {
            Item::Text(text) => text_str(text),
            _ => Err(ProtocolError::cbor(Rule::NonTextKey)),
        }
    }
}

macro_rules! parsed_keys {
    ($($method:ident => $ty:ty, $visit:ident;)*) => {$(
        fn $method<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ProtocolError> {
            let text = self.text()?;
            match text.parse::<$ty>() {
                Ok(n) => visitor.$visit(n),
                Err(_) => visitor.visit_borrowed_str(text),
            }
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Key<'_, 'de> {
    type Error = ProtocolError;

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, ProtocolError> {
        visitor.visit_borrowed_str(self.text()?)
    }

    parsed_keys! {
        deserialize_i8 => i8, visit_i8;
        deserialize_i16 => i16, visit_i16;
        deserialize_i32 => i32, visit_i32;
        deserialize_i64 => i64, visit_i64;
        deserialize_i128 => i128, visit_i128;
        deserialize_u8 => u8, visit_u8;
        deserialize_u16 => u16, visit_u16;
        deserialize_u32 => u32, visit_u32;
        deserialize_u64 => u64, visit_u64;
        deserialize_u128 => u128, visit_u128;
        deserialize_bool => bool, visit_bool;
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtocolError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProtocolError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        mut self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProtocolError> {
        visitor.visit_enum(self.text()?.into_deserializer())
    }

    serde::forward_to_deserialize_any! {
        f32 f64 char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

/// A variant given as a one-entry object `{"Variant": data}`.
struct Enum<'a, 'de> {
    de: &'a mut PayloadDeserializer<'de>,
}

impl<'de, 'a> de::EnumAccess<'de> for Enum<'a, 'de> {
    type Error = ProtocolError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), ProtocolError> {
        let variant = seed.deserialize(Key { de: &mut *self.de })?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for Enum<'_, 'de> {
    type Error = ProtocolError;

    fn unit_variant(self) -> Result<(), ProtocolError> {
        match self.de.item()? {
            Item::Null => Ok(()),
            _ => Err(wrong_type("null")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, ProtocolError> {
        seed.deserialize(self.de)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, ProtocolError> {
        de::Deserializer::deserialize_seq(self.de, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProtocolError> {
        de::Deserializer::deserialize_struct(self.de, "", fields, visitor)
    }
}
