package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/plan"
)

// drainQuery reads every page of q in scope and returns the rows and, per
// page, whether it was reused (QueryMetrics.Reused) and how many documents
// it loaded.
func drainQuery(t *testing.T, e *Engine, coll string, scope Scope, q Query, between func(page int)) (rows []string, reused []bool, loaded []int) {
	t.Helper()
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatalf("%q: more than 1,000 pages", q.Text)
		}
		p, err := e.QueryItems(context.Background(), "db", coll, scope, q)
		if err != nil {
			t.Fatalf("%q: page %d: %v", q.Text, page, err)
		}
		for _, it := range p.Items {
			rows = append(rows, string(it))
		}
		reused, loaded = append(reused, p.Metrics.Reused), append(loaded, p.Loaded)
		if p.Continuation == "" {
			return rows, reused, loaded
		}
		if between != nil {
			between(page)
		}
		q.Continuation = p.Continuation
	}
}

// TestQueryMemo: the pages after the first of a query evaluated whole are
// cut from the first page's evaluation while the scope is unchanged, load
// nothing, and give what evaluating each page again gives; a write to the
// scope, a query that reads the clock and a container with a time to live
// are evaluated again.
func TestQueryMemo(t *testing.T) {
	ctx := context.Background()
	memo := testEngineWith(t, Config{GatewayQueryFull: true})
	plain := testEngineWith(t, Config{GatewayQueryFull: true, QueryMemoBytes: -1})
	pk := func(i int) document.PartitionKey {
		return document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%7)}}
	}
	for _, e := range []*Engine{memo, plain} {
		for i := range 300 {
			body := fmt.Sprintf(`{"id":"i%03d","pk":"p%d","cat":"c%02d","n":%d}`, i, i%7, i%40, i)
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk(i), Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	cross := Scope{}
	one := Scope{PK: pk(3)}
	for _, tc := range []struct {
		text  string
		scope Scope
	}{
		{"SELECT c.cat, COUNT(1) AS n FROM c GROUP BY c.cat", cross},
		{"SELECT c.cat, COUNT(1) AS n, SUM(c.n) AS s FROM c GROUP BY c.cat", one},
		{"SELECT DISTINCT VALUE c.cat FROM c", cross},
		{"SELECT DISTINCT VALUE c.cat FROM c ORDER BY c.cat DESC", one},
		{"SELECT c.cat, COUNT(1) AS n FROM c GROUP BY c.cat ORDER BY c.cat", one},
		{"SELECT * FROM (SELECT DISTINCT VALUE c.cat FROM c) x OFFSET 3 LIMIT 20", cross},
	} {
		q := Query{Text: tc.text, MaxItems: 4, EnableCrossPartition: true}
		want, _, _ := drainQuery(t, plain, "k", tc.scope, q, nil)
		got, reused, loaded := drainQuery(t, memo, "k", tc.scope, q, nil)
		if !slices.Equal(got, want) {
			t.Errorf("%q: with the memo\n%v\nwithout\n%v", tc.text, got, want)
		}
		if len(reused) < 3 {
			t.Fatalf("%q: %d pages, want several", tc.text, len(reused))
		}
		if reused[0] || loaded[0] == 0 {
			t.Errorf("%q: first page reused %v, loaded %d: want evaluated", tc.text, reused[0], loaded[0])
		}
		for i := 1; i < len(reused); i++ {
			if !reused[i] || loaded[i] != 0 {
				t.Errorf("%q: page %d reused %v, loaded %d: want cut from the first page's rows", tc.text, i, reused[i], loaded[i])
			}
		}
	}

	// A write to the scope between pages: the next page is evaluated
	// again, and sees it (the same rows as without the memo).
	q := Query{Text: "SELECT c.cat, COUNT(1) AS n FROM c GROUP BY c.cat", MaxItems: 4, EnableCrossPartition: true}
	write := func(e *Engine) func(int) {
		return func(page int) {
			if page != 2 {
				return
			}
			body := `{"id":"new","pk":"p3","cat":"c00","n":1}`
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk(3), Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, _, _ := drainQuery(t, plain, "k", cross, q, write(plain))
	got, reused, loaded := drainQuery(t, memo, "k", cross, q, write(memo))
	if !slices.Equal(got, want) {
		t.Errorf("a write between pages: with the memo\n%v\nwithout\n%v", got, want)
	}
	if len(reused) < 5 || reused[3] || loaded[3] == 0 || !reused[4] {
		t.Errorf("a write after page 2: pages reused %v, loaded %v: want page 3 evaluated again and page 4 reused", reused, loaded)
	}

	// What may differ from one run to the next is evaluated every page.
	for _, text := range []string{
		"SELECT c.cat, MAX(GetCurrentTimestamp()) AS t FROM c GROUP BY c.cat",
		"SELECT DISTINCT VALUE {cat: c.cat, r: RAND() >= 0} FROM c",
	} {
		_, reused, _ := drainQuery(t, memo, "k", one, Query{Text: text, MaxItems: 4}, nil)
		if slices.Contains(reused, true) {
			t.Errorf("%q: pages reused %v, want none", text, reused)
		}
	}

	// Documents that may expire as time passes: evaluated every page.
	if _, err := memo.CreateContainer("db", []byte(`{"id":"ttl","partitionKey":{"paths":["/pk"]},"defaultTtl":-1}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		body := fmt.Sprintf(`{"id":"i%d","pk":"p","cat":"c%d"}`, i, i)
		if _, err := memo.WriteItem(ctx, Write{DB: "db", Container: "ttl", Kind: Create, PK: document.PartitionKey{{Kind: document.String, String: "p"}}, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	_, reused, _ = drainQuery(t, memo, "ttl", Scope{}, Query{Text: "SELECT DISTINCT VALUE c.cat FROM c", MaxItems: 4, EnableCrossPartition: true}, nil)
	if slices.Contains(reused, true) {
		t.Errorf("a container with a time to live: pages reused %v, want none", reused)
	}
}

// TestQueryMemoBudget: an evaluation larger than a quarter of the budget is
// not kept, and the least recently used is evicted for a new one.
func TestQueryMemoBudget(t *testing.T) {
	var m queryMemo
	m.budget = 5000 // four entries of seven rows (about 1,125 bytes each)
	row := []byte(strings.Repeat("x", 100))
	rows := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = row
		}
		return out
	}
	m.put(memoKey{state: "big"}, rows(20), nil) // ~2,700 bytes: over a quarter
	if _, _, ok := m.get(memoKey{state: "big"}); ok {
		t.Error("an evaluation over a quarter of the budget was kept")
	}
	for i := range 4 {
		m.put(memoKey{state: fmt.Sprint(i)}, rows(7), nil)
	}
	m.get(memoKey{state: "0"}) // used: the least recently used is now 1
	m.put(memoKey{state: "4"}, rows(7), nil)
	for i, want := range []bool{true, false, true, true, true} {
		if _, _, ok := m.get(memoKey{state: fmt.Sprint(i)}); ok != want {
			t.Errorf("entry %d kept %v, want %v", i, ok, want)
		}
	}
	if m.used > m.budget {
		t.Errorf("%d bytes kept, budget %d", m.used, m.budget)
	}
}

// TestSortedReadAhead: a sorted page (an ORDER BY its index does not serve:
// some documents have no n) reads
// rows ahead for the next pages, which take them while the scope is
// unchanged; the drained rows are those of a drain without the memo,
// writes between pages included, and a TOP reads no row past it.
func TestSortedReadAhead(t *testing.T) {
	ctx := context.Background()
	memo := testEngineWith(t, Config{GatewayQueryFull: true})
	plain := testEngineWith(t, Config{GatewayQueryFull: true, QueryMemoBytes: -1})
	pk := document.PartitionKey{{Kind: document.String, String: "p"}}
	for _, e := range []*Engine{memo, plain} {
		if _, err := e.CreateContainer("db", []byte(`{"id":"s","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
			t.Fatal(err)
		}
		for i := range 120 {
			body := fmt.Sprintf(`{"id":"i%03d","pk":"p","n":%d}`, i, (i*37)%50)
			if i%10 == 0 {
				body = fmt.Sprintf(`{"id":"i%03d","pk":"p"}`, i)
			}
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "s", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	q := Query{Text: "SELECT c.id, c.n FROM c ORDER BY c.n DESC", MaxItems: 5}
	p, err := memo.QueryItems(ctx, "db", "s", Scope{PK: pk}, q)
	if err != nil {
		t.Fatal(err)
	}
	if p.Metrics.Plan.Executor != plan.Sorted {
		t.Fatalf("plan %v, want a sorted page", p.Metrics.Plan)
	}
	want, _, _ := drainQuery(t, plain, "s", Scope{PK: pk}, q, nil)
	got, reused, loaded := drainQuery(t, memo, "s", Scope{PK: pk}, q, nil)
	if !slices.Equal(got, want) {
		t.Errorf("with the memo\n%v\nwithout\n%v", got, want)
	}
	// 24 pages of 5: a read finds ten pages' rows (50), and a page takes
	// them while they hold it and the next row (6), so pages 0, 9 and 18
	// read, the others take what was read.
	for i := range reused {
		if read := i%9 == 0; reused[i] == read || (loaded[i] == 0) != reused[i] {
			t.Errorf("page %d: reused %v, loaded %d", i, reused[i], loaded[i])
		}
	}

	write := func(e *Engine) func(int) {
		return func(page int) {
			if page != 3 {
				return
			}
			body := `{"id":"new","pk":"p","n":26}` // among the rows read ahead
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "s", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, _, _ = drainQuery(t, plain, "s", Scope{PK: pk}, q, write(plain))
	got, reused, _ = drainQuery(t, memo, "s", Scope{PK: pk}, q, write(memo))
	if !slices.Equal(got, want) {
		t.Errorf("a write between pages: with the memo\n%v\nwithout\n%v", got, want)
	}
	if !slices.Contains(got, `{"id":"new","n":26}`) || reused[4] {
		t.Errorf("a write after page 3: page 4 reused %v; rows %v", reused[4], got)
	}

	top := Query{Text: "SELECT TOP 7 c.id FROM c ORDER BY c.n", MaxItems: 5}
	want, _, _ = drainQuery(t, plain, "s", Scope{PK: pk}, top, nil)
	got, _, _ = drainQuery(t, memo, "s", Scope{PK: pk}, top, nil)
	if !slices.Equal(got, want) || len(got) != 7 {
		t.Errorf("TOP 7: with the memo %v, without %v", got, want)
	}
}

// TestQueryMemoKeepsNoProgram: a query whose program the query cache does
// not keep (its text and parameters past maxQueryCacheKey) is not
// memoized: each of its first pages compiled a program of its own, which
// its memo entry kept alive, uncounted, and never hit again (a bug hunt:
// 200 first pages of a 105 KB query held 227 MiB).
func TestQueryMemoKeepsNoProgram(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	pk := document.PartitionKey{{Kind: document.String, String: "p"}}
	for i := range 20 {
		body := fmt.Sprintf(`{"id":"i%d","pk":"p","v":%d}`, i, i)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	list := make([]string, 4000)
	for i := range list {
		list[i] = fmt.Sprint(1000 + i)
	}
	text := "SELECT DISTINCT VALUE c.v FROM c WHERE c.v NOT IN (" + strings.Join(list, ", ") + ")"
	if len(text) <= maxQueryCacheKey {
		t.Fatalf("query of %d bytes: not past the cache's key bound", len(text))
	}
	for range 3 {
		_, reused, _ := drainQuery(t, e, "k", Scope{PK: pk}, Query{Text: text, MaxItems: 3}, nil)
		if slices.Contains(reused, true) {
			t.Errorf("pages reused %v, want none", reused)
		}
	}
	if e.memo.used != 0 || e.memo.lru.Len() != 0 {
		t.Errorf("memo holds %d entries (%d bytes) for a query the cache does not keep", e.memo.lru.Len(), e.memo.used)
	}
}
