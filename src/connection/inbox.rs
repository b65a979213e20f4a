//! What both connections do with the bytes they receive: split them into frames, decode each
//! frame as a message, and hand the messages one at a time to the connection's rules, without
//! allocating anything per chunk (docs/PROTOCOL.md sections 1 and 8).

use bytes::Bytes;
use pi_protocol_runtime::{decode_message, decode_message_shared, CborLimits, Decode, FrameDecoder};

use crate::{CodecOptions, ProtocolError};
use pi_protocol_runtime::message::Shared;

/// The receiving half of a connection: the frame decoder and the limits its messages decode
/// under.
#[derive(Debug)]
pub(crate) struct Inbox {
    frames: FrameDecoder,
    limits: CborLimits,
}

impl Inbox {
    /// An empty inbox applying `options`.
    pub(crate) fn new(options: &CodecOptions) -> Self {
        let frames =
            FrameDecoder::with_max_frame_length(u64::from(options.frame_limit())).expect("checked by CodecOptions");
        Inbox { frames, limits: options.limits() }
    }

    /// Whether a frame (or its header) is partly received.
    pub(crate) fn has_partial(&self) -> bool {
        self.frames.has_partial()
    }

    /// The bytes of memory held for a partly received frame.
    pub(crate) fn buffered_capacity(&self) -> usize {
        self.frames.buffered_capacity()
    }

    /// The end of the stream: `Frame`/`TruncatedFrame` when it stops inside a frame.
    pub(crate) fn end(&mut self) -> Result<(), ProtocolError> {
        self.frames.end()
    }
}

/// A connection that receives messages of type `Message` through an [`Inbox`].
pub(crate) trait Receiver {
    /// What the peer sends.
    type Message: for<'de> Decode<'de>;

    /// The connection's inbox.
    fn inbox(&mut self) -> &mut Inbox;

    /// Whether the connection still takes messages: receiving stops as soon as this is false.
    fn reading(&self) -> bool;

    /// Applies the rules to one received message, or to the error that ends the stream.
    fn receive_message(&mut self, message: Result<Self::Message, ProtocolError>);
}

/// Feeds `bytes` to `receiver`: every message they complete, the opaque payloads copied out
/// of `bytes` (those of 46 bytes or less are kept inline in any case).
pub(crate) fn receive<R: Receiver>(receiver: &mut R, bytes: &[u8]) {
    receive_with(receiver, bytes, decode_message);
}

/// Feeds `chunk` to `receiver`: every message it completes, the opaque payloads of the frames
/// that lie inside `chunk` being slices of it rather than copies.
pub(crate) fn receive_shared<R: Receiver>(receiver: &mut R, chunk: &Bytes) {
    receive_with(receiver, chunk, |payload, limits| decode_message_shared(&Shared::slice_of(chunk, payload), limits));
}

fn receive_with<R, F>(receiver: &mut R, bytes: &[u8], decode: F)
where
    R: Receiver,
    F: Fn(&[u8], CborLimits) -> Result<R::Message, ProtocolError>,
{
    if !receiver.reading() {
        return;
    }
    // The frame decoder is lent out while the connection handles the messages it yields (which
    // needs the connection whole); an empty stand-in, which allocates nothing, holds its place.
    let inbox = receiver.inbox();
    let limits = inbox.limits;
    let mut frames = std::mem::take(&mut inbox.frames);
    {
        let mut chunk = frames.frames(bytes);
        while receiver.reading() {
            match chunk.next_message(|payload| decode(payload, limits)) {
                Some(message) => receiver.receive_message(message),
                None => break,
            }
        }
    }
    receiver.inbox().frames = frames;
}
