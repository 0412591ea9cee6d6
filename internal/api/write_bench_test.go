package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/auth"
)

// BenchmarkUpsertHandler measures an upsert of an existing item through the
// API handler (authentication, the request body read through its gate,
// the engine's write on a store without sync, response headers and body;
// no TLS or HTTP/2) as `partita bench --workload ycsb-a --mix 100,0,0`
// sends it: the container of BenchmarkReadHandler, each item replaced by
// one of the same shape with new filler.
//
//	go test -run=NONE -bench=BenchmarkUpsertHandler -count=6 ./internal/api
func BenchmarkUpsertHandler(b *testing.B) {
	h := readBenchHandler(b)
	key, _ := auth.DecodeKey(testKey)
	const n = 256
	type upsert struct {
		id   string
		body []byte
	}
	ups := make([]upsert, n)
	rng := rand.New(rand.NewPCG(3, 4))
	filler := make([]byte, 900)
	for i := range ups {
		k := rng.IntN(readBenchRecords)
		for j := range filler {
			filler[j] = byte('a' + rng.IntN(26))
		}
		id := readBenchID(k)
		ups[i] = upsert{id, fmt.Appendf(nil, `{"data":%q,"grp":%d,"id":%q,"n":%d,"pk":%q,"v":1}`, filler, k%100, id, k, id)}
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth := auth.MasterToken(key, http.MethodPost, "docs", "dbs/bench/colls/ycsb", date)
	b.ReportAllocs()
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		u := ups[i%n]
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "https://127.0.0.1/dbs/bench/colls/ycsb/docs", io.NopCloser(bytes.NewReader(u.body)))
		if err != nil {
			b.Fatal(err)
		}
		req.ContentLength = int64(len(u.body))
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", auth)
		req.Header.Set("x-ms-version", "2020-07-15")
		req.Header.Set("x-ms-documentdb-is-upsert", "True")
		req.Header.Set("x-ms-documentdb-partitionkey", `["`+u.id+`"]`)
		req.Header.Set("Content-Type", "application/json")
		w := &benchWriter{h: http.Header{}}
		h.ServeHTTP(w, req)
		if w.code != http.StatusOK || w.n < 900 {
			b.Fatalf("status %d, %d bytes", w.code, w.n)
		}
		i++
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
