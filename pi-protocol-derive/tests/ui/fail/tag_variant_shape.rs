use pi_protocol_derive::Codec;

#[derive(Codec)]
#[codec(literal(key = "type", value = "a"))]
pub struct A {}

#[derive(Codec)]
#[codec(tag = "type")]
pub enum Message {
    A(A),
    Unit,
    Named { a: A },
    Pair(A, A),
}

fn main() {}
