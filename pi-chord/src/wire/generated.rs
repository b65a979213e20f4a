//! The types generated from `pi-chord/schema/chord.json` by `pi_protocol_gen::Builder` in
//! `build.rs`.
#![allow(missing_docs, clippy::all)]
include!(concat!(env!("OUT_DIR"), "/chord.rs"));
