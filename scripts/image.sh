#!/usr/bin/env bash
# Builds the container image (Containerfile) with buildah and checks it
# without running a container (these machines cannot): the image holds the
# static binary just built, byte for byte, with the configuration the
# Containerfile promises; that binary then serves the Data Explorer and its
# certificate, answers its own health check on a loopback port, and passes
# the JavaScript SDK suite (test/node).
# Usage: scripts/image.sh [TAG]   (root, or a user buildah can run for)
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-localhost/partita:dev}
ctx=build/image
rm -rf "$ctx" && mkdir -p "$ctx/data"
# The version partita version prints: the commit, marked when the tree has changes.
version=$(git describe --always --dirty 2>/dev/null || echo dev)
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/partitadb/partita/internal/cli.Version=$version" -o "$ctx/partita" ./cmd/partita
if file "$ctx/partita" 2>/dev/null | grep -q "dynamically linked"; then
  echo "image: $ctx/partita is not static" >&2; exit 1
fi
b="buildah --storage-driver vfs"
$b bud --format docker -f Containerfile -t "$tag" "$ctx"

# The image's configuration.
cfg=$($b inspect --type image "$tag" | tr -d ' \n')
for want in '"User":"65532:65532"' '"8081/tcp"' '"/data"' '"0.0.0.0:8081"' '"Healthcheck"' '_explorer/emulator.pem'; do
  grep -qF "$want" <<<"$cfg" || { echo "image: config lacks $want: $cfg" >&2; exit 1; }
done

# The binary in the image is the one built (and tested) here.
ctr=$($b from "$tag")
trap '$b rm "$ctr" >/dev/null' EXIT
mnt=$($b mount "$ctr")
cmp "$mnt/partita" "$ctx/partita"
[ -d "$mnt/data" ] && [ "$(stat -c %u "$mnt/data")" = 65532 ] || { echo "image: /data missing or not owned by 65532" >&2; exit 1; }
"$mnt/partita" version | grep -qF "$version" || { echo "image: partita version does not print $version" >&2; exit 1; }

# That binary serves: the explorer, its certificate, its health check.
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$mnt/partita" serve --addr "127.0.0.1:$port" --data "$data/d" --ballast-bytes 0 >"$data/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"; $b rm "$ctr" >/dev/null' EXIT
for _ in $(seq 1 100); do
  "$mnt/partita" health --url "https://127.0.0.1:$port/_explorer/emulator.pem" >/dev/null 2>&1 && break
  sleep 0.1
done
"$mnt/partita" health --url "https://127.0.0.1:$port/_explorer/emulator.pem"
"$mnt/partita" health --url "https://127.0.0.1:$port/_explorer/index.html"
# And it passes the JavaScript SDK's suite (test/node), which starts the
# binary it is given, when that suite's packages are installed.
if [ -d test/node/node_modules ] && command -v node >/dev/null; then
  (cd test/node && PARTITA_BIN="$mnt/partita" node --test --test-concurrency="${NODE_TEST_CONCURRENCY:-2}")
else
  echo "image: test/node/node_modules missing: the SDK suite was not run against the image's binary"
fi
echo "image: $tag built and checked"
