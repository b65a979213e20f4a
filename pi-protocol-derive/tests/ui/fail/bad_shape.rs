use pi_protocol_derive::Codec;

#[derive(Codec)]
pub struct NotJson(u32);

#[derive(Codec)]
pub struct TwoFields(String, String);

#[derive(Codec)]
pub struct Unit;

#[derive(Codec)]
pub struct Generic<T> {
    pub value: T,
}

#[derive(Codec)]
pub struct FieldAttrOnNewtype(#[codec(min_length = 1)] String);

#[derive(Codec)]
#[codec(tag = "type")]
pub enum Empty {}

fn main() {}
