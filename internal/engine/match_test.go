package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/index"
	"github.com/partitadb/partita/internal/query/plan"
)

// TestMatchLookups: CONTAINS, ENDSWITH and the case-insensitive STARTSWITH
// and STRINGEQUALS of a path and a string (plan "match" lookups) read the
// path's string entries and load only the documents whose terms match
// (and those of bounded terms, whose strings' tails the term lacks), and
// give what a container that indexes nothing gives, drained whole and in
// small pages; a test most strings pass is scanned instead.
func TestMatchLookups(t *testing.T) {
	e, write := twinEngine(t)
	const items = 2000
	long := strings.Repeat("x", index.StringTermBytes)
	for i := range items {
		var s string
		switch {
		case i%50 == 7:
			// Long strings, bounded terms: the test is in the tail.
			s = long + fmt.Sprintf("tail%03dEND", i)
		case i%100 == 3:
			s = fmt.Sprintf("MiXeD%dCase", i) // case-insensitive matches
		case i%100 == 4:
			s = "İstanbul ẞ straße" // lowercasing changes byte lengths
		case i%61 == 5:
			s = fmt.Sprintf("w%d needle w", i)
		default:
			s = fmt.Sprintf("w%04d", i)
		}
		sv := fmt.Sprintf("%q", s)
		if i%97 == 11 {
			sv = "42" // not a string
		}
		write(document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%16)}},
			fmt.Sprintf(`{"id":"i%04d","pk":"p%d","s":%s,"n":%d}`, i, i%16, sv, i))
	}
	for _, tc := range []struct {
		text string
		// extra: documents loaded beyond the rows (-1: scanned, unchecked).
		extra int
	}{
		{`SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, "needle")`, 40},
		{`SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, "NEEDLE", true)`, 40},
		{`SELECT VALUE c.id FROM c WHERE ENDSWITH(c.s, "END")`, 0},
		{`SELECT VALUE c.id FROM c WHERE ENDSWITH(c.s, "case", true)`, 40},
		{`SELECT VALUE c.id FROM c WHERE STARTSWITH(c.s, "mixed", true)`, 40},
		{`SELECT VALUE c.id FROM c WHERE STRINGEQUALS(c.s, "İSTANBUL ẞ STRASSE", true)`, 40},
		{`SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, "i̇stanbul", true)`, 40},
		{`SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, "tail0", false)`, 40},
		{`SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, "needle") ORDER BY c.s DESC`, 40},
		{`SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, "needle") ORDER BY c.n`, 40},
		{`SELECT VALUE COUNT(1) FROM c WHERE CONTAINS(c.s, "needle")`, 40},
		{`SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, "w")`, -1},
		{`SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, "")`, -1},
	} {
		q := Query{Text: tc.text, EnableCrossPartition: true, MaxItems: 100}
		want := queryAllIn(t, e, "noix", q)
		got, loaded, plans := drainPlans(t, e, "ix", q)
		gathered := false
		for _, pl := range plans {
			gathered = gathered || pl.Lookup != nil && pl.Lookup.Kind == "match" && pl.Access != plan.OrderScan
		}
		if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
			t.Errorf("%s: differs from a scan (-scan +indexed):\n%s", tc.text, diff)
		}
		if tc.extra >= 0 {
			rows := len(want)
			if strings.Contains(tc.text, "COUNT") && len(want) == 1 {
				// Not blind (a match is not exact): it loads what it counts.
				if _, err := fmt.Sscan(want[0], &rows); err != nil {
					t.Fatal(err)
				}
			}
			if !gathered {
				t.Errorf("%s: not read through the match lookup", tc.text)
			}
			// The long strings' bounded terms are candidates whatever the
			// test: each is loaded.
			if bounded := items / 50; loaded > rows+bounded+tc.extra {
				t.Errorf("%s: loaded %d documents for %d rows (at most %d more)", tc.text, loaded, rows, bounded+tc.extra)
			}
		} else if gathered {
			t.Errorf("%s: most strings pass, yet read through the match lookup", tc.text)
		}
		for _, size := range []int{3, 7} {
			q.MaxItems = size
			if got := queryAllIn(t, e, "ix", q); !cmp.Equal(want, got, cmpEmpty) {
				t.Errorf("%s in pages of %d: %d rows, want %d (%.80v, want %.80v)", tc.text, size, len(got), len(want), got, want)
			}
		}
	}
}

// TestGatherKept: the entries a gathered lookup reads (here a match's:
// every string of the path) are kept for the query's next pages while the
// keyspaces are unchanged (queryMemo.gathered), as are those the first
// page counts to choose its plan (measure), so a page reads none of them
// twice; a write in between changes its keyspace's version, and
// the next page gathers that keyspace again and finds the new item.
func TestGatherKept(t *testing.T) {
	e, write := twinEngine(t)
	pkOf := func(i int) document.PartitionKey {
		return document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%16)}}
	}
	body := func(i int) string {
		s := fmt.Sprintf("w%04d", i)
		if i%20 == 0 {
			s += " needle"
		}
		return fmt.Sprintf(`{"id":"i%04d","pk":"p%d","s":%q}`, i, i%16, s)
	}
	for i := range 2000 {
		write(pkOf(i), body(i))
	}
	q := Query{Text: `SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, "needle")`, EnableCrossPartition: true, MaxItems: 10}
	var got []string
	var entries []int
	for page := 0; ; page++ {
		if page == 3 {
			write(pkOf(2000), body(2000)) // a needle after every other
		}
		p, err := e.QueryItems(t.Context(), "db", "ix", Scope{}, q)
		if err != nil {
			t.Fatal(err)
		}
		if page == 0 && (p.Metrics.Plan.Lookup == nil || p.Metrics.Plan.Lookup.Kind != "match" || p.Metrics.Plan.Access != plan.IndexGather) {
			t.Fatalf("plan: %s", p.Metrics.Plan)
		}
		for _, it := range p.Items {
			got = append(got, string(it))
		}
		entries = append(entries, p.Metrics.Entries)
		if q.Continuation = p.Continuation; q.Continuation == "" {
			break
		}
	}
	want := queryAllIn(t, e, "noix", Query{Text: q.Text, EnableCrossPartition: true, MaxItems: -1})
	if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
		t.Errorf("differs from a scan (-scan +indexed):\n%s", diff)
	}
	// The first page counts every string (2,000), and what it counts is
	// what it gathers (not read twice); the second and third read none;
	// the fourth gathers the keyspace the write changed; the next ones
	// none again.
	if len(entries) < 6 || entries[0] < 2000 || entries[0] > 2000+32 || entries[1] != 0 || entries[2] != 0 || entries[3] == 0 || entries[4] != 0 {
		t.Errorf("index entries read per page: %v, want the strings once on the first, none on the next two, some after the write, then none", entries)
	}
}

// TestMatchIntersected: a match lookup beside another lookup is intersected
// with it, its strings gathered as the lead's documents pay for them
// (intersectStream.payMatches), so that a query whose lead finds many
// documents and whose match few loads about the rows, not every document
// of the lead's (it loaded them all: the match was not used beside another
// lookup). A lead that finds few documents does not read the path's every
// string for them. The memo off (--query-memo-mb 0), a part's gather goes
// on from step to step all the same (it started again at every step).
func TestMatchIntersected(t *testing.T) {
	for _, memo := range []int{0, -1} {
		t.Run(fmt.Sprintf("memo=%d", memo), func(t *testing.T) {
			e, write := twinEngineWith(t, Config{GatewayQueryFull: true, QueryMemoBytes: memo})
			testMatchIntersected(t, e, write, memo == 0)
		})
	}
}

func testMatchIntersected(t *testing.T, e *Engine, write func(document.PartitionKey, string), memo bool) {
	const items = 2000
	withS := 0
	for i := range items {
		t := "a"
		if i%4 == 3 {
			t = "b"
		}
		s := ""
		if i%4 == 1 {
			withS++
			s = fmt.Sprintf(`,"s":"w%04d"`, i)
			if i%61 == 0 {
				s = fmt.Sprintf(`,"s":"w%04d needle w"`, i)
			}
		}
		write(document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%16)}},
			fmt.Sprintf(`{"id":"i%04d","pk":"p%d","t":%q,"n":%d%s}`, i, i%16, t, i, s))
	}
	for _, tc := range []struct {
		text string
		// lead: the documents the lead alone finds.
		lead        int
		unselective bool
	}{
		{`SELECT VALUE c.id FROM c WHERE c.t = "a" AND CONTAINS(c.s, "needle")`, items * 3 / 4, false},
		{`SELECT VALUE c.id FROM c WHERE c.t = "a" AND ENDSWITH(c.s, "NEEDLE W", true)`, items * 3 / 4, false},
		{`SELECT VALUE c.id FROM c WHERE c.n >= 100 AND CONTAINS(c.s, "needle")`, items - 100, false},
		{`SELECT VALUE c.id FROM c WHERE c.n >= 1900 AND CONTAINS(c.s, "w")`, 100, true},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.t = "a" AND CONTAINS(c.s, "needle")`, items * 3 / 4, false},
	} {
		for _, page := range []int{100, 7} {
			q := Query{Text: tc.text, EnableCrossPartition: true, MaxItems: page}
			want := queryAllIn(t, e, "noix", q)
			got, loaded, plans := drainPlans(t, e, "ix", q)
			if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
				t.Errorf("%s in pages of %d: differs from a scan (-scan +indexed):\n%s", tc.text, page, diff)
			}
			// Intersected, or (a range beside it, both counted) leading.
			pl := plans[len(plans)-1]
			intersected := pl.Access == plan.IndexIntersect && slices.ContainsFunc(pl.Intersect, func(s *plan.IndexScan) bool { return s.Kind == "match" })
			if led := pl.Access == plan.IndexGather && pl.Lookup.Kind == "match"; !intersected && !led {
				t.Errorf("%s: plan %s, want the match intersected or leading", tc.text, pl)
			}
			rows := len(want)
			if strings.Contains(tc.text, "COUNT") {
				if _, err := fmt.Sscan(want[0], &rows); err != nil {
					t.Fatal(err)
				}
			}
			// Before a part's gather is done the lead's documents are
			// loaded: one per LoadCost strings of the part, and a step more
			// (in pages of 7, whose pages stop before their credit makes a
			// step, up to a step's entries each); each page may load its
			// last row's document again.
			rs, _, _, err := e.PKRanges("db", "ix")
			if err != nil {
				t.Fatal(err)
			}
			ranges := len(rs)
			bound := rows + withS/plan.LoadCost + ranges*matchStep + 2*len(plans)
			// An unselective match (every string passes) saves loading
			// the lead's documents only once gathered whole: by the
			// planner's measure of it, unless the memo is off.
			far := loaded >= tc.lead/2 && (memo || !tc.unselective)
			if loaded > bound || far {
				t.Errorf("%s in pages of %d: loaded %d documents for %d rows (at most %d; the lead alone finds %d)", tc.text, page, loaded, rows, bound, tc.lead)
			}
		}
	}
	// A range that finds few documents beside a match: the match is
	// counted no further than loading the range's documents costs (it read
	// every string of the path to be counted: 6,004 entries for 6 before).
	q := Query{Text: `SELECT VALUE c.id FROM c WHERE c.n >= 1998 AND CONTAINS(c.s, "w")`, EnableCrossPartition: true, MaxItems: 100}
	want := queryAllIn(t, e, "noix", q)
	var read, rows int
	for tok := ""; ; {
		q.Continuation = tok
		p, err := e.QueryItems(t.Context(), "db", "ix", Scope{}, q)
		if err != nil {
			t.Fatal(err)
		}
		read, rows = read+p.Metrics.Entries, rows+len(p.Items)
		if tok = p.Continuation; tok == "" {
			break
		}
	}
	if len(want) != 0 || rows != 0 || read > 2*(matchStep+plan.LoadCost*2) {
		t.Errorf("%s: %d rows (%d scanned), %d index entries read; want none, and the match counted no further than %d entries", q.Text, rows, len(want), read, matchStep+plan.LoadCost*2)
	}
	// A lead that finds few documents: the match's gather never runs, and
	// it costs nothing.
	q = Query{Text: `SELECT VALUE c.id FROM c WHERE c.id = "i0061" AND CONTAINS(c.s, "needle")`, EnableCrossPartition: true, MaxItems: 100}
	p, err := e.QueryItems(t.Context(), "db", "ix", Scope{}, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 || p.Metrics.Entries > 8 {
		t.Errorf("%s: %d rows, %d index entries read; want 1 row and the id's entry (no string gathered)", q.Text, len(p.Items), p.Metrics.Entries)
	}
}
