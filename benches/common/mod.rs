//! Code shared by the benchmarks (`benches/codec.rs`, `benches/payload_serde.rs`) and their
//! companion driver (`examples/bench_driver.rs`): the workloads, the serde + ciborium baseline,
//! the timed operations, and the Rust types service code reads the workloads' calls into. It
//! lives in a folder so that cargo does not take these files for benchmarks.

pub mod baseline;
pub mod ops;
pub mod typed;
pub mod workloads;
