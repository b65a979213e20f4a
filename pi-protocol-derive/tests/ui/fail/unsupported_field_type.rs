use pi_protocol_derive::Codec;

#[derive(Codec)]
pub struct Bad {
    pub reference: &'static str,
    pub pair: (String, String),
    pub array: [u8; 4],
    pub pointer: *const u8,
    pub float: f32,
    pub bytes: Vec<u8>,
    pub maybe: Option<&'static str>,
    pub unit: (),
}

fn main() {}
