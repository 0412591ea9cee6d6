package synthkey_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
	"github.com/partitadb/partita/synthkey"
)

type pkRange struct {
	ID string `json:"id"`
}

func pkRanges(t *testing.T, s *testserver.Server, coll string) []pkRange {
	t.Helper()
	resp, body, err := s.Do(t.Context(), http.MethodGet, "/dbs/db/colls/"+coll+"/pkranges", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("pkranges: %v %v %s", resp, err, body)
	}
	var feed struct {
		PartitionKeyRanges []pkRange
	}
	if err := json.Unmarshal(body, &feed); err != nil {
		t.Fatal(err)
	}
	return feed.PartitionKeyRanges
}

// splitAll splits every physical partition of the container once.
func splitAll(t *testing.T, s *testserver.Server, coll string) {
	t.Helper()
	for _, r := range pkRanges(t, s, coll) {
		resp, body, err := s.Do(t.Context(), http.MethodPost, "/_partita/dbs/db/colls/"+coll+"/pkranges/"+r.ID+"/split", nil, nil)
		if err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("split %s: %v %v %s", r.ID, resp, err, body)
		}
	}
}

type doc struct {
	ID           string `json:"id"`
	Kind         string `json:"kind"`
	PartitionKey string `json:"partitionKey"`
}

// TestFanOutAfterSplits writes items under random-suffix and hash-suffix
// keys, splits the container twice (1 → 2 → 4 physical partitions), and
// checks that fan-out queries and reads return exactly the items written:
// none lost, none twice, each under the key it was written with.
func TestFanOutAfterSplits(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	client := s.Client(t)
	ctx := t.Context()
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := client.NewDatabase("db")
	props := azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/partitionKey"}}}
	if _, err := db.CreateContainer(ctx, props, nil); err != nil {
		t.Fatal(err)
	}
	c, _ := db.NewContainer("c")

	random, err := synthkey.New(synthkey.Config{Target: "/partitionKey", Paths: []string{"/date"},
		Suffix: synthkey.SuffixRandom, Buckets: 10, Rand: rand.NewPCG(3, 4)})
	if err != nil {
		t.Fatal(err)
	}
	hash, err := synthkey.HashSuffix("/partitionKey", 10, []string{"/vin"}, "/date")
	if err != nil {
		t.Fatal(err)
	}

	const n = 150
	type written struct {
		kind string
		item map[string]any
	}
	var items []written
	for i := range n {
		items = append(items,
			written{"random", map[string]any{"id": fmt.Sprintf("r%03d", i), "kind": "random", "date": "2018-08-09"}},
			written{"hash", map[string]any{"id": fmt.Sprintf("h%03d", i), "kind": "hash", "date": "2018-08-09", "vin": fmt.Sprintf("VIN%05d", i*7919)}})
	}
	want := map[string]string{} // id → key
	for _, w := range items {
		k := random
		if w.kind == "hash" {
			k = hash
		}
		pk, body, err := k.Prepare(w.item)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateItem(ctx, pk, body, nil); err != nil {
			t.Fatalf("create %v: %v", w.item["id"], err)
		}
		want[w.item["id"].(string)] = w.item["partitionKey"].(string)
	}

	splitAll(t, s, "c")
	splitAll(t, s, "c")
	if got := len(pkRanges(t, s, "c")); got != 4 {
		t.Fatalf("%d pk ranges after two rounds of splits, want 4", got)
	}

	base := map[string]any{"date": "2018-08-09"}
	for _, tt := range []struct {
		kind string
		k    *synthkey.Key
	}{{"random", random}, {"hash", hash}} {
		t.Run(tt.kind, func(t *testing.T) {
			keys, err := tt.k.FanOutKeys(base)
			if err != nil || len(keys) != 10 {
				t.Fatalf("FanOutKeys = %q, %v, want 10 keys", keys, err)
			}
			// A small page size makes each key's query take several pages.
			o := &synthkey.FanOutOptions{Concurrency: 3, Query: &azcosmos.QueryOptions{
				PageSizeHint:    4,
				QueryParameters: []azcosmos.QueryParameter{{Name: "@kind", Value: tt.kind}},
			}}
			res, err := synthkey.Query(ctx, c, keys, "SELECT * FROM c WHERE c.kind = @kind", o)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := synthkey.Decode[doc](res.Items)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != n || len(res.Keys) != n {
				t.Errorf("Query returned %d items (%d keys), want %d", len(docs), len(res.Keys), n)
			}
			seen := map[string]bool{}
			buckets := map[string]bool{}
			for i, d := range docs {
				switch {
				case seen[d.ID]:
					t.Errorf("item %s returned twice", d.ID)
				case d.Kind != tt.kind:
					t.Errorf("item %s of kind %q returned, want only %q", d.ID, d.Kind, tt.kind)
				case want[d.ID] != d.PartitionKey || res.Keys[i] != d.PartitionKey:
					t.Errorf("item %s under key %q (result key %q), written under %q", d.ID, d.PartitionKey, res.Keys[i], want[d.ID])
				}
				seen[d.ID] = true
				buckets[d.PartitionKey] = true
			}
			for i := range n {
				if id := fmt.Sprintf("%c%03d", tt.kind[0], i); !seen[id] {
					t.Errorf("item %s lost by the fan-out query", id)
				}
			}
			if len(buckets) != 10 {
				t.Errorf("items spread over %d keys, want all 10", len(buckets))
			}
			if !slices.IsSortedFunc(res.Keys, func(a, b string) int { return slices.Index(keys, a) - slices.Index(keys, b) }) {
				t.Errorf("Result.Keys not in the order of keys")
			}
			if res.RequestCharge <= 0 {
				t.Errorf("RequestCharge = %v, want > 0", res.RequestCharge)
			}
		})
	}

	t.Run("point reads", func(t *testing.T) {
		keys, _ := random.FanOutKeys(base)
		for _, id := range []string{"r000", "r077", "r149"} {
			res, err := synthkey.ReadItem(ctx, c, keys, id, nil)
			if err != nil || len(res.Items) != 1 || res.Keys[0] != want[id] || res.RequestCharge <= 0 {
				t.Fatalf("ReadItem(%s) = %d items under %q (%v RU), %v; want 1 under %q", id, len(res.Items), res.Keys, res.RequestCharge, err, want[id])
			}
			// Every key was asked, and each miss costs at least 1 RU.
			if res.RequestCharge < float64(len(keys)) {
				t.Errorf("ReadItem(%s) over %d keys charged %v RU, want the misses counted too", id, len(keys), res.RequestCharge)
			}
		}
		if _, err := synthkey.ReadItem(ctx, c, keys, "nope", nil); !errors.Is(err, synthkey.ErrNotFound) {
			t.Errorf("ReadItem(nope) = %v, want ErrNotFound", err)
		}
		// A hash suffix needs no fan-out: the key is recomputed.
		for _, w := range items {
			if w.kind != "hash" {
				continue
			}
			key, err := hash.PointKey(map[string]any{"date": w.item["date"], "vin": w.item["vin"]})
			if err != nil {
				t.Fatal(err)
			}
			id := w.item["id"].(string)
			if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString(key), id, nil); err != nil {
				t.Errorf("ReadItem(%s, %s) = %v", key, id, err)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		keys, _ := random.FanOutKeys(base)
		_, err := synthkey.Query(ctx, c, keys, "SELECT FROM WHERE", nil)
		ke, ok := errors.AsType[*synthkey.KeyError](err)
		re, ok2 := errors.AsType[*azcore.ResponseError](err)
		if !ok || !slices.Contains(keys, ke.Key) || !ok2 || re.StatusCode != http.StatusBadRequest {
			t.Errorf("Query(bad SQL) = %v, want a *KeyError wrapping a 400", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := synthkey.Query(cctx, c, keys, "SELECT * FROM c", nil); !errors.Is(err, context.Canceled) {
			t.Errorf("Query(cancelled) = %v, want context.Canceled", err)
		}
		if _, err := synthkey.ReadItem(cctx, c, keys, "r000", nil); !errors.Is(err, context.Canceled) {
			t.Errorf("ReadItem(cancelled) = %v, want context.Canceled", err)
		}
	})
}

// TestFanOutConcurrentWriters: writers applying a random-suffix key from
// many goroutines while a reader fans out never see an error, and the final
// fan-out sees every item once.
func TestFanOutConcurrentWriters(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	client := s.Client(t)
	ctx := t.Context()
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := client.NewDatabase("db")
	props := azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}
	if _, err := db.CreateContainer(ctx, props, nil); err != nil {
		t.Fatal(err)
	}
	c, _ := db.NewContainer("c")
	k, _ := synthkey.RandomSuffix("/pk", 16, "/day")
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 40 {
				_, body, err := k.Prepare(map[string]any{"id": fmt.Sprintf("w%d-%02d", w, i), "day": 20240101})
				if err != nil {
					t.Error(err)
					return
				}
				var item struct{ PK string }
				json.Unmarshal(body, &item)
				if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(item.PK), body, nil); err != nil {
					t.Errorf("create: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	keys, _ := k.FanOutKeys(map[string]any{"day": 20240101})
	res, err := synthkey.Query(ctx, c, keys, "SELECT VALUE c.id FROM c", &synthkey.FanOutOptions{Concurrency: 16})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := synthkey.Decode[string](res.Items)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if len(ids) != 160 || len(slices.Compact(ids)) != 160 {
		t.Errorf("fan-out found %d ids (%d distinct), want 160", len(ids), len(slices.Compact(slices.Clone(ids))))
	}
}
