//! The checked model of a schema: what [`Model::from_json`](crate::Model::from_json) builds and
//! every consumer reads: the Rust emitter, the schema interpreter ([`crate::interpret`]), the
//! instance sampler and the compatibility check.
//!
//! Every type here is already validated: names are Rust identifiers, references point at
//! existing types, unions can be told apart. Named types are what the generated module
//! declares; anything else (strings with constraints, numbers, arrays, records, nullable
//! values) is a [`Shape`] written in place where it is used.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// A whole schema: protocol facts plus the named types.
///
/// Opaque: it is built only by [`Model::from_json`](crate::Model::from_json) /
/// [`Model::from_value`](crate::Model::from_value), which check it, and read through its
/// accessors, so no caller can break what every consumer relies on (every named type exists,
/// names are unique). Lookups by Rust name are indexed.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub(crate) protocol_version: Option<u32>,
    pub(crate) limits: BTreeMap<String, u64>,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) types: Vec<TypeDef>,
    pub(crate) client_message: Option<String>,
    pub(crate) server_message: Option<String>,
    /// Rust name -> index in `types` (built by [`Model::indexed`]).
    pub(crate) by_rust_name: HashMap<String, usize>,
}

impl Model {
    /// The model with its name index built from its types.
    pub(crate) fn indexed(mut self) -> Model {
        self.by_rust_name = self.types.iter().enumerate().map(|(i, t)| (t.rust_name.clone(), i)).collect();
        self
    }

    /// `x-protocol-version` of the schema root (or `protocolVersion` of the reference's form).
    #[must_use]
    pub fn protocol_version(&self) -> Option<u32> {
        self.protocol_version
    }

    /// Default decoder limits: limit name -> value (`x-limits`, or `limits` of the reference's
    /// form; empty if absent).
    #[must_use]
    pub fn limits(&self) -> &BTreeMap<String, u64> {
        &self.limits
    }

    /// `title` of the schema root, if given; the first line of the generated module's docs.
    #[must_use]
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// `description` of the schema root, if given; a paragraph of the generated module's docs.
    #[must_use]
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Every named type, in a deterministic order: the schema's definitions in file order, then
    /// the types named after the place they were found, in order of discovery.
    #[must_use]
    pub fn types(&self) -> &[TypeDef] {
        &self.types
    }

    /// The Rust name of the type of every message `side` sends, if the schema has one
    /// (`ClientMessage` / `ServerMessage`, or `x-client-message` / `x-server-message`).
    #[must_use]
    pub fn message_type_name(&self, side: Side) -> Option<&str> {
        match side {
            Side::Client => self.client_message.as_deref(),
            Side::Server => self.server_message.as_deref(),
        }
    }

    /// The type whose Rust name is `rust_name`.
    #[must_use]
    pub fn by_rust_name(&self, rust_name: &str) -> Option<&TypeDef> {
        self.by_rust_name.get(rust_name).map(|&i| &self.types[i])
    }

    /// The type defined at `$defs` key `schema_name` (at the root of the schema).
    #[must_use]
    pub fn by_schema_name(&self, schema_name: &str) -> Option<&TypeDef> {
        self.types.iter().find(|t| t.schema_name.as_deref() == Some(schema_name))
    }

    /// The type of the messages sent by `side`.
    #[must_use]
    pub fn message_type(&self, side: Side) -> Option<&TypeDef> {
        self.by_rust_name(self.message_type_name(side)?)
    }
}

/// The two directions of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Messages a client sends to a server.
    Client,
    /// Messages a server sends to a client.
    Server,
}

impl Side {
    /// Both sides, client first.
    pub const BOTH: [Side; 2] = [Side::Client, Side::Server];

    /// `client` or `server`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// One named type.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TypeDef {
    /// The Rust type name: the `$defs` key, its `x-rust-name`, or a name made from the place
    /// where the schema was found (`UsageCost` for the `cost` property of `Usage`).
    pub rust_name: String,
    /// The `$defs` key, for types defined at the root's `$defs`.
    pub schema_name: Option<String>,
    /// The JSON pointer of the schema the type was made from (its first occurrence).
    pub pointer: String,
    /// The `description`, if any.
    pub doc: Option<String>,
    /// What the type is.
    pub kind: TypeKind,
}

/// The shapes a named type can have.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeKind {
    /// A value with constraints of its own: `struct X(T);` (a string id, a bounded number, an
    /// array or record with bounds).
    Newtype(Shape),
    /// An object with a fixed set of keys: `struct X { .. }`.
    Struct(Struct),
    /// A union (`anyOf`/`oneOf`/`enum`, `type` lists): `enum X { .. }`.
    Union(Union),
}

/// A value's type and the constraints on it, written in place where it is used.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The type.
    pub ty: TypeExpr,
    /// Constraints on the value itself (string, number or array constraints by type).
    pub checks: Checks,
}

impl Shape {
    /// A shape without constraints.
    #[must_use]
    pub fn plain(ty: TypeExpr) -> Shape {
        Shape { ty, checks: Checks::default() }
    }
}

/// The type of a value.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeExpr {
    /// A named type, by its Rust name; `boxed` when it sits on a cycle of direct containment
    /// (a recursive type), so it is held in a `Box`.
    Named {
        /// The Rust name.
        name: String,
        /// Whether the reference is boxed.
        boxed: bool,
    },
    /// `type: string` (`String`).
    String,
    /// `type: integer` (`Integer`).
    Integer,
    /// `type: number` (`Number`).
    Number,
    /// `type: boolean` (`bool`).
    Boolean,
    /// `type: null` (`Null`).
    Null,
    /// `{}`: any strict JSON value, kept opaque (`Payload`).
    Payload,
    /// `type: array` (`Vec<T>`).
    Array(Box<Shape>),
    /// An object with free keys (`Record<T>`).
    Record(Box<Record>),
    /// A value or `null` (`Option<T>`).
    Nullable(Box<Shape>),
}

/// An object whose keys are data: `additionalProperties` or `patternProperties` holding a
/// schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Every value.
    pub values: Shape,
    /// Constraints on every key (string constraints: the key pattern).
    pub keys: Checks,
}

/// Constraints on a value. String constraints apply to strings, numeric ones to numbers,
/// array ones to arrays; a shape only carries those of its type.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Checks {
    /// `minLength`, in characters as the reference counts them.
    pub min_length: Option<u64>,
    /// `maxLength`, likewise.
    pub max_length: Option<u64>,
    /// `pattern`, an ECMAScript regular expression (Unicode mode), tested anywhere in the string.
    pub pattern: Option<String>,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `exclusiveMinimum`.
    pub exclusive_minimum: Option<f64>,
    /// `exclusiveMaximum`.
    pub exclusive_maximum: Option<f64>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
}

impl Checks {
    /// Whether there is no constraint.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Checks::default()
    }
}

/// An object with a fixed set of keys, every other key refused.
#[derive(Debug, Clone, PartialEq)]
pub struct Struct {
    /// The properties in canonical wire order.
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
    #[must_use]
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
#[allow(clippy::large_enum_variant)] // A model is built once per schema; boxing buys nothing.
pub enum Member {
    /// A value stored in the struct.
    Field(Field),
    /// A fixed value (`const`), checked on decode and written on encode, not stored.
    Literal(Literal),
}

impl Member {
    /// The wire key.
    #[must_use]
    pub fn key(&self) -> &str {
        match self {
            Member::Field(f) => &f.key,
            Member::Literal(l) => &l.key,
        }
    }

    /// Whether the key must be present.
    #[must_use]
    pub fn is_required(&self) -> bool {
        match self {
            Member::Field(f) => !f.optional,
            Member::Literal(_) => true,
        }
    }
}

/// A stored property.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Field {
    /// The wire key (`serverId`).
    pub key: String,
    /// The Rust field name (`server_id`).
    pub rust_name: String,
    /// The `description`, if any.
    pub doc: Option<String>,
    /// The value: its type (`Nullable` when `null` is allowed) and constraints.
    pub shape: Shape,
    /// Not in `required`: the key may be absent.
    pub optional: bool,
    /// The JSON pointer of the property's schema.
    pub pointer: String,
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

/// The value of a literal: a JSON scalar.
#[derive(Debug, Clone)]
pub enum LiteralValue {
    /// A string.
    String(String),
    /// A boolean.
    Bool(bool),
    /// A number (finite; `-0` is `0`, as JSON equality has it).
    Number(f64),
    /// `null`.
    Null,
}

impl LiteralValue {
    /// The literal as a JSON value.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            LiteralValue::String(s) => serde_json::Value::String(s.clone()),
            LiteralValue::Bool(b) => serde_json::Value::Bool(*b),
            LiteralValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 => {
                serde_json::Value::from(*n as i64)
            }
            LiteralValue::Number(n) => serde_json::Number::from_f64(*n).map_or(serde_json::Value::Null, Into::into),
            LiteralValue::Null => serde_json::Value::Null,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            LiteralValue::Null => 0,
            LiteralValue::Bool(_) => 1,
            LiteralValue::Number(_) => 2,
            LiteralValue::String(_) => 3,
        }
    }
}

impl PartialEq for LiteralValue {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for LiteralValue {}

impl PartialOrd for LiteralValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for LiteralValue {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (LiteralValue::String(a), LiteralValue::String(b)) => a.cmp(b),
            (LiteralValue::Bool(a), LiteralValue::Bool(b)) => a.cmp(b),
            (LiteralValue::Number(a), LiteralValue::Number(b)) => a.total_cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for LiteralValue {
    /// Writes the value as JSON (`"hello"`, `true`, `8`, `null`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

/// A union: the variants and how a decoder tells them apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Union {
    /// How maps are told apart (values of other JSON types by their type).
    pub dispatch: Dispatch,
    /// The variants, in schema order.
    pub variants: Vec<Variant>,
}

impl Union {
    /// Whether every variant is a literal (an enumeration).
    #[must_use]
    pub fn is_enumeration(&self) -> bool {
        self.variants.iter().all(|v| matches!(v.kind, VariantKind::Literal(_)))
    }
}

/// How a union tells its map-shaped variants apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatch {
    /// At most one variant is a map: the JSON type decides.
    ByType,
    /// Every map-shaped variant has a distinct literal under one key.
    Tag(String),
    /// Every two map-shaped variants hold different literals under one of these keys.
    Tags(Vec<String>),
    /// The map-shaped variants are objects whose key sets no single map can satisfy twice.
    KeySet,
}

/// The name of a message type by the literals that single it out, outermost union first (the
/// [`Variant::tags`] along the way from a side's message type): the first tag's value when it
/// is a string, then every other tag as `key=value`; `None` without tags. The compatibility
/// report names message types so, and the CLI's `inspect` and `stats` label frames so.
///
/// ```
/// use pi_protocol_gen::model::{tags_name, LiteralValue};
/// let tags = [("type".to_string(), LiteralValue::String("response".into())), ("ok".to_string(), LiteralValue::Bool(false))];
/// assert_eq!(tags_name(&tags).as_deref(), Some("response ok=false"));
/// assert_eq!(tags_name(&tags[1..]).as_deref(), Some("ok=false"));
/// assert_eq!(tags_name(&[]), None);
/// ```
#[must_use]
pub fn tags_name(tags: &[(String, LiteralValue)]) -> Option<String> {
    let parts: Vec<String> = tags
        .iter()
        .enumerate()
        .map(|(i, (key, value))| match (i, value) {
            (0, LiteralValue::String(s)) => s.clone(),
            _ => format!("{key}={value}"),
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// One variant of a union.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Variant {
    /// The Rust variant name (`Hello`, `Server`).
    pub rust_name: String,
    /// The member's own `description`, if any.
    pub doc: Option<String>,
    /// What the variant holds.
    pub kind: VariantKind,
    /// The literals that single the variant out, for the docs (`type: "hello"`).
    pub tags: Vec<(String, LiteralValue)>,
    /// The JSON pointer of the member's schema.
    pub pointer: String,
}

/// What a variant holds.
#[derive(Debug, Clone, PartialEq)]
pub enum VariantKind {
    /// A value of a shape: `V(T)`.
    Value(Shape),
    /// One literal value: a unit variant `V`.
    Literal(LiteralValue),
}
