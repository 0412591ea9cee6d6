package floor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

// wrongKey is a valid base64 key that is not the server's.
const wrongKey = "dGhpcyBpcyBub3QgdGhlIGtleSBvZiB0aGUgZmxvb3Igc2VydmVyIGF0IGFsbCEhIQ=="

func statusOf(err error) int {
	if re, ok := errors.AsType[*azcore.ResponseError](err); ok {
		return re.StatusCode
	}
	return 0
}

// setup starts a floor server with database db and container c (/pk).
func setup(t *testing.T) (*testserver.Server, *azcosmos.ContainerClient) {
	t.Helper()
	s := testserver.StartFloor(t, testserver.Options{})
	cl := s.Client(t)
	ctx := t.Context()
	if _, err := cl.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := cl.NewDatabase("db")
	tp := azcosmos.NewManualThroughputProperties(24000)
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	c, _ := db.NewContainer("c")
	return s, c
}

func TestPointOperations(t *testing.T) {
	_, c := setup(t)
	ctx := t.Context()
	pk := azcosmos.NewPartitionKeyString("a")
	body := []byte(`{"id":"1","pk":"a","n":1}`)
	if _, err := c.CreateItem(ctx, pk, body, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateItem(ctx, pk, body, nil); statusOf(err) != http.StatusConflict {
		t.Fatalf("second create: %v, want 409", err)
	}
	up, err := c.UpsertItem(ctx, pk, []byte(`{"id":"1","pk":"a","n":2}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.ReadItem(ctx, pk, "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(r.Value, &got); err != nil {
		t.Fatal(err)
	}
	if got["n"] != 2.0 || got["_rid"] == nil || got["_etag"] != string(up.ETag) || r.ETag != up.ETag {
		t.Fatalf("read = %s (etag %s), want n 2 with system properties and etag %s", r.Value, r.ETag, up.ETag)
	}
	if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("b"), "1", nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("read under another key: %v, want 404", err)
	}
	if _, err := c.ReplaceItem(ctx, pk, "1", []byte(`{"id":"1","pk":"a","n":3}`), &azcosmos.ItemOptions{IfMatchEtag: &up.ETag}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReplaceItem(ctx, pk, "1", []byte(`{"id":"1","pk":"a","n":4}`), &azcosmos.ItemOptions{IfMatchEtag: &up.ETag}); statusOf(err) != http.StatusPreconditionFailed {
		t.Fatalf("replace with a stale etag: %v, want 412", err)
	}
	if _, err := c.UpsertItem(ctx, pk, []byte(`{"id":"2","pk":"b"}`), nil); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("upsert with a mismatched key: %v, want 400", err)
	}
	if _, err := c.DeleteItem(ctx, pk, "1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadItem(ctx, pk, "1", nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("read after delete: %v, want 404", err)
	}
	if _, err := c.ReplaceItem(ctx, pk, "1", body, nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("replace after delete: %v, want 404", err)
	}
	ranges, err := c.ReadFeedRanges(ctx, nil)
	if err != nil || len(ranges) != 1 {
		t.Fatalf("feed ranges = %v, %v; want one", ranges, err)
	}
	if _, err := c.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx, nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("read of a deleted container: %v, want 404", err)
	}
	if _, err := c.Delete(ctx, nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("second delete of the container: %v, want 404", err)
	}
}

// drain runs a query to its end with page size n and returns the ids and
// the number of pages.
func drain(t *testing.T, c *azcosmos.ContainerClient, text string, pk azcosmos.PartitionKey, params []azcosmos.QueryParameter, n int32) ([]string, int) {
	t.Helper()
	p := c.NewQueryItemsPager(text, pk, &azcosmos.QueryOptions{QueryParameters: params, PageSizeHint: n})
	var ids []string
	pages := 0
	for p.More() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		pages++
		for _, it := range page.Items {
			var v struct{ ID string }
			if err := json.Unmarshal(it, &v); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, v.ID)
		}
	}
	return ids, pages
}

func TestQueryPaging(t *testing.T) {
	_, c := setup(t)
	ctx := context.Background()
	const n = 100 // 10 keys of 10 items; half of them odd
	for i := range n {
		body := fmt.Sprintf(`{"id":"%03d","pk":"k%d","odd":%d,"name":"x%d"}`, i, i%10, i%2, i)
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("k%d", i%10)), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DeleteItem(ctx, azcosmos.NewPartitionKeyString("k3"), "003", nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		text      string
		pk        azcosmos.PartitionKey
		params    []azcosmos.QueryParameter
		page      int32
		rows      int
		wantPages int // 0: don't check
	}{
		{"all", "SELECT * FROM c", azcosmos.NewPartitionKey(), nil, 7, n - 1, 15},
		{"one key", "SELECT * FROM c WHERE c.pk = @pk", azcosmos.NewPartitionKeyString("k3"),
			[]azcosmos.QueryParameter{{Name: "@pk", Value: "k3"}}, 3, 9, 3},
		{"cross filter", "select * from r where r.odd = @o", azcosmos.NewPartitionKey(),
			[]azcosmos.QueryParameter{{Name: "@o", Value: 1}}, 10, 49, 0},
		{"unbounded page", "SELECT * FROM c WHERE c.odd=0", azcosmos.NewPartitionKey(), nil, -1, 50, 1},
		{"conjunction with literal", "SELECT * FROM c WHERE c.odd = 0 AND 'x4' = c.name", azcosmos.NewPartitionKey(), nil, 100, 1, 1},
		{"no match", "SELECT * FROM c WHERE c.missing = null", azcosmos.NewPartitionKey(), nil, 100, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, pages := drain(t, c, tt.text, tt.pk, tt.params, tt.page)
			if len(ids) != tt.rows {
				t.Fatalf("%d rows, want %d: %v", len(ids), tt.rows, ids)
			}
			seen := map[string]bool{}
			for _, id := range ids {
				if seen[id] {
					t.Fatalf("id %s returned twice", id)
				}
				seen[id] = true
			}
			if tt.wantPages > 0 && pages != tt.wantPages {
				t.Fatalf("%d pages, want %d", pages, tt.wantPages)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	s, c := setup(t)
	ctx := t.Context()
	for _, q := range []string{"SELECT c.id FROM c", "SELECT * FROM c WHERE c.n > 1", "SELECT * FROM c ORDER BY c.id", "SELECT VALUE COUNT(1) FROM c"} {
		p := c.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), nil)
		if _, err := p.NextPage(ctx); statusOf(err) != http.StatusBadRequest {
			t.Errorf("%s: %v, want 400", q, err)
		}
	}
	// Patch is not served: a clear 400, not a silent success.
	ops := azcosmos.PatchOperations{}
	ops.AppendSet("/n", 1)
	if _, err := c.PatchItem(ctx, azcosmos.NewPartitionKeyString("a"), "1", ops, nil); statusOf(err) != http.StatusBadRequest {
		t.Errorf("patch: %v, want 400", err)
	}
	wrong := s.ClientWithKey(t, wrongKey)
	db, _ := wrong.NewDatabase("db")
	wc, _ := db.NewContainer("c")
	if _, err := wc.ReadItem(ctx, azcosmos.NewPartitionKeyString("a"), "1", nil); statusOf(err) != http.StatusUnauthorized {
		t.Errorf("read with a wrong key: %v, want 401", err)
	}
}
