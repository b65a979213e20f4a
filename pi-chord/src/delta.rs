//! Delta: replicated state as batches of path operations.
