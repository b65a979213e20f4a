use pi_protocol_derive::Codec;

#[derive(Codec)]
pub struct A {
    pub a: String,
}

#[derive(Codec)]
#[codec(tag = "type", key_set)]
pub enum Either {
    A(A),
}

#[derive(Codec)]
pub enum Neither {
    A(A),
}

fn main() {}
