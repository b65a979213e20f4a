//! `pi_protocol::io::unix::discover`: the servers of a directory, as pi-client's
//! `discoverUnixServers` finds them (issue 22 point 1): live servers found with their paths;
//! stale sockets, non-sockets, malformed names, mismatched serverIds and slow servers left out;
//! at most 16 probes at once.
#![cfg(all(feature = "tokio", unix))]

mod client_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use client_support::{other_id, server_id, unix_server, TempDir};
use pi_protocol::io::unix::{discover, discover_with, socket_path, DiscoverOptions};
use pi_protocol::{encode_server_message, ServerHello, ServerId, ServerMessage};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A fresh random version 4 `serverId`.
fn random_id() -> ServerId {
    ServerId::new(uuid::Uuid::new_v4().to_string()).unwrap()
}

#[tokio::test]
async fn live_servers_are_found_with_their_paths_and_everything_else_is_left_out() {
    let dir = TempDir::new("discover");
    let (a, b) = (server_id(), other_id());
    let _a = unix_server(&socket_path(dir.path(), &a), a.clone());
    let _b = unix_server(&socket_path(dir.path(), &b), b.clone());
    // A stale socket: bound, then its listener gone.
    let stale = random_id();
    drop(std::os::unix::net::UnixListener::bind(socket_path(dir.path(), &stale)).unwrap());
    // A regular file under a valid name.
    std::fs::write(socket_path(dir.path(), &random_id()), b"not a socket").unwrap();
    // Live servers under malformed names.
    let _c = unix_server(&dir.path().join("not-a-server-id.sock"), random_id());
    let upper = random_id().as_str().to_uppercase();
    let _d = unix_server(&dir.path().join(format!("{upper}.sock")), random_id());
    let _e = unix_server(&dir.path().join(format!("{}.socket", random_id().as_str())), random_id());
    // A live server announcing another serverId than its socket's name.
    let _f = unix_server(&socket_path(dir.path(), &random_id()), random_id());

    let found = discover(dir.path()).await.unwrap();
    let mut expected = vec![(a.clone(), socket_path(dir.path(), &a)), (b.clone(), socket_path(dir.path(), &b))];
    expected.sort_by(|x, y| x.0.as_str().cmp(y.0.as_str()));
    let found: Vec<(ServerId, std::path::PathBuf)> = found.into_iter().map(|s| (s.server_id, s.path)).collect();
    assert_eq!(found, expected);
}

#[tokio::test]
async fn a_missing_directory_holds_no_servers() {
    let dir = TempDir::new("discover-missing");
    assert!(discover(dir.path().join("absent")).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_server_slower_than_the_probe_timeout_is_left_out() {
    let dir = TempDir::new("discover-slow");
    let id = random_id();
    let listener = tokio::net::UnixListener::bind(socket_path(dir.path(), &id)).unwrap();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream); // accepted, never answered
        }
    });
    let options = DiscoverOptions::default().probe_timeout(Duration::from_millis(100));
    let started = std::time::Instant::now();
    assert!(discover_with(dir.path(), &options).await.unwrap().is_empty());
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    silent.abort();
}

/// Forty servers that each answer 30 ms after accepting: the probes overlap, at most 16 at once.
#[tokio::test]
async fn forty_sockets_are_probed_at_most_sixteen_at_once() {
    let dir = TempDir::new("discover-forty");
    let (open, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut ids = Vec::new();
    let mut servers = Vec::new();
    for _ in 0..40 {
        let id = random_id();
        let listener = tokio::net::UnixListener::bind(socket_path(dir.path(), &id)).unwrap();
        let (open, most, announced) = (open.clone(), most.clone(), id.clone());
        servers.push(tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (open, most, announced) = (open.clone(), most.clone(), announced.clone());
                tokio::spawn(async move {
                    let now = open.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let length = stream.read_u32().await.unwrap();
                    stream.read_exact(&mut vec![0; length as usize]).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    let hello = encode_server_message(&ServerMessage::Hello(ServerHello::new(announced))).unwrap();
                    stream.write_all(&hello).await.unwrap();
                    let mut rest = Vec::new();
                    let _ = stream.read_to_end(&mut rest).await; // until the probe closes
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        }));
        ids.push(id);
    }
    let found = discover(dir.path()).await.unwrap();
    ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(found.iter().map(|s| s.server_id.clone()).collect::<Vec<_>>(), ids);
    assert_eq!(most.load(Ordering::SeqCst), 16, "probes at once");
    let fewer = DiscoverOptions::default().max_concurrent_probes(4);
    most.store(0, Ordering::SeqCst);
    assert_eq!(discover_with(dir.path(), &fewer).await.unwrap().len(), 40);
    assert_eq!(most.load(Ordering::SeqCst), 4, "probes at once");
    for server in servers {
        server.abort();
    }
}
