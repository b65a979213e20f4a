//! [`Record`]: an object whose keys are data, not schema (JSON Schema `additionalProperties` or
//! `patternProperties` holding a schema), kept in wire order.

use std::collections::HashSet;
use std::fmt;

use compact_str::CompactString;

use crate::cbor::{Reader, Writer};
use crate::codec::{Decode, Encode, JsonTypes, Tagged, Validate};
use crate::containers::initial_capacity;
use crate::error::{ProtocolError, Rule};

/// Maps of up to this many entries look for duplicate keys by comparing each key with the
/// earlier ones; larger maps use a hash set.
const LINEAR_DUPLICATE_SCAN: usize = 16;

/// An object with free keys, every value a `T`, in insertion (wire) order.
///
/// Keys are unique: [`insert`](Self::insert) replaces the value of a key already present,
/// keeping its place, and a decoded map holding a key twice is refused (`Cbor`/`DuplicateKey`,
/// docs/PROTOCOL.md section 2). Constraints on keys (a key `pattern`, lengths) are the schema's and
/// are checked by the type that holds the record. Encoding writes the entries in order, so a
/// decoded record re-encodes to the same bytes.
///
/// Field paths in errors name an entry by its position (`details{2}`), never by its key, which
/// is peer data.
///
/// ```
/// use pi_protocol_runtime::{decode_message, encode_item, CborLimits, Integer, Record};
/// let mut scores: Record<Integer> = Record::new();
/// scores.insert("b", Integer::from(2u8));
/// scores.insert("a", Integer::from(1u8));
/// assert_eq!(scores.keys().collect::<Vec<_>>(), ["b", "a"]);
/// let bytes = encode_item(&scores, CborLimits::default()).unwrap();
/// assert_eq!(bytes, [0xa2, 0x61, b'b', 0x02, 0x61, b'a', 0x01]);
/// let back: Record<Integer> = decode_message(&bytes, CborLimits::default()).unwrap();
/// assert_eq!(back, scores);
/// assert_eq!(back.get("a"), Some(&Integer::from(1u8)));
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Record<T> {
    entries: Vec<(CompactString, T)>,
}

impl<T> Record<T> {
    /// An empty record.
    #[must_use]
    pub fn new() -> Self {
        Record { entries: Vec::new() }
    }

    /// The number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the record has no entries.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value under `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&T> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value under `key`, mutably.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut T> {
        self.entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `key` is present.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `value`: in place when the key is present (returning the old value), else
    /// at the end.
    pub fn insert(&mut self, key: impl AsRef<str>, value: T) -> Option<T> {
        let key = key.as_ref();
        match self.get_mut(key) {
            Some(slot) => Some(std::mem::replace(slot, value)),
            None => {
                self.entries.push((CompactString::new(key), value));
                None
            }
        }
    }

    /// Removes `key`, keeping the order of the others, and returns its value.
    pub fn remove(&mut self, key: &str) -> Option<T> {
        let index = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(index).1)
    }

    /// The entries in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &T)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// The values in order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &T> {
        self.entries.iter().map(|(_, v)| v)
    }
}

impl<T> Default for Record<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for Record<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: AsRef<str>, T> FromIterator<(K, T)> for Record<T> {
    /// Collects entries in order; a repeated key keeps its first place and its last value.
    fn from_iter<I: IntoIterator<Item = (K, T)>>(iter: I) -> Self {
        let mut record = Record::new();
        record.extend(iter);
        record
    }
}

impl<K: AsRef<str>, T> Extend<(K, T)> for Record<T> {
    fn extend<I: IntoIterator<Item = (K, T)>>(&mut self, iter: I) {
        for (key, value) in iter {
            self.insert(key, value);
        }
    }
}

impl<T> IntoIterator for Record<T> {
    type Item = (String, T);
    type IntoIter = std::iter::Map<std::vec::IntoIter<(CompactString, T)>, fn((CompactString, T)) -> (String, T)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter().map(|(k, v)| (k.into_string(), v))
    }
}

impl<'de, T: Decode<'de>> Decode<'de> for Record<T> {
    const TYPES: JsonTypes = JsonTypes::OBJECT;

    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        let count = reader.enter_map()?;
        let mut entries: Vec<(CompactString, T)> = Vec::with_capacity(initial_capacity::<(CompactString, T)>(count));
        let mut seen: Option<HashSet<&'de str>> = None;
        for index in 0..count {
            let key = reader.read_key()?;
            let duplicate = if count <= LINEAR_DUPLICATE_SCAN {
                entries.iter().any(|(k, _)| k == key)
            } else {
                !seen.get_or_insert_with(HashSet::new).insert(key)
            };
            if duplicate {
                return Err(ProtocolError::cbor(Rule::DuplicateKey));
            }
            let value = T::decode(reader).map_err(|e| e.at_entry(index as u64))?;
            entries.push((CompactString::new(key), value));
        }
        reader.leave();
        Ok(Record { entries })
    }
}

impl<T: Encode> Encode for Record<T> {
    fn encode(&self, writer: &mut Writer) {
        writer.map_header(self.entries.len());
        for (key, value) in &self.entries {
            writer.text(key);
            value.encode(writer);
        }
    }
}

impl<T: Validate> Validate for Record<T> {
    fn validate(&self) -> Result<(), ProtocolError> {
        for (index, (_, value)) in self.entries.iter().enumerate() {
            value.validate().map_err(|e| e.at_entry(index as u64))?;
        }
        Ok(())
    }
}

impl<T> Tagged for Record<T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{decode_message, CborLimits, Integer};

    fn map_of(keys: &[&str]) -> Vec<u8> {
        let mut w = Writer::new();
        w.map_header(keys.len());
        for key in keys {
            w.text(key);
            w.integer(1);
        }
        w.into_vec()
    }

    #[test]
    fn duplicate_keys_are_refused_in_small_and_large_maps() {
        for size in [2usize, 16, 17, 40] {
            let mut keys: Vec<String> = (0..size).map(|i| format!("k{i}")).collect();
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            assert!(decode_message::<Record<Integer>>(&map_of(&refs), CborLimits::default()).is_ok(), "{size}");
            keys[size - 1] = "k0".to_owned();
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            let err = decode_message::<Record<Integer>>(&map_of(&refs), CborLimits::default()).unwrap_err();
            assert_eq!(err.rule(), Rule::DuplicateKey, "{size}");
        }
    }

    #[test]
    fn errors_name_the_entry_not_the_key() {
        let bytes = [0xa2, 0x61, b'a', 0x01, 0x66, b's', b'e', b'c', b'r', b'e', b't', 0x61, b'x'];
        let err = decode_message::<Record<Integer>>(&bytes, CborLimits::default()).unwrap_err();
        assert_eq!(err.path_string(), "{1}");
        assert!(!err.to_string().contains("secret"));
    }

    #[test]
    fn insert_replaces_in_place_and_remove_keeps_order() {
        let mut r: Record<u8> = [("a", 1), ("b", 2), ("c", 3)].into_iter().collect();
        assert_eq!(r.insert("b", 9), Some(2));
        assert_eq!(r.iter().map(|(k, v)| format!("{k}{v}")).collect::<String>(), "a1b9c3");
        assert_eq!(r.remove("a"), Some(1));
        assert_eq!(r.keys().collect::<Vec<_>>(), ["b", "c"]);
        assert_eq!(r.len(), 2);
        assert!(!r.contains_key("a"));
    }
}
