//! The raw strict-CBOR decoder with random limits: the first 7 bytes choose maxByteLength,
//! maxContainerLength (3 bytes each, so small limits are common) and maxDepth (0..=512). An
//! accepted item must re-encode canonically and decode back to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_protocol::{decode_cbor, encode_cbor, CborLimits};

fuzz_target!(|data: &[u8]| {
    if data.len() < 7 {
        return;
    }
    let (head, item) = data.split_at(7);
    let n = |b: &[u8]| u64::from(b[0]) << 16 | u64::from(b[1]) << 8 | u64::from(b[2]);
    let max_byte_length = if head[0] == 0xff { u64::from(u32::MAX) } else { n(&head[0..3]) };
    let max_container_length = n(&head[3..6]);
    let max_depth = u64::from(head[6]) * 2 % 513;
    let limits = CborLimits::new(max_byte_length, max_container_length, max_depth).expect("in range");
    if let Ok(value) = decode_cbor(item, limits) {
        let unbounded = CborLimits::widest();
        let canonical = encode_cbor(&value, unbounded).expect("a decoded value encodes");
        assert!(canonical.len() <= item.len(), "canonical form is never longer");
        assert_eq!(decode_cbor(&canonical, limits).expect("canonical form decodes under the same limits"), value);
    }
});
