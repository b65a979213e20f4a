use pi_protocol_derive::Codec;

// Patterns are ECMAScript regular expressions with the u flag, as the reference compiles them:
// one JavaScript refuses is refused here.
#[derive(Codec)]
#[codec(pattern = "(a")]
pub struct Unbalanced(String);

#[derive(Codec)]
#[codec(pattern = "^a\\-b$")]
pub struct IdentityEscape(String);

#[derive(Codec)]
pub struct Field {
    #[codec(pattern = "x{")]
    pub lone_brace: String,
}

fn main() {}
