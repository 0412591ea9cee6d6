package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/store"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// ttlEngine returns an engine on a fake clock with containers "ttl10"
// (defaultTtl 10 s), "ttlOn" (defaultTtl -1) and "off" (no time to live).
func ttlEngine(t *testing.T) (*Engine, *fakeClock) {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	e, err := openOn(t, t.Context(), st, Config{RateLimit: true}, clock.now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	for _, def := range []string{
		`{"id":"ttl10","partitionKey":{"paths":["/pk"]},"defaultTtl":10}`,
		`{"id":"ttlOn","partitionKey":{"paths":["/pk"]},"defaultTtl":-1}`,
		`{"id":"off","partitionKey":{"paths":["/pk"]}}`,
	} {
		if _, err := e.CreateContainer("db", []byte(def), Throughput{Manual: 400}); err != nil {
			t.Fatal(err)
		}
	}
	return e, clock
}

// visible lists the ids of coll that reads, queries and feeds see,
// checking that every way agrees.
func visible(t *testing.T, e *Engine, coll string) []string {
	t.Helper()
	ctx := context.Background()
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
	feed, err := e.ReadFeed(ctx, "db", coll, Scope{}, -1, "")
	if err != nil {
		t.Fatal(err)
	}
	got := ids(feed.Items)
	q, err := e.QueryItems(ctx, "db", coll, Scope{}, Query{Text: "SELECT * FROM c", EnableCrossPartition: true, MaxItems: -1})
	if err != nil {
		t.Fatal(err)
	}
	if qs := ids(q.Items); !slices.Equal(qs, got) {
		t.Errorf("%s: the query sees %v, the feed %v", coll, qs, got)
	}
	lp, err := e.QueryItems(ctx, "db", coll, Scope{PK: pkN(1)}, Query{Text: "SELECT * FROM c", MaxItems: -1})
	if err != nil {
		t.Fatal(err)
	}
	var inLP []string
	for _, id := range got {
		if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: coll, ID: id}, pkN(1), ""); err == nil {
			inLP = append(inLP, id)
		}
	}
	if qs := ids(lp.Items); !slices.Equal(qs, append([]string{}, inLP...)) {
		t.Errorf("%s: the logical partition query sees %v, point reads %v", coll, qs, inLP)
	}
	ch, err := e.ReadChanges(ctx, "db", coll, ChangeFeed{MaxItems: -1})
	if err != nil {
		t.Fatal(err)
	}
	if cs := ids(ch.Items); !slices.Equal(cs, got) {
		t.Errorf("%s: the change feed sees %v, the feed %v", coll, cs, got)
	}
	return got
}

// TestTimeToLive: with a fake clock, items expire at _ts plus their own
// ttl or the container's default, and are at once invisible to point
// reads, queries, feeds and the change feed; writes treat them as absent;
// a container without a time to live ignores item ttls; bad ttls get 400;
// the purger deletes expired items without charging the container.
func TestTimeToLive(t *testing.T) {
	e, clock := ttlEngine(t)
	ctx := context.Background()
	write := func(coll string, kind WriteKind, body string) error {
		t.Helper()
		var x struct{ ID string }
		_ = json.Unmarshal([]byte(body), &x)
		_, err := e.WriteItem(ctx, Write{DB: "db", Container: coll, Kind: kind, ID: x.ID, PK: pkN(1), Body: []byte(body)})
		return err
	}
	for _, w := range []struct{ coll, body string }{
		{"ttl10", `{"id":"default","pk":"p1"}`},
		{"ttl10", `{"id":"never","pk":"p1","ttl":-1}`},
		{"ttl10", `{"id":"long","pk":"p1","ttl":30}`},
		{"ttl10", `{"id":"short","pk":"p1","ttl":2}`},
		{"ttlOn", `{"id":"default","pk":"p1"}`},
		{"ttlOn", `{"id":"short","pk":"p1","ttl":5}`},
		{"off", `{"id":"short","pk":"p1","ttl":1}`},
		{"off", `{"id":"bad","pk":"p1","ttl":"soon"}`}, // ignored without a time to live
	} {
		if err := write(w.coll, Create, w.body); err != nil {
			t.Fatalf("create %s in %s: %v", w.body, w.coll, err)
		}
	}
	for _, bad := range []string{`{"id":"x","pk":"p1","ttl":0}`, `{"id":"x","pk":"p1","ttl":-2}`, `{"id":"x","pk":"p1","ttl":"10"}`, `{"id":"x","pk":"p1","ttl":1.5}`, `{"id":"x","pk":"p1","ttl":null}`} {
		for _, coll := range []string{"ttl10", "ttlOn"} {
			if err := write(coll, Create, bad); code(err) != http.StatusBadRequest {
				t.Errorf("create %s in %s (a time to live): %v, want 400", bad, coll, err)
			}
		}
	}
	// Without a time to live the item's ttl means nothing, and Cosmos DB
	// does not check it (only while the container's is on, see
	// docs/change-feed.md): these are stored and then deleted.
	for _, odd := range []string{`{"id":"x","pk":"p1","ttl":null}`, `{"id":"x","pk":"p1","ttl":1.5}`} {
		if err := write("off", Create, odd); err != nil {
			t.Errorf("create %s without a time to live: %v", odd, err)
		}
		if _, err := e.DeleteItem(ctx, ItemRef{DB: "db", Container: "off", ID: "x"}, pkN(1), "", TriggerSet{}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, want map[string][]string) {
		t.Helper()
		for coll, ids := range want {
			if got := visible(t, e, coll); !slices.Equal(got, ids) {
				t.Errorf("%s: %s shows %v, want %v", when, coll, got, ids)
			}
		}
	}
	check("at once", map[string][]string{"ttl10": {"default", "long", "never", "short"}, "ttlOn": {"default", "short"}, "off": {"bad", "short"}})
	clock.advance(2 * time.Second)
	check("after 2 s", map[string][]string{"ttl10": {"default", "long", "never"}, "ttlOn": {"default", "short"}, "off": {"bad", "short"}})
	clock.advance(8 * time.Second)
	check("after 10 s", map[string][]string{"ttl10": {"long", "never"}, "ttlOn": {"default"}, "off": {"bad", "short"}})

	// An expired item is absent to writes: replace and delete get 404,
	// create makes it anew, and the partition's statistics count it once.
	if err := write("ttl10", Replace, `{"id":"default","pk":"p1"}`); code(err) != http.StatusNotFound {
		t.Errorf("replace of an expired item: %v, want 404", err)
	}
	if _, err := e.DeleteItem(ctx, ItemRef{DB: "db", Container: "ttl10", ID: "short"}, pkN(1), "", TriggerSet{}); code(err) != http.StatusNotFound {
		t.Errorf("delete of an expired item: %v, want 404", err)
	}
	if err := write("ttl10", Create, `{"id":"default","pk":"p1","v":2}`); err != nil {
		t.Errorf("create over an expired item: %v", err)
	}
	// Rewriting restarts the clock: "long" written again lives 30 s more.
	if err := write("ttl10", Upsert, `{"id":"long","pk":"p1","ttl":30}`); err != nil {
		t.Fatal(err)
	}
	clock.advance(25 * time.Second) // 35 s since the first writes
	check("after 35 s", map[string][]string{"ttl10": {"long", "never"}})

	// The purger deletes what expired, and charges nothing.
	charged := func() float64 {
		total := 0.0
		for _, coll := range []string{"ttl10", "ttlOn"} {
			rs, err := e.Partitions(ctx, "db", coll)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				total += r.ChargedRU
			}
		}
		return total
	}
	before := charged()
	// Expired: ttl10/default (written again at 10 s, so gone at 20 s),
	// ttl10/short (the failed delete rolled its purge back) and ttlOn/short.
	if n := e.purgeExpired(ctx, purgeCursors{}); n != 3 {
		t.Errorf("purge deleted %d items, want 3", n)
	}
	if after := charged(); after != before {
		t.Errorf("purging charged %v RU", after-before)
	}
	if n := e.purgeExpired(ctx, purgeCursors{}); n != 0 {
		t.Errorf("a second purge deleted %d items, want 0", n)
	}
	for coll, want := range map[string]int64{"ttl10": 2, "ttlOn": 1, "off": 2} {
		var items int64
		var keys int
		rs, err := e.Partitions(ctx, "db", coll)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			items += r.Items
		}
		c, _ := e.container("db", coll)
		keys = countSpan(t, e, c, itemsSpan())
		if items != want || int64(keys) != want {
			t.Errorf("%s after purging: statistics count %d items, storage holds %d; want %d", coll, items, keys, want)
		}
	}
	check("after purging", map[string][]string{"ttl10": {"long", "never"}, "ttlOn": {"default"}, "off": {"bad", "short"}})
}
