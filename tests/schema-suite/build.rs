//! Generates the types of every test schema into `OUT_DIR` with `pi_protocol_gen::Builder` and
//! its default paths, exactly as a downstream crate's build script would: every schema in
//! `pi-protocol-gen/tests/schemas/`, and the project's own v8 schema. Then writes
//! `schemas.rs`, the index `src/lib.rs` includes: one module and one [`Schema`] type per
//! schema, and `for_each_schema` visiting them all.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The folder of test schemas; each `name.json` there is the suite's schema `name`.
const SCHEMAS: &str = "../../pi-protocol-gen/tests/schemas";

/// The project's own v8 schema (the facade's built-in types, generated again), and its name.
const OWN_V8: (&str, &str) = ("own-v8", "../../schema/pi-protocol.v8.json");

fn main() {
    println!("cargo:rerun-if-changed={SCHEMAS}");
    let mut schemas: Vec<(String, PathBuf)> = std::fs::read_dir(SCHEMAS)
        .expect("the test schemas")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| (path.file_stem().expect("a file name").to_string_lossy().into_owned(), path))
        .collect();
    schemas.sort();
    schemas.push((OWN_V8.0.to_owned(), PathBuf::from(OWN_V8.1)));
    let builder = schemas.iter().fold(pi_protocol_gen::Builder::new(), |b, (_, path)| b.schema(path));
    let written = builder.generate().expect("the test schemas generate");
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    let index = index(&schemas, &written);
    std::fs::write(Path::new(&out_dir).join("schemas.rs"), index).expect("write the index");
}

/// The index: for each schema its module, its marker type and `Schema` impl, then the visitor.
fn index(schemas: &[(String, PathBuf)], written: &[PathBuf]) -> String {
    let mut out = String::new();
    let mut visits = String::new();
    for ((name, schema), code) in schemas.iter().zip(written) {
        let module = name.replace('-', "_");
        let marker: String = name
            .split('-')
            .map(|part| {
                let mut chars = part.chars();
                chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
            })
            .collect();
        let shown = schema.to_string_lossy().trim_start_matches("../../").to_owned();
        let schema = std::fs::canonicalize(schema).expect("the schema's path");
        let (schema, code) = (schema.to_string_lossy(), code.to_string_lossy());
        let _ = write!(
            out,
            r#"
/// The types generated from `{shown}`.
pub mod {module} {{
    include!({code:?});
}}

/// The schema `{name}`: see [`{module}`].
#[derive(Debug)]
pub enum {marker} {{}}

impl crate::Schema for {marker} {{
    const NAME: &'static str = {name:?};
    const TEXT: &'static str = include_str!({schema:?});
    const CODE: &'static str = include_str!({code:?});
    type ClientMessage = {module}::ClientMessage;
    type ServerMessage = {module}::ServerMessage;
}}
"#
        );
        let _ = write!(visits, "\n    visitor.visit::<{marker}>();");
    }
    let _ = write!(
        out,
        r#"
/// How many schemas the suite holds: every test schema of the generator and the v8 schema.
pub const SCHEMA_COUNT: usize = {count};

/// Calls `visitor` with every schema of the suite, in the order of their names (the project's
/// own v8 schema last).
pub fn for_each_schema(visitor: &mut impl crate::Visitor) {{{visits}
}}
"#,
        count = schemas.len()
    );
    out
}
