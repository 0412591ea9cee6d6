package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

// benchEngine returns an engine on a fresh store (synced or not) with an
// empty container db/k, partition key /pk, default throughput.
func benchEngine(b *testing.B, sync bool) *Engine {
	return benchEngineOn(b, store.Options{Sync: sync}, "k", 0)
}

// benchEngineOn returns an engine on a fresh store opened with opts (in a
// temporary directory) and an empty container db/<container>, partition
// key /pk, with ru RU/s of manual throughput (0: the default; a physical
// partition per 6,000).
func benchEngineOn(b *testing.B, opts store.Options, container string, ru int) *Engine {
	opts.Dir = b.TempDir()
	st, err := store.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	e, err := openOn(b, context.Background(), st, Config{}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		b.Fatal(err)
	}
	if _, err := e.CreateContainer("db", fmt.Appendf(nil, `{"id":%q,"partitionKey":{"paths":["/pk"]}}`, container), Throughput{Manual: ru}); err != nil {
		b.Fatal(err)
	}
	return e
}

func item1KB(i int) []byte {
	return []byte(fmt.Sprintf(`{"id":"%d","pk":"p%d","payload":"%s"}`, i, i%100, strings.Repeat("x", 960)))
}

func pkOf(i int) document.PartitionKey {
	return document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%100)}}
}

// BenchmarkEngineRead1KB is a point read at the engine layer (catalog lookup,
// hashing, store read, system property parse).
func BenchmarkEngineRead1KB(b *testing.B) {
	e := benchEngine(b, false)
	ctx := context.Background()
	const n = 1000
	for i := range n {
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkOf(i), Body: item1KB(i)}); err != nil {
			b.Fatal(err)
		}
	}
	pks := make([]document.PartitionKey, n)
	for i := range pks {
		pks[i] = pkOf(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: fmt.Sprint(i % n)}, pks[i%n], ""); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEngineUpsert1KB is an upsert at the engine layer, WAL synced or not.
func BenchmarkEngineUpsert1KB(b *testing.B) {
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("sync=%v", sync), func(b *testing.B) {
			e := benchEngine(b, sync)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pkOf(i), Body: item1KB(i % 1000)}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkEngineUpdate1KB is BenchmarkEngineUpsert1KB/sync=false where
// every write changes the item, as YCSB's updates do: a new counter and new
// random filler of the same length (so the logical partition's size stays
// the same, and id and pk are unchanged).
func BenchmarkEngineUpdate1KB(b *testing.B) {
	e := benchEngine(b, false)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	bodies := make([][]byte, 4096)
	for i := range bodies {
		filler := make([]byte, 940)
		for j := range filler {
			filler[j] = letters[r.IntN(len(letters))]
		}
		bodies[i] = fmt.Appendf(nil, `{"id":"%d","pk":"p%d","v":%d,"payload":"%s"}`, i%1000, i%100, 1000000+r.IntN(9000000), filler)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := i % len(bodies)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pkOf(j), Body: bodies[j]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEngineUpsertParallel1KB runs synced upserts from many goroutines:
// concurrent writers share WAL syncs (group commit), so the per-op cost
// falls well below one fsync.
func BenchmarkEngineUpsertParallel1KB(b *testing.B) {
	e := benchEngine(b, true)
	ctx := context.Background()
	var next atomicCounter
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.add()
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pkOf(i), Body: item1KB(i % 1000)}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) add() int { return int(c.n.Add(1)) }

// BenchmarkTenWrites compares ten 1 KB upserts into one logical partition
// done as ten single requests, as one transactional batch, and as one stored
// procedure, with durability=sync (each commit waits for the WAL sync).
func BenchmarkTenWrites(b *testing.B) {
	pk := document.PartitionKey{{Kind: document.String, String: "p0"}}
	body := func(n, i int) []byte {
		return []byte(fmt.Sprintf(`{"id":"%d-%d","pk":"p0","payload":"%s"}`, n, i, strings.Repeat("x", 960)))
	}
	b.Run("single", func(b *testing.B) {
		e := benchEngine(b, true)
		ctx := context.Background()
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			for i := range 10 {
				if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pk, Body: body(n, i)}); err != nil {
					b.Fatal(err)
				}
			}
			n++
		}
	})
	b.Run("batch", func(b *testing.B) {
		e := benchEngine(b, true)
		ctx := context.Background()
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			ops := make([]BatchOp, 10)
			for i := range ops {
				ops[i] = BatchOp{Type: "Upsert", Body: body(n, i)}
			}
			if r, err := e.ExecuteBatch(ctx, "db", "k", pk, ops); err != nil || !r.OK {
				b.Fatal(err)
			}
			n++
		}
	})
	b.Run("sproc", func(b *testing.B) {
		e := benchEngine(b, true)
		ctx := context.Background()
		const sp = `function (n) {
			var coll = getContext().getCollection();
			var pad = new Array(961).join("x");
			for (var i = 0; i < 10; i++) coll.upsertDocument(coll.getSelfLink(), {id: n + "-" + i, pk: "p0", payload: pad});
		}`
		def, _ := json.Marshal(map[string]string{"id": "ten", "body": sp})
		if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			if _, err := e.ExecuteStoredProcedure(ctx, "db", "k", "ten", pk, []byte(fmt.Sprintf("[%d]", n)), false); err != nil {
				b.Fatal(err)
			}
			n++
		}
	})
}
