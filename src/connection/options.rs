//! What the option types of the three roles share: by-value setters for their public fields
//! and the error bodies they answer with by default.

use crate::{ErrorBody, ErrorCode};

/// Writes a `#[must_use]` by-value setter named after each listed field of `$options`, so the
/// option types stay `#[non_exhaustive]` (they gain fields without breaking anybody) and are
/// still built in one expression: `ServerOptions::default().max_in_flight(16)`.
macro_rules! option_setters {
    ($options:ty { $($(#[$doc:meta])* $field:ident: $ty:ty;)* }) => {
        impl $options {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}
pub(crate) use option_setters;

/// The error body of a default: `code` is one of the connection's own, never empty.
pub(crate) fn default_error(code: &str, message: &str) -> ErrorBody {
    ErrorBody::new(ErrorCode::new(code).expect("default codes are non-empty"), message)
}
