package store

import (
	"fmt"
	"strings"
	"testing"
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
