package api

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// readBenchRecords is the number of items of BenchmarkReadHandler's
// container, as `partita bench --workload ycsb-c --records 20000` preloads.
const readBenchRecords = 20000

// readBenchHandler returns a handler over an engine whose container
// bench/ycsb (4 physical partitions, partition key /pk) holds the records of
// the ycsb workloads: {"data":…,"grp":i%100,"id":"user<i>","n":i,"pk":"user<i>","v":0}
// with 900 random letters of data, written one upsert each as the bench's
// preload does, then compacted, so that no flush or compaction runs during
// the benchmark.
func readBenchHandler(b *testing.B) *Handler {
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
	if _, err := eng.CreateContainer("bench", []byte(`{"id":"ycsb","partitionKey":{"paths":["/pk"]}}`), engine.Throughput{Manual: 24000}); err != nil {
		b.Fatal(err)
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	filler := make([]byte, 900)
	for i := range readBenchRecords {
		rng := rand.New(rand.NewPCG(uint64(i), 0))
		for j := range filler {
			filler[j] = alphabet[rng.IntN(len(alphabet))]
		}
		id := readBenchID(i)
		body := fmt.Appendf(nil, `{"data":%q,"grp":%d,"id":%q,"n":%d,"pk":%q,"v":0}`, filler, i%100, id, i, id)
		if _, err := eng.WriteItem(ctx, engine.Write{DB: "bench", Container: "ycsb", Kind: engine.Upsert,
			PK: document.PartitionKey{{Kind: document.String, String: id}}, Body: body}); err != nil {
			b.Fatal(err)
		}
	}
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

func readBenchID(i int) string { return fmt.Sprintf("user%010d", i) }

// readRequestFor returns a signed point read of item id as the Go SDK
// (azcosmos v1.5.0) sends it: its headers, with a session token when
// session is not empty.
func readRequestFor(b *testing.B, id, session string) *http.Request {
	b.Helper()
	path := "/dbs/bench/colls/ycsb/docs/" + id
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://127.0.0.1"+path, nil)
	if err != nil {
		b.Fatal(err)
	}
	key, _ := auth.DecodeKey(testKey)
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth.MasterToken(key, http.MethodGet, "docs", "dbs/bench/colls/ycsb/docs/"+id, date))
	req.Header.Set("x-ms-version", "2020-07-15")
	req.Header.Set("x-ms-documentdb-partitionkey", `["`+id+`"]`)
	req.Header.Set("User-Agent", "azsdk-go-azcosmos/v1.5.0 (go1.26; linux)")
	if session != "" {
		req.Header.Set("x-ms-session-token", session)
	}
	return req
}

// BenchmarkReadHandler measures a point read through the API handler
// (authentication, session check, the engine's lookup, response headers and
// body; no TLS or HTTP/2) as `partita bench --workload ycsb-c` sends it
// (issue #15): 20,000 items of about 1 KB over 4 physical partitions, read
// in a fixed pseudo-random order, each request with the session token of
// the item's partition.
//
// cpu-ns/op is the process's CPU time per op (user and system, the store's
// and the garbage collector's background work included), which varies less
// with the load of a shared machine than ns/op does.
//
//	go test -run=NONE -bench=BenchmarkReadHandler -count=6 ./internal/api
func BenchmarkReadHandler(b *testing.B) {
	h := readBenchHandler(b)
	const n = 256
	reqs := make([]*http.Request, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range reqs {
		id := readBenchID(rng.IntN(readBenchRecords))
		w := &benchWriter{h: http.Header{}}
		h.ServeHTTP(w, readRequestFor(b, id, ""))
		if w.code != http.StatusOK {
			b.Fatalf("read %s: status %d", id, w.code)
		}
		reqs[i] = readRequestFor(b, id, responseHeader(w, "x-ms-session-token"))
	}
	b.ReportAllocs()
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		w := &benchWriter{h: http.Header{}}
		r := *reqs[i%n]
		h.ServeHTTP(w, &r)
		if w.code != http.StatusOK || w.n < 900 {
			b.Fatalf("status %d, %d bytes", w.code, w.n)
		}
		i++
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
