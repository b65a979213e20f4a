//! What a schema change breaks on the wire, in each direction, and in the generated Rust.
//!
//! Every object of the protocol refuses unknown keys, so compatibility is directional:
//! - **backward** (old writers -> new readers): every message valid under the old schema decodes
//!   under the new one;
//! - **forward** (new writers -> old readers): every message valid under the new schema decodes
//!   under the old one.
//!
//! [`compat`] compares two checked models message by message (the members of each side's
//! message union, matched by their tags) and gives, for each message type and direction, the
//! verdict and the reasons, each naming the JSON pointer in both schemas; and the changes of
//! the generated Rust source, each marked as breaking (a major version) or not. The rules
//! (`rules`) decide a verdict from the two schemas; [`Report::find_witnesses`] then backs every
//! "breaks" with a concrete message, drawn at random from the one schema and refused by the
//! other (decoded with the [`interpret`](crate::interpret)er).
//!
//! ```
//! use pi_protocol_gen::{compat::compat, Model};
//! let old = Model::from_json(r#"{"$defs": {"ClientMessage": {"type": "object",
//!     "properties": {"type": {"const": "ping"}}, "required": ["type"], "additionalProperties": false}}}"#, "old").unwrap();
//! let new = Model::from_json(r#"{"$defs": {"ClientMessage": {"type": "object",
//!     "properties": {"type": {"const": "ping"}, "seq": {"type": "integer"}}, "required": ["type"],
//!     "additionalProperties": false}}}"#, "new").unwrap();
//! let report = compat(&old, &new);
//! let ping = &report.sides[0].messages[0];
//! assert!(ping.backward.holds());   // old pings decode under the new schema
//! assert!(!ping.forward.holds());   // a new ping with `seq` is refused by an old reader
//! ```

mod report;
mod rules;
mod rust;
mod witness;

use serde_json::Value;

use crate::model::{LiteralValue, Model, Shape, Side, TypeExpr, TypeKind, VariantKind};

pub use report::Format;
pub use rules::MAX_COMPARE_DEPTH;
pub use rust::{RustChange, RustChangeKind};
pub use witness::WitnessSearch;

/// The two directions of compatibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Old writers, new readers: every old message decodes under the new schema.
    Backward,
    /// New writers, old readers: every new message decodes under the old schema.
    Forward,
}

impl Direction {
    /// `backward` or `forward`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Backward => "backward",
            Direction::Forward => "forward",
        }
    }
}

/// A schema edit, from the old schema to the new one, as a reason a direction breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Change {
    /// A message type (a member of a side's message union) was added.
    MessageAdded,
    /// A message type was removed.
    MessageRemoved,
    /// An optional property was added.
    OptionalPropertyAdded,
    /// An optional property was removed.
    OptionalPropertyRemoved,
    /// A required property was added.
    RequiredPropertyAdded,
    /// A required property was removed.
    RequiredPropertyRemoved,
    /// An optional property became required.
    MadeRequired,
    /// A required property became optional.
    MadeOptional,
    /// A literal (`const`) changed.
    LiteralChanged,
    /// A union member was added.
    VariantAdded,
    /// A union member was removed.
    VariantRemoved,
    /// An enumeration value was added.
    ValueAdded,
    /// An enumeration value was removed.
    ValueRemoved,
    /// A bound (`minLength`, `maxLength`, `minimum`, `maximum`, `minItems`, `maxItems`, ...)
    /// was tightened.
    BoundTightened,
    /// A bound was loosened.
    BoundLoosened,
    /// A pattern changed.
    PatternChanged,
    /// A type was narrowed (number to integer, any value to a type).
    TypeNarrowed,
    /// A type was widened (integer to number, a type to any value).
    TypeWidened,
    /// `null` became allowed.
    NullableAdded,
    /// `null` is no longer allowed.
    NullableRemoved,
    /// A value changed its JSON type.
    TypeChanged,
    /// Sampling found a message one schema accepts and the other refuses, which no rule
    /// explains (the witness shows it).
    Undetected,
}

impl Change {
    /// Whether the change breaks its direction for certain; a changed pattern may not (it may
    /// only loosen), so it needs a witness to stand.
    #[must_use]
    pub fn is_certain(self) -> bool {
        !matches!(self, Change::PatternChanged)
    }

    /// A short name (`optional property added`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Change::MessageAdded => "message type added",
            Change::MessageRemoved => "message type removed",
            Change::OptionalPropertyAdded => "optional property added",
            Change::OptionalPropertyRemoved => "optional property removed",
            Change::RequiredPropertyAdded => "required property added",
            Change::RequiredPropertyRemoved => "required property removed",
            Change::MadeRequired => "property made required",
            Change::MadeOptional => "property made optional",
            Change::LiteralChanged => "literal changed",
            Change::VariantAdded => "union member added",
            Change::VariantRemoved => "union member removed",
            Change::ValueAdded => "enumeration value added",
            Change::ValueRemoved => "enumeration value removed",
            Change::BoundTightened => "bound tightened",
            Change::BoundLoosened => "bound loosened",
            Change::PatternChanged => "pattern changed",
            Change::TypeNarrowed => "type narrowed",
            Change::TypeWidened => "type widened",
            Change::NullableAdded => "nullable added",
            Change::NullableRemoved => "nullable removed",
            Change::TypeChanged => "type changed",
            Change::Undetected => "refused, found by sampling",
        }
    }
}

/// Why a direction breaks: the edit, where it is in each schema, and what it does to a message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Reason {
    /// The edit.
    pub change: Change,
    /// The JSON pointer in the old schema, if the place exists there.
    pub old_pointer: Option<String>,
    /// The JSON pointer in the new schema, if the place exists there.
    pub new_pointer: Option<String>,
    /// What the edit does to a message, in words.
    pub detail: String,
}

/// A concrete message that shows a break: valid under one schema, refused by the other.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Witness {
    /// The message as JSON.
    pub message: Value,
    /// Its frame (4-byte length and CBOR), as the schema it is valid under encodes it.
    pub frame: Vec<u8>,
    /// Why the other schema refuses it (the decoder's error, with its field path).
    pub refused_because: String,
}

/// The verdict of one direction for one message type.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Verdict {
    /// Why it breaks (empty when it holds).
    pub reasons: Vec<Reason>,
    /// A message that shows the break, once [`Report::find_witnesses`] found one.
    pub witness: Option<Witness>,
}

impl Verdict {
    /// Whether every message of the writer's schema decodes under the reader's.
    #[must_use]
    pub fn holds(&self) -> bool {
        self.reasons.is_empty()
    }
}

/// One message type of one side.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MessageReport {
    /// The message type's name: its tag values (`request`, `response ok=false`), or the
    /// variant's Rust name.
    pub name: String,
    /// The Rust type of the message in the old schema (absent for a message added).
    pub old_type: Option<String>,
    /// The Rust type of the message in the new schema (absent for a message removed).
    pub new_type: Option<String>,
    /// Old writers, new readers.
    pub backward: Verdict,
    /// New writers, old readers.
    pub forward: Verdict,
}

impl MessageReport {
    /// The verdict of `direction`.
    #[must_use]
    pub fn verdict(&self, direction: Direction) -> &Verdict {
        match direction {
            Direction::Backward => &self.backward,
            Direction::Forward => &self.forward,
        }
    }
}

/// The messages of one side.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SideReport {
    /// Which side sends these messages.
    pub side: Side,
    /// One entry per message type of either schema.
    pub messages: Vec<MessageReport>,
}

/// What a schema change breaks, on the wire and in the generated Rust.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// `x-protocol-version` of the old schema.
    pub old_version: Option<u32>,
    /// `x-protocol-version` of the new schema.
    pub new_version: Option<u32>,
    /// Client messages, then server messages (sides a schema has).
    pub sides: Vec<SideReport>,
    /// The changes of the generated Rust source.
    pub rust: Vec<RustChange>,
}

impl Report {
    /// Whether `direction` holds for every message of every side.
    #[must_use]
    pub fn holds(&self, direction: Direction) -> bool {
        self.sides.iter().all(|s| s.messages.iter().all(|m| m.verdict(direction).holds()))
    }

    /// Whether the change breaks the wire in either direction.
    #[must_use]
    pub fn breaks_wire(&self) -> bool {
        !self.holds(Direction::Backward) || !self.holds(Direction::Forward)
    }

    /// Whether the generated Rust changes in a way that breaks code using it (a major version).
    #[must_use]
    pub fn breaks_rust(&self) -> bool {
        self.rust.iter().any(RustChange::is_breaking)
    }
}

/// Compares two schemas: each side's message types, in both directions, and the generated Rust.
/// The verdicts come from the rules alone; call [`Report::find_witnesses`] for the evidence.
#[must_use]
pub fn compat(old: &Model, new: &Model) -> Report {
    let mut sides = Vec::new();
    for side in Side::BOTH {
        let (old_root, new_root) = (old.message_type(side), new.message_type(side));
        if old_root.is_none() && new_root.is_none() {
            continue;
        }
        let old_messages = old_root.map(|t| messages(old, t)).unwrap_or_default();
        let new_messages = new_root.map(|t| messages(new, t)).unwrap_or_default();
        let mut reports = Vec::new();
        let mut matched_new = vec![false; new_messages.len()];
        for o in &old_messages {
            let found = new_messages.iter().position(|n| n.matches(o));
            let report = match found {
                Some(i) => {
                    matched_new[i] = true;
                    let n = &new_messages[i];
                    MessageReport {
                        name: o.name.clone(),
                        old_type: Some(o.type_name()),
                        new_type: Some(n.type_name()),
                        backward: Verdict {
                            reasons: rules::Checker::new(old, new, true).fits_targets(o.target, n.target),
                            witness: None,
                        },
                        forward: Verdict {
                            reasons: rules::Checker::new(new, old, false).fits_targets(n.target, o.target),
                            witness: None,
                        },
                    }
                }
                None => MessageReport {
                    name: o.name.clone(),
                    old_type: Some(o.type_name()),
                    new_type: None,
                    backward: Verdict {
                        reasons: vec![Reason {
                            change: Change::MessageRemoved,
                            old_pointer: Some(o.pointer.to_string()),
                            new_pointer: new_root.map(|t| t.pointer.clone()),
                            detail: format!("`{}` messages are refused by new readers", o.name),
                        }],
                        witness: None,
                    },
                    forward: Verdict::default(),
                },
            };
            reports.push(report);
        }
        for (n, matched) in new_messages.iter().zip(matched_new) {
            if matched {
                continue;
            }
            reports.push(MessageReport {
                name: n.name.clone(),
                old_type: None,
                new_type: Some(n.type_name()),
                backward: Verdict::default(),
                forward: Verdict {
                    reasons: vec![Reason {
                        change: Change::MessageAdded,
                        old_pointer: old_root.map(|t| t.pointer.clone()),
                        new_pointer: Some(n.pointer.to_string()),
                        detail: format!("`{}` messages are refused by old readers", n.name),
                    }],
                    witness: None,
                },
            });
        }
        sides.push(SideReport { side, messages: reports });
    }
    Report {
        old_version: old.protocol_version,
        new_version: new.protocol_version,
        sides,
        rust: rust::changes(old, new),
    }
}

/// One message type of a side: a member of its message union (or the message type itself).
#[derive(Debug, Clone)]
pub(crate) struct Message<'m> {
    pub(crate) name: String,
    tags: Vec<(String, LiteralValue)>,
    /// Every literal the message carries (its struct's), for matching against a revision
    /// whose union has no tags.
    literals: Vec<(String, LiteralValue)>,
    rust_variant: Option<String>,
    pub(crate) target: rules::Target<'m>,
    pointer: &'m str,
}

impl Message<'_> {
    /// Whether `other` (of the other schema) is the same message type: the same tags; when one
    /// side has no tags (a union of one object), its literals hold the other's tags; without
    /// tags on either side, the same variant name.
    fn matches(&self, other: &Message<'_>) -> bool {
        match (self.tags.is_empty(), other.tags.is_empty()) {
            (false, false) => self.tags == other.tags,
            (false, true) => self.tags.iter().all(|t| other.literals.contains(t)),
            (true, false) => other.tags.iter().all(|t| self.literals.contains(t)),
            (true, true) => self.rust_variant == other.rust_variant,
        }
    }

    /// The Rust type holding the message (or the variant name).
    fn type_name(&self) -> String {
        match self.target {
            rules::Target::Def(def) => def.rust_name.clone(),
            rules::Target::Shape(Shape { ty: TypeExpr::Named { name, .. }, .. }, _) => name.clone(),
            rules::Target::Shape(..) => self.rust_variant.clone().unwrap_or_else(|| self.name.clone()),
        }
    }
}

/// The message types of the side whose root type is `root`: the members of its union, nested
/// unions flattened when they share the outer tag (a `response` that is `ok` or not), each
/// named by its tags.
pub(crate) fn messages<'m>(model: &'m Model, root: &'m crate::model::TypeDef) -> Vec<Message<'m>> {
    let literals_of = |shape: &Shape| -> Vec<(String, LiteralValue)> {
        match &shape.ty {
            TypeExpr::Named { name, .. } => match model.by_rust_name(name).map(|t| &t.kind) {
                Some(TypeKind::Struct(s)) => s.literals().map(|l| (l.key.clone(), l.value.clone())).collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    };
    let TypeKind::Union(union) = &root.kind else {
        let literals = match &root.kind {
            TypeKind::Struct(s) => s.literals().map(|l| (l.key.clone(), l.value.clone())).collect(),
            _ => Vec::new(),
        };
        return vec![Message {
            name: root.rust_name.clone(),
            tags: Vec::new(),
            literals,
            rust_variant: None,
            target: rules::Target::Def(root),
            pointer: &root.pointer,
        }];
    };
    let mut out = Vec::new();
    for variant in &union.variants {
        let VariantKind::Value(shape) = &variant.kind else { continue };
        let nested = match &shape.ty {
            TypeExpr::Named { name, .. } => match model.by_rust_name(name).map(|t| &t.kind) {
                Some(TypeKind::Union(inner)) if !variant.tags.is_empty() => Some(inner),
                _ => None,
            },
            _ => None,
        };
        match nested {
            Some(inner) => {
                for member in &inner.variants {
                    let VariantKind::Value(member_shape) = &member.kind else { continue };
                    let mut tags = variant.tags.clone();
                    tags.extend(member.tags.iter().cloned());
                    out.push(Message {
                        name: tags_name(&tags, &member.rust_name),
                        literals: literals_of(member_shape),
                        tags,
                        rust_variant: Some(format!("{}::{}", variant.rust_name, member.rust_name)),
                        target: rules::Target::Shape(member_shape, &member.pointer),
                        pointer: &member.pointer,
                    });
                }
            }
            None => out.push(Message {
                name: tags_name(&variant.tags, &variant.rust_name),
                literals: literals_of(shape),
                tags: variant.tags.clone(),
                rust_variant: Some(variant.rust_name.clone()),
                target: rules::Target::Shape(shape, &variant.pointer),
                pointer: &variant.pointer,
            }),
        }
    }
    out
}

/// `request`, `response ok=false` (see [`crate::model::tags_name`]), or `fallback` without tags.
fn tags_name(tags: &[(String, LiteralValue)], fallback: &str) -> String {
    crate::model::tags_name(tags).unwrap_or_else(|| fallback.to_string())
}
