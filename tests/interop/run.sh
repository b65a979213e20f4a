#!/usr/bin/env bash
# Live interop test: the Rust example server against a client on the published TypeScript package
# @earendil-works/pi-protocol@0.85.1, the Rust example client against a small server on the same
# package, and the TypeScript client through the Rust example router in front of two Rust example
# servers, over TCP loopback. Skips (exit 0, with a message) when node or npm is missing.
# Usage: tests/interop/run.sh   (from anywhere; the examples build into CARGO_TARGET_DIR when it is set,
# the npm package always installs into <repo>/target/interop-node)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "interop: SKIPPED: node and npm are needed for the live interop test (not found on PATH)"
  exit 0
fi
target="${CARGO_TARGET_DIR:-$root/target}"
scratch="$root/target/interop-node"
mkdir -p "$scratch/logs"
# Install the pinned package once into the scratch folder, then copy the project's scripts beside it.
if [ ! -f "$scratch/node_modules/@earendil-works/pi-protocol/package.json" ] \
  || ! cmp -s "$here/package.json" "$scratch/package.json"; then
  cp "$here/package.json" "$scratch/package.json"
  (cd "$scratch" && npm install --silent --no-audit --no-fund --ignore-scripts --no-package-lock >/dev/null)
fi
cp "$here"/*.mjs "$scratch/"
installed="$(node -p "require('$scratch/node_modules/@earendil-works/pi-protocol/package.json').version")"
[ "$installed" = "0.85.1" ] || { echo "interop: expected @earendil-works/pi-protocol 0.85.1, found $installed"; exit 1; }

(cd "$root" && cargo build --quiet --features tokio,chord --example server --example client --example router)
bin="$target/debug/examples"
logs="$scratch/logs"
rm -f "$logs"/*.log

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

# Waits until FILE's first line says `listening on ADDR` and prints ADDR.
address_of() {
  for _ in $(seq 1 200); do
    if [ -s "$1" ] && head -1 "$1" | grep -q '^listening on '; then
      head -1 "$1" | sed 's/^listening on //'
      return 0
    fi
    sleep 0.05
  done
  echo "interop: $1 never reported its address" >&2
  return 1
}

# 1. TypeScript client -> Rust server (two connections: version 7, then a session).
"$bin/server" --listen 127.0.0.1:0 --connections 2 >"$logs/rust-server.log" 2>"$logs/rust-server.err" &
server_pid=$!
pids+=("$server_pid")
addr="$(address_of "$logs/rust-server.log")"
if ! timeout 60 node "$scratch/node-client.mjs" --connect "$addr" >"$logs/node-client.log" 2>"$logs/node-client.err"; then
  echo "interop: the TypeScript client failed against the Rust server:"; cat "$logs/node-client.err"; tail -5 "$logs/node-client.log"; exit 1
fi
timeout 30 tail --pid="$server_pid" -f /dev/null || { echo "interop: the Rust server did not exit"; exit 1; }
wait "$server_pid" || { echo "interop: the Rust server failed"; cat "$logs/rust-server.err"; exit 1; }

# 2. Rust client -> TypeScript server (a session, then version 7).
node "$scratch/node-server.mjs" --connections 2 >"$logs/node-server.log" 2>"$logs/node-server.err" &
node_pid=$!
pids+=("$node_pid")
addr="$(address_of "$logs/node-server.log")"
if ! timeout 60 "$bin/client" --connect "$addr" >"$logs/rust-client.log" 2>"$logs/rust-client.err"; then
  echo "interop: the Rust client failed against the TypeScript server:"; cat "$logs/rust-client.err"; exit 1
fi
timeout 60 "$bin/client" --connect "$addr" --version 7 >"$logs/rust-client-v7.log" 2>"$logs/rust-client-v7.err" \
  || { echo "interop: the Rust client (version 7) failed"; cat "$logs/rust-client-v7.err"; exit 1; }
timeout 30 tail --pid="$node_pid" -f /dev/null || { echo "interop: the TypeScript server did not exit"; exit 1; }
wait "$node_pid" || { echo "interop: the TypeScript server failed"; cat "$logs/node-server.err"; exit 1; }

# 3. TypeScript client -> Rust router -> two Rust servers (version 7, then a session that also
# reaches the second server and one nobody serves). Server A's two connections: the router asking
# for its serverId, then the router's shared upstream (`--shared`); server B's one: the upstream.
"$bin/server" --listen 127.0.0.1:0 --connections 2 >"$logs/router-server-a.log" 2>"$logs/router-server-a.err" &
server_a_pid=$!
pids+=("$server_a_pid")
"$bin/server" --listen 127.0.0.1:0 --connections 1 --server-id 9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f \
  >"$logs/router-server-b.log" 2>"$logs/router-server-b.err" &
server_b_pid=$!
pids+=("$server_b_pid")
addr_a="$(address_of "$logs/router-server-a.log")"
addr_b="$(address_of "$logs/router-server-b.log")"
"$bin/router" --listen 127.0.0.1:0 --upstream "$addr_a" --upstream "$addr_b" --connections 2 --shared \
  >"$logs/router.log" 2>"$logs/router.err" &
router_pid=$!
pids+=("$router_pid")
addr="$(address_of "$logs/router.log")"
if ! timeout 60 node "$scratch/node-client.mjs" --connect "$addr" --via-router yes \
  >"$logs/node-client-router.log" 2>"$logs/node-client-router.err"; then
  echo "interop: the TypeScript client failed through the Rust router:"; cat "$logs/node-client-router.err"
  tail -5 "$logs/node-client-router.log"; exit 1
fi
for pid in "$router_pid" "$server_a_pid" "$server_b_pid"; do
  timeout 30 tail --pid="$pid" -f /dev/null || { echo "interop: the router or a server behind it did not exit"; exit 1; }
  wait "$pid" || { echo "interop: the router or a server behind it failed"; cat "$logs"/router*.err; exit 1; }
done

node "$scratch/check.mjs" "$logs"
