package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/status"
)

// TestDocMemory: writes reserve what indexing their documents takes from
// one budget (docmem.go) and hold it until they end: with the budget held
// elsewhere a write waits, then answers 429 having written nothing; once
// it is free the same write succeeds; and every kind of write, failed ones
// included, gives back what it reserved.
func TestDocMemory(t *testing.T) {
	docMemoryWait = 50 * time.Millisecond
	t.Cleanup(func() { docMemoryWait = 5 * time.Second })
	e := testEngine(t)
	ctx := context.Background()
	if _, err := e.CreateContainer("db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	pk := document.PartitionKey{{Kind: document.String, String: "a"}}
	big := []byte(fmt.Sprintf(`{"id":"big","pk":"a","arr":[%s]}`, strings.TrimSuffix(strings.Repeat("0,", 20_000), ",")))
	if w := docWeight(big); w < 20_000*docBytesPerValue {
		t.Fatalf("docWeight of 20,000 values = %d", w)
	}

	// Another write holds all but a little of the budget.
	if err := e.docMem.Acquire(ctx, docMemory-1<<20); err != nil {
		t.Fatal(err)
	}
	_, err := e.WriteItem(ctx, Write{DB: "db", Container: "c", Kind: Create, PK: pk, Body: big})
	if se, ok := errors.AsType[*status.Error](err); !ok || se.Code != http.StatusTooManyRequests {
		t.Fatalf("a write that cannot reserve: %v, want 429", err)
	}
	if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "c", ID: "big"}, pk, ""); err == nil {
		t.Fatal("the refused write stored its item")
	}
	// A small write fits in what is left.
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "c", Kind: Create, PK: pk, Body: []byte(`{"id":"small","pk":"a"}`)}); err != nil {
		t.Fatalf("a small write beside the held budget: %v", err)
	}
	e.docMem.Release(docMemory - 1<<20)

	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "c", Kind: Create, PK: pk, Body: big}); err != nil {
		t.Fatalf("the write once the budget is free: %v", err)
	}
	// A conflict, an upsert, a patch and deletes, then the budget is whole.
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "c", Kind: Create, PK: pk, Body: big}); err == nil {
		t.Fatal("a second create of big succeeded")
	}
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "c", Kind: Upsert, PK: pk, Body: big}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"big", "small"} {
		if _, err := e.DeleteItem(ctx, ItemRef{DB: "db", Container: "c", ID: id}, pk, "", TriggerSet{}); err != nil {
			t.Fatal(err)
		}
	}
	if !e.docMem.TryAcquire(docMemory) {
		t.Fatal("the writes did not give back what they reserved")
	}
	e.docMem.Release(docMemory)
}
