use pi_protocol_derive::Codec;

#[derive(Codec)]
#[codec(literal(key = "type", value = "a"), literal(key = "type", value = "b"))]
pub struct Twice {
    #[codec(rename = "type")]
    pub kind: String,
    pub id: String,
    #[codec(rename = "id")]
    pub other_id: String,
}

fn main() {}
