//! [`Builder`]: generating types from a schema in a downstream crate's `build.rs`.

use std::path::{Path, PathBuf};

use crate::emit::Options;
use crate::error::{GenError, Result};
use crate::model::Model;

/// Generates Rust types from one or more schema files into `OUT_DIR`, for a `build.rs`: in the
/// spirit of `prost_build::Config`.
///
/// Each schema `dir/name.json` becomes `$OUT_DIR/name.rs`, a file that `include!` accepts
/// (the module documentation is a plain comment, not `//!`), and Cargo is told to rerun the
/// build script when the schema changes. By default the generated code names the runtime and
/// the derive through the `pi-protocol` facade (`pi_protocol::runtime`, `pi_protocol::Codec`),
/// so the crate depends on `pi-protocol` and, at build time, `pi-protocol-gen`, nothing else.
///
/// ```no_run
/// // build.rs
/// fn main() {
///     pi_protocol_gen::Builder::new()
///         .schema("schema/chat.json")
///         .type_attribute("*", "#[allow(clippy::large_enum_variant)]")
///         .generate()
///         .unwrap();
/// }
/// // src/lib.rs:
/// // pub mod chat { include!(concat!(env!("OUT_DIR"), "/chat.rs")); }
/// ```
// The example is a whole build.rs, `fn main` included.
#[allow(clippy::needless_doctest_main)]
#[derive(Debug, Clone)]
#[must_use]
pub struct Builder {
    schemas: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    options: Options,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// A builder for code that depends on the `pi-protocol` facade.
    pub fn new() -> Self {
        Builder {
            schemas: Vec::new(),
            out_dir: None,
            options: Options::default()
                .command("pi_protocol_gen::Builder in build.rs")
                .runtime_path("pi_protocol::runtime")
                .derive_path("pi_protocol")
                .inner_docs(false),
        }
    }

    /// Adds a schema file (the project's own format, or the reference's published form).
    pub fn schema(mut self, path: impl AsRef<Path>) -> Self {
        self.schemas.push(path.as_ref().to_path_buf());
        self
    }

    /// Writes into `dir` instead of `$OUT_DIR`.
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The runtime path the generated code names (default `pi_protocol::runtime`).
    pub fn runtime_path(mut self, path: impl Into<String>) -> Self {
        self.options = self.options.runtime_path(path);
        self
    }

    /// The path of the crate exporting `#[derive(Codec)]` (default `pi_protocol`).
    pub fn derive_path(mut self, path: impl Into<String>) -> Self {
        self.options = self.options.derive_path(path);
        self
    }

    /// Whether types get the JSON view (serde in wire shape, `to_json`, `from_json`; default on).
    pub fn json(mut self, on: bool) -> Self {
        self.options = self.options.json(on);
        self
    }

    /// Adds an outer attribute to a type (by Rust name, `*` for all); see
    /// [`Options::type_attribute`].
    pub fn type_attribute(mut self, type_name: impl Into<String>, attribute: impl Into<String>) -> Self {
        self.options = self.options.type_attribute(type_name, attribute);
        self
    }

    /// Adds an outer attribute to a field (`Type.field`, `*` for all); see
    /// [`Options::field_attribute`].
    pub fn field_attribute(mut self, field: impl Into<String>, attribute: impl Into<String>) -> Self {
        self.options = self.options.field_attribute(field, attribute);
        self
    }

    /// Reads every schema, prints `cargo:rerun-if-changed` for it, and writes its module.
    /// Returns the paths written, in the order the schemas were added.
    ///
    /// # Errors
    /// [`GenError::Io`] when a file cannot be read or written (or `OUT_DIR` is not set and no
    /// [`out_dir`](Self::out_dir) was given), and every error of [`Model::from_json`] and
    /// [`Model::to_rust`].
    pub fn generate(self) -> Result<Vec<PathBuf>> {
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or_else(|| GenError::Io {
                path: "OUT_DIR".into(),
                message: "not set: run from a build script or set out_dir".into(),
            })?,
        };
        let mut written = Vec::with_capacity(self.schemas.len());
        for schema in &self.schemas {
            println!("cargo:rerun-if-changed={}", schema.display());
            let io = |e: std::io::Error| GenError::Io { path: schema.display().to_string(), message: e.to_string() };
            let text = std::fs::read_to_string(schema).map_err(io)?;
            let source_name =
                schema.file_name().map_or_else(|| schema.display().to_string(), |n| n.to_string_lossy().into_owned());
            let code = Model::from_json(&text, &source_name)?.to_rust(&source_name, &self.options)?;
            let stem =
                schema.file_stem().map_or_else(|| "schema".into(), |s| s.to_string_lossy().replace(['.', '-'], "_"));
            let path = out_dir.join(format!("{stem}.rs"));
            std::fs::write(&path, code)
                .map_err(|e| GenError::Io { path: path.display().to_string(), message: e.to_string() })?;
            written.push(path);
        }
        Ok(written)
    }
}
