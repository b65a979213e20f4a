use pi_protocol_derive::Codec;

#[derive(Codec)]
pub struct Attachment {
    #[codec(nullable)]
    pub attachment: String,
    #[codec(nullable = true)]
    pub other: Option<String>,
}

fn main() {}
