//! [`Integer`] and [`Number`]: JSON numbers as the protocol carries them (docs/PROTOCOL.md sections
//! 2-4: integers within +-(2^53 - 1), integral float64 accepted as integers, `-0.0` kept as
//! written) and [`Null`]: values only, below the error type and the codecs (their codec impls
//! are in `leaf_codec.rs`).

use std::fmt;
use std::hash::{Hash, Hasher};

/// Largest integer magnitude JSON numbers carry exactly: 2^53 - 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The float rule of docs/PROTOCOL.md section 2, in one comparison: whether the float64 `v` is
/// a JSON number the protocol carries, that is finite and within +-(2^53 - 1) when integral.
/// Every float64 beyond 2^53 - 1 in magnitude is integral, so no `fract()` is needed; NaN
/// compares false and the infinities are beyond the bound. The reader, the plain-item test, the
/// writer and the payload builder all decide with it.
#[inline(always)]
#[must_use]
pub fn is_encodable_number(v: f64) -> bool {
    v.abs() <= MAX_SAFE_INTEGER as f64
}

/// An integer within +-(2^53 - 1), as a JSON number.
///
/// It remembers a negative zero (a float64 `-0.0` on the wire is a valid integer `0` for the
/// schema, and the reference re-encodes it as float64 `-0.0`), so decoding and re-encoding
/// reproduces the same bytes. Two `Integer`s are equal when they encode identically.
///
/// ```
/// use pi_protocol_runtime::Integer;
/// let v = Integer::from(8u32);
/// assert_eq!(v.get(), 8);
/// assert_eq!(Integer::new(1 << 53).unwrap_err().rule(), pi_protocol_runtime::Rule::UnencodableNumber);
/// assert!(Integer::from_f64(-0.0).unwrap().is_negative_zero());
/// ```
#[derive(Clone, Copy)]
pub struct Integer(pub(crate) f64);

impl Integer {
    /// The number `v` when it is an integer within +-(2^53 - 1) (`-0.0` included).
    pub fn from_f64(v: f64) -> Option<Self> {
        (v.is_finite() && v.fract() == 0.0 && v.abs() <= MAX_SAFE_INTEGER as f64).then_some(Integer(v))
    }

    /// The value as `i64` (`-0.0` reads as `0`).
    pub fn get(self) -> i64 {
        self.0 as i64
    }

    /// The value as the JSON number it stands for.
    pub fn value(self) -> f64 {
        self.0
    }

    /// Whether this is a float64 negative zero from the wire.
    pub fn is_negative_zero(self) -> bool {
        self.0 == 0.0 && self.0.is_sign_negative()
    }
}

macro_rules! from_small {
    ($($t:ty),*) => {$(
        impl From<$t> for Integer {
            fn from(n: $t) -> Self {
                Integer(n as f64)
            }
        }
    )*};
}
from_small!(u8, u16, u32, i8, i16, i32);

impl PartialEq for Integer {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Integer {}

impl Hash for Integer {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl fmt::Debug for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_negative_zero() {
            f.write_str("-0")
        } else {
            write!(f, "{}", self.get())
        }
    }
}

impl fmt::Display for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.get())
    }
}

/// Any JSON number the protocol carries: a finite float64, within +-(2^53 - 1) when integral
/// (schema `type: number`).
///
/// It is encoded as the reference encodes a JavaScript number: an integral value (other than
/// `-0.0`) as a CBOR integer, anything else as a float64. Two `Number`s are equal when they
/// encode identically (`0` and `-0.0` differ, as their bytes do); comparisons against schema
/// bounds use [`value`](Self::value), where `-0.0 == 0.0`, as in JSON Schema.
///
/// ```
/// use pi_protocol_runtime::Number;
/// let half = Number::new(0.5).unwrap();
/// assert_eq!(half.value(), 0.5);
/// assert!(Number::new(f64::NAN).is_none());
/// assert!(Number::new(1e300).is_none()); // integral beyond 2^53 - 1: JSON cannot carry it exactly
/// assert_eq!(Number::from(8).to_string(), "8");
/// ```
#[derive(Clone, Copy)]
pub struct Number(pub(crate) f64);

impl Number {
    /// The number `v`, or `None` when it is not finite or is integral beyond +-(2^53 - 1).
    #[must_use]
    pub fn new(v: f64) -> Option<Self> {
        is_encodable_number(v).then_some(Number(v))
    }

    /// The value.
    #[must_use]
    pub fn value(self) -> f64 {
        self.0
    }

    /// Whether the value is integral (`-0.0` included).
    #[must_use]
    pub fn is_integer(self) -> bool {
        self.0.fract() == 0.0
    }
}

impl From<Integer> for Number {
    fn from(n: Integer) -> Self {
        Number(n.value())
    }
}

macro_rules! number_from_small {
    ($($t:ty),*) => {$(
        impl From<$t> for Number {
            fn from(n: $t) -> Self {
                Number(f64::from(n))
            }
        }
    )*};
}
number_from_small!(u8, u16, u32, i8, i16, i32, f32);

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Number {}

impl Hash for Number {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Number {
    /// The number as JSON writes it: `8`, `-0`, `0.5`, `1e-7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0.0 && self.0.is_sign_negative() {
            f.write_str("-0")
        } else if self.is_integer() {
            write!(f, "{}", self.0 as i64)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// The JSON value `null`, as a type (schema `type: null`).
///
/// ```
/// use pi_protocol_runtime::{decode_message, encode_item, CborLimits, Null};
/// assert_eq!(decode_message::<Null>(&[0xf6], CborLimits::default()).unwrap(), Null);
/// assert_eq!(encode_item(&Null, CborLimits::default()).unwrap(), vec![0xf6]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Null;
