//! [`Builder`]: writes one strict-JSON item event by event (a value, a container opened, a key,
//! a container closed), for the sources that are not already CBOR: a `serde::Serialize`
//! implementation ([`Payload::from_serialize`](crate::Payload::from_serialize)), any
//! `serde::Deserializer` (`Deserialize for Payload`) and JSON text
//! ([`Payload::from_json_str`](crate::Payload::from_json_str)). PROTOCOL.md sections 3 and 5.
//!
//! It applies the rules of [`Payload::from_value`](crate::Payload::from_value), with the same
//! errors: numbers finite and, when integral, within +-(2^53 - 1) (`Encode`/`UnencodableNumber`);
//! nesting of at most 512 levels below the item (`Encode`/`DepthLimit`); canonical heads (a
//! container whose length was not announced, or announced wrongly, gets its head rewritten
//! when it closes). A key given twice in one object keeps its first place and takes the last
//! value, as `serde_json::Map` with `preserve_order` and JavaScript's `JSON.parse` do.

use std::collections::HashMap;

use super::reader::{head_word, key_fingerprint, low_bytes, ItemShape};
use super::{Reader, Writer};
use crate::error::{ErrorKind, ProtocolError, Rule};
use crate::json::is_array_index;
use crate::limits::{CborLimits, MAX_CONFIGURABLE_DEPTH};
use crate::payload::Payload;

/// Keys of an object compared one by one for duplicates; a wider object gets a hash index.
const LINEAR_KEYS: usize = 16;

/// Writes one strict-JSON item (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Builder {
    out: Writer,
    /// The containers being filled, innermost last.
    open: Vec<Open>,
    /// The entries of the open objects, innermost object's last.
    entries: Vec<Entry>,
    shape: ItemShape,
    /// A duplicate key was merged: the shape is measured again at the end.
    merged: bool,
    /// Objects are written in JavaScript property order (array-index keys first, ascending).
    javascript_order: bool,
    /// The item is complete.
    done: bool,
}

/// A container being filled.
#[derive(Debug)]
struct Open {
    /// Offset of its head in the output.
    head_at: usize,
    /// Length of the head written (1 when the length was not announced).
    head_len: usize,
    /// Entries written so far.
    count: usize,
    /// `Some` for an object: its state.
    object: Option<Object>,
}

/// The state of an object being filled.
#[derive(Debug, Default)]
struct Object {
    /// Where its entries start in [`Builder::entries`].
    entries_from: usize,
    /// Key hash -> entry index (relative), once the object has more than [`LINEAR_KEYS`] keys.
    index: Option<HashMap<u64, usize>>,
    /// A key was written and its value is awaited.
    awaiting_value: bool,
    /// The key awaiting its value repeats an entry: where the repeated key starts, where its
    /// value starts, and the index of the entry it repeats (relative).
    repeats: Option<(usize, usize, usize)>,
}

/// One entry of an open object.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Offset of the key's head.
    key_at: usize,
    /// Offset of the value (just after the key).
    value_at: usize,
    /// [`key_fingerprint`] of the key.
    fingerprint: u64,
}

impl Builder {
    /// A builder for one item.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A builder that writes objects in JavaScript property order, as the reference encodes an
    /// object parsed from JSON text (see [`crate::json`]).
    pub(crate) fn javascript_order() -> Self {
        Builder { javascript_order: true, ..Self::default() }
    }

    /// `null`.
    pub(crate) fn null(&mut self) -> Result<(), ProtocolError> {
        self.value_start()?;
        self.out.null();
        self.value_end();
        Ok(())
    }

    /// `true` or `false`.
    pub(crate) fn bool(&mut self, b: bool) -> Result<(), ProtocolError> {
        self.value_start()?;
        self.out.bool(b);
        self.value_end();
        Ok(())
    }

    /// A float (or any number given as `f64`): finite, and within +-(2^53 - 1) when integral;
    /// integral values are written as integers, `-0.0` as a float.
    pub(crate) fn float(&mut self, n: f64) -> Result<(), ProtocolError> {
        if !super::is_encodable_number(n) {
            return Err(unencodable());
        }
        self.value_start()?;
        self.out.number(n);
        self.value_end();
        Ok(())
    }

    /// An integer within +-(2^53 - 1) (any wider integer type converts losslessly to `i128`).
    pub(crate) fn integer(&mut self, n: i128) -> Result<(), ProtocolError> {
        if n.unsigned_abs() > u128::from(super::MAX_SAFE_INTEGER) {
            return Err(unencodable());
        }
        self.value_start()?;
        self.out.integer(n as i64);
        self.value_end();
        Ok(())
    }

    /// A string.
    pub(crate) fn text(&mut self, s: &str) -> Result<(), ProtocolError> {
        self.value_start()?;
        self.out.text(s);
        self.value_end();
        Ok(())
    }

    /// Opens an array of `len` elements (`None`: not known yet).
    pub(crate) fn begin_array(&mut self, len: Option<usize>) -> Result<(), ProtocolError> {
        self.begin(len, None)
    }

    /// Opens an object of `len` entries (`None`: not known yet).
    pub(crate) fn begin_object(&mut self, len: Option<usize>) -> Result<(), ProtocolError> {
        self.begin(len, Some(Object { entries_from: self.entries.len(), ..Object::default() }))
    }

    fn begin(&mut self, len: Option<usize>, object: Option<Object>) -> Result<(), ProtocolError> {
        self.value_start()?;
        let head_at = self.out.as_bytes().len();
        match (len, object.is_some()) {
            (Some(n), true) => self.out.map_header(n),
            (Some(n), false) => self.out.array_header(n),
            // A one-byte head for now, rewritten when the container closes.
            (None, true) => self.out.map_header(0),
            (None, false) => self.out.array_header(0),
        }
        let head_len = self.out.as_bytes().len() - head_at;
        self.open.push(Open { head_at, head_len, count: 0, object });
        self.shape.depth = self.shape.depth.max(self.open.len() as u32);
        Ok(())
    }

    /// Writes the next key of the innermost object.
    ///
    /// # Errors
    /// `Encode`/`NonTextKey` when no object awaits a key (a value is awaited, or the innermost
    /// container is an array).
    pub(crate) fn key(&mut self, key: &str) -> Result<(), ProtocolError> {
        let key_at = self.out.as_bytes().len();
        let Some(Open { object: Some(object), .. }) = self.open.last_mut() else {
            return Err(ProtocolError::new(ErrorKind::Encode, Rule::NonTextKey));
        };
        if object.awaiting_value {
            return Err(ProtocolError::new(ErrorKind::Encode, Rule::NonTextKey));
        }
        object.awaiting_value = true;
        self.out.text(key);
        let value_at = self.out.as_bytes().len();
        let bytes = key.as_bytes();
        let fingerprint = key_fingerprint(head_word(bytes) & low_bytes(bytes.len()), bytes.len());
        let entries = &self.entries[object.entries_from..];
        let out = self.out.as_bytes();
        let same = |e: &Entry| e.fingerprint == fingerprint && key_bytes(out, e) == bytes;
        let repeated = match &mut object.index {
            None => entries.iter().position(same),
            Some(index) => match index.get(&hash_key(bytes)) {
                Some(&at) if same(&entries[at]) => Some(at),
                // Two keys of one hash: rare, compared one by one.
                Some(_) => entries.iter().position(same),
                None => None,
            },
        };
        if let Some(at) = repeated {
            object.repeats = Some((key_at, value_at, at));
            return Ok(());
        }
        let relative = entries.len();
        if let Some(index) = &mut object.index {
            index.insert(hash_key(bytes), relative);
        } else if relative == LINEAR_KEYS {
            let mut index = HashMap::with_capacity(4 * LINEAR_KEYS);
            for (i, e) in entries.iter().enumerate() {
                index.entry(hash_key(key_bytes(out, e))).or_insert(i);
            }
            index.entry(hash_key(bytes)).or_insert(relative);
            object.index = Some(index);
        }
        self.entries.push(Entry { key_at, value_at, fingerprint });
        Ok(())
    }

    /// Closes the innermost container.
    ///
    /// # Errors
    /// `Encode`/`NonTextKey` when an object's last key has no value; `Encode`/`TypeRejected`
    /// when no container is open.
    pub(crate) fn end(&mut self) -> Result<(), ProtocolError> {
        let Some(open) = self.open.pop() else { return Err(rejected()) };
        if let Some(object) = &open.object {
            if object.awaiting_value {
                return Err(ProtocolError::new(ErrorKind::Encode, Rule::NonTextKey));
            }
            if self.javascript_order {
                self.reorder(object.entries_from, open.head_at + open.head_len);
            }
            self.entries.truncate(object.entries_from);
        }
        self.shape.widest = self.shape.widest.max(u32::try_from(open.count).unwrap_or(u32::MAX));
        // The canonical head for the real count, in place of the one written.
        let mut head = Writer::new();
        if open.object.is_some() {
            head.map_header(open.count);
        } else {
            head.array_header(open.count);
        }
        let buf = self.out.as_mut_vec();
        let written = open.head_at..open.head_at + open.head_len;
        if buf[written.clone()] != *head.as_bytes() {
            buf.splice(written, head.as_bytes().iter().copied());
        }
        self.value_end();
        Ok(())
    }

    /// The payload written.
    ///
    /// # Errors
    /// `Encode`/`TypeRejected` when the item is incomplete.
    pub(crate) fn finish(self) -> Result<Payload, ProtocolError> {
        if !self.done || !self.open.is_empty() {
            return Err(rejected());
        }
        let cbor = self.out.into_vec();
        let shape = if self.merged {
            // A merged key may have dropped the deepest or widest value: measure again.
            Reader::new(&cbor, CborLimits::widest()).skip_item()?
        } else {
            self.shape
        };
        Ok(Payload::from_parts(cbor, shape))
    }

    /// Checks that a value may start here: the item is not complete, an object has its key,
    /// the depth is within the limit.
    #[inline]
    fn value_start(&mut self) -> Result<(), ProtocolError> {
        match self.open.last() {
            None if self.done => return Err(rejected()),
            Some(Open { object: Some(object), .. }) if !object.awaiting_value => {
                return Err(ProtocolError::new(ErrorKind::Encode, Rule::NonTextKey))
            }
            _ => {}
        }
        if self.open.len() > MAX_CONFIGURABLE_DEPTH as usize {
            return Err(ProtocolError::new(
                ErrorKind::Encode,
                Rule::DepthLimit { limit: u64::from(MAX_CONFIGURABLE_DEPTH) },
            ));
        }
        Ok(())
    }

    /// Counts the value just written in its container (or ends the item).
    #[inline]
    fn value_end(&mut self) {
        let Some(open) = self.open.last_mut() else {
            self.done = true;
            return;
        };
        let Some(object) = &mut open.object else {
            open.count += 1;
            return;
        };
        object.awaiting_value = false;
        match object.repeats.take() {
            None => open.count += 1,
            Some((key_at, value_at, at)) => {
                let at = object.entries_from + at;
                self.replace_value(at, key_at, value_at);
            }
        }
    }

    /// Moves the value just written (from `value_at`) after the repeated key at `key_at` into
    /// the place of the value of entry `at`, dropping the repeated key.
    #[cold]
    fn replace_value(&mut self, at: usize, key_at: usize, value_at: usize) {
        self.merged = true;
        let buf = self.out.as_mut_vec();
        let value = buf.split_off(value_at);
        buf.truncate(key_at);
        let old_start = self.entries[at].value_at;
        let old_end = self.entries.get(at + 1).map_or(key_at, |e| e.key_at);
        let delta = value.len() as isize - (old_end - old_start) as isize;
        buf.splice(old_start..old_end, value);
        for e in &mut self.entries[at + 1..] {
            e.key_at = e.key_at.wrapping_add_signed(delta);
            e.value_at = e.value_at.wrapping_add_signed(delta);
        }
    }

    /// Puts the entries of the object closing (from `entries_from`, content from `content_at`)
    /// in JavaScript property order when it has an array-index key.
    fn reorder(&mut self, entries_from: usize, content_at: usize) {
        let buf = self.out.as_mut_vec();
        let entries = &self.entries[entries_from..];
        let key_of = |e: &Entry| std::str::from_utf8(key_bytes(buf, e)).unwrap_or("");
        if !entries.iter().any(|e| is_array_index(key_of(e))) {
            return;
        }
        let ends: Vec<usize> = entries.iter().skip(1).map(|e| e.key_at).chain([buf.len()]).collect();
        let mut order: Vec<usize> = (0..entries.len()).collect();
        // Stable: the other keys keep their order.
        order.sort_by_key(|&i| {
            let key = key_of(&entries[i]);
            if is_array_index(key) {
                (0, key.parse::<u64>().unwrap_or(0))
            } else {
                (1, 0)
            }
        });
        let mut content = Vec::with_capacity(buf.len() - content_at);
        for i in order {
            content.extend_from_slice(&buf[entries[i].key_at..ends[i]]);
        }
        buf.truncate(content_at);
        buf.extend_from_slice(&content);
    }
}

/// Length of the head of a text string whose head and content together take `total` bytes.
fn head_length(total: usize) -> usize {
    match total {
        ..=24 => 1,
        25..=257 => 2,
        258..=65_538 => 3,
        65_539..=4_294_967_300 => 5,
        _ => 9,
    }
}

/// The bytes of the key of entry `e` (its head and content lie between `key_at` and `value_at`).
fn key_bytes<'a>(out: &'a [u8], e: &Entry) -> &'a [u8] {
    let total = e.value_at - e.key_at;
    &out[e.key_at + head_length(total)..e.value_at]
}

/// A hash of a key's bytes for the index of a wide object.
fn hash_key(bytes: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(bytes)
}

#[cold]
fn unencodable() -> ProtocolError {
    ProtocolError::new(ErrorKind::Encode, Rule::UnencodableNumber)
}

#[cold]
fn rejected() -> ProtocolError {
    ProtocolError::new(ErrorKind::Encode, Rule::TypeRejected)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cbor_of(build: impl FnOnce(&mut Builder) -> Result<(), ProtocolError>) -> Result<Payload, ProtocolError> {
        let mut b = Builder::new();
        build(&mut b)?;
        b.finish()
    }

    #[test]
    fn unannounced_lengths_get_canonical_heads() {
        let payload = cbor_of(|b| {
            b.begin_array(None)?;
            for i in 0..30 {
                b.integer(i)?;
            }
            b.begin_object(Some(5))?;
            b.key("a")?;
            b.null()?;
            b.end()?;
            b.end()
        })
        .unwrap();
        let mut items: Vec<serde_json::Value> = (0..30).map(|i| json!(i)).collect();
        items.push(json!({"a": null}));
        assert_eq!(payload, Payload::from_value(&serde_json::Value::Array(items)).unwrap());
        assert_eq!((payload.depth(), payload.widest_container()), (2, 31));
    }

    #[test]
    fn a_repeated_key_keeps_its_place_and_takes_the_last_value() {
        for wide in [false, true] {
            let payload = cbor_of(|b| {
                b.begin_object(None)?;
                let filler = if wide { 20 } else { 2 };
                for i in 0..filler {
                    b.key(&format!("k{i}"))?;
                    b.integer(i)?;
                }
                b.key("k1")?;
                b.begin_array(None)?;
                b.text("deep")?;
                b.end()?;
                b.key("z")?;
                b.bool(true)?;
                b.end()
            })
            .unwrap();
            let text = serde_json::to_string(&payload).unwrap();
            assert!(text.starts_with(r#"{"k0":0,"k1":["deep"],"#), "{text}");
            assert!(text.ends_with(r#""z":true}"#), "{text}");
            let mut reader = Reader::new(payload.as_cbor(), CborLimits::default());
            assert_eq!(reader.skip_item().unwrap().widest, if wide { 21 } else { 3 });
            assert_eq!(payload.widest_container(), if wide { 21 } else { 3 });
        }
    }

    #[test]
    fn javascript_order_puts_index_keys_first() {
        let mut b = Builder::javascript_order();
        b.begin_object(None).unwrap();
        for key in ["b", "10", "a", "2"] {
            b.key(key).unwrap();
            b.null().unwrap();
        }
        b.end().unwrap();
        let text = serde_json::to_string(&b.finish().unwrap()).unwrap();
        assert_eq!(text, r#"{"2":null,"10":null,"b":null,"a":null}"#);
    }

    #[test]
    fn misuse_is_an_error_not_a_panic() {
        assert_eq!(cbor_of(|b| b.end()).unwrap_err().rule(), Rule::TypeRejected);
        assert_eq!(cbor_of(|_| Ok(())).unwrap_err().rule(), Rule::TypeRejected);
        assert_eq!(cbor_of(|b| b.null().and_then(|()| b.null())).unwrap_err().rule(), Rule::TypeRejected);
        let key_in_array = cbor_of(|b| b.begin_array(None).and_then(|()| b.key("a")));
        assert_eq!(key_in_array.unwrap_err().rule(), Rule::NonTextKey);
        let value_without_key = cbor_of(|b| b.begin_object(None).and_then(|()| b.null()));
        assert_eq!(value_without_key.unwrap_err().rule(), Rule::NonTextKey);
        let key_without_value = cbor_of(|b| b.begin_object(None).and_then(|()| b.key("a")).and_then(|()| b.end()));
        assert_eq!(key_without_value.unwrap_err().rule(), Rule::NonTextKey);
    }
}
