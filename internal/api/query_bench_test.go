package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// queryBenchKeys and queryBenchRows are the shape of BenchmarkQueryHandler's
// container, that of `partita bench`'s query-pk and query-filter workloads:
// 20,000 items of about 1 KB, 20 to a partition key.
const (
	queryBenchKeys = 1000
	queryBenchRows = 20
)

// queryBenchHandler returns a handler over an engine whose container
// bench/rows (4 physical partitions) holds the items of the query-pk
// workload: {"data":…,"half":i%2,"id":"user<i>","n":i,"pk":"key<i/20>","v":0},
// keys in alphabetical order as encoding/json writes a map. The store is
// compacted.
func queryBenchHandler(b *testing.B) *Handler {
	b.Helper()
	st, err := store.Open(store.Options{Dir: b.TempDir(), CacheBytes: 256 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctx := context.Background()
	host, err := replica.OpenLocal(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(ctx, host, host.Meta(), engine.Config{}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := eng.CreateDatabase("bench", engine.Throughput{}); err != nil {
		b.Fatal(err)
	}
	if _, err := eng.CreateContainer("bench", []byte(`{"id":"rows","partitionKey":{"paths":["/pk"]}}`), engine.Throughput{Manual: 24000}); err != nil {
		b.Fatal(err)
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	filler := make([]byte, 900)
	for k := range queryBenchKeys {
		pk := fmt.Sprintf("key%07d", k)
		ops := make([]engine.BatchOp, 0, queryBenchRows)
		for i := k * queryBenchRows; i < (k+1)*queryBenchRows; i++ {
			rng := rand.New(rand.NewPCG(uint64(i), 0))
			for j := range filler {
				filler[j] = alphabet[rng.IntN(len(alphabet))]
			}
			body := fmt.Appendf(nil, `{"data":%q,"half":%d,"id":"user%010d","n":%d,"pk":%q,"v":0}`, filler, i%2, i, i, pk)
			ops = append(ops, engine.BatchOp{Type: "Create", Body: body})
		}
		resp, err := eng.ExecuteBatch(ctx, "bench", "rows", document.PartitionKey{{Kind: document.String, String: pk}}, ops)
		if err != nil || !resp.OK {
			b.Fatalf("batch %d: %v %+v", k, err, resp)
		}
	}
	// As after a preload that compactions have settled: the whole store
	// compacted, so that none runs during the benchmark.
	if err := st.Compact(ctx, store.Span{Lower: []byte{0}}); err != nil {
		b.Fatal(err)
	}
	key, _ := auth.DecodeKey(testKey)
	v, err := auth.NewVerifier(auth.Config{MasterKey: key})
	if err != nil {
		b.Fatal(err)
	}
	return New(Config{}, eng, v, nil, nil)
}

// benchWriter is a ResponseWriter that keeps the status, the headers and
// the body's size.
type benchWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(code int)        { w.code = code }
func (w *benchWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// queryRequestFor returns a signed query request for the container of
// queryBenchHandler as the Go SDK (azcosmos v1.5.0) sends it: its headers,
// query metrics asked for, and the body.
func queryRequestFor(b *testing.B, query, param string, value any, pk string, maxItems int, continuation string) *http.Request {
	b.Helper()
	v, _ := json.Marshal(value)
	body := fmt.Sprintf(`{"query":%q,"parameters":[{"name":%q,"value":%s}]}`, query, param, v)
	path := "/dbs/bench/colls/rows/docs"
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "https://127.0.0.1"+path, nil)
	if err != nil {
		b.Fatal(err)
	}
	key, _ := auth.DecodeKey(testKey)
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth.MasterToken(key, http.MethodPost, "docs", "dbs/bench/colls/rows", date))
	req.Header.Set("x-ms-version", "2020-07-15")
	req.Header.Set("Content-Type", "application/query+json")
	req.Header.Set("x-ms-documentdb-isquery", "True")
	req.Header.Set("x-ms-documentdb-populatequerymetrics", "true")
	req.Header.Set("x-ms-documentdb-query-enablecrosspartition", "true")
	req.Header.Set("x-ms-cosmos-correlated-activityid", "2b3bb5b4-6bd6-4a2e-9c8a-4b1e0e3c8d11")
	if pk != "" {
		req.Header.Set("x-ms-documentdb-partitionkey", `["`+pk+`"]`)
	}
	if maxItems != 0 {
		req.Header.Set("x-ms-max-item-count", strconv.Itoa(maxItems))
	}
	if continuation != "" {
		req.Header.Set("x-ms-continuation", continuation)
	}
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
	return req
}

// serveQuery serves a copy of req (the handler replaces its Body) and
// returns its item count and continuation.
func serveQuery(b *testing.B, h *Handler, req *http.Request) (int, string) {
	r := *req
	r.Body, _ = req.GetBody()
	w := &benchWriter{h: http.Header{}}
	h.ServeHTTP(w, &r)
	if w.code != http.StatusOK {
		b.Fatalf("status %d", w.code)
	}
	n, _ := strconv.Atoi(responseHeader(w, "x-ms-item-count"))
	return n, responseHeader(w, hdrContinuation)
}

// BenchmarkQueryHandler measures a query request through the API handler
// (authentication, request decoding, the engine, response encoding; no
// TLS or HTTP/2) as `partita bench` sends it (issue #15), on 20,000 items
// of about 1 KB over 4 physical partitions:
//
//   - q=pk-20-rows: SELECT * FROM c WHERE c.pk = @pk with the partition
//     key header, the 20 items of one key (the query-pk workload), the
//     keys in turn, one request per op;
//   - q=pk-0-rows: the same for a key without items: the cost of a
//     request besides its rows;
//   - q=filter-10k-rows/page=N: SELECT * FROM c WHERE c.half = @h across
//     partitions, 10,000 items drained in pages of N (query-filter), one
//     whole query per op.
//
// cpu-ns/op is the process's CPU time per op (user and system, the
// store's background work included), which varies less with the load of a
// shared machine than ns/op does.
//
//	go test -run=NONE -bench=BenchmarkQueryHandler -count=6 ./internal/api
func BenchmarkQueryHandler(b *testing.B) {
	h := queryBenchHandler(b)
	b.Run("q=pk-20-rows", func(b *testing.B) {
		reqs := make([]*http.Request, 0, queryBenchKeys) // every key, as the query-pk workload asks
		for k := range cap(reqs) {
			pk := fmt.Sprintf("key%07d", k)
			reqs = append(reqs, queryRequestFor(b, "SELECT * FROM c WHERE c.pk = @pk", "@pk", pk, pk, 0, ""))
		}
		b.ReportAllocs()
		i := 0
		cpu0 := cpuTime()
		for b.Loop() {
			if n, _ := serveQuery(b, h, reqs[i%len(reqs)]); n != queryBenchRows {
				b.Fatalf("%d rows, want %d", n, queryBenchRows)
			}
			i++
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
	b.Run("q=pk-0-rows", func(b *testing.B) {
		pk := "nokey"
		req := queryRequestFor(b, "SELECT * FROM c WHERE c.pk = @pk", "@pk", pk, pk, 0, "")
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			if n, _ := serveQuery(b, h, req); n != 0 {
				b.Fatalf("%d rows, want 0", n)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
	for _, page := range []int{100, 1000} {
		b.Run(fmt.Sprintf("q=filter-10k-rows/page=%d", page), func(b *testing.B) {
			b.ReportAllocs()
			h0 := 0
			cpu0 := cpuTime()
			for b.Loop() {
				rows, cont := 0, ""
				for {
					req := queryRequestFor(b, "SELECT * FROM c WHERE c.half = @h", "@h", h0, "", page, cont)
					n, next := serveQuery(b, h, req)
					rows += n
					if cont = next; cont == "" {
						break
					}
				}
				if rows != queryBenchKeys*queryBenchRows/2 {
					b.Fatalf("%d rows, want %d", rows, queryBenchKeys*queryBenchRows/2)
				}
				h0 = 1 - h0
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
