//! Arbitrary bytes into a client-message decoder (one push, then `end`). Every accepted message
//! must re-encode and decode back to itself; every error must be bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_protocol::{encode_client_message, ClientMessageDecoder};

fuzz_target!(|data: &[u8]| {
    let mut decoder = ClientMessageDecoder::new();
    for result in decoder.push(data) {
        match result {
            Ok(message) => {
                let frame = encode_client_message(&message).expect("a decoded message encodes");
                let again = ClientMessageDecoder::new().push(&frame).pop().expect("one message").expect("decodes");
                assert_eq!(again, message);
            }
            Err(error) => assert!(error.to_string().chars().count() <= 500),
        }
    }
    let _ = decoder.end();
});
