package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestChangeFeedOrderAndContinuation: the change feed lists live items in
// the order of their last writes, each once at its latest version, without
// deletes; a continuation sees only later writes; and after a split the
// children, read from the parent's position, see every later write exactly
// once between them.
func TestChangeFeedOrderAndContinuation(t *testing.T) {
	e := testEngine(t) // 4 ranges
	ctx := context.Background()
	write := func(id string, pk, v int) {
		t.Helper()
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(pk), Body: fmt.Appendf(nil, `{"id":%q,"pk":"p%d","v":%d}`, id, pk, v)}); err != nil {
			t.Fatal(err)
		}
	}
	type row struct {
		ID string
		V  int
	}
	// read reads every range's feed from its position in after (or its
	// parent's, as the SDKs continue a split range's children; none: the
	// start) and returns the rows and the ranges' new positions.
	read := func(after map[string]string) ([]row, map[string]string) {
		t.Helper()
		var all []row
		next := map[string]string{}
		c, _ := e.container("db", "k")
		for _, r := range c.Map().Ranges() {
			req := ChangeFeed{Scope: Scope{RangeID: r.ID}, MaxItems: 3}
			for _, id := range append([]string{r.ID}, r.Parents...) {
				if pos, ok := after[id]; ok {
					req.After, req.HasAfter = pos, true
				}
			}
			for {
				p, err := e.ReadChanges(ctx, "db", "k", req)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range p.Items {
					var x row
					_ = json.Unmarshal(it, &x)
					all = append(all, x)
				}
				req.After, req.HasAfter = p.Position, true
				if len(p.Items) == 0 {
					break
				}
			}
			next[r.ID] = req.After
		}
		return all, next
	}
	for i := range 20 {
		write(fmt.Sprint(i), i%7, 0)
	}
	write("3", 3, 1) // an update moves item 3 to the end
	if _, err := e.DeleteItem(ctx, ItemRef{DB: "db", Container: "k", ID: "5"}, pkN(5), "", TriggerSet{}); err != nil {
		t.Fatal(err)
	}
	got, pos := read(nil)
	if len(got) != 19 {
		t.Fatalf("change feed from the start: %d items, want 19 (20 written, 1 deleted)", len(got))
	}
	seen := map[string]int{}
	for _, r := range got {
		seen[r.ID]++
		if r.ID == "5" || (r.ID == "3" && r.V != 1) {
			t.Errorf("change feed shows %+v", r)
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("item %s appears %d times", id, n)
		}
	}
	// Within one range the feed follows write order: item 3 comes last in
	// its range.
	c, _ := e.container("db", "k")
	loc, _ := locate(c, pkN(3), "3")
	p, _ := e.ReadChanges(ctx, "db", "k", ChangeFeed{Scope: Scope{RangeID: loc.rng.ID}, MaxItems: -1})
	var inRange []row
	for _, it := range p.Items {
		var x row
		_ = json.Unmarshal(it, &x)
		inRange = append(inRange, x)
	}
	if len(inRange) == 0 || inRange[len(inRange)-1].ID != "3" {
		t.Errorf("range %s feed %v: item 3, updated last, is not last", loc.rng.ID, inRange)
	}

	// Later writes, then a split, then reading every current range from
	// the old position: each later write exactly once.
	for i := range 10 {
		write(fmt.Sprintf("n%d", i), i%7, 2)
	}
	write("0", 0, 3)
	split := false
	for _, r := range c.Map().Ranges() {
		if _, err := e.SplitRange(ctx, "db", "k", r.ID); err == nil {
			split = true
			break
		}
	}
	if c, _ := e.container("db", "k"); !split || c.Map().Len() != 5 {
		t.Fatalf("no range could split (a range with two logical partitions)")
	}
	got, _ = read(pos)
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	want := []string{"0", "n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
	if !slices.Equal(ids, want) {
		t.Errorf("changes after the split, from the old position = %v, want %v", ids, want)
	}
}

// TestChangeFeedWaitsForOpenTransactions: a transaction that took its
// sequence number before a later one committed holds the feed's position
// below its number until it commits, so its write is not skipped. (LSNs
// belong to a keyspace: the two transactions write to one.)
func TestChangeFeedWaitsForOpenTransactions(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	c, err := e.container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	near := 2 // a logical partition in p1's range
	for l1, _ := locate(c, pkN(1), ""); ; near++ {
		if l, _ := locate(c, pkN(near), ""); l.rng.ID == l1.rng.ID {
			break
		}
	}
	slow, err := e.begin(t.Context(), c, pkN(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slow.write(Create, "", []byte(`{"id":"slow","pk":"p1"}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkN(near), Body: fmt.Appendf(nil, `{"id":"fast","pk":"p%d"}`, near)}); err != nil {
		t.Fatal(err)
	}
	p, err := e.ReadChanges(ctx, "db", "k", ChangeFeed{MaxItems: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := feedIDs(p); len(got) != 0 {
		t.Fatalf("with a transaction open: items %v (position %s); want none", got, p.Position)
	}
	if err := slow.commit(); err != nil {
		t.Fatal(err)
	}
	p, err = e.ReadChanges(ctx, "db", "k", ChangeFeed{After: p.Position, HasAfter: true, MaxItems: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := feedIDs(p); !slices.Equal(got, []string{"slow", "fast"}) {
		t.Errorf("after the commit: %v, want [slow fast]", got)
	}
	// A rolled-back transaction releases its hold too.
	aborted, err := e.begin(t.Context(), c, pkN(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aborted.write(Create, "", []byte(`{"id":"gone","pk":"p3"}`), ""); err != nil {
		t.Fatal(err)
	}
	aborted.close()
	if s, last := aborted.rep.StableLSN(), aborted.rep.LastLSN(); s != last {
		t.Errorf("after a rollback: stable %d, want the last number %d", s, last)
	}
}

// TestWithLSN: _lsn is appended to objects, empty ones included; an item's
// own top-level _lsn has its value replaced (it stood beside the feed's, a
// duplicate name: a Python SDK hunt), a nested one is left alone.
func TestWithLSN(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"id":"a"}`, `{"id":"a","_lsn":7}`},
		{`{}`, `{"_lsn":7}`},
		{`{ }`, `{ "_lsn":7}`},
		{`{"a":{"b":1}}`, `{"a":{"b":1},"_lsn":7}`},
		{`{"id":"a","_lsn":999,"b":2}`, `{"id":"a","_lsn":7,"b":2}`},
		{`{"id":"a","x":{"_lsn":1}}`, `{"id":"a","x":{"_lsn":1},"_lsn":7}`},
		{`{"id":"_lsn\""}`, `{"id":"_lsn\"","_lsn":7}`},
	} {
		if got := string(withLSN([]byte(tc.in), 7)); got != tc.want {
			t.Errorf("withLSN(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestChangeFeedSinceAcrossKeyspaces: a container's feed from a start time,
// read in small pages after a separation has given a range a keyspace of
// its own, delivers only the changes made after that time. A page that
// fills before it reaches a keyspace writes the start time as that
// keyspace's position ("t<unix>"); before, it wrote 0, and the next page,
// whose etag wins over If-Modified-Since, read that keyspace from its
// beginning (a bug hunt: 10 of 30 items older than the start time).
func TestChangeFeedSinceAcrossKeyspaces(t *testing.T) {
	var mu sync.Mutex
	clock := time.Unix(1_800_000_000, 0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	e := testEngineAt(t, Config{}, now)
	ctx := t.Context()
	separateChild(t, e, 60, nil) // i000…i059, written at the old time
	mu.Lock()
	clock = clock.Add(time.Hour)
	mu.Unlock()
	for i := range 30 {
		body := fmt.Sprintf(`{"id":"new%02d","pk":"p%d"}`, i, i%20)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkN(i % 20), Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := e.container("db", "k")
	if n := len(c.Keyspaces()); n < 2 {
		t.Fatalf("the container has %d keyspaces, want a separated range's own", n)
	}
	req := ChangeFeed{MaxItems: 3}
	req.Start.Since = clock.Add(-time.Minute)
	seen := map[string]bool{}
	for range 100 {
		p, err := e.ReadChanges(ctx, "db", "k", req)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) == 0 {
			break
		}
		for _, doc := range p.Items {
			var d struct{ ID string }
			if err := json.Unmarshal(doc, &d); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(d.ID, "new") {
				t.Errorf("the feed from a start time delivered %s, written an hour before it (position %q)", d.ID, req.After)
			}
			seen[d.ID] = true
		}
		req = ChangeFeed{MaxItems: 3, After: p.Position, HasAfter: true}
		req.Start.Since = clock.Add(-time.Minute) // sent again, as a client may: the etag wins
	}
	if len(seen) != 30 {
		t.Errorf("the feed from a start time delivered %d of the 30 items written after it", len(seen))
	}
}

// TestChangeFeedStartBefore1970: a feed started at a time before 1970
// (If-Modified-Since of 1969 or 1900) reads from the beginning, and every
// page's position is read back by the next (a change feed hunt: the
// position of a range not read yet was "t-1", refused with 400 on the next
// page, so the JavaScript and Go SDKs' feeds from such a time failed).
func TestChangeFeedStartBefore1970(t *testing.T) {
	for _, since := range []time.Time{time.Unix(-1, 0), time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, 0)} {
		e := testEngine(t)
		ctx := t.Context()
		separateChild(t, e, 30, nil)
		req := ChangeFeed{MaxItems: 3}
		req.Start.Since = since
		seen := map[string]bool{}
		for range 100 {
			p, err := e.ReadChanges(ctx, "db", "k", req)
			if err != nil {
				t.Fatalf("start %v: %v (position %q)", since, err, req.After)
			}
			if len(p.Items) == 0 {
				break
			}
			for _, doc := range p.Items {
				var d struct{ ID string }
				if err := json.Unmarshal(doc, &d); err != nil {
					t.Fatal(err)
				}
				seen[d.ID] = true
			}
			req = ChangeFeed{MaxItems: 3, After: p.Position, HasAfter: true}
			req.Start.Since = since
		}
		if len(seen) != 30 {
			t.Errorf("start %v: the feed delivered %d of 30 items", since, len(seen))
		}
	}
}

// TestChangeFeedFutureStart: a feed whose start time is still ahead of the
// server's clock delivers no change written before it, however early it is
// read: its position keeps the start time until the clock passes it (a
// change feed hunt: a feed started 5 s ahead and read at once delivered,
// on its next page, an item written before its start; a new feed from the
// same time did not). Over one keyspace and over several.
func TestChangeFeedFutureStart(t *testing.T) {
	for _, scope := range []string{"one keyspace", "several"} {
		t.Run(scope, func(t *testing.T) {
			var mu sync.Mutex
			clock := time.Unix(1_800_000_000, 0)
			now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
			advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
			e := testEngineAt(t, Config{}, now)
			ctx := t.Context()
			if scope == "several" {
				separateChild(t, e, 20, nil)
			}
			write := func(id string, n int) {
				t.Helper()
				body := fmt.Sprintf(`{"id":%q,"pk":"p%d"}`, id, n)
				if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(n), Body: []byte(body)}); err != nil {
					t.Fatal(err)
				}
			}
			write("before", 1)
			req := ChangeFeed{MaxItems: -1}
			req.Start.Since = clock.Add(10 * time.Second)
			read := func() []string {
				t.Helper()
				p, err := e.ReadChanges(ctx, "db", "k", req)
				if err != nil {
					t.Fatal(err)
				}
				req = ChangeFeed{MaxItems: -1, After: p.Position, HasAfter: true}
				var ids []string
				for _, doc := range p.Items {
					var d struct{ ID string }
					if err := json.Unmarshal(doc, &d); err != nil {
						t.Fatal(err)
					}
					ids = append(ids, d.ID)
				}
				return ids
			}
			if got := read(); len(got) != 0 {
				t.Fatalf("a feed starting 10 s ahead, read at once: %v", got)
			}
			for i := range 5 {
				write(fmt.Sprintf("early%d", i), i)
			}
			advance(5 * time.Second)
			write("early-late", 7)
			if got := read(); len(got) != 0 {
				t.Fatalf("changes written before the start time: %v (position %q)", got, req.After)
			}
			advance(6 * time.Second) // past the start
			write("after", 2)
			if got := read(); len(got) != 1 || got[0] != "after" {
				t.Fatalf("after the start time: %v, want [after]", got)
			}
			if strings.Contains(req.After, "t") {
				t.Errorf("the position %q keeps the start time after the clock passed it", req.After)
			}
		})
	}
}

// TestChangeFeedKeyOfAnotherRange: a logical partition's feed asked of a
// range that does not own it (the Go SDK asks every range of the feed
// range it is given) is empty and carries a position that resumes it; it
// carried "", which the next request could not send back (a bug hunt:
// azcosmos's second ReadChangeFeed answered 400).
func TestChangeFeedKeyOfAnotherRange(t *testing.T) {
	e := testEngine(t) // 4 ranges
	ctx := context.Background()
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(1), Body: []byte(`{"id":"a","pk":"p1"}`)}); err != nil {
		t.Fatal(err)
	}
	c, _ := e.container("db", "k")
	owners, others := 0, 0
	for _, r := range c.Map().Ranges() {
		req := ChangeFeed{Scope: Scope{PK: pkN(1), RangeID: r.ID}, MaxItems: 10}
		p, err := e.ReadChanges(ctx, "db", "k", req)
		if err != nil {
			t.Fatal(err)
		}
		if p.Position == "" {
			t.Fatalf("range %s: an empty position", r.ID)
		}
		if len(p.Items) > 0 {
			owners++
		} else {
			others++
		}
		req.After, req.HasAfter = p.Position, true
		if p, err = e.ReadChanges(ctx, "db", "k", req); err != nil || len(p.Items) != 0 {
			t.Errorf("range %s resumed from %q: %v, %d items", r.ID, req.After, err, len(p.Items))
		}
	}
	if owners != 1 || others != 3 {
		t.Errorf("%d ranges delivered the item, %d nothing; want 1 and 3", owners, others)
	}
}

// TestChangeFeedHoldsTransactions: a page of the change feed holds the
// writes of a transaction whole, past its item count if need be, as Cosmos
// DB's does ("the number of items received could be higher than the
// specified value so that the items changed by the same transaction are
// returned as part of one atomic batch"); a change-feed hunt read a batch of
// ten in pages of [3,3,3,3]. A transaction whose LSNs straddle another's
// that is still open is held back whole until that one ends, rather than
// delivered in part.
func TestChangeFeedHoldsTransactions(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	c, err := e.container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	l1, _ := locate(c, pkN(1), "")
	create := func(id string) {
		t.Helper()
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkN(1), Body: fmt.Appendf(nil, `{"id":%q,"pk":"p1"}`, id)}); err != nil {
			t.Fatal(err)
		}
	}
	create("pre")
	var ops []BatchOp
	var batch []string
	for i := range 10 {
		id := fmt.Sprintf("b%d", i)
		batch = append(batch, id)
		ops = append(ops, BatchOp{Type: "Create", Body: fmt.Appendf(nil, `{"id":%q,"pk":"p1"}`, id)})
	}
	if _, err := e.ExecuteBatch(ctx, "db", "k", pkN(1), ops); err != nil {
		t.Fatal(err)
	}
	create("post")
	var pages [][]string
	req := ChangeFeed{Scope: Scope{RangeID: l1.rng.ID}, MaxItems: 3}
	for {
		p, err := e.ReadChanges(ctx, "db", "k", req)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) == 0 {
			break
		}
		pages = append(pages, feedIDs(p))
		req.After, req.HasAfter = p.Position, true
	}
	want := [][]string{append([]string{"pre"}, batch...), {"post"}}
	if fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Errorf("pages of 3: %v, want %v (the batch whole in one page)", pages, want)
	}

	// T takes an LSN, U (another logical partition of the range) the next
	// and stays open, T the one after and commits.
	near := 2
	for ; ; near++ {
		if l, _ := locate(c, pkN(near), ""); l.rng.ID == l1.rng.ID {
			break
		}
	}
	tx, err := e.begin(t.Context(), c, pkN(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.write(Create, "", []byte(`{"id":"t1","pk":"p1"}`), ""); err != nil {
		t.Fatal(err)
	}
	u, err := e.begin(t.Context(), c, pkN(near))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.write(Create, "", fmt.Appendf(nil, `{"id":"u","pk":"p%d"}`, near), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.write(Create, "", []byte(`{"id":"t2","pk":"p1"}`), ""); err != nil {
		t.Fatal(err)
	}
	if err := tx.commit(); err != nil {
		t.Fatal(err)
	}
	req.MaxItems = 1
	p, err := e.ReadChanges(ctx, "db", "k", req)
	if err != nil {
		t.Fatal(err)
	}
	if got := feedIDs(p); len(got) != 0 {
		t.Fatalf("with U open between T's writes: %v, want nothing yet (not t1 alone)", got)
	}
	if err := u.commit(); err != nil {
		t.Fatal(err)
	}
	req.After, req.HasAfter = p.Position, true
	if p, err = e.ReadChanges(ctx, "db", "k", req); err != nil {
		t.Fatal(err)
	}
	if got := feedIDs(p); !slices.Equal(got, []string{"t1", "u", "t2"}) {
		t.Errorf("once U committed, a page of 1: %v, want [t1 u t2] (T whole)", got)
	}

	// Overlapping transactions (a review): A takes an LSN, B the next, A
	// another and commits; C takes one and stays open, B another and
	// commits. A can be read to its end, B cannot: neither is delivered
	// until C ends (A's first write alone split A from its second), and
	// then all three come whole.
	req.After = p.Position
	third := near + 1
	for ; ; third++ {
		if l, _ := locate(c, pkN(third), ""); l.rng.ID == l1.rng.ID {
			break
		}
	}
	open := func(pk int) *lpTxn {
		t.Helper()
		x, err := e.begin(t.Context(), c, pkN(pk))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	put := func(x *lpTxn, pk int, id string) {
		t.Helper()
		if _, err := x.write(Create, "", fmt.Appendf(nil, `{"id":%q,"pk":"p%d"}`, id, pk), ""); err != nil {
			t.Fatal(err)
		}
	}
	ta, tb := open(1), open(near)
	put(ta, 1, "a1")
	put(tb, near, "b1")
	put(ta, 1, "a2")
	if err := ta.commit(); err != nil {
		t.Fatal(err)
	}
	tc := open(third)
	put(tc, third, "c1")
	put(tb, near, "b2")
	if err := tb.commit(); err != nil {
		t.Fatal(err)
	}
	if p, err = e.ReadChanges(ctx, "db", "k", req); err != nil {
		t.Fatal(err)
	}
	if got := feedIDs(p); len(got) != 0 {
		t.Fatalf("with C open inside B: %v, want nothing yet (not A's first write alone)", got)
	}
	put(tc, third, "c2")
	if err := tc.commit(); err != nil {
		t.Fatal(err)
	}
	req.After = p.Position
	if p, err = e.ReadChanges(ctx, "db", "k", req); err != nil {
		t.Fatal(err)
	}
	if got := feedIDs(p); !slices.Equal(got, []string{"a1", "b1", "a2", "c1", "b2", "c2"}) {
		t.Errorf("once C committed, a page of 1: %v, want [a1 b1 a2 c1 b2 c2]", got)
	}
}

// feedIDs returns the ids of a change feed page's items, in order.
func feedIDs(p ChangePage) []string {
	var out []string
	for _, it := range p.Items {
		var x struct{ ID string }
		_ = json.Unmarshal(it, &x)
		out = append(out, x.ID)
	}
	return out
}
