#!/usr/bin/env bash
# Live interop with the real pi programs (issue 22 point 6): a real @earendil-works/pi-server
# 0.85.1 (its testing host with the demo Chord services, tests/realpeer/real-server.mjs) and the
# real @earendil-works/pi-client 0.85.1, on node 22, over Unix sockets, against the Rust side:
#
#   (a) the real pi-client against examples/server --unix DIR
#   (b) the Rust client example and the CLI (discover, call, catalogue, subscribe) against the
#       real server
#   (c) pi-server's ProtocolTestClient scenarios against both servers: identical transcripts
#   (d) two real pi-clients at once through examples/router to the real server, each attaching
#       its own Session and subscribing
#
# Every script is first run against the real server itself (real-client, two real-clients at
# once, the scenarios against two fresh real servers), so a failure there is the script's.
# A part whose Rust side does not have the flags or verbs it needs yet prints a SKIP line
# saying what is missing. Ends with `realpeer: N passed, M failed, K skipped` and exits 1 when
# anything failed. Temporary directories and child processes are removed on exit.
#
# Usage: tests/realpeer/run.sh   (from anywhere; the Rust programs build into CARGO_TARGET_DIR
# when it is set, the node packages install into <repo>/target/realpeer-node; REALPEER_KEEP=1
# keeps the scratch directory with every log; REALPEER_NO_BUILD=1 skips the cargo build and
# uses the programs already in $CARGO_TARGET_DIR/debug, e.g. another branch's)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
# cargo runs from $root below, so a relative CARGO_TARGET_DIR is relative to it.
[[ "$target" == /* ]] || target="$root/$target"
bin="$target/debug"

if ! command -v npm >/dev/null 2>&1; then
  echo "realpeer: SKIPPED: npm is needed to install the real pi programs (not found on PATH)"
  exit 0
fi

passed=0
failed=0
skipped=0
pids=()
# A short directory under /tmp: a Unix socket path must stay under 108 bytes.
scratch="$(mktemp -d /tmp/realpeer.XXXXXX)"
logs="$scratch/logs"
mkdir -p "$logs"

cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [ "${REALPEER_KEEP:-0}" = 1 ]; then
    echo "realpeer: kept $scratch"
  else
    rm -rf "$scratch"
  fi
}
trap cleanup EXIT

pass() { echo "realpeer: PASS $1"; passed=$((passed + 1)); }
skip() { echo "realpeer: SKIP $1: $2"; skipped=$((skipped + 1)); }
# fail NAME LOG...: the name, then the tail of each log given.
fail() {
  local name="$1"
  shift
  echo "realpeer: FAIL $name"
  local file
  for file in "$@"; do
    if [ -s "$file" ]; then
      echo "---- ${file#"$scratch"/} (last 30 lines)"
      tail -30 "$file"
    fi
  done
  failed=$((failed + 1))
}

echo "== realpeer: install the real pi programs and node 22"
node="$(bash "$here/install.sh")"
export REALPEER_NODE_MODULES="$root/target/realpeer-node/node_modules"

echo "== realpeer: build the Rust examples and the CLI"
rust_built=1
if [ "${REALPEER_NO_BUILD:-0}" = 1 ]; then
  echo "realpeer: REALPEER_NO_BUILD=1: using the programs already built in $bin"
elif ! (cd "$root" && cargo build --quiet --features tokio,chord --example server --example client --example router \
  && cargo build --quiet -p pi-protocol-cli) >"$logs/build.log" 2>&1; then
  rust_built=0
  fail "build: cargo build of the examples and the CLI" "$logs/build.log"
fi

SERVER_ID="3b241101-e2bb-4255-8caf-4136c566a962"

# Waits until FILE's first line is `listening on PATH` (at most 60 s) and prints PATH.
listening_path() {
  local file="$1" pid="$2"
  local _ first
  for _ in $(seq 1 600); do
    first="$(head -1 "$file" 2>/dev/null || true)"
    # A whole first line only (the newline written), so the path is not cut short.
    if [[ "$first" == "listening on "* ]] && [ "$(wc -l <"$file")" -ge 1 ]; then
      echo "${first#listening on }"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# launch NAME COMMAND...: starts a server in the background, its stdout in logs/NAME.out and
# its stderr in logs/NAME.err.
declare -A pid_of
launch() {
  local name="$1"
  shift
  "$@" >"$logs/$name.out" 2>"$logs/$name.err" &
  pid_of[$name]=$!
  pids+=("$!")
}

# wait_listening NAME: sets $started_path to the socket server NAME reports listening on; a server that
# exits or reports nothing within 60 s is a failure (returns 1).
wait_listening() {
  if ! started_path="$(listening_path "$logs/$1.out" "${pid_of[$1]}")"; then
    fail "start $1" "$logs/$1.out" "$logs/$1.err"
    return 1
  fi
}

# help_mentions PROGRAM WORD: whether PROGRAM --help mentions WORD.
help_mentions() {
  # Read the whole help first: `grep -q` in a pipe could end it early, and with pipefail a
  # program killed by SIGPIPE would read as "not mentioned".
  local text
  text="$("$1" --help 2>&1 || true)"
  grep -q -- "$2" <<<"$text"
}

# Starts the real servers: real (the one every part uses) and real-fresh (a second one, used
# only by the scenarios, so that two fresh real servers can be compared).
mkdir -p "$scratch/real" "$scratch/real-fresh" "$scratch/rust" "$scratch/router"
launch real "$node" "$here/real-server.mjs" --dir "$scratch/real" --server-id "$SERVER_ID"
launch real-fresh "$node" "$here/real-server.mjs" --dir "$scratch/real-fresh" --server-id "$SERVER_ID"
real_ok=1
wait_listening real && real_socket="$started_path" || real_ok=0
wait_listening real-fresh && real_fresh_socket="$started_path" || real_ok=0

rust_server_ok=0
if [ "$rust_built" = 1 ] && help_mentions "$bin/examples/server" "--unix"; then
  launch rust "$bin/examples/server" --unix "$scratch/rust" --server-id "$SERVER_ID" --quiet
  if wait_listening rust; then
    rust_server_ok=1
    rust_socket="$started_path"
  fi
fi

# (c) first, while every server is fresh: the three runs at once, then their diffs.
part_c() {
  echo "== realpeer (c): ProtocolTestClient scenarios"
  if [ "$real_ok" = 0 ]; then
    fail "(c) scenarios: the real servers did not start" "$logs/real.err" "$logs/real-fresh.err"
    return
  fi
  local runs=() name socket status=0
  for name in real real-fresh rust; do
    case "$name" in
      real) socket="$real_socket" ;;
      real-fresh) socket="$real_fresh_socket" ;;
      rust) [ "$rust_server_ok" = 1 ] || continue; socket="$rust_socket" ;;
    esac
    timeout 120 "$node" "$here/scenarios.mjs" --socket "$socket" >"$logs/scenarios-$name.jsonl" 2>"$logs/scenarios-$name.err" &
    runs+=("$!")
  done
  for pid in "${runs[@]}"; do wait "$pid" || status=1; done
  # Against itself first: two fresh real servers must give identical transcripts.
  [ "$status" = 0 ] \
    && "$node" "$here/scenarios.mjs" --diff "$logs/scenarios-real.jsonl" "$logs/scenarios-real-fresh.jsonl" >"$logs/scenarios-real-diff.txt" 2>&1 \
    && pass "(c) scenarios: two real pi-servers give identical transcripts ($(tail -1 "$logs/scenarios-real-diff.txt"))" \
    || fail "(c) scenarios: two real pi-servers" "$logs/scenarios-real.err" "$logs/scenarios-real-fresh.err" "$logs/scenarios-real-diff.txt"
  if [ "$rust_server_ok" = 0 ]; then
    skip "(c) scenarios against examples/server" "examples/server has no --unix DIR yet (or did not build)"
    return
  fi
  if [ "$status" = 0 ] \
    && "$node" "$here/scenarios.mjs" --diff "$logs/scenarios-real-fresh.jsonl" "$logs/scenarios-rust.jsonl" >"$logs/scenarios-rust-diff.txt" 2>&1; then
    pass "(c) scenarios: the real pi-server and examples/server give identical transcripts ($(tail -1 "$logs/scenarios-rust-diff.txt"))"
  else
    # Differences in the scenarios listed in known-differences.txt are open gaps, reported; any
    # other difference fails.
    local differing known unexpected="" now_identical=""
    differing="$(grep '^scenario .* differs' "$logs/scenarios-rust-diff.txt" | cut -d' ' -f2 | sort -u || true)"
    known="$(grep -v '^#' "$here/known-differences.txt" | awk 'NF {print $1}' | sort -u || true)"
    unexpected="$(comm -23 <(printf '%s\n' "$differing" | sed '/^$/d') <(printf '%s\n' "$known"))"
    now_identical="$(comm -13 <(printf '%s\n' "$differing" | sed '/^$/d') <(printf '%s\n' "$known"))"
    [ -z "$now_identical" ] || echo "realpeer: NOTE (c) now identical, remove from known-differences.txt: $(echo $now_identical)"
    if [ "$status" = 0 ] && [ -n "$differing" ] && [ -z "$unexpected" ]; then
      pass "(c) scenarios: the real pi-server and examples/server agree but for the known differences ($(tail -1 "$logs/scenarios-rust-diff.txt"); known: $(echo $differing))"
      return
    fi
    fail "(c) scenarios: the real pi-server against examples/server (- real, + Rust): $(tail -1 "$logs/scenarios-rust-diff.txt"); not known: $(echo $unexpected)" "$logs/scenarios-rust.err"
    echo "---- the differing scenarios: $(grep '^scenario .* differs' "$logs/scenarios-rust-diff.txt" | cut -d' ' -f2 | tr '\n' ' ')"
    echo "---- the first 80 lines of the diff (all of it: REALPEER_KEEP=1, logs/scenarios-rust-diff.txt)"
    head -80 "$logs/scenarios-rust-diff.txt"
  fi
}

# (a) the real pi-client against the Rust server (and, first, against the real server).
part_a() {
  echo "== realpeer (a): the real pi-client"
  if [ "$real_ok" = 1 ]; then
    timeout 60 "$node" "$here/real-client.mjs" --dir "$scratch/real" --name real-vs-real >"$logs/client-vs-real.log" 2>&1 \
      && pass "(a) real pi-client against the real pi-server (the script itself)" \
      || fail "(a) real pi-client against the real pi-server" "$logs/client-vs-real.log" "$logs/real.err"
  fi
  if [ "$rust_server_ok" = 0 ]; then
    skip "(a) real pi-client against examples/server" "examples/server has no --unix DIR yet (or did not build)"
    return
  fi
  timeout 60 "$node" "$here/real-client.mjs" --dir "$scratch/rust" --name real-vs-rust >"$logs/client-vs-rust.log" 2>&1 \
    && pass "(a) real pi-client against examples/server" \
    || fail "(a) real pi-client against examples/server" "$logs/client-vs-rust.log" "$logs/rust.err"
}

# json_equal A B: whether two JSON texts hold the same value.
json_equal() {
  "$node" -e '
    const sort = (v) => Array.isArray(v) ? v.map(sort) : v !== null && typeof v === "object"
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort(v[k])])) : v;
    const [a, b] = process.argv.slice(1).map((t) => JSON.stringify(sort(JSON.parse(t))));
    process.exit(a === b ? 0 : 1);' "$1" "$2" 2>/dev/null
}

# (b) the Rust client example and the CLI against the real server.
part_b() {
  echo "== realpeer (b): the Rust client and the CLI against the real pi-server"
  if [ "$real_ok" = 0 ]; then
    fail "(b): the real server did not start" "$logs/real.err"
    return
  fi
  if [ "$rust_built" = 0 ]; then
    skip "(b) Rust client and CLI" "the Rust side did not build"
    return
  fi
  local client="$bin/examples/client" cli="$bin/pi-protocol"
  if help_mentions "$client" "--unix"; then
    timeout 60 "$client" --unix "$real_socket" --server-id "$SERVER_ID" >"$logs/rust-client.log" 2>&1 \
      && pass "(b) examples/client against the real pi-server" \
      || fail "(b) examples/client against the real pi-server" "$logs/rust-client.log" "$logs/real.err"
  else
    skip "(b) examples/client against the real pi-server" "examples/client has no --unix PATH yet"
  fi

  if "$cli" discover --help >/dev/null 2>&1; then
    if timeout 30 "$cli" discover "$scratch/real" >"$logs/cli-discover.out" 2>"$logs/cli-discover.err" \
      && grep -q "$SERVER_ID" "$logs/cli-discover.out" && [ "$(grep -c . "$logs/cli-discover.out")" = 1 ]; then
      pass "(b) pi-protocol discover finds the real pi-server"
    else
      fail "(b) pi-protocol discover" "$logs/cli-discover.out" "$logs/cli-discover.err"
    fi
  else
    skip "(b) pi-protocol discover" "the CLI has no discover verb yet"
  fi

  if "$cli" call --help >/dev/null 2>&1; then
    local to=(--unix "$real_socket" --server-id "$SERVER_ID") out status
    out="$(timeout 30 "$cli" call "${to[@]}" demo.echo echo '["hi",1,{"n":null}]' 2>"$logs/cli-call.err")" \
      && json_equal "$out" '{"echo":["hi",1,{"n":null}]}' \
      && pass "(b) pi-protocol call demo.echo echo" \
      || fail "(b) pi-protocol call demo.echo echo (printed: $out)" "$logs/cli-call.err"
    out="$(timeout 30 "$cli" call "${to[@]}" --session session-2 demo.session ping '[]' 2>"$logs/cli-session.err")" \
      && json_equal "$out" '{"ok":true}' \
      && pass "(b) pi-protocol call --session session-2 (attach, then a Session call)" \
      || fail "(b) pi-protocol call --session session-2 (printed: $out)" "$logs/cli-session.err"
    status=0
    timeout 30 "$cli" call "${to[@]}" demo.nope echo >"$logs/cli-error.out" 2>"$logs/cli-error.err" || status=$?
    [ "$status" = 1 ] && grep -q "service_not_allowed" "$logs/cli-error.err" \
      && pass "(b) pi-protocol call: a server error is its code on stderr, exit status 1" \
      || fail "(b) pi-protocol call demo.nope: expected exit 1 and service_not_allowed, got $status" "$logs/cli-error.out" "$logs/cli-error.err"
    status=0
    timeout 30 "$cli" call --unix "$real_socket" --server-id 9f0e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f demo.echo echo \
      >"$logs/cli-wrong.out" 2>"$logs/cli-wrong.err" || status=$?
    [ "$status" = 2 ] \
      && pass "(b) pi-protocol call: a hello naming another serverId is a connection error, exit status 2" \
      || fail "(b) pi-protocol call with the wrong --server-id: expected exit 2, got $status" "$logs/cli-wrong.out" "$logs/cli-wrong.err"
    status=0
    timeout 30 "$cli" call "${to[@]}" --session session-9 demo.session ping >"$logs/cli-nosession.out" 2>"$logs/cli-nosession.err" || status=$?
    [ "$status" = 1 ] && grep -q "session_not_found" "$logs/cli-nosession.err" \
      && pass "(b) pi-protocol call --session session-9: session_not_found, exit status 1" \
      || fail "(b) pi-protocol call --session session-9: expected exit 1 and session_not_found, got $status" "$logs/cli-nosession.out" "$logs/cli-nosession.err"
  else
    skip "(b) pi-protocol call" "the CLI has no call verb yet"
  fi

  if "$cli" catalogue --help >/dev/null 2>&1; then
    timeout 30 "$cli" catalogue --unix "$real_socket" --server-id "$SERVER_ID" >"$logs/cli-catalogue.out" 2>"$logs/cli-catalogue.err" \
      && grep -q demo.counter "$logs/cli-catalogue.out" && grep -q demo.echo "$logs/cli-catalogue.out" && grep -q demo.slow "$logs/cli-catalogue.out" \
      && pass "(b) pi-protocol catalogue lists the demo services" \
      || fail "(b) pi-protocol catalogue" "$logs/cli-catalogue.out" "$logs/cli-catalogue.err"
  else
    skip "(b) pi-protocol catalogue" "the CLI has no catalogue verb yet"
  fi

  if "$cli" subscribe --help >/dev/null 2>&1 && "$cli" call --help >/dev/null 2>&1; then
    # Subscribe in the background, bump with distinctive amounts, and look for them in what it printed.
    "$cli" subscribe --unix "$real_socket" --server-id "$SERVER_ID" demo.counter >"$logs/cli-subscribe.out" 2>"$logs/cli-subscribe.err" &
    local sub_pid=$! _
    pids+=("$sub_pid")
    for _ in $(seq 1 100); do [ -s "$logs/cli-subscribe.out" ] && break; sleep 0.1; done
    timeout 30 "$cli" call --unix "$real_socket" --server-id "$SERVER_ID" demo.counter bump '[101]' >/dev/null 2>>"$logs/cli-subscribe.err" || true
    timeout 30 "$cli" call --unix "$real_socket" --server-id "$SERVER_ID" demo.counter bump '[202]' >/dev/null 2>>"$logs/cli-subscribe.err" || true
    for _ in $(seq 1 50); do grep -q '+202' "$logs/cli-subscribe.out" && break; sleep 0.1; done
    kill "$sub_pid" 2>/dev/null || true
    wait "$sub_pid" 2>/dev/null || true
    grep -q '+101' "$logs/cli-subscribe.out" && grep -q '+202' "$logs/cli-subscribe.out" \
      && pass "(b) pi-protocol subscribe demo.counter shows two bumps" \
      || fail "(b) pi-protocol subscribe demo.counter" "$logs/cli-subscribe.out" "$logs/cli-subscribe.err"
  else
    skip "(b) pi-protocol subscribe" "the CLI has no subscribe verb yet"
  fi
}

# two_clients NAME DIR: two real pi-clients at once on the server(s) in DIR, each attaching its
# own Session and subscribing to the shared counter.
two_clients() {
  local name="$1" dir="$2" one two status=0
  timeout 60 "$node" "$here/real-client.mjs" --dir "$dir" --name "$name-1" --session session-1 --bumps 5,7 --shared-counter \
    >"$logs/$name-1.log" 2>&1 &
  one=$!
  timeout 60 "$node" "$here/real-client.mjs" --dir "$dir" --name "$name-2" --session session-2 --bumps 11,13 --shared-counter \
    >"$logs/$name-2.log" 2>&1 &
  two=$!
  wait "$one" || status=1
  wait "$two" || status=1
  return "$status"
}

# (d) two real pi-clients through the Rust router to the real server.
part_d() {
  echo "== realpeer (d): two real pi-clients at once"
  if [ "$real_ok" = 0 ]; then
    fail "(d): the real server did not start" "$logs/real.err"
    return
  fi
  two_clients direct "$scratch/real" \
    && pass "(d) two real pi-clients at once, straight to the real pi-server (the script itself)" \
    || fail "(d) two real pi-clients straight to the real pi-server" "$logs/direct-1.log" "$logs/direct-2.log"
  local router="$bin/examples/router" upstream=()
  if [ "$rust_built" = 0 ] || ! help_mentions "$router" "--unix"; then
    skip "(d) two real pi-clients through examples/router" "examples/router has no --unix yet (or did not build)"
    return
  fi
  # How the router names a Unix upstream: --upstream-unix PATH, --upstream unix:PATH, or
  # --upstream taking a PATH as well as an ADDR.
  local upstream_help
  upstream_help="$("$router" --help 2>&1 | grep -e '--upstream' || true)"
  if grep -q -e '--upstream-unix' <<<"$upstream_help"; then
    upstream=(--upstream-unix "$real_socket")
  elif grep -q 'unix:' <<<"$upstream_help"; then
    upstream=(--upstream "unix:$real_socket")
  elif grep -q 'PATH' <<<"$upstream_help"; then
    upstream=(--upstream "$real_socket")
  else
    skip "(d) two real pi-clients through examples/router" "examples/router --help names no Unix upstream form run.sh knows (--upstream-unix PATH, --upstream unix:PATH or --upstream PATH)"
    return
  fi
  # --unix DIR (listen on DIR/<serverId>.sock) or --unix PATH (that socket itself).
  local listen="$scratch/router" unix_help
  unix_help="$("$router" --help 2>&1 | grep -e '--unix' || true)"
  if grep -q 'PATH' <<<"$unix_help"; then
    listen="$scratch/router/$SERVER_ID.sock"
  fi
  launch router "$router" --unix "$listen" "${upstream[@]}" --quiet
  wait_listening router || return 0
  two_clients routed "$scratch/router" \
    && pass "(d) two real pi-clients at once through examples/router to the real pi-server" \
    || fail "(d) two real pi-clients through examples/router" "$logs/routed-1.log" "$logs/routed-2.log" "$logs/router.err"
}

part_c
part_a
part_b
part_d

echo "realpeer: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
