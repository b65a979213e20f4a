//! Building a value tree from CBOR without recursion: one walker, with an explicit stack of the
//! containers being filled, serves both [`CborValue`](super::CborValue) (raw decoding) and
//! `serde_json::Value` ([`Payload::to_value`](crate::Payload::to_value)). However deep the item
//! (up to the configured `maxDepth`), the walk uses no call frame per level.

use smallvec::SmallVec;

use super::reader::major;
use super::Reader;
use crate::error::ProtocolError;
use crate::scalar::Scalar;

/// How to make the nodes of one kind of tree.
pub(crate) trait TreeBuilder {
    /// A finished node.
    type Node;
    /// A scalar item other than text (never [`Scalar::Other`]).
    fn scalar(scalar: Scalar<'_>) -> Self::Node;
    /// A text string, already checked and copied.
    fn text(text: String) -> Self::Node;
    /// A byte string's content (only reached when the reader accepts byte strings).
    fn bytes(content: &[u8]) -> Self::Node;
    /// An array of its finished elements.
    fn array(items: Vec<Self::Node>) -> Self::Node;
    /// A map being filled (its entries go straight in, with no list in between).
    type Map;
    /// An empty map with room for `entries` entries (a count the reader has checked against
    /// the limits and the input left).
    fn new_map(entries: usize) -> Self::Map;
    /// Adds the next entry, in wire order.
    fn insert(map: &mut Self::Map, key: String, value: Self::Node);
    /// The finished map.
    fn map(map: Self::Map) -> Self::Node;
}

/// A container being filled.
enum Open<N, M> {
    Array {
        items: Vec<N>,
        remaining: usize,
    },
    /// `key` holds the key of the entry whose value is being read.
    Map {
        entries: M,
        remaining: usize,
        key: String,
    },
}

/// Reads one item at the cursor into a tree of `B::Node`s.
///
/// # Errors
/// Any error of the reader.
pub(crate) fn build<B: TreeBuilder>(r: &mut Reader<'_>) -> Result<B::Node, ProtocolError> {
    // The first levels on the call's own stack: a small payload needs no allocation for them.
    let mut stack: SmallVec<[Open<B::Node, B::Map>; 4]> = SmallVec::new();
    loop {
        if let Some(Open::Map { key, .. }) = stack.last_mut() {
            *key = r.read_key()?.to_owned();
        }
        let mut node = match r.peek_major() {
            Some(major::ARRAY) => {
                let n = r.enter_array()?;
                if n > 0 {
                    stack.push(Open::Array { items: Vec::with_capacity(n), remaining: n });
                    continue;
                }
                r.leave();
                B::array(Vec::new())
            }
            Some(major::MAP) => {
                let n = r.enter_map()?;
                if n > 0 {
                    stack.push(Open::Map { entries: B::new_map(n), remaining: n, key: String::new() });
                    continue;
                }
                r.leave();
                B::map(B::new_map(0))
            }
            Some(major::TEXT) => B::text(r.read_text_owned()?),
            Some(major::BYTES) => B::bytes(r.read_byte_string()?),
            _ => B::scalar(r.read_scalar()?),
        };
        // Attach the finished node, then close every container it completes.
        loop {
            let remaining = match stack.last_mut() {
                None => return Ok(node),
                Some(Open::Array { items, remaining }) => {
                    items.push(node);
                    remaining
                }
                Some(Open::Map { entries, remaining, key }) => {
                    B::insert(entries, std::mem::take(key), node);
                    remaining
                }
            };
            *remaining -= 1;
            if *remaining > 0 {
                break;
            }
            r.leave();
            node = match stack.pop() {
                Some(Open::Array { items, .. }) => B::array(items),
                Some(Open::Map { entries, .. }) => B::map(entries),
                None => unreachable!("the container was just seen"),
            };
        }
    }
}
