package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/plan"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/store"
)

// planEngine returns an engine with container db/k (pk /pk) on four
// physical partitions, holding 40 items {"id", "pk", "n"}.
func planEngine(t *testing.T) *Engine {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := openOn(t, t.Context(), st, Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"],"version":2}}`), Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		pk := fmt.Sprintf("p%d", i%13)
		_, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Create,
			PK:   document.PartitionKey{{Kind: document.String, String: pk}},
			Body: fmt.Appendf(nil, `{"id":"i%d","pk":%q,"n":%d}`, i, pk, (i*17)%41)})
		if err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// statusCode returns the HTTP status of err, a *status.Error (0 otherwise).
func statusCode(err error) int {
	if se, ok := errors.AsType[*status.Error](err); ok {
		return se.Code
	}
	return 0
}

type planJSON struct {
	Version     int             `json:"partitionedQueryExecutionInfoVersion"`
	QueryInfo   plan.QueryInfo  `json:"queryInfo"`
	QueryRanges []plan.EPKRange `json:"queryRanges"`
}

func TestQueryPlan(t *testing.T) {
	e := planEngine(t)
	c, err := e.container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Map().Len(); n != 4 {
		t.Fatalf("container has %d ranges, want 4", n)
	}

	// A pinned partition key: the EPK point of that key, nothing to merge.
	raw, err := e.QueryPlan(t.Context(), "db", "k", Query{Text: "SELECT * FROM c WHERE c.pk = @pk ORDER BY c.n",
		Params: map[string][]byte{"@pk": []byte(`"p3"`)}})
	if err != nil {
		t.Fatal(err)
	}
	var got planJSON
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	epk, _ := c.PK.Hash(document.PartitionKey{{Kind: document.String, String: "p3"}})
	if want := []plan.EPKRange{plan.PointRange(epk.String())}; fmt.Sprint(got.QueryRanges) != fmt.Sprint(want) {
		t.Errorf("QueryPlan(pinned) ranges = %v, want %v", got.QueryRanges, want)
	}
	if got.Version != 2 || got.QueryInfo.RewrittenQuery != "" || len(got.QueryInfo.OrderBy) != 0 {
		t.Errorf("QueryPlan(pinned) = %s, want version 2 and no merge steps", raw)
	}
	if strings.ToUpper(epk.String()) != epk.String() || len(epk.String()) != 32 {
		t.Errorf("pinned EPK %q, want 32 upper-case hex digits", epk)
	}

	// Fan-out: the full range, and per-range partial results that add up.
	raw, err = e.QueryPlan(t.Context(), "db", "k", Query{Text: "SELECT VALUE COUNT(1) FROM c WHERE c.n >= 10"})
	if err != nil {
		t.Fatal(err)
	}
	got = planJSON{}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if want := []plan.EPKRange{plan.FullRange()}; fmt.Sprint(got.QueryRanges) != fmt.Sprint(want) {
		t.Errorf("QueryPlan(fan-out) ranges = %v, want %v", got.QueryRanges, want)
	}
	total, nonEmpty := 0, 0
	for _, rg := range c.Map().Ranges() {
		p, err := e.QueryItems(t.Context(), "db", "k", Scope{RangeID: rg.ID}, Query{Text: got.QueryInfo.RewrittenQuery})
		if err != nil {
			t.Fatalf("range %s: %v", rg.ID, err)
		}
		var partial []struct{ Item int }
		if len(p.Items) != 1 || json.Unmarshal(p.Items[0], &partial) != nil || len(partial) != 1 {
			t.Fatalf("range %s: rewritten query %q gave %q, want one [{\"item\": n}]", rg.ID, got.QueryInfo.RewrittenQuery, p.Items)
		}
		total += partial[0].Item
		if partial[0].Item > 0 {
			nonEmpty++
		}
	}
	want := 0
	for i := range 40 {
		if (i*17)%41 >= 10 {
			want++
		}
	}
	if total != want || nonEmpty < 2 {
		t.Errorf("per-range counts add up to %d over %d non-empty ranges, want %d over several", total, nonEmpty, want)
	}

	// ORDER BY: every range returns its rows sorted, with orderByItems and payload.
	raw, err = e.QueryPlan(t.Context(), "db", "k", Query{Text: "SELECT c.id FROM c ORDER BY c.n DESC"})
	if err != nil {
		t.Fatal(err)
	}
	got = planJSON{}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, rg := range c.Map().Ranges() {
		text := strings.Replace(got.QueryInfo.RewrittenQuery, plan.OrderByFilterPlaceholder, "true", 1)
		p, err := e.QueryItems(t.Context(), "db", "k", Scope{RangeID: rg.ID}, Query{Text: text, MaxItems: -1})
		if err != nil {
			t.Fatalf("range %s: %v", rg.ID, err)
		}
		last := 1 << 30
		for _, it := range p.Items {
			var r struct {
				RID          string `json:"_rid"`
				OrderByItems []struct{ Item int }
				Payload      map[string]any
			}
			if err := json.Unmarshal(it, &r); err != nil || r.RID == "" || len(r.OrderByItems) != 1 || len(r.Payload) != 1 {
				t.Fatalf("range %s: row %s, want _rid, one orderByItem and a payload {id}", rg.ID, it)
			}
			if r.OrderByItems[0].Item > last {
				t.Errorf("range %s: %d after %d in a DESC order", rg.ID, r.OrderByItems[0].Item, last)
			}
			last = r.OrderByItems[0].Item
			rows++
		}
	}
	if rows != 40 {
		t.Errorf("ranges returned %d rows, want 40", rows)
	}
}

// TestQueryPlanKeyRanges: a query confined to a hierarchical key's prefix,
// or to a key's IN values, is planned over those keys' EPK ranges, so the
// SDK queries only the partitions that own them (a hierarchical-key hunt:
// every such plan had the whole EPK space, and @azure/cosmos sent a
// prefix's ORDER BY to all 8 partitions of a split container).
func TestQueryPlanKeyRanges(t *testing.T) {
	e := planEngine(t)
	if _, err := e.CreateContainer("db", []byte(`{"id":"h","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`), Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	str := func(s string) document.PKValue { return document.PKValue{Kind: document.String, String: s} }
	plans := func(coll, text string) []plan.EPKRange {
		t.Helper()
		raw, err := e.QueryPlan(t.Context(), "db", coll, Query{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		var got planJSON
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if coll == "h" && got.QueryInfo.RewrittenQuery == "" && len(got.QueryInfo.OrderBy) == 0 {
			t.Errorf("%s: no merge steps: %s", text, raw)
		}
		return got.QueryRanges
	}
	h, _ := e.container("db", "h")
	lo, hi, err := h.PK.Span(document.PartitionKey{str("t7")})
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.EPKRange{{Min: lo.String(), Max: hi.String(), IsMinInclusive: true}}
	if got := plans("h", "SELECT * FROM c WHERE c.t = 't7' ORDER BY c.n"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("prefix: ranges %v, want %v", got, want)
	}
	k, _ := e.container("db", "k")
	var points []plan.EPKRange
	for _, v := range []string{"p1", "p2"} {
		epk, _ := k.PK.Hash(document.PartitionKey{str(v)})
		points = append(points, plan.PointRange(epk.String()))
	}
	if points[1].Min < points[0].Min {
		points[0], points[1] = points[1], points[0]
	}
	if got := plans("k", "SELECT * FROM c WHERE c.pk IN ('p2', 'p1', 'p2') ORDER BY c.n"); fmt.Sprint(got) != fmt.Sprint(points) {
		t.Errorf("IN: ranges %v, want %v", got, points)
	}
	if got := plans("h", "SELECT * FROM c WHERE c.u = 'x' ORDER BY c.n"); fmt.Sprint(got) != fmt.Sprint([]plan.EPKRange{plan.FullRange()}) {
		t.Errorf("a lower level alone: ranges %v, want the whole space", got)
	}
}

func TestQueryPlanErrors(t *testing.T) {
	e := planEngine(t)
	tests := []struct {
		db, coll, query string
		code            int
		msg             string
	}{
		{"db", "nope", "SELECT * FROM c", http.StatusNotFound, ""},
		{"db", "k", "SELEC * FROM c", http.StatusBadRequest, "Syntax error"},
		{"db", "k", "SELECT * FROM c WHERE NOSUCHFN(c.x)", http.StatusBadRequest, "NOSUCHFN"},
		{"db", "k", "SELECT c.pk, ABS(AVG(c.n)) AS a FROM c GROUP BY c.pk", http.StatusBadRequest, "ABS(AVG(c.n))"},
		{"db", "k", "SELECT VALUE COUNT(1) FROM c GROUP BY c.pk ORDER BY c.pk", http.StatusBadRequest, "not supported"},
		{"db", "k", "SELECT TOP @t * FROM c", http.StatusBadRequest, "@t"},
	}
	for _, tt := range tests {
		_, err := e.QueryPlan(t.Context(), tt.db, tt.coll, Query{Text: tt.query})
		if statusCode(err) != tt.code || !strings.Contains(fmt.Sprint(err), tt.msg) {
			t.Errorf("QueryPlan(%s/%s, %q) = %v, want %d mentioning %q", tt.db, tt.coll, tt.query, err, tt.code, tt.msg)
		}
	}
}
