//! The connection fuzz targets' inputs, replayed on the stable toolchain through the same model
//! (`tests/connection_model/`): every committed corpus file of `connection_pair` and
//! `connection_peer`, and the bundled captures as hostile peers at every chunk size.

mod connection_model;

use std::path::{Path, PathBuf};

use connection_model::{pair, peer};

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files
}

fn replay(target: &str, run: fn(&[u8])) {
    let files = corpus(target);
    assert!(files.len() >= 10, "the {target} corpus has {} inputs", files.len());
    for file in files {
        let data = std::fs::read(&file).unwrap();
        let outcome = std::panic::catch_unwind(|| run(&data));
        assert!(outcome.is_ok(), "{} breaks an invariant", file.display());
    }
}

#[test]
fn connection_pair_corpus_keeps_the_invariants() {
    replay("connection_pair", pair::run);
}

#[test]
fn connection_peer_corpus_keeps_the_invariants() {
    replay("connection_peer", peer::run);
}

#[test]
fn captured_sessions_as_peers_keep_the_invariants_at_every_chunk_size() {
    let captures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/captures");
    for (name, side) in [("session-client.bin", 0u8), ("session-server.bin", 1)] {
        let stream = std::fs::read(captures.join(name)).unwrap();
        for control in (0u8..64).filter(|c| c & 1 == side) {
            let mut data = vec![control];
            data.extend(&stream);
            peer::run(&data);
        }
    }
}
