package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestCrashDuringSplits kills the server with SIGKILL while SDK writers
// make a container with a 32 KB partition size limit split, twice, and
// restarts it: the pk ranges still tile the EPK space with their lineage,
// and every acknowledged item is read back exactly once, by point read and
// in the union of the ranges' feeds. After each restart, and at the end,
// partita check finds the stopped server's data directory consistent.
func TestCrashDuringSplits(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and kills it")
	}
	bin := build(t)
	data := filepath.Join(t.TempDir(), "data")
	addr := freePort(t)
	limit := []string{"--partition-max-bytes=32768"}
	endpoint, cmd := start(t, bin, addr, data, limit...)
	ctx := context.Background()
	c := client(t, endpoint, data)
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := c.NewDatabase("db")
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("s", 700)
	var acked sync.Map // id → pk
	var seq atomic.Int64
	for cycle := range 2 {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				k, _ := c.NewContainer("db", "k")
				for {
					select {
					case <-stop:
						return
					default:
					}
					i := seq.Add(1)
					id, pk := fmt.Sprintf("c%d-%d", cycle, i), fmt.Sprintf("k%d", i%97)
					if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":%q,"pk":%q,"pad":%q}`, id, pk, pad), nil); err == nil {
						acked.Store(id, pk)
					}
				}
			})
		}
		// Kill while splits are under way: some time after the first one.
		hc := trustingClient(t, data)
		deadline := time.Now().Add(10 * time.Second)
		for len(pkRanges(t, hc, endpoint)) < 2+2*cycle && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(700 * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		close(stop)
		wg.Wait()
		_, cmd = start(t, bin, addr, data, limit...)
		// Once the restart has recovered, and with the server stopped,
		// the data directory checks clean.
		stopServer(t, cmd)
		checkData(t, bin, data, fmt.Sprintf("cycle %d of 2", cycle+1))
		endpoint, cmd = start(t, bin, addr, data, limit...)
		c = client(t, endpoint, data)
	}
	hc := trustingClient(t, data)
	ranges := pkRanges(t, hc, endpoint)
	for i, r := range ranges {
		if (i == 0 && r.Min != "") || (i > 0 && r.Min != ranges[i-1].Max) || (i == len(ranges)-1 && r.Max != "FF") {
			t.Fatalf("ranges do not tile the EPK space after the crash: %+v", ranges)
		}
		if r.ID != "0" && (len(r.Parents) == 0 || r.Parents[0] != "0") {
			t.Errorf("range %s has parents %v", r.ID, r.Parents)
		}
	}
	if len(ranges) < 3 {
		t.Errorf("%d ranges: the load did not split the container", len(ranges))
	}
	seen := map[string]int{}
	for _, r := range ranges {
		resp, body, err := rawDo(ctx, hc, endpoint, http.MethodGet, "/dbs/db/colls/k/docs", map[string]string{"x-ms-documentdb-partitionkeyrangeid": r.ID, "x-ms-max-item-count": "-1"}, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("feed of range %s: %v %v", r.ID, resp, err)
		}
		var f struct{ Documents []struct{ ID string } }
		if err := json.Unmarshal(body, &f); err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Documents {
			seen[d.ID]++
		}
	}
	k, _ := c.NewContainer("db", "k")
	n := 0
	acked.Range(func(id, pk any) bool {
		n++
		if seen[id.(string)] != 1 {
			t.Errorf("acknowledged item %s is in %d range feeds, want 1", id, seen[id.(string)])
		}
		if n%25 == 0 {
			if _, err := k.ReadItem(ctx, azcosmos.NewPartitionKeyString(pk.(string)), id.(string), nil); err != nil {
				t.Errorf("read %s after the crash: %v", id, err)
			}
		}
		return true
	})
	for id, m := range seen {
		if m != 1 {
			t.Errorf("item %s is in %d range feeds", id, m)
		}
	}
	t.Logf("%d items acknowledged, %d present, %d ranges after two kill -9 cycles during splits", n, len(seen), len(ranges))
	// With the server stopped, the data directory checks clean.
	stopServer(t, cmd)
	checkData(t, bin, data, "after two kill -9 cycles during splits")
}

type rangeInfo struct {
	ID      string   `json:"id"`
	Min     string   `json:"minInclusive"`
	Max     string   `json:"maxExclusive"`
	Parents []string `json:"parents"`
}

// pkRanges reads container db/k's ranges, sorted by their start.
func pkRanges(t *testing.T, hc *http.Client, endpoint string) []rangeInfo {
	t.Helper()
	return pkRangesOf(t, hc, endpoint, "k")
}

// pkRangesOf reads container db/coll's ranges, sorted by their start.
func pkRangesOf(t *testing.T, hc *http.Client, endpoint, coll string) []rangeInfo {
	t.Helper()
	resp, body, err := rawDo(context.Background(), hc, endpoint, http.MethodGet, "/dbs/db/colls/"+coll+"/pkranges", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("pkranges: %v %v", resp, err)
	}
	var f struct{ PartitionKeyRanges []rangeInfo }
	if err := json.Unmarshal(body, &f); err != nil {
		t.Fatal(err)
	}
	sort.Slice(f.PartitionKeyRanges, func(i, j int) bool { return f.PartitionKeyRanges[i].Min < f.PartitionKeyRanges[j].Min })
	return f.PartitionKeyRanges
}
