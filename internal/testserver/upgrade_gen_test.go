package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

// TestGenerateUpgradeStore writes testdata/format6: a data directory made by
// a release (storage format 6, container-wide secondary entries) and what
// its clients saw, for TestUpgradeFromFormat6. It only runs when
// PARTITA_GEN_UPGRADE_STORE names the output directory; the committed copy
// was made at commit 9055496, the last release with format 6. Run it only
// with that release's code.
func TestGenerateUpgradeStore(t *testing.T) {
	out := os.Getenv("PARTITA_GEN_UPGRADE_STORE")
	if out == "" {
		t.Skip("PARTITA_GEN_UPGRADE_STORE is not set")
	}
	dir := t.TempDir()
	s := testserver.Start(t, testserver.Options{DataDir: dir})
	c := s.Client(t)
	ctx := t.Context()
	pk := func(v string) azcosmos.PartitionKey { return azcosmos.NewPartitionKeyString(v) }

	// orders: two physical partitions from its throughput, one of them
	// split, a unique key, a time to live, scripts.
	orders := newContainer(t, c, "shop", azcosmos.ContainerProperties{
		ID: "orders", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/customer"}},
		DefaultTimeToLive: ptr(int32(-1)),
		UniqueKeyPolicy:   &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}}},
	}, &azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(12000))})
	for i := range 120 {
		cust := fmt.Sprintf("cust-%02d", i%30)
		body := mustJSON(t, map[string]any{"id": fmt.Sprintf("o%03d", i), "customer": cust, "email": fmt.Sprintf("o%03d@example.com", i),
			"total": (i * 37) % 101, "status": []string{"new", "paid", "shipped"}[i%3], "lines": []any{map[string]any{"sku": i % 7, "n": 1 + i%4}}})
		if _, err := orders.CreateItem(ctx, pk(cust), body, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Rewrites and deletes move change entries and free unique values.
	for i := 0; i < 120; i += 9 {
		cust := fmt.Sprintf("cust-%02d", i%30)
		body := mustJSON(t, map[string]any{"id": fmt.Sprintf("o%03d", i), "customer": cust, "email": fmt.Sprintf("o%03d@example.com", i),
			"total": 1000 + i, "status": "refunded"})
		if _, err := orders.ReplaceItem(ctx, pk(cust), fmt.Sprintf("o%03d", i), body, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 4; i < 120; i += 11 {
		if _, err := orders.DeleteItem(ctx, pk(fmt.Sprintf("cust-%02d", i%30)), fmt.Sprintf("o%03d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	// An item with a long time to live (it must not expire in the test).
	if _, err := orders.CreateItem(ctx, pk("cust-00"), mustJSON(t, map[string]any{"id": "ttl", "customer": "cust-00", "email": "ttl@example.com", "ttl": 1 << 30}), nil); err != nil {
		t.Fatal(err)
	}
	resp, body, err := s.Do(ctx, http.MethodPost, "/_partita/dbs/shop/colls/orders/pkranges/0/split", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("split: %v %s %v", resp, body, err)
	}
	for _, sc := range []struct {
		kind string
		def  map[string]any
	}{
		{"sprocs", map[string]any{"id": "count", "body": `function count() { var n = 0; __.queryDocuments(__.getSelfLink(), 'SELECT * FROM c', {}, function (err, docs) { if (err) throw err; getContext().getResponse().setBody(docs.length); }); }`}},
		{"triggers", map[string]any{"id": "stamp", "triggerType": "Pre", "triggerOperation": "Create", "body": `function stamp() { var r = getContext().getRequest(); var d = r.getBody(); d.stamped = true; r.setBody(d); }`}},
		{"udfs", map[string]any{"id": "double", "body": `function double(x) { return 2 * x; }`}},
	} {
		resp, body, err := s.Do(ctx, http.MethodPost, "/dbs/shop/colls/orders/"+sc.kind, map[string]string{"Content-Type": "application/json"}, mustJSON(t, sc.def))
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %v %s %v", sc.kind, resp, body, err)
		}
	}

	// readings: a hierarchical partition key, a composite index.
	readings := newContainer(t, c, "iot", azcosmos.ContainerProperties{
		ID: "readings", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/site", "/device"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2},
		IndexingPolicy: &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths:    []azcosmos.IncludedPath{{Path: "/*"}},
			CompositeIndexes: [][]azcosmos.CompositeIndex{{{Path: "/site", Order: azcosmos.CompositeIndexAscending}, {Path: "/t", Order: azcosmos.CompositeIndexDescending}}}},
	}, nil)
	for i := range 40 {
		site, dev := fmt.Sprintf("s%d", i%3), fmt.Sprintf("d%d", i%5)
		key := azcosmos.NewPartitionKeyString(site).AppendString(dev)
		if _, err := readings.CreateItem(ctx, key, mustJSON(t, map[string]any{"id": fmt.Sprintf("r%02d", i), "site": site, "device": dev, "t": i, "v": float64(i) / 4}), nil); err != nil {
			t.Fatal(err)
		}
	}
	// A container deleted before the upgrade: none of its items may come back.
	gone := newContainer(t, c, "iot", azcosmos.ContainerProperties{ID: "gone", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/k"}}}, nil)
	if _, err := gone.CreateItem(ctx, pk("a"), mustJSON(t, map[string]any{"id": "x", "k": "a"}), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}

	want := upgradeState{}
	for _, dc := range [][2]string{{"shop", "orders"}, {"iot", "readings"}} {
		want.Containers = append(want.Containers, readUpgradeContainer(t, s, dc[0], dc[1]))
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.MarshalIndent(want, "", " ")
	if err := os.WriteFile(filepath.Join(out, "expected.json"), append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(out, "store.tar.gz")
	if b, err := exec.Command("tar", "-czf", tarball, "-C", dir, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, b)
	}
}
