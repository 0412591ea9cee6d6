#!/usr/bin/env bash
# Runs every fuzz target for $1 (default 60s) each, one at a time (go test -fuzz runs one
# target per invocation). New crashers land in the package's testdata/fuzz/ to be committed.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-60s}
for pkg in $(go list ./...); do
  for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "== $pkg $f ($t)"
    go test -run=NONE -fuzz="^$f\$" -fuzztime="$t" "$pkg"
  done
done
