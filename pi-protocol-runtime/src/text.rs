//! Where generated string newtypes (ids) keep their text.
//!
//! The generator picks the storage from the schema: a string whose `pattern` fixes its length
//! (the `ServerId` UUID: 36 bytes) is an [`ArrayString`] of exactly that capacity; any other is
//! a [`CompactString`], inline up to 24 bytes. Neither allocates for the ids a request carries.
//! A hand-written newtype may also wrap a plain `String`.

pub use arrayvec::ArrayString;
pub use compact_str::CompactString;

/// A container for the text of a string newtype, as `#[derive(Codec)]` uses it.
///
/// ```
/// use pi_protocol_runtime::text::{ArrayString, TextStorage};
/// let id = <ArrayString<4> as TextStorage>::store("abcd").unwrap();
/// assert_eq!(id.text(), "abcd");
/// assert!(<ArrayString<4> as TextStorage>::store("abcde").is_none()); // over capacity
/// ```
pub trait TextStorage: Sized {
    /// Stores `text`; `None` when it does not fit (a fixed capacity below its length).
    fn store(text: &str) -> Option<Self>;
    /// Stores an owned `text`, reusing its buffer where the storage can.
    fn store_string(text: String) -> Option<Self>;
    /// The stored text.
    fn text(&self) -> &str;
    /// The stored text as a `String`.
    fn into_string(self) -> String;
}

impl TextStorage for String {
    fn store(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }
    fn store_string(text: String) -> Option<Self> {
        Some(text)
    }
    fn text(&self) -> &str {
        self
    }
    fn into_string(self) -> String {
        self
    }
}

impl TextStorage for CompactString {
    #[inline]
    fn store(text: &str) -> Option<Self> {
        Some(CompactString::new(text))
    }
    fn store_string(text: String) -> Option<Self> {
        Some(CompactString::from(text))
    }
    #[inline]
    fn text(&self) -> &str {
        self.as_str()
    }
    fn into_string(self) -> String {
        CompactString::into_string(self)
    }
}

impl<const N: usize> TextStorage for ArrayString<N> {
    #[inline]
    fn store(text: &str) -> Option<Self> {
        ArrayString::from(text).ok()
    }
    fn store_string(text: String) -> Option<Self> {
        ArrayString::from(&text).ok()
    }
    #[inline]
    fn text(&self) -> &str {
        self.as_str()
    }
    fn into_string(self) -> String {
        self.as_str().to_owned()
    }
}
