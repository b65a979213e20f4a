//! Chord inside Pi payloads: the wire grammar of service calls, the `$chord.service` control
//! calls, catalogues, subscription snapshots and updates ([`wire`]), one subscription's replicated
//! state on the consuming and the publishing end ([`subscription`]), and Delta, the path codecs
//! that carry replicated state as batches of operations ([`delta`]).
//!
//! The Pi protocol keeps these values opaque (docs/PROTOCOL.md section 5): this crate reads
//! them from a [`Payload`](pi_protocol_runtime::Payload) and writes them into one, as strictly
//! as `@earendil-works/chord@0.85.1` does. It depends on the runtime (and its derive), never on the
//! `pi-protocol` facade, which re-exports it behind its `chord` feature.

#![forbid(unsafe_code)]

pub mod delta;
pub mod subscription;
pub mod wire;
