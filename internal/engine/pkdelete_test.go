package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

// pkdEngine opens an engine with cfg on a store in dir, with container u
// (partition key /pk, unique key /email, four physical partitions) in
// database db, creating them when create is set.
func pkdEngine(t *testing.T, st *store.Store, cfg Config, now func() time.Time, create bool) *Engine {
	t.Helper()
	e, err := openOn(t, t.Context(), st, cfg, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if create {
		if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
			t.Fatal(err)
		}
		def := `{"id":"u","partitionKey":{"paths":["/pk"]},"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/email"]}]}}`
		if _, err := e.CreateContainer("db", []byte(def), Throughput{Manual: 24000}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// fillPK creates n items of logical partition p<k> in u, ids p<k>-<i>.
func fillPK(t *testing.T, e *Engine, k, n int) {
	t.Helper()
	for i := range n {
		body := fmt.Appendf(nil, `{"id":"p%d-%d","pk":"p%d","email":"e%d@p%d","n":%d}`, k, i, k, i, k, i)
		if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "u", Kind: Create, PK: pkN(k), Body: body}); err != nil {
			t.Fatal(err)
		}
	}
}

// seenIDs returns the ids of u that a cross-partition query, the read feed,
// the change feed, and a query and the feed of logical partition pk (when
// not nil) see, checking that they agree, sorted.
func seenIDs(t *testing.T, e *Engine, pk document.PartitionKey) []string {
	t.Helper()
	ctx := t.Context()
	ids := func(items [][]byte) []string {
		out := []string{}
		for _, it := range items {
			var x struct{ ID string }
			if err := json.Unmarshal(it, &x); err != nil {
				t.Fatal(err)
			}
			out = append(out, x.ID)
		}
		slices.Sort(out)
		return out
	}
	sc := Scope{PK: pk}
	q, err := e.QueryItems(ctx, "db", "u", sc, Query{Text: "SELECT * FROM c", EnableCrossPartition: true, MaxItems: -1})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(q.Items)
	feed, err := e.ReadFeed(ctx, "db", "u", sc, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	if f := ids(feed.Items); !slices.Equal(f, got) {
		t.Errorf("the read feed sees %v, the query %v", f, got)
	}
	ch, err := e.ReadChanges(ctx, "db", "u", ChangeFeed{Scope: sc, MaxItems: -1})
	if err != nil {
		t.Fatal(err)
	}
	if c := ids(ch.Items); !slices.Equal(c, got) {
		t.Errorf("the change feed sees %v, the query %v", c, got)
	}
	return got
}

// mustCheck fails the test unless the engine's store checks clean.
func mustCheck(t *testing.T, e *Engine) {
	t.Helper()
	r, err := e.Check(context.Background())
	if err != nil || !r.OK() {
		t.Fatalf("check: %v\n%s", err, r)
	}
}

// TestDeletePartition: the partition key delete removes every item of the
// logical partition, with their derived entries and statistics, and
// nothing else; it charges a delete's request units per item; refuses a
// request without a partition key; and leaves the store consistent.
func TestDeletePartition(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := pkdEngine(t, st, Config{}, nil, true)
	fillPK(t, e, 1, 30)
	fillPK(t, e, 2, 20)
	fillPK(t, e, 3, 5)

	res, err := e.DeletePartition(t.Context(), "db", "u", pkN(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || res.Deleted != 30 || res.RU < 30*5 || res.Session == "" {
		t.Errorf("DeletePartition = %+v, want done, 30 deleted, at least a delete's charge each, a session", res)
	}
	if ids := seenIDs(t, e, nil); len(ids) != 25 || slices.ContainsFunc(ids, func(id string) bool { return id[:2] == "p1" }) {
		t.Errorf("after the delete, the container shows %v", ids)
	}
	if ids := seenIDs(t, e, pkN(2)); len(ids) != 20 {
		t.Errorf("logical partition p2 shows %v", ids)
	}
	c, _ := e.cat.Container("db", "u")
	loc, _ := locate(c, pkN(1), "")
	if n := countSpan(t, e, c, logicalSpan(loc.epk, loc.pkEnc)); n != 0 {
		t.Errorf("%d items of p1 left in the store", n)
	}
	if n := countSpan(t, e, c, statsEPKSpan(loc.epk, append(bytes.Clone(loc.epk), 0))); n != 0 {
		t.Errorf("p1's statistics are left: %d", n)
	}
	if len(e.pkdel.all()) != 0 {
		t.Errorf("pending deletes after a complete one: %v", e.pkdel.all())
	}
	if recs, err := e.cat.PKDeletes(t.Context()); err != nil || len(recs) != 0 {
		t.Errorf("catalog records after a complete delete: %v, %v", recs, err)
	}
	// Unique keys of the deleted items are free again.
	if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "u", Kind: Create, PK: pkN(1),
		Body: []byte(`{"id":"new","pk":"p1","email":"e3@p1"}`)}); err != nil {
		t.Errorf("create in the emptied partition: %v", err)
	}
	// An empty partition is deleted at once.
	if res, err := e.DeletePartition(t.Context(), "db", "u", pkN(9)); err != nil || !res.Done || res.Deleted != 0 {
		t.Errorf("delete of an empty partition = %+v, %v", res, err)
	}
	if _, err := e.DeletePartition(t.Context(), "db", "u", nil); code(err) != http.StatusBadRequest {
		t.Errorf("delete without a partition key: %v, want 400", err)
	}
	if _, err := e.DeletePartition(t.Context(), "db", "nope", pkN(1)); code(err) != http.StatusNotFound {
		t.Errorf("delete in an unknown container: %v, want 404", err)
	}
	mustCheck(t, e)
}

// TestDeletePartitionBackground: a partition larger than PKDeleteSyncItems
// is hidden from every read path when the call returns and deleted in the
// background; writes after the call survive it, and may reuse the ids and
// unique key values of hidden items; a restart resumes the deletion; the
// store is consistent throughout.
func TestDeletePartitionBackground(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{PKDeleteSyncItems: 10}
	e := pkdEngine(t, st, cfg, nil, true)
	fillPK(t, e, 1, 350)
	fillPK(t, e, 2, 7)

	res, err := e.DeletePartition(t.Context(), "db", "u", pkN(1))
	if err != nil {
		t.Fatal(err)
	}
	if res.Done || res.Deleted != pkDeleteBatchItems {
		t.Fatalf("DeletePartition = %+v, want one batch done and the rest left", res)
	}
	if ids := seenIDs(t, e, pkN(1)); len(ids) != 0 {
		t.Errorf("hidden partition shows %v", ids)
	}
	if ids := seenIDs(t, e, nil); len(ids) != 7 {
		t.Errorf("container shows %v, want p2's 7 items", ids)
	}
	if _, err := e.ReadItem(t.Context(), ItemRef{DB: "db", Container: "u", ID: "p1-300"}, pkN(1), ""); code(err) != http.StatusNotFound {
		t.Errorf("read of a hidden item: %v, want 404", err)
	}
	// A write after the delete: the id and the unique key value of hidden items.
	if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "u", Kind: Create, PK: pkN(1),
		Body: []byte(`{"id":"p1-300","pk":"p1","email":"e301@p1","after":true}`)}); err != nil {
		t.Fatalf("create over a hidden item: %v", err)
	}
	if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "u", Kind: Replace, ID: "p1-301", PK: pkN(1),
		Body: []byte(`{"id":"p1-301","pk":"p1"}`)}); code(err) != http.StatusNotFound {
		t.Errorf("replace of a hidden item: %v, want 404", err)
	}
	mustCheck(t, e)

	// Restart before the background deletion ran: the delete is still pending, and
	// its items still hidden.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = store.Open(store.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e = pkdEngine(t, st, cfg, nil, false)
	if got := len(e.pkdel.all()); got != 1 {
		t.Fatalf("%d pending deletes after the restart, want 1", got)
	}
	if ids := seenIDs(t, e, pkN(1)); !slices.Equal(ids, []string{"p1-300"}) {
		t.Errorf("after the restart, p1 shows %v, want the item written after the delete", ids)
	}

	// The background deletion (what Run does) finishes the work.
	for _, d := range e.pkdel.all() {
		if err := e.finishPKDelete(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.pkdel.all(); len(got) != 0 {
		t.Errorf("pending deletes after the background deletion: %v", got)
	}
	if recs, err := e.cat.PKDeletes(t.Context()); err != nil || len(recs) != 0 {
		t.Errorf("catalog records after the background deletion: %v, %v", recs, err)
	}
	c, _ := e.cat.Container("db", "u")
	loc, _ := locate(c, pkN(1), "")
	if n := countSpan(t, e, c, logicalSpan(loc.epk, loc.pkEnc)); n != 1 {
		t.Errorf("%d items of p1 in the store, want the one written after the delete", n)
	}
	r, err := e.ReadItem(t.Context(), ItemRef{DB: "db", Container: "u", ID: "p1-300"}, pkN(1), "")
	if err != nil || !json.Valid(r.Body) {
		t.Fatalf("the item written after the delete: %v", err)
	}
	var after struct{ After bool }
	if json.Unmarshal(r.Body, &after); !after.After {
		t.Errorf("the item written after the delete is %s", r.Body)
	}
	mustCheck(t, e)
}

// TestDeletePartitionRunsInRun: Engine.Run picks up the work a delete
// leaves.
func TestDeletePartitionRunsInRun(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := pkdEngine(t, st, Config{PKDeleteSyncItems: 1, SplitCheckInterval: time.Hour, TTLPurgeInterval: time.Hour}, nil, true)
	fillPK(t, e, 1, 250)
	ended := make(chan struct{}, 1)
	testHookPKDeleteEnded = func() { ended <- struct{}{} }
	t.Cleanup(func() { testHookPKDeleteEnded = nil })
	if res, err := e.DeletePartition(t.Context(), "db", "u", pkN(1)); err != nil || res.Done {
		t.Fatalf("DeletePartition = %+v, %v, want work left", res, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not finish the partition key delete in 30 s")
	}
	if got := e.pkdel.all(); len(got) != 0 {
		t.Errorf("pending deletes after Run finished: %v", got)
	}
	c, _ := e.cat.Container("db", "u")
	loc, _ := locate(c, pkN(1), "")
	if n := countSpan(t, e, c, logicalSpan(loc.epk, loc.pkEnc)); n != 0 {
		t.Errorf("%d items of p1 left", n)
	}
}

// TestDeletePartitionThrottled: with rate limiting, a delete on a
// partition out of budget is refused with 429 before it does anything.
func TestDeletePartitionThrottled(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)} // frozen: the budget never refills
	e, err := openOn(t, t.Context(), st, Config{RateLimit: true}, clock.now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"u","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	written := 0
	for i := 0; ; i++ {
		_, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "u", Kind: Create, PK: pkN(1),
			Body: fmt.Appendf(nil, `{"id":"x%d","pk":"p1"}`, i)})
		if code(err) == http.StatusTooManyRequests {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		written++
	}
	if _, err := e.DeletePartition(t.Context(), "db", "u", pkN(1)); code(err) != http.StatusTooManyRequests {
		t.Fatalf("delete with no budget left: %v, want 429", err)
	}
	c, _ := e.cat.Container("db", "u")
	loc, _ := locate(c, pkN(1), "")
	if n := countSpan(t, e, c, logicalSpan(loc.epk, loc.pkEnc)); n != written {
		t.Errorf("%d items left of %d: a refused delete deleted some", n, written)
	}
	if recs, _ := e.cat.PKDeletes(t.Context()); len(recs) != 0 || len(e.pkdel.all()) != 0 {
		t.Errorf("a refused delete left a pending record: %v", recs)
	}
}

// TestPKDeleteRecordsOfDeletedContainer: a container deleted while a
// partition key delete is pending takes the record along, and the pending
// delete ends.
func TestPKDeleteRecordsOfDeletedContainer(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := pkdEngine(t, st, Config{PKDeleteSyncItems: 1}, nil, true)
	fillPK(t, e, 1, 150)
	if res, err := e.DeletePartition(t.Context(), "db", "u", pkN(1)); err != nil || res.Done {
		t.Fatalf("DeletePartition = %+v, %v, want work left", res, err)
	}
	if err := e.DeleteContainer("db", "u", ""); err != nil {
		t.Fatal(err)
	}
	for _, d := range e.pkdel.all() {
		if err := e.finishPKDelete(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.pkdel.all(); len(got) != 0 {
		t.Errorf("pending deletes of a deleted container: %v", got)
	}
	var recs []catalog.PKDelete
	if recs, err = e.cat.PKDeletes(t.Context()); err != nil || len(recs) != 0 {
		t.Errorf("records of a deleted container: %v, %v", recs, err)
	}
}

// TestRoomFromInvisibleItems: items no read sees any more — hidden by a
// pending partition key delete, or past their time to live — count toward
// the logical partition's size cap only until a write needs their room: it
// erases them first (a bug hunt: a partition emptied by a delete, its
// background work pending, refused a 120 KB write with 403/1014 "holds
// 92642 bytes"; one whose items had expired, a 50 KB one).
func TestRoomFromInvisibleItems(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	const limit = 200_000
	e := pkdEngine(t, st, Config{PKDeleteSyncItems: 1, LogicalPartitionMaxBytes: limit}, clock, true)
	if _, err := e.CreateContainer("db", []byte(`{"id":"w","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	fill := func(pk string, ttl string) {
		t.Helper()
		pad := strings.Repeat("x", 500)
		for i := 0; ; i++ {
			body := fmt.Appendf(nil, `{"id":"%s-%d","pk":%q,"pad":%q%s}`, pk, i, pk, pad, ttl)
			_, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "w", Kind: Create, PK: lp(pk), Body: body})
			if code(err) == http.StatusForbidden {
				return // full
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	big := func(pk string, n int) error {
		body := fmt.Appendf(nil, `{"id":"big","pk":%q,"pad":%q}`, pk, strings.Repeat("y", n))
		_, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "w", Kind: Create, PK: lp(pk), Body: body})
		return err
	}
	fill("F", "")
	if err := big("F", 1000); code(err) != http.StatusForbidden {
		t.Fatalf("a write to a full partition: %v, want 403", err)
	}
	if _, err := e.DeletePartition(t.Context(), "db", "w", lp("F")); err != nil {
		t.Fatal(err)
	}
	if err := big("F", 120_000); err != nil {
		t.Errorf("a 120 KB write to a partition emptied by a pending delete: %v", err)
	}

	if _, err := e.ReplaceContainer("db", "w", []byte(`{"id":"w","partitionKey":{"paths":["/pk"]},"defaultTtl":-1}`), ""); err != nil {
		t.Fatal(err)
	}
	fill("T", `,"ttl":3`)
	now = now.Add(4 * time.Second)
	if err := big("T", 150_000); err != nil {
		t.Errorf("a 150 KB write to a partition whose items all expired: %v", err)
	}
	// Items still alive keep their room.
	fill("L", "")
	if err := big("L", 1000); code(err) != http.StatusForbidden {
		t.Errorf("a write to a partition full of live items: %v, want 403", err)
	}
}
