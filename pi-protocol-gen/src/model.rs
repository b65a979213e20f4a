//! The checked model of a schema: what [`Model::from_json`] builds and [`Model::to_rust`] prints.
//!
//! Every type here is already validated: names are Rust identifiers, references point at
//! existing definitions, unions are unambiguous. A downstream `build.rs` can walk a [`Model`]
//! (from [`crate::Model::from_json`]) to emit something else than the default output.

use std::collections::BTreeMap;
use std::fmt;

/// A whole schema file: protocol facts plus the named types, in `$defs` order.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// `x-protocol-version` of the schema root, if given.
    pub protocol_version: Option<u32>,
    /// `x-limits` of the schema root: limit name -> default value (empty if absent).
    pub limits: BTreeMap<String, u64>,
    /// `title` of the schema root, if given; becomes the first line of the module docs.
    pub title: Option<String>,
    /// `description` of the schema root, if given; a paragraph of the module docs.
    pub description: Option<String>,
    /// One entry per `$defs` member, in file order.
    pub types: Vec<TypeDef>,
}

impl Model {
    /// The definition whose `$defs` key is `schema_name`.
    pub fn by_schema_name(&self, schema_name: &str) -> Option<&TypeDef> {
        self.types.iter().find(|t| t.schema_name == schema_name)
    }

    /// The definition whose Rust name is `rust_name`.
    pub fn by_rust_name(&self, rust_name: &str) -> Option<&TypeDef> {
        self.types.iter().find(|t| t.rust_name == rust_name)
    }
}

/// One named type: a `$defs` member.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDef {
    /// The `$defs` key (`Id`, `RequestEnvelope`).
    pub schema_name: String,
    /// The Rust type name: the key, or its `x-rust-name` (`RequestId`, `Request`).
    pub rust_name: String,
    /// The `description`, if any.
    pub doc: Option<String>,
    /// What the type is.
    pub kind: TypeKind,
}

impl TypeDef {
    /// The JSON pointer of the definition, as written in the generated docs.
    pub fn pointer(&self) -> String {
        format!("#/$defs/{}", crate::schema::escape_pointer(&self.schema_name))
    }
}

/// The shapes a named type can have.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeKind {
    /// A validated string: `struct X(ArrayString<N>)` when its pattern fixes the length at N
    /// bytes, `struct X(CompactString)` otherwise.
    Newtype(Newtype),
    /// An object with a fixed set of keys: `struct X { .. }`.
    Struct(Struct),
    /// An `anyOf` of named object types: `enum X { V(T), .. }`.
    Union(Union),
}

/// Constraints of a string (a newtype, or a plain `String` field).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StringRules {
    /// `minLength`, in characters.
    pub min_length: Option<u64>,
    /// `pattern`, already checked to parse with the runtime's pattern subset.
    pub pattern: Option<String>,
}

/// A `type: string` definition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Newtype {
    /// Its constraints.
    pub rules: StringRules,
}

/// A `type: object` definition with `additionalProperties: false`.
#[derive(Debug, Clone, PartialEq)]
pub struct Struct {
    /// The properties in schema order (which is the canonical wire order).
    pub members: Vec<Member>,
}

impl Struct {
    /// The stored fields, in order.
    pub fn fields(&self) -> impl Iterator<Item = &Field> {
        self.members.iter().filter_map(|m| match m {
            Member::Field(f) => Some(f),
            Member::Literal(_) => None,
        })
    }

    /// The literal (`const`) properties, in order.
    pub fn literals(&self) -> impl Iterator<Item = &Literal> {
        self.members.iter().filter_map(|m| match m {
            Member::Literal(l) => Some(l),
            Member::Field(_) => None,
        })
    }

    /// The literal stored under `key`, if any.
    pub fn literal(&self, key: &str) -> Option<&Literal> {
        self.literals().find(|l| l.key == key)
    }

    /// Every wire key, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(Member::key)
    }

    /// The wire keys a map must hold (literals and non-optional fields).
    pub fn required_keys(&self) -> impl Iterator<Item = &str> {
        self.members.iter().filter(|m| m.is_required()).map(Member::key)
    }
}

/// One property of an object.
#[derive(Debug, Clone, PartialEq)]
pub enum Member {
    /// A value stored in the struct.
    Field(Field),
    /// A fixed value (`const`), checked on decode and written on encode, not stored.
    Literal(Literal),
}

impl Member {
    /// The wire key.
    pub fn key(&self) -> &str {
        match self {
            Member::Field(f) => &f.key,
            Member::Literal(l) => &l.key,
        }
    }

    /// Whether the key must be present.
    pub fn is_required(&self) -> bool {
        match self {
            Member::Field(f) => !f.optional,
            Member::Literal(_) => true,
        }
    }
}

/// A stored property.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The wire key (`serverId`).
    pub key: String,
    /// The Rust field name (`server_id`).
    pub rust_name: String,
    /// The `description`, if any.
    pub doc: Option<String>,
    /// The value type.
    pub ty: FieldType,
    /// Not in `required`: the key may be absent (`Option<T>`).
    pub optional: bool,
    /// `anyOf [T, {type: null}]`: the key is required and may hold `null` (`Option<T>`).
    pub nullable: bool,
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// A `$ref` to a named type, by its Rust name.
    Named(String),
    /// `type: string`, with its constraints.
    String(StringRules),
    /// `type: integer`, with its `minimum`.
    Integer {
        /// `minimum`, if any.
        minimum: Option<i64>,
    },
    /// `type: boolean`.
    Bool,
    /// `{}`: any strict JSON value, kept opaque.
    Payload,
}

/// A `const` property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Literal {
    /// The wire key (`type`).
    pub key: String,
    /// The value it must hold.
    pub value: LiteralValue,
    /// The key of the property right before it when it is not at the front of the property list
    /// (behind only other literals); `None` places it with the leading literals.
    pub after: Option<String>,
}

/// The value of a literal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LiteralValue {
    /// A string const.
    String(String),
    /// A boolean const.
    Bool(bool),
    /// An integral number const (`type` integer or number).
    Integer(i64),
}

impl fmt::Display for LiteralValue {
    /// Writes the value as JSON (`"hello"`, `true`, `8`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiteralValue::String(s) => write!(f, "{}", serde_json::Value::String(s.clone())),
            LiteralValue::Bool(b) => write!(f, "{b}"),
            LiteralValue::Integer(n) => write!(f, "{n}"),
        }
    }
}

/// An `anyOf` definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Union {
    /// How a decoder picks the variant.
    pub kind: UnionKind,
    /// The variants, in `anyOf` order.
    pub variants: Vec<Variant>,
}

/// How a union is told apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnionKind {
    /// Every variant has a distinct literal under `key`.
    Tagged {
        /// The tag key (`type`, `ok`).
        key: String,
    },
    /// The variants are objects with key sets no single map can satisfy twice.
    KeySet,
}

/// One variant of a union.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The Rust variant name (`Hello`, `Server`).
    pub rust_name: String,
    /// The Rust name of the type it wraps.
    pub target: String,
    /// The `$defs` key of the type it wraps.
    pub target_schema_name: String,
    /// The member's own `description`, if any.
    pub doc: Option<String>,
    /// For a tagged union: the variant's value of the tag key.
    pub tag_value: Option<LiteralValue>,
}
