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

#[test]
fn derive_ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
