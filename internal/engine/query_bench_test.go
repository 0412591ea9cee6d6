package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/store"
)

// Query benchmarks over a large container (issue #3).
//
// The BenchmarkQuery* benchmarks share one dataset, built the first time one
// of them runs and removed by TestMain when the test binary ends (a
// benchmark's b.Cleanup runs after each of its runs, so it cannot keep a
// dataset for the next benchmark). Container "k" of database "db" has
// PARTITA_BENCH_ITEMS items (default 1,000,000) of about 1 KB over 4
// physical partitions (Throughput{Manual: 24000}) and 1000 logical ones,
// loaded with transactional batches of 100 items into a store that does not
// sync its WAL. Item i is
//
//	{"id":"i","pk":"p<(i/100)%1000>","cat":"c<i%1000>","n":i,"payload":"<940 pseudo-random letters>"}
//
// so c.cat has 1000 distinct values (n/1000 items each, spread over the
// partitions) and c.n is unique. The payload is random so that block
// compression does not hide the data's size.
//
// Each benchmark reports, per op: results/op (rows returned), loaded/op
// (documents read from the store: Page.Loaded summed over the op's pages),
// RU/op (Page.RU summed) and items/s (rows returned per second; for COUNT,
// documents counted per second).
//
//	PARTITA_BENCH_ITEMS=1000000 go test -run=NONE -bench=BenchmarkQuery -benchtime=10s -count=3 -timeout=60m ./internal/engine
//
// (-benchtime=10s rather than a count: COUNT and the unindexed ORDER BY take
// 30-50 s an op, so they run once a round, the others hundreds of times.)

// queryBenchItemsEnv names the environment variable holding the number of
// items of the query benchmarks' container.
const queryBenchItemsEnv = "PARTITA_BENCH_ITEMS"

// queryBenchSortItems bounds the container of the ORDER BY variant that
// cannot use the index: it evaluates (loads and sorts) the whole container
// for every page, which takes seconds per page at a million items.
const queryBenchSortItems = 100_000

// queryBench is the query benchmarks' dataset, built lazily by the first
// one that runs and removed by TestMain.
var queryBench queryBenchData

// TestMain runs the package's tests and benchmarks, then removes the query
// benchmarks' dataset if one of them built it.
func TestMain(m *testing.M) {
	code := m.Run()
	queryBench.remove()
	os.Exit(code)
}

// queryBenchData holds the store, the engine and its containers.
type queryBenchData struct {
	once sync.Once
	err  error
	dir  string
	st   *store.Store
	e    *Engine
	n    int // items in container "k"

	smallOnce sync.Once
	smallErr  error
	small     string // container of min(n, queryBenchSortItems) items
	smallN    int
}

// get returns the dataset, building it on first use.
func (d *queryBenchData) get(b *testing.B) *queryBenchData {
	b.Helper()
	if testing.Short() {
		b.Skip("the query benchmarks load a large dataset: skipped with -short")
	}
	d.once.Do(func() { d.err = d.build(b) })
	if d.err != nil {
		b.Fatalf("query benchmark dataset: %v", d.err)
	}
	return d
}

// smallContainer returns the container with min(n, queryBenchSortItems)
// items: "k" itself when it is that small, else one loaded on first use.
func (d *queryBenchData) smallContainer(b *testing.B) (string, int) {
	b.Helper()
	d.smallOnce.Do(func() {
		d.small, d.smallN = "k", d.n
		if d.n <= queryBenchSortItems {
			return
		}
		d.small, d.smallN = "small", queryBenchSortItems
		d.smallErr = d.load(b, d.small, d.smallN)
	})
	if d.smallErr != nil {
		b.Fatalf("query benchmark dataset: %v", d.smallErr)
	}
	return d.small, d.smallN
}

// queryBenchItems returns the number of items of the query benchmarks'
// container: PARTITA_BENCH_ITEMS, default 1,000,000.
func queryBenchItems(b *testing.B) int {
	b.Helper()
	s := os.Getenv(queryBenchItemsEnv)
	if s == "" {
		return 1_000_000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1000 {
		b.Fatalf("%s=%q: want a number of items, at least 1000", queryBenchItemsEnv, s)
	}
	return n
}

func (d *queryBenchData) build(b *testing.B) error {
	d.n = queryBenchItems(b)
	dir, err := os.MkdirTemp("", "partita-querybench-")
	if err != nil {
		return err
	}
	d.dir = dir
	if d.st, err = store.Open(store.Options{Dir: dir, Sync: false, CacheBytes: 256 << 20}); err != nil {
		return err
	}
	// At a million items COUNT reads for about 30 s a page on a busy
	// 2-core machine: the default QueryMaxTime (1 minute) would turn a
	// slower run into a 408 and abort the benchmark.
	cfg := Config{GatewayQueryFull: true, QueryMaxTime: 10 * time.Minute}
	if d.e, err = openOn(b, context.Background(), d.st, cfg, nil, nil); err != nil {
		return err
	}
	if _, err := d.e.CreateDatabase("db", Throughput{}); err != nil {
		return err
	}
	return d.load(b, "k", d.n)
}

// load creates container coll with n items and logs the load rate and the
// store's size.
func (d *queryBenchData) load(b *testing.B, coll string, n int) error {
	body := fmt.Sprintf(`{"id":%q,"partitionKey":{"paths":["/pk"]}}`, coll)
	if _, err := d.e.CreateContainer("db", []byte(body), Throughput{Manual: 24000}); err != nil {
		return err
	}
	ranges, _, _, err := d.e.PKRanges("db", coll)
	if err != nil {
		return err
	}
	if len(ranges) != 4 {
		return fmt.Errorf("container %s has %d physical partitions, want 4", coll, len(ranges))
	}
	start := time.Now()
	// Batch k holds items [100k, 100k+100), all in logical partition
	// p<k%1000>. Workers take batches in turn; the first error stops them.
	batches := (n + MaxBatchOperations - 1) / MaxBatchOperations
	var (
		next   atomic.Int64
		failed atomic.Pointer[error]
		wg     sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for failed.Load() == nil {
				k := int(next.Add(1) - 1)
				if k >= batches {
					return
				}
				if err := d.loadBatch(coll, k, n); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return *err
	}
	took := time.Since(start)
	b.Logf("loaded %d items into %s in %v (%.0f items/s)", n, coll, took.Round(time.Millisecond), float64(n)/took.Seconds())
	settled, err := settle(d.dir, 3*time.Second, 5*time.Minute)
	if err != nil {
		return err
	}
	size, err := dirSize(d.dir)
	if err != nil {
		return err
	}
	b.Logf("compactions settled %v after the load; store %s now %.1f MiB", settled.Round(time.Second), d.dir, float64(size)/(1<<20))
	return nil
}

// settle waits until the files in dir have not changed (names and sizes)
// for quiet, or for at most max, and returns how long it waited: a load
// leaves the store compacting in the background, which would otherwise
// compete with the first benchmarks for the CPU and the disk. (The store
// offers no way to wait for its compactions.)
func settle(dir string, quiet, max time.Duration) (time.Duration, error) {
	start := time.Now()
	last, err := dirState(dir)
	if err != nil {
		return 0, err
	}
	stable := time.Now()
	for time.Since(stable) < quiet && time.Since(start) < max {
		time.Sleep(quiet / 10)
		now, err := dirState(dir)
		if err != nil {
			return 0, err
		}
		if now != last {
			last, stable = now, time.Now()
		}
	}
	return time.Since(start), nil
}

// fileInfo returns the info of a regular file WalkDir visits, or nil for a
// directory or a file deleted since it was listed (the store compacts).
func fileInfo(de fs.DirEntry, err error) (fs.FileInfo, error) {
	if err == nil && !de.IsDir() {
		var fi fs.FileInfo
		if fi, err = de.Info(); err == nil {
			return fi, nil
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return nil, err
}

// dirState describes the files in dir by name and size.
func dirState(dir string) (string, error) {
	var sb strings.Builder
	err := filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		fi, err := fileInfo(de, err)
		if fi == nil || err != nil {
			return err
		}
		fmt.Fprintf(&sb, "%s %d\n", path, fi.Size())
		return nil
	})
	return sb.String(), err
}

// loadBatch creates batch k's items in container coll of n items.
func (d *queryBenchData) loadBatch(coll string, k, n int) error {
	lo, hi := k*MaxBatchOperations, min((k+1)*MaxBatchOperations, n)
	pk := fmt.Sprintf("p%d", k%1000)
	ops := make([]BatchOp, 0, hi-lo)
	for i := lo; i < hi; i++ {
		ops = append(ops, BatchOp{Type: "Create", Body: queryBenchItem(i, pk)})
	}
	resp, err := d.e.ExecuteBatch(context.Background(), "db", coll,
		document.PartitionKey{{Kind: document.String, String: pk}}, ops)
	if err != nil {
		return fmt.Errorf("batch %d: %w", k, err)
	}
	if !resp.OK {
		for _, r := range resp.Results {
			if r.Status >= 300 {
				return fmt.Errorf("batch %d: status %d: %s", k, r.Status, r.Message)
			}
		}
	}
	return nil
}

// queryBenchItem returns item i of logical partition pk: about 1 KB.
func queryBenchItem(i int, pk string) []byte {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	r := rand.New(rand.NewPCG(uint64(i), 0x9e3779b97f4a7c15))
	var payload [940]byte
	for j := range payload {
		payload[j] = letters[r.IntN(len(letters))]
	}
	return fmt.Appendf(nil, `{"id":"%d","pk":%q,"cat":"c%d","n":%d,"payload":"%s"}`, i, pk, i%1000, i, payload[:])
}

func (d *queryBenchData) remove() {
	if d.st != nil {
		d.st.Close()
	}
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
}

func dirSize(dir string) (int64, error) {
	var size int64
	err := filepath.WalkDir(dir, func(_ string, de fs.DirEntry, err error) error {
		fi, err := fileInfo(de, err)
		if fi == nil || err != nil {
			return err
		}
		size += fi.Size()
		return nil
	})
	return size, err
}

// queryTotals sums the pages of queries.
type queryTotals struct {
	pages, results, loaded int
	ru                     float64
	items                  [][]byte // the rows, when kept
}

// run runs q on container coll, following continuations for at most
// maxPages pages (0: all), and adds its pages to t.
func (t *queryTotals) run(b *testing.B, e *Engine, coll string, q Query, maxPages int, keep bool) {
	for page := 0; maxPages == 0 || page < maxPages; page++ {
		p, err := e.QueryItems(context.Background(), "db", coll, Scope{}, q)
		if err != nil {
			b.Fatalf("query %q: %v", q.Text, err)
		}
		t.pages++
		t.results += len(p.Items)
		t.loaded += p.Loaded
		t.ru += p.RU
		if keep {
			t.items = append(t.items, p.Items...)
		}
		if p.Continuation == "" {
			return
		}
		q.Continuation = p.Continuation
	}
}

// report reports t's per-op metrics over b.N ops; items is what items/s
// counts in total.
func (t queryTotals) report(b *testing.B, items int) {
	n := float64(b.N)
	b.ReportMetric(float64(t.results)/n, "results/op")
	b.ReportMetric(float64(t.loaded)/n, "loaded/op")
	b.ReportMetric(t.ru/n, "RU/op")
	b.ReportMetric(float64(items)/b.Elapsed().Seconds(), "items/s")
}

// orderedN returns the n property of rows, failing unless they have it in
// ascending order.
func orderedN(b *testing.B, rows [][]byte) []int {
	b.Helper()
	out := make([]int, len(rows))
	for i, row := range rows {
		var doc struct{ N *int }
		if err := json.Unmarshal(row, &doc); err != nil || doc.N == nil {
			b.Fatalf("row %d = %.80s: no n (%v)", i, row, err)
		}
		out[i] = *doc.N
		if i > 0 && out[i] < out[i-1] {
			b.Fatalf("row %d: n = %d after %d, want ascending", i, out[i], out[i-1])
		}
	}
	return out
}

func jsonParam(v any) exec.Params {
	raw, _ := json.Marshal(v)
	return exec.Params{"@v": raw}
}

// BenchmarkQueryIndexedEquality is an equality filter served by the index:
// SELECT * FROM c WHERE c.cat = @v, about n/1000 matches (1000 at 1M items)
// over all four partitions, read whole (MaxItems -1, continuations
// followed). Each op asks for the next of the 1000 values.
func BenchmarkQueryIndexedEquality(b *testing.B) {
	d := queryBench.get(b)
	q := func(i int) Query {
		return Query{Text: "SELECT * FROM c WHERE c.cat = @v", Params: jsonParam(fmt.Sprintf("c%d", i%1000)),
			EnableCrossPartition: true, MaxItems: -1}
	}
	var check queryTotals
	check.run(b, d.e, "k", q(7), 0, false)
	if want := (d.n - 7 + 999) / 1000; check.results != want || check.loaded != want {
		b.Fatalf("c.cat = 'c7': %d results, %d loaded; want %d of each", check.results, check.loaded, want)
	}
	b.ReportAllocs()
	var t queryTotals
	i := 0
	for b.Loop() {
		t.run(b, d.e, "k", q(i), 0, false)
		i++
	}
	t.report(b, t.results)
}

// BenchmarkQueryIndexedRangeOrderByTop is SELECT TOP 10 * FROM c WHERE
// c.n > @v ORDER BY c.n: the index on c.n yields the ORDER BY order, so the
// query reads 10 documents (loaded/op), not the 1M that match. @v moves
// through the container from op to op.
func BenchmarkQueryIndexedRangeOrderByTop(b *testing.B) {
	d := queryBench.get(b)
	q := func(i int) Query {
		return Query{Text: "SELECT TOP 10 * FROM c WHERE c.n > @v ORDER BY c.n", Params: jsonParam((i * 7919) % (d.n - 20)),
			EnableCrossPartition: true, MaxItems: -1}
	}
	var check queryTotals
	check.run(b, d.e, "k", q(1), 0, true)
	v := 7919 % (d.n - 20)
	if got := orderedN(b, check.items); len(got) != 10 || got[0] != v+1 || got[9] != v+10 || check.loaded > 20 {
		b.Fatalf("TOP 10 of c.n > %d = %v, loaded %d; want %d..%d from at most 20 documents", v, got, check.loaded, v+1, v+10)
	}
	b.ReportAllocs()
	var t queryTotals
	i := 0
	for b.Loop() {
		t.run(b, d.e, "k", q(i), 0, false)
		i++
	}
	t.report(b, t.results)
}

// BenchmarkQueryCrossPartitionCount is SELECT VALUE COUNT(1) FROM c, merged
// across the four partitions by the engine (Config.GatewayQueryFull). It
// reads every document; items/s is documents counted per second.
func BenchmarkQueryCrossPartitionCount(b *testing.B) {
	d := queryBench.get(b)
	q := Query{Text: "SELECT VALUE COUNT(1) FROM c", EnableCrossPartition: true, MaxItems: -1}
	var check queryTotals
	check.run(b, d.e, "k", q, 0, true)
	if len(check.items) != 1 || string(check.items[0]) != strconv.Itoa(d.n) {
		b.Fatalf("COUNT(1) = %q, want [%d]", check.items, d.n)
	}
	b.ReportAllocs()
	var t queryTotals
	for b.Loop() {
		t.run(b, d.e, "k", q, 0, false)
	}
	t.report(b, b.N*d.n)
}

// BenchmarkQueryCrossPartitionOrderByContinuation reads the first 10 pages
// of 100 items of a cross-partition ORDER BY c.n, following continuations:
//   - index: WHERE c.n >= 0 ORDER BY c.n reads the index on c.n in order and
//     resumes each page where the last stopped (about 100 documents a page);
//   - counted: ORDER BY c.n alone: the first page counts the index entries
//     of c.n against the items (every item has an n), then every page reads
//     the index in order as above;
//   - sort: ORDER BY c.n sorted (Query.sorted, as when no index serves it): every page evaluates
//     the whole query, reading and sorting every document (as ORDER BY c.n
//     does when an item lacks n). At a million items that takes seconds per
//     page, so it runs on a container of at most 100,000 items, as does an
//     index run for comparison.
func BenchmarkQueryCrossPartitionOrderByContinuation(b *testing.B) {
	const pages, pageSize = 10, 100
	// The dataset is fetched in the sub-benchmarks: testing drops the log
	// of a benchmark that has sub-benchmarks, and the load is logged.
	d := &queryBench
	bench := func(b *testing.B, coll string, n int, text string, sorted bool) {
		q := Query{Text: text, EnableCrossPartition: true, MaxItems: pageSize, sorted: sorted}
		want := min(n, pages*pageSize)
		var check queryTotals
		check.run(b, d.e, coll, q, pages, true)
		if got := orderedN(b, check.items); len(got) != want || got[0] != 0 || got[len(got)-1] != want-1 {
			b.Fatalf("%q: %d rows from %v to %v, want n = 0..%d", text, len(got), got[0], got[len(got)-1], want-1)
		}
		b.ReportAllocs()
		var t queryTotals
		for b.Loop() {
			t.run(b, d.e, coll, q, pages, false)
		}
		t.report(b, t.results)
	}
	const indexed, counted = "SELECT * FROM c WHERE c.n >= 0 ORDER BY c.n", "SELECT * FROM c ORDER BY c.n"
	n := queryBenchItems(b)
	b.Run(fmt.Sprintf("index/items=%d", n), func(b *testing.B) { bench(b, "k", d.get(b).n, indexed, false) })
	b.Run(fmt.Sprintf("counted/items=%d", n), func(b *testing.B) { bench(b, "k", d.get(b).n, counted, false) })
	small := min(n, queryBenchSortItems)
	if small != n {
		b.Run(fmt.Sprintf("index/items=%d", small), func(b *testing.B) {
			coll, n := d.get(b).smallContainer(b)
			bench(b, coll, n, indexed, false)
		})
	}
	b.Run(fmt.Sprintf("sort/items=%d", small), func(b *testing.B) {
		coll, n := d.get(b).smallContainer(b)
		bench(b, coll, n, counted, true)
	})
}
