//! Pull-style feeding of the frame and message decoders (`FrameDecoder::frames`,
//! `MessageDecoder::messages`; docs/PROTOCOL.md sections 1 and 7): the same frames, offsets and
//! errors as `push_with` for any split of the stream, any mix of the two styles, and iterators
//! dropped before their end.

use pi_protocol_runtime::{encode_frame, Decode, ErrorKind, FrameDecoder, MessageDecoder, ProtocolError, Reader, Rule};
use proptest::prelude::*;

/// What a decoder hands out: each frame's payload and offset, then possibly one error.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    Frame(Vec<u8>, u64),
    Error(ProtocolError),
}

/// The reference: the whole stream pushed at once, then the end of the stream.
fn pushed_at_once(stream: &[u8], limit: u64) -> (Vec<Event>, Result<(), ProtocolError>) {
    let mut decoder = FrameDecoder::with_max_frame_length(limit).unwrap();
    let mut events = Vec::new();
    let result = decoder.push_with(stream, |payload, offset| {
        events.push(Event::Frame(payload.to_vec(), offset));
        Ok(())
    });
    if let Err(error) = result {
        events.push(Event::Error(error));
    }
    (events, decoder.end())
}

/// How one chunk is fed.
#[derive(Debug, Clone, Copy)]
enum Feed {
    /// `push_with`.
    Push,
    /// `frames`, read to its end.
    Pull,
    /// `frames`, dropped after this many frames.
    PullThenDrop(usize),
    /// `frames`, dropped after this many frames, then what it left read by `frames` of an
    /// empty chunk before the next chunk comes.
    PullDropThenRest(usize),
}

/// What a fed decoder reports: each frame as it is, or each frame's payload decoded by
/// [`decode_marked`] (`push_with`'s callback, or `next_message`; the payload alone, as
/// `next_message` gives no offset: errors carry theirs).
#[derive(Debug, Clone, Copy)]
enum Read {
    Frames,
    Messages,
}

/// A payload the message decoder of the properties below refuses: one that starts with 0xff.
fn decode_marked(payload: &[u8]) -> Result<Vec<u8>, ProtocolError> {
    match payload.first() {
        Some(0xff) => Err(ProtocolError::new(ErrorKind::Schema, Rule::ByteString)),
        _ => Ok(payload.to_vec()),
    }
}

fn pull(decoder: &mut FrameDecoder, chunk: &[u8], stop_after: Option<usize>, read: Read, events: &mut Vec<Event>) {
    let mut frames = decoder.frames(chunk);
    let mut taken = 0;
    while stop_after.is_none_or(|stop| taken < stop) {
        let next = match read {
            Read::Frames => frames.next_frame().map(|frame| frame.map(|(payload, offset)| (payload.to_vec(), offset))),
            Read::Messages => frames.next_message(decode_marked).map(|message| message.map(|payload| (payload, 0))),
        };
        match next {
            Some(Ok((payload, offset))) => events.push(Event::Frame(payload, offset)),
            Some(Err(error)) => events.push(Event::Error(error)),
            None => break,
        }
        taken += 1;
    }
}

fn push(decoder: &mut FrameDecoder, chunk: &[u8], read: Read, events: &mut Vec<Event>) {
    let result = decoder.push_with(chunk, |payload, offset| {
        events.push(match read {
            Read::Frames => Event::Frame(payload.to_vec(), offset),
            Read::Messages => Event::Frame(decode_marked(payload).map_err(|e| e.with_offset(offset))?, 0),
        });
        Ok(())
    });
    if let Err(error) = result {
        events.push(Event::Error(error));
    }
}

/// Feeds `chunks` as `feeds` say, then reads what dropped iterators left behind and ends.
fn fed(chunks: &[&[u8]], feeds: &[Feed], limit: u64, read: Read) -> (Vec<Event>, Result<(), ProtocolError>) {
    let mut decoder = FrameDecoder::with_max_frame_length(limit).unwrap();
    let mut events = Vec::new();
    for (chunk, feed) in chunks.iter().zip(feeds.iter().cycle()) {
        match feed {
            Feed::Push => push(&mut decoder, chunk, read, &mut events),
            Feed::Pull => pull(&mut decoder, chunk, None, read, &mut events),
            Feed::PullThenDrop(n) => pull(&mut decoder, chunk, Some(*n), read, &mut events),
            Feed::PullDropThenRest(n) => {
                pull(&mut decoder, chunk, Some(*n), read, &mut events);
                if !matches!(events.last(), Some(Event::Error(_))) {
                    pull(&mut decoder, &[], None, read, &mut events);
                }
            }
        }
        if matches!(events.last(), Some(Event::Error(_))) {
            break;
        }
    }
    if decoder.unread_len() > 0 {
        let unread = decoder.unread_len();
        assert_eq!(decoder.end().unwrap_err().rule(), Rule::UnreadFrames, "{unread} bytes unread");
        pull(&mut decoder, &[], None, read, &mut events);
        assert_eq!(decoder.unread_len(), 0);
    }
    (events, decoder.end())
}

fn frames_of(payloads: &[Vec<u8>]) -> Vec<u8> {
    payloads.iter().flat_map(|p| encode_frame(p, u32::MAX).unwrap()).collect()
}

fn split<'a>(stream: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for point in points.into_iter().chain([stream.len()]) {
        chunks.push(&stream[start..point]);
        start = point;
    }
    chunks
}

fn feed_strategy() -> impl Strategy<Value = Feed> {
    prop_oneof![
        Just(Feed::Push),
        Just(Feed::Pull),
        (0usize..3).prop_map(Feed::PullThenDrop),
        (0usize..3).prop_map(Feed::PullDropThenRest)
    ]
}

/// The feeds that keep each chunk's bytes apart: what a dropped iterator left is read before
/// the next chunk comes (bytes left across chunks are one chunk from then on).
fn chunk_keeping_feed() -> impl Strategy<Value = Feed> {
    prop_oneof![Just(Feed::Push), Just(Feed::Pull), (0usize..3).prop_map(Feed::PullDropThenRest)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any split, any mix of styles, iterators dropped anywhere: the frames, offsets, error and
    /// end of pushing the whole stream at once. A limit below the longest payload puts a
    /// `FrameTooLong` in some streams; a cut tail leaves a truncated frame in others.
    #[test]
    fn pulled_frames_are_the_pushed_frames(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..8),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        feeds in prop::collection::vec(feed_strategy(), 1..5),
        limit in prop_oneof![Just(u64::from(u32::MAX)), 0u64..40],
        cut_tail in 0usize..3,
    ) {
        let mut stream = frames_of(&payloads);
        stream.truncate(stream.len().saturating_sub(cut_tail));
        let expected = pushed_at_once(&stream, limit);
        let chunks = split(&stream, &cuts);
        prop_assert_eq!(fed(&chunks, &feeds, limit, Read::Frames), expected);
    }

    /// Frames that do not decode, too: any mix of styles, and iterators dropped with what they
    /// left read before the next chunk, give what pushing the same chunks gives, so the error
    /// that wins (a frame's own, or a header over the limit later in the frame's chunk) is the
    /// same for frames read from what a dropped iterator left behind as for the others.
    #[test]
    fn pulled_messages_are_the_pushed_messages(
        payloads in prop::collection::vec(
            prop_oneof![3 => prop::collection::vec(0u8..0xff, 0..40), 1 => Just(vec![0xff])], 0..8),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        feeds in prop::collection::vec(chunk_keeping_feed(), 1..5),
        limit in prop_oneof![Just(u64::from(u32::MAX)), 0u64..40],
    ) {
        let stream = frames_of(&payloads);
        let chunks = split(&stream, &cuts);
        prop_assert_eq!(fed(&chunks, &feeds, limit, Read::Messages), fed(&chunks, &[Feed::Push], limit, Read::Messages));
    }
}

#[test]
fn a_dropped_iterator_keeps_its_unread_bytes() {
    let stream = frames_of(&[vec![0xf6], vec![0x61, b'a'], vec![0xf5]]);
    let mut decoder = FrameDecoder::new();
    let mut frames = decoder.frames(&stream[..9]); // two frames and one byte of the third header
    assert_eq!(frames.next_frame().unwrap().unwrap(), (&[0xf6][..], 0));
    assert_eq!(frames.unread_len(), 4);
    drop(frames);
    assert_eq!(decoder.unread_len(), 4);
    assert_eq!(decoder.offset(), 5);
    let error = decoder.end().unwrap_err();
    assert_eq!((error.kind(), error.rule(), error.offset()), (ErrorKind::State, Rule::UnreadFrames, Some(5)));
    // The decoder is still usable: the next chunk comes after the unread bytes.
    let mut got = Vec::new();
    decoder
        .push_with(&stream[9..], |payload, offset| {
            got.push((payload.to_vec(), offset));
            Ok(())
        })
        .unwrap();
    assert_eq!(got, vec![(vec![0x61, b'a'], 5), (vec![0xf5], 11)]);
    assert_eq!(decoder.unread_len(), 0);
    decoder.end().unwrap();
}

#[test]
fn a_frame_gathered_across_chunks_is_borrowed_from_the_buffer_until_the_next_call() {
    let stream = frames_of(&[vec![1, 2, 3, 4, 5, 6], vec![7]]);
    let mut decoder = FrameDecoder::new();
    assert!(decoder.frames(&stream[..6]).next_frame().is_none());
    assert!(decoder.has_partial());
    let mut frames = decoder.frames(&stream[6..]);
    assert_eq!(frames.next_frame().unwrap().unwrap(), (&[1, 2, 3, 4, 5, 6][..], 0));
    assert_eq!(frames.next_frame().unwrap().unwrap(), (&[7][..], 10));
    assert!(frames.next_frame().is_none());
    drop(frames);
    assert!(!decoder.has_partial());
    decoder.end().unwrap();
}

#[test]
fn after_an_error_the_iterator_ends_and_the_decoder_is_failed() {
    let mut decoder = FrameDecoder::with_max_frame_length(2).unwrap();
    let mut frames = decoder.frames(&[0, 0, 0, 1, 0xf6, 0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 1, 0xf6]);
    assert_eq!(frames.next_frame().unwrap().unwrap(), (&[0xf6][..], 0));
    let error = frames.next_frame().unwrap().unwrap_err();
    assert_eq!((error.rule(), error.offset()), (Rule::FrameTooLong { length: 3, limit: 2 }, Some(5)));
    assert!(frames.next_frame().is_none());
    drop(frames);
    assert_eq!(decoder.unread_len(), 0, "nothing is kept from a failed stream");
    let mut again = decoder.frames(&[]);
    assert_eq!(again.next_frame().unwrap().unwrap_err().rule(), Rule::DecoderFailed);
    assert!(again.next_frame().is_none());
}

/// A message type for the message decoder: CBOR `null`.
#[derive(Debug, PartialEq)]
struct Null;

impl<'de> Decode<'de> for Null {
    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        reader.read_null().map(|()| Null)
    }
}

#[test]
fn messages_give_what_push_gives_then_a_state_error() {
    // `null`, `null`, `true` (not a `Null`), `null`.
    let stream = frames_of(&[vec![0xf6], vec![0xf6], vec![0xf5], vec![0xf6]]);
    let pushed = MessageDecoder::<Null>::new().push(&stream);
    assert_eq!(pushed.len(), 3);
    for chunk_len in [1, 3, 5, stream.len()] {
        let mut decoder = MessageDecoder::<Null>::new();
        let mut pulled = Vec::new();
        for chunk in stream.chunks(chunk_len) {
            pulled.extend(decoder.messages(chunk));
            if pulled.last().is_some_and(Result::is_err) {
                break;
            }
        }
        assert_eq!(pulled, pushed, "chunks of {chunk_len}");
        assert_eq!(pulled[2].as_ref().unwrap_err().offset(), Some(10));
        let later: Vec<_> = decoder.messages(&[]).collect();
        assert_eq!(later.len(), 1);
        assert_eq!(later[0].as_ref().unwrap_err().rule(), Rule::DecoderFailed);
    }
}

#[test]
fn messages_left_by_a_break_come_first_from_push() {
    let stream = frames_of(&[vec![0xf6], vec![0xf6], vec![0xf6]]);
    let mut decoder = MessageDecoder::<Null>::new();
    // What a `break` out of a `for` loop over the iterator does.
    let mut messages = decoder.messages(&stream[..12]);
    assert_eq!(messages.next().unwrap().unwrap(), Null);
    drop(messages);
    assert_eq!(decoder.offset(), 5);
    assert_eq!(decoder.end().unwrap_err().rule(), Rule::UnreadFrames);
    let rest = decoder.push(&stream[12..]);
    assert_eq!(rest.len(), 2);
    assert_eq!(decoder.offset(), stream.len() as u64);
    decoder.end().unwrap();
}

/// Found by `pulled_frames_are_the_pushed_frames`: an iterator dropped before its first call
/// while a frame was partly received left its chunk behind, and the next push appended its
/// bytes to the partial frame ahead of that chunk.
#[test]
fn bytes_left_behind_stay_ahead_of_the_next_chunk_of_a_partial_frame() {
    let payload: Vec<u8> = (0..25).collect();
    let stream = frames_of(std::slice::from_ref(&payload));
    let mut decoder = FrameDecoder::new();
    // In two pieces, so that the buffer has room to spare: the case of the fast path.
    for chunk in [&stream[..1], &stream[1..9]] {
        decoder.push_with(chunk, |_, _| panic!("no frame is complete")).unwrap();
    }
    drop(decoder.frames(&stream[9..12]));
    let mut got = Vec::new();
    for chunk in [&stream[12..16], &stream[16..]] {
        decoder
            .push_with(chunk, |payload, offset| {
                got.push((payload.to_vec(), offset));
                Ok(())
            })
            .unwrap();
    }
    assert_eq!(got, vec![(payload, 0)]);
    decoder.end().unwrap();
}
