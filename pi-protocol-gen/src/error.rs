//! The one error type of the generator.

/// Why a schema could not be turned into Rust code.
///
/// Every schema problem names the place it was found as a JSON pointer into the schema file
/// (for example `#/$defs/ServerTarget/properties/serverId/format`), so the fix is one look away.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenError {
    /// The schema file is not JSON at all.
    #[error("{source_name}: not valid JSON: {error}")]
    Json {
        /// The name the caller gave the schema file.
        source_name: String,
        /// What the JSON parser reported.
        error: serde_json::Error,
    },
    /// The schema is JSON but outside the profile the generator supports, or inconsistent.
    #[error("{path}: {message}")]
    Schema {
        /// JSON pointer (`#/...`) of the offending keyword or value.
        path: String,
        /// What is wrong there.
        message: String,
    },
    /// An [`Options`](crate::Options) field holds something unusable (for example a runtime
    /// path that is not a Rust path).
    #[error("invalid option {option}: {message}")]
    Option {
        /// The option's field name.
        option: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A file could not be read or written (the [`Builder`](crate::Builder)).
    #[error("{path}: {message}")]
    Io {
        /// The file (or the variable) concerned.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The emitted tokens did not form a valid Rust file (a generator bug, never the schema's).
    #[error("internal error: generated code does not parse: {0}")]
    Emit(#[from] syn::Error),
}

impl GenError {
    /// A [`GenError::Schema`] at `path`.
    pub(crate) fn schema(path: impl Into<String>, message: impl Into<String>) -> GenError {
        GenError::Schema { path: path.into(), message: message.into() }
    }

    /// The JSON pointer of a schema error, if this is one.
    pub fn path(&self) -> Option<&str> {
        match self {
            GenError::Schema { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// Shorthand for results of the generator.
pub type Result<T, E = GenError> = std::result::Result<T, E>;
