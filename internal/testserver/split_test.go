package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// readRanges returns the container's pk ranges, checking that they tile the
// EPK space ["", FF) in order.
func readRanges(t *testing.T, s *testserver.Server, coll string) pkRangesFeed {
	t.Helper()
	resp, body, err := s.Do(t.Context(), http.MethodGet, "/dbs/db/colls/"+coll+"/pkranges", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("pkranges: %v %v", resp, err)
	}
	var feed pkRangesFeed
	if err := json.Unmarshal(body, &feed); err != nil {
		t.Fatal(err)
	}
	rs := feed.PartitionKeyRanges
	sort.Slice(rs, func(i, j int) bool { return rs[i].MinInclusive < rs[j].MinInclusive })
	for i, r := range rs {
		switch {
		case i == 0 && r.MinInclusive != "":
			t.Errorf("first range %s starts at %q", r.ID, r.MinInclusive)
		case i > 0 && r.MinInclusive != rs[i-1].MaxExclusive:
			t.Errorf("range %s starts at %q, after %s ends at %q", r.ID, r.MinInclusive, rs[i-1].ID, rs[i-1].MaxExclusive)
		case i == len(rs)-1 && r.MaxExclusive != "FF":
			t.Errorf("last range %s ends at %q", r.ID, r.MaxExclusive)
		}
		if r.ID != "0" && (len(r.Parents) == 0 || r.Parents[0] != "0") {
			t.Errorf("range %s has parents %v, want a lineage from 0", r.ID, r.Parents)
		}
	}
	return feed
}

// TestLiveSplits: a container with a 48 KB partition size limit splits
// several times while SDK clients write, read and query it; no call fails;
// afterwards the ranges tile the EPK space with their lineage, and every
// item is read back exactly once by point read, by a cross-partition query
// and by the union of the ranges' feeds. A forced split answers the new
// ranges, and the old range id then gets 410/1002.
func TestLiveSplits(t *testing.T) {
	dir := t.TempDir()
	cfg := func(c *config.Config) { c.Engine.PartitionMaxBytes = 48 << 10 }
	s := testserver.Start(t, testserver.Options{DataDir: dir, Configure: cfg})
	c := s.Client(t)
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "split", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	ctx := t.Context()
	pad := strings.Repeat("z", 900)

	const items = 480
	var written sync.Map // id → pk
	var next, failures atomic.Int64
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= items {
					return
				}
				id, pk := fmt.Sprintf("i%04d", i), fmt.Sprintf("k%03d", i%150)
				if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":%q,"pk":%q,"pad":%q}`, id, pk, pad), nil); err != nil {
					t.Errorf("create %s: %v", id, err)
					failures.Add(1)
					return
				}
				written.Store(id, pk)
				time.Sleep(5 * time.Millisecond) // spread the load over several split checks
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() { // point reads and cross-partition queries while splitting
		for {
			select {
			case <-stop:
				return
			default:
			}
			written.Range(func(id, pk any) bool {
				if _, err := k.ReadItem(ctx, azcosmos.NewPartitionKeyString(pk.(string)), id.(string), nil); err != nil {
					t.Errorf("read %s during splits: %v", id, err)
					failures.Add(1)
				}
				return false
			})
			pager := k.NewQueryItemsPager("SELECT c.id FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 100})
			for pager.More() {
				if _, err := pager.NextPage(ctx); err != nil {
					t.Errorf("query during splits: %v", err)
					failures.Add(1)
					break
				}
			}
		}
	})
	wg.Wait()
	// Let the split checks catch up: wait until the ranges stop changing.
	var feed pkRangesFeed
	for prev, stable := -1, 0; stable < 3; time.Sleep(600 * time.Millisecond) {
		feed = readRanges(t, s, "split")
		if n := len(feed.PartitionKeyRanges); n == prev {
			stable++
		} else {
			prev, stable = n, 0
		}
	}
	close(stop)
	readers.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d SDK calls failed during splits", failures.Load())
	}
	// ~480 KB over a 48 KB limit: a first split, then splits of splits.
	t.Logf("%d ranges after the splits", len(feed.PartitionKeyRanges))
	if n := len(feed.PartitionKeyRanges); n < 6 {
		t.Errorf("%d ranges after writing ~%d KB with a 48 KB limit, want at least 6", n, items)
	}

	// Every item exactly once: point reads, a cross-partition query, and the
	// union of the ranges' own feeds.
	written.Range(func(id, pk any) bool {
		if _, err := k.ReadItem(ctx, azcosmos.NewPartitionKeyString(pk.(string)), id.(string), nil); err != nil {
			t.Errorf("read %s after splits: %v", id, err)
		}
		return true
	})
	seen := map[string]int{}
	pager := k.NewQueryItemsPager("SELECT VALUE c.id FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 70})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			var id string
			_ = json.Unmarshal(it, &id)
			seen[id]++
		}
	}
	perRange := map[string]int{}
	for _, r := range feed.PartitionKeyRanges {
		resp, body, err := s.Do(ctx, http.MethodGet, "/dbs/db/colls/split/docs", map[string]string{"x-ms-documentdb-partitionkeyrangeid": r.ID, "x-ms-max-item-count": "-1"}, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("feed of range %s: %v %v", r.ID, resp, err)
		}
		var f struct{ Documents []struct{ ID string } }
		_ = json.Unmarshal(body, &f)
		for _, d := range f.Documents {
			perRange[d.ID]++
		}
	}
	if len(seen) != items || len(perRange) != items {
		t.Errorf("query saw %d distinct items, range feeds %d; want %d", len(seen), len(perRange), items)
	}
	for id, n := range seen {
		if n != 1 || perRange[id] != 1 {
			t.Errorf("item %s: %d times in the query, %d in the range feeds; want once", id, n, perRange[id])
		}
	}

	// A forced split of the first range, then the old id is gone.
	old := feed.PartitionKeyRanges[0].ID
	resp, body, err := s.Do(ctx, http.MethodPost, "/_partita/dbs/db/colls/split/pkranges/"+old+"/split", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("forced split: %v %v %s", resp, err, body)
	}
	after := readRanges(t, s, "split")
	if len(after.PartitionKeyRanges) != len(feed.PartitionKeyRanges)+1 {
		t.Errorf("forced split: %d ranges, want %d", len(after.PartitionKeyRanges), len(feed.PartitionKeyRanges)+1)
	}
	resp, _, err = s.Do(ctx, http.MethodGet, "/dbs/db/colls/split/docs", map[string]string{"x-ms-documentdb-partitionkeyrangeid": old}, nil)
	if err != nil || resp.StatusCode != http.StatusGone || resp.Header.Get("x-ms-substatus") != "1002" {
		t.Errorf("feed of the split range %s: %v %v, want 410/1002", old, resp.Status, err)
	}

	// The map survives a restart.
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	s = testserver.Start(t, testserver.Options{DataDir: dir, Configure: cfg})
	if again := readRanges(t, s, "split"); len(again.PartitionKeyRanges) != len(after.PartitionKeyRanges) {
		t.Errorf("after a restart: %d ranges, want %d", len(again.PartitionKeyRanges), len(after.PartitionKeyRanges))
	}
}

// TestThroughputSplits: raising a container's throughput from 6,000 to
// 25,000 RU/s through the SDK splits its one partition into
// ceil(25000/10000) = 3, which still hold every item exactly once.
func TestThroughputSplits(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "tp", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(6000))})
	const items = 200
	for i := range items {
		pk := fmt.Sprintf("k%d", i)
		if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":"%d","pk":%q}`, i, pk), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(readRanges(t, s, "tp").PartitionKeyRanges); n != 1 {
		t.Fatalf("%d ranges at 6,000 RU/s, want 1", n)
	}
	if _, err := k.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(25000), nil); err != nil {
		t.Fatal(err)
	}
	feed := readRanges(t, s, "tp")
	if n := len(feed.PartitionKeyRanges); n != 3 {
		t.Fatalf("%d ranges at 25,000 RU/s, want 3", n)
	}
	seen := map[string]int{}
	for _, r := range feed.PartitionKeyRanges {
		resp, body, err := s.Do(ctx, http.MethodGet, "/dbs/db/colls/tp/docs", map[string]string{"x-ms-documentdb-partitionkeyrangeid": r.ID, "x-ms-max-item-count": "-1"}, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("feed of range %s: %v %v", r.ID, resp, err)
		}
		var f struct{ Documents []struct{ ID string } }
		_ = json.Unmarshal(body, &f)
		if len(f.Documents) == 0 {
			t.Errorf("range %s holds nothing after an even split of 200 keys", r.ID)
		}
		for _, d := range f.Documents {
			seen[d.ID]++
		}
	}
	for i := range items {
		if n := seen[fmt.Sprint(i)]; n != 1 {
			t.Errorf("item %d in %d ranges, want 1", i, n)
		}
		if i%20 == 0 {
			if _, err := k.ReadItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("k%d", i)), fmt.Sprint(i), nil); err != nil {
				t.Errorf("read %d after the split: %v", i, err)
			}
		}
	}
}
