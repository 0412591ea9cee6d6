package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func item1KB(i int) []byte {
	return []byte(fmt.Sprintf(`{"id":"%d","pk":"p%d","payload":"%s"}`, i, i%100, strings.Repeat("x", 960)))
}

func benchStore(b *testing.B, sync bool) *Store {
	return benchStoreWith(b, Options{Sync: sync})
}

func benchStoreWith(b *testing.B, opts Options) *Store {
	opts.Dir = b.TempDir()
	s, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func key(i int) []byte {
	return fmt.Appendf([]byte{0x02}, "%016x/%d", uint64(i)*0x9E3779B97F4A7C15, i)
}

// BenchmarkStoreGet1KB is a point read of a 1 KB item at the storage layer.
func BenchmarkStoreGet1KB(b *testing.B) {
	s := benchStore(b, false)
	const n = 10000
	bt := s.NewBatch()
	for i := range n {
		bt.Set(key(i), item1KB(i))
	}
	if err := bt.Commit(); err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = key(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Get(keys[i%n]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkStoreSet1KB is a single-item write batch of 1 KB, synced to the
// WAL (durability=sync) or not (relaxed); floor=on checks the free-space
// floor (128 MiB, the default) before each commit, as the server does.
func BenchmarkStoreSet1KB(b *testing.B) {
	for _, bc := range []struct {
		sync, floor bool
	}{{true, false}, {false, false}, {false, true}} {
		name := fmt.Sprintf("sync=%v", bc.sync)
		if bc.floor {
			name += "/floor=on"
		}
		b.Run(name, func(b *testing.B) {
			opts := Options{Sync: bc.sync}
			if bc.floor {
				opts.MinFreeBytes = 128 << 20
			}
			s := benchStoreWith(b, opts)
			v := item1KB(0)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				bt := s.NewBatch()
				bt.Set(key(i), v)
				if err := bt.Commit(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkStoreYCSBUpdates is the least any document store on this store
// can do for partita bench's synced upsert load (issue #15): 20,000 records
// of about 1 KB of random letters, then 16 writers each replacing a
// uniformly chosen record, synced, with a 256 MiB block cache as partita
// serve has. op=set writes the new version alone (one key, no index, no
// change feed); op=get-set reads the old version first, as any store that
// keeps an index or system properties must. cpu-ns/op is the process's
// CPU per update, flushes and compactions included: compare it with
// engine.BenchmarkYCSBUpdates in the same run.
//
//	go test -run NONE -bench BenchmarkStoreYCSBUpdates -benchtime 40000x ./internal/store
func BenchmarkStoreYCSBUpdates(b *testing.B) {
	const records, writers = 20000, 16
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	body := func(r *rand.Rand, i int) []byte {
		filler := make([]byte, 900)
		for j := range filler {
			filler[j] = letters[r.IntN(len(letters))]
		}
		return fmt.Appendf(nil, `{"data":"%s","grp":%d,"id":"user%d","n":%d,"pk":"user%d","v":%d}`, filler, i%100, i, i, i, r.IntN(1000000))
	}
	for _, read := range []bool{false, true} {
		name := "op=set"
		if read {
			name = "op=get-set"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStoreWith(b, Options{Sync: true, CacheBytes: 256 << 20})
			run := func(n int, pick func(r *rand.Rand, i int) int) {
				var next atomic.Int64
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(w), 7))
						for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
							k := pick(r, i)
							if read {
								if _, err := s.Get(key(k)); err != nil && !errors.Is(err, ErrNotFound) {
									b.Error(err)
									return
								}
							}
							bt := s.NewBatch()
							bt.Set(key(k), body(r, k))
							if err := bt.Commit(); err != nil {
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

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
