//! Limits of the strict CBOR subset and of framing (docs/PROTOCOL.md sections 1 and 2), with the
//! reference's defaults and the ranges in which they may be configured.

use crate::error::ProtocolError;

/// Default `maxFrameLength`: 16 MiB (16,777,216 bytes) of payload per frame.
pub const DEFAULT_MAX_FRAME_LENGTH: u32 = 16 * 1024 * 1024;
/// Default `maxByteLength`: 16 MiB for a whole CBOR item and for each string in it.
pub const DEFAULT_MAX_BYTE_LENGTH: u32 = 16 * 1024 * 1024;
/// Default `maxContainerLength`: 1,000,000 entries per array or map (per container, not in total).
pub const DEFAULT_MAX_CONTAINER_LENGTH: u32 = 1_000_000;
/// Default `maxDepth`: 64 nesting levels below the top-level item (which is depth 0).
pub const DEFAULT_MAX_DEPTH: u32 = 64;
/// Largest `maxDepth` that may be configured.
pub const MAX_CONFIGURABLE_DEPTH: u32 = 512;
/// Largest length limit that may be configured (`u32::MAX`).
pub const MAX_CONFIGURABLE_LENGTH: u64 = u32::MAX as u64;

/// Limits applied while reading or writing one CBOR item (docs/PROTOCOL.md section 2).
///
/// Start from [`CborLimits::default`] and change what you need with the checked setters
/// ([`with_max_byte_length`](Self::with_max_byte_length),
/// [`with_max_container_length`](Self::with_max_container_length),
/// [`with_max_depth`](Self::with_max_depth)), or give all three to [`CborLimits::new`]. The
/// fields are private, so an out-of-range limit cannot exist.
///
/// ```
/// use pi_protocol_runtime::CborLimits;
/// let limits = CborLimits::default().with_max_byte_length(1024)?.with_max_depth(8)?;
/// assert_eq!((limits.max_byte_length(), limits.max_depth()), (1024, 8));
/// assert_eq!(limits.max_container_length(), 1_000_000);
/// assert!(CborLimits::default().with_max_depth(513).is_err());
/// # Ok::<(), pi_protocol_runtime::ProtocolError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CborLimits {
    max_byte_length: u32,
    max_container_length: u32,
    max_depth: u32,
}

impl Default for CborLimits {
    fn default() -> Self {
        CborLimits {
            max_byte_length: DEFAULT_MAX_BYTE_LENGTH,
            max_container_length: DEFAULT_MAX_CONTAINER_LENGTH,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

impl CborLimits {
    /// Limits of `max_byte_length` bytes per item and per string, `max_container_length`
    /// entries per array or map, and `max_depth` levels of nesting.
    ///
    /// # Errors
    /// `ErrorKind::Options` when a length exceeds `u32::MAX` or `max_depth` exceeds 512.
    pub fn new(max_byte_length: u64, max_container_length: u64, max_depth: u64) -> Result<Self, ProtocolError> {
        Ok(CborLimits {
            max_byte_length: check_length("maxByteLength", max_byte_length)?,
            max_container_length: check_length("maxContainerLength", max_container_length)?,
            max_depth: check_range("maxDepth", max_depth, u64::from(MAX_CONFIGURABLE_DEPTH))?,
        })
    }

    /// These limits with `bytes` as `maxByteLength`: the most bytes of one CBOR item and of
    /// each string in it.
    ///
    /// # Errors
    /// `ErrorKind::Options` when `bytes` exceeds `u32::MAX`.
    pub fn with_max_byte_length(mut self, bytes: u64) -> Result<Self, ProtocolError> {
        self.max_byte_length = check_length("maxByteLength", bytes)?;
        Ok(self)
    }

    /// These limits with `entries` as `maxContainerLength`: the most entries of each array or
    /// map (per container, not in total).
    ///
    /// # Errors
    /// `ErrorKind::Options` when `entries` exceeds `u32::MAX`.
    pub fn with_max_container_length(mut self, entries: u64) -> Result<Self, ProtocolError> {
        self.max_container_length = check_length("maxContainerLength", entries)?;
        Ok(self)
    }

    /// These limits with `levels` as `maxDepth`: how deep containers may nest below the
    /// top-level item (depth 0).
    ///
    /// # Errors
    /// `ErrorKind::Options` when `levels` exceeds 512.
    pub fn with_max_depth(mut self, levels: u64) -> Result<Self, ProtocolError> {
        self.max_depth = check_range("maxDepth", levels, u64::from(MAX_CONFIGURABLE_DEPTH))?;
        Ok(self)
    }

    /// The widest limits that may be configured: `u32::MAX` bytes and entries, 512 levels. For
    /// reading bytes that were already validated under tighter limits.
    pub const fn widest() -> Self {
        CborLimits { max_byte_length: u32::MAX, max_container_length: u32::MAX, max_depth: MAX_CONFIGURABLE_DEPTH }
    }

    /// Checks a limit given as a JSON number (as a peer's configuration file might): it must be
    /// an integer in range; `2.5`, `-1` and `NaN` are refused.
    ///
    /// # Errors
    /// `ErrorKind::Options` naming the option.
    pub fn from_numbers(
        max_byte_length: f64,
        max_container_length: f64,
        max_depth: f64,
    ) -> Result<Self, ProtocolError> {
        Self::new(
            number_option("maxByteLength", max_byte_length, MAX_CONFIGURABLE_LENGTH)?,
            number_option("maxContainerLength", max_container_length, MAX_CONFIGURABLE_LENGTH)?,
            number_option("maxDepth", max_depth, u64::from(MAX_CONFIGURABLE_DEPTH))?,
        )
    }

    /// Largest item, and largest string inside it, in bytes.
    pub fn max_byte_length(&self) -> u32 {
        self.max_byte_length
    }

    /// Largest number of entries in one array or map.
    pub fn max_container_length(&self) -> u32 {
        self.max_container_length
    }

    /// Deepest nesting level an item may sit at (the top-level item is level 0).
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }
}

/// Checks a `maxFrameLength`-like option: an integer in `0..=u32::MAX`.
///
/// # Errors
/// `ErrorKind::Options` naming `name`.
pub fn check_length(name: &'static str, value: u64) -> Result<u32, ProtocolError> {
    check_range(name, value, MAX_CONFIGURABLE_LENGTH)
}

fn check_range(name: &'static str, value: u64, max: u64) -> Result<u32, ProtocolError> {
    if value > max {
        return Err(ProtocolError::option_range(name, 0, max));
    }
    Ok(value as u32)
}

/// Converts an option given as a JSON number into an integer in `0..=max`.
///
/// # Errors
/// `ErrorKind::Options` when `value` is fractional, negative, not finite or above `max`.
pub fn number_option(name: &'static str, value: f64, max: u64) -> Result<u64, ProtocolError> {
    if value.is_finite() && value.fract() == 0.0 && value >= 0.0 && value <= max as f64 {
        Ok(value as u64)
    } else {
        Err(ProtocolError::option_range(name, 0, max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_reference_figures() {
        assert_eq!(DEFAULT_MAX_FRAME_LENGTH, 16_777_216);
        assert_eq!(DEFAULT_MAX_BYTE_LENGTH, 16_777_216);
        let limits = CborLimits::default();
        assert_eq!(
            (limits.max_byte_length(), limits.max_container_length(), limits.max_depth()),
            (16_777_216, 1_000_000, 64)
        );
    }

    #[test]
    fn each_setter_changes_its_own_limit_and_refuses_past_its_range() {
        let limits = CborLimits::default();
        let bytes = limits.with_max_byte_length(1024).unwrap();
        assert_eq!((bytes.max_byte_length(), bytes.max_container_length(), bytes.max_depth()), (1024, 1_000_000, 64));
        let entries = limits.with_max_container_length(7).unwrap();
        assert_eq!((entries.max_byte_length(), entries.max_container_length()), (16_777_216, 7));
        let depth = limits.with_max_depth(512).unwrap();
        assert_eq!((depth.max_depth(), depth.max_container_length()), (512, 1_000_000));
        assert!(limits.with_max_byte_length(u64::from(u32::MAX) + 1).is_err());
        assert!(limits.with_max_container_length(u64::from(u32::MAX) + 1).is_err());
        assert!(limits.with_max_depth(513).is_err());
        assert_eq!(limits.with_max_byte_length(u64::from(u32::MAX)).unwrap().max_byte_length(), u32::MAX);
    }

    #[test]
    fn limits_from_json_numbers_are_integers_in_range() {
        let limits = CborLimits::from_numbers(100.0, 20.0, 3.0).unwrap();
        assert_eq!((limits.max_byte_length(), limits.max_container_length(), limits.max_depth()), (100, 20, 3));
        for bad in
            [(2.5, 1.0, 1.0), (-1.0, 1.0, 1.0), (1.0, f64::NAN, 1.0), (1.0, 1.0, 513.0), (1.0, 1.0, f64::INFINITY)]
        {
            assert!(CborLimits::from_numbers(bad.0, bad.1, bad.2).is_err(), "{bad:?}");
        }
        assert_eq!(number_option("x", 4_294_967_295.0, MAX_CONFIGURABLE_LENGTH).unwrap(), 4_294_967_295);
        assert!(number_option("x", 4_294_967_296.0, MAX_CONFIGURABLE_LENGTH).is_err());
        assert_eq!(check_length("x", 0).unwrap(), 0);
    }
}
