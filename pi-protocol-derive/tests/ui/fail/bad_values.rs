use pi_protocol_derive::Codec;
use pi_protocol_runtime::Integer;

#[derive(Codec)]
pub struct Limits {
    #[codec(minimum = 9007199254740992)]
    pub too_big: Integer,
    #[codec(minimum = "0")]
    pub quoted: Integer,
    #[codec(min_length = -1)]
    pub negative: String,
}

#[derive(Codec)]
#[codec(crate = "not a path")]
pub struct Krate(String);

fn main() {}
