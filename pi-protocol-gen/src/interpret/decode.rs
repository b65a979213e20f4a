//! Decoding one item against a compiled [`Program`], driving the runtime's [`Reader`] through
//! exactly the calls the derived decoders make (`pi-protocol-derive`'s `decode.rs`), in the
//! same order, so that every verdict and every error (kind, rule, field path) is theirs:
//!
//! - an object reads its entries in wire order: an unknown key stops at once
//!   (`Schema`/`UnknownField`, at the object's path), a key seen twice too (`Cbor`/`DuplicateKey`),
//!   a literal key holding another value (`Schema`/`Literal`, at the key); a field's value is
//!   decoded, then its constraints checked, before the next key is read; missing required keys
//!   are reported after the last entry, in canonical order (`Schema`/`MissingField`, at the key);
//! - a union first narrows its variants by the JSON type of the item, then tells maps apart by
//!   its tag, its tags or its key sets, reading the tag in place when the map starts with it and
//!   peeking otherwise;
//! - arrays and records decode every element before the constraints on them are checked.
//!
//! Recursion follows the nesting of the input: every level below the first enters an array or
//! a map, which the reader refuses beyond its depth limit, and a type never holds itself
//! without one in between (checked when the program is compiled).

use pi_protocol_runtime::{
    key_equals, JsonTypes, LiteralEntry, ProtocolError, Reader, Rule, Scalar, MAX_CONSUMED_ENTRIES,
};

use crate::model::LiteralValue;

use super::checks::{check, check_text};
use super::json::Json;
use super::leaf::Decoded;
use super::program::{
    literal_json, literal_matches, CheckTree, DispatchCode, MemberCode, Presence, Program, StructCode, TextChecks, Ty,
    TypeCode, UnionCode, VariantCode,
};

/// The rest of a map that an object or a union decodes (the derive's `decode_entries`
/// arguments): `count` entries still at the reader's cursor, and the literal entries a union
/// already read to choose its variant (`consumed`), checked by the object like entries on the
/// wire.
#[derive(Clone, Copy)]
struct Rest<'c, 'de> {
    count: usize,
    consumed: &'c [LiteralEntry<'de>],
}

impl Rest<'_, '_> {
    /// A map just entered: `count` entries, none consumed.
    fn entries(count: usize) -> Self {
        Rest { count, consumed: &[] }
    }
}

/// The most bytes reserved up front for the elements of one array or record (the runtime's
/// bound for derived decoders): beyond it, the collection grows as elements arrive.
const INITIAL_ITEMS_BYTES: usize = pi_protocol_runtime::INITIAL_ITEMS_BYTES;

impl Program {
    /// Decodes one item of named type `index` (the derive's `Decode::decode`).
    ///
    /// The functions on the recursive path (this one, [`decode`](Self::decode), the entries of
    /// objects and unions) keep their frames small and leave everything else to functions kept
    /// out of line: a value nested 512 levels deep costs about a kilobyte of stack per level.
    pub(super) fn decode_type<'de>(&self, index: usize, reader: &mut Reader<'de>) -> Decoded<'de> {
        match &self.types[index] {
            TypeCode::Struct(code) => {
                let count = reader.enter_map()?;
                self.struct_entries(code, reader, Rest::entries(count))
            }
            TypeCode::Union(code) => self.decode_union(code, reader),
            TypeCode::Newtype { value, checks } => {
                let decoded = self.decode(value, reader)?;
                self.checked(checks.as_deref(), decoded)
            }
            TypeCode::Text(checks) => self.decode_text(checks, reader),
        }
    }

    /// Decodes one item of type `ty`.
    fn decode<'de>(&self, ty: &Ty, reader: &mut Reader<'de>) -> Decoded<'de> {
        match ty {
            Ty::Named(index) => self.decode_type(*index, reader),
            Ty::Nullable(inner) => {
                if reader.peek_null() {
                    reader.read_null().map(|()| Json::NULL)
                } else {
                    self.decode(inner, reader)
                }
            }
            Ty::Array(element) => self.decode_array(element, reader),
            Ty::Record(values) => self.decode_record(values, reader),
            Ty::Leaf { decode, .. } => decode(reader),
        }
    }

    /// `decoded` once `checks` hold for it.
    fn checked<'de>(&self, checks: Option<&CheckTree>, decoded: Json<'de>) -> Decoded<'de> {
        if let Some(tree) = checks {
            check(self, tree, &decoded)?;
        }
        Ok(decoded)
    }

    /// A string newtype: the text, then its checks.
    #[inline(never)]
    fn decode_text<'de>(&self, checks: &TextChecks, reader: &mut Reader<'de>) -> Decoded<'de> {
        let text = reader.read_text()?;
        check_text(self, checks, text)?;
        Ok(Json::Text(text))
    }

    /// An array: every element, its index in the path of an error.
    #[inline(never)]
    fn decode_array<'de>(&self, element: &Ty, reader: &mut Reader<'de>) -> Decoded<'de> {
        let count = reader.enter_array()?;
        let mut items = Vec::with_capacity(initial_capacity::<Json<'de>>(count));
        for index in 0..count {
            items.push(self.decode(element, reader).map_err(|e| e.at_index(index as u64))?);
        }
        reader.leave();
        Ok(Json::Array(items))
    }

    /// A record: keys read as checked UTF-8, refused when repeated; values with their entry's
    /// position in the path of an error.
    #[inline(never)]
    fn decode_record<'de>(&self, values: &Ty, reader: &mut Reader<'de>) -> Decoded<'de> {
        let count = reader.enter_map()?;
        let mut entries = Vec::with_capacity(initial_capacity::<(&str, Json<'de>)>(count));
        let mut seen = std::collections::HashSet::with_capacity(initial_capacity::<&str>(count));
        for index in 0..count {
            let key = reader.read_key()?;
            if !seen.insert(key) {
                return Err(ProtocolError::cbor(Rule::DuplicateKey));
            }
            let value = self.decode(values, reader).map_err(|e| e.at_entry(index as u64))?;
            entries.push((key, value));
        }
        reader.leave();
        Ok(Json::Object(entries))
    }

    /// Decodes the rest of a map already entered as a `ty` (the derive's
    /// `Decode::decode_entries`): only objects and unions of them can; anything else refuses
    /// the map, as the trait's default does.
    fn decode_entries<'de>(&self, ty: &Ty, reader: &mut Reader<'de>, rest: Rest<'_, 'de>) -> Decoded<'de> {
        match ty {
            Ty::Named(index) => match &self.types[*index] {
                TypeCode::Struct(code) => self.struct_entries(code, reader, rest),
                TypeCode::Union(code) => self.union_entries(code, reader, rest),
                TypeCode::Text(_) | TypeCode::Newtype { .. } => Err(ProtocolError::schema(Rule::NoVariant)),
            },
            _ => Err(ProtocolError::schema(Rule::NoVariant)),
        }
    }

    /// The entries of an object: `consumed` holds the literal entries a union already read.
    fn struct_entries<'de>(&self, code: &StructCode, reader: &mut Reader<'de>, rest: Rest<'_, 'de>) -> Decoded<'de> {
        let Rest { count, consumed } = rest;
        // One slot per member: a literal's slot holds `Null` once seen, a field's its value.
        let mut slots: Vec<Option<Json<'de>>> = vec![None; code.members.len()];
        see_consumed(code, &mut slots, consumed)?;
        for _ in 0..count {
            let i = member_at(code, reader)?;
            match &code.members[i] {
                MemberCode::Literal { key, value: literal } => read_literal(&mut slots[i], key, literal, reader)?,
                MemberCode::Field { key, value, checks, presence } => {
                    if slots[i].is_some() {
                        return Err(ProtocolError::cbor(Rule::DuplicateKey));
                    }
                    let nullable = matches!(presence, Presence::Nullable | Presence::OptionalNullable);
                    slots[i] = Some(
                        if nullable && reader.peek_null() {
                            reader.read_null().map(|()| Json::NULL)
                        } else {
                            self.decode(value, reader).and_then(|decoded| self.checked(checks.as_deref(), decoded))
                        }
                        .map_err(|e| e.at(key))?,
                    );
                }
            }
        }
        reader.leave();
        finish_struct(code, slots)
    }

    /// A union's `decode`: maps go to the map dispatch when the union tells maps apart; every
    /// other item to the literal variants of its type, then to the first variant whose type
    /// can hold it.
    fn decode_union<'de>(&self, code: &UnionCode, reader: &mut Reader<'de>) -> Decoded<'de> {
        let map_dispatch = !matches!(code.dispatch, DispatchCode::ByType);
        // A union of maps only enters the map (and refuses anything else as a wrong type).
        if map_dispatch && !code.non_map {
            let count = reader.enter_map()?;
            return self.union_entries(code, reader, Rest::entries(count));
        }
        let item = reader.peek_json_type();
        if map_dispatch && item == JsonTypes::OBJECT {
            let count = reader.enter_map()?;
            return self.union_entries(code, reader, Rest::entries(count));
        }
        for (literal, types, json) in &code.units {
            if types.contains(item) {
                let mut probe = reader.clone();
                let value = probe.read_scalar()?;
                if literal_matches(literal, &value) {
                    *reader = probe;
                    return Ok(Json::Value(json.clone()));
                }
            }
        }
        for variant in &code.wrapped {
            if self.ty_types(&variant.value).contains(item) {
                let decoded = self.decode(&variant.value, reader)?;
                return self.checked(variant.checks.as_deref(), decoded);
            }
        }
        Err(ProtocolError::schema(if code.unit_types.contains(item) { Rule::NotInEnum } else { Rule::NoVariant }))
    }

    /// A variant decoding the rest of a map.
    fn variant_entries<'de>(
        &self,
        variant: &VariantCode,
        reader: &mut Reader<'de>,
        rest: Rest<'_, 'de>,
    ) -> Decoded<'de> {
        let decoded = self.decode_entries(&variant.value, reader, rest)?;
        self.checked(variant.checks.as_deref(), decoded)
    }

    /// A union's `decode_entries`: the variant picked by the dispatch decodes the rest of the map.
    fn union_entries<'de>(&self, code: &UnionCode, reader: &mut Reader<'de>, rest: Rest<'_, 'de>) -> Decoded<'de> {
        match &code.dispatch {
            DispatchCode::Tag(tag) => self.tagged_entries(code, tag, reader, rest),
            DispatchCode::Tags(tags) => self.multi_tagged_entries(code, tags, reader, rest),
            DispatchCode::KeySet => self.key_set_entries(code, reader, rest),
            DispatchCode::ByType => {
                for variant in &code.wrapped {
                    if self.ty_types(&variant.value).contains(JsonTypes::OBJECT) {
                        return self.variant_entries(variant, reader, rest);
                    }
                }
                Err(ProtocolError::schema(Rule::NoVariant))
            }
        }
    }

    /// One tag key: its value from the entries consumed, or read in place when it is the next
    /// key (then handed on as consumed), or peeked further on; then the first variant accepting
    /// it.
    fn tagged_entries<'de>(
        &self,
        code: &UnionCode,
        tag: &'static str,
        reader: &mut Reader<'de>,
        rest: Rest<'_, 'de>,
    ) -> Decoded<'de> {
        let Rest { count, consumed } = rest;
        let mut held: [LiteralEntry<'de>; MAX_CONSUMED_ENTRIES] = [(b"", Scalar::Null); MAX_CONSUMED_ENTRIES];
        let tag_bytes: &'static [u8] = tag.as_bytes();
        let (value, consumed, count) = match consumed.iter().find(|entry| key_equals(entry.0, tag_bytes)) {
            Some(&(_, value)) => (value, consumed, count),
            None if count > 0 && consumed.len() < MAX_CONSUMED_ENTRIES && reader.next_key_is(tag_bytes) => {
                reader.read_key_raw()?;
                let value = reader.read_scalar()?;
                held[..consumed.len()].copy_from_slice(consumed);
                held[consumed.len()] = (tag_bytes, value);
                (value, &held[..consumed.len() + 1], count - 1)
            }
            None => match reader.peek_entries_value(count, tag)? {
                Some(value) => (value, consumed, count),
                None => return Err(ProtocolError::schema(Rule::MissingField).at(tag)),
            },
        };
        for variant in &code.wrapped {
            if self.accepts(&variant.value, tag, &value) {
                return self.variant_entries(variant, reader, Rest { count, consumed });
            }
        }
        Err(ProtocolError::schema(Rule::Literal).at(tag))
    }

    /// Several tag keys: their values (consumed or peeked), then the first variant accepting
    /// them all; when none does, the first key at which no variant accepting the keys before
    /// it accepts its value is named.
    fn multi_tagged_entries<'de>(
        &self,
        code: &UnionCode,
        tags: &[&'static str],
        reader: &mut Reader<'de>,
        rest: Rest<'_, 'de>,
    ) -> Decoded<'de> {
        let Rest { count, consumed } = rest;
        let mut values: Vec<(&str, Option<Scalar<'de>>)> = Vec::with_capacity(tags.len());
        for &tag in tags {
            let value = match consumed.iter().find(|entry| key_equals(entry.0, tag.as_bytes())) {
                Some(&(_, value)) => Some(value),
                None => reader.peek_entries_value(count, tag)?,
            };
            values.push((tag, value));
        }
        for variant in &code.wrapped {
            if self.accepts_all(&variant.value, &values) {
                return self.variant_entries(variant, reader, rest);
            }
        }
        for (i, &tag) in tags.iter().enumerate() {
            if !code.wrapped.iter().any(|v| self.accepts_all(&v.value, &values[..=i])) {
                let rule = if values[i].1.is_none() { Rule::MissingField } else { Rule::Literal };
                return Err(ProtocolError::schema(rule).at(tag));
            }
        }
        Err(ProtocolError::schema(Rule::NoVariant))
    }

    /// Key sets: when the entry count fits one variant's range alone, that variant is tried
    /// first; otherwise (or when it fails) the keys are peeked and the first variant whose key
    /// set they fit decodes the map.
    fn key_set_entries<'de>(&self, code: &UnionCode, reader: &mut Reader<'de>, rest: Rest<'_, 'de>) -> Decoded<'de> {
        let Rest { count, consumed } = rest;
        let total = count + consumed.len();
        let fits: Vec<bool> = code
            .wrapped
            .iter()
            .map(|v| self.key_set(&v.value).is_some_and(|s| s.required.len() <= total && total <= s.keys.len()))
            .collect();
        if fits.iter().filter(|fit| **fit).count() == 1 {
            let saved = reader.clone();
            for (variant, fit) in code.wrapped.iter().zip(&fits) {
                if *fit {
                    if let Ok(value) = self.variant_entries(variant, reader, rest) {
                        return Ok(value);
                    }
                }
            }
            *reader = saved;
        }
        let max_keys = code.wrapped.iter().filter_map(|v| self.key_set(&v.value)).map(|s| s.keys.len()).max();
        let max_keys = max_keys.unwrap_or(0);
        if consumed.len() > max_keys {
            return Err(ProtocolError::schema(Rule::NoVariant));
        }
        let mut buffer: Vec<&'de [u8]> = vec![b""; max_keys];
        for (slot, entry) in buffer.iter_mut().zip(consumed) {
            *slot = entry.0;
        }
        let Some(ahead) = reader.peek_entries_keys_into(count, &mut buffer[consumed.len()..])? else {
            return Err(ProtocolError::schema(Rule::NoVariant));
        };
        let keys = &buffer[..consumed.len() + ahead];
        for variant in &code.wrapped {
            let fits = self.key_set(&variant.value).is_some_and(|s| {
                keys.iter().all(|k| s.keys.iter().any(|known| known.as_bytes() == *k))
                    && s.required.iter().all(|r| keys.contains(&r.as_bytes()))
            });
            if fits {
                return self.variant_entries(variant, reader, rest);
            }
        }
        Err(ProtocolError::schema(Rule::NoVariant))
    }
}

/// The literal entries a union already read, checked like entries on the wire; a key the
/// object has no literal for is unknown.
#[inline(never)]
fn see_consumed(
    code: &StructCode,
    slots: &mut [Option<Json<'_>>],
    consumed: &[LiteralEntry<'_>],
) -> Result<(), ProtocolError> {
    for &(key, value) in consumed {
        let literal = code.members.iter().enumerate().find_map(|(i, member)| match member {
            MemberCode::Literal { key: k, value: literal } if key_equals(key, k.as_bytes()) => Some((i, *k, literal)),
            _ => None,
        });
        let Some((i, key, literal)) = literal else {
            return Err(ProtocolError::schema(Rule::UnknownField));
        };
        see_literal(&mut slots[i], key, literal, &value)?;
    }
    Ok(())
}

/// Reads the next key of an object and finds its member; a key the object does not have is
/// unknown (compared as bytes: a key equal to a schema key is valid UTF-8, and any other stops
/// the decode, the rescan then reporting invalid UTF-8 first).
#[inline(never)]
fn member_at(code: &StructCode, reader: &mut Reader<'_>) -> Result<usize, ProtocolError> {
    let key = reader.read_key_raw()?;
    code.member(key).ok_or_else(|| ProtocolError::schema(Rule::UnknownField))
}

/// Reads the value of the literal member `key` and records it.
#[inline(never)]
fn read_literal(
    slot: &mut Option<Json<'_>>,
    key: &'static str,
    literal: &LiteralValue,
    reader: &mut Reader<'_>,
) -> Result<(), ProtocolError> {
    let value = reader.read_scalar().map_err(|e| e.at(key))?;
    see_literal(slot, key, literal, &value)
}

/// The object of the slots read, in canonical order, once every required key is known to be
/// there (a missing one is reported at its key, the first in canonical order).
#[inline(never)]
fn finish_struct<'de>(code: &StructCode, slots: Vec<Option<Json<'de>>>) -> Decoded<'de> {
    let mut object = Vec::with_capacity(code.members.len());
    for (member, slot) in code.members.iter().zip(slots) {
        match (member, slot) {
            (MemberCode::Literal { key, value }, Some(_)) => {
                object.push((*key, Json::Value(literal_json(value))));
            }
            (MemberCode::Field { key, .. }, Some(value)) => {
                object.push((*key, value));
            }
            (MemberCode::Field { presence: Presence::Optional | Presence::OptionalNullable, .. }, None) => {}
            (member, None) => return Err(ProtocolError::schema(Rule::MissingField).at(member.key())),
        }
    }
    Ok(Json::Object(object))
}

/// Records that the literal member `key` was seen with `value`: a second time is a duplicate
/// key, another value a `Literal` error at the key.
fn see_literal(
    slot: &mut Option<Json<'_>>,
    key: &'static str,
    literal: &LiteralValue,
    value: &Scalar<'_>,
) -> Result<(), ProtocolError> {
    if slot.is_some() {
        return Err(ProtocolError::cbor(Rule::DuplicateKey));
    }
    *slot = Some(Json::NULL);
    if !literal_matches(literal, value) {
        return Err(ProtocolError::schema(Rule::Literal).at(key));
    }
    Ok(())
}

/// The capacity to reserve for `count` elements of `T`: all of them, up to
/// [`INITIAL_ITEMS_BYTES`] worth.
fn initial_capacity<T>(count: usize) -> usize {
    count.min(INITIAL_ITEMS_BYTES / std::mem::size_of::<T>().max(1))
}
