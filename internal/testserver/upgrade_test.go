package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/google/go-cmp/cmp"

	"github.com/partitadb/partita/internal/testserver"
)

// upgradeState is what clients see of a data directory: per container, its
// resource, partition key ranges, scripts and every item with its system
// properties.
type upgradeState struct {
	Containers []upgradeContainer `json:"containers"`
}

type upgradeContainer struct {
	DB, ID    string
	Resource  map[string]any   `json:"resource"`
	PKRanges  []map[string]any `json:"pkranges"`
	Scripts   []string         `json:"scripts"`
	Items     []map[string]any `json:"items"`
	ChangeIDs []string         `json:"changeIds"` // the change feed of every range from the beginning, ids sorted
}

func getJSON(t *testing.T, s *testserver.Server, path string, headers map[string]string) map[string]any {
	t.Helper()
	resp, body, err := s.Do(t.Context(), http.MethodGet, path, headers, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %s %v", path, resp, body, err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return m
}

func objects(v any) []map[string]any {
	var out []map[string]any
	for _, x := range v.([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

// readUpgradeContainer reads what clients see of db/coll.
func readUpgradeContainer(t *testing.T, s *testserver.Server, db, coll string) upgradeContainer {
	t.Helper()
	base := "/dbs/" + db + "/colls/" + coll
	uc := upgradeContainer{DB: db, ID: coll, Resource: getJSON(t, s, base, nil)}
	uc.PKRanges = objects(getJSON(t, s, base+"/pkranges", nil)["PartitionKeyRanges"])
	for _, kind := range []string{"sprocs", "triggers", "udfs"} {
		for _, sc := range objects(getJSON(t, s, base+"/"+kind, nil)[map[string]string{"sprocs": "StoredProcedures", "triggers": "Triggers", "udfs": "UserDefinedFunctions"}[kind]]) {
			uc.Scripts = append(uc.Scripts, kind+"/"+sc["id"].(string)+"/"+sc["_etag"].(string))
		}
	}
	uc.Items = objects(getJSON(t, s, base+"/docs", map[string]string{"x-ms-max-item-count": "-1"})["Documents"])
	slices.SortFunc(uc.Items, func(a, b map[string]any) int { return strings.Compare(fmt.Sprint(a["_rid"]), fmt.Sprint(b["_rid"])) })
	for _, r := range uc.PKRanges {
		page := getJSON(t, s, base+"/docs", map[string]string{"A-IM": "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid": r["id"].(string), "x-ms-max-item-count": "-1"})
		for _, d := range objects(page["Documents"]) {
			uc.ChangeIDs = append(uc.ChangeIDs, d["id"].(string))
		}
	}
	slices.Sort(uc.ChangeIDs)
	return uc
}

// TestUpgradeFromFormat6 opens a data directory written by a release with
// storage format 6 (testdata/format6, made by TestGenerateUpgradeStore) and
// checks that clients see exactly what they saw before, and that the
// converted store keeps working: queries by index, unique keys, scripts,
// writes and splits.
func TestUpgradeFromFormat6(t *testing.T) {
	raw, err := os.ReadFile("testdata/format6/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var want upgradeState
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if b, err := exec.Command("tar", "-xzf", "testdata/format6/store.tar.gz", "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v %s", err, b)
	}
	for round := range 2 { // converted once; the second open finds nothing to do
		s := testserver.Start(t, testserver.Options{DataDir: dir})
		for _, wc := range want.Containers {
			got := readUpgradeContainer(t, s, wc.DB, wc.ID)
			if diff := cmp.Diff(wc, got); diff != "" {
				t.Fatalf("open %d: %s/%s differs from before the upgrade (-before +after):\n%s", round, wc.DB, wc.ID, diff)
			}
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}

	s := testserver.Start(t, testserver.Options{DataDir: dir})
	ctx := t.Context()
	c := s.Client(t)
	shop, _ := c.NewDatabase("shop")
	orders, _ := shop.NewContainer("orders")
	pk := azcosmos.NewPartitionKeyString

	// A query served by the range index, in order.
	pager := orders.NewQueryItemsPager("SELECT VALUE c.total FROM c WHERE c.customer = 'cust-07' ORDER BY c.total", pk("cust-07"), nil)
	var totals []float64
	for pager.More() {
		p, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			var v float64
			_ = json.Unmarshal(it, &v)
			totals = append(totals, v)
		}
	}
	if len(totals) == 0 || !slices.IsSorted(totals) {
		t.Fatalf("ORDER BY totals of cust-07 = %v", totals)
	}
	// The unique key still holds, a write gets a fresh etag, scripts run.
	_, err = orders.CreateItem(ctx, pk("cust-01"), mustJSON(t, map[string]any{"id": "dup", "customer": "cust-01", "email": "o001@example.com"}), nil)
	wantStatus(t, "a duplicate unique key after the upgrade", err, http.StatusConflict)
	old, err := orders.ReadItem(ctx, pk("cust-02"), "o002", nil)
	if err != nil {
		t.Fatal(err)
	}
	up, err := orders.UpsertItem(ctx, pk("cust-02"), mustJSON(t, map[string]any{"id": "o002", "customer": "cust-02", "email": "o002@example.com", "total": 5}), nil)
	if err != nil || up.ETag == old.ETag {
		t.Fatalf("upsert after the upgrade: etag %s (was %s), %v", up.ETag, old.ETag, err)
	}
	resp, body, err := s.Do(ctx, http.MethodPost, "/dbs/shop/colls/orders/sprocs/count", map[string]string{
		"Content-Type": "application/json", "x-ms-documentdb-partitionkey": `["cust-03"]`}, []byte("[]"))
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != "4" {
		t.Fatalf("sproc after the upgrade: %v %s %v", resp, body, err)
	}
	// A new item in a split child is found by its range's feed and change feed.
	if _, err := orders.CreateItem(ctx, pk("cust-29"), mustJSON(t, map[string]any{"id": "new", "customer": "cust-29", "email": "new@example.com"}), nil); err != nil {
		t.Fatal(err)
	}
	after := readUpgradeContainer(t, s, "shop", "orders")
	if len(after.Items) != len(want.Containers[0].Items)+1 || !slices.Contains(after.ChangeIDs, "new") {
		t.Fatalf("after a write: %d items (want %d), change feed %v", len(after.Items), len(want.Containers[0].Items)+1, after.ChangeIDs)
	}
	// The deleted container stays deleted.
	iot, _ := c.NewDatabase("iot")
	gone, _ := iot.NewContainer("gone")
	_, err = gone.Read(ctx, nil)
	wantStatus(t, "the container deleted before the upgrade", err, http.StatusNotFound)
}
