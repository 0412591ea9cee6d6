package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/plan"
)

// pagedItems returns an engine with container "paged" for TestQueryPageCost: 6,000 items over 4
// physical partitions in 100 logical partitions, item i
// {"id":"i<i>","pk":"p<i%100>","n":i%10,"m":i}: c.n has 10 values, c.m is
// unique. Container "scan" holds the same items and indexes nothing.
func pagedItems(t *testing.T) *Engine {
	t.Helper()
	e := testEngine(t)
	ctx := t.Context()
	for _, body := range []string{
		`{"id":"paged","partitionKey":{"paths":["/pk"]}}`,
		`{"id":"scan","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"none","automatic":false}}`,
	} {
		if _, err := e.CreateContainer("db", []byte(body), Throughput{Manual: 24000}); err != nil {
			t.Fatal(err)
		}
	}
	for _, coll := range []string{"paged", "scan"} {
		for lp := range 100 {
			pk := fmt.Sprintf("p%d", lp)
			var ops []BatchOp
			for i := lp; i < 6000; i += 100 {
				ops = append(ops, BatchOp{Type: "Create", Body: fmt.Appendf(nil, `{"id":"i%d","pk":%q,"n":%d,"m":%d}`, i, pk, i%10, i)})
			}
			resp, err := e.ExecuteBatch(ctx, "db", coll, document.PartitionKey{{Kind: document.String, String: pk}}, ops)
			if err != nil || !resp.OK {
				t.Fatalf("batch %s/%s: %v %+v", coll, pk, err, resp)
			}
		}
	}
	return e
}

// TestQueryPageCost drains index lookups page by page and checks that each
// page reads index and order entries in proportion to the page, not to the
// result (issue #15): a merged range (few terms) and a range read as a
// filtered scan (many terms, half the items) read at most a few entries per
// row on every page, where gathering read the whole result's entries on
// every page. A range with many terms and few entries is gathered. Every
// plan returns what a container without an index returns, in the same
// order, paged or not.
func TestQueryPageCost(t *testing.T) {
	e := pagedItems(t)
	const page = 20
	for _, tc := range []struct {
		text   string
		access plan.Access
		// perPage bounds the entries each page after the first reads.
		perPage int
	}{
		// 5 terms × 4 keyspaces: each page seeks to every term once.
		{"SELECT VALUE c.id FROM c WHERE c.n >= 5", plan.IndexMerge, page + 4*5*2 + 8},
		{"SELECT VALUE c.id FROM c WHERE c.n IN (1, 3, 7)", plan.IndexMerge, page + 4*3 + 8},
		// About 1,250 terms and entries in each keyspace of 1,500 items,
		// past the gather limit for pages of 20 (551): a scan reads 6
		// order entries for 5 rows.
		{"SELECT VALUE c.id FROM c WHERE c.m >= 1000", plan.OrderScan, 2*page + 8},
		// About 250 terms and entries per keyspace: gathered for every
		// page.
		{"SELECT VALUE c.id FROM c WHERE c.m >= 5000", plan.IndexGather, -1},
		{"SELECT VALUE c.id FROM c WHERE c.n = 4", plan.IndexPoint, page + 8},
	} {
		t.Run(tc.text, func(t *testing.T) {
			q := Query{Text: tc.text, EnableCrossPartition: true, MaxItems: page}
			want := queryAllIn(t, e, "scan", Query{Text: tc.text, EnableCrossPartition: true, MaxItems: -1})
			var got []string
			for n := 0; ; n++ {
				p, err := e.QueryItems(t.Context(), "db", "paged", Scope{}, q)
				if err != nil {
					t.Fatal(err)
				}
				if p.Metrics.Plan.Access != tc.access {
					t.Fatalf("page %d ran\n%s\nwant access %s", n, p.Metrics.Plan, tc.access)
				}
				if n > 0 && tc.perPage >= 0 && p.Metrics.Entries > tc.perPage {
					t.Errorf("page %d read %d entries for %d rows, want at most %d", n, p.Metrics.Entries, len(p.Items), tc.perPage)
				}
				for _, it := range p.Items {
					got = append(got, string(it))
				}
				if q.Continuation = p.Continuation; q.Continuation == "" {
					break
				}
			}
			if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
				t.Errorf("paged results differ from an unindexed container's (-scan +indexed):\n%s", diff)
			}
			whole := queryAllIn(t, e, "paged", Query{Text: tc.text, EnableCrossPartition: true, MaxItems: -1})
			if diff := cmp.Diff(want, whole, cmpEmpty); diff != "" {
				t.Errorf("results differ from an unindexed container's (-scan +indexed):\n%s", diff)
			}
		})
	}
}

// TestQueryPlanKeptAcrossPages: the statistics a first page measured ride
// in its continuation, so later pages run the same plan without measuring
// again, even after the data changed so that a new measure would choose
// otherwise.
func TestQueryPlanKeptAcrossPages(t *testing.T) {
	e := pagedItems(t)
	q := Query{Text: "SELECT * FROM c WHERE c.m >= 1000", EnableCrossPartition: true, MaxItems: 10}
	p, err := e.QueryItems(t.Context(), "db", "paged", Scope{}, q)
	if err != nil {
		t.Fatal(err)
	}
	first := p.Metrics.Plan
	if first.Access != plan.OrderScan || first.Stats == nil {
		t.Fatalf("first page ran\n%s\nwant an order scan chosen from statistics", first)
	}
	q.Continuation = p.Continuation
	p, err = e.QueryItems(t.Context(), "db", "paged", Scope{}, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Metrics.Plan; got.String() != first.String() || p.Metrics.Entries > 2*10+8 {
		t.Errorf("second page ran\n%s\n(%d entries), want the first page's plan\n%s", got, p.Metrics.Entries, first)
	}
}

// TestExplainQuery: Explain prints the plan a page would run, with the
// statistics it measured, and runs nothing.
func TestExplainQuery(t *testing.T) {
	e := pagedItems(t)
	for _, tc := range []struct {
		text, want string
	}{
		{"SELECT * FROM c WHERE c.n >= 5", "access: index-merge on /n"},
		{"SELECT * FROM c WHERE c.m >= 1000", "access: order-scan"},
		{"SELECT * FROM c WHERE c.pk = 'p1'", "scope: one logical partition"},
	} {
		p, err := e.ExplainQuery(context.Background(), "db", "paged", Scope{}, Query{Text: tc.text, EnableCrossPartition: true})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.String(), tc.want) {
			t.Errorf("Explain(%q) =\n%s\nwant %q in it", tc.text, p, tc.want)
		}
	}
	if _, err := e.ExplainQuery(context.Background(), "db", "paged", Scope{}, Query{Text: "SELECT * FROM c WHERE"}); err == nil {
		t.Errorf("Explain of a syntax error succeeded")
	}
}

// TestQueryMergeBounded: a continuation whose statistics say a range has
// few terms when it has many (stale or forged) makes the merge give way to
// an order scan, with the same rows.
func TestQueryMergeBounded(t *testing.T) {
	e := pagedItems(t)
	// Pages of 250: each page opens the merge again (about 24 pages here).
	q := Query{Text: "SELECT VALUE c.id FROM c WHERE c.m >= 10", EnableCrossPartition: true, MaxItems: 250}
	want := queryAllIn(t, e, "scan", q)
	p, err := e.QueryItems(t.Context(), "db", "paged", Scope{}, q)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := e.container("db", "paged")
	tok, err := Query{Text: q.Text, Continuation: p.Continuation}.token(c.Internal, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok.Stats = &plan.Stats{Terms: 1}
	got := []string{}
	for _, it := range p.Items {
		got = append(got, string(it))
	}
	q.Continuation = tok.encode()
	for q.Continuation != "" {
		p, err := e.QueryItems(t.Context(), "db", "paged", Scope{}, q)
		if err != nil {
			t.Fatal(err)
		}
		if p.Metrics.Plan.Access != plan.IndexMerge {
			t.Fatalf("ran\n%s\nwant the merge the forged statistics choose", p.Metrics.Plan)
		}
		for _, it := range p.Items {
			got = append(got, string(it))
		}
		q.Continuation = p.Continuation
	}
	if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
		t.Errorf("results differ from an unindexed container's (-scan +indexed):\n%s", diff)
	}
}

// TestOrderByResumeRefiltered resumes a range's ORDER BY query as the SDKs
// do across partitions (@azure/cosmos with enableQueryControl, the .NET
// SDK): the token of the page that held the last row the client emitted,
// sent with the rewritten query whose filter placeholder now holds a resume
// filter (c.m >= v) rather than true. The position is one in the ORDER BY
// order, so the rows are those of the original query from that page on
// that pass the resume filter, in index order, sorted, ascending and
// descending. A token whose position counts rows (a query evaluated whole)
// or whose query differs in more than its filter is refused.
func TestOrderByResumeRefiltered(t *testing.T) {
	e := pagedItems(t)
	ranges, _, _, err := e.PKRanges("db", "paged")
	if err != nil {
		t.Fatal(err)
	}
	user := "(c.n > 2) AND " // the query's own filter
	text := func(dir, filter string) string {
		return fmt.Sprintf(`SELECT c._rid, [{"item": c.m}] AS orderByItems, c.id AS payload FROM c WHERE %s(%s) ORDER BY c.m %s`, user, filter, dir)
	}
	type row struct {
		Payload string `json:"payload"`
		Items   []struct {
			Item float64 `json:"item"`
		} `json:"orderByItems"`
	}
	decode := func(items [][]byte) []row {
		out := make([]row, len(items))
		for i, it := range items {
			if err := json.Unmarshal(it, &out[i]); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	for _, run := range []struct{ coll, user, access string }{
		// c.n > 2 finds most of the range, many beside a page: read in
		// c.m's order (weighed, docs/query-plan.md); no index: scanned and
		// sorted.
		{"paged", "(c.n > 2) AND ", "index-ordered"}, {"paged", "", "index-ordered"},
		{"scan", "(c.n > 2) AND ", "order-scan"},
	} {
		coll := run.coll
		user = run.user
		for _, dir := range []string{"ASC", "DESC"} {
			scope := Scope{RangeID: ranges[1].ID}
			q := Query{Text: text(dir, "true"), MaxItems: -1}
			all, err := e.QueryItems(t.Context(), "db", coll, scope, q)
			if err != nil {
				t.Fatal(err)
			}
			full := decode(all.Items)
			q.MaxItems = 7
			p1, err := e.QueryItems(t.Context(), "db", coll, scope, q)
			if err != nil {
				t.Fatal(err)
			}
			if a := p1.Metrics.Plan.Access.String(); a != run.access {
				t.Errorf("%s %q: read by %s, want %s", coll, q.Text, a, run.access)
			}
			q.Continuation = p1.Continuation
			p2, err := e.QueryItems(t.Context(), "db", coll, scope, q)
			if err != nil {
				t.Fatal(err)
			}
			want := full[len(p1.Items)+2:] // the client emitted page 2's first three rows
			v := decode(p2.Items)[2].Items[0].Item
			op := map[string]string{"ASC": ">=", "DESC": "<="}[dir]
			rq := Query{Text: text(dir, fmt.Sprintf("(c.m %s %v)", op, v)), MaxItems: 100, Continuation: p1.Continuation}
			var got []row
			for pages := 0; ; pages++ {
				p, err := e.QueryItems(t.Context(), "db", coll, scope, rq)
				if err != nil {
					t.Fatalf("%s %q: resumed with a resume filter: %v", coll, rq.Text, err)
				}
				got = append(got, decode(p.Items)...)
				if p.Continuation == "" || pages > 1000 {
					break
				}
				rq.Continuation = p.Continuation
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %q: resumed rows differ (-want +got):\n%s", coll, rq.Text, diff)
			}
		}
	}

	// Refused: a token of a query evaluated whole (a row offset), and one
	// of a query that differs in more than its filter.
	user = ""
	scope := Scope{RangeID: ranges[1].ID}
	whole := `SELECT DISTINCT VALUE c.n FROM c WHERE %s ORDER BY c.n`
	p, err := e.QueryItems(t.Context(), "db", "paged", scope, Query{Text: fmt.Sprintf(whole, "true"), MaxItems: 2})
	if err != nil || p.Continuation == "" {
		t.Fatalf("whole query: %v, continuation %q", err, p.Continuation)
	}
	if _, err := e.QueryItems(t.Context(), "db", "paged", scope, Query{Text: fmt.Sprintf(whole, "c.n >= 1"), MaxItems: 2, Continuation: p.Continuation}); code(err) != 400 {
		t.Errorf("a row offset resumed with another filter: err %v, want 400", err)
	}
	p, err = e.QueryItems(t.Context(), "db", "paged", scope, Query{Text: text("ASC", "true"), MaxItems: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Metrics.Plan.String(); !strings.Contains(got, "scope: one partition key range") {
		t.Errorf("a query of one range explains as\n%s\nwant scope: one partition key range", got)
	}
	for _, other := range []string{
		strings.Replace(text("ASC", "true"), "c.id AS payload", "c.n AS payload", 1),
		strings.Replace(text("ASC", "true"), "ORDER BY c.m ASC", "ORDER BY c.n ASC", 1),
		`SELECT VALUE c.id FROM c WHERE c.n > 3`,
	} {
		if _, err := e.QueryItems(t.Context(), "db", "paged", scope, Query{Text: other, MaxItems: 2, Continuation: p.Continuation}); code(err) != 400 {
			t.Errorf("%s resumed another query's token: err %v, want 400", other, err)
		}
	}
}
