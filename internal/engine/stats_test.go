package engine

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/store"
)

// TestLogicalPartitionCap: a write that would take a logical partition past
// the cap gets 403/1014 and stores nothing, whether alone or in a batch;
// other partitions, shrinking writes and deletes go on; the size survives a
// restart and is rebuilt for a store that never had it.
func TestLogicalPartitionCap(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Engine, *store.Store) {
		st, err := store.Open(store.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		e, err := openOn(t, t.Context(), st, Config{LogicalPartitionMaxBytes: 4000}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e, st
	}
	e, st := open()
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pad := strings.Repeat("x", 900)
	write := func(e *Engine, kind WriteKind, id string, pk int, n int) error {
		_, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: kind, ID: id, PK: pkN(pk),
			Body: fmt.Appendf(nil, `{"id":%q,"pk":"p%d","pad":%q}`, id, pk, pad[:n])})
		return err
	}
	count := func(e *Engine, pk int) int {
		p, err := e.QueryItems(ctx, "db", "k", Scope{PK: pkN(pk)}, Query{Text: "SELECT VALUE COUNT(1) FROM c"})
		if err != nil {
			t.Fatal(err)
		}
		return int(p.Items[0][0] - '0')
	}
	full := func(err error) bool {
		se, ok := err.(*status.Error)
		return ok && se.Code == http.StatusForbidden && se.Sub == status.SubForbiddenPKQuotaOverLimit && strings.Contains(se.Message, "maximum size")
	}
	// ~1.1 KB items (with system properties): three fit in 4000 bytes, a fourth does not.
	for i := range 3 {
		if err := write(e, Create, fmt.Sprint(i), 1, 900); err != nil {
			t.Fatal(err)
		}
	}
	if err := write(e, Create, "3", 1, 900); !full(err) {
		t.Fatalf("4th item: err %v, want 403/1014", err)
	}
	if n := count(e, 1); n != 3 {
		t.Errorf("after the refused write the partition holds %d items, want 3", n)
	}
	res, err := e.ExecuteBatch(ctx, "db", "k", pkN(1), []BatchOp{{Type: "Create", Body: []byte(`{"id":"b1","pk":"p1"}`)}, {Type: "Create", Body: fmt.Appendf(nil, `{"id":"b2","pk":"p1","pad":%q}`, pad)}})
	if err != nil || res.OK || len(res.Results) != 2 || res.Results[1].Status != http.StatusForbidden || res.Results[1].Sub != status.SubForbiddenPKQuotaOverLimit || res.Results[0].Status != http.StatusFailedDependency {
		t.Errorf("batch past the cap: %+v, %v; want the 2nd operation 403/1014 and the 1st 424", res, err)
	}
	if n := count(e, 1); n != 3 {
		t.Errorf("after a batch past the cap the partition holds %d items, want 3", n)
	}
	if err := write(e, Create, "other", 2, 900); err != nil {
		t.Errorf("another logical partition: %v", err)
	}
	if err := write(e, Replace, "0", 1, 100); err != nil {
		t.Errorf("a shrinking replace: %v", err)
	}
	if err := write(e, Create, "3", 1, 900); err != nil {
		t.Errorf("a write that fits after shrinking: %v", err)
	}
	if err := write(e, Create, "4", 1, 900); !full(err) {
		t.Fatalf("over the cap again: err %v, want 403/1014", err)
	}
	st.Close()

	// The size is kept across a restart...
	e, st = open()
	if err := write(e, Create, "4", 1, 900); !full(err) {
		t.Errorf("after a restart: err %v, want 403/1014", err)
	}
	// ...and rebuilt for a store that lost it.
	c, _ := e.container("db", "k")
	rewrite(t, e, c, func(b replica.Batch) {
		b.DeleteSpan(kindSpan(kindStats))
		b.Delete(formatKey)
	})
	st.Close()
	e, st = open()
	defer st.Close()
	if err := write(e, Create, "4", 1, 900); !full(err) {
		t.Errorf("after rebuilding the statistics: err %v, want 403/1014", err)
	}
	if _, err := e.DeleteItem(ctx, ItemRef{DB: "db", Container: "k", ID: "1"}, pkN(1), "", TriggerSet{}); err != nil {
		t.Fatal(err)
	}
	if err := write(e, Create, "4", 1, 900); err != nil {
		t.Errorf("after a delete freed space: %v", err)
	}
}
