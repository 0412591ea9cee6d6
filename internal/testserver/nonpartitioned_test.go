package testserver_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

// legacyVersion is an API version from before Cosmos DB required a partition
// key (the .NET SDK's tests create non-partitioned containers with
// 2018-08-31; 2018-06-18 is older still).
const legacyVersion = "2018-06-18"

// TestNonPartitionedContainer checks a container created without a partition
// key by an old API version: Cosmos DB gives it the system key /_partitionKey
// (Hash, version 1, systemKey), its items without _partitionKey form the
// none partition (empty EPK), and the SDKs use it: azcosmos with
// NewPartitionKey() (no header), raw requests with [] or [{}], a legacy
// client with no header at all. A current API version still gets 400.
func TestNonPartitionedContainer(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	old := map[string]string{"x-ms-version": legacyVersion}

	// A current version without a partition key: Cosmos DB's 400.
	resp, body, err := s.Do(ctx, http.MethodPost, "/dbs/db/colls", nil, []byte(`{"id":"fixed"}`))
	if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "A Partition key definition is not specified in the request.") {
		t.Fatalf("create without partitionKey at the current version: %v %s %v, want 400 naming the missing definition", resp.Status, body, err)
	}

	// The old version creates it, with the system key.
	resp, body, err = s.Do(ctx, http.MethodPost, "/dbs/db/colls", old, []byte(`{"id":"fixed"}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create at %s: %v %s %v", legacyVersion, resp.Status, body, err)
	}
	var def struct {
		PartitionKey struct {
			Paths     []string
			Kind      string
			Version   int
			SystemKey bool
		}
	}
	if err := json.Unmarshal(body, &def); err != nil {
		t.Fatal(err)
	}
	if pk := def.PartitionKey; !slices.Equal(pk.Paths, []string{"/_partitionKey"}) || pk.Kind != "Hash" || pk.Version != 1 || !pk.SystemKey {
		t.Fatalf("partitionKey = %+v, want /_partitionKey, Hash, version 1, systemKey", pk)
	}

	// A legacy client writes without a partition key header.
	resp, body, err = s.Do(ctx, http.MethodPost, "/dbs/db/colls/fixed/docs", old, []byte(`{"id":"legacy","v":1}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("legacy create: %v %s %v", resp.Status, body, err)
	}

	// azcosmos: NewPartitionKey() (no header) is the none partition; a
	// _partitionKey value is a logical partition of its own.
	d, _ := c.NewDatabase("db")
	k, _ := d.NewContainer("fixed")
	none := azcosmos.NewPartitionKey()
	if _, err := k.CreateItem(ctx, none, mustJSON(t, map[string]any{"id": "sdk", "v": 2}), nil); err != nil {
		t.Fatalf("create in the none partition: %v", err)
	}
	if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString("p1"), mustJSON(t, map[string]any{"id": "keyed", "_partitionKey": "p1"}), nil); err != nil {
		t.Fatalf("create with _partitionKey: %v", err)
	}
	for _, id := range []string{"legacy", "sdk"} {
		r, err := k.ReadItem(ctx, none, id, nil)
		if err != nil {
			t.Fatalf("read %s with NewPartitionKey(): %v", id, err)
		}
		var got struct{ ID string }
		if err := json.Unmarshal(r.Value, &got); err != nil || got.ID != id {
			t.Fatalf("read %s = %s, %v", id, r.Value, err)
		}
	}
	if _, err := k.ReadItem(ctx, none, "keyed", nil); err == nil {
		t.Errorf("read of a keyed item in the none partition succeeded, want 404")
	}
	if _, err := k.ReadItem(ctx, azcosmos.NewPartitionKeyString("p1"), "keyed", nil); err != nil {
		t.Errorf("read keyed: %v", err)
	}
	if _, err := k.ReplaceItem(ctx, none, "sdk", mustJSON(t, map[string]any{"id": "sdk", "v": 3}), nil); err != nil {
		t.Errorf("replace in the none partition: %v", err)
	}
	// A body whose _partitionKey disagrees with the none partition is refused.
	_, err = k.CreateItem(ctx, none, mustJSON(t, map[string]any{"id": "x", "_partitionKey": "p2"}), nil)
	wantStatus(t, "create of a keyed item in the none partition", err, http.StatusBadRequest)

	// The headers the other SDKs send for PartitionKey.None: [] (.NET and
	// @azure/cosmos on a system key) and [{}] (Undefined).
	for _, h := range []string{`[]`, `[{}]`} {
		resp, body, err := s.Do(ctx, http.MethodGet, "/dbs/db/colls/fixed/docs/legacy", map[string]string{"x-ms-documentdb-partitionkey": h}, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("read with header %s: %v %s %v", h, resp.Status, body, err)
		}
	}

	// Queries: the whole container finds all three; the none partition
	// ([] header) only its two.
	if got := queryIDs(t, k, "SELECT * FROM c", none); !slices.Equal(got, []string{"keyed", "legacy", "sdk"}) {
		t.Errorf("cross-partition query = %v, want all three", got)
	}
	resp, body, err = s.Do(ctx, http.MethodPost, "/dbs/db/colls/fixed/docs", map[string]string{
		"x-ms-documentdb-partitionkey": "[]", "x-ms-documentdb-isquery": "true", "Content-Type": "application/query+json",
	}, []byte(`{"query":"SELECT VALUE c.id FROM c ORDER BY c.id"}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("query of the none partition: %v %s %v", resp.Status, body, err)
	}
	var page struct{ Documents []string }
	if err := json.Unmarshal(body, &page); err != nil || !slices.Equal(page.Documents, []string{"legacy", "sdk"}) {
		t.Errorf("query of the none partition = %s, %v; want legacy and sdk", body, err)
	}

	// The definition round-trips through the SDK: a replace that changes the
	// indexing policy keeps the system key (azcosmos drops systemKey).
	cr, err := k.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	props := *cr.ContainerProperties
	props.IndexingPolicy.ExcludedPaths = append(props.IndexingPolicy.ExcludedPaths, azcosmos.ExcludedPath{Path: "/big/*"})
	if _, err := k.Replace(ctx, props, nil); err != nil {
		t.Fatalf("replace of the container's definition: %v", err)
	}
	resp, body, err = s.Do(ctx, http.MethodGet, "/dbs/db/colls/fixed", nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"systemKey":true`) {
		t.Errorf("read after replace: %v %s %v, want the system key kept", resp.Status, body, err)
	}

	if _, err := k.DeleteItem(ctx, none, "legacy", nil); err != nil {
		t.Errorf("delete in the none partition: %v", err)
	}
}

// queryIDs runs query on k with pk and returns the ids found, sorted.
func queryIDs(t *testing.T, k *azcosmos.ContainerClient, query string, pk azcosmos.PartitionKey) []string {
	t.Helper()
	var ids []string
	pager := k.NewQueryItemsPager(query, pk, nil)
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatalf("query %q: %v", query, err)
		}
		for _, item := range page.Items {
			var v struct{ ID string }
			if err := json.Unmarshal(item, &v); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, v.ID)
		}
	}
	slices.Sort(ids)
	return ids
}
