package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

// BenchmarkHotVsSpreadKeys: 8 writers upsert ~1 KB items as fast as they can
// into a 40,000 RU/s container (7 partitions of ~5,700 RU/s) with rate
// limiting on, either all on one partition key or spread over 1,000. It
// reports the request units served per second and the share of requests
// refused with 429: the hot key gets one partition's budget, the spread
// load the container's (or whatever the machine can write).
func BenchmarkHotVsSpreadKeys(b *testing.B) {
	for _, tc := range []struct {
		name     string
		key      func(i int64) string
		adaptive bool
	}{
		{"hot", func(int64) string { return "hot" }, false},
		{"hot-adaptive", func(int64) string { return "hot" }, true},
		{"spread", func(i int64) string { return fmt.Sprintf("k%d", i%1000) }, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st, err := store.Open(store.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			e, err := openOn(b, context.Background(), st, Config{RateLimit: true, AdaptiveCapacity: tc.adaptive}, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
				b.Fatal(err)
			}
			if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 40000}); err != nil {
				b.Fatal(err)
			}
			pad := strings.Repeat("x", 900)
			// Each op is a 3 s window of load; the first second drains the
			// partitions' one-second buckets and is not counted.
			var n, served, throttled atomic.Int64
			var ru atomic.Uint64 // RU × 100
			var counting atomic.Bool
			var total time.Duration
			for range b.N {
				stop := make(chan struct{})
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							i := n.Add(1)
							pk := tc.key(i)
							res, err := e.WriteItem(context.Background(), Write{DB: "db", Container: "k", Kind: Upsert,
								PK: document.PartitionKey{{Kind: document.String, String: pk}}, Body: fmt.Appendf(nil, `{"id":"%d","pk":%q,"pad":%q}`, i%200, pk, pad)})
							switch {
							case err == nil && counting.Load():
								served.Add(1)
								ru.Add(uint64(res.RU * 100))
							case err == nil:
							case code(err) == 429:
								if counting.Load() {
									throttled.Add(1)
								}
								time.Sleep(time.Millisecond) // a client backing off
							default:
								b.Error(err)
								return
							}
						}
					})
				}
				time.Sleep(time.Second)
				counting.Store(true)
				t0 := time.Now()
				time.Sleep(2 * time.Second)
				counting.Store(false)
				total += time.Since(t0)
				close(stop)
				wg.Wait()
			}
			b.ReportMetric(float64(ru.Load())/100/total.Seconds(), "RU/s")
			b.ReportMetric(float64(served.Load())/total.Seconds(), "writes/s")
			b.ReportMetric(float64(throttled.Load())/float64(max(1, served.Load()+throttled.Load())), "429-share")
		})
	}
}

// BenchmarkWritesDuringSplits: 4 writers upsert into a container over 500
// logical partitions while its ranges are split every 50 ms (forced splits
// of the widest range); it reports write latency percentiles, to set
// against BenchmarkEngineUpsert1KB: a split is one catalog write, so
// traffic should not notice.
func BenchmarkWritesDuringSplits(b *testing.B) {
	for _, splitting := range []bool{false, true} {
		b.Run(fmt.Sprintf("splitting=%v", splitting), func(b *testing.B) {
			e := benchEngine(b, false)
			ctx := context.Background()
			pad := strings.Repeat("x", 900)
			stop := make(chan struct{})
			var splits atomic.Int64
			var bg sync.WaitGroup
			if splitting {
				bg.Go(func() {
					t := time.NewTicker(50 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
						}
						c, _ := e.container("db", "k")
						r := c.Map().Ranges()[0]
						for _, x := range c.Map().Ranges() {
							if len(x.Parents) < len(r.Parents) {
								r = x
							}
						}
						if _, err := e.SplitRange(ctx, "db", "k", r.ID); err == nil {
							splits.Add(1)
						}
					}
				})
			}
			var n atomic.Int64
			lat := make([][]time.Duration, 4)
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for {
						i := n.Add(1)
						if i > int64(b.N) {
							return
						}
						pk := fmt.Sprintf("k%d", i%500)
						t0 := time.Now()
						if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert,
							PK: document.PartitionKey{{Kind: document.String, String: pk}}, Body: fmt.Appendf(nil, `{"id":"%d","pk":%q,"pad":%q}`, i%2000, pk, pad)}); err != nil {
							b.Error(err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(stop)
			bg.Wait()
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
			}
			b.ReportMetric(float64(splits.Load()), "splits")
		})
	}
}
