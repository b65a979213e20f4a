//! Codec impls of the generic containers a schema maps to: `Vec<T>` (an array), `Option<T>` (a
//! nullable value: `null` is `None`), `Box<T>` (a recursive type's indirection) and
//! [`Record<T>`](crate::Record) (an object with free keys, in its own module); and the encoding
//! of a value behind a reference or an `Arc`.
//!
//! Arrays are read against the reader's limits: the container limit and the remaining input
//! bound the element count before anything is allocated, and the first allocation is capped
//! at [`INITIAL_ITEMS_BYTES`] whatever the count says, so a short frame cannot reserve a large
//! buffer (docs/PROTOCOL.md section 2).

use crate::cbor::{Reader, Writer};
use crate::codec::{Decode, Encode, JsonTypes, KeySet, LiteralEntry, Scalar, Tagged, Validate};
use crate::error::ProtocolError;

/// The most bytes a decoder reserves up front for the elements of one array; beyond it, the
/// vector grows as elements arrive (each element costs at least one input byte).
pub const INITIAL_ITEMS_BYTES: usize = 4096;

/// The capacity to reserve for `count` elements of `T`: all of them, up to
/// [`INITIAL_ITEMS_BYTES`] worth.
pub(crate) fn initial_capacity<T>(count: usize) -> usize {
    count.min(INITIAL_ITEMS_BYTES / std::mem::size_of::<T>().max(1))
}

impl<'de, T: Decode<'de>> Decode<'de> for Vec<T> {
    const TYPES: JsonTypes = JsonTypes::ARRAY;

    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        let count = reader.enter_array()?;
        let mut items = Vec::with_capacity(initial_capacity::<T>(count));
        for index in 0..count {
            items.push(T::decode(reader).map_err(|e| e.at_index(index as u64))?);
        }
        reader.leave();
        Ok(items)
    }
}

impl<T: Encode> Encode for Vec<T> {
    fn encode(&self, writer: &mut Writer) {
        writer.array_header(self.len());
        for item in self {
            item.encode(writer);
        }
    }
}

impl<T: Validate> Validate for Vec<T> {
    fn validate(&self) -> Result<(), ProtocolError> {
        for (index, item) in self.iter().enumerate() {
            item.validate().map_err(|e| e.at_index(index as u64))?;
        }
        Ok(())
    }
}

impl<T> Tagged for Vec<T> {}

/// `null` is `None`; anything else is a `T`.
impl<'de, T: Decode<'de>> Decode<'de> for Option<T> {
    const TYPES: JsonTypes = T::TYPES.union(JsonTypes::NULL);

    #[inline]
    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        if reader.peek_null() {
            reader.read_null()?;
            Ok(None)
        } else {
            T::decode(reader).map(Some)
        }
    }
}

/// `None` is written as `null`.
impl<T: Encode> Encode for Option<T> {
    fn encode(&self, writer: &mut Writer) {
        match self {
            Some(value) => value.encode(writer),
            None => writer.null(),
        }
    }
}

impl<T: Validate> Validate for Option<T> {
    fn validate(&self) -> Result<(), ProtocolError> {
        match self {
            Some(v) => v.validate(),
            None => Ok(()),
        }
    }
}

impl<T> Tagged for Option<T> {}

/// A box is its content: the indirection a recursive type needs costs nothing on the wire.
impl<'de, T: Decode<'de>> Decode<'de> for Box<T> {
    const TYPES: JsonTypes = T::TYPES;

    #[inline]
    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        T::decode(reader).map(Box::new)
    }

    #[inline]
    fn decode_entries(
        reader: &mut Reader<'de>,
        remaining: usize,
        consumed: &[LiteralEntry<'de>],
    ) -> Result<Self, ProtocolError> {
        T::decode_entries(reader, remaining, consumed).map(Box::new)
    }
}

impl<T: Encode> Encode for Box<T> {
    fn encode(&self, writer: &mut Writer) {
        (**self).encode(writer);
    }
}

impl<T: Validate> Validate for Box<T> {
    fn validate(&self) -> Result<(), ProtocolError> {
        (**self).validate()
    }
}

/// A message is encoded through a reference or an [`Arc`](std::sync::Arc) as itself, so that an
/// encoder generic over its message type can be handed messages that stay with their owner or
/// are shared between connections (`tokio_util`'s `MessageCodec<In, &Out>` in `pi-protocol`).
impl<T: Encode + ?Sized> Encode for &T {
    #[inline]
    fn encode(&self, writer: &mut Writer) {
        (**self).encode(writer);
    }
}

impl<T: Validate + ?Sized> Validate for &T {
    #[inline]
    fn validate(&self) -> Result<(), ProtocolError> {
        (**self).validate()
    }
}

impl<T: Encode + ?Sized> Encode for std::sync::Arc<T> {
    #[inline]
    fn encode(&self, writer: &mut Writer) {
        (**self).encode(writer);
    }
}

impl<T: Validate + ?Sized> Validate for std::sync::Arc<T> {
    #[inline]
    fn validate(&self) -> Result<(), ProtocolError> {
        (**self).validate()
    }
}

impl<T: Tagged> Tagged for Box<T> {
    fn accepts(key: &str, value: &Scalar<'_>) -> bool {
        T::accepts(key, value)
    }

    fn accepts_all(values: &[(&str, Option<Scalar<'_>>)]) -> bool {
        T::accepts_all(values)
    }
}

impl<T: KeySet> KeySet for Box<T> {
    const KEYS: &'static [&'static str] = T::KEYS;
    const REQUIRED: &'static [&'static str] = T::REQUIRED;
    const MAP: bool = T::MAP;
}

#[cfg(test)]
mod tests {
    use crate::{decode_message, encode_item, CborLimits, Integer, Rule};

    #[test]
    fn arrays_decode_in_order_and_report_the_index() {
        let items: Vec<Integer> = decode_message(&[0x83, 0x01, 0x02, 0x03], CborLimits::default()).unwrap();
        assert_eq!(items.iter().map(|n| n.get()).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(encode_item(&items, CborLimits::default()).unwrap(), vec![0x83, 0x01, 0x02, 0x03]);
        let err = decode_message::<Vec<Integer>>(&[0x82, 0x01, 0x61, b'x'], CborLimits::default()).unwrap_err();
        assert_eq!((err.rule(), err.path_string()), (Rule::WrongType { expected: "integer" }, "[1]".to_owned()));
    }

    #[test]
    fn a_count_beyond_the_input_is_refused_before_allocating() {
        // 0x9a: a 32-bit count of 1,000,000 elements in a 5-byte item.
        let err = decode_message::<Vec<Integer>>(&[0x9a, 0x00, 0x0f, 0x42, 0x40], CborLimits::default()).unwrap_err();
        assert_eq!(err.rule(), Rule::Truncated);
        assert_eq!(super::initial_capacity::<[u8; 64]>(1_000_000), 64);
        assert_eq!(super::initial_capacity::<u8>(3), 3);
    }

    #[test]
    fn null_is_none_and_none_is_null() {
        let items: Vec<Option<Integer>> = decode_message(&[0x82, 0xf6, 0x07], CborLimits::default()).unwrap();
        assert_eq!(items, vec![None, Some(Integer::from(7u8))]);
        assert_eq!(encode_item(&items, CborLimits::default()).unwrap(), vec![0x82, 0xf6, 0x07]);
        let boxed: Box<Integer> = decode_message(&[0x05], CborLimits::default()).unwrap();
        assert_eq!(boxed.get(), 5);
    }
}
