//! Placeholder: the client example is being written.

fn main() {}
