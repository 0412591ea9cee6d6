package engine

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/query/parse"
)

// TestQueryCache: a query sent again is neither parsed nor compiled again;
// another parameter, or another key making other conjuncts implied, gets a
// program of its own and its own rows; a program calling user-defined
// functions is not kept (replacing the function changes its rows); the
// maps stay bounded.
func TestQueryCache(t *testing.T) {
	e := testEngineWith(t, Config{GatewayQueryFull: true})
	queryFixture(t, e, 60) // i000..i059, pk p(i%10), n = i
	run := func(scope Scope, text string, params map[string][]byte) []string {
		t.Helper()
		return queryAll(t, e, scope, Query{Text: text, Params: params, EnableCrossPartition: true, MaxItems: 4})
	}
	const text = "SELECT VALUE c.id FROM c WHERE c.pk = @pk AND c.n >= @n"
	p1 := map[string][]byte{"@pk": []byte(`"p1"`), "@n": []byte(`20`)}
	want := []string{`"i031"`, `"i041"`, `"i051"`} // i021 is one of the items queryFixture deletes
	if got := run(Scope{PK: pkN(1)}, text, p1); !slices.Equal(got, want) {
		t.Fatalf("first run: %v, want %v", got, want)
	}
	progs := len(e.qcache.progs)
	ast := e.qcache.asts[text]
	if got := run(Scope{PK: pkN(1)}, text, p1); !slices.Equal(got, want) || len(e.qcache.progs) != progs || e.qcache.asts[text] != ast {
		t.Errorf("second run: %v; %d programs (were %d), parsed again: %v", got, len(e.qcache.progs), progs, e.qcache.asts[text] != ast)
	}
	// The same text, scoped to another key: c.pk = @pk names p1, so
	// nothing is implied and nothing matches.
	if got := run(Scope{PK: pkN(2)}, text, p1); len(got) != 0 || len(e.qcache.progs) != progs+1 {
		t.Errorf("p2 scope, p1 filter: %v, %d programs", got, len(e.qcache.progs))
	}
	// Other parameters: a program of their own.
	p2 := map[string][]byte{"@pk": []byte(`"p2"`), "@n": []byte(`40`)}
	if got := run(Scope{PK: pkN(2)}, text, p2); !slices.Equal(got, []string{`"i052"`}) { // i042 deleted
		t.Errorf("p2, n >= 40: %v", got)
	}

	// The query by key: its only parameter is the key each scope implies,
	// so every key runs one program; a parameter the query does not name
	// is not part of it.
	const byKey = "SELECT VALUE c.id FROM c WHERE c.pk = @pk"
	before := len(e.qcache.progs)
	byKeyOK := func(got []string, i int) bool {
		for _, id := range got {
			if !strings.HasSuffix(id, fmt.Sprintf(`%d"`, i)) {
				return false
			}
		}
		return len(got) >= 4
	}
	for i := range 10 {
		params := map[string][]byte{"@pk": fmt.Appendf(nil, `"p%d"`, i), "@unused": fmt.Appendf(nil, "%d", i)}
		if got := run(Scope{PK: pkN(i)}, byKey, params); !byKeyOK(got, i) {
			t.Errorf("by key p%d: %v", i, got)
		}
		// Unscoped, the query is routed to its key's partition all the same.
		if got := run(Scope{}, byKey, params); !byKeyOK(got, i) {
			t.Errorf("by key p%d, unscoped: %v", i, got)
		}
	}
	if got := len(e.qcache.progs); got != before+1 {
		t.Errorf("by key over 10 keys: %d programs added, want 1", got-before)
	}

	// A program calling a user-defined function is compiled every time.
	if _, err := e.CreateScript("db", "k", UDFs, []byte(`{"id":"f","body":"function f(x){return x*2}"}`)); err != nil {
		t.Fatal(err)
	}
	const udf = "SELECT VALUE udf.f(c.n) FROM c WHERE c.id = 'i008'"
	before = len(e.qcache.progs)
	if got := run(Scope{PK: pkN(8)}, udf, nil); !slices.Equal(got, []string{"16"}) {
		t.Fatalf("udf.f: %v", got)
	}
	if _, err := e.ReplaceScript("db", "k", UDFs, "f", []byte(`{"id":"f","body":"function f(x){return x*3}"}`), ""); err != nil {
		t.Fatal(err)
	}
	if got := run(Scope{PK: pkN(8)}, udf, nil); !slices.Equal(got, []string{"24"}) || len(e.qcache.progs) != before {
		t.Errorf("udf.f replaced: %v (want 24), %d programs kept (were %d)", got, len(e.qcache.progs), before)
	}

	// Bounded.
	for i := range 3 * maxQueryCacheEntries {
		run(Scope{PK: pkN(1)}, fmt.Sprintf("SELECT VALUE c.id FROM c WHERE c.n = %d", i), nil)
	}
	if len(e.qcache.asts) > maxQueryCacheEntries || len(e.qcache.progs) > maxQueryCacheEntries {
		t.Errorf("%d parsed queries, %d programs kept, want at most %d", len(e.qcache.asts), len(e.qcache.progs), maxQueryCacheEntries)
	}
	// keyOf names exactly the programs kept (the query memo's keys).
	if len(e.qcache.keys) != len(e.qcache.progs) {
		t.Errorf("%d program keys for %d programs kept", len(e.qcache.keys), len(e.qcache.progs))
	}
	for k, p := range e.qcache.progs {
		if got, ok := e.qcache.keyOf(p); !ok || got != k {
			t.Errorf("keyOf a kept program: %q, %v", got, ok)
			break
		}
	}
}

// TestQueryCacheKeepsParsedQueries: running queries of every kind (paged,
// ordered, grouped, cross-partition, refused with the gateway's query
// plan, explained) leaves the parsed queries the cache hands out equal to a
// fresh parse: nothing that reads them changes them.
func TestQueryCacheKeepsParsedQueries(t *testing.T) {
	for _, full := range []bool{false, true} {
		e := testEngineWith(t, Config{GatewayQueryFull: full})
		queryFixture(t, e, 30)
		texts := []string{
			"SELECT * FROM c WHERE c.pk = 'p1' AND c.n > 3",
			"SELECT VALUE c.id FROM c ORDER BY c._ts DESC",
			"SELECT TOP 3 c.id FROM c WHERE c.n > 5 ORDER BY c.n DESC",
			"SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk",
			"SELECT DISTINCT VALUE c.pk FROM c",
			"SELECT VALUE AVG(c.n) FROM c ORDER BY c.n",
			"SELECT * FROM c OFFSET 2 LIMIT 3",
			"SELECT t FROM c JOIN t IN c.tags WHERE c.pk = 'p2'",
			"SELECT * FROM c WHERE c.pk IN ('p1', 'p2') ORDER BY c.id",
		}
		for _, text := range texts {
			for _, scope := range []Scope{{}, {PK: pkN(1)}} {
				for range 2 {
					q := Query{Text: text, EnableCrossPartition: true, MaxItems: 2}
					_, _ = e.QueryItems(t.Context(), "db", "k", scope, q)
					_, _ = e.ExplainQuery(t.Context(), "db", "k", scope, q)
				}
			}
			fresh, err := parse.Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			if cached := e.qcache.asts[text]; !reflect.DeepEqual(cached, fresh) {
				t.Errorf("gateway full %v: %s: the cached parse changed: %s", full, text, parse.ExprString(cached.Where))
			}
		}
	}
}
