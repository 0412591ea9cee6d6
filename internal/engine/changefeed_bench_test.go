package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkChangeFeed reads a container's whole change feed (20,000 items
// of 1 KB over 4 physical partitions), each range in pages of 1,000 as an
// SDK reads it, while a writer keeps upserting (sub-benchmark "writing") or
// not ("idle"). It reports the feed's items/s and, when writing, the
// writes/s that went on meanwhile.
func BenchmarkChangeFeed(b *testing.B) {
	for _, writing := range []bool{false, true} {
		name := "idle"
		if writing {
			name = "writing"
		}
		b.Run(name, func(b *testing.B) {
			e := benchEngine(b, false)
			ctx := context.Background()
			if _, err := e.CreateContainer("db", []byte(`{"id":"cf","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 24000}); err != nil {
				b.Fatal(err)
			}
			const n = 20000
			for i := range n {
				if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "cf", Kind: Upsert, PK: pkOf(i), Body: item1KB(i)}); err != nil {
					b.Fatal(err)
				}
			}
			c, err := e.container("db", "cf")
			if err != nil {
				b.Fatal(err)
			}
			ranges := c.Map().Ranges()
			var writes atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if writing {
				wg.Go(func() {
					for i := n; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "cf", Kind: Upsert, PK: pkOf(i % n), Body: item1KB(i % n)}); err != nil {
							b.Error(err)
							return
						}
						writes.Add(1)
					}
				})
			}
			read := 0
			b.ResetTimer()
			for b.Loop() {
				for _, r := range ranges {
					req := ChangeFeed{Scope: Scope{RangeID: r.ID}, MaxItems: 1000}
					for {
						p, err := e.ReadChanges(ctx, "db", "cf", req)
						if err != nil {
							b.Fatal(err)
						}
						read += len(p.Items)
						if len(p.Items) == 0 || p.Position == req.After {
							break
						}
						req.After, req.HasAfter = p.Position, true
					}
				}
			}
			elapsed := b.Elapsed().Seconds()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(read)/elapsed, "items/s")
			if writing {
				b.ReportMetric(float64(writes.Load())/elapsed, "writes/s")
			}
		})
	}
}
