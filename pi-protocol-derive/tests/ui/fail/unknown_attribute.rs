use pi_protocol_derive::Codec;

#[derive(Codec)]
#[codec(literal(key = "type", value = "x", befor = "id"), taag = "type")]
pub struct Envelope {
    #[codec(renam = "Id")]
    pub id: String,
}

#[derive(Codec)]
#[codec(key_set)]
pub enum Target {
    #[codec(rename = "a")]
    A(Envelope),
}

fn main() {}
