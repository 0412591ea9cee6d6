package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
)

// TestSeparation: a split child sharing its parent's keyspace gets one of
// its own while a writer keeps creating, replacing and deleting items in
// both children. Afterwards each child reads exactly the writer's final
// items, the old keyspace holds nothing of the moved child, change-feed
// positions and continuations taken before still work, the unique key
// still holds, and new writes get LSNs past every earlier one.
func TestSeparation(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	if _, err := e.CreateContainer("db", []byte(`{"id":"s","partitionKey":{"paths":["/pk"]},"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	model := map[string]string{} // id → body
	pkOfID := map[string]int{}
	var mu sync.Mutex
	write := func(id string, pk, v int) error {
		body := fmt.Sprintf(`{"id":%q,"pk":"p%d","v":%d,"u":"%s-%d"}`, id, pk, v, id, v)
		_, err := e.WriteItem(ctx, Write{DB: "db", Container: "s", Kind: Upsert, PK: pkN(pk), Body: []byte(body)})
		if err == nil {
			mu.Lock()
			model[id], pkOfID[id] = body, pk
			mu.Unlock()
		}
		return err
	}
	for i := range 600 {
		if err := write(fmt.Sprintf("i%03d", i), i%40, 0); err != nil {
			t.Fatal(err)
		}
	}
	kids, err := e.SplitRange(ctx, "db", "s", "0")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := e.container("db", "s")
	moved := kids[len(kids)-1]
	ksBefore, _ := c.Keyspace(moved.ID)
	if kA, _ := c.Keyspace(kids[0].ID); kA != ksBefore {
		t.Fatalf("split children in keyspaces %d and %d, want one", kA, ksBefore)
	}
	// Positions taken before: the moved child's change feed, and a
	// continuation of a query on it.
	pos := map[string]string{}
	for _, k := range kids {
		p, err := e.ReadChanges(ctx, "db", "s", ChangeFeed{Scope: Scope{RangeID: k.ID}, MaxItems: -1})
		if err != nil {
			t.Fatal(err)
		}
		pos[k.ID] = p.Position
	}
	first, err := e.QueryItems(ctx, "db", "s", Scope{RangeID: moved.ID}, Query{Text: "SELECT VALUE c.id FROM c", MaxItems: 5})
	if err != nil || first.Continuation == "" {
		t.Fatalf("first page: %v %q", err, first.Continuation)
	}

	// A writer changes both children while the separation runs.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(3, 4))
		for i := 0; ; i++ {
			select {
			case <-done:
				if i > 300 {
					return
				}
			default:
			}
			id := fmt.Sprintf("i%03d", r.IntN(700))
			mu.Lock()
			pk, exists := pkOfID[id]
			mu.Unlock()
			if !exists {
				pk = r.IntN(40)
			}
			if exists && r.IntN(4) == 0 {
				if _, err := e.DeleteItem(ctx, ItemRef{DB: "db", Container: "s", ID: id}, pkN(pk), "", TriggerSet{}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				delete(model, id)
				delete(pkOfID, id)
				mu.Unlock()
				continue
			}
			if err := write(id, pk, i+1); err != nil {
				t.Error(err)
				return
			}
		}
	})
	err = e.SeparateRange(ctx, "db", "s", moved.ID)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}

	c, _ = e.container("db", "s")
	ksAfter, _ := c.Keyspace(moved.ID)
	if ksAfter == ksBefore {
		t.Fatalf("range %s still in keyspace %d", moved.ID, ksBefore)
	}
	for _, rec := range c.Ranges {
		if rec.From != 0 {
			t.Errorf("range %s still has leftovers to collect in %d", rec.ID, rec.From)
		}
	}
	// Each child reads exactly the model's items of its span.
	var all []string
	for _, k := range kids {
		got := queryAllIn2(t, e, "s", Scope{RangeID: k.ID}, Query{Text: "SELECT * FROM c", MaxItems: 7})
		for _, doc := range got {
			var it struct{ ID string }
			_ = json.Unmarshal([]byte(doc), &it)
			all = append(all, it.ID)
			mu.Lock()
			body := model[it.ID]
			mu.Unlock()
			if body == "" || !sameFields(t, body, doc) {
				t.Errorf("range %s returns %s, the writer left %q", k.ID, doc, body)
			}
		}
	}
	slices.Sort(all)
	if want := slices.Sorted(maps.Keys(model)); !slices.Equal(all, want) {
		t.Errorf("the children hold %d items, the writer left %d", len(all), len(want))
	}
	// The old keyspace holds nothing of the moved child.
	old, _ := e.host.Replica(ksBefore)
	mr, _ := c.Map().ByID(moved.ID)
	span := epkSpan(mr.Min, mr.Max)
	for _, kind := range []byte{kindItem, kindOrder, kindIndex, kindChange} {
		_ = replica.Scan(ctx, old, kindSpan(kind), func(k, v []byte) bool {
			if span.Contains(k) || (kind != kindItem && span.Contains(v)) {
				t.Errorf("keyspace %d still holds %x of the moved range", ksBefore, k)
				return false
			}
			return true
		})
	}
	// The continuation and the change-feed positions from before.
	rest := queryAllIn2(t, e, "s", Scope{RangeID: moved.ID}, Query{Text: "SELECT VALUE c.id FROM c", MaxItems: 5, Continuation: first.Continuation})
	if len(rest)+len(first.Items) < 1 {
		t.Errorf("the continuation from before the separation returned nothing")
	}
	for _, k := range kids {
		req := ChangeFeed{Scope: Scope{RangeID: k.ID}, After: pos[k.ID], HasAfter: true, MaxItems: -1}
		p, err := e.ReadChanges(ctx, "db", "s", req)
		if err != nil {
			t.Fatalf("change feed of %s from before: %v", k.ID, err)
		}
		seen := map[string]bool{}
		for _, it := range p.Items {
			var x struct{ ID string }
			_ = json.Unmarshal(it, &x)
			if seen[x.ID] {
				t.Errorf("change feed of %s shows %s twice", k.ID, x.ID)
			}
			seen[x.ID] = true
		}
	}
	// The unique key holds in the moved range; new writes get later LSNs.
	var inMoved string
	var pkMoved int
	for id, pk := range pkOfID {
		if l, _ := locate(c, pkN(pk), id); l.rng.ID == moved.ID {
			inMoved, pkMoved = id, pk
			break
		}
	}
	var u struct{ U string }
	_ = json.Unmarshal([]byte(model[inMoved]), &u)
	dup := fmt.Sprintf(`{"id":"dup","pk":"p%d","u":%q}`, pkMoved, u.U)
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "s", Kind: Create, PK: pkN(pkMoved), Body: []byte(dup)}); code(err) != 409 {
		t.Errorf("a duplicate unique value in the moved range: %v, want 409", err)
	}
	var top uint64 // the latest LSN of an item the moved range holds
	dst, _ := e.host.Replica(ksAfter)
	_ = replica.Scan(ctx, dst, itemsSpan(), func(_, v []byte) bool {
		props, _ := document.Props(v)
		lsn, _ := document.ETagSeq(props.ETag)
		top = max(top, lsn)
		return true
	})
	res, err := e.WriteItem(ctx, Write{DB: "db", Container: "s", Kind: Upsert, PK: pkN(pkMoved), Body: []byte(fmt.Sprintf(`{"id":"new","pk":"p%d"}`, pkMoved))})
	if err != nil {
		t.Fatal(err)
	}
	var np struct {
		ETag string `json:"_etag"`
	}
	_ = json.Unmarshal(res.Body, &np)
	if lsn, _ := document.ETagSeq(np.ETag); lsn <= top {
		t.Errorf("a write after the separation got LSN %d, not past the moved items' %d", lsn, top)
	}
}

// queryAllIn2 follows a query on container coll within scope to its end.
func queryAllIn2(t *testing.T, e *Engine, coll string, scope Scope, q Query) []string {
	t.Helper()
	var out []string
	for pages := 0; pages < 5000; pages++ {
		p, err := e.QueryItems(context.Background(), "db", coll, scope, q)
		if err != nil {
			t.Fatalf("query %q: %v", q.Text, err)
		}
		for _, it := range p.Items {
			out = append(out, string(it))
		}
		if q.Continuation = p.Continuation; q.Continuation == "" {
			return out
		}
	}
	t.Fatalf("query %q: no end", q.Text)
	return nil
}

// sameFields reports whether doc (stored, with system properties) has the
// fields of body.
func sameFields(t *testing.T, body, doc string) bool {
	var want, got map[string]any
	if json.Unmarshal([]byte(body), &want) != nil || json.Unmarshal([]byte(doc), &got) != nil {
		return false
	}
	for k, v := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// separateChild creates n items over 20 logical partitions in db/k, splits
// its first range, calls before (if set), and separates the split's second
// child, whose range it returns; its collection is left pending.
func separateChild(t *testing.T, e *Engine, n int, before func()) partition.Range {
	t.Helper()
	ctx := t.Context()
	for i := range n {
		body := fmt.Sprintf(`{"id":"i%03d","pk":"p%d"}`, i, i%20)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkN(i % 20), Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := e.container("db", "k")
	kids, err := e.SplitRange(ctx, "db", "k", c.Map().Ranges()[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before()
	}
	c, _ = e.container("db", "k")
	moved, _ := c.Map().ByID(kids[1].ID)
	if err := e.separate(ctx, c, moved); err != nil {
		t.Fatal(err)
	}
	return moved
}

// TestCollectionResumes: a separation whose collection did not run (a crash
// after the cut-over) leaves RangeRecord.From set; the next check collects
// the leftovers and clears it, and the sibling's data is untouched.
func TestCollectionResumes(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	moved := separateChild(t, e, 200, nil)
	c, _ := e.container("db", "k")
	var from uint64
	for _, rec := range c.Ranges {
		if rec.ID == moved.ID {
			from = rec.From
		}
	}
	if from == 0 {
		t.Fatal("no collection pending after the cut-over")
	}
	before := len(queryAllIn2(t, e, "k", Scope{}, Query{Text: "SELECT VALUE c.id FROM c", EnableCrossPartition: true, MaxItems: -1}))
	e.checkSeparations(ctx)
	c, _ = e.container("db", "k")
	for _, rec := range c.Ranges {
		if rec.From != 0 {
			t.Errorf("range %s: collection still pending", rec.ID)
		}
	}
	old, _ := e.host.Replica(from)
	span := epkSpan(moved.Min, moved.Max)
	if n := countIn(t, old, span); n != 0 {
		t.Errorf("%d items of the moved range left in keyspace %d", n, from)
	}
	after := len(queryAllIn2(t, e, "k", Scope{}, Query{Text: "SELECT VALUE c.id FROM c", EnableCrossPartition: true, MaxItems: -1}))
	if before != 200 || after != 200 {
		t.Errorf("the container reads %d items before the collection and %d after, want 200", before, after)
	}
}

func countIn(t *testing.T, r replica.Reader, sp replica.Span) int {
	t.Helper()
	n := 0
	if err := replica.Scan(t.Context(), r, sp, func(_, _ []byte) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	return n
}

// compactFailHost is a replica.Host whose Compact fails while failing is
// set, counting its calls.
type compactFailHost struct {
	*replica.Local
	failing  atomic.Bool
	compacts atomic.Int32
}

func (h *compactFailHost) Compact(ctx context.Context, id uint64) error {
	h.compacts.Add(1)
	if h.failing.Load() {
		return errors.New("test: compaction failed")
	}
	return h.Local.Compact(ctx, id)
}

// TestCollectionBackoff: a leftover collection that fails (each attempt
// deletes and compacts before it records itself in the catalog) is tried
// again after 2 s, then 4 s, 8 s, … at most a minute apart, not at every
// check; once it succeeds the record is cleared.
func TestCollectionBackoff(t *testing.T) {
	var host *compactFailHost
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := engineOnHostAt(t, func(l *replica.Local) replica.Host {
		host = &compactFailHost{Local: l}
		return host
	}, Throughput{Manual: 400}, clock)
	ctx := t.Context()
	separateChild(t, e, 100, func() { host.failing.Store(true) })
	pending := func() bool {
		c, _ := e.container("db", "k")
		return slices.ContainsFunc(c.Ranges, func(r catalog.RangeRecord) bool { return r.From != 0 })
	}
	if !pending() {
		t.Fatal("no collection pending with compactions failing")
	}
	// One check a second for 40 s: attempts at 0, 2, 6, 14 and 30 s.
	host.compacts.Store(0)
	for range 40 {
		e.checkSeparations(ctx)
		advance(time.Second)
	}
	if n := host.compacts.Load(); n != 5 {
		t.Errorf("%d collection attempts in 40 checks a second apart, want 5 (backing off 2, 4, 8, 16 s)", n)
	}
	host.failing.Store(false)
	advance(time.Minute)
	e.checkSeparations(ctx)
	if pending() {
		t.Error("the collection is still pending once compactions work")
	}
}

// TestSeparationKeepsTransactions: a batch's change entries keep their
// transaction's mark through a separation, so the moved range's change
// feed still delivers the batch in one page.
func TestSeparationKeepsTransactions(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	if _, err := e.CreateContainer("db", []byte(`{"id":"s","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	for pk := range 40 {
		var ops []BatchOp
		for i := range 5 {
			ops = append(ops, BatchOp{Type: "Create", Body: fmt.Appendf(nil, `{"id":"b%d","pk":"p%d"}`, i, pk)})
		}
		if _, err := e.ExecuteBatch(ctx, "db", "s", pkN(pk), ops); err != nil {
			t.Fatal(err)
		}
	}
	kids, err := e.SplitRange(ctx, "db", "s", "0")
	if err != nil {
		t.Fatal(err)
	}
	moved := kids[len(kids)-1]
	if err := e.SeparateRange(ctx, "db", "s", moved.ID); err != nil {
		t.Fatal(err)
	}
	req := ChangeFeed{Scope: Scope{RangeID: moved.ID}, MaxItems: 1}
	pages := 0
	for {
		p, err := e.ReadChanges(ctx, "db", "s", req)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) == 0 {
			break
		}
		pages++
		pks := map[string]int{}
		for _, it := range p.Items {
			var x struct{ PK string }
			_ = json.Unmarshal(it, &x)
			pks[x.PK]++
		}
		if len(p.Items) != 5 || len(pks) != 1 {
			t.Fatalf("a page of the moved range: %d items of partitions %v, want one batch of 5", len(p.Items), pks)
		}
		req.After, req.HasAfter = p.Position, true
	}
	if pages == 0 {
		t.Fatal("the moved range's feed delivered nothing")
	}
}
