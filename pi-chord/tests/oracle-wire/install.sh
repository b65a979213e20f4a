#!/usr/bin/env bash
# Installs the oracle of pi-chord's tests/oracle_wire.rs: the pinned @earendil-works/chord and
# node 22 that pi-chord/tests/oracle/install.sh installs for the Delta tests (one copy serves
# both), plus oracle.mjs beside them, in <target>/chord-oracle (or $PI_CHORD_ORACLE_DIR).
# Usage: pi-chord/tests/oracle-wire/install.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
bash "$here/../oracle/install.sh"
dir="${PI_CHORD_ORACLE_DIR:-${CARGO_TARGET_DIR:-$root/target}/chord-oracle}"
cp "$here/oracle.mjs" "$dir/oracle.mjs"
echo "chord wire oracle: oracle.mjs in $dir"
