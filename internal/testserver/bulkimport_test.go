package testserver_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// bulkImport is the bulkImport stored procedure of Microsoft's documentation (Azure Cosmos DB
// server-side programming), as published.
const bulkImport = `function bulkImport(items) {
	var collection = getContext().getCollection();
	var collectionLink = collection.getSelfLink();
	var count = 0;
	if (!items) throw new Error("The array is undefined or null.");
	var numItems = items.length;
	if (numItems == 0) {
		getContext().getResponse().setBody(0);
		return;
	}
	tryCreate(items[count], callback);
	function tryCreate(item, callback) {
		var isAccepted = collection.createDocument(collectionLink, item, callback);
		if (!isAccepted) getContext().getResponse().setBody(count);
	}
	function callback(err, item, options) {
		if (err) throw err;
		count++;
		if (count >= numItems) {
			getContext().getResponse().setBody(count);
		} else {
			tryCreate(items[count], callback);
		}
	}
}`

// TestBulkImportSample imports 5,000 documents with the documentation's bulkImport, as a Cosmos
// DB client does: each execution creates what the operation budget allows (1,000 by default)
// and returns its count, and the client calls again with the rest. It failed with "Maximum call
// stack size exceeded" at about 400 documents while callbacks ran synchronously. Then an import
// that conflicts midway must leave nothing of itself.
func TestBulkImportSample(t *testing.T) {
	e := newScriptEnv(t)
	ctx := t.Context()
	e.create("sprocs", map[string]any{"id": "bulkImport", "body": bulkImport})

	const n = 5000
	docs := make([]map[string]any, n)
	for i := range docs {
		docs[i] = map[string]any{"id": "doc" + strconv.Itoa(i), "pk": "bulk", "n": i}
	}
	var counts []int
	for done := 0; done < n; {
		resp, body := e.exec("bulkImport", "bulk", docs[done:])
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("bulkImport from %d: %s %s", done, resp.Status, body)
		}
		count, err := strconv.Atoi(string(body))
		if err != nil || count <= 0 {
			t.Fatalf("bulkImport from %d returned %q, want a positive count", done, body)
		}
		counts = append(counts, count)
		done += count
		if len(counts) > 20 {
			t.Fatalf("no end after %d executions: %v", len(counts), counts)
		}
	}
	t.Logf("executions: %v", counts)
	if got := countItems(t, e.k, "bulk"); got != n {
		t.Errorf("COUNT(1) = %d after the import, want %d", got, n)
	}

	// A conflict in a callback fails the execution: its writes are rolled back.
	resp, body := e.exec("bulkImport", "bulk", []map[string]any{
		{"id": "new1", "pk": "bulk"}, {"id": "new2", "pk": "bulk"}, {"id": "doc7", "pk": "bulk"}})
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("bulkImport of a duplicate: %s %s, want 409", resp.Status, body)
	}
	_, err := e.k.ReadItem(ctx, azcosmos.NewPartitionKeyString("bulk"), "new1", nil)
	wantStatus(t, "item created before the conflict", err, http.StatusNotFound)
	if got := countItems(t, e.k, "bulk"); got != n {
		t.Errorf("COUNT(1) = %d after the failed import, want %d", got, n)
	}
}

// countItems counts the items of logical partition pk with a query.
func countItems(t *testing.T, c *azcosmos.ContainerClient, pk string) int {
	t.Helper()
	pager := c.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKeyString(pk), nil)
	total := 0
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Items {
			var v int
			if err := json.Unmarshal(item, &v); err != nil {
				t.Fatalf("COUNT(1) item %s: %v", item, err)
			}
			total += v
		}
	}
	return total
}
