//! The types generated from `pi-chord/schema/chord.json` by `pi_protocol_gen::Builder` in
//! `build.rs` (they need no lint allowed).
include!(concat!(env!("OUT_DIR"), "/chord.rs"));
