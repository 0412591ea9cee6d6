package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestRangeTokenAcrossSplit: a range-scoped query's continuation, replayed
// on each child after the range split (as the SDKs do), returns every row
// of the parent exactly once between the first page and the children; and
// a token is refused with "Invalid Continuation Token" on another range,
// partition key or query, and on the whole container.
func TestRangeTokenAcrossSplit(t *testing.T) {
	for _, text := range []string{
		"SELECT VALUE c.id FROM c",                                  // creation order through the order entries
		"SELECT VALUE c.id FROM c WHERE c.n >= 10",                  // an index lookup
		"SELECT VALUE c.id FROM c WHERE c.n >= 3 ORDER BY c.n DESC", // the range index in ORDER BY order
		"sorted SELECT VALUE c.id FROM c ORDER BY c.pk",             // sorted pages, with ties (Query.sorted)
	} {
		t.Run(text, func(t *testing.T) {
			e := testEngine(t)
			e.cfg.GatewayQueryFull = true
			queryFixture(t, e, 120)
			c, _ := e.container("db", "k")
			parent := c.Map().Ranges()[1]
			text, sorted := strings.CutPrefix(text, "sorted ")
			q := Query{Text: text, MaxItems: -1, sorted: sorted}
			want := queryAll(t, e, Scope{RangeID: parent.ID}, q)
			if len(want) < 10 {
				t.Fatalf("range %s holds %d rows: too few to test", parent.ID, len(want))
			}
			q.MaxItems = 4
			first, err := e.QueryItems(t.Context(), "db", "k", Scope{RangeID: parent.ID}, q)
			if err != nil || first.Continuation == "" {
				t.Fatalf("first page: %v, continuation %q", err, first.Continuation)
			}
			got := rowsOf(first)
			kids, err := e.SplitRange(t.Context(), "db", "k", parent.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, kid := range kids {
				if !slices.Contains(kid.Parents, parent.ID) {
					continue
				}
				q.Continuation = first.Continuation
				got = append(got, queryAll(t, e, Scope{RangeID: kid.ID}, q)...)
			}
			if !strings.Contains(text, "ORDER BY") {
				slices.Sort(got)
				slices.Sort(want)
			} else {
				// Across two children the order is each child's; compare
				// as sets, after checking no row repeats.
				slices.Sort(got)
				slices.Sort(want)
			}
			if !slices.Equal(got, want) {
				t.Errorf("first page plus the children from its continuation = %d rows %v\nwant the parent's %d rows %v", len(got), got, len(want), want)
			}

			// The parent's token on a range it never covered, on a partition
			// key outside it, or for another query: 400.
			c, _ = e.container("db", "k")
			var other string
			for _, r := range c.Map().Ranges() {
				if !slices.Contains(r.Parents, parent.ID) {
					other = r.ID
					break
				}
			}
			outside := 0
			for i := range 10 {
				if l, _ := locate(c, pkN(i), ""); l.rng.ID == other {
					outside = i
				}
			}
			q.Continuation = first.Continuation
			for name, try := range map[string]func() error{
				"another range": func() error {
					_, err := e.QueryItems(t.Context(), "db", "k", Scope{RangeID: other}, q)
					return err
				},
				"another partition key": func() error {
					_, err := e.QueryItems(t.Context(), "db", "k", Scope{PK: pkN(outside)}, q)
					return err
				},
				// Wider than the token: the rest of the container would be
				// skipped (a bug hunt: a hierarchical prefix's token
				// resumed a whole-container query with its rows alone).
				"the whole container": func() error {
					q2 := q
					q2.EnableCrossPartition = true
					_, err := e.QueryItems(t.Context(), "db", "k", Scope{}, q2)
					return err
				},
				"another query": func() error {
					q2 := q
					q2.Text += " "
					_, err := e.QueryItems(t.Context(), "db", "k", Scope{RangeID: kids[0].ID}, q2)
					return err
				},
			} {
				err := try()
				if code(err) != 400 || !strings.Contains(fmt.Sprint(err), "Invalid Continuation Token") {
					t.Errorf("%s: err %v, want 400 Invalid Continuation Token", name, err)
				}
			}
		})
	}
}

func rowsOf(p Page) []string {
	out := make([]string, len(p.Items))
	for i, it := range p.Items {
		out[i] = string(it)
	}
	return out
}

// TestOrderedPageUnderUpdates: an ORDER BY page served by the range index
// reads entries and documents from one snapshot, so an item updated while
// the page is read comes out at the position its index entry has, with the
// values that put it there: the page is in order and holds each item once.
// (Between pages a query is not a snapshot: an item moved past the
// continuation may appear again, as in Cosmos DB.)
func TestOrderedPageUnderUpdates(t *testing.T) {
	e := testEngine(t)
	e.cfg.GatewayQueryFull = true
	ctx := context.Background()
	for i := range 40 {
		body := fmt.Sprintf(`{"id":"i%02d","pk":"p1","n":%d}`, i, i)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkN(1), Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := e.container("db", "k")
	l, _ := locate(c, pkN(1), "")
	moved := 0
	testHookOrderedEntry = func() {
		// Move the next items in order past the end while the page reads.
		if moved < 10 {
			moved++
			body := fmt.Sprintf(`{"id":"i%02d","pk":"p1","n":%d}`, moved, 1000+moved)
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(1), Body: []byte(body)}); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookOrderedEntry = nil }()
	p, err := e.QueryItems(ctx, "db", "k", Scope{RangeID: l.rng.ID}, Query{Text: "SELECT c.id, c.n FROM c WHERE c.n >= 0 ORDER BY c.n", MaxItems: 30})
	if err != nil {
		t.Fatal(err)
	}
	if moved == 0 {
		t.Fatal("the hook never ran: the query did not read the range index in order")
	}
	seen := map[string]bool{}
	last := -1
	for _, it := range p.Items {
		var row struct {
			ID string
			N  int
		}
		if err := json.Unmarshal(it, &row); err != nil {
			t.Fatal(err)
		}
		if seen[row.ID] {
			t.Errorf("item %s appears twice in one page", row.ID)
		}
		seen[row.ID] = true
		if row.N < last {
			t.Errorf("row %s with n %d after n %d: the page is out of order", row.ID, row.N, last)
		}
		last = row.N
	}
}

// TestFeedTokenNotWider: a read feed's continuation resumes only a scope
// within its own, as a query's does: a range's token on the whole
// container resumed it over that range alone, the other ranges' items
// silently missing (a review: 70 rows of 600).
func TestFeedTokenNotWider(t *testing.T) {
	e := testEngine(t)
	queryFixture(t, e, 120)
	c, _ := e.container("db", "k")
	r := c.Map().Ranges()[1]
	first, err := e.ReadFeed(t.Context(), "db", "k", Scope{RangeID: r.ID}, 4, "")
	if err != nil || first.Continuation == "" {
		t.Fatalf("first page: %v, continuation %q", err, first.Continuation)
	}
	if _, err := e.ReadFeed(t.Context(), "db", "k", Scope{}, 4, first.Continuation); code(err) != 400 || !strings.Contains(fmt.Sprint(err), "Invalid Continuation Token") {
		t.Errorf("a range's token on the whole container: %v, want 400 Invalid Continuation Token", err)
	}
	if _, err := e.ReadFeed(t.Context(), "db", "k", Scope{RangeID: r.ID}, 4, first.Continuation); err != nil {
		t.Errorf("the token on its own range: %v", err)
	}
}

// TestFeedTokenOfAnotherContainer: a read feed's continuation resumes only
// its own container's feed: sent to another container, or to its own
// deleted and created again, it is refused (both answered 200 and skipped
// the items whose keys sort before the token's, a container hunt).
func TestFeedTokenOfAnotherContainer(t *testing.T) {
	e := testEngine(t)
	def := []byte(`{"id":"o","partitionKey":{"paths":["/pk"]}}`)
	if _, err := e.CreateContainer("db", def, Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	for _, coll := range []string{"k", "o"} {
		for i := range 6 {
			body := fmt.Sprintf(`{"id":"i%d","pk":"p%d"}`, i, i%3)
			if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: coll, Kind: Create, PK: pkN(i % 3), Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	first, err := e.ReadFeed(t.Context(), "db", "k", Scope{}, 2, "")
	if err != nil || first.Continuation == "" {
		t.Fatalf("first page: %v, continuation %q", err, first.Continuation)
	}
	if _, err := e.ReadFeed(t.Context(), "db", "o", Scope{}, 2, first.Continuation); code(err) != 400 || !strings.Contains(fmt.Sprint(err), "Invalid Continuation Token") {
		t.Errorf("k's token on container o: %v, want 400 Invalid Continuation Token", err)
	}
	if _, err := e.ReadFeed(t.Context(), "db", "k", Scope{}, 2, first.Continuation); err != nil {
		t.Errorf("the token on its own container: %v", err)
	}
	if err := e.DeleteContainer("db", "k", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReadFeed(t.Context(), "db", "k", Scope{}, 2, first.Continuation); code(err) != 400 {
		t.Errorf("the token on its container created again: %v, want 400", err)
	}
}
