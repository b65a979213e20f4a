//! The plain-item acceptance test must never be more permissive than the iterative walk,
//! and must agree with it on shape and end position whenever it accepts.

use proptest::prelude::*;

use super::head::{FLOAT64, HEADS};
use super::plain::Plain;
use super::text::is_ascii;
use super::*;

#[derive(Debug, Clone)]
enum Node {
    Int(u64, u8),
    Negative(u64),
    Float(f64),
    Text(String, bool),
    Simple(u8),
    Bytes(usize),
    Tag,
    Array(Vec<Node>, bool),
    Map(Vec<(usize, Node)>, bool),
}

const KEYS: [&str; 11] = [
    "a",
    "b",
    "abcdefg",
    "abcdefgh",
    "abcdefgX",
    "é",
    "abcdefghijk",
    "abcdefghijX",
    "abcdefghijklmnopqrstu",
    "abcdefghijklmnopqrstX",
    "abcdefghéjklmnopqrs",
];

fn head(out: &mut Vec<u8>, major: u8, n: u64, long: bool) {
    if n < 24 && !long {
        out.push(major << 5 | n as u8);
    } else if n < 256 {
        out.extend_from_slice(&[major << 5 | 24, n as u8]);
    } else {
        out.push(major << 5 | 27);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode(node: &Node, out: &mut Vec<u8>) {
    match node {
        Node::Int(n, width) => match width % 4 {
            0 => head(out, 0, *n % 24, false),
            1 => out.extend_from_slice(&[0x19, (*n >> 8) as u8, *n as u8]),
            2 => out.extend_from_slice(&[0x1a, (*n >> 24) as u8, (*n >> 16) as u8, (*n >> 8) as u8, *n as u8]),
            _ => {
                out.push(0x1b);
                out.extend_from_slice(&n.to_be_bytes());
            }
        },
        Node::Negative(n) => head(out, 1, *n % 300, false),
        Node::Float(f) => {
            out.push(0xfb);
            out.extend_from_slice(&f.to_be_bytes());
        }
        Node::Text(t, long) => {
            head(out, 3, t.len() as u64, *long);
            out.extend_from_slice(t.as_bytes());
        }
        Node::Simple(s) => out.push(0xe0 | (s % 32)),
        Node::Bytes(n) => {
            head(out, 2, *n as u64, false);
            out.extend(std::iter::repeat_n(0u8, *n));
        }
        Node::Tag => out.extend_from_slice(&[0xc0, 0x01]),
        Node::Array(items, long) => {
            head(out, 4, items.len() as u64, *long);
            items.iter().for_each(|i| encode(i, out));
        }
        Node::Map(entries, long) => {
            head(out, 5, entries.len() as u64, *long);
            for (k, v) in entries {
                let key = KEYS[k % KEYS.len()];
                head(out, 3, key.len() as u64, false);
                out.extend_from_slice(key.as_bytes());
                encode(v, out);
            }
        }
    }
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        (any::<u64>(), any::<u8>()).prop_map(|(n, w)| Node::Int(n, w)),
        any::<u64>().prop_map(Node::Negative),
        prop_oneof![Just(1.5), Just(f64::NAN), Just(1e300), Just(-0.0)].prop_map(Node::Float),
        ("[a-z]{0,30}|[a-zé]{0,10}|x{250,260}", any::<bool>()).prop_map(|(t, l)| Node::Text(t, l)),
        prop_oneof![Just(20u8), Just(21), Just(22), Just(23), Just(19)].prop_map(Node::Simple),
        (0usize..3).prop_map(Node::Bytes),
        Just(Node::Tag),
    ];
    leaf.prop_recursive(8, 64, 20, |inner| {
        prop_oneof![
            (prop::collection::vec(inner.clone(), 0..20), any::<bool>()).prop_map(|(v, l)| Node::Array(v, l)),
            (prop::collection::vec((0usize..12, inner), 0..20), any::<bool>()).prop_map(|(v, l)| Node::Map(v, l)),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn plain_acceptance_agrees_with_the_walk(
        tree in node(),
        bytes_limit in prop_oneof![Just(u32::MAX), 0u32..40],
        containers in prop_oneof![Just(u32::MAX), 0u32..20],
        depth in 0u32..10,
        at_depth in 0u32..3,
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut input = Vec::new();
        encode(&tree, &mut input);
        if truncate {
            let keep = cut.index(input.len() + 1);
            input.truncate(keep);
        }
        let limits = CborLimits::new(u64::from(bytes_limit), u64::from(containers), u64::from(depth)).unwrap();
        let mut walk = Reader::new(&input, limits).allow_byte_strings(true);
        walk.depth = at_depth;
        let mut fast = walk.clone();
        let by_walk = walk.skip_nested_for_test();
        // The public entry point (plain acceptance first) must give the walk's answer.
        let by_item = fast.skip_item();
        match (&by_walk, &by_item) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(a, b);
                prop_assert_eq!(walk.position(), fast.position());
            }
            (Err(a), Err(b)) => prop_assert_eq!(a.rule(), b.rule()),
            _ => prop_assert!(false, "walk {:?}, item {:?}", by_walk, by_item),
        }
    }
}

#[test]
fn wide_and_long_form_heads_are_left_to_the_walk() {
    // 17 to 23 entries in the head, and counts in the byte after it (0x98, 0xb8), at the top
    // and nested: the same answer as the walk, whatever the entries.
    for head in [0x91u8, 0x97, 0x98, 0xb1, 0xb7, 0xb8] {
        for n in [17usize, 23, 24, 30] {
            let mut item = vec![head];
            if head & 0x1f == 24 {
                item.push(n as u8);
            }
            let count = if head & 0x1f == 24 { n } else { usize::from(head & 0x1f) };
            for i in 0..count {
                if head >= 0xa0 {
                    item.extend_from_slice(&[0x62, b'k', b'a' + (i % 26) as u8]);
                }
                item.push(0x18);
                item.push(i as u8);
            }
            for input in [item.clone(), [&[0x81u8][..], &item].concat()] {
                let limits = CborLimits::default();
                let mut walk = Reader::new(&input, limits);
                let mut fast = walk.clone();
                let expected = walk.skip_nested_for_test().map_err(|e| e.rule());
                assert_eq!(fast.skip_item().map_err(|e| e.rule()), expected, "{}", hex_of(&input));
                assert_eq!(fast.position(), walk.position());
            }
        }
    }
}

#[test]
fn the_ascii_test_sees_a_high_byte_at_every_position_of_every_length() {
    // Every length class: two overlapping loads, 16 bytes per step, the vectorised loop.
    for len in 0..=300usize {
        let clean = vec![b'a'; len];
        assert!(is_ascii(&clean), "{len}");
        for at in 0..len {
            let mut dirty = clean.clone();
            dirty[at] = 0x80;
            assert!(!is_ascii(&dirty), "{len} at {at}");
        }
    }
}

/// Checks that `skip_item` gives the walk's answer and end position on `input`, and
/// returns whether the plain test alone accepted it.
fn agrees_with_the_walk(input: &[u8]) -> bool {
    let mut walk = Reader::new(input, CborLimits::default());
    let mut fast = walk.clone();
    let expected = walk.skip_nested_for_test().map_err(|e| e.rule());
    assert_eq!(fast.skip_item().map_err(|e| e.rule()), expected, "{}", hex_of(input));
    assert_eq!(fast.position(), walk.position(), "{}", hex_of(input));
    let plain = Plain::new(&fast).container(0, 0, &mut ItemShape::default(), input[0]);
    if let Some(end) = plain {
        assert_eq!(Ok(end), expected.map(|_| walk.position()), "{}", hex_of(input));
    }
    plain.is_some()
}

#[test]
fn every_fixed_size_head_is_read_to_its_end() {
    // [item, 0]: a wrong size for the item's head would misplace the 0 after it.
    for head in 0..=255u8 {
        let mut input = vec![0x82, head];
        input.extend_from_slice(&[0x01; 8]);
        let size = usize::from(HEADS[usize::from(head)].fixed_size);
        if size > 0 {
            input.truncate(1 + size);
            input.push(0x00);
            assert!(agrees_with_the_walk(&input), "{}", hex_of(&input));
        } else {
            agrees_with_the_walk(&input);
        }
    }
}

#[test]
fn keys_and_texts_of_every_short_length_anywhere_in_the_input() {
    // Keys and values of 0 to 40 bytes, ASCII or with a high byte at any position, twice
    // (duplicates) or not, at the start of the input and in its last bytes, where the
    // plain test loads them differently.
    let text = |out: &mut Vec<u8>, t: &[u8]| {
        if t.len() < 24 {
            out.push(0x60 + t.len() as u8);
        } else {
            out.extend_from_slice(&[0x78, t.len() as u8]);
        }
        out.extend_from_slice(t);
    };
    for len in 0..=40usize {
        let key: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        let mut variants = vec![key.clone()];
        for at in 0..len {
            let mut other = key.clone();
            other[at] = b'Z';
            variants.push(other.clone());
            other[at] = 0xc3;
            variants.push(other.clone());
            if at + 1 < len {
                other[at + 1] = 0xa9; // "é": valid UTF-8, not ASCII
                variants.push(other);
            }
        }
        for second in &variants {
            for padding in [0usize, 1, 7, 30] {
                // {pad: [0, ...], key: 1, second: 2}, and [pad..., key, second] for values.
                let mut map = vec![0xa3];
                text(&mut map, b"p");
                map.push(0x80 + padding.min(16) as u8);
                map.extend(std::iter::repeat_n(0u8, padding.min(16)));
                text(&mut map, &key);
                map.push(0x01);
                text(&mut map, second);
                map.push(0x02);
                let plain_map = agrees_with_the_walk(&map);
                let mut array = vec![0x83, 0x80 + padding.min(16) as u8];
                array.extend(std::iter::repeat_n(0u8, padding.min(16)));
                text(&mut array, &key);
                text(&mut array, second);
                let plain_array = agrees_with_the_walk(&array);
                // Short distinct ASCII keys, and ASCII values, must not be left to the walk.
                let ascii = second.is_ascii();
                assert_eq!(plain_array, ascii, "{}", hex_of(&array));
                if ascii && len <= 7 && *second != key {
                    assert!(plain_map, "{}", hex_of(&map));
                }
                if *second == key && len < 24 {
                    assert!(!plain_map, "{}", hex_of(&map));
                }
            }
        }
    }
}

#[test]
fn containers_read_inline_keep_every_limit() {
    // Maps inside arrays and arrays inside maps (read inline or by a call, or first one and
    // then the other) under every depth and container limit, at several reader depths.
    let int = |n: u64| Node::Int(n, 0);
    let array = |items: Vec<Node>| Node::Array(items, false);
    let map = |entries: Vec<(usize, Node)>| Node::Map(entries, false);
    let trees = [
        map(vec![(0, int(1)), (1, array(vec![int(2), int(3)]))]),
        map(vec![(0, array(vec![int(1), array(vec![int(2)]), int(3)]))]),
        map(vec![(0, array(vec![int(1), map(vec![(1, array(vec![int(2)]))])]))]),
        array(vec![map(vec![(0, int(1)), (1, map(vec![(0, array(vec![]))]))]), map(vec![])]),
        array(vec![array(vec![map(vec![(0, array(vec![map(vec![(1, int(5))])]))])])]),
        map(vec![(0, array(vec![map(vec![(1, array(vec![map(vec![(2, array(vec![int(1)]))])]))])]))]),
        map(vec![(0, array((0..16).map(int).collect())), (1, array((0..17).map(int).collect()))]),
        array(vec![
            map((0..3).map(|k| (k, array(vec![int(1), int(2)]))).collect()),
            map(vec![(0, int(1)), (0, int(2))]),
        ]),
    ];
    for tree in &trees {
        let mut input = Vec::new();
        encode(tree, &mut input);
        for depth in 0..8u64 {
            for containers in [1u64, 2, 3, 16, 100] {
                for at_depth in 0..3 {
                    let limits = CborLimits::new(1000, containers, depth).unwrap();
                    let mut walk = Reader::new(&input, limits);
                    walk.depth = at_depth;
                    let mut fast = walk.clone();
                    let expected = walk.skip_nested_for_test().map_err(|e| e.rule());
                    assert_eq!(fast.skip_item().map_err(|e| e.rule()), expected, "{}", hex_of(&input));
                    assert_eq!(fast.position(), walk.position(), "{}", hex_of(&input));
                }
            }
        }
    }
}

/// Map keys close to each other: schema keys and variants that differ in one byte at
/// 0..16, keys of 7 and 8 bytes whose plain fingerprints agree, keys equal in their
/// first eight bytes, non-ASCII keys.
const HOSTILE_KEYS: [&[u8]; 34] = [
    b"id",
    b"iD",
    b"type",
    b"typf",
    b"call",
    b"target",
    b"targeu",
    b"serverId",
    b"serverIe",
    b"serverI\x80",
    b"sessionId",
    b"sessionIe",
    b"sessionI",
    b"attachmentId",
    b"attachmentIe",
    b"attachmentId\x7f",
    b"abcdefg",
    b"abcdefg\x0f",
    b"abcdefg\x0e",
    b"abcdefgh",
    b"abcdefgh\x01",
    b"abcdefghi",
    b"abcdefghj",
    b"abcdefghijklmnop",
    b"abcdefghijklmnoq",
    b"abcdefghijklmnopqrstuvw",
    b"abcdefghijklmnopqrstuvx",
    b"abcdefghijklmnopqrstuvwx",
    b"\xc3\xa9",
    b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9a",
    b"",
    b"\x00",
    b"\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f",
    b"\xff",
];

fn push_text(out: &mut Vec<u8>, t: &[u8], rng: &mut fastrand::Rng) {
    let long = rng.u64(..16) == 0;
    if t.len() < 24 && !long {
        out.push(0x60 + t.len() as u8);
    } else if t.len() < 256 {
        out.extend_from_slice(&[0x78, t.len() as u8]);
    } else {
        out.push(0x79);
        out.extend_from_slice(&(t.len() as u16).to_be_bytes());
    }
    out.extend_from_slice(t);
}

fn hostile_scalar(out: &mut Vec<u8>, rng: &mut fastrand::Rng, plainish: bool) {
    const FLOATS: [u64; 16] = [
        0x433f_ffff_ffff_ffff, // 2^53 - 1
        0xc33f_ffff_ffff_ffff, // -(2^53 - 1)
        0x4340_0000_0000_0000, // 2^53
        0xc340_0000_0000_0000, // -2^53
        0x7ff8_0000_0000_0000, // NaN
        0x7ff0_0000_0000_0001, // signalling NaN
        0xfff8_0000_0000_0001, // negative NaN with a payload
        0x8000_0000_0000_0000, // -0.0
        0x0000_0000_0000_0001, // smallest subnormal
        0x800f_ffff_ffff_ffff, // largest negative subnormal
        0x7ff0_0000_0000_0000, // infinity
        0xfff0_0000_0000_0000, // -infinity
        0x7fef_ffff_ffff_ffff, // largest finite
        0x3ff8_0000_0000_0000, // 1.5
        0x433f_ffff_ffff_fffe, // 2^53 - 2
        0x4340_0000_0000_0001, // 2^53 + 2
    ];
    match rng.u64(..14) {
        0 => out.push(rng.u8(..0x18) | if rng.bool() { 0 } else { 0x20 }),
        1 => {
            let major = if rng.bool() { 0 } else { 0x20 };
            let ai = 24 + rng.u64(..if plainish { 3 } else { 4 }) as u8;
            out.push(major | ai);
            for _ in 0..(1 << (ai - 24)) {
                out.push(*rng.choice(&[0u8, 0xff, 0x1f, 0x20, 0x01]).unwrap());
            }
        }
        2 | 3 => {
            out.push(FLOAT64);
            out.extend_from_slice(&rng.choice(&FLOATS).unwrap().to_be_bytes());
        }
        4 if plainish => out.push(*rng.choice(&[0xf4u8, 0xf5, 0xf6]).unwrap()),
        4 => out.push(
            *rng.choice(&[
                0xf4u8, 0xf5, 0xf6, 0xf7, 0xf3, 0xf8, 0xf9, 0xfa, 0xfc, 0xff, 0xc0, 0xd8, 0x40, 0x41, 0x5f, 0x7f, 0x9f,
                0xbf,
            ])
            .unwrap(),
        ),
        5..=8 => {
            let bound = if rng.u64(..8) == 0 && !plainish { 300 } else { 26 };
            let len = rng.u64(..bound) as usize;
            let mut t: Vec<u8> = (0..len).map(|_| b' ' + rng.u8(..95)).collect();
            if len > 0 && rng.u64(..if plainish { 64 } else { 4 }) == 0 {
                let at = rng.usize(..len);
                t[at] = *rng.choice(&[0x80u8, 0xc3, 0xff, 0x7f, 0x00]).unwrap();
                if t[at] == 0xc3 && at + 1 < len {
                    t[at + 1] = 0xa9;
                }
            }
            push_text(out, &t, rng);
        }
        _ => {
            let key = hostile_key(rng, plainish);
            push_text(out, key, rng);
        }
    }
}

fn hostile_item(out: &mut Vec<u8>, rng: &mut fastrand::Rng, levels: u32, plainish: bool) {
    if levels == 0 || rng.u64(..3) == 0 {
        return hostile_scalar(out, rng, plainish);
    }
    let n = if rng.u64(..8) == 0 { rng.u64(..if plainish { 18 } else { 20 }) } else { rng.u64(..6) } as usize;
    let is_map = rng.bool();
    let major = if is_map { 0xa0 } else { 0x80 };
    if n < 24 && (plainish || rng.u64(..16) != 0) {
        out.push(major + n as u8);
    } else {
        out.extend_from_slice(&[major + 24, n as u8]);
    }
    let mut keys: Vec<&[u8]> = Vec::new();
    for _ in 0..n {
        if is_map {
            let key: &[u8] = if !keys.is_empty() && rng.u64(..12) == 0 {
                keys[rng.usize(..keys.len())]
            } else {
                hostile_key(rng, plainish)
            };
            keys.push(key);
            if rng.u64(..30) == 0 && !plainish {
                hostile_scalar(out, rng, plainish);
            } else {
                push_text(out, key, rng);
            }
        }
        hostile_item(out, rng, levels - 1, plainish);
    }
}

/// One of [`HOSTILE_KEYS`]; with `plainish`, one the plain test may read (ASCII, short).
fn hostile_key(rng: &mut fastrand::Rng, plainish: bool) -> &'static [u8] {
    loop {
        let key = HOSTILE_KEYS[rng.usize(..HOSTILE_KEYS.len())];
        if !plainish || (key.len() < 24 && key.is_ascii()) {
            return key;
        }
    }
}

/// Compares `skip_item` with the walk on `input` under `limits` at reader depth `at`, and
/// checks that a payload decoded there keeps its bytes exactly; returns whether the walk
/// accepted it and whether the plain test alone did.
fn compare_with_walk(input: &[u8], limits: CborLimits, at: u32) -> (bool, bool) {
    let mut walk = Reader::new(input, limits);
    walk.depth = at;
    let mut fast = walk.clone();
    let expected = walk.skip_nested_for_test();
    let got = fast.skip_item();
    match (&expected, &got) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "shape {}", hex_of(input));
            assert_eq!(walk.position(), fast.position(), "end {}", hex_of(input));
            let mut again = Reader::new(input, limits);
            again.depth = at;
            let payload = <crate::Payload as crate::codec::Decode>::decode(&mut again).expect("accepted twice");
            assert_eq!(payload.as_cbor(), &input[..walk.position()], "payload bytes {}", hex_of(input));
            assert_eq!((payload.depth(), payload.widest_container()), (a.depth, a.widest));
        }
        (Err(a), Err(b)) => assert_eq!(a.rule(), b.rule(), "rule {}", hex_of(input)),
        _ => panic!("walk {expected:?}, skip_item {got:?}: {}", hex_of(input)),
    }
    let mut reader = Reader::new(input, limits);
    reader.depth = at;
    let plain = matches!(input[0], 0x80..=0x90 | 0xa0..=0xb0)
        && Plain::new(&reader).container(0, 0, &mut ItemShape::default(), input[0]).is_some();
    (expected.is_ok(), plain)
}

#[test]
fn hostile_items_and_their_mutations_agree_with_the_walk() {
    // Items built from near-duplicate keys, float64 edge values, texts with high bytes and
    // every head, then mutated (a byte replaced, cut short, a byte inserted), under tight
    // and default limits at several reader depths. `PI_HOSTILE_CASES` runs more.
    let cases: u64 = std::env::var("PI_HOSTILE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3_000);
    let seed: u64 = std::env::var("PI_HOSTILE_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed);
    let mut rng = fastrand::Rng::with_seed(seed);
    let (mut accepted, mut by_plain) = (0u64, 0u64);
    for _ in 0..cases {
        let mut item = Vec::new();
        // Half the items stay close to plain (short ASCII keys and texts, narrow containers,
        // no refused items), so that the plain test accepts many before their mutation.
        let plainish = rng.bool();
        let levels = 1 + rng.u64(..if plainish { 7 } else { 8 }) as u32;
        hostile_item(&mut item, &mut rng, levels, plainish);
        let limits = match rng.u64(..4) {
            0 => CborLimits::new(rng.u64(..30), rng.u64(..18), rng.u64(..9)).unwrap(),
            _ => CborLimits::default(),
        };
        let at = rng.u64(..3) as u32;
        if at > limits.max_depth() {
            continue;
        }
        for variant in 0..4 {
            let mut input = item.clone();
            if variant > 0 && !input.is_empty() {
                let i = rng.usize(..input.len());
                let byte = if rng.bool() { rng.u8(..) } else { input[i] ^ (1 << rng.u64(..8)) };
                match variant {
                    1 => input[i] = byte,
                    2 => input.truncate(i),
                    _ => input.insert(i, byte),
                }
            }
            if input.is_empty() {
                continue;
            }
            let (valid, plain) = compare_with_walk(&input, limits, at);
            accepted += u64::from(valid);
            by_plain += u64::from(plain);
            // Trailing bytes after the item change nothing but where the input ends.
            input.extend_from_slice(&[0x61, 0x80]);
            compare_with_walk(&input, limits, at);
        }
    }
    // Both the plain test and the walk must see many valid items (the generator drifts
    // otherwise), and the walk some the plain test leaves to it.
    assert!(accepted > cases / 4, "{accepted} of {cases} accepted: the generator drifted");
    assert!(by_plain > cases / 8 && by_plain < accepted, "{by_plain} plain of {accepted} accepted");
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Reader<'_> {
    /// The iterative walk alone (scalars through `skip_scalar`), for comparison.
    fn skip_nested_for_test(&mut self) -> Result<ItemShape, ProtocolError> {
        match self.peek_major() {
            Some(major::ARRAY | major::MAP) => self.skip_nested(),
            _ => self.skip_scalar().map(|()| ItemShape::default()),
        }
    }
}

#[test]
fn the_table_of_initial_bytes_says_what_the_grammar_says() {
    use super::head::{Class, Follows, RESERVED};
    use crate::scalar::JsonTypes;
    for b in 0..=255u8 {
        let (m, ai) = (b >> 5, b & 0x1f);
        let head = HEADS[usize::from(b)];
        assert_eq!(head.major, m, "{b:#04x}");
        let argument = match ai {
            0..=23 => 0,
            24 => 1,
            25 => 2,
            26 => 4,
            27 => 8,
            _ => RESERVED,
        };
        assert_eq!(head.argument, argument, "{b:#04x}");
        // Fixed sizes: one-byte integers and simple values, integers of 1, 2 and 4 argument
        // bytes, float64; nothing else (8-byte integers may be unsafe).
        let fixed = match b {
            0x00..=0x17 | 0x20..=0x37 | 0xf4..=0xf6 => 1,
            0x18 | 0x38 => 2,
            0x19 | 0x39 => 3,
            0x1a | 0x3a => 5,
            0xfb => 9,
            _ => 0,
        };
        assert_eq!(head.fixed_size, fixed, "{b:#04x}");
        let class = match b {
            _ if fixed != 0 => Class::Fixed,
            0x60..=0x77 => Class::ShortText,
            0x78 => Class::ByteLengthText,
            0x80..=0x90 | 0xa0..=0xb0 => Class::SmallContainer,
            _ => Class::Other,
        };
        assert_eq!(head.class, class, "{b:#04x}");
        let json = match b {
            0x00..=0x1b | 0x20..=0x3b | 0xfb => JsonTypes::NUMBER,
            0x60..=0x7b => JsonTypes::STRING,
            0x80..=0x9b => JsonTypes::ARRAY,
            0xa0..=0xbb => JsonTypes::OBJECT,
            0xf4 | 0xf5 => JsonTypes::BOOLEAN,
            0xf6 => JsonTypes::NULL,
            _ => JsonTypes::NONE,
        };
        assert_eq!(head.json, json, "{b:#04x}");
        let follows = match b {
            0x00..=0x1b | 0x20..=0x3b | 0xf4..=0xf6 => Follows::Nothing,
            0xfb => Follows::Float,
            0x40..=0x5b => Follows::Bytes,
            0x60..=0x7b => Follows::Text,
            0x80..=0x9b => Follows::Elements,
            0xa0..=0xbb => Follows::Entries,
            0xc0..=0xdb => Follows::Tag,
            _ => Follows::Refused,
        };
        assert_eq!(head.follows, follows, "{b:#04x}");
    }
}

#[test]
fn take_key_moves_past_the_named_key_only() {
    // {"args": 1} then a second text "ab" at the end.
    let input = [0xa1, 0x64, b'a', b'r', b'g', b's', 0x01, 0x62, b'a', b'b'];
    let mut r = Reader::new(&input, CborLimits::default());
    assert_eq!(r.enter_map().unwrap(), 1);
    // Another key, a prefix of it, a longer one: the cursor stays.
    for other in [&b"argv"[..], b"arg", b"argss", b""] {
        assert!(!r.take_key(other), "{other:?}");
        assert_eq!(r.position(), 1);
    }
    assert!(r.take_key(b"args"));
    assert_eq!(r.position(), 6);
    // Not a text string: no.
    assert!(!r.take_key(b"\x01"));
    assert_eq!(r.position(), 6);
    r.skip().unwrap();
    assert!(r.take_key(b"ab"));
    assert!(r.is_at_end());
    // Nothing left: no.
    assert!(!r.take_key(b""));
    // A text whose head says more bytes than there are: no.
    let short = [0x64, b'a', b'r'];
    assert!(!Reader::new(&short, CborLimits::default()).take_key(b"ar"));
    // The two-byte head form of the same text is taken too, past both bytes of its head.
    let long_head = [0x78, 0x02, b'a', b'b', 0xf6];
    let mut r = Reader::new(&long_head, CborLimits::default());
    assert!(r.take_key(b"ab"));
    assert_eq!(r.position(), 4);
}
