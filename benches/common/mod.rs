//! Code shared by the codec benchmarks (`benches/codec.rs`) and their companion driver
//! (`examples/bench_driver.rs`): the workloads, the serde + ciborium baseline, and the timed
//! operations. It lives in a folder so that cargo does not take these files for benchmarks.

pub mod baseline;
pub mod ops;
pub mod workloads;
