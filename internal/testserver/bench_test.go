package testserver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

func item1KB(i int) []byte {
	return []byte(fmt.Sprintf(`{"id":"%d","pk":"p%d","payload":"%s"}`, i, i%100, strings.Repeat("x", 960)))
}

// benchServer starts a server and a container for benchmarks, with the
// given durability.
func benchServer(b *testing.B, durability string) (*testserver.Server, *azcosmos.ContainerClient) {
	s := testserver.Start(b, testserver.Options{Configure: func(c *config.Config) { c.Store.Durability = durability }})
	c := s.Client(b)
	ctx := context.Background()
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		b.Fatal(err)
	}
	db, _ := c.NewDatabase("db")
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil); err != nil {
		b.Fatal(err)
	}
	k, _ := db.NewContainer("k")
	return s, k
}

// BenchmarkHTTPRead1KB is a point read of a 1 KB item through the whole
// server: TLS, HTTP, auth, engine, store — with a raw signed request, so the
// SDK's own cost is not measured.
func BenchmarkHTTPRead1KB(b *testing.B) {
	s, k := benchServer(b, "sync")
	ctx := context.Background()
	const n = 1000
	for i := range n {
		if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", i%100)), item1KB(i), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := i % n
		resp, _, err := s.Do(ctx, http.MethodGet, fmt.Sprintf("/dbs/db/colls/k/docs/%d", id),
			map[string]string{"x-ms-documentdb-partitionkey": fmt.Sprintf(`["p%d"]`, id%100)}, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("read: %v %v", resp, err)
		}
		i++
	}
}

// BenchmarkHTTPUpsert1KB is an upsert of a 1 KB item through the whole
// server, with durability=sync (each acknowledged write is in the synced WAL)
// and relaxed.
func BenchmarkHTTPUpsert1KB(b *testing.B) {
	for _, d := range []string{"sync", "relaxed"} {
		b.Run("durability="+d, func(b *testing.B) {
			s, _ := benchServer(b, d)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				resp, _, err := s.Do(ctx, http.MethodPost, "/dbs/db/colls/k/docs", map[string]string{
					"x-ms-documentdb-partitionkey": fmt.Sprintf(`["p%d"]`, i%100), "x-ms-documentdb-is-upsert": "true",
					"Content-Type": "application/json", "Prefer": "return=minimal",
				}, item1KB(i%1000))
				if err != nil || resp.StatusCode >= 300 {
					b.Fatalf("upsert: %v %v", resp, err)
				}
				i++
			}
		})
	}
}
