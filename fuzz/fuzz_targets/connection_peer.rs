//! One end of a connection against a hostile peer's byte stream, in chunks, with a small
//! application driving it, checked against the model of `tests/connection_model/` (see
//! `peer.rs` there for the control byte).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_protocol_fuzz::connection_model::peer;

fuzz_target!(|data: &[u8]| peer::run(data));
