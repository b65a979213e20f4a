//! JSON pointer segments (RFC 6901): escaping a key into a segment of a pointer and back, for
//! every module that names a place in a schema document.

/// Escapes one JSON pointer segment (RFC 6901: `~` -> `~0`, `/` -> `~1`).
#[must_use]
pub(crate) fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Undoes [`escape_pointer`]; `None` for a malformed escape.
pub(crate) fn unescape_pointer(segment: &str) -> Option<String> {
    let mut out = String::with_capacity(segment.len());
    let mut chars = segment.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_segments_round_trip() {
        assert_eq!(escape_pointer("a/b~c"), "a~1b~0c");
        assert_eq!(unescape_pointer("a~1b~0c").as_deref(), Some("a/b~c"));
        assert_eq!(unescape_pointer("a~2"), None);
    }
}
