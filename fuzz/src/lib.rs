//! Code the fuzz targets share with the main test suite: the connection model of
//! `tests/connection_model/` (probes of both ends, the pair and peer drivers, and the envelope
//! generators), included by path so that `cargo test` replays the same inputs on stable.

#[path = "../../tests/connection_model/mod.rs"]
pub mod connection_model;
