package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

// BenchmarkYCSBUpdates is partita bench's synced upsert load at the engine
// layer (issue #15): 20,000 YCSB records ({"data": 1 KB of random
// letters, "grp", "id", "n", "pk" = id, "v"}) on 4 physical partitions,
// then 16 writers each replacing a uniformly chosen record with new
// filler, synced. It reports the process's CPU per update (cpu-ns/op,
// the store's flushes and compactions included: run it long enough, e.g.
// -benchtime 40000x, for them to reach a steady state), by indexing
// policy: every path (the default), or without the 1 KB string's index
// entries (what a bounded index term for long strings could save at
// most).
//
//	go test -run NONE -bench BenchmarkYCSBUpdates -benchtime 40000x -count 4 ./internal/engine
func BenchmarkYCSBUpdates(b *testing.B) {
	policies := []struct{ name, policy string }{
		{"policy=default", ""},
		{"policy=data-excluded", `,"indexingPolicy":{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/data/?"}]}`},
	}
	const records, writers = 20000, 16
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	body := func(r *rand.Rand, i int) []byte {
		filler := make([]byte, 900)
		for j := range filler {
			filler[j] = letters[r.IntN(len(letters))]
		}
		return fmt.Appendf(nil, `{"data":"%s","grp":%d,"id":"user%d","n":%d,"pk":"user%d","v":%d}`, filler, i%100, i, i, i, r.IntN(1000000))
	}
	key := func(i int) document.PartitionKey {
		return document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("user%d", i)}}
	}
	for _, p := range policies {
		b.Run(p.name, func(b *testing.B) {
			e := benchEngineOn(b, store.Options{Sync: true, CacheBytes: 256 << 20}, "seed", 0) // partita serve's default --cache-mb
			if _, err := e.CreateContainer("db", fmt.Appendf(nil, `{"id":"y","partitionKey":{"paths":["/pk"]}%s}`, p.policy), Throughput{Manual: 24000}); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			// run has 16 writers upsert n records, the ith chosen by pick.
			run := func(n int, pick func(r *rand.Rand, i int) int) {
				var next atomicCounter
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(w), 7))
						for i := next.add() - 1; i < n; i = next.add() - 1 {
							k := pick(r, i)
							if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "y", Kind: Upsert, PK: key(k), Body: body(r, k)}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			}
			run(records, func(_ *rand.Rand, i int) int { return i })
			b.ResetTimer()
			cpu0 := cpuTime()
			run(b.N, func(r *rand.Rand, _ int) int { return r.IntN(records) })
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
