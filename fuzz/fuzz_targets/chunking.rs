//! Chunking invariance: the first byte picks the side and the number of cuts, the next bytes
//! the cut points; the rest is the stream. Any split gives the same messages and the same
//! error (kind, rule, path, offset) as one push.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_protocol::{ClientMessageDecoder, ServerMessageDecoder};

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else { return };
    let cuts = usize::from(control >> 1 & 0x0f);
    if rest.len() < cuts * 2 {
        return;
    }
    let (cut_bytes, stream) = rest.split_at(cuts * 2);
    let mut points: Vec<usize> =
        cut_bytes.chunks(2).map(|c| usize::from(u16::from_be_bytes([c[0], c[1]])) % (stream.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut from = 0;
    for p in points {
        chunks.push(&stream[from..p]);
        from = p;
    }
    chunks.push(&stream[from..]);
    if control & 1 == 0 {
        let whole = ClientMessageDecoder::new().decode_all([stream]);
        assert_eq!(ClientMessageDecoder::new().decode_all(chunks), whole);
    } else {
        let whole = ServerMessageDecoder::new().decode_all([stream]);
        assert_eq!(ServerMessageDecoder::new().decode_all(chunks), whole);
    }
});
