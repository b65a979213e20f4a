//! Round trip of arbitrary typed messages: a message built from the fuzzer's bytes encodes,
//! decodes back equal, re-encodes to the same bytes, and its JSON view parses back to it. The
//! messages come from the generators of `tests/connection_model/messages.rs`.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use pi_protocol::{
    encode_client_json, encode_client_message, encode_server_json, encode_server_message, parse_client_message,
    parse_server_message, ClientMessageDecoder, CodecOptions, ServerMessageDecoder,
};
use pi_protocol_fuzz::connection_model::messages::{client_message, server_message};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(is_client) = u.arbitrary::<bool>() else { return };
    if is_client {
        let Ok(m) = client_message(&mut u) else { return };
        let frame = encode_client_message(&m).expect("a valid message encodes");
        let decoded = ClientMessageDecoder::new().push(&frame).pop().unwrap().expect("decodes");
        assert_eq!(decoded, m);
        assert_eq!(encode_client_message(&decoded).unwrap(), frame);
        let json = m.to_json();
        assert_eq!(parse_client_message(&json).expect("the JSON view parses"), m);
        let from_json = encode_client_json(&json, &CodecOptions::new()).expect("the JSON view encodes");
        let again = ClientMessageDecoder::new().push(&from_json).pop().unwrap().expect("decodes");
        assert_eq!(again.to_json(), json);
    } else {
        let Ok(m) = server_message(&mut u) else { return };
        let frame = encode_server_message(&m).expect("a valid message encodes");
        let decoded = ServerMessageDecoder::new().push(&frame).pop().unwrap().expect("decodes");
        assert_eq!(decoded, m);
        assert_eq!(encode_server_message(&decoded).unwrap(), frame);
        let json = m.to_json();
        assert_eq!(parse_server_message(&json).expect("the JSON view parses"), m);
        let from_json = encode_server_json(&json, &CodecOptions::new()).expect("the JSON view encodes");
        let again = ServerMessageDecoder::new().push(&from_json).pop().unwrap().expect("decodes");
        assert_eq!(again.to_json(), json);
    }
});
