#!/usr/bin/env bash
# Installs the oracle of pi-chord's tests/oracle_wire.rs: the pinned @earendil-works/chord
# (package.json beside this script) and oracle.mjs, into <repo>/target/chord-oracle (or the
# directory given as the first argument, which the test then finds through PI_CHORD_ORACLE_DIR).
# Needs npm and the npm registry; running the oracle needs node >= 22.19 (Chord's engines).
# Usage: pi-chord/tests/oracle-wire/install.sh [DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
dir="${1:-$root/target/chord-oracle}"
mkdir -p "$dir"
if [ ! -f "$dir/node_modules/@earendil-works/chord/package.json" ] || ! cmp -s "$here/package.json" "$dir/package.json"; then
  cp "$here/package.json" "$dir/package.json"
  (cd "$dir" && npm install --silent --no-audit --no-fund --ignore-scripts --no-package-lock >/dev/null)
fi
cp "$here/oracle.mjs" "$dir/oracle.mjs"
echo "chord oracle installed in $dir"
