//! The process-wide interner of schema keys: error paths name object keys as `&'static str`
//! ([`PathSegment::Key`](pi_protocol_runtime::PathSegment::Key)), and a schema loaded at run
//! time has no static strings of its own.
//!
//! Each distinct key string is leaked once, the first time any interpreter is built with it, and
//! shared by every interpreter after that. Only keys written in schemas are interned (property
//! names and union tag keys), never anything read from the wire, so the memory held is bounded
//! by the schemas a process loads, whatever input it decodes.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock, PoisonError};

/// The interned keys.
static KEYS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();

/// `key` as a string that lives as long as the process: the same pointer for equal keys.
pub(super) fn intern(key: &str) -> &'static str {
    let mut keys = KEYS.get_or_init(|| Mutex::new(HashSet::new())).lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&interned) = keys.get(key) {
        return interned;
    }
    let leaked: &'static str = Box::leak(key.to_owned().into_boxed_str());
    keys.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::intern;

    #[test]
    fn equal_keys_share_one_string() {
        let a = intern("interner-test-key");
        let b = intern(&String::from("interner-test-key"));
        assert_eq!(a, "interner-test-key");
        assert!(std::ptr::eq(a, b));
        assert!(!std::ptr::eq(a, intern("interner-test-other")));
    }
}
