package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/status"
)

// withComputedProps returns container db/k's definition with computed
// properties props (a JSON array).
func withComputedProps(t *testing.T, e *Engine, props string) []byte {
	t.Helper()
	res, err := e.ReadContainer("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	var def map[string]any
	if err := json.Unmarshal(res.Body, &def); err != nil {
		t.Fatal(err)
	}
	def["computedProperties"] = json.RawMessage(props)
	body, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestComputedProperties: a container's computed properties are read by
// queries as if they were top-level properties of each item, in every
// clause (and in a FROM over a path in the item), while SELECT * leaves
// them out; definitions Cosmos DB refuses get 400 (and one that would hide
// the partition key, or read another computed property), and leave the
// container's as it was. (A property hiding a stored one of its name:
// TestComputedPlanAsWritten.) It read the stored properties (none, so nothing
// matched) before.
func TestComputedProperties(t *testing.T) {
	e := testEngine(t)
	queryFixture(t, e, 40)
	props := `[
		{"name": "cp_up", "query": "SELECT VALUE UPPER(c.id) FROM c"},
		{"name": "cp_half", "query": "SELECT VALUE r.n / 2 FROM root r"},
		{"name": "cp_tags", "query": "SELECT VALUE ARRAY_CONCAT(c.tags, ['x']) FROM c"}
	]`
	if _, err := e.ReplaceContainer("db", "k", withComputedProps(t, e, props), ""); err != nil {
		t.Fatal(err)
	}
	cross := Scope{}
	p1 := Scope{PK: pkN(1)}
	tests := []struct {
		scope Scope
		query string
		want  []string
	}{
		{cross, "SELECT c.id, c.cp_up FROM c WHERE c.cp_up = 'I011'", []string{`{"id":"i011","cp_up":"I011"}`}},
		{cross, `SELECT VALUE c["cp_half"] FROM c WHERE c.id = 'i011'`, []string{`5.5`}},
		{cross, "SELECT * FROM c WHERE c.cp_up = 'I011'", nil}, // checked below: no computed property in it
		{p1, "SELECT VALUE c.id FROM c ORDER BY c.cp_half DESC", []string{`"i031"`, `"i011"`, `"i001"`}},
		{p1, "SELECT VALUE COUNT(1) FROM c JOIN t IN c.cp_tags WHERE t = 'x'", []string{`3`}},
		{p1, "SELECT c.cp_up, COUNT(1) AS n FROM c WHERE c.id = 'i001' GROUP BY c.cp_up", []string{`{"cp_up":"I001","n":1}`}},
		{p1, "SELECT VALUE EXISTS(SELECT VALUE t FROM t IN c.cp_tags WHERE t = 'x') FROM c WHERE c.id = 'i001'", []string{`true`}},
		// A FROM over a path in the item reads computed properties there.
		{p1, "SELECT VALUE t FROM t IN c.cp_tags WHERE t = 'x'", []string{`"x"`, `"x"`, `"x"`}},
	}
	for _, tc := range tests {
		q := Query{Text: tc.query, EnableCrossPartition: true}
		got := queryAll(t, e, tc.scope, q)
		if tc.want == nil {
			if len(got) != 1 || strings.Contains(got[0], "cp_") || !strings.Contains(got[0], `"pk":"p1"`) {
				t.Errorf("%s: %v, want the stored item alone", tc.query, got)
			}
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}

	var many []string // 21 properties, one past the limit
	for j := range 21 {
		many = append(many, fmt.Sprintf(`{"name": "p%d", "query": "SELECT VALUE 1 FROM c"}`, j))
	}
	bad := []string{
		`{"name": "x"}`,
		`[{"name": "x", "query": "SELECT VALUE c.a FROM c"}, {"name": "x", "query": "SELECT VALUE c.b FROM c"}]`,
		`[{"name": "id", "query": "SELECT VALUE c.a FROM c"}]`,
		`[{"name": "_ts", "query": "SELECT VALUE c.a FROM c"}]`,
		`[{"name": "", "query": "SELECT VALUE c.a FROM c"}]`,
		`[{"name": "x"}]`,
		`[{"name": "x", "query": "SELECT c.a FROM c"}]`,
		`[{"name": "x", "query": "SELECT VALUE c.a FROM c WHERE c.b = 1"}]`,
		`[{"name": "x", "query": "SELECT VALUE t FROM c JOIN t IN c.tags"}]`,
		`[{"name": "x", "query": "SELECT VALUE COUNT(1) FROM c"}]`,
		`[{"name": "x", "query": "SELECT VALUE GetCurrentDateTime() FROM c"}]`,
		`[{"name": "x", "query": "SELECT VALUE RAND() FROM c"}]`,
		`[{"name": "x", "query": "SELECT VALUE ST_AREA(c.g) FROM c"}]`,
		`[{"name": "x", "query": "SELECT VALUE udf.f(c.a) FROM c"}]`,
		`[{"name": "x", "query": "SELECT VALUE NOSUCHFUNCTION(c.a) FROM c"}]`,
		`[{"name": "x", "query": "SELECT VALUE"}]`,
		"[" + strings.Join(many, ",") + "]",
		`[{"name": "pk", "query": "SELECT VALUE 'p1' FROM c"}]`, // hides the partition key
		`[{"name": "a", "query": "SELECT VALUE c.x FROM c"}, {"name": "b", "query": "SELECT VALUE CONCAT(c.a, '!') FROM c"}]`,
	}
	for _, b := range bad {
		if _, err := e.ReplaceContainer("db", "k", withComputedProps(t, e, b), ""); code(err) != http.StatusBadRequest {
			t.Errorf("replace with computedProperties %s: %v, want 400", b, err)
		}
		body := strings.Replace(string(withComputedProps(t, e, b)), `"id":"k"`, `"id":"k2"`, 1)
		if _, err := e.CreateContainer("db", []byte(body), Throughput{}); code(err) != http.StatusBadRequest {
			t.Errorf("create with computedProperties %s: %v, want 400", b, err)
		}
	}
	got := queryAll(t, e, cross, Query{Text: "SELECT VALUE c.cp_up FROM c WHERE c.id = 'i011'", EnableCrossPartition: true})
	if !slices.Equal(got, []string{`"I011"`}) {
		t.Errorf("after refused replaces: %v, want the computed property still", got)
	}
	if _, err := e.ReadContainer("db", "k2"); err == nil {
		t.Errorf("a refused create made the container")
	}
}

// TestComputedPlanAsWritten: the plan a cross-partition query is refused
// with (400/1004: the SDK runs its rewritten query on every range) is made
// from the query as written; the rewritten query comes back and is
// rewritten with the computed properties then, once. Planned after the
// rewrite, a property defined over a stored property of its own name (n
// as c.n * 2) applied twice: 4n.
func TestComputedPlanAsWritten(t *testing.T) {
	e := testEngine(t)
	queryFixture(t, e, 40)
	if _, err := e.ReplaceContainer("db", "k", withComputedProps(t, e, `[{"name": "n", "query": "SELECT VALUE c.n * 2 FROM c"}]`), ""); err != nil {
		t.Fatal(err)
	}
	_, err := e.QueryItems(t.Context(), "db", "k", Scope{}, Query{Text: "SELECT VALUE MAX(c.n) FROM c", EnableCrossPartition: true})
	se, ok := errors.AsType[*status.Error](err)
	if !ok || se.Code != http.StatusBadRequest || se.Extra == "" {
		t.Fatalf("cross-partition MAX: %v, want the 400/1004 with a plan", err)
	}
	var p struct {
		QueryInfo struct {
			RewrittenQuery string `json:"rewrittenQuery"`
		} `json:"queryInfo"`
	}
	if err := json.Unmarshal([]byte(se.Extra), &p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.QueryInfo.RewrittenQuery, "*") {
		t.Fatalf("rewritten query %s: the computed property is in it", p.QueryInfo.RewrittenQuery)
	}
	ranges, _, _, err := e.PKRanges("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	most := 0.0
	for _, r := range ranges {
		for _, row := range queryAll(t, e, Scope{RangeID: r.ID}, Query{Text: p.QueryInfo.RewrittenQuery, EnableCrossPartition: true}) {
			var partial []struct {
				Item float64 `json:"item"`
			}
			if err := json.Unmarshal([]byte(row), &partial); err == nil && len(partial) == 1 {
				most = max(most, partial[0].Item)
			}
		}
	}
	if most != 2*39 {
		t.Errorf("MAX(c.n) over the ranges' rewritten queries = %v, want %v (2n of the largest n)", most, 2*39)
	}
}

// TestComputedOrderByAndPatch: ORDER BY a computed property needs an index
// on its own path, as in Cosmos DB, not on the paths its expression reads
// (an excluded /tags made ORDER BY c.cp_first a 400); and a patch's
// condition reads computed properties as a query does (it read the stored
// ones: 412).
func TestComputedOrderByAndPatch(t *testing.T) {
	e := testEngine(t)
	def := `{"id":"o","partitionKey":{"paths":["/pk"]},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/tags/*"}]},
		"computedProperties":[{"name":"cp_first","query":"SELECT VALUE c.tags[0] FROM c"},{"name":"cp_up","query":"SELECT VALUE UPPER(c.id) FROM c"}]}`
	if _, err := e.CreateContainer("db", []byte(def), Throughput{}); err != nil {
		t.Fatal(err)
	}
	for i, tag := range []string{"b", "c", "a"} {
		if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "o", Kind: Create, PK: pkS("p"),
			Body: fmt.Appendf(nil, `{"id":"i%d","pk":"p","tags":[%q]}`, i, tag)}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.QueryItems(t.Context(), "db", "o", Scope{PK: pkS("p")}, Query{Text: "SELECT VALUE c.id FROM c ORDER BY c.cp_first"})
	if err != nil {
		t.Fatalf("ORDER BY a computed property whose expression reads an excluded path: %v", err)
	}
	if got := strings.Join(func() []string {
		var s []string
		for _, it := range p.Items {
			s = append(s, string(it))
		}
		return s
	}(), ","); got != `"i2","i0","i1"` {
		t.Errorf("ORDER BY c.cp_first = %s", got)
	}
	body := []byte(`{"condition":"FROM c WHERE c.cp_up = 'I1'","operations":[{"op":"set","path":"/patched","value":true}]}`)
	if _, err := e.PatchItem(t.Context(), ItemRef{DB: "db", Container: "o", ID: "i1"}, pkS("p"), body, ""); err != nil {
		t.Errorf("patch with a condition on a computed property: %v", err)
	}
}
