use pi_protocol_derive::Codec;

#[derive(Codec)]
pub struct Target {
    #[codec(rename = "serverId", rename = "server")]
    pub server_id: String,
    #[codec(rename = "sessionId")]
    #[codec(rename = "session")]
    pub session_id: String,
}

fn main() {}
