package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/index"
	"github.com/partitadb/partita/internal/query/plan"
	"github.com/partitadb/partita/internal/replica"
)

// TestBoundedStringTerms: strings longer than index.StringTermBytes are
// indexed by their first bytes and a hash (a bounded term, in the bucket of
// the strings with those bytes), and queries answer as with full terms:
// equality and IN on long strings load their documents alone, ranges and
// STARTSWITH find exactly theirs (the filter re-checks a bucket's
// candidates), and ORDER BY read in index order sorts each bucket's
// documents by their full values, across keyspaces
// and pages cut inside a term, ascending and descending, in one sort or in
// rounds, and when the document a page stopped at is deleted before the
// next page.
func TestBoundedStringTerms(t *testing.T) {
	e := testEngineWith(t, Config{GatewayQueryFull: true})
	const n = 300
	vals := map[string]string{} // id → s
	for i := range n {
		var s string
		switch {
		case i%10 == 0:
			s = fmt.Sprintf("m%03d", i) // short: an exact term among the bounded ones
		case i == 7:
			s = strings.Repeat("b", index.StringTermBytes) // exactly the bound: exact
		default:
			// Three groups sharing their first bytes, suffixes out of
			// creation order.
			s = strings.Repeat(string(rune('a'+i%3*2)), index.StringTermBytes+2) + fmt.Sprintf("%03d", i*37%n)
		}
		id := fmt.Sprintf("i%03d", i)
		vals[id] = s
		body := fmt.Sprintf(`{"id":%q,"pk":"p%d","s":%q}`, id, i%10, s)
		if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Create, PK: pkN(i % 10), Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(match func(s string) bool) []string {
		var out []string
		for id, s := range vals {
			if match(s) {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out
	}
	long := vals["i001"]
	mid := vals["i004"]
	for _, tc := range []struct {
		where  string
		params map[string][]byte
		match  func(s string) bool
	}{
		{"c.s = @v", map[string][]byte{"@v": fmt.Appendf(nil, "%q", long)}, func(s string) bool { return s == long }},
		{"c.s IN (@v, @w)", map[string][]byte{"@v": fmt.Appendf(nil, "%q", long), "@w": fmt.Appendf(nil, "%q", mid)}, func(s string) bool { return s == long || s == mid }},
		{"c.s > @v", map[string][]byte{"@v": fmt.Appendf(nil, "%q", mid)}, func(s string) bool { return s > mid }},
		{"c.s >= @v", map[string][]byte{"@v": fmt.Appendf(nil, "%q", mid)}, func(s string) bool { return s >= mid }},
		{"c.s < @v", map[string][]byte{"@v": fmt.Appendf(nil, "%q", mid)}, func(s string) bool { return s < mid }},
		{"c.s <= @v AND c.s > @w", map[string][]byte{"@v": fmt.Appendf(nil, "%q", mid), "@w": fmt.Appendf(nil, "%q", long)}, func(s string) bool { return s <= mid && s > long }},
		{"STARTSWITH(c.s, @v)", map[string][]byte{"@v": fmt.Appendf(nil, "%q", mid[:index.StringTermBytes+3])}, func(s string) bool { return strings.HasPrefix(s, mid[:index.StringTermBytes+3]) }},
		{"STARTSWITH(c.s, @v)", map[string][]byte{"@v": fmt.Appendf(nil, "%q", strings.Repeat("b", index.StringTermBytes))}, func(s string) bool {
			return strings.HasPrefix(s, strings.Repeat("b", index.StringTermBytes))
		}},
	} {
		q := Query{Text: "SELECT VALUE c.id FROM c WHERE " + tc.where, Params: tc.params, EnableCrossPartition: true}
		var got []string
		for _, r := range queryAll(t, e, Scope{}, q) {
			got = append(got, strings.Trim(r, `"`))
		}
		slices.Sort(got)
		if want := ids(tc.match); !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("WHERE %s: %d rows %v, want %d %v", tc.where, len(got), got, len(want), want)
		}
	}
	// Equality finds its long string by its hash: it loads that document
	// alone, not the bucket of ~90 sharing its first bytes.
	for _, tc := range []struct {
		where  string
		params map[string][]byte
		want   int
	}{
		{"c.s = @v", map[string][]byte{"@v": fmt.Appendf(nil, "%q", long)}, 1},
		{"c.s IN (@v, @w)", map[string][]byte{"@v": fmt.Appendf(nil, "%q", long), "@w": fmt.Appendf(nil, "%q", mid)}, 2},
	} {
		q := Query{Text: "SELECT VALUE c.id FROM c WHERE " + tc.where, Params: tc.params, EnableCrossPartition: true, MaxItems: -1}
		if got, loaded := queryAllLoaded(t, e, "k", q); len(got) != tc.want || loaded != tc.want {
			t.Errorf("WHERE %s: %d rows, %d documents loaded; want %d of each", tc.where, len(got), loaded, tc.want)
		}
	}

	// The second time round, five entries of a term are sorted at a time
	// (maxBucketRound): each term of about 90 is read in rounds.
	for _, tc := range []struct {
		round int
		desc  bool
	}{{0, false}, {0, true}, {5, false}, {5, true}} {
		e.bucketRound = tc.round
		desc := tc.desc
		dir := ""
		if desc {
			dir = " DESC"
		}
		q := func(text string) Query { return Query{Text: text, EnableCrossPartition: true, MaxItems: 7} }
		rows, _, access := orderPages(t, e, Scope{}, q("SELECT VALUE c.id FROM c ORDER BY c.s"+dir), nil)
		var got []string
		for _, r := range rows {
			got = append(got, strings.Trim(r, `"`))
		}
		want := slices.Collect(func(yield func(string) bool) {
			all := ids(func(string) bool { return true })
			slices.SortFunc(all, func(a, b string) int {
				if desc {
					return strings.Compare(vals[b], vals[a])
				}
				return strings.Compare(vals[a], vals[b])
			})
			for _, id := range all {
				if !yield(id) {
					return
				}
			}
		})
		if !slices.Equal(got, want) {
			t.Fatalf("ORDER BY c.s%s: %d rows\n%v\nwant %d\n%v", dir, len(got), got, len(want), want)
		}
		for i, a := range access {
			if a != plan.IndexOrdered {
				t.Fatalf("ORDER BY c.s%s: page %d read by %v, want index order", dir, i, a)
			}
		}

		// The document a page stopped at (the next page's first) deleted
		// between the pages: the next page resumes where its value put it
		// (the continuation carries it), none read twice, none missed.
		var deleted []string
		rows, _, _ = orderPages(t, e, Scope{}, q("SELECT VALUE c.id FROM c ORDER BY c.s"+dir), func(page int) {
			k := len(deleted) + 7*(page+1)
			if k >= len(want) {
				return
			}
			next := want[k]
			if len(vals[next]) <= index.StringTermBytes || len(deleted) >= 6 {
				return
			}
			var i int
			fmt.Sscanf(next, "i%d", &i)
			if _, err := e.DeleteItem(t.Context(), ItemRef{DB: "db", Container: "k", ID: next}, pkN(i%10), "", TriggerSet{}); err != nil {
				t.Fatal(err)
			}
			deleted = append(deleted, next)
		})
		got = got[:0]
		for _, r := range rows {
			got = append(got, strings.Trim(r, `"`))
		}
		want = slices.DeleteFunc(want, func(id string) bool { return slices.Contains(deleted, id) })
		if len(deleted) == 0 || !slices.Equal(got, want) {
			t.Fatalf("ORDER BY c.s%s with %v deleted between pages: %d rows\n%v\nwant %d\n%v", dir, deleted, len(got), got, len(want), want)
		}
		for _, id := range deleted {
			delete(vals, id)
		}
	}
}

// TestBoundedTermsLongSharedPrefix: ORDER BY on strings that share more
// than a continuation holds of its value (maxTokenValue) is paged exactly,
// in pages of 1, 2 and 3, ascending and descending: the next page resumes
// after the position's own entry, whose whole value it reads. Each page
// went back to the first of the strings sharing the token's bytes, and a
// pager of one row asked for the same page without end (a query hunt).
// With the document a page stopped at deleted between the pages, the next
// resumes where the token's bytes put it: nothing missed, and it ends.
func TestBoundedTermsLongSharedPrefix(t *testing.T) {
	e := testEngineWith(t, Config{GatewayQueryFull: true})
	prefix := strings.Repeat("x", maxTokenValue+76)
	vals := map[string]string{}
	for i := range 40 {
		id := fmt.Sprintf("i%02d", i)
		vals[id] = prefix + fmt.Sprintf("%03d", i*17%40)
		body := fmt.Sprintf(`{"id":%q,"pk":"p%d","s":%q}`, id, i%5, vals[id])
		if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Create, PK: pkN(i % 5), Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	sorted := func(desc bool) []string {
		ids := slices.Collect(maps.Keys(vals))
		slices.SortFunc(ids, func(a, b string) int {
			if desc {
				return strings.Compare(vals[b], vals[a])
			}
			return strings.Compare(vals[a], vals[b])
		})
		return ids
	}
	ids := func(rows []string) []string {
		for i, r := range rows {
			rows[i] = strings.Trim(r, `"`)
		}
		return rows
	}
	for _, desc := range []bool{false, true} {
		dir := ""
		if desc {
			dir = " DESC"
		}
		for size := 1; size <= 3; size++ {
			q := Query{Text: "SELECT VALUE c.id FROM c ORDER BY c.s" + dir, EnableCrossPartition: true, MaxItems: size}
			rows, _, _ := orderPages(t, e, Scope{}, q, nil)
			if got, want := ids(rows), sorted(desc); !slices.Equal(got, want) {
				t.Fatalf("ORDER BY c.s%s in pages of %d: %d rows\n%v\nwant %d\n%v", dir, size, len(got), got, len(want), want)
			}
		}
		// The next page's first document deleted between pages (three
		// times): its entry is gone, and the page reads again the strings
		// sharing the token's bytes; every other is read, and the pages end.
		want := sorted(desc)
		var deleted []string
		q := Query{Text: "SELECT VALUE c.id FROM c ORDER BY c.s" + dir, EnableCrossPartition: true, MaxItems: 4}
		rows, _, _ := orderPages(t, e, Scope{}, q, func(page int) {
			if page%3 != 1 || len(deleted) == 3 {
				return
			}
			next := want[4*(page+1)]
			var i int
			fmt.Sscanf(next, "i%d", &i)
			if _, err := e.DeleteItem(t.Context(), ItemRef{DB: "db", Container: "k", ID: next}, pkN(i%5), "", TriggerSet{}); err != nil {
				t.Fatal(err)
			}
			deleted = append(deleted, next)
		})
		seen := map[string]bool{}
		for _, id := range ids(rows) {
			seen[id] = true
		}
		for _, id := range want {
			if !seen[id] && !slices.Contains(deleted, id) {
				t.Fatalf("ORDER BY c.s%s with %v deleted between pages: %s missed", dir, deleted, id)
			}
		}
		for _, id := range deleted {
			delete(vals, id)
		}
	}
}

// TestFullTermsRebuiltOnOpen: a data directory whose index holds a long
// string's full term (format 7, before bounded terms) has its derived
// entries rebuilt when the engine opens it: the full term is gone, the
// bounded one is there, and the check finds nothing.
func TestFullTermsRebuiltOnOpen(t *testing.T) {
	dir := t.TempDir()
	st, e := engineInDir(t, dir, true)
	long := strings.Repeat("z", index.StringTermBytes+50)
	if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Create, PK: pkN(1), Body: fmt.Appendf(nil, `{"id":"a","pk":"p1","s":%q}`, long)}); err != nil {
		t.Fatal(err)
	}
	// What format 7 wrote: the string's whole term (no zero bytes to
	// escape), under the item's sequence number.
	c, _ := e.container("db", "k")
	full := append(append(index.AppendPath(nil, []string{"s"}), 0x05), long...)
	full = append(full, 0x00, 0x01)
	loc, err := locate(c, pkN(1), "a")
	if err != nil {
		t.Fatal(err)
	}
	rewrite(t, e, c, func(b replica.Batch) {
		b.Set(indexKey(full, 1), loc.key)
		b.Set(formatKey, []byte("7"))
	})
	if r, err := e.Check(t.Context()); err != nil || r.Rebuilding != 1 {
		t.Fatalf("check of the format-7 index: %v, %+v; want its rebuild pending (the test tests nothing)", err, r)
	}
	st.Close()
	st, e = engineInDir(t, dir, false)
	defer st.Close()
	if r, err := e.Check(t.Context()); err != nil || len(r.Problems) != 0 {
		t.Fatalf("check after reopening: %v, %+v", err, r.Problems)
	}
	q := Query{Text: "SELECT VALUE c.id FROM c WHERE c.s = @s", Params: map[string][]byte{"@s": fmt.Appendf(nil, "%q", long)}, EnableCrossPartition: true}
	if got := queryAll(t, e, Scope{}, q); len(got) != 1 || got[0] != `"a"` {
		t.Fatalf("equality on the long string after the rebuild: %v", got)
	}
}
