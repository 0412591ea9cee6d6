package plan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/partitadb/partita/internal/query/parse"
)

// neutralJSON is the queryInfo of a query that needs no merging, for SELECT without VALUE.
const neutralJSON = `{"distinctType":"None","top":null,"offset":null,"limit":null,"orderBy":[],"orderByExpressions":[],` +
	`"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},"rewrittenQuery":"",` +
	`"hasSelectValue":false,"dCountInfo":null,"hasNonStreamingOrderBy":false}`

// info returns neutralJSON with the given fields replaced; fields is a JSON object.
func info(t *testing.T, fields string) map[string]any {
	t.Helper()
	var base, over map[string]any
	if err := json.Unmarshal([]byte(neutralJSON), &base); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(fields), &over); err != nil {
		t.Fatalf("bad expectation %s: %v", fields, err)
	}
	for k, v := range over {
		if _, ok := base[k]; !ok {
			t.Fatalf("expectation names unknown field %q", k)
		}
		base[k] = v
	}
	return base
}

// TestBuild checks plans against the shapes Cosmos DB produces (the .NET SDK's query plan
// baselines, QueryPlanBaselineTests.*.xml) and @azure/cosmos 4.9.3 consumes
// (pipelinedQueryExecutionContext.js, EndpointComponent/GroupBy*.js, Aggregators/*.js,
// orderByQueryExecutionContext.js). Rewritten query text differs from Cosmos's only in
// layout (one line, explicit ASC, "FROM Root AS r"), which no SDK parses.
func TestBuild(t *testing.T) {
	params := map[string][]byte{"@off": []byte("42"), "@lim": []byte("1337"), "@top": []byte("3")}
	tests := []struct {
		query string
		want  string // fields that differ from neutralJSON
	}{
		// No merging: the original query runs on every range.
		{`SELECT * FROM c`, `{}`},
		{`SELECT VALUE c.id FROM c WHERE c.x > 1`, `{"hasSelectValue":true}`},
		{`SELECT c.id, t FROM c JOIN t IN c.tags`, `{}`},

		// ORDER BY: _rid, orderByItems and payload; the filter placeholder in WHERE.
		{`SELECT * FROM c ORDER BY c.id`, `{"orderBy":["Ascending"],"orderByExpressions":["c.id"],
			"rewrittenQuery":"SELECT c._rid, [{\"item\": c.id}] AS orderByItems, c AS payload FROM c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.id ASC"}`},
		{`SELECT * FROM Root r WHERE r.key IN (1, 2) ORDER BY r.key DESC`, `{"orderBy":["Descending"],"orderByExpressions":["r.key"],
			"rewrittenQuery":"SELECT r._rid, [{\"item\": r.key}] AS orderByItems, r AS payload FROM Root AS r WHERE (r.key IN (1, 2)) AND ({documentdb-formattableorderbyquery-filter}) ORDER BY r.key DESC"}`},
		{`SELECT TOP 10 c.blah, c.blah2 FROM c ORDER BY c.key`, `{"top":10,"orderBy":["Ascending"],"orderByExpressions":["c.key"],
			"rewrittenQuery":"SELECT TOP 10 c._rid, [{\"item\": c.key}] AS orderByItems, {\"blah\": c.blah, \"blah2\": c.blah2} AS payload FROM c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.key ASC"}`},
		{`SELECT VALUE c.blah FROM c ORDER BY c.key DESC, c.x`, `{"orderBy":["Descending","Ascending"],"orderByExpressions":["c.key","c.x"],"hasSelectValue":true,
			"rewrittenQuery":"SELECT c._rid, [{\"item\": c.key}, {\"item\": c.x}] AS orderByItems, c.blah AS payload FROM c WHERE ({documentdb-formattableorderbyquery-filter}) AND IS_DEFINED(c.blah) ORDER BY c.key DESC, c.x ASC"}`},
		{`SELECT TOP 50 r[0], r.a < 1 FROM r ORDER BY r.key ASC`, `{"top":50,"orderBy":["Ascending"],"orderByExpressions":["r.key"],
			"rewrittenQuery":"SELECT TOP 50 r._rid, [{\"item\": r.key}] AS orderByItems, {\"$1\": r[0], \"$2\": r.a < 1} AS payload FROM r WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY r.key ASC"}`},
		{`SELECT * FROM c ORDER BY c.a OFFSET @off LIMIT @lim`, `{"offset":42,"limit":1337,"orderBy":["Ascending"],"orderByExpressions":["c.a"],
			"rewrittenQuery":"SELECT c._rid, [{\"item\": c.a}] AS orderByItems, c AS payload FROM c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.a ASC OFFSET 0 LIMIT 1379"}`},
		{`SELECT x FROM x IN c.kids ORDER BY x.age`, `{"orderBy":["Ascending"],"orderByExpressions":["x.age"],
			"rewrittenQuery":"SELECT [{\"item\": x.age}] AS orderByItems, {\"x\": x} AS payload FROM x IN c.kids WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY x.age ASC"}`},

		// TOP, OFFSET/LIMIT and DISTINCT without ORDER BY.
		{`SELECT * FROM c OFFSET 1 LIMIT 2`, `{"offset":1,"limit":2,"rewrittenQuery":"SELECT * FROM c OFFSET 0 LIMIT 3"}`},
		{`SELECT * FROM c OFFSET 0 LIMIT 0`, `{"offset":0,"limit":0,"rewrittenQuery":"SELECT * FROM c OFFSET 0 LIMIT 0"}`},
		{`SELECT TOP @top * FROM c`, `{"top":3}`},
		{`SELECT DISTINCT c.blah FROM c`, `{"distinctType":"Unordered"}`},
		{`SELECT DISTINCT VALUE c.blah FROM c OFFSET 1 LIMIT 2`, `{"distinctType":"Unordered","offset":1,"limit":2,"hasSelectValue":true,
			"rewrittenQuery":"SELECT DISTINCT VALUE c.blah FROM c OFFSET 0 LIMIT 3"}`},

		// DISTINCT with ORDER BY: Ordered when the projection is the sort keys; the ranges
		// return duplicates, so TOP and OFFSET/LIMIT apply only after the client's DISTINCT.
		{`SELECT DISTINCT VALUE c.blah FROM c ORDER BY c.blah`, `{"distinctType":"Ordered","orderBy":["Ascending"],"orderByExpressions":["c.blah"],"hasSelectValue":true,
			"rewrittenQuery":"SELECT c._rid, [{\"item\": c.blah}] AS orderByItems, c.blah AS payload FROM c WHERE ({documentdb-formattableorderbyquery-filter}) AND IS_DEFINED(c.blah) ORDER BY c.blah ASC"}`},
		{`SELECT DISTINCT TOP 3 c.a FROM c ORDER BY c.b`, `{"distinctType":"Unordered","top":3,"orderBy":["Ascending"],"orderByExpressions":["c.b"],
			"rewrittenQuery":"SELECT c._rid, [{\"item\": c.b}] AS orderByItems, {\"a\": c.a} AS payload FROM c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.b ASC"}`},
		{`SELECT DISTINCT c.a, c.b FROM c ORDER BY c.b, c.a OFFSET 1 LIMIT 1`, `{"distinctType":"Ordered","offset":1,"limit":1,"orderBy":["Ascending","Ascending"],"orderByExpressions":["c.b","c.a"],
			"rewrittenQuery":"SELECT c._rid, [{\"item\": c.b}, {\"item\": c.a}] AS orderByItems, {\"a\": c.a, \"b\": c.b} AS payload FROM c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.b ASC, c.a ASC"}`},

		// VALUE aggregates: [{"item": partial}].
		{`SELECT VALUE COUNT(1) FROM c`, `{"aggregates":["Count"],"hasSelectValue":true,"rewrittenQuery":"SELECT VALUE [{\"item\": COUNT(1)}] FROM c"}`},
		{`SELECT VALUE sum(c.n) FROM c WHERE c.n > 0`, `{"aggregates":["Sum"],"hasSelectValue":true,"rewrittenQuery":"SELECT VALUE [{\"item\": sum(c.n)}] FROM c WHERE c.n > 0"}`},
		{`SELECT VALUE AVG(c.blah) FROM c`, `{"aggregates":["Average"],"hasSelectValue":true,
			"rewrittenQuery":"SELECT VALUE [{\"item\": {\"sum\": SUM(c.blah), \"count\": COUNT(c.blah)}}] FROM c"}`},
		{`SELECT VALUE MIN(c.blah + 1) FROM c`, `{"aggregates":["Min"],"hasSelectValue":true,
			"rewrittenQuery":"SELECT VALUE [{\"item\": MIN(c.blah + 1), \"item2\": {\"min\": MIN(c.blah + 1), \"count\": COUNT(c.blah + 1)}}] FROM c"}`},
		{`SELECT VALUE MAX(c.k) FROM c`, `{"aggregates":["Max"],"hasSelectValue":true,
			"rewrittenQuery":"SELECT VALUE [{\"item\": MAX(c.k), \"item2\": {\"max\": MAX(c.k), \"count\": COUNT(c.k)}}] FROM c"}`},
		{`SELECT VALUE MAKESET(c.k) FROM c`, `{"aggregates":["MakeSet"],"hasSelectValue":true,"rewrittenQuery":"SELECT VALUE [{\"item\": MAKESET(c.k)}] FROM c"}`},
		{`SELECT VALUE COUNT(1) FROM c OFFSET 1 LIMIT 2`, `{"aggregates":["Count"],"offset":1,"limit":2,"hasSelectValue":true,"rewrittenQuery":"SELECT VALUE [{\"item\": COUNT(1)}] FROM c"}`},
		// Aggregates make one row, so an ORDER BY beside them is dropped (the JavaScript
		// SDK's aggregate tests send these; the service answers them).
		{`SELECT VALUE AVG(r.key) FROM r WHERE IS_NUMBER(r.key) ORDER BY r.key`, `{"aggregates":["Average"],"hasSelectValue":true,
			"rewrittenQuery":"SELECT VALUE [{\"item\": {\"sum\": SUM(r.key), \"count\": COUNT(r.key)}}] FROM r WHERE IS_NUMBER(r.key)"}`},
		{`SELECT VALUE COUNT(r.key) FROM r ORDER BY r.key DESC`, `{"aggregates":["Count"],"hasSelectValue":true,"rewrittenQuery":"SELECT VALUE [{\"item\": COUNT(r.key)}] FROM r"}`},
		{`SELECT MAX(c.k) AS hi FROM c ORDER BY c.k`, `{"groupByAliases":["hi"],"groupByAliasToAggregateType":{"hi":"Max"},
			"rewrittenQuery":"SELECT {\"hi\": {\"item\": MAX(c.k), \"item2\": {\"max\": MAX(c.k), \"count\": COUNT(c.k)}}} AS payload FROM c"}`},

		// Non-VALUE aggregates: a payload of alias → {"item": partial}, no groupByItems.
		{`SELECT AVG(c.blah) FROM c`, `{"groupByAliases":["$1"],"groupByAliasToAggregateType":{"$1":"Average"},
			"rewrittenQuery":"SELECT {\"$1\": {\"item\": {\"sum\": SUM(c.blah), \"count\": COUNT(c.blah)}}} AS payload FROM c"}`},
		{`SELECT COUNT(1) AS n, MAKELIST(c.x) AS xs FROM c`, `{"groupByAliases":["n","xs"],"groupByAliasToAggregateType":{"n":"Count","xs":"MakeList"},
			"rewrittenQuery":"SELECT {\"n\": {\"item\": COUNT(1)}, \"xs\": {\"item\": MAKELIST(c.x)}} AS payload FROM c"}`},

		// GROUP BY: groupByItems and payload; TOP/OFFSET/DISTINCT apply to the merged groups.
		{`SELECT c.id FROM c GROUP BY c.id`, `{"groupByExpressions":["c.id"],"groupByAliases":["id"],"groupByAliasToAggregateType":{"id":null},
			"rewrittenQuery":"SELECT [{\"item\": c.id}] AS groupByItems, {\"id\": c.id} AS payload FROM c GROUP BY c.id"}`},
		{`SELECT c.team, c.name, COUNT(1) AS count, MIN(c.age) AS min_age FROM c WHERE c.x = 1 GROUP BY c.team, c.name`,
			`{"groupByExpressions":["c.team","c.name"],"groupByAliases":["team","name","count","min_age"],
			"groupByAliasToAggregateType":{"team":null,"name":null,"count":"Count","min_age":"Min"},
			"rewrittenQuery":"SELECT [{\"item\": c.team}, {\"item\": c.name}] AS groupByItems, {\"team\": c.team, \"name\": c.name, \"count\": {\"item\": COUNT(1)}, \"min_age\": {\"item\": MIN(c.age), \"item2\": {\"min\": MIN(c.age), \"count\": COUNT(c.age)}}} AS payload FROM c WHERE c.x = 1 GROUP BY c.team, c.name"}`},
		{`SELECT COUNTIF(c.valid) FROM c GROUP BY c.zipcode`, `{"groupByExpressions":["c.zipcode"],"groupByAliases":["$1"],"groupByAliasToAggregateType":{"$1":"CountIf"},
			"rewrittenQuery":"SELECT [{\"item\": c.zipcode}] AS groupByItems, {\"$1\": {\"item\": COUNTIF(c.valid)}} AS payload FROM c GROUP BY c.zipcode"}`},
		{`SELECT VALUE c.age FROM c GROUP BY c.age`, `{"groupByExpressions":["c.age"],"hasSelectValue":true,
			"rewrittenQuery":"SELECT [{\"item\": c.age}] AS groupByItems, c.age AS payload FROM c GROUP BY c.age"}`},
		{`SELECT VALUE COUNT(1) FROM c GROUP BY c.age`, `{"groupByExpressions":["c.age"],"aggregates":["Count"],"hasSelectValue":true,
			"rewrittenQuery":"SELECT [{\"item\": c.age}] AS groupByItems, [{\"item\": COUNT(1)}] AS payload FROM c GROUP BY c.age"}`},
		{`SELECT DISTINCT TOP 2 c.age, SUM(c.x) AS s FROM c GROUP BY c.age OFFSET 1 LIMIT 5`, `{"distinctType":"Unordered","top":2,"offset":1,"limit":5,
			"groupByExpressions":["c.age"],"groupByAliases":["age","s"],"groupByAliasToAggregateType":{"age":null,"s":"Sum"},
			"rewrittenQuery":"SELECT [{\"item\": c.age}] AS groupByItems, {\"age\": c.age, \"s\": {\"item\": SUM(c.x)}} AS payload FROM c GROUP BY c.age"}`},
	}
	for _, tt := range tests {
		q, err := parse.Parse(tt.query)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.query, err)
		}
		before := q.String()
		got, err := Build(q, params)
		if err != nil {
			t.Errorf("Build(%q): %v", tt.query, err)
			continue
		}
		raw, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		var gotMap map[string]any
		if err := json.Unmarshal(raw, &gotMap); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(info(t, tt.want), gotMap); diff != "" {
			t.Errorf("Build(%q) mismatch (-want +got):\n%s", tt.query, diff)
		}
		if after := q.String(); after != before {
			t.Errorf("Build(%q) modified its input: now %q", tt.query, after)
		}
		checkRewritten(t, tt.query, got.RewrittenQuery)
	}
}

// checkRewritten asserts that a rewritten query, with the ORDER BY placeholder replaced as
// the SDKs replace it, parses, and prints back to the same text (with the placeholder's
// parentheses dropped, as the printer drops them around a literal).
func checkRewritten(t *testing.T, query, rewritten string) {
	t.Helper()
	if rewritten == "" {
		return
	}
	text := strings.Replace(rewritten, OrderByFilterPlaceholder, "true", 1)
	q, err := parse.Parse(text)
	if err != nil {
		t.Errorf("Build(%q).RewrittenQuery = %q does not parse: %v", query, text, err)
		return
	}
	want := strings.Replace(rewritten, "("+OrderByFilterPlaceholder+")", "true", 1)
	if got := q.String(); got != want {
		t.Errorf("Build(%q).RewrittenQuery = %q prints back as %q", query, text, got)
	}
}

func TestBuildErrors(t *testing.T) {
	params := map[string][]byte{"@s": []byte(`"x"`), "@neg": []byte(`-1`)}
	unsupported := []string{
		`SELECT c.name, ABS(AVG(c.age)) AS a FROM c GROUP BY c.name`,
		`SELECT VALUE {"a": c.a, "n": COUNT(1)} FROM c GROUP BY c.a`,
		`SELECT VALUE COUNT(1) + 1 FROM c`,
		`SELECT c.a, COUNT(1) AS n FROM c GROUP BY c.a ORDER BY c.a`,
		`SELECT * FROM c GROUP BY c.a`,
		`SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.a FROM c) t`,
		`SELECT * FROM (SELECT TOP 1 * FROM c) t`,
		`SELECT t.a FROM (SELECT c.a FROM (SELECT VALUE c FROM c OFFSET 1 LIMIT 1) c) t`,
		`SELECT VALUE MAX(MIN(c.a)) FROM c`,
	}
	for _, s := range unsupported {
		q, err := parse.Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		_, err = Build(q, params)
		if _, ok := errors.AsType[*UnsupportedError](err); !ok {
			t.Errorf("Build(%q) = %v, want an *UnsupportedError", s, err)
		}
	}
	bad := []struct{ query, clause string }{
		{`SELECT TOP @missing * FROM c`, "TOP"},
		{`SELECT TOP @s * FROM c`, "TOP"},
		{`SELECT TOP 1.5 * FROM c`, "TOP"},
		{`SELECT * FROM c OFFSET @neg LIMIT 1`, "OFFSET"},
		{`SELECT * FROM c OFFSET 1 LIMIT 4294967296`, "LIMIT"},
	}
	for _, tt := range bad {
		q, err := parse.Parse(tt.query)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.query, err)
		}
		_, err = Build(q, params)
		if e, ok := errors.AsType[*ValueError](err); !ok || e.Clause != tt.clause {
			t.Errorf("Build(%q) = %v, want a *ValueError for %s", tt.query, err, tt.clause)
		}
	}
	if _, err := Build(nil, nil); err == nil {
		t.Errorf("Build(nil) = nil error, want one")
	}
}

func TestPlanMarshal(t *testing.T) {
	q, err := parse.Parse(`SELECT * FROM c WHERE c.a < 1 ORDER BY c.a`)
	if err != nil {
		t.Fatal(err)
	}
	qi, err := Build(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		plan Plan
		want string
	}{
		{Plan{Version: 2}, `{"partitionedQueryExecutionInfoVersion":2,"queryInfo":` + neutralJSON + `,"queryRanges":[]}`},
		{Plan{Version: 2, QueryInfo: Neutral(nil), QueryRanges: []EPKRange{FullRange()}},
			`{"partitionedQueryExecutionInfoVersion":2,"queryInfo":` + neutralJSON + `,"queryRanges":[{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}]}`},
		{Plan{Version: 2, QueryInfo: qi, QueryRanges: []EPKRange{PointRange("05C1D5")}},
			`{"partitionedQueryExecutionInfoVersion":2,"queryInfo":{"distinctType":"None","top":null,"offset":null,"limit":null,` +
				`"orderBy":["Ascending"],"orderByExpressions":["c.a"],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],` +
				`"groupByAliasToAggregateType":{},"rewrittenQuery":"SELECT c._rid, [{\"item\": c.a}] AS orderByItems, c AS payload FROM c ` +
				`WHERE (c.a < 1) AND ({documentdb-formattableorderbyquery-filter}) ORDER BY c.a ASC","hasSelectValue":false,` +
				`"dCountInfo":null,"hasNonStreamingOrderBy":false},"queryRanges":[{"min":"05C1D5","max":"05C1D5","isMinInclusive":true,"isMaxInclusive":true}]}`},
	}
	for _, tt := range tests {
		got, err := tt.plan.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("Marshal(%+v) = %s, want %s", tt.plan, got, tt.want)
		}
	}
}

func FuzzBuild(f *testing.F) {
	for _, s := range []string{
		`SELECT * FROM c ORDER BY c.id`,
		`SELECT DISTINCT VALUE c.a FROM c ORDER BY c.a OFFSET 1 LIMIT 2`,
		`SELECT c.a, COUNT(1) AS n, AVG(c.x) FROM c WHERE c.b > 1 GROUP BY c.a`,
		`SELECT VALUE MIN(c.x) FROM c JOIN t IN c.tags`,
		`SELECT TOP 3 x FROM x IN c.kids ORDER BY x.age DESC`,
		`SELECT * FROM (SELECT c.a FROM c) t OFFSET 0 LIMIT 1`,
	} {
		f.Add(s)
	}
	params := map[string][]byte{"@n": []byte("2")}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := parse.Parse(s)
		if err != nil {
			return
		}
		before := q.String()
		qi, err := Build(q, params)
		if q.String() != before {
			t.Fatalf("Build(%q) modified its input", s)
		}
		if err != nil {
			var ue *UnsupportedError
			var ve *ValueError
			if !errors.As(err, &ue) && !errors.As(err, &ve) {
				t.Fatalf("Build(%q) = %v, want an *UnsupportedError or *ValueError", s, err)
			}
			return
		}
		if _, err := (Plan{Version: 2, QueryInfo: qi}).Marshal(); err != nil {
			t.Fatalf("Marshal(Build(%q)): %v", s, err)
		}
		if qi.RewrittenQuery != "" {
			text := strings.Replace(qi.RewrittenQuery, OrderByFilterPlaceholder, "true", 1)
			if _, err := parse.Parse(text); err != nil {
				t.Fatalf("Build(%q).RewrittenQuery = %q does not parse: %v", s, text, err)
			}
		}
	})
}

func BenchmarkBuild(b *testing.B) {
	for _, bb := range []struct{ name, query string }{
		{"orderBy", `SELECT c.id, c.name FROM c WHERE c.age > 21 ORDER BY c.name DESC, c.id OFFSET 10 LIMIT 10`},
		{"groupBy", `SELECT c.team, COUNT(1) AS n, AVG(c.age) AS a, MAX(c.age) AS m FROM c GROUP BY c.team`},
	} {
		q, err := parse.Parse(bb.query)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				qi, err := Build(q, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := (Plan{Version: 2, QueryInfo: qi, QueryRanges: []EPKRange{FullRange()}}).Marshal(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFeatures: the features a client must merge, named as in
// x-ms-cosmos-supported-query-features.
func TestFeatures(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		{"SELECT * FROM c WHERE c.a = 1", nil},
		{"SELECT * FROM c ORDER BY c.a", []string{"OrderBy"}},
		{"SELECT * FROM c ORDER BY c.a, c.b DESC", []string{"MultipleOrderBy", "OrderBy"}},
		{"SELECT TOP 3 * FROM c ORDER BY c.a", []string{"OrderBy", "Top"}},
		{"SELECT VALUE COUNT(1) FROM c", []string{"Aggregate"}},
		{"SELECT COUNT(1) AS n FROM c", []string{"NonValueAggregate"}},
		{"SELECT COUNT(1) AS n, SUM(c.a) AS s FROM c", []string{"MultipleAggregates", "NonValueAggregate"}},
		{"SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g", []string{"GroupBy", "NonValueAggregate"}},
		{"SELECT DISTINCT VALUE c.a FROM c", []string{"Distinct"}},
		{"SELECT * FROM c ORDER BY c.a OFFSET 1 LIMIT 2", []string{"OffsetAndLimit", "OrderBy"}},
	}
	for _, tt := range tests {
		q, err := parse.Parse(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		qi, err := Build(q, nil)
		if err != nil {
			t.Fatalf("Build(%q): %v", tt.query, err)
		}
		if got := qi.Features(); !cmp.Equal(got, tt.want) {
			t.Errorf("Features of %q = %v, want %v", tt.query, got, tt.want)
		}
	}
}

// TestBuildLegacy: for a client that declares no query features (the
// Python SDK v3), SELECT VALUE MIN and MAX are rewritten {"item": AGG(x)}
// alone, which it merges (a range without a value answers {}, which it
// skips); Build keeps "item2" for the newer SDKs. The old plan sent the
// legacy client "item2" too, and a range without a value broke its merge
// (KeyError: 'item').
func TestBuildLegacy(t *testing.T) {
	q, err := parse.Parse("SELECT VALUE MIN(c.f) FROM c WHERE c.f > 6.5")
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := BuildLegacy(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(legacy.RewrittenQuery, "item2") || !strings.Contains(legacy.RewrittenQuery, `"item": MIN(c.f)`) {
		t.Errorf("legacy rewrite of MIN: %s", legacy.RewrittenQuery)
	}
	newer, err := Build(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(newer.RewrittenQuery, "item2") {
		t.Errorf("rewrite of MIN for a client declaring features: %s, want item2", newer.RewrittenQuery)
	}
}

// TestBuildTopOfAggregate: TOP n (n ≥ 1) over aggregates without GROUP BY,
// one row, is no step of the plan (the Python SDK v3 applied it to each
// range's partial rows: TOP 1 VALUE COUNT(1) counted one range); TOP 0
// stays, and so does TOP over groups.
func TestBuildTopOfAggregate(t *testing.T) {
	for _, tc := range []struct {
		query string
		top   bool
	}{
		{"SELECT TOP 1 VALUE COUNT(1) FROM c", false},
		{"SELECT TOP 5 COUNT(1) AS n, MAX(c.x) AS m FROM c", false},
		{"SELECT TOP 0 VALUE COUNT(1) FROM c", true},
		{"SELECT TOP 2 c.g, COUNT(1) AS n FROM c GROUP BY c.g", true},
		{"SELECT TOP 2 * FROM c", true},
	} {
		q, err := parse.Parse(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		for _, build := range []func(*parse.Query, map[string][]byte) (*QueryInfo, error){Build, BuildLegacy} {
			info, err := build(q, nil)
			if err != nil {
				t.Fatalf("%s: %v", tc.query, err)
			}
			if (info.Top != nil) != tc.top {
				t.Errorf("%s: top %v, want a TOP step %v", tc.query, info.Top, tc.top)
			}
		}
	}
}
