//! Hashing for the router's own keys, and the upstream request ids it writes and reads back.
//!
//! Client and upstream keys, upstream request counters and the few announced `serverId`s are
//! chosen by the router or its driver, never by a peer, so they need no protection against
//! chosen collisions and are hashed with one multiplication instead of SipHash (which stays on
//! every map keyed by what a client chooses: its request ids and subscription ids).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::RequestId;

/// A map keyed by a router-chosen key.
pub(super) type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// Multiply-and-fold hashing of integers (and, for `serverId`s, of their bytes eight at a
/// time): enough for keys no peer chooses.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct KeyHasher(u64);

const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(SEED);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

/// The upstream request id for counter `sequence`: `prefix` followed by its decimal digits.
pub(super) fn upstream_id(prefix: &str, sequence: u64) -> RequestId {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = sequence;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let digits = std::str::from_utf8(&digits[at..]).expect("ASCII digits");
    let mut id = String::with_capacity(prefix.len() + digits.len());
    id.push_str(prefix);
    id.push_str(digits);
    RequestId::new(id).expect("a prefix followed by digits is never empty")
}

/// The counter of an id [`upstream_id`] wrote with `prefix`, or `None` for any other id
/// (another prefix, a sign, a leading zero, anything but decimal digits, or beyond `u64`).
pub(super) fn upstream_sequence(prefix: &str, id: &RequestId) -> Option<u64> {
    let digits = id.as_str().strip_prefix(prefix)?.as_bytes();
    match digits {
        [] | [b'0', _, ..] => None,
        _ if !digits.iter().all(u8::is_ascii_digit) => None,
        _ => digits.iter().try_fold(0u64, |n, d| n.checked_mul(10)?.checked_add(u64::from(d - b'0'))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_ids_read_back_only_as_written() {
        for (prefix, sequence) in [("req-", 1), ("req-", 10), ("", 7), ("r", u64::MAX), ("req-", 0)] {
            let id = upstream_id(prefix, sequence);
            assert_eq!(id.as_str(), format!("{prefix}{sequence}"));
            assert_eq!(upstream_sequence(prefix, &id), Some(sequence));
        }
        for other in ["req-01", "req-+1", "req-", "req-1a", "rex-1", "req-18446744073709551616", "req- 1", "1"] {
            assert_eq!(upstream_sequence("req-", &RequestId::new(other).unwrap()), None, "{other}");
        }
    }
}
