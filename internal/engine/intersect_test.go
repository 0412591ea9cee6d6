package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/partitadb/partita/internal/document"
)

// TestIntersectRanges: an equality intersected with a range or a prefix on
// another path (plan.IndexIntersect), or, with no equality, the range of
// fewest entries intersected with the others, loads about the documents
// all find, not every one the first lookup finds, and gives what a container that
// indexes nothing gives, drained whole and in small pages; a range whose
// terms a keyspace holds too many of to merge is left out (the equality's
// documents loaded and filtered), and a blind count stays right either way.
func TestIntersectRanges(t *testing.T) {
	ctx := context.Background()
	e, write := twinEngine(t)
	const items = 2000
	for i := range items {
		// cat: 4 values; m: 50 terms; n: one term per item (too many to
		// merge); k: a term per two items; s: 20 strings under "s"; arr:
		// elements 0..5.
		write(document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%16)}},
			fmt.Sprintf(`{"id":"i%04d","pk":"p%d","cat":"%c","m":%d,"n":%d,"k":%d,"s":"s%02d","rare":%v,"arr":[%d,%d]}`,
				i, i%16, 'a'+i%4, i%50, i, i*13%1000, i%20, i%97 == 0, i%6, (i+1)%6))
	}
	for _, tc := range []struct {
		text string
		// extra: documents the intersection may load beyond its rows (the
		// equality's first few per part before the range opens; -1:
		// unchecked, the range left out).
		extra int
	}{
		{`SELECT VALUE c.id FROM c WHERE c.cat = "a" AND c.m BETWEEN 10 AND 12`, 40},
		{`SELECT VALUE c.id FROM c WHERE c.m >= 10 AND c.cat = "a" AND c.m <= 12`, 40},
		{`SELECT VALUE c.id FROM c WHERE c.cat = "a" AND c.n BETWEEN 100 AND 140`, 40},
		{`SELECT VALUE c.id FROM c WHERE c.cat IN ("a", "c") AND c.m < 3`, 40},
		{`SELECT VALUE c.id FROM c WHERE c.rare = true AND c.m > 10`, 40},
		{`SELECT VALUE c.id FROM c WHERE c.cat = "b" AND STARTSWITH(c.s, "s1")`, 40},
		{`SELECT VALUE c.id FROM c WHERE c.cat = "b" AND c.m = 7 AND c.s > "s15"`, 40},
		{`SELECT VALUE c.id FROM c WHERE c.cat = "a" AND c.m < 49 AND c.n < 1500`, -1},
		{`SELECT VALUE c.id FROM c WHERE c.cat = "a" AND c.n > 100`, -1},
		{`SELECT c.id, t FROM c JOIN t IN c.arr WHERE c.cat = "d" AND t > 3`, 40},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.cat = "a" AND c.m BETWEEN 10 AND 12`, 40},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.cat = "a" AND c.n > 100`, -1},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.cat = "a" AND c.m >= 0`, 40},
		// No equality: the range of fewest entries leads, merged (m, 10
		// terms) or gathered (n, k: a term per item), the others gathered.
		{`SELECT VALUE c.id FROM c WHERE c.m < 10 AND c.n < 200`, 40},
		{`SELECT VALUE c.id FROM c WHERE c.n < 500 AND c.k < 100`, 40},
		{`SELECT VALUE c.id FROM c WHERE c.k >= 900 AND c.m BETWEEN 3 AND 5 AND STARTSWITH(c.s, "s1")`, 40},
		{`SELECT VALUE c.id FROM c WHERE c.m > 47 AND c.n >= 1000`, 40},
		{`SELECT c.id, t FROM c JOIN t IN c.arr WHERE c.n < 300 AND c.k < 500 AND t > 3`, 40},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n < 500 AND c.k < 100`, 40},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n >= 0 AND c.k >= 0`, -1},
	} {
		q := Query{Text: tc.text, EnableCrossPartition: true, MaxItems: -1}
		want := queryAllIn(t, e, "noix", q)
		got, loaded, plans := drainPlans(t, e, "ix", q)
		intersected, blind := false, false
		for _, p := range plans {
			intersected = intersected || len(p.Intersect) > 0
			blind = blind || p.Blind
		}
		if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
			t.Errorf("%s: differs from a scan (-scan +indexed):\n%s", tc.text, diff)
		}
		if !intersected {
			t.Errorf("%s: not intersected", tc.text)
		}
		rows := len(want)
		if blind {
			rows = 0 // a count's one row; its documents are not loaded
		}
		if tc.extra >= 0 && loaded > rows+tc.extra {
			t.Errorf("%s: loaded %d documents for %d rows (at most %d more)", tc.text, loaded, len(want), tc.extra)
		}
		for _, size := range []int{1, 3, 7} {
			q.MaxItems = size
			if got := queryAllIn(t, e, "ix", q); !cmp.Equal(want, got, cmpEmpty) {
				t.Errorf("%s in pages of %d: %d rows, want %d (%.80v, want %.80v)", tc.text, size, len(got), len(want), got, want)
			}
		}
	}
	// A range left out of a part for its many terms is not intersected on
	// the next pages (queryToken.Wide): they would find its terms again.
	wq := Query{Text: `SELECT VALUE c.id FROM c WHERE c.cat = "a" AND c.n > 100`, EnableCrossPartition: true, MaxItems: 20}
	var plans []int
	for page := 0; page < 3; page++ {
		p, err := e.QueryItems(ctx, "db", "ix", Scope{}, wq)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, len(p.Metrics.Plan.Intersect))
		if wq.Continuation = p.Continuation; wq.Continuation == "" {
			break
		}
	}
	if !slices.Equal(plans, []int{1, 0, 0}) {
		t.Errorf("a range of too many terms: intersected lookups per page %v, want [1 0 0]", plans)
	}
	// Ranges alone: the one of fewest entries leads (k < 100: 200 items,
	// n < 500: 500), on every page.
	lq := Query{Text: `SELECT VALUE c.id FROM c WHERE c.n < 500 AND c.k < 100`, EnableCrossPartition: true, MaxItems: 10}
	for page := 0; page < 3; page++ {
		p, err := e.QueryItems(ctx, "db", "ix", Scope{}, lq)
		if err != nil {
			t.Fatal(err)
		}
		if pl := p.Metrics.Plan; pl.Lookup == nil || pl.Lookup.Target() != "/k" || len(pl.Intersect) != 1 {
			t.Errorf("ranges alone, page %d: %s, want the lead on /k intersected with /n", page, pl)
		}
		if lq.Continuation = p.Continuation; lq.Continuation == "" {
			break
		}
	}
	// A page that ends inside a part resumes the intersection where the
	// range is open already: no row twice, none missed.
	q := Query{Text: `SELECT VALUE c.id FROM c WHERE c.cat = "a" AND c.m BETWEEN 0 AND 30`, EnableCrossPartition: true, MaxItems: 5}
	got := queryAllIn(t, e, "ix", q)
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(got) || len(got) != len(queryAllIn(t, e, "noix", q)) {
		t.Errorf("paged intersection: %d rows (%d distinct)", len(got), len(slices.Compact(sorted)))
	}
}
