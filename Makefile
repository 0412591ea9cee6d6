# Partita — make targets. `make run` starts a server, `make test` runs every test.
GO        ?= go
BIN       ?= bin/partita
FUZZTIME  ?= 60s
# The tests of the Go SDK's emulator suite that must pass (-run pattern): all of them.
CONFORMANCE ?= .

# The Python SDK test needs Debian's python3-azure-cosmos, which installs for
# the system interpreter (a pyenv or virtualenv python3 does not see it).
PYTHON    ?= $(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3)

# Power-loss cycles of make powerloss (seeded by the clock unless POWERLOSS_SEED is set).
POWERLOSS_CYCLES ?= 1000

# Test files the Node suites run at once (each starts its own server, or
# three cluster members): most of a file's time is spent waiting on them,
# so two at a time take about 0.6-0.8 of the time one at a time does, even
# on two cores.
NODE_TEST_CONCURRENCY ?= 2

# The container image's tag (make image).
IMAGE     ?= localhost/partita:dev

.PHONY: image run build test test-go test-node test-node-cluster test-python test-python-cluster invariants lint conformance conformance-cluster fuzz crashloop clusterloop clusterloop-netns bench bench-floor powerloss diskfull sim querydiff model clean

run:
	$(GO) run ./cmd/partita serve

build:
	$(GO) build -o $(BIN) ./cmd/partita

# Every suite runs even when an earlier one fails; the target fails at the
# end if any did, after a summary naming them.
test:
	@failed=""; \
	$(MAKE) --no-print-directory test-go || failed="$$failed test-go"; \
	$(MAKE) --no-print-directory test-node || failed="$$failed test-node"; \
	$(MAKE) --no-print-directory test-python || failed="$$failed test-python"; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed"; exit 1; fi; \
	echo "make test: every suite passed"

# -tags invariants: every engine an engine test opens is checked when the
# test ends (make invariants runs those tests alone). -timeout 25m: the
# real-process tests of cmd/partita passed go test's default 10 minutes on
# a machine loaded by other work.
test-go:
	$(GO) test -race -shuffle=on -tags invariants -timeout 25m ./...

test-node: build
	cd test/node && { [ -d node_modules ] || npm ci --no-audit --no-fund; }
	cd test/node && PARTITA_BIN=$(CURDIR)/$(BIN) node --test --test-concurrency=$(NODE_TEST_CONCURRENCY)

# The Node suite against node 1 of a three-node cluster on loopback
# (test/node/server.mjs starts the cluster per test file; docs/cluster.md).
test-node-cluster: build
	cd test/node && { [ -d node_modules ] || npm ci --no-audit --no-fund; }
	cd test/node && PARTITA_CLUSTER=1 PARTITA_BIN=$(CURDIR)/$(BIN) node --test --test-concurrency=$(NODE_TEST_CONCURRENCY)

# Fails, naming the package to install, when python3-azure-cosmos is missing.
test-python: build
	PARTITA_BIN=$(CURDIR)/$(BIN) $(PYTHON) test/python/test_sdk.py

# The Python SDK test against node 1 of a three-node cluster on loopback
# (test/python/test_sdk.py starts the cluster; docs/cluster.md).
test-python-cluster: build
	PARTITA_CLUSTER=1 PARTITA_BIN=$(CURDIR)/$(BIN) $(PYTHON) test/python/test_sdk.py

# The engine's tests alone with its invariants checked (make test checks
# them too): every engine a test opens is checked (engine.Check) when the
# test ends.
invariants:
	$(GO) test -race -tags invariants ./internal/engine/...

lint:
	test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	$(GO) vet ./...
	staticcheck ./...

# Runs the official Go SDK's emulator tests against a fresh server on :8081.
conformance: build
	scripts/conformance.sh '$(CONFORMANCE)'

# The same suite against node 1 of a three-node cluster on loopback
# (docs/cluster.md): writes forwarded to their partitions' leaders.
conformance-cluster: build
	CLUSTER=1 scripts/conformance.sh '$(CONFORMANCE)'

# Long fuzzing, opt-in: one target at a time, FUZZTIME each.
fuzz:
	scripts/fuzz.sh $(FUZZTIME)

# Long kill -9 crash loop (writes, batches, scripts, splits), opt-in:
# CRASH_CYCLES cycles of ~1.5 s of load, each checked after restart.
CRASH_CYCLES ?= 50
crashloop:
	PARTITA_CRASH_CYCLES=$(CRASH_CYCLES) $(GO) test -count=1 -timeout 0 -run 'TestCrashAtomicity' -v ./cmd/partita

# Long kill -9 loop of a three-process cluster, opt-in: CLUSTER_CYCLES
# cycles of load through every node with one node killed and restarted,
# the history checked for linearizability (porcupine); make test runs 2.
# CLUSTER_NODES=4 (or more) runs that many, three replicas per partition.
CLUSTER_CYCLES ?= 30
CLUSTER_NODES ?= 3
clusterloop:
	PARTITA_CLUSTER_CYCLES=$(CLUSTER_CYCLES) PARTITA_CLUSTER_NODES=$(CLUSTER_NODES) $(GO) test -count=1 -timeout 0 -run '^TestClusterKillLoop$$' -v ./cmd/partita

# The same on separate machines' addresses, rehearsed on one: each member
# in a network namespace of its own (its own address, the same ports as the
# others), and a third of the cycles cut a member off from its peers while
# clients still reach it; TestClusterBinary runs so too, and
# TestClusterBrokenLink (one link down: writes relayed). Needs root.
clusterloop-netns:
	PARTITA_CLUSTER_NETNS=1 PARTITA_CLUSTER_CYCLES=$(CLUSTER_CYCLES) PARTITA_CLUSTER_NODES=$(CLUSTER_NODES) $(GO) test -count=1 -timeout 0 -run '^(TestClusterKillLoop|TestClusterBinary|TestClusterBrokenLink)$$' -v ./cmd/partita

# Long power-loss simulation, opt-in: the engine on Pebble's crash-simulating
# filesystem, POWERLOSS_CYCLES crash clones; make test runs a few.
powerloss:
	POWERLOSS_CYCLES=$(POWERLOSS_CYCLES) POWERLOSS_SEED=$(POWERLOSS_SEED) $(GO) test -run '^TestPowerLoss$$' -count=1 -timeout 0 -v ./internal/engine

# Long deterministic simulation of Raft replication, opt-in: SIM_RUNS seeds
# of SIM_STEPS steps each (make test runs a few); SIM_SEED=<seed> replays one.
SIM_RUNS  ?= 200
SIM_STEPS ?= 5000
sim:
	SIM_RUNS=$(SIM_RUNS) SIM_STEPS=$(SIM_STEPS) SIM_SEED=$(SIM_SEED) $(GO) test -run '^TestSimulation$$' -count=1 -timeout 0 -v ./internal/replication

# Long randomized differential test of the query engine (index vs scan,
# paging, layouts, scopes), opt-in: QUERYDIFF_SEEDS seeds from QUERYDIFF_SEED
# of QUERYDIFF_N queries each (make test runs 200 of seed 1); a failure
# prints the seed that replays it.
QUERYDIFF_SEED  ?= 1
QUERYDIFF_SEEDS ?= 50
QUERYDIFF_N     ?= 1000
querydiff:
	QUERYDIFF_SEED=$(QUERYDIFF_SEED) QUERYDIFF_SEEDS=$(QUERYDIFF_SEEDS) QUERYDIFF_N=$(QUERYDIFF_N) $(GO) test -run '^TestQueryDifferential$$' -count=1 -timeout 0 -v ./internal/engine

# Long model-based test of the engine's item semantics, opt-in: MODEL_SEEDS
# seeds from MODEL_SEED of MODEL_STEPS operations each (make test runs 150 of
# seed 1); a failure prints its seed, and MODEL_MIN=1 shrinks it.
MODEL_SEED  ?= 1
MODEL_SEEDS ?= 100
MODEL_STEPS ?= 500
model:
	MODEL_SEED=$(MODEL_SEED) MODEL_SEEDS=$(MODEL_SEEDS) MODEL_STEPS=$(MODEL_STEPS) MODEL_MIN=1 $(GO) test -tags invariants -run '^TestModelRandom$$' -count=1 -timeout 0 -v ./internal/engine

# A real full disk, opt-in and root only: mounts a 256 MiB tmpfs at
# DISKFULL_DIR, fills it under the built binary, unmounts it.
DISKFULL_DIR ?= /tmp/partita-diskfull
diskfull:
	mkdir -p $(DISKFULL_DIR)
	mount -t tmpfs -o size=256m partita-diskfull $(DISKFULL_DIR)
	PARTITA_DISKFULL_DIR=$(DISKFULL_DIR) $(GO) test -run '^TestDiskFull(RealFilesystem|ClusterMember)$$' -count=1 -v ./cmd/partita; \
		rc=$$?; umount $(DISKFULL_DIR); exit $$rc

bench:
	$(GO) test -run=NONE -bench=. -benchmem ./internal/store ./internal/engine ./internal/api ./internal/partition ./internal/document

# The issue #15 operations against Partita and the floor server (a null
# server on the same stack), 5 runs each; long. Compare the two with
# benchstat -col /server bench-floor-point.txt (golang.org/x/perf/cmd/benchstat).
bench-floor:
	$(GO) test -run=NONE -bench=PointOps -benchtime=5000x -count=5 -timeout 0 ./internal/bench | tee bench-floor-point.txt
	$(GO) test -run=NONE -bench=Queries -benchtime=20x -count=5 -timeout 0 ./internal/bench | tee bench-floor-queries.txt

# The container image (Containerfile): the static binary FROM scratch, built
# with buildah and checked without running a container (scripts/image.sh).
image:
	scripts/image.sh $(IMAGE)

clean:
	rm -rf bin build
