//! A CBOR item model loose enough to express every damage the generator wants: any argument
//! width, tags, indefinite lengths, float16/float32, simple values, non-text keys, invalid
//! UTF-8 and lengths that lie. [`Item::write`] serialises it byte for byte as described; it
//! never validates.

/// How an item's argument (integer value or length) is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// The shortest encoding (what a canonical encoder writes).
    Shortest,
    /// Additional information 24, 25, 26 or 27: 1, 2, 4 or 8 argument bytes, even when a shorter
    /// form would do. Falls back to the shortest form when the value does not fit.
    Bytes(u8),
}

/// One CBOR data item, as the generator builds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// Major type 0 (`negative == false`, value `arg`) or 1 (value `-1 - arg`).
    Int { negative: bool, arg: u64, width: Width },
    /// Major type 2.
    Bytes { data: Vec<u8>, width: Width },
    /// Major type 3, with raw (possibly invalid UTF-8) content.
    Text { data: Vec<u8>, width: Width },
    /// Major type 4.
    Array { items: Vec<Item>, width: Width },
    /// Major type 5; keys may be any item.
    Map { entries: Vec<(Item, Item)>, width: Width },
    /// Major type 6: a tag number in front of an item.
    Tag { tag: u64, item: Box<Item> },
    /// Major type 7 float64, given by its bits (NaN payloads and infinities included).
    F64(u64),
    /// Major type 7 float32 (0xFA), given by its bits.
    F32(u32),
    /// Major type 7 float16 (0xF9), given by its bits.
    F16(u16),
    /// A one-byte major type 7 item (0xE0..=0xF7, or 0xFF break).
    Simple(u8),
    /// A two-byte simple value (0xF8 xx).
    Simple8(u8),
    /// An indefinite-length array (0x9F ... 0xFF).
    IndefiniteArray(Vec<Item>),
    /// An indefinite-length map (0xBF ... 0xFF).
    IndefiniteMap(Vec<(Item, Item)>),
    /// An indefinite-length text (0x7F, definite chunks, 0xFF).
    IndefiniteText(Vec<Vec<u8>>),
    /// A container or string head declaring `declared` entries/bytes, followed by `body`
    /// (whatever it holds).
    Lying { major: u8, declared: u64, width: Width, body: Vec<u8> },
    /// Bytes written as they are.
    Raw(Vec<u8>),
}

/// Appends a head (major type and argument) to `out`.
pub fn head(out: &mut Vec<u8>, major: u8, arg: u64, width: Width) {
    let m = major << 5;
    let fits = |bytes: u8| match bytes {
        1 => arg <= 0xff,
        2 => arg <= 0xffff,
        4 => arg <= 0xffff_ffff,
        _ => true,
    };
    let bytes = match width {
        Width::Bytes(b) if matches!(b, 1 | 2 | 4 | 8) && fits(b) => b,
        _ if arg < 24 => {
            out.push(m | arg as u8);
            return;
        }
        _ if arg <= 0xff => 1,
        _ if arg <= 0xffff => 2,
        _ if arg <= 0xffff_ffff => 4,
        _ => 8,
    };
    let ai = match bytes {
        1 => 24,
        2 => 25,
        4 => 26,
        _ => 27,
    };
    out.push(m | ai);
    out.extend_from_slice(&arg.to_be_bytes()[8 - usize::from(bytes)..]);
}

impl Item {
    /// A text item with the shortest length.
    pub fn text(s: &str) -> Item {
        Item::Text { data: s.as_bytes().to_vec(), width: Width::Shortest }
    }

    /// Serialises the item.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Item::Int { negative, arg, width } => head(out, u8::from(*negative), *arg, *width),
            Item::Bytes { data, width } => {
                head(out, 2, data.len() as u64, *width);
                out.extend_from_slice(data);
            }
            Item::Text { data, width } => {
                head(out, 3, data.len() as u64, *width);
                out.extend_from_slice(data);
            }
            Item::Array { items, width } => {
                head(out, 4, items.len() as u64, *width);
                items.iter().for_each(|i| i.write(out));
            }
            Item::Map { entries, width } => {
                head(out, 5, entries.len() as u64, *width);
                for (k, v) in entries {
                    k.write(out);
                    v.write(out);
                }
            }
            Item::Tag { tag, item } => {
                head(out, 6, *tag, Width::Shortest);
                item.write(out);
            }
            Item::F64(bits) => {
                out.push(0xfb);
                out.extend_from_slice(&bits.to_be_bytes());
            }
            Item::F32(bits) => {
                out.push(0xfa);
                out.extend_from_slice(&bits.to_be_bytes());
            }
            Item::F16(bits) => {
                out.push(0xf9);
                out.extend_from_slice(&bits.to_be_bytes());
            }
            Item::Simple(b) => out.push(*b),
            Item::Simple8(b) => out.extend_from_slice(&[0xf8, *b]),
            Item::IndefiniteArray(items) => {
                out.push(0x9f);
                items.iter().for_each(|i| i.write(out));
                out.push(0xff);
            }
            Item::IndefiniteMap(entries) => {
                out.push(0xbf);
                for (k, v) in entries {
                    k.write(out);
                    v.write(out);
                }
                out.push(0xff);
            }
            Item::IndefiniteText(chunks) => {
                out.push(0x7f);
                for c in chunks {
                    head(out, 3, c.len() as u64, Width::Shortest);
                    out.extend_from_slice(c);
                }
                out.push(0xff);
            }
            Item::Lying { major, declared, width, body } => {
                head(out, *major, *declared, *width);
                out.extend_from_slice(body);
            }
            Item::Raw(bytes) => out.extend_from_slice(bytes),
        }
    }

    /// The serialised bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    /// Number of nodes in the tree (keys included), used to pick a random node.
    pub fn size(&self) -> usize {
        1 + match self {
            Item::Array { items, .. } | Item::IndefiniteArray(items) => items.iter().map(Item::size).sum(),
            Item::Map { entries, .. } | Item::IndefiniteMap(entries) => {
                entries.iter().map(|(k, v)| k.size() + v.size()).sum()
            }
            Item::Tag { item, .. } => item.size(),
            _ => 0,
        }
    }

    /// The node at pre-order position `index` (0 is `self`); `None` past the end.
    pub fn node_mut(&mut self, index: usize) -> Option<&mut Item> {
        if index == 0 {
            return Some(self);
        }
        let mut index = index - 1;
        let children: Vec<&mut Item> = match self {
            Item::Array { items, .. } | Item::IndefiniteArray(items) => items.iter_mut().collect(),
            Item::Map { entries, .. } | Item::IndefiniteMap(entries) => {
                entries.iter_mut().flat_map(|(k, v)| [k, v]).collect()
            }
            Item::Tag { item, .. } => vec![item.as_mut()],
            _ => Vec::new(),
        };
        for child in children {
            let size = child.size();
            if index < size {
                return child.node_mut(index);
            }
            index -= size;
        }
        None
    }
}
