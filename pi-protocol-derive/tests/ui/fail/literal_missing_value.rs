use pi_protocol_derive::Codec;

#[derive(Codec)]
#[codec(literal(key = "type"), literal(value = "x"))]
pub struct Hello {
    pub id: String,
}

#[derive(Codec)]
#[codec(literal(key = "version", value = 8.5))]
pub struct Versioned {
    pub id: String,
}

fn main() {}
