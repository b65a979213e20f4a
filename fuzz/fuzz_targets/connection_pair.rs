//! Random interleavings on both ends of a `ClientConnection`/`ServerConnection` pair: application
//! calls, partial deliveries, transports that stop reading, closes, hostile bytes and frames,
//! checked against the model of `tests/connection_model/` (see `pair.rs` there).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_protocol_fuzz::connection_model::pair;

fuzz_target!(|data: &[u8]| pair::run(data));
