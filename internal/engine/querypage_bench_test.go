package engine

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

// pageBenchItems is the size of BenchmarkQueryPages' container.
const pageBenchItems = 20000

// pageBenchN is item i's n: a pseudo-random number in [0, 1000), so that
// the items matching a range of n are spread over creation order and over
// the partitions.
func pageBenchN(i int) int {
	x := uint64(i) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return int((x ^ (x >> 31)) % 1000)
}

// pageBenchEngine returns an engine whose container "q" holds
// pageBenchItems items of about 500 B over parts physical partitions
// (created with the container, each its own keyspace), in 1,000 logical
// partitions of 20 items: {"id":"i<i>","pk":"k<i%1000>","n":pageBenchN(i),"pad":…}.
// Its keyspaces are compacted.
func pageBenchEngine(b *testing.B, parts int) *Engine {
	return pageBenchEngineOf(b, parts, func(i int, pk, pad string) []byte {
		return fmt.Appendf(nil, `{"id":"i%d","pk":%q,"n":%d,"pad":%q}`, i, pk, pageBenchN(i), pad)
	})
}

// pageBenchEngineOf is pageBenchEngine whose item i in logical partition
// pk is body(i, pk, pad).
func pageBenchEngineOf(b *testing.B, parts int, body func(i int, pk, pad string) []byte) *Engine {
	// The server's default block cache (--cache-mb 256). NB: the store's
	// own default, 64 MiB, is all reserved by Pebble for its two 32 MiB
	// memtables once a flush happened, leaving no block cache at all.
	e := benchEngineOn(b, store.Options{CacheBytes: 256 << 20}, "q", parts*6000)
	ctx := context.Background()
	pad := strings.Repeat("x", 440)
	for k := range 1000 {
		pk := fmt.Sprintf("k%d", k)
		var ops []BatchOp
		for i := k; i < pageBenchItems; i += 1000 {
			ops = append(ops, BatchOp{Type: "Create", Body: body(i, pk, pad)})
		}
		resp, err := e.ExecuteBatch(ctx, "db", "q", document.PartitionKey{{Kind: document.String, String: pk}}, ops)
		if err != nil || !resp.OK {
			b.Fatalf("batch %d: %v %+v", k, err, resp)
		}
	}
	c, _ := e.container("db", "q")
	if c.Map().Len() != parts {
		b.Fatalf("%d partitions, want %d", c.Map().Len(), parts)
	}
	for _, ks := range c.Keyspaces() {
		if err := e.host.Compact(ctx, ks); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

// BenchmarkQueryPages measures what a query costs per row it returns, and
// whether a page's cost depends on how far into the result it lies (issue
// #15): the whole result is drained page by page, and ns/row, the index
// and order entries read per row (entries/row) and the documents loaded
// per row (loaded/row) are reported, with the mean time of the first page
// (page1-ns) and of the pages of the result's last quarter (pageN-ns);
// cpu-ns/row is the process's CPU time per row (see cpuTime).
//
//   - filter: SELECT * FROM c WHERE c.n >= 500, cross-partition: 10,000 of
//     the 20,000 items, 500 distinct values of c.n, in pages of 100 and of
//     1,000, over 1, 4 and 16 physical partitions;
//
//   - in: SELECT * FROM c WHERE c.n IN (5 values): about 100 items;
//
//   - single: SELECT * FROM c WHERE c.pk = @v, routed to one logical
//     partition: 20 rows of the 20,000;
//
//   - group: SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.n, 1,000 groups in
//     pages of 100, with the evaluation kept for the next pages (memo=true)
//     and evaluated for every page (memo=false).
//
//     go test -run=NONE -bench=BenchmarkQueryPages -count=6 ./internal/engine
func BenchmarkQueryPages(b *testing.B) {
	want := 0
	for i := range pageBenchItems {
		if pageBenchN(i) >= 500 {
			want++
		}
	}
	for _, parts := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			e := pageBenchEngine(b, parts)
			for _, page := range []int{100, 1000} {
				b.Run(fmt.Sprintf("filter/page=%d", page), func(b *testing.B) {
					q := Query{Text: "SELECT * FROM c WHERE c.n >= 500", EnableCrossPartition: true, MaxItems: page}
					drainPages(b, e, q, want, nil)
				})
			}
			if parts != 4 {
				return
			}
			b.Run("in/page=100", func(b *testing.B) {
				q := Query{Text: "SELECT * FROM c WHERE c.n IN (1, 100, 200, 300, 999)", EnableCrossPartition: true, MaxItems: 100}
				drainPages(b, e, q, -1, nil)
			})
			// GROUP BY, evaluated whole: its pages after the first cut
			// from the first page's rows (queryMemo), or each evaluated
			// over the 20,000 items again.
			for _, memo := range []bool{true, false} {
				b.Run(fmt.Sprintf("group/page=100/memo=%v", memo), func(b *testing.B) {
					budget := e.memo.budget
					if !memo {
						e.memo.budget = -1
					}
					defer func() { e.memo.budget = budget }()
					q := Query{Text: "SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.n", EnableCrossPartition: true, Whole: true, MaxItems: 100}
					// Each drain starts with nothing kept: its first page
					// evaluates.
					drainPages(b, e, q, 1000, func() { e.memo = queryMemo{budget: e.memo.budget} })
				})
			}
			b.Run("single", func(b *testing.B) {
				rows := 0
				i := 0
				cpu0 := cpuTime()
				for b.Loop() {
					q := Query{Text: "SELECT * FROM c WHERE c.pk = @v", Params: jsonParam(fmt.Sprintf("k%d", i%1000)), MaxItems: 100}
					p, err := e.QueryItems(context.Background(), "db", "q", Scope{}, q)
					if err != nil || p.Continuation != "" {
						b.Fatalf("query: %v, continuation %q", err, p.Continuation)
					}
					rows += len(p.Items)
					i++
				}
				if rows != 20*b.N {
					b.Fatalf("%d rows, want %d", rows, 20*b.N)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(rows), "cpu-ns/row")
			})
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used: on a
// shared machine it varies less with other processes' load than the
// elapsed time does. It includes the store's background work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// drainPages runs q to its end for every op and reports its per-row and
// per-page metrics; want (unless negative) is the rows it must return.
// before, unless nil, runs before each drain.
func drainPages(b *testing.B, e *Engine, q Query, want int, before func()) {
	b.Helper()
	rows, entries, loaded, ops := 0, 0, 0, 0
	var first, last time.Duration
	firstN, lastN := 0, 0
	cpu0 := cpuTime()
	for b.Loop() {
		if before != nil {
			before()
		}
		q := q
		var pages []time.Duration
		got := 0
		for {
			t0 := time.Now()
			p, err := e.QueryItems(context.Background(), "db", "q", Scope{}, q)
			if err != nil {
				b.Fatal(err)
			}
			pages = append(pages, time.Since(t0))
			got += len(p.Items)
			entries += p.Metrics.Entries
			loaded += p.Loaded
			if q.Continuation = p.Continuation; q.Continuation == "" {
				break
			}
		}
		if want >= 0 && got != want {
			b.Fatalf("%d rows, want %d", got, want)
		}
		rows += got
		ops++
		first += pages[0]
		firstN++
		// The last page may be partial: the quarter before it.
		if n := len(pages) - 1; n >= 4 {
			for _, d := range pages[n-n/4 : n] {
				last += d
				lastN++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(rows), "cpu-ns/row")
	b.ReportMetric(float64(entries)/float64(rows), "entries/row")
	b.ReportMetric(float64(loaded)/float64(rows), "loaded/row")
	b.ReportMetric(float64(first.Nanoseconds())/float64(firstN), "page1-ns")
	if lastN > 0 {
		b.ReportMetric(float64(last.Nanoseconds())/float64(lastN), "pageN-ns")
	}
}
