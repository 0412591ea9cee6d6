package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

func TestTransactionalBatch(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pk := azcosmos.NewPartitionKeyString("b")
	if _, err := k.CreateItem(ctx, pk, []byte(`{"id":"existing","pk":"b","n":1}`), nil); err != nil {
		t.Fatal(err)
	}

	b := k.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"1","pk":"b"}`), nil)
	b.UpsertItem([]byte(`{"id":"2","pk":"b"}`), nil)
	b.ReadItem("1", nil) // sees the create before it
	p := azcosmos.PatchOperations{}
	p.AppendIncrement("/n", 1)
	b.PatchItem("existing", p, nil)
	b.DeleteItem("2", nil)
	resp, err := k.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{201, 201, 200, 200, 204}
	if !resp.Success || len(resp.OperationResults) != len(want) {
		t.Fatalf("batch: success %v, %d results", resp.Success, len(resp.OperationResults))
	}
	for i, r := range resp.OperationResults {
		if r.StatusCode != want[i] || r.RequestCharge <= 0 {
			t.Errorf("op %d: status %d charge %v, want %d", i, r.StatusCode, r.RequestCharge, want[i])
		}
	}
	if len(resp.OperationResults[2].ResourceBody) == 0 {
		t.Errorf("read in a batch returned no body")
	}
	got, err := k.ReadItem(ctx, pk, "existing", nil)
	if err != nil || !jsonHas(t, got.Value, "n", 2.0) {
		t.Errorf("patched item = %s, %v", got.Value, err)
	}
	_, err = k.ReadItem(ctx, pk, "2", nil)
	wantStatus(t, "item created and deleted in one batch", err, http.StatusNotFound)

	// A failing batch writes nothing: the conflict carries 409, the others 424.
	b = k.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"3","pk":"b"}`), nil)
	b.ReplaceItem("existing", []byte(`{"id":"existing","pk":"b","n":100}`), nil)
	b.CreateItem([]byte(`{"id":"1","pk":"b"}`), nil)
	resp, err = k.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Success || resp.RawResponse.StatusCode != http.StatusMultiStatus {
		t.Fatalf("failing batch: success %v status %d", resp.Success, resp.RawResponse.StatusCode)
	}
	codes := []int32{resp.OperationResults[0].StatusCode, resp.OperationResults[1].StatusCode, resp.OperationResults[2].StatusCode}
	if codes[0] != 424 || codes[1] != 424 || codes[2] != 409 {
		t.Errorf("failing batch results %v, want [424 424 409]", codes)
	}
	_, err = k.ReadItem(ctx, pk, "3", nil)
	wantStatus(t, "create of a failed batch", err, http.StatusNotFound)
	got, _ = k.ReadItem(ctx, pk, "existing", nil)
	if !jsonHas(t, got.Value, "n", 2.0) {
		t.Errorf("replace of a failed batch was applied: %s", got.Value)
	}

	// An item of another logical partition is refused.
	b = k.NewTransactionalBatch(pk)
	b.CreateItem([]byte(`{"id":"x","pk":"other"}`), nil)
	resp, err = k.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil || resp.Success || resp.OperationResults[0].StatusCode != http.StatusBadRequest {
		t.Errorf("batch with another partition's item: %+v, %v", resp.OperationResults, err)
	}

	// At most 100 operations.
	b = k.NewTransactionalBatch(pk)
	for i := range 101 {
		b.UpsertItem([]byte(fmt.Sprintf(`{"id":"m%d","pk":"b"}`, i)), nil)
	}
	_, err = k.ExecuteTransactionalBatch(ctx, b, nil)
	wantStatus(t, "batch of 101 operations", err, http.StatusBadRequest)
}

func jsonHas(t *testing.T, doc []byte, key string, want any) bool {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return false
	}
	return m[key] == want
}

// TestBatchesNeverInterleave: concurrent batches each rewrite the same ten
// items with their own writer id; afterwards all ten carry one writer's id,
// and each counter was incremented exactly once per batch.
func TestBatchesNeverInterleave(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pk := azcosmos.NewPartitionKeyString("hot")
	if _, err := k.CreateItem(ctx, pk, []byte(`{"id":"counter","pk":"hot","n":0}`), nil); err != nil {
		t.Fatal(err)
	}
	const writers, rounds = 8, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for range rounds {
				b := k.NewTransactionalBatch(pk)
				for i := range 10 {
					b.UpsertItem([]byte(fmt.Sprintf(`{"id":"item%d","pk":"hot","writer":%d}`, i, w)), nil)
				}
				inc := azcosmos.PatchOperations{}
				inc.AppendIncrement("/n", 1)
				b.PatchItem("counter", inc, nil)
				resp, err := k.ExecuteTransactionalBatch(ctx, b, nil)
				if err != nil || !resp.Success {
					t.Errorf("batch of writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	writer := -1.0
	for i := range 10 {
		r, err := k.ReadItem(ctx, pk, fmt.Sprintf("item%d", i), nil)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(r.Value, &m)
		if writer < 0 {
			writer = m["writer"].(float64)
		} else if m["writer"].(float64) != writer {
			t.Fatalf("item%d was last written by writer %v, item0 by %v: batches interleaved", i, m["writer"], writer)
		}
	}
	r, _ := k.ReadItem(ctx, pk, "counter", nil)
	if !jsonHas(t, r.Value, "n", float64(writers*rounds)) {
		t.Errorf("counter = %s, want n = %d", r.Value, writers*rounds)
	}
}
