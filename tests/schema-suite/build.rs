//! Generates the types of every test schema into `OUT_DIR` with `pi_protocol_gen::Builder`,
//! exactly as a downstream crate's build script would.

fn main() {
    pi_protocol_gen::Builder::new()
        .runtime_path("pi_protocol_runtime")
        .derive_path("pi_protocol_derive")
        .schema("../../pi-protocol-gen/tests/schemas/constructs.json")
        .schema("../../pi-protocol-gen/tests/schemas/chat-inlined.json")
        .schema("../vectors/reference-schema.json")
        .schema("../../schema/pi-protocol.v8.json")
        .type_attribute("*", "#[allow(missing_docs)]")
        .generate()
        .expect("the test schemas generate");
}
