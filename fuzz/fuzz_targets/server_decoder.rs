//! Arbitrary bytes into a server-message decoder (one push, then `end`). Every accepted message
//! must re-encode and decode back to itself; every error must be bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_protocol::{encode_server_message, ServerMessageDecoder};

fuzz_target!(|data: &[u8]| {
    let mut decoder = ServerMessageDecoder::new();
    for result in decoder.push(data) {
        match result {
            Ok(message) => {
                let frame = encode_server_message(&message).expect("a decoded message encodes");
                let again = ServerMessageDecoder::new().push(&frame).pop().expect("one message").expect("decodes");
                assert_eq!(again, message);
            }
            Err(error) => assert!(error.to_string().chars().count() <= 500),
        }
    }
    let _ = decoder.end();
});
