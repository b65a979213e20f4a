//! A model of the sans-IO connection layer (`pi_protocol::connection`) that checks its
//! invariants while something drives a `ClientConnection` and a `ServerConnection`.
//!
//! Shared, through `#[path]`, by the fuzz targets `connection_pair` and `connection_peer`
//! (`fuzz/`) and by `tests/connection_fuzz_inputs.rs`, which replays their committed corpora
//! on the stable toolchain. What each part checks is in its own docs: [`client::ClientProbe`],
//! [`server::ServerProbe`], [`pair`] (both ends through byte pipes, with hostile input), and
//! [`peer`] (one end against a hostile stream).

pub mod client;
pub mod frames;
pub mod messages;
pub mod pair;
pub mod peer;
pub mod server;
pub mod wire;
