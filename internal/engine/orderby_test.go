package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/plan"
)

// orderPages drains q over scope in pages, returning its rows, the
// documents it loaded and each page's access.
func orderPages(t *testing.T, e *Engine, scope Scope, q Query, between func(page int)) (rows []string, loaded int, access []plan.Access) {
	t.Helper()
	for page := 0; ; page++ {
		if page > 500 {
			t.Fatalf("%q: no end after %d pages", q.Text, page)
		}
		p, err := e.QueryItems(t.Context(), "db", "k", scope, q)
		if err != nil {
			t.Fatalf("%q page %d: %v", q.Text, page, err)
		}
		loaded += p.Loaded
		access = append(access, p.Metrics.Plan.Access)
		for _, it := range p.Items {
			rows = append(rows, string(it))
		}
		if p.Continuation == "" {
			return rows, loaded, access
		}
		q.Continuation = p.Continuation
		if between != nil {
			between(page)
		}
	}
}

// TestOrderByCountedPath: an ORDER BY on a path that no conjunct filters is
// read in index order when every document of the scope has a scalar there
// (the engine counts the path's entries against the scope's items on the
// first page), loading about a page of documents per page rather than the
// whole scope, with the rows a sort gives; a document without a scalar
// there (undefined, an array, an object) makes it sort as before; and a
// query keeps its first page's plan whatever is written between pages.
func TestOrderByCountedPath(t *testing.T) {
	e := testEngineWith(t, Config{GatewayQueryFull: true})
	kept := queryFixture(t, e, 300) // every item has n, its id's number
	const pageSize = 20
	all := func(text string) Query {
		return Query{Text: text, EnableCrossPartition: true, MaxItems: pageSize}
	}
	for _, desc := range []bool{false, true} {
		dir := ""
		if desc {
			dir = " DESC"
		}
		got, loaded, access := orderPages(t, e, Scope{}, all("SELECT VALUE c.id FROM c ORDER BY c.n"+dir), nil)
		// Sorted: the same order (n is unique).
		ref := all("SELECT VALUE c.id FROM c ORDER BY c.n" + dir)
		ref.sorted = true
		want, sortLoaded, _ := orderPages(t, e, Scope{}, ref, nil)
		if !slices.Equal(got, want) || len(got) != len(kept) {
			t.Fatalf("ORDER BY c.n%s: %d rows, want the %d of a sort:\n%v\n%v", dir, len(got), len(want), got, want)
		}
		for i, a := range access {
			if a != plan.IndexOrdered {
				t.Errorf("ORDER BY c.n%s: page %d read by %v, want index order", dir, i, a)
			}
		}
		// A page loads its rows, the one after (is there a next page?),
		// and, resuming, the last one before (query.go, last).
		if max := len(got) + 2*len(access); loaded > max {
			t.Errorf("ORDER BY c.n%s: %d documents loaded for %d rows in %d pages, want at most %d", dir, loaded, len(got), len(access), max)
		}
		t.Logf("ORDER BY c.n%s: %d rows in %d pages: %d documents loaded in index order, %d sorted", dir, len(got), len(access), loaded, sortLoaded)
	}

	// A query begun in index order keeps it: an item without n written
	// between its pages would sort first, before its position.
	q := all("SELECT VALUE c.id FROM c ORDER BY c.n")
	got, _, access := orderPages(t, e, Scope{}, q, func(page int) {
		if page == 0 {
			upsertRaw(t, e, 1, `{"id":"none","pk":"p1"}`)
		}
	})
	if !slices.Equal(got, sortedIDs(kept)) {
		t.Errorf("a query begun in index order, an item without n written after its first page: %v", got)
	}
	if slices.ContainsFunc(access, func(a plan.Access) bool { return a != plan.IndexOrdered }) {
		t.Errorf("a query begun in index order changed plans: %v", access)
	}

	// Now one item has no n: every page sorts, and the item comes first
	// (undefined sorts before every value), or last backwards; with n an
	// array or an object, last (after every scalar), or first backwards.
	for _, odd := range []string{``, `,"n":[1]`, `,"n":{"a":1}`} {
		upsertRaw(t, e, 1, `{"id":"none","pk":"p1"`+odd+`}`)
		for _, desc := range []bool{false, true} {
			text := "SELECT VALUE c.id FROM c ORDER BY c.n"
			if desc {
				text += " DESC"
			}
			got, _, access := orderPages(t, e, Scope{}, all(text), nil)
			first := desc == (odd != "")
			if len(got) != len(kept)+1 || (first && got[0] != `"none"`) || (!first && got[len(got)-1] != `"none"`) {
				t.Errorf("%q with n%s: %d rows, want %d with \"none\" first: %v; %v", text, odd, len(got), len(kept)+1, first, got)
			}
			if slices.Contains(access, plan.IndexOrdered) {
				t.Errorf("%q with n%s: read in index order (%v), which misses the item", text, odd, access)
			}
		}
	}
	// A query begun sorted stays sorted once the item is gone.
	got, _, access = orderPages(t, e, Scope{}, q, func(page int) {
		if page == 0 {
			deleteRaw(t, e, 1, "none")
		}
	})
	if len(got) != len(kept) || slices.Contains(access, plan.IndexOrdered) {
		t.Errorf("a query begun sorted, its odd item deleted after the first page: %d rows of %d, pages %v", len(got), len(kept), access)
	}

	// The count is per range of the scope: an item without n in one half
	// of a split range (the halves share a keyspace until separated) does
	// not keep the other half from its index.
	ranges, _, _, err := e.PKRanges("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SplitRange(t.Context(), "db", "k", ranges[0].ID); err != nil {
		t.Fatal(err)
	}
	upsertRaw(t, e, 1, `{"id":"none","pk":"p1"}`)
	ranges, _, _, err = e.PKRanges("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	var covered, uncovered int
	for _, r := range ranges {
		scope := Scope{RangeID: r.ID}
		rq := Query{Text: "SELECT VALUE c.id FROM c ORDER BY c.n", MaxItems: pageSize}
		got, _, access := orderPages(t, e, scope, rq, nil)
		odd, _, _ := orderPages(t, e, scope, Query{Text: "SELECT VALUE c.id FROM c WHERE NOT IS_NUMBER(c.n)"}, nil)
		switch {
		case len(odd) > 0 && (slices.Contains(access, plan.IndexOrdered) || got[0] != `"none"`):
			t.Errorf("range %s holds %v: read by %v, first row %s", r.ID, odd, access, got[0])
		case len(odd) > 0:
			uncovered++
		case slices.ContainsFunc(access, func(a plan.Access) bool { return a != plan.IndexOrdered }):
			t.Errorf("range %s, every item with an n: read by %v, want index order", r.ID, access)
		default:
			covered++
		}
	}
	if uncovered != 1 || covered != len(ranges)-1 {
		t.Errorf("%d ranges: %d read in index order, %d sorted; want all but the one with the item", len(ranges), covered, uncovered)
	}
}

// sortedIDs returns ids sorted, as JSON strings (the fixture's n follows
// its ids' order).
func sortedIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%q", id)
	}
	slices.SortFunc(out, strings.Compare)
	return out
}

func upsertRaw(t *testing.T, e *Engine, pk int, body string) {
	t.Helper()
	if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(pk), Body: []byte(body)}); err != nil {
		t.Fatal(err)
	}
}

func deleteRaw(t *testing.T, e *Engine, pk int, id string) {
	t.Helper()
	if _, err := e.DeleteItem(t.Context(), ItemRef{DB: "db", Container: "k", ID: id}, pkN(pk), "", TriggerSet{}); err != nil {
		t.Fatal(err)
	}
}

// TestQueryKeyConjunctReadsByKey: in one logical partition, named by the
// partition key header or pinned by the filter, a conjunct on the
// partition key path narrows nothing: the partition is read by key, in id
// order, with no index entry read and no item loaded twice, and the
// conjunct is not evaluated (plan.Implied); another conjunct's lookup still
// narrows it, and a conjunct naming another key matches nothing.
func TestQueryKeyConjunctReadsByKey(t *testing.T) {
	e := testEngine(t)
	var want []string
	for i := 29; i >= 0; i-- { // created in reverse id order
		id := fmt.Sprintf("i%02d", i)
		upsertRaw(t, e, 1, fmt.Sprintf(`{"id":%q,"pk":"p1","kind":"k%d"}`, id, i%3))
		upsertRaw(t, e, 2, fmt.Sprintf(`{"id":%q,"pk":"p2","kind":"k%d"}`, id, i%3))
		want = append([]string{strconv.Quote(id)}, want...)
	}
	params := map[string][]byte{"@pk": []byte(`"p1"`)}
	for _, sc := range []struct {
		name  string
		scope Scope
	}{{"the header", Scope{PK: pkN(1)}}, {"the filter", Scope{}}} {
		q := Query{Text: "SELECT VALUE c.id FROM c WHERE c.pk = @pk", Params: params, EnableCrossPartition: true, MaxItems: 7}
		var got []string
		for pages := 0; pages < 10; pages++ {
			p, err := e.QueryItems(t.Context(), "db", "k", sc.scope, q)
			if err != nil {
				t.Fatal(err)
			}
			if p.Metrics.Plan.Access != plan.KeyRange || p.Metrics.Entries != 0 {
				t.Errorf("%s: page %d read by %v with %d entries, want by key with none", sc.name, pages, p.Metrics.Plan.Access, p.Metrics.Entries)
			}
			if !slices.Equal(p.Metrics.Plan.Implied, []string{"c.pk = @pk"}) {
				t.Errorf("%s: page %d implied %q, want the key conjunct", sc.name, pages, p.Metrics.Plan.Implied)
			}
			for _, it := range p.Items {
				got = append(got, string(it))
			}
			if q.Continuation = p.Continuation; q.Continuation == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want the partition's items in id order %v", sc.name, got, want)
		}
	}
	// A conjunct naming another key than the scope's is evaluated: nothing
	// matches.
	q := Query{Text: "SELECT * FROM c WHERE c.pk = 'p2'", MaxItems: -1}
	p, err := e.QueryItems(t.Context(), "db", "k", Scope{PK: pkN(1)}, q)
	if err != nil || len(p.Items) != 0 || p.Metrics.Plan.Implied != nil {
		t.Errorf("p1 scope, p2 filter: %d rows, implied %q, %v; want none", len(p.Items), p.Metrics.Plan.Implied, err)
	}
	q = Query{Text: "SELECT VALUE c.id FROM c WHERE c.pk = @pk AND c.kind = 'k0'", Params: params, MaxItems: -1}
	p, err = e.QueryItems(t.Context(), "db", "k", Scope{PK: pkN(1)}, q)
	if err != nil {
		t.Fatal(err)
	}
	if p.Metrics.Plan.Access != plan.IndexPoint || p.Metrics.Plan.Lookup == nil || p.Metrics.Plan.Lookup.Path[0] != "kind" || len(p.Items) != 10 {
		t.Errorf("pk and kind: %d rows by %v on %v, want 10 through the index on /kind", len(p.Items), p.Metrics.Plan.Access, p.Metrics.Plan.Lookup)
	}
}

// TestOrderByIDInPartition: in one logical partition ORDER BY c.id is the
// order its keys are read in (backwards for DESC), so a drain streams it,
// loading about a page of documents per page rather than the whole
// partition, with the rows a sort gives; ids of several scripts check that
// key order is the ORDER BY's string order, and an item written between
// pages shows only if it sorts after the position.
func TestOrderByIDInPartition(t *testing.T) {
	e := testEngine(t)
	ids := []string{"b", "a", "B", "Z", "10", "9", "a b", "a-1", "a_1", "é", "ä", "z", "\uff61", "😀", "ab", "a"}
	ids = ids[:len(ids)-1] // "a" once
	for i := range 40 {
		ids = append(ids, fmt.Sprintf("n%03d", 39-i))
	}
	for _, id := range ids {
		upsertRaw(t, e, 1, fmt.Sprintf(`{"id":%q,"pk":"p1","n":1}`, id))
		upsertRaw(t, e, 2, fmt.Sprintf(`{"id":%q,"pk":"p2","n":1}`, id)) // another partition, not read
	}
	const pageSize = 7
	scope := Scope{PK: pkN(1)}
	q := func(text string) Query { return Query{Text: text, MaxItems: pageSize} }
	want := slices.Clone(ids)
	slices.Sort(want)
	for i := range want {
		want[i] = strconv.Quote(want[i])
	}
	// Sorted: the same order (ids are unique).
	ref := q("SELECT VALUE c.id FROM c ORDER BY c.id")
	ref.sorted = true
	sorted, sortLoaded, _ := orderPages(t, e, scope, ref, nil)
	if !slices.Equal(sorted, want) {
		t.Fatalf("a sort by id:\n%v\nwant:\n%v", sorted, want)
	}
	for _, dir := range []string{"", " DESC"} {
		got, loaded, access := orderPages(t, e, scope, q("SELECT VALUE c.id FROM c ORDER BY c.id"+dir), nil)
		if dir != "" {
			slices.Reverse(got)
		}
		if !slices.Equal(got, want) {
			t.Errorf("ORDER BY c.id%s:\n%v\nwant:\n%v", dir, got, want)
		}
		// A page loads its rows, the one after (is there a next page?),
		// and, resuming, the last one before (query.go, last).
		if max := len(got) + 2*len(access); loaded > max {
			t.Errorf("ORDER BY c.id%s: %d documents loaded for %d rows in %d pages, want at most %d (a sort loaded %d)", dir, loaded, len(got), len(access), max, sortLoaded)
		}
	}
	// Items written between pages: one before the position (not
	// returned) and one after it (returned), either way.
	for _, dir := range []string{"", " DESC"} {
		early, late := "a0", "n0395"
		if dir != "" {
			early, late = late, early
		}
		got, _, _ := orderPages(t, e, scope, q("SELECT VALUE c.id FROM c ORDER BY c.id"+dir), func(page int) {
			if page == 2 {
				upsertRaw(t, e, 1, fmt.Sprintf(`{"id":%q,"pk":"p1"}`, early))
				upsertRaw(t, e, 1, fmt.Sprintf(`{"id":%q,"pk":"p1"}`, late))
			}
		})
		if slices.Contains(got, strconv.Quote(early)) || !slices.Contains(got, strconv.Quote(late)) || len(got) != len(want)+1 {
			t.Errorf("ORDER BY c.id%s with %s and %s written after page 3: %d rows %v", dir, early, late, len(got), got)
		}
		deleteRaw(t, e, 1, early)
		deleteRaw(t, e, 1, late)
	}
	// With a filter and TOP, through the partition key's conjunct too.
	top, _, _ := orderPages(t, e, Scope{}, Query{Text: `SELECT TOP 5 VALUE c.id FROM c WHERE c.pk = "p1" AND STARTSWITH(c.id, "n") ORDER BY c.id`, MaxItems: 2}, nil)
	if wantTop := []string{`"n000"`, `"n001"`, `"n002"`, `"n003"`, `"n004"`}; !slices.Equal(top, wantTop) {
		t.Errorf("TOP 5 with a filter: %v, want %v", top, wantTop)
	}
}

// TestOrderByTsInPartition: in one logical partition, ORDER BY c._ts (or a
// path the filter constrains) is read in the path's index order when the
// first page's probe finds the partition's entries dense enough in the
// keyspace's (plan.ProbeBudget), loading about a page of documents per
// page, and sorted otherwise (a partition of a few old items among many
// newer ones); either way with the rows a sort gives.
func TestOrderByTsInPartition(t *testing.T) {
	var tick atomic.Int64
	clock := func() time.Time { return time.Unix(1_700_000_000+tick.Add(1), 0) } // every call a second later: _ts never ties
	e := testEngineAt(t, Config{}, clock)
	// p9: three old items; then p1's 150 items interleaved with as many of
	// p2, and 1,200 of p10 to p49.
	for i := range 3 {
		upsertRaw(t, e, 9, fmt.Sprintf(`{"id":"old%d","pk":"p9","n":%d}`, i, i))
	}
	for i := range 150 {
		upsertRaw(t, e, 1, fmt.Sprintf(`{"id":"a%03d","pk":"p1","n":%d}`, i, 1000-i))
		upsertRaw(t, e, 2, fmt.Sprintf(`{"id":"b%03d","pk":"p2","n":%d}`, i, i))
	}
	for i := range 1200 {
		upsertRaw(t, e, 10+i%40, fmt.Sprintf(`{"id":"c%04d","pk":"p%d","n":%d}`, i, 10+i%40, i))
	}
	page := func(text string, n int) Query { return Query{Text: text, MaxItems: n} }
	for _, tt := range []struct {
		pk      int
		query   string
		ordered bool
	}{
		{1, "SELECT VALUE c.id FROM c ORDER BY c._ts DESC", true},
		{1, "SELECT VALUE c.id FROM c ORDER BY c._ts", true},
		{1, "SELECT TOP 5 VALUE c.id FROM c ORDER BY c._ts DESC", true},
		{1, "SELECT VALUE c.id FROM c WHERE c.n > 900 ORDER BY c.n", true},
		{9, "SELECT VALUE c.id FROM c ORDER BY c._ts DESC", false},
		{9, "SELECT VALUE c.id FROM c ORDER BY c._ts", true}, // the oldest: found at once
	} {
		const size = 20
		got, loaded, access := orderPages(t, e, Scope{PK: pkN(tt.pk)}, page(tt.query, size), nil)
		sorted := page(tt.query, size)
		sorted.sorted = true
		want, sortLoaded, sortAccess := orderPages(t, e, Scope{PK: pkN(tt.pk)}, sorted, nil)
		if !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("p%d %s: %d rows, want the %d of a sort:\n%v\n%v", tt.pk, tt.query, len(got), len(want), got, want)
		}
		for i, a := range access {
			if (a == plan.IndexOrdered) != tt.ordered {
				t.Errorf("p%d %s: page %d read by %v (index order: %v)", tt.pk, tt.query, i, a, tt.ordered)
			}
		}
		if sortAccess[0] == plan.IndexOrdered {
			t.Fatalf("%s: the sorted reference read in index order", tt.query)
		}
		if max := len(got) + 2*len(access); tt.ordered && loaded > max {
			t.Errorf("p%d %s: %d documents loaded for %d rows in %d pages, want at most %d", tt.pk, tt.query, loaded, len(got), len(access), max)
		}
		t.Logf("p%d %s: %d rows in %d pages, %d documents loaded (sorted: %d)", tt.pk, tt.query, len(got), len(access), loaded, sortLoaded)
	}
}

// TestSortedContinuationOfLongStrings: an ORDER BY on strings of 200 KB,
// sorted in one logical partition, pages with continuations of a few
// hundred bytes (the whole key made one of 267 KB, past the server's own
// 64 KiB header limit: a hostile-query hunt), and drains every item once,
// in order.
func TestSortedContinuationOfLongStrings(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	pk := document.PartitionKey{{Kind: document.String, String: "p"}}
	var want []string
	for i := range 6 {
		s := strings.Repeat("s", 200<<10) + strconv.Itoa((i*5)%6)
		body := fmt.Sprintf(`{"id":"i%d","pk":"p","s":%q}`, i, s)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	for v := range 6 {
		for i := range 6 {
			if (i*5)%6 == v {
				want = append(want, fmt.Sprintf(`"i%d"`, i))
			}
		}
	}
	q := Query{Text: "SELECT VALUE c.id FROM c ORDER BY c.s", MaxItems: 1}
	var got []string
	for range 20 {
		p, err := e.QueryItems(ctx, "db", "k", Scope{PK: pk}, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			got = append(got, string(it))
		}
		if p.Continuation == "" {
			break
		}
		if len(p.Continuation) > 4096 {
			t.Fatalf("continuation of %d bytes", len(p.Continuation))
		}
		q.Continuation = p.Continuation
	}
	if !slices.Equal(got, want) {
		t.Errorf("drained %v, want %v", got, want)
	}
}

// TestOrderByWeighedAgainstLookup: a filter with a lookup on another path
// than the ORDER BY's was looked up and sorted on every page, whatever
// the lookup found: WHERE c.n >= 500 ORDER BY c._ts loaded every match
// for each page (a cost hunt: 2,000,000 documents loaded to drain 10,000
// rows). The first page now counts the lookup's entries and weighs them
// against reading the ORDER BY's order: a lookup finding many documents
// beside a page is read in order, a page loading about its rows; a
// selective one is still looked up and sorted. The rows are a sort's.
func TestOrderByWeighedAgainstLookup(t *testing.T) {
	e := testEngineWith(t, Config{GatewayQueryFull: true})
	const n = 2000
	for i := range n {
		upsertRaw(t, e, i%10, fmt.Sprintf(`{"id":"i%04d","pk":"p%d","n":%d,"rare":%v,"cat":%d}`, i, i%10, i%1000, i%250 == 0, i%4))
	}
	for _, tc := range []struct {
		text   string
		access plan.Access
		max    func(rows, pages int) int // documents a drain may load
	}{
		// Half the documents match, in runs of 500: a page loads its
		// rows and the misses before them, and, resuming just after the
		// last row returned, those after it once more (a document there
		// may have changed since: query.go, last).
		{"SELECT c.id, c._ts FROM c WHERE c.n >= 500 ORDER BY c._ts", plan.IndexOrdered, func(rows, pages int) int { return 3*rows + 2*pages + 100 }},
		{"SELECT c.id, c._ts FROM c WHERE c.n >= 500 ORDER BY c._ts DESC", plan.IndexOrdered, func(rows, pages int) int { return 3*rows + 2*pages + 100 }},
		{"SELECT c.id, c._ts FROM c WHERE c.rare = true ORDER BY c._ts", plan.IndexPoint, func(rows, pages int) int { return rows * pages }},
		{"SELECT TOP 5 c.id, c._ts FROM c WHERE c.rare = true ORDER BY c._ts DESC", plan.IndexPoint, func(rows, pages int) int { return 8 * pages }},
		// The first lookup finds a quarter of the items, the intersection
		// two: weighed by what the intersection finds.
		{"SELECT TOP 10 c.id, c._ts FROM c WHERE c.cat = 1 AND c.n = 5 ORDER BY c._ts", plan.IndexIntersect, func(rows, pages int) int { return 2 * pages }},
	} {
		ref := Query{Text: tc.text, EnableCrossPartition: true, MaxItems: 5000}
		ref.sorted = true
		want, _, _ := orderPages(t, e, Scope{}, ref, nil)
		q := Query{Text: tc.text, EnableCrossPartition: true, MaxItems: 100}
		got, loaded, access := orderPages(t, e, Scope{}, q, nil)
		if got, want := tiesSorted(t, got), tiesSorted(t, want); !slices.Equal(got, want) {
			t.Fatalf("%q: %d rows, want the %d of a sort", tc.text, len(got), len(want))
		}
		for i, a := range access {
			if a != tc.access {
				t.Errorf("%q: page %d read by %v, want %v", tc.text, i, a, tc.access)
			}
		}
		if max := tc.max(len(got), len(access)); loaded > max {
			t.Errorf("%q: %d documents loaded for %d rows in %d pages, want at most %d", tc.text, loaded, len(got), len(access), max)
		}
	}
}

// TestResumeAfterLastRow: a page resumes just after the last row it
// returned, not at the document it looked at next to learn that another
// page follows: a document written between pages between the two is read.
// Over several physical partitions the next page resumed at that next
// document, and a row written before it was never returned (a bug hunt:
// ORDER BY in index order, composite ORDER BY, creation order), where one
// partition's pages returned it, as Cosmos DB does (its ORDER BY
// continuation is the last row's values and _rid).
func TestResumeAfterLastRow(t *testing.T) {
	e := testEngineWith(t, Config{GatewayQueryFull: true})
	for i := range 12 {
		n := 0
		if i%3 == 2 {
			n = 200
		}
		upsertRaw(t, e, i%4, fmt.Sprintf(`{"id":"i%02d","pk":"p%d","s":"L%02d","n":%d}`, i, i%4, i, n))
		// In one logical partition, so that creation order is theirs.
		upsertRaw(t, e, 3, fmt.Sprintf(`{"id":"c%02d","pk":"p3","s":"M%02d","m":%d}`, i, i, n))
	}
	for _, tc := range []struct {
		text    string
		between func() // after the first page
		want    string // a row the drain must hold
	}{
		// The first page returns i00 and i01: a new item right after i01
		// in the ORDER BY's order.
		{"SELECT VALUE c.id FROM c ORDER BY c.s", func() { upsertRaw(t, e, 1, `{"id":"new","pk":"p1","s":"L01x","n":0}`) }, "new"},
		{"SELECT VALUE c.id FROM c ORDER BY c.s DESC", func() { upsertRaw(t, e, 1, `{"id":"new2","pk":"p1","s":"M09z","n":0}`) }, "new2"},
		// In creation order the first page returns c02 and c05: c06, created
		// between c05 and c08, is made to match.
		{"SELECT VALUE c.id FROM c WHERE c.m >= 100", func() { upsertRaw(t, e, 3, `{"id":"c06","pk":"p3","s":"M06","m":300}`) }, "c06"},
	} {
		q := Query{Text: tc.text, EnableCrossPartition: true, MaxItems: 2}
		got, _, access := orderPages(t, e, Scope{}, q, func(page int) {
			if page == 0 {
				tc.between()
			}
		})
		if !slices.Contains(got, `"`+tc.want+`"`) {
			t.Errorf("%q in pages of 2 (%v), %s written after the first page right after its last row: drained %v, without it", tc.text, access[0], tc.want, got)
		}
	}
}

// TestPageSizeChangeKeepsPlan: a client may ask for another page size on
// each page (x-ms-max-item-count), and the query goes on with the plan its
// first page chose. A range in one logical partition is read by key or
// through the index by its entries against the partition's items and the
// page size; planned with each page's own size, a page of 1 then a page of
// 100 (and the reverse) flipped the plan and the continuation was refused,
// 400 "its position is in another order" (a bug hunt).
func TestPageSizeChangeKeepsPlan(t *testing.T) {
	e := testEngine(t)
	for i := range 200 {
		upsertRaw(t, e, 0, fmt.Sprintf(`{"id":"a%03d","pk":"p0","a":%d}`, i, 250+i))
	}
	for i := range 1500 {
		upsertRaw(t, e, 1+i%3, fmt.Sprintf(`{"id":"b%04d","pk":"p%d","a":%d}`, i, 1+i%3, 300+i))
	}
	scope := Scope{PK: pkN(0)}
	text := "SELECT VALUE c.id FROM c WHERE c.a >= 300"
	want, _, _ := orderPages(t, e, scope, Query{Text: text, MaxItems: 1000}, nil)
	for _, sizes := range [][2]int{{1, 100}, {10, 1}, {100, 1}, {1, 1000}} {
		var got []string
		q := Query{Text: text, MaxItems: sizes[0]}
		for page := 0; ; page++ {
			if page > 200 {
				t.Fatalf("pages of %v: no end", sizes)
			}
			p, err := e.QueryItems(t.Context(), "db", "k", scope, q)
			if err != nil {
				t.Fatalf("pages of %d then %d: page %d: %v", sizes[0], sizes[1], page, err)
			}
			for _, it := range p.Items {
				got = append(got, string(it))
			}
			if p.Continuation == "" {
				break
			}
			q.Continuation, q.MaxItems = p.Continuation, sizes[1]
		}
		slices.Sort(got)
		if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
			t.Errorf("pages of %d then %d: %d rows, want %d", sizes[0], sizes[1], len(got), len(w))
		}
	}
}
