//! The frame decoder's buffer for a frame split across chunks (docs/PROTOCOL.md section 1):
//! how much it holds while the frame arrives, what it keeps once the frame is delivered, and
//! which error wins when a frame fails and a header further on in its chunk is over the limit.

use pi_protocol_runtime::{encode_frame, ErrorKind, FrameDecoder, ProtocolError, Rule};

const LIMIT: u32 = 16 << 20;

fn frame(payload_len: usize) -> Vec<u8> {
    encode_frame(&vec![0xf6; payload_len], LIMIT).unwrap()
}

/// Feeds `stream` in chunks of `step` bytes, both ways, checking at every step that the buffer
/// holds at most twice what has arrived of the frame (or the allocator's smallest buffer, 16
/// bytes, for its first bytes) and never more than the frame.
fn check_growth(stream: &[u8], step: usize) {
    let total = stream.len();
    for pull in [false, true] {
        let mut decoder = FrameDecoder::new();
        let mut delivered = 0;
        for (i, chunk) in stream.chunks(step).enumerate() {
            if pull {
                let mut frames = decoder.frames(chunk);
                while let Some(frame) = frames.next_frame() {
                    frame.unwrap();
                    delivered += 1;
                }
            } else {
                decoder
                    .push_with(chunk, |_, _| {
                        delivered += 1;
                        Ok(())
                    })
                    .unwrap();
            }
            let arrived = ((i + 1) * step).min(total);
            if arrived < total {
                let held = decoder.buffered_capacity();
                assert!(held >= arrived, "step {step}, {arrived} arrived, {held} held");
                assert!(held <= (2 * arrived).max(16) && held <= total, "step {step}, {arrived} arrived, {held} held");
            }
        }
        assert_eq!(delivered, 1, "step {step}");
        decoder.end().unwrap();
    }
}

#[test]
fn a_split_frame_is_buffered_within_twice_what_arrived_and_never_past_its_length() {
    let stream = frame(10_000);
    for step in [1, 3, 7, 100, 999, 4096, 6000] {
        check_growth(&stream, step);
    }
}

#[test]
fn a_small_buffer_is_kept_for_the_next_split_frame_and_a_large_one_freed() {
    for (payload_len, kept) in [(1_000, true), (30_000, true), (200_000, false)] {
        let stream = frame(payload_len);
        let (head, tail) = stream.split_at(stream.len() / 2);
        let mut decoder = FrameDecoder::new();
        decoder.push_with(head, |_, _| panic!("not complete yet")).unwrap();
        assert!(decoder.has_partial());
        let mut seen = 0;
        decoder
            .push_with(tail, |payload, offset| {
                seen += payload.len() + offset as usize;
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, payload_len);
        assert!(!decoder.has_partial());
        if kept {
            assert!(decoder.buffered_capacity() >= stream.len(), "{}", decoder.buffered_capacity());
        } else {
            assert_eq!(decoder.buffered_capacity(), 0);
        }
    }
}

/// A frame that fails to decode, two frames after it, then a header over the limit: the
/// header's error wins, at its own offset (the reference splits the whole chunk first).
#[test]
fn a_header_over_the_limit_later_in_the_chunk_wins_at_its_offset() {
    let limit = 1_000u32;
    let (bad, good, also_good) = (frame(10), frame(20), frame(30));
    let over = (limit + 1).to_be_bytes();
    let mut chunk = [bad.clone(), good.clone(), also_good.clone()].concat();
    chunk.extend_from_slice(&over);
    let at = (bad.len() + good.len() + also_good.len()) as u64;
    let refused = || ProtocolError::new(ErrorKind::Schema, Rule::ByteString);
    let expect = |error: ProtocolError| {
        assert_eq!(error.kind(), ErrorKind::Frame, "{error}");
        assert_eq!(error.offset(), Some(at), "{error}");
    };
    let mut pushed = FrameDecoder::with_max_frame_length(u64::from(limit)).unwrap();
    expect(pushed.push_with(&chunk, |_, _| Err(refused())).unwrap_err());
    let mut pulled = FrameDecoder::with_max_frame_length(u64::from(limit)).unwrap();
    let mut frames = pulled.frames(&chunk);
    expect(frames.next_message(|_| Err::<(), _>(refused())).unwrap().unwrap_err());
    // Without such a header, the frame's own error stands, at the frame's offset.
    let mut plain = FrameDecoder::with_max_frame_length(u64::from(limit)).unwrap();
    let mut frames = plain.frames(&bad);
    let error = frames.next_message(|_| Err::<(), _>(refused())).unwrap().unwrap_err();
    assert_eq!((error.kind(), error.offset()), (ErrorKind::Schema, Some(0)));
}

#[test]
fn the_configured_limit_reads_back() {
    assert_eq!(FrameDecoder::with_max_frame_length(1_234).unwrap().max_frame_length(), 1_234);
    assert_eq!(FrameDecoder::new().max_frame_length(), LIMIT);
}

/// A header split after its first byte, of an empty frame that another frame follows in the
/// same chunk: the buffer takes exactly the header's three missing bytes, and both frames come
/// out, in both feeding styles.
#[test]
fn a_split_header_takes_only_its_own_missing_bytes() {
    let stream = [frame(0), frame(3)].concat();
    for pull in [false, true] {
        let mut decoder = FrameDecoder::new();
        let mut lengths = Vec::new();
        for chunk in [&stream[..1], &stream[1..]] {
            if pull {
                let mut frames = decoder.frames(chunk);
                while let Some(frame) = frames.next_frame() {
                    lengths.push(frame.unwrap().0.len());
                }
            } else {
                decoder
                    .push_with(chunk, |payload, _| {
                        lengths.push(payload.len());
                        Ok(())
                    })
                    .unwrap();
            }
        }
        assert_eq!(lengths, [0, 3], "pull: {pull}");
        decoder.end().unwrap();
    }
}

#[test]
fn an_encoded_frame_may_be_exactly_the_limit_and_no_longer() {
    // The limit counts the payload, not the 4-byte header.
    assert_eq!(encode_frame(&[0xf6; 3], 3).unwrap(), vec![0, 0, 0, 3, 0xf6, 0xf6, 0xf6]);
    let error = encode_frame(&[0xf6; 4], 3).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Frame);
    assert_eq!(error.rule(), Rule::EncodedFrameTooLong { length: 4, limit: 3 });
    assert_eq!(encode_frame(&[], 0).unwrap(), vec![0, 0, 0, 0]);
    assert!(encode_frame(&[0xf6], 0).is_err());
}

#[test]
fn a_header_over_the_limit_later_in_the_backlog_wins_over_a_frame_from_it() {
    // The first frame is read, then the iterator dropped: the rest of the chunk is kept (the
    // backlog) and comes first from the next iterator. A frame from it that does not decode
    // loses to a header over the limit later in the same chunk, as if the chunk were read at once.
    let limit = 1_000u32;
    let (first, bad, good) = (frame(10), frame(20), frame(30));
    let over = (limit + 1).to_be_bytes();
    let mut chunk = [first.clone(), bad.clone(), good.clone()].concat();
    chunk.extend_from_slice(&over);
    let at = (first.len() + bad.len() + good.len()) as u64;
    let refused = || ProtocolError::new(ErrorKind::Schema, Rule::ByteString);
    let mut decoder = FrameDecoder::with_max_frame_length(u64::from(limit)).unwrap();
    let mut frames = decoder.frames(&chunk);
    assert_eq!(frames.next_frame().unwrap().unwrap().1, 0);
    drop(frames);
    let next = frame(5);
    let mut frames = decoder.frames(&next);
    let error = frames.next_message(|_| Err::<(), _>(refused())).unwrap().unwrap_err();
    assert_eq!((error.kind(), error.offset()), (ErrorKind::Frame, Some(at)), "{error}");

    // Without such a header in the backlog, the frame's own error stands, even when the next
    // chunk starts with one.
    let chunk = [first.clone(), bad.clone(), good.clone()].concat();
    let mut decoder = FrameDecoder::with_max_frame_length(u64::from(limit)).unwrap();
    let mut frames = decoder.frames(&chunk);
    assert!(frames.next_frame().unwrap().is_ok());
    drop(frames);
    let mut frames = decoder.frames(&over);
    let error = frames.next_message(|_| Err::<(), _>(refused())).unwrap().unwrap_err();
    assert_eq!((error.kind(), error.offset()), (ErrorKind::Schema, Some(first.len() as u64)), "{error}");
}
