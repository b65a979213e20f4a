//! The strict CBOR subset, rule by rule (docs/PROTOCOL.md sections 2 and 3).

use pi_protocol_runtime::{
    decode_cbor, encode_cbor, CborLimits, CborValue, ErrorKind, FrameDecoder, Payload, ProtocolError, Rule, Writer,
};

fn raw(hex: &str) -> Result<CborValue, ProtocolError> {
    decode_cbor(&hex::decode(hex).unwrap(), CborLimits::default())
}

fn rule(hex: &str) -> Rule {
    raw(hex).expect_err(hex).rule()
}

#[test]
fn integers_of_any_width_within_the_safe_range() {
    assert_eq!(raw("17").unwrap(), CborValue::Number(23.0));
    assert_eq!(raw("1817").unwrap(), CborValue::Number(23.0)); // non-minimal is fine
    assert_eq!(raw("1b0000000000000017").unwrap(), CborValue::Number(23.0));
    assert_eq!(raw("1b001fffffffffffff").unwrap(), CborValue::Number(9_007_199_254_740_991.0));
    assert_eq!(rule("1b0020000000000000"), Rule::UnsafeInteger);
    assert_eq!(raw("3b001ffffffffffffe").unwrap(), CborValue::Number(-9_007_199_254_740_991.0));
    assert_eq!(rule("3b001fffffffffffff"), Rule::UnsafeInteger);
    assert_eq!(rule("3bffffffffffffffff"), Rule::UnsafeInteger);
    assert_eq!(rule("1c"), Rule::ReservedAdditionalInfo);
    assert_eq!(rule("1f"), Rule::ReservedAdditionalInfo);
    assert_eq!(rule("1b00"), Rule::Truncated);
}

#[test]
fn only_false_true_null_and_finite_float64_in_major_type_7() {
    assert_eq!(raw("f4").unwrap(), CborValue::Bool(false));
    assert_eq!(raw("f5").unwrap(), CborValue::Bool(true));
    assert_eq!(raw("f6").unwrap(), CborValue::Null);
    for hex in ["f7", "e0", "f3", "f820", "f8ff", "f93c00", "fa3fc00000"] {
        assert_eq!(rule(hex), Rule::UnsupportedSimple, "{hex}");
    }
    assert_eq!(rule("ff"), Rule::UnexpectedBreak);
    assert_eq!(rule("fb7ff8000000000000"), Rule::NonFiniteNumber);
    assert_eq!(rule("fb7ff0000000000000"), Rule::NonFiniteNumber);
    assert_eq!(rule("fb4340000000000000"), Rule::UnsafeInteger); // 2^53
    assert_eq!(rule("fb7fefffffffffffff"), Rule::UnsafeInteger); // MAX_VALUE is integral
    assert_eq!(raw("fb8000000000000000").unwrap(), CborValue::Number(-0.0));
    assert_eq!(raw("fb0000000000000001").unwrap(), CborValue::Number(5e-324));
    assert_eq!(raw("fb3fe0000000000000").unwrap(), CborValue::Number(0.5));
}

#[test]
fn text_is_definite_strict_utf8_and_keeps_a_bom() {
    assert_eq!(raw("63efbbbf").unwrap(), CborValue::Text("\u{feff}".into()));
    for hex in ["6180", "62c0af", "63eda080", "64f4908080", "62e282"] {
        assert_eq!(rule(hex), Rule::InvalidUtf8, "{hex}");
    }
    assert_eq!(rule("7f6161ff"), Rule::IndefiniteLength);
    assert_eq!(rule("5f4161ff"), Rule::IndefiniteLength);
    assert_eq!(rule("9f01ff"), Rule::IndefiniteLength);
    assert_eq!(rule("bf616101ff"), Rule::IndefiniteLength);
    assert_eq!(rule("6561"), Rule::Truncated);
    assert_eq!(rule("7b7fffffffffffffff"), Rule::LengthOutOfRange);
}

#[test]
fn maps_need_text_keys_without_duplicates() {
    assert_eq!(rule("a10101"), Rule::NonTextKey);
    assert_eq!(rule("a1410101"), Rule::NonTextKey);
    assert_eq!(rule("a2616101616102"), Rule::DuplicateKey);
    assert_eq!(rule("a261610178016102"), Rule::DuplicateKey); // same key, other length encoding
                                                              // A large map uses the hash-set path.
    let mut w = Writer::new();
    w.map_header(40);
    for i in 0..40 {
        w.text(&format!("k{}", i.min(38)));
        w.null();
    }
    assert_eq!(decode_cbor(w.as_bytes(), CborLimits::default()).unwrap_err().rule(), Rule::DuplicateKey);
}

#[test]
fn tags_are_refused_even_self_describe() {
    assert_eq!(rule("c001"), Rule::Tag);
    assert_eq!(rule("d9d9f701"), Rule::Tag);
}

#[test]
fn limits_apply_per_item_per_container_and_per_level() {
    let limits = |b, c, d| CborLimits::new(b, c, d).unwrap();
    let bytes = |h: &str| hex::decode(h).unwrap();
    assert_eq!(decode_cbor(&bytes("818181f6"), limits(100, 100, 2)).unwrap_err().rule(), Rule::DepthLimit { limit: 2 });
    assert!(decode_cbor(&bytes("818181f6"), limits(100, 100, 3)).is_ok());
    assert_eq!(decode_cbor(&bytes("a1617801"), limits(100, 100, 0)).unwrap_err().rule(), Rule::DepthLimit { limit: 0 });
    assert!(decode_cbor(&bytes("82820102820102"), limits(100, 2, 8)).is_ok());
    assert_eq!(
        decode_cbor(&bytes("83010203"), limits(100, 2, 8)).unwrap_err().rule(),
        Rule::ContainerLengthLimit { limit: 2 }
    );
    assert_eq!(
        decode_cbor(&bytes("4401020304"), limits(4, 2, 8)).unwrap_err().rule(),
        Rule::ByteLengthLimit { limit: 4 }
    );
    // A declared count beyond the input is truncated, found before anything is allocated.
    assert_eq!(decode_cbor(&bytes("9a000f4240"), CborLimits::default()).unwrap_err().rule(), Rule::Truncated);
    assert_eq!(
        decode_cbor(&bytes("9b0000010000000000"), CborLimits::default()).unwrap_err().rule(),
        Rule::ContainerLengthLimit { limit: 1_000_000 }
    );
}

#[test]
fn trailing_data_and_empty_input() {
    assert_eq!(rule(""), Rule::Truncated);
    assert_eq!(rule("f6f6"), Rule::TrailingData);
}

#[test]
fn the_encoder_writes_shortest_forms_and_json_numbers() {
    let enc = |v: CborValue| hex::encode(encode_cbor(&v, CborLimits::default()).unwrap());
    assert_eq!(enc(CborValue::Number(23.0)), "17");
    assert_eq!(enc(CborValue::Number(24.0)), "1818");
    assert_eq!(enc(CborValue::Number(256.0)), "190100");
    assert_eq!(enc(CborValue::Number(65536.0)), "1a00010000");
    assert_eq!(enc(CborValue::Number(4_294_967_296.0)), "1b0000000100000000");
    assert_eq!(enc(CborValue::Number(-1.0)), "20");
    assert_eq!(enc(CborValue::Number(-2_147_483_649.0)), "3a80000000");
    assert_eq!(enc(CborValue::Number(1.0)), "01");
    assert_eq!(enc(CborValue::Number(-0.0)), "fb8000000000000000");
    assert_eq!(enc(CborValue::Number(1.5)), "fb3ff8000000000000");
    assert_eq!(enc(CborValue::Text("a".repeat(24))), format!("7818{}", "61".repeat(24)));
    for bad in [f64::NAN, f64::INFINITY, 9_007_199_254_740_992.0, 1e21] {
        assert_eq!(encode_cbor(&CborValue::Number(bad), CborLimits::default()).unwrap_err().kind(), ErrorKind::Encode);
    }
}

#[test]
fn payloads_are_strict_json_and_keep_key_order() {
    assert_eq!(
        Payload::from_cbor(hex::decode("a1616141ff").unwrap().into(), CborLimits::default()).unwrap_err().rule(),
        Rule::ByteString
    );
    let p = Payload::from_cbor(hex::decode("a2616202616101").unwrap().into(), CborLimits::default()).unwrap();
    // Streamed out, and built from text or from a serializer, the wire order stays (a
    // `serde_json::Value` keeps it only with serde_json's `preserve_order`).
    assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"b":2,"a":1}"#);
    assert_eq!(Payload::from_json_str(r#"{"b":2,"a":1}"#).unwrap(), p);
    assert_eq!(Payload::from_serialize(&p).unwrap(), p);
    assert_eq!(p.to_value(), serde_json::json!({"a": 1, "b": 2}));
    assert_eq!(p.depth(), 1);
    assert_eq!(p.widest_container(), 2);
}

#[test]
fn the_frame_decoder_handles_any_fragmentation_and_stays_failed() {
    let stream = hex::decode("00000001f600000002f5f4").unwrap();
    for split in 0..=stream.len() {
        let mut d = FrameDecoder::new();
        let mut frames = Vec::new();
        for part in [&stream[..split], &[][..], &stream[split..]] {
            d.push_with(part, |f, o| {
                frames.push((f.to_vec(), o));
                Ok(())
            })
            .unwrap();
        }
        d.end().unwrap();
        assert_eq!(frames, vec![(vec![0xf6], 0), (vec![0xf5, 0xf4], 5)], "split at {split}");
        assert_eq!(d.end().unwrap_err().rule(), Rule::DecoderEnded);
    }
    let mut d = FrameDecoder::with_max_frame_length(1).unwrap();
    let err = d.push_with(&hex::decode("00000001f600000002").unwrap(), |_, _| Ok(())).unwrap_err();
    assert_eq!((err.rule(), err.offset()), (Rule::FrameTooLong { length: 2, limit: 1 }, Some(5)));
    assert_eq!(d.push_with(&[], |_, _| Ok(())).unwrap_err().rule(), Rule::DecoderFailed);
    let mut d = FrameDecoder::new();
    d.push_with(&[0, 0, 0], |_, _| Ok(())).unwrap();
    assert_eq!(d.end().unwrap_err().rule(), Rule::TruncatedFrame);
}

#[test]
fn a_partial_frame_buffer_grows_with_what_arrived_not_with_the_header() {
    let mut d = FrameDecoder::new();
    // Announce 16 MiB, deliver 10 bytes: the decoder must not have reserved the announced size.
    let mut chunk = (16u32 << 20).to_be_bytes().to_vec();
    chunk.extend_from_slice(&[0x60; 10]);
    d.push_with(&chunk, |_, _| Ok(())).unwrap();
    assert!(d.has_partial());
    assert!(d.buffered_capacity() <= 2 * chunk.len(), "{}", d.buffered_capacity());
    // Fed one byte at a time, capacity stays proportional to what arrived.
    let mut received = chunk.len();
    for _ in 0..100_000 {
        d.push_with(&[0x61], |_, _| Ok(())).unwrap();
        received += 1;
        assert!(d.buffered_capacity() <= 2 * received);
    }
}

#[test]
fn trees_of_the_deepest_configurable_item_build_on_a_small_stack() {
    // 512 nested arrays around null: the deepest item maxDepth 512 admits. Building its tree
    // (raw CborValue and serde_json::Value) must not need a call frame per level.
    let mut cbor = vec![0x81; 512];
    cbor.push(0xf6);
    let limits = CborLimits::widest();
    let worker = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let value = decode_cbor(&cbor, limits).unwrap();
            let mut depth = 0;
            let mut v = &value;
            while let CborValue::Array(items) = v {
                depth += 1;
                v = &items[0];
            }
            let payload = Payload::from_cbor(cbor.into(), limits).unwrap();
            let json = payload.to_value();
            let mut json_depth = 0;
            let mut j = &json;
            while let serde_json::Value::Array(items) = j {
                json_depth += 1;
                j = &items[0];
            }
            (depth, json_depth, payload.depth())
        })
        .unwrap();
    assert_eq!(worker.join().unwrap(), (512, 512, 512));
}

/// Both validators (the tree builder of `decode_cbor` and the skipping walk behind
/// `Payload::from_cbor`) must find exactly the duplicate keys there are.
fn duplicate_verdicts(bytes: &[u8]) -> (bool, bool) {
    let tree = decode_cbor(bytes, CborLimits::default());
    let walk = Payload::from_cbor(bytes::Bytes::copy_from_slice(bytes), CborLimits::default());
    let is_dup = |e: &ProtocolError| e.rule() == Rule::DuplicateKey;
    (tree.as_ref().err().is_some_and(is_dup), walk.as_ref().err().is_some_and(is_dup))
}

fn map_of(keys: &[&str]) -> Vec<u8> {
    let mut w = Writer::new();
    w.map_header(keys.len());
    for k in keys {
        w.text(k);
        w.null();
    }
    w.into_vec()
}

#[test]
fn duplicate_keys_are_found_whatever_their_length_and_prefix() {
    let long_a = format!("abcdefg{}", "x".repeat(256)); // length 263: 7 modulo 256
    let long_b = format!("abcdefg{}", "y".repeat(256));
    let cases: Vec<(Vec<&str>, bool)> = vec![
        // Distinct keys sharing a seven-byte prefix (and the length modulo 256).
        (vec!["abcdefg", long_a.as_str()], false),
        (vec![long_a.as_str(), "abcdefg"], false),
        (vec![long_a.as_str(), long_b.as_str()], false),
        (vec!["abcdefgh", "abcdefgX"], false),
        (vec!["pinned", "parent"], false),
        (vec!["", "a", "ab"], false),
        // Real duplicates of every length class, the second one last in the input.
        (vec!["abcdefg", "z", "abcdefg"], true),
        (vec!["abcdefgh", "abcdefgh"], true),
        (vec![long_a.as_str(), "q", long_a.as_str()], true),
        (vec!["", ""], true),
        (vec!["k"; 2], true),
    ];
    for (keys, duplicate) in cases {
        let bytes = map_of(&keys);
        assert_eq!(duplicate_verdicts(&bytes), (duplicate, duplicate), "{keys:?}");
    }
}

#[test]
fn duplicate_keys_are_scoped_to_their_own_map_at_any_nesting() {
    // Three levels of 16-key maps (the largest checked by a linear scan), keys k0..k15 at
    // every level: no duplicate anywhere, and 48 keys are open at once (the inline list spills).
    fn nested(w: &mut Writer, level: u32) {
        w.map_header(16);
        for i in 0..16 {
            w.text(&format!("k{i}"));
            if level < 3 && i == 15 {
                nested(w, level + 1);
            } else {
                w.integer(i64::from(level));
            }
        }
    }
    let mut w = Writer::new();
    nested(&mut w, 1);
    assert_eq!(duplicate_verdicts(w.as_bytes()), (false, false));
    // The same with the last inner map repeating its first key.
    let mut w = Writer::new();
    w.map_header(2);
    w.text("a");
    w.map_header(2);
    w.text("x");
    w.null();
    w.text("y");
    w.null();
    w.text("b");
    w.map_header(3);
    w.text("x");
    w.null();
    w.text("y");
    w.null();
    w.text("x");
    w.null();
    assert_eq!(duplicate_verdicts(&w.into_vec()), (true, true));
}

#[test]
fn duplicate_non_ascii_keys_are_found_whatever_follows_them() {
    // Short keys are compared by a fingerprint of their first bytes; for a non-ASCII key it must
    // still cover the key alone, not the value bytes after it (1 and 2 here).
    for key in ["é", "ü-x", "日本"] {
        let mut w = Writer::new();
        w.map_header(2);
        w.text(key);
        w.integer(1);
        w.text(key);
        w.integer(2);
        assert_eq!(duplicate_verdicts(w.as_bytes()), (true, true), "{key}");
    }
}
