//! Hand-made CBOR for the derive's tests, built byte by byte (independent of the runtime's
//! `Writer`), plus decode/encode helpers.

#![allow(dead_code)]

use pi_protocol_runtime::{CborLimits, Decode, Encode, ErrorKind, ProtocolError, Reader, Rule, Writer};

/// A CBOR head of `major` with argument `n`, shortest form.
pub fn head(major: u8, n: u64) -> Vec<u8> {
    let m = major << 5;
    match n {
        0..=23 => vec![m | n as u8],
        24..=0xff => vec![m | 24, n as u8],
        0x100..=0xffff => {
            let mut v = vec![m | 25];
            v.extend_from_slice(&(n as u16).to_be_bytes());
            v
        }
        0x1_0000..=0xffff_ffff => {
            let mut v = vec![m | 26];
            v.extend_from_slice(&(n as u32).to_be_bytes());
            v
        }
        _ => {
            let mut v = vec![m | 27];
            v.extend_from_slice(&n.to_be_bytes());
            v
        }
    }
}

/// A text string.
pub fn text(s: &str) -> Vec<u8> {
    let mut v = head(3, s.len() as u64);
    v.extend_from_slice(s.as_bytes());
    v
}

/// An integer.
pub fn int(n: i64) -> Vec<u8> {
    if n >= 0 {
        head(0, n as u64)
    } else {
        head(1, (-1 - n) as u64)
    }
}

/// A float64.
pub fn float(x: f64) -> Vec<u8> {
    let mut v = vec![0xfb];
    v.extend_from_slice(&x.to_bits().to_be_bytes());
    v
}

/// `true` / `false`.
pub fn boolean(b: bool) -> Vec<u8> {
    vec![if b { 0xf5 } else { 0xf4 }]
}

/// `null`.
pub fn null() -> Vec<u8> {
    vec![0xf6]
}

/// A byte string.
pub fn bytes(b: &[u8]) -> Vec<u8> {
    let mut v = head(2, b.len() as u64);
    v.extend_from_slice(b);
    v
}

/// An array of encoded items.
pub fn array(items: &[Vec<u8>]) -> Vec<u8> {
    let mut v = head(4, items.len() as u64);
    for item in items {
        v.extend_from_slice(item);
    }
    v
}

/// A map of text keys to encoded values, in the given order (duplicates allowed).
pub fn map(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut v = head(5, entries.len() as u64);
    for (k, value) in entries {
        v.extend_from_slice(&text(k));
        v.extend_from_slice(value);
    }
    v
}

/// Decodes exactly one item of `bytes` as `T` with default limits.
pub fn decode<T: for<'de> Decode<'de>>(bytes: &[u8]) -> Result<T, ProtocolError> {
    let mut reader = Reader::new(bytes, CborLimits::default());
    let value = T::decode(&mut reader)?;
    reader.finish()?;
    Ok(value)
}

/// Encodes `value` as one item.
pub fn encode<T: Encode>(value: &T) -> Vec<u8> {
    let mut writer = Writer::new();
    value.encode(&mut writer);
    writer.into_vec()
}

/// Asserts that `result` failed with `kind`, `rule` and the dotted `path`.
#[track_caller]
pub fn assert_error<T: std::fmt::Debug>(result: Result<T, ProtocolError>, kind: ErrorKind, rule: Rule, path: &str) {
    let err = result.expect_err("expected an error");
    assert_eq!((err.kind(), err.rule(), err.path_string().as_str()), (kind, rule, path), "{err}");
}
