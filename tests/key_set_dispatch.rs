//! Key-set unions (`RpcTarget`) pick their variant without a peek when the entry count singles
//! one out (derive `decode.rs`). The result must be exactly the specified one: the first variant
//! whose key set the map's keys fit (every key known, every required key present), decoded,
//! with that variant's error when its values are bad, and `NoVariant` when none fits. This file
//! checks it on every map of up to four entries drawn from a pool of keys and values, against
//! a direct implementation of that rule.

use pi_protocol::runtime::{CborLimits, Decode, KeySet, ProtocolError, Reader, Rule, Writer};
use pi_protocol::{RpcTarget, ServerTarget, SessionTarget};

const KEYS: [&str; 4] = ["serverId", "sessionId", "attachmentId", "other"];

#[derive(Clone, Copy)]
enum Val {
    Uuid,
    BadUuid,
    Empty,
    Number,
}

const VALUES: [Val; 4] = [Val::Uuid, Val::BadUuid, Val::Empty, Val::Number];

fn write_value(w: &mut Writer, v: Val) {
    match v {
        Val::Uuid => w.text("3b241101-e2bb-4255-8caf-4136c566a962"),
        Val::BadUuid => w.text("3B241101-E2BB-4255-8CAF-4136C566A962"),
        Val::Empty => w.text(""),
        Val::Number => w.integer(7),
    }
}

/// The rule as specified: peek at the keys, take the first variant they fit, decode it. A map
/// with more entries than the largest variant has keys (3) fits none.
fn specified(bytes: &[u8]) -> Result<RpcTarget, (Rule, String)> {
    let limits = CborLimits::default();
    let no_variant = || {
        let error = ProtocolError::schema(Rule::NoVariant);
        Err((error.rule(), error.to_string()))
    };
    let mut keys: [&[u8]; 3] = [b""; 3];
    let reader = Reader::new(bytes, limits);
    let Some(n) = reader.peek_map_keys_into(&mut keys).map_err(|e| (e.rule(), e.to_string()))? else {
        return no_variant();
    };
    let keys = &keys[..n];
    let mut reader = Reader::new(bytes, limits);
    let result = if ServerTarget::matches_key_bytes(keys) {
        ServerTarget::decode(&mut reader).map(RpcTarget::Server)
    } else if SessionTarget::matches_key_bytes(keys) {
        SessionTarget::decode(&mut reader).map(RpcTarget::Session)
    } else {
        return no_variant();
    };
    result.map_err(|e| (e.rule(), e.to_string()))
}

fn actual(bytes: &[u8]) -> Result<RpcTarget, (Rule, String)> {
    let mut reader = Reader::new(bytes, CborLimits::default());
    RpcTarget::decode(&mut reader).map_err(|e| (e.rule(), e.to_string()))
}

#[test]
fn every_small_map_decodes_as_specified() {
    let (mut checked, mut decoded) = (0, 0);
    for entries in 0..=4u32 {
        let combos = 16usize.pow(entries);
        for code in 0..combos {
            let mut w = Writer::new();
            w.map_header(entries as usize);
            let mut c = code;
            for _ in 0..entries {
                w.text(KEYS[c % 4]);
                write_value(&mut w, VALUES[(c / 4) % 4]);
                c /= 16;
            }
            let bytes = w.into_vec();
            let (want, got) = (specified(&bytes), actual(&bytes));
            assert_eq!(got, want, "map {}", hex::encode(&bytes));
            checked += 1;
            decoded += usize::from(got.is_ok());
        }
    }
    assert_eq!(checked, 1 + 16 + 256 + 4096 + 65536);
    // Both variants occur: 1 server target (a valid serverId alone) and 24 session targets
    // (the three keys in any of 6 orders, a valid serverId, and for each of the other two ids
    // either of the 2 non-empty strings).
    assert_eq!(decoded, 1 + 6 * 2 * 2);
}
