use pi_protocol_derive::Codec;
use pi_protocol_runtime::ArrayString;

// The pattern's matches are 7 bytes long: a capacity of 8 is refused.
#[derive(Codec)]
#[codec(pattern = "^#[0-9a-f]{6}$")]
pub struct WrongCapacity(ArrayString<8>);

// Without a pattern the length is open: refused.
#[derive(Codec)]
#[codec(min_length = 1)]
pub struct NoPattern(ArrayString<8>);

fn main() {}
