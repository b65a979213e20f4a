use pi_protocol_derive::Codec;

#[derive(Codec)]
#[codec(
    literal(key = "type", value = "response"),
    literal(key = "ok", value = true, after = "idd"),
    literal(key = "a", value = 1, after = "b"),
    literal(key = "b", value = 2, after = "a")
)]
pub struct Response {
    pub id: String,
}

fn main() {}
