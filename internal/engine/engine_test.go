package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/store"
)

func testEngine(t testing.TB) *Engine {
	t.Helper()
	return testEngineWith(t, Config{})
}

// testEngineWith is testEngine with configuration cfg.
func testEngineWith(t testing.TB, cfg Config) *Engine {
	t.Helper()
	return testEngineAt(t, cfg, nil)
}

// testEngineAt is testEngineWith whose clock is now (nil: time.Now).
func testEngineAt(t testing.TB, cfg Config, now func() time.Time) *Engine {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir(), Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := openOn(t, t.Context(), st, cfg, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	if cfg.Replicated {
		// A cluster node's driver reconciles the keyspaces with the
		// catalog (format records, _rid blocks); here the test does.
		e.reconcile(t.Context())
	}
	return e
}

func code(err error) int {
	if se, ok := errors.AsType[*status.Error](err); ok {
		return se.Code
	}
	return 0
}

// TestConcurrentCreatesOfOneItem: of many racing creates of the same
// (pk, id), exactly one succeeds and the others get 409.
func TestConcurrentCreatesOfOneItem(t *testing.T) {
	e := testEngine(t)
	const racers = 32
	var wg sync.WaitGroup
	results := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			_, results[i] = e.WriteItem(context.Background(), Write{DB: "db", Container: "k", Kind: Create, PK: pkOf(0),
				Body: []byte(fmt.Sprintf(`{"id":"x","pk":"p0","writer":%d}`, i))})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		switch {
		case err == nil:
			ok++
		case code(err) != http.StatusConflict:
			t.Errorf("racing create: %v, want success or 409", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d racing creates succeeded, want exactly 1", ok)
	}
}

// TestConcurrentConditionalReplaces: replaces that all read the same etag
// and race with If-Match — exactly one wins, the others get 412 (no lost
// update), and etags stay unique.
func TestConcurrentConditionalReplaces(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	first, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkOf(0), Body: []byte(`{"id":"x","pk":"p0","n":0}`)})
	if err != nil {
		t.Fatal(err)
	}
	const racers = 32
	var wg sync.WaitGroup
	results := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			_, results[i] = e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Replace, ID: "x", PK: pkOf(0), IfMatch: first.ETag,
				Body: []byte(fmt.Sprintf(`{"id":"x","pk":"p0","n":%d}`, i+1))})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		switch {
		case err == nil:
			ok++
		case code(err) != http.StatusPreconditionFailed:
			t.Errorf("racing replace: %v, want success or 412", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d conditional replaces won, want exactly 1", ok)
	}
}

// TestIfMatchOnMissingItem: If-Match holds a write to an existing item
// only, as in Cosmos DB: an upsert of a missing item with If-Match creates
// it (201), a create ignores the header, and an upsert of an existing item
// with another etag gets 412; a replace of a missing item stays 404.
func TestIfMatchOnMissingItem(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	const stale = `"00000000-0000-0000-0000-000000000000"`
	for _, w := range []struct {
		kind WriteKind
		id   string
		want int
	}{
		{Upsert, "u", http.StatusCreated},
		{Create, "c", http.StatusCreated},
		{Upsert, "u", http.StatusPreconditionFailed},
		{Replace, "missing", http.StatusNotFound},
	} {
		res, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: w.kind, ID: w.id, PK: pkOf(0), IfMatch: stale,
			Body: []byte(`{"id":"` + w.id + `","pk":"p0"}`)})
		got := code(err)
		if err == nil && res.Created {
			got = http.StatusCreated
		}
		if got != w.want {
			t.Errorf("%v of %s with If-Match %s: %d (%v), want %d", w.kind, w.id, stale, got, err, w.want)
		}
	}
}

// TestETagNotReusedByRecreatedContainer: an item of a container deleted
// and created again under its name never gets an etag an item of the old
// container had, though the new container's LSNs start again: a stale
// If-Match fails (412). Both items had etag ...0001, and a replace holding
// the old item's etag overwrote the new item (a conditional-request hunt).
func TestETagNotReusedByRecreatedContainer(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	write := func(ifMatch string) (Result, error) {
		return e.WriteItem(ctx, Write{DB: "db", Container: "r", Kind: Upsert, PK: pkOf(0), IfMatch: ifMatch,
			Body: []byte(`{"id":"x","pk":"p0"}`)})
	}
	var etags []string
	for range 2 {
		if _, err := e.CreateContainer("db", []byte(`{"id":"r","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
			t.Fatal(err)
		}
		res, err := write("")
		if err != nil {
			t.Fatal(err)
		}
		etags = append(etags, res.ETag)
		if len(etags) == 1 {
			if err := e.DeleteContainer("db", "r", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	if etags[0] == etags[1] {
		t.Fatalf("the recreated container's item has the old item's etag %s", etags[0])
	}
	if _, err := write(etags[0]); code(err) != http.StatusPreconditionFailed {
		t.Fatalf("an upsert with the deleted container's item's etag: %v, want 412", err)
	}
	if _, err := write(etags[1]); err != nil {
		t.Fatalf("an upsert with the item's own etag: %v", err)
	}
}

// TestManyPartitionsInParallel: writers on distinct logical partitions do
// not block or lose each other's writes, and every item reads back.
func TestManyPartitionsInParallel(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				n := g*1000 + i
				if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pkOf(n),
					Body: []byte(fmt.Sprintf(`{"id":"%d","pk":"p%d"}`, n, n%100))}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	p, err := e.ReadFeed(ctx, "db", "k", Scope{}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 400 {
		t.Errorf("feed has %d items, want 400", len(p.Items))
	}
}

// openOn opens an engine on st through the local replica host, as the
// server does. Built with -tags invariants, a test's engine is checked
// (Check) when the test ends, before the cleanups registered earlier (its
// store's Close) run; see checkAtCleanup.
func openOn(t testing.TB, ctx context.Context, st *store.Store, cfg Config, now func() time.Time, log *slog.Logger) (*Engine, error) {
	host, err := replica.OpenLocal(ctx, st, log)
	if err != nil {
		return nil, err
	}
	e, err := New(ctx, host, host.Meta(), cfg, now, log)
	if err == nil && checkOnCleanup {
		checkAtCleanup(t, e)
	}
	return e, err
}

// countSpan counts the keys of span in every keyspace of container c.
func countSpan(t testing.TB, e *Engine, c *catalog.Container, sp replica.Span) int {
	t.Helper()
	n := 0
	for _, ks := range c.Keyspaces() {
		rep, err := e.host.Replica(ks)
		if err != nil {
			t.Fatal(err)
		}
		if err := replica.Scan(t.Context(), rep, sp, func(_, _ []byte) bool { n++; return true }); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// rewrite applies fn to a batch of every keyspace of container c, as a
// store from an older release or a damaged one would hold them.
func rewrite(t testing.TB, e *Engine, c *catalog.Container, fn func(b replica.Batch)) {
	t.Helper()
	for _, ks := range c.Keyspaces() {
		rep, err := e.host.Replica(ks)
		if err != nil {
			t.Fatal(err)
		}
		b := rep.NewBatch(false)
		fn(b)
		if err := rep.Commit(b); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
}
