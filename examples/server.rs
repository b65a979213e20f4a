//! Placeholder: the server example is being written.

fn main() {}
