#!/usr/bin/env bash
# Runs the official Go SDK's own emulator tests (the emulator_*_test.go files of
# github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos) against whatever
# Cosmos-compatible server listens on https://localhost:8081/, the address those
# tests hard-code. Prints "pass|fail|skip TestName" per top-level test, then
# "azcosmos emulator suite: N passed, N failed, N skipped".
#
#   scripts/azcosmos-suite.sh                  # every emulator test
#   scripts/azcosmos-suite.sh 'TestItemCRUD$'  # a go test -run pattern
#
# Env: AZCOSMOS_VERSION (default v1.5.0, the version go.mod pins);
# SUITE_JSON=FILE keeps the raw `go test -json` output. The AAD tests verify TLS
# with the system roots: point SSL_CERT_FILE at the server's certificate.
# TestItemIdEncodingComputeGW also wants a listener on :8903.
set -euo pipefail
pattern=${1:-.}
version=${AZCOSMOS_VERSION:-v1.5.0}
export GOFLAGS=-mod=mod

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# The module cache is read-only: copy the SDK's source to run its tests.
src=$(cd "$work" && go mod init suite >/dev/null 2>&1 &&
  go mod download -json "github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos@$version" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] || { echo "cannot download azcosmos $version" >&2; exit 2; }
cp -r "$src" "$work/sdk" && chmod -R u+w "$work/sdk"
cd "$work/sdk"

# The emulator tests carry no build tag and skip unless EMULATOR is set.
tests=$(grep -ho '^func Test[A-Za-z0-9_]*' emulator_*_test.go | cut -c6- | grep -E -- "$pattern" | paste -sd'|' -) || true
[ -n "$tests" ] || { echo "no emulator test matches $pattern" >&2; exit 2; }
json=${SUITE_JSON:-$work/suite.json}
EMULATOR=1 go test -count=1 -timeout 20m -json -run "^($tests)\$" . >"$json" 2>&1 || true

# Top-level results: events with a Test name without '/' and a final action.
results=$(grep -o '"Action":"\(pass\|fail\|skip\)","Package":"[^"]*","Test":"[^"/]*"' "$json" |
  sed 's/"Action":"\([a-z]*\)","Package":"[^"]*","Test":"\([^"]*\)"/\1 \2/' | sort -k2 -u) || true
if [ -z "$results" ]; then
  echo "the suite did not run (build failure?):" >&2
  tail -20 "$json" >&2
  exit 2
fi
echo "$results" | awk '{printf "%-5s %s\n", $1, $2}'
# A failed test's own output (its t.Fatal lines), so that a failure explains itself.
for t in $(echo "$results" | awk '$1 == "fail" {print $2}'); do
  echo "--- output of $t:"
  grep -F "\"Test\":\"$t" "$json" | grep '"Action":"output"' |
    sed 's/.*"Output":"\(.*\)"}$/\1/; s/\\n$//; s/\\t/    /g; s/\\"/"/g' | tail -40
done
p=$(echo "$results" | grep -c '^pass ' || true)
f=$(echo "$results" | grep -c '^fail ' || true)
s=$(echo "$results" | grep -c '^skip ' || true)
echo "azcosmos emulator suite: $p passed, $f failed, $s skipped"
