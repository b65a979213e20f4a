use pi_protocol_derive::Codec;

#[derive(Codec)]
#[codec(pattern = "^a+$")]
pub struct Repeated(String);

#[derive(Codec)]
#[codec(pattern = "[0-9]{3}")]
pub struct Unanchored(String);

#[derive(Codec)]
pub struct Field {
    #[codec(pattern = "^[^a]$")]
    pub negated: String,
}

fn main() {}
