//! The codec impls of the leaf types ([`Integer`], [`Number`], [`Null`], `String`, `bool`):
//! above the values of [`crate::number`], the reader, the writer and the codec traits.

use crate::cbor::{Reader, Writer};
use crate::codec::{Decode, Encode, JsonTypes, Tagged, Validate};
use crate::error::{ProtocolError, Rule};
use crate::number::{Integer, Null, Number, MAX_SAFE_INTEGER};

impl Integer {
    /// The integer `n`, checked like every other constrained value: within +-(2^53 - 1), the
    /// integers a JSON number holds exactly.
    ///
    /// # Errors
    /// An `Encode` error with [`Rule::UnencodableNumber`] beyond +-(2^53 - 1): no peer could
    /// read the number back exactly.
    pub fn new(n: i64) -> Result<Self, ProtocolError> {
        if n.unsigned_abs() <= MAX_SAFE_INTEGER {
            Ok(Integer(n as f64))
        } else {
            Err(ProtocolError::new(crate::ErrorKind::Encode, Rule::UnencodableNumber))
        }
    }
}

impl TryFrom<i64> for Integer {
    type Error = ProtocolError;
    fn try_from(n: i64) -> Result<Self, ProtocolError> {
        Integer::new(n)
    }
}

impl TryFrom<u64> for Integer {
    type Error = ProtocolError;
    fn try_from(n: u64) -> Result<Self, ProtocolError> {
        // Beyond i64 is beyond 2^53 too: saturate and let `new` refuse it.
        Integer::new(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl<'de> Decode<'de> for Integer {
    const TYPES: JsonTypes = JsonTypes::NUMBER;

    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        let v = reader.read_number().map_err(|e| retype(e, "integer"))?;
        Integer::from_f64(v).ok_or_else(|| ProtocolError::schema(Rule::WrongType { expected: "integer" }))
    }
}

fn retype(e: ProtocolError, expected: &'static str) -> ProtocolError {
    if matches!(e.rule(), Rule::WrongType { .. }) {
        ProtocolError::schema(Rule::WrongType { expected })
    } else {
        e
    }
}

impl Encode for Integer {
    fn encode(&self, writer: &mut Writer) {
        writer.number(self.0);
    }
}

impl Validate for Integer {
    fn validate(&self) -> Result<(), ProtocolError> {
        Ok(())
    }
}

impl<'de> Decode<'de> for Number {
    const TYPES: JsonTypes = JsonTypes::NUMBER;

    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        // The reader refuses non-finite and unsafe values, so every number it returns is valid.
        reader.read_number().map(Number)
    }
}

impl Encode for Number {
    fn encode(&self, writer: &mut Writer) {
        writer.number(self.0);
    }
}

impl Validate for Number {
    fn validate(&self) -> Result<(), ProtocolError> {
        Ok(())
    }
}

impl<'de> Decode<'de> for Null {
    const TYPES: JsonTypes = JsonTypes::NULL;

    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        reader.read_null().map(|()| Null)
    }
}

impl Encode for Null {
    fn encode(&self, writer: &mut Writer) {
        writer.null();
    }
}

impl Validate for Null {
    fn validate(&self) -> Result<(), ProtocolError> {
        Ok(())
    }
}

// Leaf types are never maps: a union holding one of them tells it apart by its JSON type.
impl Tagged for Integer {}
impl Tagged for Number {}
impl Tagged for Null {}
impl Tagged for String {}
impl Tagged for bool {}

// ----------------------------------------------------------- leaf impls

impl<'de> Decode<'de> for String {
    const TYPES: JsonTypes = JsonTypes::STRING;

    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        reader.read_text().map(str::to_owned)
    }
}

impl Encode for String {
    fn encode(&self, writer: &mut Writer) {
        writer.text(self);
    }
}

impl Validate for String {
    fn validate(&self) -> Result<(), ProtocolError> {
        Ok(())
    }
}

impl<'de> Decode<'de> for bool {
    const TYPES: JsonTypes = JsonTypes::BOOLEAN;

    fn decode(reader: &mut Reader<'de>) -> Result<Self, ProtocolError> {
        reader.read_bool()
    }
}

impl Encode for bool {
    fn encode(&self, writer: &mut Writer) {
        writer.bool(*self);
    }
}

impl Validate for bool {
    fn validate(&self) -> Result<(), ProtocolError> {
        Ok(())
    }
}
