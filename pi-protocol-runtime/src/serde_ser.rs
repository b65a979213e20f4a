//! `T` -> [`Payload`] with no `serde_json::Value` in between: a `serde::Serializer` that writes
//! the strict CBOR subset directly (docs/PROTOCOL.md sections 3 and 5).
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
//! - an error raised by `t`'s own `Serialize` implementation: `Encode`/`TypeRejected`;
//! - the first error raised inside `t` is `t`'s error even when a `Serialize` implementation
//!   ignores it and goes on (part of the failed entry may be written by then;
//!   `serde_json::to_value` would leave that entry out).
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

use crate::cbor::builder::{check_float, check_integer, depth_limit, Builder, Offsets};
use crate::cbor::object::{KeyOffsets, ObjectKeys, LINEAR_KEYS};
use crate::error::{ErrorKind, ProtocolError, Rule};
use crate::payload::Payload;

/// Bytes the output of [`Payload::from_serialize`] starts with room for.
const INITIAL_CAPACITY: usize = 256;

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
        // Room for a typical call from the start, rather than growing through 8, 16, 32, ...
        // bytes (a payload of up to 46 bytes is then copied inline, its buffer freed).
        let mut builder = Builder::with_capacity(INITIAL_CAPACITY);
        let written = value.serialize(&mut builder);
        // An error that `value` ignored left part of an entry written: the value fails.
        if let Some(first) = builder.first_error.take() {
            return Err(first);
        }
        written?;
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

/// Keeps `error` as the value's error unless one came before (see [`Compound::fail`]).
#[cold]
#[inline(never)]
fn record_error(builder: &mut Builder, error: ProtocolError) -> ProtocolError {
    if builder.first_error.is_none() {
        builder.first_error = Some(error.clone());
    }
    error
}

fn byte_string() -> ProtocolError {
    ProtocolError::new(ErrorKind::Encode, Rule::ByteString)
}

fn non_text_key() -> ProtocolError {
    ProtocolError::new(ErrorKind::Encode, Rule::NonTextKey)
}

/// Integer types whose every value lies within +-(2^53 - 1): written without a check.
macro_rules! small_integers {
    ($($method:ident: $ty:ty),* $(,)?) => {$(
        #[inline]
        fn $method(self, v: $ty) -> Result<(), ProtocolError> {
            self.out.integer(v.into());
            Ok(())
        }
    )*};
}

/// Scalars are written straight into the output; containers are [`Compound`]s, which check
/// the depth of their entries.
impl<'b> ser::Serializer for &'b mut Builder {
    type Ok = ();
    type Error = ProtocolError;
    type SerializeSeq = Compound<'b>;
    type SerializeTuple = Compound<'b>;
    type SerializeTupleStruct = Compound<'b>;
    type SerializeTupleVariant = Compound<'b>;
    type SerializeMap = Compound<'b>;
    type SerializeStruct = Compound<'b>;
    type SerializeStructVariant = Compound<'b>;

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<(), ProtocolError> {
        self.out.bool(v);
        Ok(())
    }

    small_integers!(
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
    );

    #[inline]
    fn serialize_i64(self, v: i64) -> Result<(), ProtocolError> {
        self.serialize_i128(v.into())
    }

    #[inline]
    fn serialize_i128(self, v: i128) -> Result<(), ProtocolError> {
        check_integer(v)?;
        self.out.integer(v as i64);
        Ok(())
    }

    #[inline]
    fn serialize_u64(self, v: u64) -> Result<(), ProtocolError> {
        self.serialize_i128(v.into())
    }

    fn serialize_u128(self, v: u128) -> Result<(), ProtocolError> {
        self.serialize_i128(i128::try_from(v).unwrap_or(i128::MAX))
    }

    fn serialize_f32(self, v: f32) -> Result<(), ProtocolError> {
        self.serialize_f64(v.into())
    }

    #[inline]
    fn serialize_f64(self, v: f64) -> Result<(), ProtocolError> {
        check_float(v)?;
        self.out.number(v);
        Ok(())
    }

    fn serialize_char(self, v: char) -> Result<(), ProtocolError> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }

    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), ProtocolError> {
        self.out.text(v);
        Ok(())
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<(), ProtocolError> {
        Err(byte_string())
    }

    #[inline]
    fn serialize_none(self) -> Result<(), ProtocolError> {
        self.out.null();
        Ok(())
    }

    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), ProtocolError> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), ProtocolError> {
        self.serialize_none()
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), ProtocolError> {
        self.serialize_none()
    }

    #[inline]
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), ProtocolError> {
        self.serialize_str(variant)
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
        let mut object = Compound::open(self, true, Some(1))?;
        object.field(variant, value)?;
        object.close()
    }

    #[inline]
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'b>, ProtocolError> {
        Compound::open(self, false, len)
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'b>, ProtocolError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Compound<'b>, ProtocolError> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'b>, ProtocolError> {
        Compound::open_variant(self, variant, false, len)
    }

    #[inline]
    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'b>, ProtocolError> {
        Compound::open(self, true, len)
    }

    #[inline(always)]
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Compound<'b>, ProtocolError> {
        Compound::open(self, true, Some(len))
    }

    #[inline(always)]
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'b>, ProtocolError> {
        Compound::open_variant(self, variant, true, len)
    }
}

/// An array or object being written, its state kept here (on the caller's stack) rather than
/// in the builder: its head, its count of entries, an object's keys.
pub(crate) struct Compound<'b> {
    builder: &'b mut Builder,
    is_object: bool,
    /// Its entries would lie deeper than 512 levels: it must stay empty.
    full: bool,
    /// A map key was written and its value is awaited (`SerializeMap` gives them apart).
    key_written: bool,
    /// The map key awaiting its value repeats an earlier one (see [`Builder::object_key`]).
    repeats: bool,
    head_at: usize,
    head_len: usize,
    /// The count its head holds (`usize::MAX` when it was not announced).
    announced: usize,
    count: usize,
    /// An object's keys so far.
    keys: ObjectKeys,
    /// Where an object's first keys start (see [`KeyOffsets`]).
    keys_at: KeyOffsets,
    /// For the data of a tuple or struct variant: the head of the one-entry object
    /// `{"Variant": data}` around it.
    variant_head: Option<(usize, usize)>,
}

impl<'b> Compound<'b> {
    /// Opens an array or object of `len` entries (`None`: not known yet).
    #[inline(always)]
    fn open(builder: &'b mut Builder, is_object: bool, len: Option<usize>) -> Result<Self, ProtocolError> {
        // Without a length, a one-byte head for now, rewritten when the container closes.
        let (head_at, head_len) = builder.open_container(is_object, len.unwrap_or(0));
        let keys = builder.keys.open();
        let full = builder.check_depth().is_err();
        Ok(Compound {
            builder,
            is_object,
            full,
            key_written: false,
            repeats: false,
            head_at,
            head_len,
            announced: len.unwrap_or(usize::MAX),
            count: 0,
            keys,
            keys_at: KeyOffsets::NONE,
            variant_head: None,
        })
    }

    /// Opens `{"variant": [...]}` or `{"variant": {...}}` and returns the inner container.
    #[inline(always)]
    fn open_variant(
        builder: &'b mut Builder,
        variant: &'static str,
        is_object: bool,
        len: usize,
    ) -> Result<Self, ProtocolError> {
        let outer = builder.open_container(true, 1);
        builder.check_depth()?;
        builder.out.text(variant);
        let mut inner = Compound::open(builder, is_object, Some(len))?;
        inner.variant_head = Some(outer);
        Ok(inner)
    }

    /// Refuses an entry deeper than 512 levels. `full` says it: each entry closes the
    /// containers it opens (or the whole value fails), so the depth is the one of the open.
    #[inline(always)]
    fn check_depth(&self) -> Result<(), ProtocolError> {
        if self.full {
            return Err(depth_limit());
        }
        Ok(())
    }

    /// Records `error`, raised while writing an entry, as the value's error even if the
    /// value's `Serialize` goes on (part of the entry may be written): see
    /// [`Payload::from_serialize`].
    #[inline(always)]
    fn fail(&mut self, error: ProtocolError) -> ProtocolError {
        // The builder alone goes out of line: the compound's own state stays in registers.
        record_error(self.builder, error)
    }

    /// Writes an array element.
    #[inline]
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProtocolError> {
        if let Err(error) = self.check_depth().and_then(|()| value.serialize(&mut *self.builder)) {
            return Err(self.fail(error));
        }
        self.count += 1;
        Ok(())
    }

    /// Writes a map key (of `SerializeMap`, which gives keys and values apart).
    #[inline]
    fn key(&mut self, key: &str) -> Result<(), ProtocolError> {
        if self.key_written {
            return Err(self.fail(non_text_key()));
        }
        self.key_written = true;
        self.repeats = self.object_key(key);
        Ok(())
    }

    /// Writes `key` as the next key of this object; `true` when it repeats an earlier one
    /// (see [`Builder::object_key`]).
    #[inline(always)]
    fn object_key(&mut self, key: &str) -> bool {
        let content_at = self.head_at + self.head_len;
        let key_at = self.builder.out.as_bytes().len();
        let offsets = Offsets::Recent(self.keys_at);
        let repeats = self.builder.object_key(key, &mut self.keys, content_at, self.count, offsets);
        if !repeats && self.count < LINEAR_KEYS {
            self.keys_at = self.keys_at.with(key_at);
        }
        repeats
    }

    /// Writes the value of the map key just written.
    #[inline]
    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProtocolError> {
        if !self.key_written {
            return Err(self.fail(non_text_key()));
        }
        self.key_written = false;
        let repeats = std::mem::take(&mut self.repeats);
        self.entry_value(value, repeats)
    }

    /// Writes an object entry.
    #[inline(always)]
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), ProtocolError> {
        let repeats = self.object_key(key);
        self.entry_value(value, repeats)
    }

    /// Writes the value of an object entry whose key was written (and `repeats` an earlier
    /// one).
    #[inline(always)]
    fn entry_value<T: Serialize + ?Sized>(&mut self, value: &T, repeats: bool) -> Result<(), ProtocolError> {
        if let Err(error) = self.check_depth().and_then(|()| value.serialize(&mut *self.builder)) {
            return Err(self.fail(error));
        }
        if repeats {
            let (old_end, grown) = self.builder.merge_repeated();
            self.keys_at = self.keys_at.after_merge(old_end, grown);
        } else {
            self.count += 1;
        }
        Ok(())
    }

    /// Completes the container (and the variant object around it).
    #[inline(always)]
    fn close(mut self) -> Result<(), ProtocolError> {
        if self.key_written {
            return Err(self.fail(non_text_key()));
        }
        if self.is_object {
            self.builder.keys.close(self.keys);
        }
        self.builder.close_container(self.is_object, self.head_at, self.head_len, self.count, self.announced);
        if let Some((head_at, head_len)) = self.variant_head {
            self.builder.close_container(true, head_at, head_len, 1, 1);
        }
        Ok(())
    }
}

/// The sequence-like compounds: each element is written in turn.
macro_rules! element_compounds {
    ($($trait:ident::$method:ident),* $(,)?) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = ProtocolError;

            #[inline]
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProtocolError> {
                self.element(value)
            }

            #[inline]
            fn end(self) -> Result<(), ProtocolError> {
                self.close()
            }
        }
    )*};
}

element_compounds!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = ProtocolError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), ProtocolError> {
        key.serialize(KeySerializer(self)).map_err(|error| self.fail(error))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ProtocolError> {
        self.value(value)
    }

    fn end(self) -> Result<(), ProtocolError> {
        self.close()
    }
}

/// The struct-like compounds: each field is a key and its value.
///
/// `serialize_field` is inlined into the caller, a derived `Serialize`, with everything the
/// compound does for a field (the compound's state stays in registers: nothing of it goes out
/// of line by reference). Its key is then a constant there, and so is each step of the
/// repeated-key filter ([`crate::cbor::object::KeyStack::insert`]) on the constant keys of an
/// object opened in the same function: the compiler makes the check of a struct's keys when
/// it compiles the struct's `Serialize`. When their filter bits differ, as for most structs,
/// no instruction of the check is left at run time (the key offsets kept for a flagged key,
/// [`KeyOffsets`], are not read, and go too); when two names share a bit, the second one is
/// compared with the keys before it at run time. Keys that repeat, or that are not constants,
/// are checked as they come.
macro_rules! field_compounds {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = ProtocolError;

            #[inline(always)]
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), ProtocolError> {
                self.field(key, value)
            }

            #[inline(always)]
            fn end(self) -> Result<(), ProtocolError> {
                self.close()
            }
        }
    )*};
}

field_compounds!(SerializeStruct, SerializeStructVariant);

/// Writes a map key: strings as they are; integers, booleans, chars and finite floats as the
/// strings `serde_json` makes of them; anything else is `Encode`/`NonTextKey`.
struct KeySerializer<'c, 'b>(&'c mut Compound<'b>);

impl KeySerializer<'_, '_> {
    /// A float key, written by `serde_json` itself: the key must be the text of
    /// `serde_json::to_value`, and its float formatting is its own (`-9.938049e+33` where
    /// `ryu` writes `-9.938049e33`; it changed between its versions).
    fn float<F: Serialize>(self, v: F, finite: bool) -> Result<(), ProtocolError> {
        if !finite {
            return Err(non_text_key());
        }
        let text = serde_json::to_string(&v).map_err(|_| non_text_key())?;
        self.0.key(&text)
    }
}

/// Integer keys, written in decimal.
macro_rules! integer_keys {
    ($($method:ident: $ty:ty),* $(,)?) => {$(
        fn $method(self, v: $ty) -> Result<(), ProtocolError> {
            self.0.key(&v.to_string())
        }
    )*};
}

impl ser::Serializer for KeySerializer<'_, '_> {
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

    integer_keys!(
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64, serialize_i128: i128,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_u128: u128,
    );

    fn serialize_f32(self, v: f32) -> Result<(), ProtocolError> {
        self.float(v, v.is_finite())
    }

    fn serialize_f64(self, v: f64) -> Result<(), ProtocolError> {
        self.float(v, v.is_finite())
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
