//! The pull-style decoders (`messages`, docs/PROTOCOL.md sections 1 and 7) allocate nothing per
//! chunk, measured with a counting global allocator (`peak_alloc`): messages whose fields need
//! no heap decode from chunks of whole frames without a single allocation, and frames split
//! across chunks cost one buffer for the whole stream, where `push` allocates a `Vec` for every
//! chunk that completes a message.
//!
//! The checks run one after the other in the file's only test, so that nothing else in the
//! process allocates while they measure (libtest reports on finished tests from its main
//! thread while others run). Figures are printed (run with `--nocapture` to see them).

use bytes::Bytes;
use peak_alloc::PeakAlloc;
use pi_protocol::{
    encode_client_message, Cancel, ClientHello, ClientMessage, ClientMessageDecoder, Integer, RequestId, ServerId,
    ServerTarget, SharedClientMessageDecoder,
};

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// Runs `f` and returns its result with the peak number of heap bytes allocated during it,
/// above what was allocated before.
fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let result = f();
    (result, ALLOCATOR.peak_usage().saturating_sub(base))
}

/// A `hello` and a `cancel` frame, `pairs` times: messages whose fields live inline (an
/// integer, a short id, a server id), so that decoding them needs no heap of its own.
fn stream(pairs: usize) -> (Vec<u8>, usize) {
    let hello = ClientMessage::from(ClientHello::new(Integer::from(8u8)));
    let target = ServerTarget::new(ServerId::new("3b241101-e2bb-4255-8caf-4136c566a962").unwrap());
    let cancel = ClientMessage::from(Cancel::new(RequestId::new("req-1").unwrap(), target));
    let pair = [encode_client_message(&hello).unwrap(), encode_client_message(&cancel).unwrap()].concat();
    (pair.repeat(pairs), pair.len())
}

/// Pulls every message of `chunks`; the number of messages.
fn pull<'a>(decoder: &mut ClientMessageDecoder, chunks: impl Iterator<Item = &'a [u8]>) -> usize {
    let mut count = 0;
    for chunk in chunks {
        for message in decoder.messages(chunk) {
            assert!(matches!(message, Ok(ClientMessage::Hello(_) | ClientMessage::Cancel(_))));
            count += 1;
        }
    }
    count
}

#[test]
fn pulling_messages_allocates_nothing_per_chunk() {
    chunks_of_whole_frames_allocate_nothing();
    split_frames_cost_one_buffer_for_the_whole_stream();
    the_shared_decoder_pulls_without_allocating_either();
}

fn chunks_of_whole_frames_allocate_nothing() {
    let (stream, pair) = stream(500);
    let mut decoder = ClientMessageDecoder::new();
    let (count, peak) = peak_during(|| pull(&mut decoder, stream.chunks(pair)));
    println!("pull, 500 chunks of two frames: peak {peak} bytes");
    assert_eq!(count, 1000);
    assert_eq!(peak, 0);
    decoder.end().unwrap();

    // `push` returns a vector for each of those chunks.
    let mut decoder = ClientMessageDecoder::new();
    let (count, peak) = peak_during(|| stream.chunks(pair).map(|chunk| decoder.push(chunk).len()).sum::<usize>());
    println!("push, the same chunks: peak {peak} bytes");
    assert_eq!(count, 1000);
    assert!(peak >= 2 * std::mem::size_of::<ClientMessage>(), "{peak} bytes");
}

fn split_frames_cost_one_buffer_for_the_whole_stream() {
    for pairs in [10, 1000] {
        let (stream, pair) = stream(pairs);
        let mut decoder = ClientMessageDecoder::new();
        let (count, peak) = peak_during(|| pull(&mut decoder, stream.chunks(7)));
        println!("pull, {pairs} pairs of frames in 7-byte chunks: peak {peak} bytes");
        assert_eq!(count, 2 * pairs);
        decoder.end().unwrap();
        // The buffer gathering one frame (the two frames of a pair together are longer than
        // the longest), while it grows: whatever the number of chunks.
        assert!(peak > 0 && peak < 2 * pair, "{pairs} pairs: {peak} bytes");
    }
}

fn the_shared_decoder_pulls_without_allocating_either() {
    let (stream, pair) = stream(500);
    let stream = Bytes::from(stream);
    // Slices of a `Bytes` that is already shared count a reference instead of allocating.
    let _shared = stream.clone();
    let mut decoder = SharedClientMessageDecoder::new();
    let (count, peak) = peak_during(|| {
        let mut count = 0;
        for start in (0..stream.len()).step_by(pair) {
            let chunk = stream.slice(start..start + pair);
            count += decoder.messages(&chunk).map(Result::unwrap).count();
        }
        count
    });
    println!("shared pull, 500 chunks of two frames: peak {peak} bytes");
    assert_eq!(count, 1000);
    assert_eq!(peak, 0);
    decoder.end().unwrap();
}
