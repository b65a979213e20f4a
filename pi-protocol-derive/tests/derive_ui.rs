//! trybuild UI tests of `#[derive(Codec)]`.
//!
//! `tests/ui/fail/*.rs` must not compile, each with the errors pinned in the `.stderr` beside
//! it, every error pointing at the attribute, field or variant at fault. `tests/ui/pass/*.rs`
//! must compile and run: they round-trip hand-written envelope types through the runtime's
//! CBOR reader and writer. Regenerate the pinned output with `TRYBUILD=overwrite`.
//!
//! trybuild compiles these files as a crate of its own, in its own target directory, with this
//! crate's dev-dependencies as its dependencies: keep them few, or a first `cargo test` of the
//! workspace rebuilds every heavy one a second time.
//!
//! Run on demand and by CI (`cargo test -p pi-protocol-derive --test derive_ui -- --ignored`),
//! not by a plain `cargo test`: building that crate and its 33 cases takes about 90 s on a fresh
//! two-core machine, a quarter of a newcomer's first run, and the pinned compiler messages
//! follow the toolchain CI uses (another rustc may word them differently).

#[test]
#[ignore = "builds a crate of its own (about 90 s cold); CI runs it: cargo test -p pi-protocol-derive --test derive_ui -- --ignored"]
fn derive_ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
