//! Generates Chord's wire types from `schema/chord.json` into `$OUT_DIR/chord.rs`, which
//! `src/wire/generated.rs` includes. The code names the runtime and the derive through
//! `pi_protocol_runtime` and `pi_protocol_derive`, this crate's own dependencies: pi-chord never
//! depends on the `pi-protocol` facade (which re-exports it).

fn main() {
    pi_protocol_gen::Builder::new()
        .schema("schema/chord.json")
        .runtime_path("pi_protocol_runtime")
        .derive_path("pi_protocol_derive")
        .generate()
        .expect("schema/chord.json generates");
}
