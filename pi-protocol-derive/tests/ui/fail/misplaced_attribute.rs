use pi_protocol_derive::Codec;

#[derive(Codec)]
#[codec(pattern = "^a$", tag = "type")]
pub struct Envelope {
    #[codec(minimum = 0)]
    pub name: String,
    #[codec(min_length = 1)]
    pub count: bool,
}

#[derive(Codec)]
#[codec(key_set, literal(key = "type", value = "x"), min_length = 1)]
pub enum Target {
    A(Envelope),
}

#[derive(Codec)]
#[codec(literal(key = "type", value = "x"), key_set)]
pub struct Id(String);

fn main() {}
