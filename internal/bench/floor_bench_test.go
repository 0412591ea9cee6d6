package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// benchSides starts, once per benchmark function, Partita with the given
// durabilities (rate limiting off) and the floor server, each with its
// certificate in a file; the result maps "partita-sync", "partita-relaxed"
// and "floor" to a Side.
func benchSides(b *testing.B, durabilities ...string) map[string]Side {
	b.Helper()
	sides := map[string]Side{}
	add := func(name string, s *testserver.Server) {
		ca := b.TempDir() + "/ca.pem"
		if err := os.WriteFile(ca, s.CertPEM, 0o600); err != nil {
			b.Fatal(err)
		}
		sides[name] = Side{Name: name, Endpoint: s.Endpoint, Key: s.Key, CACert: ca}
	}
	for _, d := range durabilities {
		add("partita-"+d, testserver.Start(b, testserver.Options{Configure: func(c *config.Config) { c.Store.Durability = d }}))
	}
	add("floor", testserver.StartFloor(b, testserver.Options{}))
	return sides
}

// runSide prepares cfg against side (setup and preload, outside the
// timer) once, then runs b.N operations with cfg.Concurrency workers in
// each call of the sub-benchmark. ns/op is wall time per operation, the
// inverse of throughput; p50 and p99 are reported in ms.
func runSide(b *testing.B, name string, side Side, cfg Config) {
	cfg.Endpoint, cfg.Key, cfg.CACert = side.Endpoint, side.Key, side.CACert
	cfg.Create = true
	p, err := Prepare(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	b.Run(name, func(b *testing.B) {
		res := p.LoadN(b.Context(), int64(b.N))
		b.StopTimer()
		if res.Total.Errors > 0 {
			b.Fatalf("%d errors: %s", res.Total.Errors, res.Ops[0].ErrorSample)
		}
		b.ReportMetric(res.Total.P50, "p50-ms")
		b.ReportMetric(res.Total.P99, "p99-ms")
		if res.Total.RowsPerOp > 0 {
			b.ReportMetric(res.Total.RowsPerOp, "rows/op")
		}
	})
}

// BenchmarkPointOps runs the issue #15 point operations on 1 KB items
// through the official Go SDK with 16 workers, rate limiting off, against
// Partita (synced and relaxed durability) and the floor server, as
// sub-benchmarks op=<op>/server=<server> whose ns/op (wall time per
// operation: the inverse of throughput) benchstat puts side by side with
// the ratio:
//
//	go test -run=NONE -bench=PointOps -benchtime=5000x -count=5 ./internal/bench | tee point.txt
//	benchstat -col /server point.txt
//
// The floor has no durability: it runs once under each upsert's name.
func BenchmarkPointOps(b *testing.B) {
	sides := benchSides(b, "sync", "relaxed")
	cfg := Config{Workload: YCSBC, Records: 10000, Keys: KeysUniform, Concurrency: 16}
	runSide(b, "op=read/server=partita", sides["partita-sync"], cfg)
	runSide(b, "op=read/server=floor", sides["floor"], cfg)
	cfg.Mix = &Mix{Write: 100}
	for _, d := range []string{"sync", "relaxed"} {
		runSide(b, "op=upsert-"+d+"/server=partita", sides["partita-"+d], cfg)
		runSide(b, "op=upsert-"+d+"/server=floor", sides["floor"], cfg)
	}
}

// BenchmarkQueries runs the issue #15 queries over 20,000 preloaded 1 KB
// items with 16 workers against Partita and the floor server: a
// single-partition query returning the 20 items of one key, and a
// cross-partition filter returning half of the items (10,000) drained in
// pages of 100 and of 1,000; one operation is one whole query.
//
//	go test -run=NONE -bench=Queries -benchtime=20x -count=5 ./internal/bench | tee queries.txt
//	benchstat -col /server queries.txt
func BenchmarkQueries(b *testing.B) {
	sides := benchSides(b, "relaxed") // reads only: durability does not matter
	for _, q := range []struct {
		name     string
		workload string
		pageSize int
	}{
		{"q=pk-20-rows", QueryPK, 0},
		{"q=filter-10k-rows/page=100", QueryFilter, 100},
		{"q=filter-10k-rows/page=1000", QueryFilter, 1000},
	} {
		cfg := Config{Workload: q.workload, Records: 20000, Keys: KeysUniform, Concurrency: 16, PageSize: q.pageSize}
		for _, side := range []string{"partita", "floor"} {
			s := sides["floor"]
			if side == "partita" {
				s = sides["partita-relaxed"]
			}
			runSide(b, fmt.Sprintf("%s/server=%s", q.name, side), s, cfg)
		}
	}
}
