//! Every recorded vector of the reference package (`tests/vectors/vectors.jsonl`) and the RFC 8949
//! Appendix A examples recorded from it (`tests/vectors/rfc8949-examples.jsonl`): decode verdicts
//! and canonical bytes, exact encoded frames, raw CBOR verdicts with their limits. The rules of
//! comparison live in `tests/common/checks.rs`, shared with `cargo xtask conformance`.

mod common;

use std::collections::BTreeMap;

use common::checks::{check_case, run_decode, Outcome};
use common::{canonical_hex_of_json, vectors, vectors_in};
use pi_protocol::{
    encode_client_message, encode_server_message, parse_client_message, parse_server_message, ClientMessageDecoder,
    ServerMessageDecoder,
};
use serde_json::Value;

/// Runs every case; returns the disagreements and the number of cases per op.
fn check_all(cases: &[Value]) -> (Vec<String>, BTreeMap<String, usize>) {
    let mut failures = Vec::new();
    let mut counts = BTreeMap::new();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        *counts.entry(case["request"]["op"].as_str().unwrap().to_owned()).or_insert(0) += 1;
        if let Err(e) = check_case(id, &case["request"], &case["expect"]) {
            failures.push(e);
        }
    }
    (failures, counts)
}

#[test]
fn every_vector_agrees_with_the_reference() {
    let cases = vectors();
    assert!(cases.len() >= 500, "the vectors file is incomplete: {} cases", cases.len());
    let (failures, counts) = check_all(&cases);
    assert!(failures.is_empty(), "{} of {} vectors disagree:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert_eq!(counts.get("decode"), Some(&510));
    assert_eq!(counts.get("encode"), Some(&25));
    assert_eq!(counts.get("decodeCbor"), Some(&11));
}

#[test]
fn rfc8949_examples_wrapped_in_envelopes_agree_with_the_reference() {
    // Recorded with the reference: every Appendix A example of RFC 8949 as request.call,
    // response.result, service_update.update, and as a raw item.
    let cases = vectors_in("rfc8949-examples.jsonl");
    assert_eq!(cases.len(), 360);
    let (failures, counts) = check_all(&cases);
    assert!(failures.is_empty(), "{} disagree:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(counts.get("decodeCbor"), Some(&90));
}

#[test]
fn typed_encoders_round_trip_every_accepted_message() {
    let mut checked = 0;
    for case in vectors() {
        let request = &case["request"];
        if request["op"] != "decode" || case["expect"]["ok"] != true {
            continue;
        }
        let Outcome::Ok { messages } = run_decode(request) else { panic!("{}: should decode", case["id"]) };
        for m in messages {
            let again = if request["side"] == "client" {
                let frame = encode_client_message(&parse_client_message(&m).unwrap()).unwrap();
                ClientMessageDecoder::new().push(&frame).pop().unwrap().unwrap().to_json()
            } else {
                let frame = encode_server_message(&parse_server_message(&m).unwrap()).unwrap();
                ServerMessageDecoder::new().push(&frame).pop().unwrap().unwrap().to_json()
            };
            assert_eq!(canonical_hex_of_json(&again), canonical_hex_of_json(&m), "{}", case["id"]);
            checked += 1;
        }
    }
    assert!(checked >= 78, "only {checked} messages checked");
}
