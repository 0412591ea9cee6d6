package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// startServer runs a rate-limited server and writes its certificate to a
// file for Config.CACert.
func startServer(t testing.TB) (*testserver.Server, string) {
	t.Helper()
	return startServerWith(t, nil)
}

// startServerWith starts a rate-limited server on clock now (nil: the real one).
func startServerWith(t testing.TB, now func() time.Time) (*testserver.Server, string) {
	t.Helper()
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.Engine.RateLimit = "on" }, Now: now})
	ca := t.TempDir() + "/ca.pem"
	if err := os.WriteFile(ca, s.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return s, ca
}

func logResult(t *testing.T, r *Result) {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + buf.String())
}

// TestVehiclesScenario is the proof, by budget rather than by speed:
// the same 320 vehicle-reading writes against a container of 4 partitions
// and 2,400 RU/s (600 per partition) on a frozen server clock, so each
// partition admits exactly its one-second bucket of 600 RU and nothing
// refills. Keyed by date (a), every write lands on one partition, which
// admits about a quarter of them and throttles the rest; with a random (b) or
// hash (c) suffix the writes spread over all four, and all 320 fit. How many
// operations per second each reaches is a benchmark's question
// (BenchmarkVehiclesScenario, partita bench), not a test's.
func TestVehiclesScenario(t *testing.T) {
	frozen := time.Now()
	s, ca := startServerWith(t, func() time.Time { return frozen })
	const writes = 320
	res := map[string]*Result{}
	for _, w := range []string{VehiclesDate, VehiclesRandom, VehiclesHash} {
		r, err := Run(t.Context(), Config{Endpoint: s.Endpoint, Key: s.Key, CACert: ca, Workload: w, Reset: true,
			Throughput: 2400, Partitions: 4, Mix: &Mix{Write: 100}, Ops: writes, Concurrency: 8}, nil)
		if err != nil {
			t.Fatalf("Run(%s): %v", w, err)
		}
		logResult(t, r)
		if r.Config.Partitions != 4 || r.Config.Throughput != 2400 {
			t.Fatalf("Run(%s): %d partitions, %d RU/s, want 4 and 2400", w, r.Config.Partitions, r.Config.Throughput)
		}
		st := r.Op(KindWrite)
		if st.Errors != 0 || st.Count != writes {
			t.Errorf("Run(%s): %d writes, %d errors (%s), want %d and 0", w, st.Count, st.Errors, st.ErrorSample, writes)
		}
		res[w] = r
	}
	a := res[VehiclesDate].Op(KindWrite)
	// One partition's 600 RU, plus at most one write per worker that was
	// admitted while the bucket still held a little.
	perWrite := a.RUPerOp
	if most := int64(600/perWrite) + 8; a.OK > most || a.Throttled < writes-most {
		t.Errorf("%s: %d writes served, %d throttled; want at most %d served (600 RU at %.2f RU each)", VehiclesDate, a.OK, a.Throttled, most, perWrite)
	}
	for _, w := range []string{VehiclesRandom, VehiclesHash} {
		x := res[w].Op(KindWrite)
		if x.OK != writes || x.Throttled != 0 {
			t.Errorf("%s: %d of %d writes served, %d throttled; want all served over four partitions' 2,400 RU", w, x.OK, writes, x.Throttled)
		}
	}
}

// TestVehiclesRouting checks how many partitions and requests each vehicles
// workload's reads and queries take: (a) and (c) read a VIN's readings from
// one partition, (b) fans out to all four.
func TestVehiclesRouting(t *testing.T) {
	s, ca := startServer(t)
	for _, tt := range []struct {
		w           string
		parts, reqs float64
	}{
		{VehiclesDate, 1, 1}, {VehiclesRandom, 4, 1}, {VehiclesHash, 1, 1},
	} {
		r, err := Run(t.Context(), Config{Endpoint: s.Endpoint, Key: s.Key, CACert: ca, Workload: tt.w, Reset: true,
			Throughput: 24000, Partitions: 4, Mix: &Mix{Write: 50, Read: 25, Query: 25}, Ops: 120, Concurrency: 4}, nil)
		if err != nil {
			t.Fatalf("Run(%s): %v", tt.w, err)
		}
		logResult(t, r)
		if r.Total.Errors != 0 || r.Total.Throttled != 0 {
			t.Errorf("Run(%s): %d errors, %d throttled, want none", tt.w, r.Total.Errors, r.Total.Throttled)
		}
		for _, k := range []Kind{KindRead, KindQuery} {
			st := r.Op(k)
			if st.OK == 0 || st.PartitionsPerOp != tt.parts || st.RequestsPerOp != tt.reqs {
				t.Errorf("%s %s: %d ok, %.2f partitions/op, %.2f requests/op; want some, %g, %g",
					tt.w, k, st.OK, st.PartitionsPerOp, st.RequestsPerOp, tt.parts, tt.reqs)
			}
		}
		if tt.w == VehiclesHash {
			if q := r.Op(KindQuery); q.RowsPerOp < 1 {
				t.Errorf("%s VIN query returned %.2f rows/op, want at least the reading written", tt.w, q.RowsPerOp)
			}
		}
	}
}

// TestVehiclesRandomKeysFanOut: with FanOutKeys, a random-suffix point read
// or VIN query is one request per bucket, and still finds the reading.
func TestVehiclesRandomKeysFanOut(t *testing.T) {
	s, ca := startServer(t)
	r, err := Run(t.Context(), Config{Endpoint: s.Endpoint, Key: s.Key, CACert: ca, Workload: VehiclesRandom, Create: true,
		FanOut: FanOutKeys, Buckets: 20, Mix: &Mix{Write: 50, Read: 25, Query: 25}, Ops: 60, Concurrency: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, r)
	if r.Total.Count != 60 || r.Total.Errors != 0 || r.Total.Throttled != 0 {
		t.Errorf("count %d, errors %d, 429s %d; want 60, 0, 0", r.Total.Count, r.Total.Errors, r.Total.Throttled)
	}
	for _, k := range []Kind{KindRead, KindQuery} {
		st := r.Op(k)
		if st.OK == 0 || st.RequestsPerOp != 20 || st.PartitionsPerOp != 4 || st.RowsPerOp < 1 {
			t.Errorf("%s: %d ok, %.2f requests/op, %.2f partitions/op, %.2f rows/op; want some, 20, 4, ≥ 1",
				k, st.OK, st.RequestsPerOp, st.PartitionsPerOp, st.RowsPerOp)
		}
	}
}

// TestYCSBAndQuery runs each record workload for a fixed number of
// operations and checks the kinds it ran.
func TestYCSBAndQuery(t *testing.T) {
	s, ca := startServer(t)
	tests := []struct {
		workload string
		kinds    []Kind
	}{
		{YCSBA, []Kind{KindWrite, KindRead}},
		{YCSBB, []Kind{KindWrite, KindRead}},
		{YCSBC, []Kind{KindRead}},
		{Query, []Kind{KindQuery, KindQueryCross}},
	}
	for _, tt := range tests {
		r, err := Run(t.Context(), Config{Endpoint: s.Endpoint, Key: s.Key, CACert: ca, Workload: tt.workload, Create: true,
			Records: 300, Ops: 200, Concurrency: 4}, nil)
		if err != nil {
			t.Fatalf("Run(%s): %v", tt.workload, err)
		}
		logResult(t, r)
		if r.Total.Count != 200 || r.Total.OK != 200 {
			t.Errorf("Run(%s): count %d ok %d, want 200 and 200", tt.workload, r.Total.Count, r.Total.OK)
		}
		var got []Kind
		for k := range numKinds {
			if r.Op(k).Count > 0 {
				got = append(got, k)
			}
		}
		if !slicesEqual(got, tt.kinds) {
			t.Errorf("Run(%s) kinds = %v, want %v", tt.workload, got, tt.kinds)
		}
		if tt.workload == Query {
			if q := r.Op(KindQueryCross); q.PartitionsPerOp != 4 || q.RowsPerOp != 3 {
				t.Errorf("query-cross: %.2f partitions/op, %.2f rows/op; want 4, 3", q.PartitionsPerOp, q.RowsPerOp)
			}
			if q := r.Op(KindQuery); q.PartitionsPerOp != 1 || q.RowsPerOp != 1 {
				t.Errorf("query: %.2f partitions/op, %.2f rows/op; want 1, 1", q.PartitionsPerOp, q.RowsPerOp)
			}
		}
	}
}

func slicesEqual(a, b []Kind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestInterrupted: cancelling the caller's context ends the load early and
// still returns the counts so far; the progress line is written and ended.
func TestInterrupted(t *testing.T) {
	s, ca := startServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(700*time.Millisecond, cancel)
	var progress bytes.Buffer
	r, err := Run(ctx, Config{Endpoint: s.Endpoint, Key: s.Key, CACert: ca, Workload: VehiclesHash, Create: true,
		Duration: time.Minute, Concurrency: 2}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Total.Count == 0 || r.Elapsed > 30 {
		t.Errorf("interrupted %v, %d ops in %.1fs; want true, some, well under a minute", r.Interrupted, r.Total.Count, r.Elapsed)
	}
	if p := progress.String(); !strings.HasPrefix(p, "\r[") || !strings.HasSuffix(p, "\n") || !strings.Contains(p, " ops/s") {
		t.Errorf("progress = %q, want \\r-rewritten lines ending in a newline", p)
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("WriteJSON wrote invalid JSON: %v", err)
	}
	if back.Total.Count != r.Total.Count || back.Config.Workload != VehiclesHash || strings.Contains(buf.String(), s.Key) {
		t.Errorf("JSON round trip: %+v; want the same totals and no key", back.Total)
	}
}

// TestSetupErrors: a missing container without Create, a wrong key and an
// untrusted certificate fail Run before any load.
func TestSetupErrors(t *testing.T) {
	s, ca := startServer(t)
	base := Config{Endpoint: s.Endpoint, Key: s.Key, CACert: ca, Workload: VehiclesDate, Duration: time.Second}
	missing := base
	missing.Container = "nope"
	wrongKey := base
	wrongKey.Key = "QUJD" // "ABC"
	untrusted := base
	untrusted.CACert = ""
	for name, cfg := range map[string]Config{"missing": missing, "wrong key": wrongKey, "untrusted": untrusted} {
		if r, err := Run(t.Context(), cfg, nil); err == nil {
			t.Errorf("Run(%s) = %+v, want an error", name, r.Total)
		}
	}
	insecure := base
	insecure.CACert, insecure.Insecure, insecure.Create, insecure.Ops = "", true, true, 5
	if _, err := Run(t.Context(), insecure, nil); err != nil {
		t.Errorf("Run(insecure) = %v", err)
	}
	bad := base
	bad.Workload = "ycsb-z"
	if _, err := Run(t.Context(), bad, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Run(ycsb-z) = %v, want ErrInvalidConfig", err)
	}
}

// TestIndexingPolicy: a created container gets Config.IndexingPolicy.
func TestIndexingPolicy(t *testing.T) {
	s, ca := startServer(t)
	cfg := Config{Endpoint: s.Endpoint, Key: s.Key, CACert: ca, Workload: YCSBA, Create: true, Records: 20, Ops: 20, Concurrency: 2,
		IndexingPolicy: `{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/data/?"}]}`}
	if _, err := Run(t.Context(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := newClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.NewContainer(cfg.Database, cfg.Container)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := k.Read(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.ContainerProperties.IndexingPolicy
	if p == nil || !slices.ContainsFunc(p.ExcludedPaths, func(e azcosmos.ExcludedPath) bool { return e.Path == "/data/?" }) {
		t.Fatalf("the created container's indexing policy is %+v, want /data/? excluded", p)
	}
}
