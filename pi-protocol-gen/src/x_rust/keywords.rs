//! The table of `x-` keywords and the kinds of place each may appear at: what
//! [`Node::allow`](crate::schema::Node::allow) asks of every `x-` key it meets, knowing only the
//! key and its place (the readers of their values are in the parent module).

/// The kinds of place a schema object can sit, as far as `x-` keywords care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Location {
    /// The document root.
    Root,
    /// A member of `$defs`.
    Definition,
    /// A stored property of an object (not a `const` one).
    Property,
    /// A member of a union's `anyOf` or `oneOf`.
    UnionMember,
    /// Anywhere else.
    Other,
}

/// The extension keywords and where each may appear.
const KEYWORDS: &[(&str, &[Location])] = &[
    ("x-protocol-version", &[Location::Root]),
    ("x-limits", &[Location::Root]),
    ("x-client-message", &[Location::Root]),
    ("x-server-message", &[Location::Root]),
    ("x-rust-name", &[Location::Definition, Location::Property, Location::UnionMember, Location::Other]),
    // A union member that is an inline object is also the definition of its own type.
    ("x-rust-variant", &[Location::UnionMember, Location::Definition]),
];

/// Whether `key` is an extension keyword (any `x-` key, supported or not).
pub(crate) fn is_extension(key: &str) -> bool {
    key.starts_with("x-")
}

/// Whether extension keyword `key` is supported at `location`; if not, the message of the
/// error (which the caller places at the keyword's pointer).
pub(crate) fn check_allowed(key: &str, location: Location) -> Result<(), &'static str> {
    match KEYWORDS.iter().find(|(name, _)| *name == key) {
        Some((_, places)) if places.contains(&location) => Ok(()),
        Some(_) => Err("extension keyword not allowed here"),
        None => Err("unsupported keyword"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_keywords_are_checked_by_place() {
        assert!(is_extension("x-anything"));
        assert!(!is_extension("title"));
        assert_eq!(check_allowed("x-limits", Location::Root), Ok(()));
        assert_eq!(check_allowed("x-rust-variant", Location::Definition), Ok(()));
        assert_eq!(check_allowed("x-limits", Location::Property), Err("extension keyword not allowed here"));
        assert_eq!(check_allowed("x-unknown", Location::Root), Err("unsupported keyword"));
    }
}
