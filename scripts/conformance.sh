#!/usr/bin/env bash
# Starts bin/partita on https://localhost:8081/ (the address the Go SDK's emulator tests
# hard-code) with a fresh data directory and the emulator-compatibility settings, runs
# scripts/azcosmos-suite.sh (the SDK's emulator tests) with the given test pattern, stops the server, and
# fails unless every selected test passed.
set -euo pipefail
cd "$(dirname "$0")/.."
pattern=${1:-.}
suite=${SUITE:-scripts/azcosmos-suite.sh}
data=$(mktemp -d)
log=$data/server.log
# CLUSTER=1: the suite runs against node 1 of a three-node cluster (docs/cluster.md) on
# loopback, its other members on ports 18082/18083 and cluster ports 17001-17006.
pids=()
if [ -n "${CLUSTER:-}" ]; then
  export PARTITA_CLUSTER_SECRET=conformance-cluster-secret
  join=127.0.0.1:17001,127.0.0.1:17003,127.0.0.1:17005
  for n in 2 3; do
    ./bin/partita serve --data "$data/n$n" --emulator-compat --addr 127.0.0.1:1808$n \
      --cluster-addr 127.0.0.1:$((17001 + 2 * (n - 1))) --join $join --log-level error >"$data/n$n.log" 2>&1 &
    pids+=($!)
  done
  cluster=(--cluster-addr 127.0.0.1:17001 --join $join --log-level error)
fi
./bin/partita serve --data "$data/db" --emulator-compat --advertise-endpoint https://127.0.0.1:8081/ --compute-gateway-addr 127.0.0.1:8903 ${cluster[@]+"${cluster[@]}"} >"$log" 2>&1 &
pid=$!
pids+=($pid)
trap 'kill ${pids[*]} 2>/dev/null; wait ${pids[*]} 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 600); do
  grep -q "is serving" "$log" && break
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
# The AAD tests verify TLS: trust the server's generated certificate.
export SSL_CERT_FILE=$data/db/tls/cert.pem
out=$(bash "$suite" "$pattern")
echo "$out"
summary=$(echo "$out" | sed -n 's/^azcosmos emulator suite: \(.*\)$/\1/p')
echo "conformance: ${summary:-0 passed, 1 failed}"
echo "$summary" | grep -q '^[0-9]* passed, 0 failed' || { echo "conformance: some selected tests failed" >&2; tail -50 "$log" >&2; exit 1; }
