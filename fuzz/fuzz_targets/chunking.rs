//! Chunking invariance: the first byte picks the side and the number of cuts, the next bytes
//! the cut points; the rest is the stream. Any split gives the same messages and the same
//! error (kind, rule, path, offset) as pushing the stream one byte at a time, but for the
//! reference's chunk rule (docs/PROTOCOL.md section 6): where a frame of a chunk does not
//! decode, a header over the limit later in that chunk is the error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_protocol::{ClientMessageDecoder, ErrorKind, ProtocolError, Rule, ServerMessageDecoder};

/// The same messages and error, or a `FrameTooLong` of a later header where the byte-at-a-time
/// decode found a frame that does not decode.
fn check<M: PartialEq + std::fmt::Debug>(
    chunked: (Vec<M>, Option<ProtocolError>),
    bytewise: (Vec<M>, Option<ProtocolError>),
) {
    assert_eq!(chunked.0, bytewise.0);
    match (&chunked.1, &bytewise.1) {
        (a, b) if a == b => {}
        (Some(a), Some(b)) => {
            assert!(matches!(a.rule(), Rule::FrameTooLong { .. }), "{a:?} / {b:?}");
            assert!(matches!(b.kind(), ErrorKind::Cbor | ErrorKind::Schema), "{a:?} / {b:?}");
            assert!(a.offset() > b.offset(), "{a:?} / {b:?}");
        }
        (a, b) => panic!("{a:?} / {b:?}"),
    }
}

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
        let bytewise = ClientMessageDecoder::new().decode_all(stream.chunks(1));
        check(ClientMessageDecoder::new().decode_all(chunks), bytewise);
    } else {
        let bytewise = ServerMessageDecoder::new().decode_all(stream.chunks(1));
        check(ServerMessageDecoder::new().decode_all(chunks), bytewise);
    }
});
