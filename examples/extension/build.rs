//! Generates the crate's message types from `schema/metrics.json` (Pi protocol version 8 and
//! this crate's messages) into `$OUT_DIR/metrics.rs`, which `src/lib.rs` includes. The code
//! names the runtime and the derive through `pi_protocol`, the crate's only dependency.

fn main() {
    pi_protocol_gen::Builder::new().schema("schema/metrics.json").generate().expect("schema/metrics.json generates");
}
