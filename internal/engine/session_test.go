package engine

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
)

// lagHost is a replica.Host whose keyspaces in upTo have made visible only
// the LSNs up to the value, as a follower's copies behind their leaders.
type lagHost struct {
	*replica.Local
	upTo map[uint64]uint64
}

func (h *lagHost) Replica(id uint64) (replica.Replica, error) {
	r, err := h.Local.Replica(id)
	if n, ok := h.upTo[id]; ok && err == nil {
		return lagReplica{r, n}, nil
	}
	return r, err
}

type lagReplica struct {
	replica.Replica
	upTo uint64
}

func (r lagReplica) Visible(lsn uint64) bool { return lsn <= r.upTo }

// splitForty writes item a in forty logical partitions of db/k and splits
// its range 0 in two, returning the children.
func splitForty(t *testing.T, e *Engine) []PKRange {
	t.Helper()
	for i := range 40 {
		if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(i), Body: fmt.Appendf(nil, `{"id":"a","pk":"p%d"}`, i)}); err != nil {
			t.Fatal(err)
		}
	}
	children, err := e.SplitRange(t.Context(), "db", "k", "0")
	if err != nil {
		t.Fatal(err)
	}
	if len(children) != 2 {
		t.Fatalf("split into %v", children)
	}
	return children
}

// TestSessionAfterSplit: a session token naming a range since split is
// reached only when every range descended from it has reached it, each in
// its keyspace. One descendant's keyspace past the token does not vouch
// for another's behind it: the kill loop read through a restarted node a
// value 90 writes old, with the token of the write, from a separated
// child's keyspace still catching up, while its sibling's keyspace had
// passed the token.
func TestSessionAfterSplit(t *testing.T) {
	var host *lagHost
	e := engineOnHost(t, func(local *replica.Local) replica.Host {
		host = &lagHost{Local: local, upTo: map[uint64]uint64{}}
		return host
	}, Throughput{Manual: 400})
	c, err := e.cat.Container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	if rs := c.Map().Ranges(); len(rs) != 1 || rs[0].ID != "0" {
		t.Fatalf("ranges %v, want range 0 alone", rs)
	}
	children := splitForty(t, e)
	c, err = e.cat.Container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	// Give the second child a keyspace of its own, as a separation does.
	moved := children[1].ID
	from, _ := c.Keyspace(moved)
	if other, _ := c.Keyspace(children[0].ID); other == from {
		_, to, err := e.cat.BeginMove("db", "k", c.Internal, moved, from, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c, err = e.cat.MoveRange("db", "k", c.Internal, moved, from, to, 0); err != nil {
			t.Fatal(err)
		}
	}
	ks0, _ := c.Keyspace(children[0].ID)
	ks1, _ := c.Keyspace(moved)
	if ks0 == ks1 {
		t.Fatalf("the children share keyspace %d", ks0)
	}
	tok := []SessionToken{{RangeID: "0", LSN: 500}}
	for _, c := range []struct {
		upTo0, upTo1 uint64
		want         bool
	}{
		{1000, 10, false}, // the moved child's keyspace is behind
		{10, 1000, false}, // the other child's is
		{499, 499, false},
		{500, 500, true},
		{1000, 600, true},
	} {
		host.upTo[ks0], host.upTo[ks1] = c.upTo0, c.upTo1
		if got := e.SessionAvailable(t.Context(), "db", "k", tok, SessionOpts{}); got != c.want {
			t.Errorf("keyspaces %d and %d visible up to %d and %d: token 0#500 available = %v, want %v", ks0, ks1, c.upTo0, c.upTo1, got, c.want)
		}
		// A child's own token asks its keyspace alone.
		own := []SessionToken{{RangeID: moved, LSN: 500}}
		if got := e.SessionAvailable(t.Context(), "db", "k", own, SessionOpts{}); got != (c.upTo1 >= 500) {
			t.Errorf("keyspace %d visible up to %d: token %s#500 available = %v", ks1, c.upTo1, moved, got)
		}
	}
}

// TestSessionCheckedWhereRead: a read checks its session (WithSession)
// against the mapping of ranges to keyspaces it holds, not only the one the
// API waited on. A range moved to a keyspace of its own between the wait
// and the read is read there only once that keyspace has reached the
// session; until then the read fails with SessionBehind, having read
// nothing. Without the check the read found the new keyspace's copy still
// empty and answered 404 for an item the session had written (a session
// violation of the four-node kill loop: "read with the token … of the
// write …: not found").
func TestSessionCheckedWhereRead(t *testing.T) {
	var host *lagHost
	e := engineOnHost(t, func(local *replica.Local) replica.Host {
		host = &lagHost{Local: local, upTo: map[uint64]uint64{}}
		return host
	}, Throughput{Manual: 400})
	children := splitForty(t, e)
	moved := children[1].ID
	tok := []SessionToken{{RangeID: moved, LSN: 1}}
	if !e.SessionAvailable(t.Context(), "db", "k", tok, SessionOpts{}) {
		t.Fatal("the session is not available before the move")
	}
	// The move lands between the API's wait and the read: the new
	// keyspace here has applied nothing yet.
	c, err := e.cat.Container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	from, _ := c.Keyspace(moved)
	_, to, err := e.cat.BeginMove("db", "k", c.Internal, moved, from, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cat.MoveRange("db", "k", c.Internal, moved, from, to, 0); err != nil {
		t.Fatal(err)
	}
	host.upTo[to] = 0
	ctx := WithSession(t.Context(), tok, false)
	for i := range 40 {
		// Every read waits for the whole session, as the API's wait does.
		_, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "a"}, pkN(i), "")
		if !SessionBehind(err) {
			t.Fatalf("p%d: %v, want SessionBehind", i, err)
		}
		if se := status.From(err); se.Code != http.StatusNotFound || se.Sub != status.SubNotFoundReadSessionNotAvailable {
			t.Errorf("p%d: %d/%d, want 404/1002", i, se.Code, se.Sub)
		}
	}
	for _, q := range []func(context.Context) error{
		func(ctx context.Context) error {
			_, err := e.QueryItems(ctx, "db", "k", Scope{}, Query{Text: "SELECT * FROM c", EnableCrossPartition: true})
			return err
		},
		func(ctx context.Context) error { _, err := e.ReadFeed(ctx, "db", "k", Scope{}, 100, ""); return err },
		func(ctx context.Context) error {
			_, err := e.ReadChanges(WithSession(t.Context(), tok, true), "db", "k", ChangeFeed{})
			return err
		},
	} {
		if err := q(ctx); !SessionBehind(err) {
			t.Errorf("a query, read feed or change feed behind its session: %v, want SessionBehind", err)
		}
	}
	// What the check keeps the session from: read without it, the moved
	// items are not found in the new keyspace, which has applied nothing.
	missing := 0
	for i := range 40 {
		if _, err := e.ReadItem(t.Context(), ItemRef{DB: "db", Container: "k", ID: "a"}, pkN(i), ""); status.From(err).Code == http.StatusNotFound {
			missing++
		}
	}
	if missing == 0 {
		t.Fatal("no item of the moved range is missing from its empty keyspace")
	}
	host.upTo[to] = 1000
	for i := range 40 {
		if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "a"}, pkN(i), ""); SessionBehind(err) {
			t.Fatalf("p%d: behind its session once the keyspace reached it", i)
		}
	}
}

// sharedMeta is a catalog backend shared with another node's catalog (a
// second catalog on the same records): this node's catalog learns what the
// other wrote only when it syncs, as a cluster node's learns from etcd.
type sharedMeta struct {
	catalog.Backend
	syncs int
	cat   func() *catalog.Catalog // the catalog that syncs
}

func (s *sharedMeta) Lock(context.Context) (func(), error) { return func() {}, nil }

// Current syncs, as a lapsed node's catalog confirms itself; Propagated
// has nothing to wait for (the other catalog learns only when it syncs).
func (s *sharedMeta) Current(ctx context.Context) error       { return s.Sync(ctx) }
func (s *sharedMeta) Written() int64                          { return 0 }
func (s *sharedMeta) Propagated(context.Context, int64) error { return nil }

func (s *sharedMeta) Sync(ctx context.Context) error {
	s.syncs++
	c := s.cat()
	return s.Load(ctx, "", func(key string, v []byte) error { return c.Observe(key, v, false) })
}

// TestSessionSyncsForUnseenRange: a session token naming a range this
// node's catalog has not heard of yet (split off through another node) is
// resolved after syncing the catalog, not compared, as a foreign token is,
// with whichever keyspace is furthest ahead: that passed on another
// partition's keyspace while the range's own lagged.
func TestSessionSyncsForUnseenRange(t *testing.T) {
	local := openLocalReplicas(t)
	host := &lagHost{Local: local, upTo: map[uint64]uint64{}}
	var e *Engine
	meta := &sharedMeta{Backend: local.Meta(), cat: func() *catalog.Catalog { return e.cat }}
	e, err := New(t.Context(), host, meta, Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 12000}); err != nil {
		t.Fatal(err)
	}
	c, err := e.cat.Container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	rs := c.Map().Ranges()
	if len(rs) != 2 {
		t.Fatalf("ranges %v, want two", rs)
	}
	ks0, _ := c.Keyspace(rs[0].ID)
	ks1, _ := c.Keyspace(rs[1].ID)
	if ks0 == ks1 {
		t.Fatal("the two ranges share a keyspace")
	}
	// Another node splits range 0; this node's catalog has not heard.
	other, err := catalog.Open(t.Context(), &sharedMeta{Backend: local.Meta(), cat: func() *catalog.Catalog { return nil }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r0 := rs[0]
	mid, ok := partition.Midpoint(c.PK, r0.Min, r0.Max)
	if !ok {
		t.Fatal("range 0 cannot be halved")
	}
	split, err := other.SplitRange("db", "k", r0.ID, mid)
	if err != nil {
		t.Fatal(err)
	}
	child := split.Map().Ranges()[0].ID
	if _, known := c.Record(child); known {
		t.Fatalf("range %s known before the split", child)
	}
	// Range 0's keyspace lags the token; the other partition's is past it.
	host.upTo[ks0], host.upTo[ks1] = 10, 1000
	tok := []SessionToken{{RangeID: child, LSN: 500}}
	// A check that may not sync (a waiting read's later checks) takes the
	// unknown range for another server's: the furthest keyspace decides,
	// which is what the first check's sync is for.
	if !e.SessionAvailable(t.Context(), "db", "k", tok, SessionOpts{Synced: true}) || meta.syncs != 0 {
		t.Fatalf("a check told not to sync: synced %d times, or did not take the range for a foreign one", meta.syncs)
	}
	if e.SessionAvailable(t.Context(), "db", "k", tok, SessionOpts{}) {
		t.Fatalf("token %s#500 available with its range's keyspace at 10", child)
	}
	if meta.syncs == 0 {
		t.Fatal("the catalog was not synced for a range it did not know")
	}
	host.upTo[ks0] = 500
	if !e.SessionAvailable(t.Context(), "db", "k", tok, SessionOpts{}) {
		t.Fatalf("token %s#500 not available with its range's keyspace at 500", child)
	}
	// A token of a range the container never had (an id below the next
	// one) is foreign: no sync, the furthest keyspace decides.
	syncs := meta.syncs
	host.upTo[ks0] = 10
	if !e.SessionAvailable(t.Context(), "db", "k", []SessionToken{{RangeID: "x", LSN: 500}}, SessionOpts{}) {
		t.Fatal("a foreign token is not compared with the furthest keyspace")
	}
	if meta.syncs != syncs {
		t.Fatal("a foreign token synced the catalog")
	}
}

// catchingUpCatalog is a shared catalog backend whose copy is behind by
// one change, which the next Sync brings (behind, run once), as a node's
// copy catches up with a split made through another node.
type catchingUpCatalog struct {
	catalog.Backend
	behind *func()
	syncs  *int
}

func (catchingUpCatalog) Lock(context.Context) (func(), error) { return func() {}, nil }
func (c catchingUpCatalog) Sync(context.Context) error {
	*c.syncs++
	if f := *c.behind; f != nil {
		*c.behind = nil
		f()
	}
	return nil
}
func (catchingUpCatalog) Current(context.Context) error           { return nil }
func (catchingUpCatalog) Written() int64                          { return 0 }
func (catchingUpCatalog) Propagated(context.Context, int64) error { return nil }

// TestReadOfUnseenRange: a read addressed to a range this node's catalog
// does not know, but a split since it last heard from the others may have
// made, syncs the catalog first and is served by the range; it answered
// 410/1002 "gone" before (a cluster hunt: a node resumed after a split
// answered so for the split's children until its catalog caught up). A
// range gone by a split it knows of is 410 at once, unsynced.
func TestReadOfUnseenRange(t *testing.T) {
	var behind func()
	syncs := 0
	local := openLocalReplicas(t)
	e, err := New(t.Context(), local, catchingUpCatalog{local.Meta(), &behind, &syncs}, Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(i), Body: fmt.Appendf(nil, `{"id":"a","pk":"p%d"}`, i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The split is the change this node's copy has not seen: its next
	// sync makes it.
	behind = func() {
		if _, err := e.SplitRange(t.Context(), "db", "k", "0"); err != nil {
			t.Error(err)
		}
	}
	reads := map[string]func(rangeID string) error{
		"read feed": func(id string) error {
			_, err := e.ReadFeed(t.Context(), "db", "k", Scope{RangeID: id}, 100, "")
			return err
		},
		"query": func(id string) error {
			_, err := e.QueryItems(t.Context(), "db", "k", Scope{RangeID: id}, Query{Text: "SELECT * FROM c"})
			return err
		},
		"change feed": func(id string) error {
			_, err := e.ReadChanges(t.Context(), "db", "k", ChangeFeed{Scope: Scope{RangeID: id}, MaxItems: 100})
			return err
		},
	}
	// The first read of the child syncs, and finds it; the others know it.
	for _, name := range []string{"read feed", "query", "change feed"} {
		if err := reads[name]("2"); err != nil {
			t.Errorf("%s of the unseen child range 2: %v", name, err)
		}
		if behind != nil {
			t.Fatalf("%s of the unseen child range 2: the catalog was not synced first", name)
		}
		n := syncs
		if err := reads[name]("0"); code(err) != http.StatusGone {
			t.Errorf("%s of the split range 0: %v, want 410", name, err)
		}
		if syncs != n {
			t.Errorf("%s of the split range 0 synced the catalog: a range known gone is 410 at once", name)
		}
	}
}

// TestCutChecked: in a cluster a read of a range a separation moved to a
// keyspace of its own is served by a replica of that keyspace only once it
// has reached the separation's cut (catalog.RangeRecord.Cut), session or
// none; until then it fails with SessionBehind, which the API serves again.
// A node resumed after a pause read the child from its replica of the new
// group before that replica had applied the copy, and answered the range
// empty with 200 (a cluster hunt).
func TestCutChecked(t *testing.T) {
	var host *lagHost
	e := engineOnHost(t, func(local *replica.Local) replica.Host {
		host = &lagHost{Local: local, upTo: map[uint64]uint64{}}
		return host
	}, Throughput{Manual: 400})
	children := splitForty(t, e)
	c, err := e.cat.Container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	moved := children[1].ID
	from, _ := c.Keyspace(moved)
	_, to, err := e.cat.BeginMove("db", "k", c.Internal, moved, from, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = e.cat.MoveRange("db", "k", c.Internal, moved, from, to, 500); err != nil {
		t.Fatal(err)
	}
	if rec, _ := c.Record(moved); rec.Cut != 500 {
		t.Fatalf("the moved range's cut is %d, want 500", rec.Cut)
	}
	e.cfg.Replicated = true // the check is a cluster's: one node's replicas are its store
	for _, tc := range []struct {
		upTo   uint64
		behind bool
	}{{10, true}, {499, true}, {500, false}, {1000, false}} {
		host.upTo[to] = tc.upTo
		if err := e.checkSession(t.Context(), c); SessionBehind(err) != tc.behind {
			t.Errorf("the moved range's keyspace visible up to %d: %v, want behind %v", tc.upTo, err, tc.behind)
		}
	}
	// A split of the moved range keeps its cut for both children.
	r, _ := c.Map().ByID(moved)
	at, ok := partition.Midpoint(c.PK, r.Min, r.Max)
	if !ok {
		t.Fatal("no midpoint")
	}
	if err := e.splitRange(c, r, at); err != nil {
		t.Fatal(err)
	}
	c, _ = e.cat.Container("db", "k")
	n := 0
	for _, rec := range c.Ranges {
		if rec.Keyspace == to {
			n++
			if rec.Cut != 500 {
				t.Errorf("child %s of the moved range has cut %d, want 500", rec.ID, rec.Cut)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d ranges in the moved range's keyspace after its split, want 2", n)
	}
}
