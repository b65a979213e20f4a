//! [`Builder`]: writes one strict-JSON item event by event (a value, a container opened, a key,
//! a container closed), for the sources that are not already CBOR: any `serde::Deserializer`
//! (`Deserialize for Payload`) and JSON text
//! ([`Payload::from_json_str`](crate::Payload::from_json_str)). The payload serializer
//! ([`crate::serde_ser`], behind [`Payload::from_serialize`](crate::Payload::from_serialize))
//! keeps each container's state on its own stack and uses the builder's output, depth, shape
//! and object-key parts directly. docs/PROTOCOL.md sections 3 and 5.
//!
//! It applies the rules of [`Payload::from_value`](crate::Payload::from_value), with the same
//! errors: numbers finite and, when integral, within +-(2^53 - 1) (`Encode`/`UnencodableNumber`);
//! nesting of at most 512 levels below the item (`Encode`/`DepthLimit`); canonical heads (a
//! container whose length was not announced, or announced wrongly, gets its head rewritten
//! when it closes). A key given twice in one object keeps its first place and takes the last
//! value, as `serde_json::Map` with `preserve_order` and JavaScript's `JSON.parse` do.

use std::ops::Range;

use super::object::{
    find_entry_at, finish_head, kept_offset, moved_by_merge, replace_value, to_javascript_order, KeyOffsets, KeyStack,
    ObjectKeys, LINEAR_KEYS,
};
use super::reader::ItemShape;
use super::{Reader, Writer};
use crate::error::{ErrorKind, ProtocolError, Rule};
use crate::limits::{CborLimits, MAX_CONFIGURABLE_DEPTH};

/// Writes one strict-JSON item (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Builder {
    pub(crate) out: Writer,
    /// The containers being filled through the event methods, innermost last.
    open: Vec<Open>,
    /// The keys of the objects being written.
    pub(crate) keys: KeyStack,
    /// Where the first keys of the objects filled through the event methods start, innermost
    /// last (see [`KeyOffsets`], which the payload serializer keeps instead).
    key_offsets: Vec<u32>,
    /// For each open object whose last key repeats an earlier one, innermost last: the earlier
    /// value, where the repeated key starts and where its value starts.
    repeats: Vec<(Range<usize>, usize, usize)>,
    /// The innermost container is an object whose next item is a key.
    key_next: bool,
    /// Containers open.
    pub(crate) depth: usize,
    pub(crate) shape: ItemShape,
    /// A repeated key was merged: the shape is measured again at the end.
    pub(crate) merged: bool,
    /// The first error raised inside a container written by the payload serializer
    /// ([`crate::serde_ser`]), kept in case the value's `Serialize` ignores it and goes on.
    pub(crate) first_error: Option<ProtocolError>,
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
    /// An object's keys (`None` for an array).
    keys: Option<ObjectKeys>,
    /// Where its key offsets start in [`Builder::key_offsets`].
    offsets_from: usize,
    /// The key awaiting its value repeats an earlier one (its details are in
    /// [`Builder::repeats`]).
    repeats: bool,
}

/// Where the keys of the object a key goes into start, as its writer keeps them (see
/// [`Builder::object_key`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Offsets {
    /// Kept by the writer itself (the payload serializer).
    Recent(KeyOffsets),
    /// Listed in [`Builder::key_offsets`] from this index on.
    Listed(usize),
}

impl Builder {
    /// A builder for one item.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// A builder whose output starts with room for `bytes` bytes.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        Builder { out: Writer::from_vec(Vec::with_capacity(bytes)), ..Self::default() }
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
        check_float(n)?;
        self.value_start()?;
        self.out.number(n);
        self.value_end();
        Ok(())
    }

    /// An integer within +-(2^53 - 1) (any wider integer type converts losslessly to `i128`).
    pub(crate) fn integer(&mut self, n: i128) -> Result<(), ProtocolError> {
        check_integer(n)?;
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
        self.begin(len, false)
    }

    /// Opens an object of `len` entries (`None`: not known yet).
    pub(crate) fn begin_object(&mut self, len: Option<usize>) -> Result<(), ProtocolError> {
        self.begin(len, true)
    }

    fn begin(&mut self, len: Option<usize>, is_object: bool) -> Result<(), ProtocolError> {
        self.value_start()?;
        // Without a length, a one-byte head for now, rewritten when the container closes.
        let (head_at, head_len) = self.open_container(is_object, len.unwrap_or(0));
        let keys = is_object.then(|| self.keys.open());
        let offsets_from = self.key_offsets.len();
        self.open.push(Open { head_at, head_len, count: 0, keys, offsets_from, repeats: false });
        self.key_next = is_object;
        Ok(())
    }

    /// Writes the head of a container of `n` entries (an object's when `is_object`) and counts
    /// its level; returns where the head starts and its length.
    #[inline]
    pub(crate) fn open_container(&mut self, is_object: bool, n: usize) -> (usize, usize) {
        let head_at = self.out.as_bytes().len();
        if is_object {
            self.out.map_header(n);
        } else {
            self.out.array_header(n);
        }
        self.depth += 1;
        self.shape.depth = self.shape.depth.max(self.depth as u32);
        (head_at, self.out.as_bytes().len() - head_at)
    }

    /// Completes a container opened with [`open_container`](Self::open_container) with its
    /// `count` entries, its head rewritten unless it holds that count (`announced`).
    #[inline]
    pub(crate) fn close_container(
        &mut self,
        is_object: bool,
        head_at: usize,
        head_len: usize,
        count: usize,
        announced: usize,
    ) {
        self.depth -= 1;
        self.shape.widest = self.shape.widest.max(u32::try_from(count).unwrap_or(u32::MAX));
        if count != announced {
            finish_head(self.out.as_mut_vec(), head_at, head_len, if is_object { 5 } else { 4 }, count);
        }
    }

    /// Writes `key` as the next key of the innermost object, whose entries (`count` of
    /// them, with `keys`, where their keys start in `offsets`) start at `content_at`; `true`
    /// when it repeats one of them: call [`merge_repeated`](Self::merge_repeated) once its
    /// value is written.
    #[inline(always)]
    pub(crate) fn object_key(
        &mut self,
        key: &str,
        keys: &mut ObjectKeys,
        content_at: usize,
        count: usize,
        offsets: Offsets,
    ) -> bool {
        let maybe = self.keys.insert(keys, key.as_bytes(), self.out.as_bytes(), content_at, count);
        let key_at = self.out.as_bytes().len();
        self.out.text(key);
        maybe && self.find_repeated(key, content_at, count, key_at, offsets)
    }

    /// Whether `key` (just written at `key_at`) repeats an earlier entry; if so, records what
    /// [`merge_repeated`](Self::merge_repeated) needs.
    #[cold]
    #[inline(never)]
    fn find_repeated(&mut self, key: &str, content_at: usize, count: usize, key_at: usize, offsets: Offsets) -> bool {
        let (kept, kept_len) = match offsets {
            Offsets::Recent(recent) => recent.in_written_order(count),
            Offsets::Listed(from) => {
                let mut kept = [0; LINEAR_KEYS];
                let listed = self.key_offsets.get(from..).unwrap_or_default();
                let len = if listed.len() == count { count } else { 0 };
                kept[..len].copy_from_slice(&listed[..len]);
                (kept, len)
            }
        };
        match find_entry_at(self.out.as_bytes(), content_at, count, key_at, &kept[..kept_len], key.as_bytes()) {
            Some(old) => {
                self.repeats.push((old, key_at, self.out.as_bytes().len()));
                true
            }
            None => false,
        }
    }

    /// Moves the value written after the innermost repeated key into the earlier entry's place
    /// (see [`object_key`](Self::object_key)); returns where the replaced value ended and how
    /// many bytes longer the new one is (negative: shorter), for the key offsets after it.
    #[cold]
    #[inline(never)]
    pub(crate) fn merge_repeated(&mut self) -> (usize, isize) {
        let Some((old, key_at, value_at)) = self.repeats.pop() else { return (usize::MAX, 0) };
        self.merged = true;
        let grown = (self.out.as_bytes().len() - value_at) as isize - old.len() as isize;
        let old_end = old.end;
        replace_value(self.out.as_mut_vec(), old, key_at, value_at);
        (old_end, grown)
    }

    /// Writes the next key of the innermost object.
    ///
    /// # Errors
    /// `Encode`/`NonTextKey` when no object awaits a key (a value is awaited, or the innermost
    /// container is an array).
    pub(crate) fn key(&mut self, key: &str) -> Result<(), ProtocolError> {
        if !self.key_next {
            return Err(ProtocolError::new(ErrorKind::Encode, Rule::NonTextKey));
        }
        self.key_next = false;
        let Some(open) = self.open.last_mut() else { return Err(rejected()) };
        let (content_at, count) = (open.head_at + open.head_len, open.count);
        let Some(mut keys) = open.keys else { return Err(rejected()) };
        let offsets_from = open.offsets_from;
        let key_at = self.out.as_bytes().len();
        let repeats = self.object_key(key, &mut keys, content_at, count, Offsets::Listed(offsets_from));
        if !repeats && count < LINEAR_KEYS {
            self.key_offsets.push(kept_offset(key_at));
        }
        if let Some(open) = self.open.last_mut() {
            open.keys = Some(keys);
            open.repeats = repeats;
        }
        Ok(())
    }

    /// Closes the innermost container.
    ///
    /// # Errors
    /// `Encode`/`NonTextKey` when an object's last key has no value; `Encode`/`TypeRejected`
    /// when no container is open.
    pub(crate) fn end(&mut self) -> Result<(), ProtocolError> {
        let Some(open) = self.open.last() else { return Err(rejected()) };
        if open.keys.is_some() && !self.key_next {
            return Err(ProtocolError::new(ErrorKind::Encode, Rule::NonTextKey));
        }
        let Some(open) = self.open.pop() else { return Err(rejected()) };
        let is_object = open.keys.is_some();
        self.key_offsets.truncate(open.offsets_from);
        if let Some(keys) = open.keys {
            self.keys.close(keys);
            if self.javascript_order {
                to_javascript_order(self.out.as_mut_vec(), open.head_at + open.head_len, open.count)?;
            }
        }
        self.close_container(is_object, open.head_at, open.head_len, open.count, usize::MAX);
        self.value_end();
        Ok(())
    }

    /// The item written and its shape, for [`Payload`](crate::Payload) to take over (the payload
    /// module's `Builder::finish`; the builder stays below the payload type).
    ///
    /// # Errors
    /// `Encode`/`TypeRejected` when the item is incomplete.
    pub(crate) fn into_parts(self) -> Result<(Vec<u8>, ItemShape), ProtocolError> {
        if !(self.done || self.open.is_empty() && self.depth == 0 && !self.out.as_bytes().is_empty()) {
            return Err(rejected());
        }
        let cbor = self.out.into_vec();
        let shape = if self.merged {
            // A merged key may have dropped the deepest or widest value: measure again.
            Reader::new(&cbor, CborLimits::widest()).skip_item()?
        } else {
            self.shape
        };
        Ok((cbor, shape))
    }

    /// Checks that a value may start here: the item is not complete, an object has its key,
    /// the depth is within the limit.
    #[inline]
    fn value_start(&mut self) -> Result<(), ProtocolError> {
        if self.key_next || self.done {
            return Err(self.refuse_value());
        }
        self.check_depth()
    }

    /// Checks that a value may be written at the current depth.
    #[inline(always)]
    pub(crate) fn check_depth(&self) -> Result<(), ProtocolError> {
        if self.depth > MAX_CONFIGURABLE_DEPTH as usize {
            return Err(depth_limit());
        }
        Ok(())
    }

    #[cold]
    fn refuse_value(&self) -> ProtocolError {
        if self.key_next {
            ProtocolError::new(ErrorKind::Encode, Rule::NonTextKey)
        } else {
            rejected()
        }
    }

    /// Counts the value just written in its container (or ends the item).
    #[inline]
    fn value_end(&mut self) {
        let Some(open) = self.open.last_mut() else {
            self.done = true;
            self.key_next = false;
            return;
        };
        self.key_next = open.keys.is_some();
        if open.repeats {
            open.repeats = false;
            let offsets_from = open.offsets_from;
            let (old_end, grown) = self.merge_repeated();
            moved_by_merge(self.key_offsets.get_mut(offsets_from..).unwrap_or_default(), old_end, grown);
        } else {
            open.count += 1;
        }
    }
}

/// Checks a float for [`Builder::float`].
#[inline(always)]
pub(crate) fn check_float(n: f64) -> Result<(), ProtocolError> {
    if !crate::number::is_encodable_number(n) {
        return Err(unencodable());
    }
    Ok(())
}

/// Checks an integer for [`Builder::integer`].
#[inline(always)]
pub(crate) fn check_integer(n: i128) -> Result<(), ProtocolError> {
    if n.unsigned_abs() > u128::from(crate::number::MAX_SAFE_INTEGER) {
        return Err(unencodable());
    }
    Ok(())
}

/// The error of a value nested deeper than 512 levels.
#[cold]
pub(crate) fn depth_limit() -> ProtocolError {
    ProtocolError::new(ErrorKind::Encode, Rule::DepthLimit { limit: u64::from(MAX_CONFIGURABLE_DEPTH) })
}

#[cold]
fn unencodable() -> ProtocolError {
    ProtocolError::new(ErrorKind::Encode, Rule::UnencodableNumber)
}

#[cold]
pub(crate) fn rejected() -> ProtocolError {
    ProtocolError::new(ErrorKind::Encode, Rule::TypeRejected)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::payload::Payload;

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
