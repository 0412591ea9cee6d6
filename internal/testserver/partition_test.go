package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/testserver"
)

type pkRangesFeed struct {
	PartitionKeyRanges []struct {
		ID           string   `json:"id"`
		MinInclusive string   `json:"minInclusive"`
		MaxExclusive string   `json:"maxExclusive"`
		Parents      []string `json:"parents"`
	} `json:"PartitionKeyRanges"`
}

// TestItemsLandInTheirEPKRange checks real hash partitioning: a container with
// 40,000 RU/s gets ceil(40000/6000) = 7 physical partitions; 1,000 keys spread
// over all of them; each logical partition sits in exactly one range; and the
// range whose feed returns an item is the one its EPK falls in.
func TestItemsLandInTheirEPKRange(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "spread", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/key"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(40000))})

	// The SDK sees the 7 ranges as feed ranges.
	frs, err := k.ReadFeedRanges(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(frs) != 7 {
		t.Fatalf("ReadFeedRanges = %d ranges, want 7", len(frs))
	}

	const keys, perKey = 1000, 2
	for i := range keys {
		key := fmt.Sprintf("device-%04d", i)
		for j := range perKey {
			body := mustJSON(t, map[string]any{"id": fmt.Sprint(j), "key": key})
			if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString(key), body, nil); err != nil {
				t.Fatal(err)
			}
		}
	}

	resp, body, err := s.Do(ctx, http.MethodGet, "/dbs/db/colls/spread/pkranges", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("pkranges: %v %s %v", resp, body, err)
	}
	var feed pkRangesFeed
	if err := json.Unmarshal(body, &feed); err != nil {
		t.Fatal(err)
	}
	if len(feed.PartitionKeyRanges) != 7 {
		t.Fatalf("pkranges lists %d ranges, want 7", len(feed.PartitionKeyRanges))
	}
	def := partition.Definition{Paths: []string{"/key"}, Kind: partition.Hash, Version: 2}
	rangeOf := map[string]string{} // logical partition → range whose feed returned it
	total := 0
	for _, r := range feed.PartitionKeyRanges {
		lo, _ := partition.ParseEPK(r.MinInclusive)
		hi, _ := partition.ParseEPK(r.MaxExclusive)
		rng := partition.Range{ID: r.ID, Min: lo, Max: hi}
		inRange := 0
		cont := ""
		for {
			hdr := map[string]string{"x-ms-documentdb-partitionkeyrangeid": r.ID, "x-ms-max-item-count": "300"}
			if cont != "" {
				hdr["x-ms-continuation"] = cont
			}
			resp, body, err := s.Do(ctx, http.MethodGet, "/dbs/db/colls/spread/docs", hdr, nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("feed of range %s: %v %s %v", r.ID, resp.Status, body, err)
			}
			var page struct {
				Documents []struct {
					ID  string `json:"id"`
					Key string `json:"key"`
				} `json:"Documents"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatal(err)
			}
			for _, d := range page.Documents {
				epk, err := def.Hash(document.PartitionKey{{Kind: document.String, String: d.Key}})
				if err != nil {
					t.Fatal(err)
				}
				if !rng.Contains(epk) {
					t.Errorf("item %s/%s (EPK %s) served by range %s [%s, %s)", d.Key, d.ID, epk, r.ID, r.MinInclusive, r.MaxExclusive)
				}
				if prev, ok := rangeOf[d.Key]; ok && prev != r.ID {
					t.Errorf("logical partition %s appears in ranges %s and %s", d.Key, prev, r.ID)
				}
				rangeOf[d.Key] = r.ID
				inRange++
			}
			if cont = resp.Header.Get("x-ms-continuation"); cont == "" {
				break
			}
		}
		if inRange == 0 {
			t.Errorf("range %s holds no items", r.ID)
		}
		total += inRange
	}
	if total != keys*perKey || len(rangeOf) != keys {
		t.Errorf("range feeds returned %d items of %d keys, want %d of %d", total, len(rangeOf), keys*perKey, keys)
	}

	// A range id that does not exist is gone, as after a split.
	resp, _, _ = s.Do(ctx, http.MethodGet, "/dbs/db/colls/spread/docs", map[string]string{"x-ms-documentdb-partitionkeyrangeid": "99"}, nil)
	if resp.StatusCode != http.StatusGone || resp.Header.Get("x-ms-substatus") != "1002" {
		t.Errorf("feed of unknown range: %s / %s, want 410 / 1002", resp.Status, resp.Header.Get("x-ms-substatus"))
	}
	// The incremental pkranges protocol ends with 304.
	resp, _, _ = s.Do(ctx, http.MethodGet, "/dbs/db/colls/spread/pkranges", map[string]string{"A-IM": "Incremental Feed", "If-None-Match": resp0ETag(t, s)}, nil)
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("pkranges with the current etag: %s, want 304", resp.Status)
	}
}

func resp0ETag(t *testing.T, s *testserver.Server) string {
	t.Helper()
	resp, _, err := s.Do(t.Context(), http.MethodGet, "/dbs/db/colls/spread/pkranges", map[string]string{"A-IM": "Incremental Feed"}, nil)
	if err != nil || resp.Header.Get("etag") == "" {
		t.Fatalf("pkranges etag: %v %v", resp, err)
	}
	return resp.Header.Get("etag")
}

// TestRestartKeepsData stops the server and starts a new one on the same data
// directory: databases, containers, items, offers and etags survive.
func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	s := testserver.Start(t, testserver.Options{DataDir: dir})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(12000))})
	etags := map[string]azcosmos.ItemResponse{}
	for i := range 50 {
		id := fmt.Sprint(i)
		r, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"+id), mustJSON(t, map[string]any{"id": id, "pk": "p" + id}), nil)
		if err != nil {
			t.Fatal(err)
		}
		etags[id] = r
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	s2 := testserver.Start(t, testserver.Options{DataDir: dir})
	c2 := s2.Client(t)
	db, _ := c2.NewDatabase("db")
	k2, _ := db.NewContainer("k")
	for id, before := range etags {
		r, err := k2.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"+id), id, nil)
		if err != nil {
			t.Fatalf("item %s after restart: %v", id, err)
		}
		if r.ETag != before.ETag {
			t.Errorf("item %s etag %q after restart, was %q", id, r.ETag, before.ETag)
		}
	}
	tp, err := k2.ReadThroughput(ctx, nil)
	if v, _ := tp.ThroughputProperties.ManualThroughput(); err != nil || v != 12000 {
		t.Errorf("throughput after restart = %d, %v", v, err)
	}
	frs, err := k2.ReadFeedRanges(ctx, nil)
	if err != nil || len(frs) != 2 {
		t.Errorf("feed ranges after restart = %d, %v; want 2", len(frs), err)
	}
	// New writes get etags no earlier write had.
	r, err := k2.UpsertItem(ctx, azcosmos.NewPartitionKeyString("p0"), []byte(`{"id":"0","pk":"p0","v":2}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, before := range etags {
		if r.ETag == before.ETag {
			t.Errorf("post-restart write reused etag %q of item %s", r.ETag, id)
		}
	}
}
