//! Chunking invariance: the first byte picks the side and the number of cuts, the next bytes
//! the cut points; the rest is the stream. Any split gives the same messages and the same
//! error (kind, rule, path, offset) as one push.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use pi_protocol::{ClientMessageDecoder, ProtocolError, ServerMessageDecoder};

fn run<M>(
    chunks: &[&[u8]],
    mut push: impl FnMut(&[u8]) -> Vec<Result<M, ProtocolError>>,
    end: impl FnOnce() -> Result<(), ProtocolError>,
) -> (Vec<M>, Option<ProtocolError>) {
    let mut messages = Vec::new();
    for chunk in chunks {
        for result in push(chunk) {
            match result {
                Ok(m) => messages.push(m),
                Err(e) => return (messages, Some(e)),
            }
        }
    }
    (messages, end().err())
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
        let d = RefCell::new(ClientMessageDecoder::new());
        let whole = run(&[stream], |c| d.borrow_mut().push(c), || d.borrow_mut().end());
        let d = RefCell::new(ClientMessageDecoder::new());
        let split = run(&chunks, |c| d.borrow_mut().push(c), || d.borrow_mut().end());
        assert_eq!(split, whole);
    } else {
        let d = RefCell::new(ServerMessageDecoder::new());
        let whole = run(&[stream], |c| d.borrow_mut().push(c), || d.borrow_mut().end());
        let d = RefCell::new(ServerMessageDecoder::new());
        let split = run(&chunks, |c| d.borrow_mut().push(c), || d.borrow_mut().end());
        assert_eq!(split, whole);
    }
});
