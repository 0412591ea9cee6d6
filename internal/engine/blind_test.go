package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/partitadb/partita/internal/document"
)

// TestBlindCount: a query whose filter the index lookups decide and whose
// projection reads no document (plan.Physical.Blind) loads none and gives
// what a container that indexes nothing gives, over values an index tells
// apart only by type, case, array or object, absent paths, -0, and
// integers past 2⁵³; what it may not decide (a long string, a position, a
// time to live) loads its documents.
func TestBlindCount(t *testing.T) {
	ctx := context.Background()
	e := testEngineWith(t, Config{GatewayQueryFull: true})
	if _, err := e.CreateContainer("db", []byte(`{"id":"scan","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"none","automatic":false}}`), Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"ttl","partitionKey":{"paths":["/pk"]},"defaultTtl":-1}`), Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	long := fmt.Sprintf(`"%0300d"`, 7)
	cats := []string{`"a"`, `"A"`, `"b"`, `["a"]`, `{"a":1}`, `null`, `true`, `1`, `"1"`, long}
	ns := []string{`0`, `-0.0`, `5`, `5.5`, `99`, `100`, `"7"`, `[7]`, `9007199254740993`, `9007199254740992`, `-3`}
	for i := range 300 {
		body := fmt.Sprintf(`{"id":"i%03d","pk":"p%d","cat":%s,"n":%s,"size":%d,"a":{"0":%d}}`, i, i%5, cats[i%len(cats)], ns[i%len(ns)], i%3, i%2)
		if i%7 == 0 { // a position 0 beside the property "0" of the others
			body = fmt.Sprintf(`{"id":"i%03d","pk":"p%d","cat":%s,"n":%s,"size":%d,"a":[%d]}`, i, i%5, cats[i%len(cats)], ns[i%len(ns)], i%3, i%2)
		}
		if i%13 == 0 {
			body = fmt.Sprintf(`{"id":"i%03d","pk":"p%d","size":%d}`, i, i%5, i%3) // no cat, no n
		}
		pk := document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%5)}}
		for _, coll := range []string{"k", "scan", "ttl"} {
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: coll, Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	one := Scope{PK: document.PartitionKey{{Kind: document.String, String: "p2"}}}
	for _, tc := range []struct {
		text  string
		scope Scope
		blind bool
	}{
		{`SELECT VALUE COUNT(1) FROM c WHERE c.cat = "a"`, Scope{}, true},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.cat = "a"`, one, true},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.pk = "p2" AND c.cat = 1`, one, true},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.cat IN ("a", null, true, 1, "1")`, Scope{}, true},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n = 0`, Scope{}, true},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n BETWEEN -3 AND 99`, Scope{}, true},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n > 5`, Scope{}, true},
		{`SELECT COUNT(1) AS n, SUM(2) AS s FROM c WHERE c.cat = "b" AND c.size = 1`, Scope{}, true},
		{`SELECT VALUE 1 FROM c WHERE c.cat = true`, Scope{}, true},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.n = 9007199254740992`, Scope{}, false},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.cat = ` + long, Scope{}, false},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.a["0"] = 1`, Scope{}, false},
		{`SELECT VALUE COUNT(1) FROM c WHERE ARRAY_CONTAINS(c.cat, "a")`, Scope{}, false},
		{`SELECT VALUE COUNT(c.id) FROM c WHERE c.cat = "a"`, Scope{}, false},
	} {
		q := Query{Text: tc.text, EnableCrossPartition: true, MaxItems: -1}
		want, _, _ := drainQuery(t, e, "scan", tc.scope, q, nil)
		for _, coll := range []string{"k", "ttl"} {
			var got []string
			blind, loaded := false, 0
			for q := q; ; {
				p, err := e.QueryItems(ctx, "db", coll, tc.scope, q)
				if err != nil {
					t.Fatalf("%s on %s: %v", tc.text, coll, err)
				}
				for _, it := range p.Items {
					got = append(got, string(it))
				}
				blind, loaded = blind || p.Metrics.Plan.Blind, loaded+p.Loaded
				if q.Continuation = p.Continuation; q.Continuation == "" {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s on %s: %v, without an index %v", tc.text, coll, got, want)
			}
			wantBlind := tc.blind && coll == "k" // a time to live hides documents only a load tells
			if blind != wantBlind || (blind && loaded != 0) {
				t.Errorf("%s on %s: blind %v (want %v), %d documents loaded", tc.text, coll, blind, wantBlind, loaded)
			}
		}
	}
}

// TestBlindReadInstead: a blind page whose lookup is read in order instead
// (its merge would hold more than maxMergeStreams iterators: the term count
// its continuation carries is out of date) counts only the documents its
// filter matches, not every document of the part (a bug hunt: 1,130 rows
// for 1,110 matching, the 20 negative n among them).
func TestBlindReadInstead(t *testing.T) {
	ctx := context.Background()
	e := testEngine(t)
	if _, err := e.CreateContainer("db", []byte(`{"id":"scan","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"none","automatic":false}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	pk := document.PartitionKey{{Kind: document.String, String: "p"}}
	write := func(id string, n int) {
		t.Helper()
		for _, coll := range []string{"k", "scan"} {
			body := fmt.Sprintf(`{"id":%q,"pk":"p","n":%d}`, id, n)
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: coll, Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 10 {
		write(fmt.Sprintf("a%d", i), i)
	}
	for i := 1; i <= 20; i++ {
		write(fmt.Sprintf("neg%d", i), -i)
	}
	q := Query{Text: "SELECT VALUE 1 FROM c WHERE c.n >= 0 AND c.n < 1000000", MaxItems: 1}
	p, err := e.QueryItems(ctx, "db", "k", Scope{PK: pk}, q)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Metrics.Plan.Blind || p.Continuation == "" {
		t.Fatalf("first page: blind %v, continuation %q: want a blind page with more", p.Metrics.Plan.Blind, p.Continuation)
	}
	rows := len(p.Items)
	for i := range maxMergeStreams + 100 { // more terms than a merge holds
		write(fmt.Sprintf("b%d", i), 100+i)
	}
	q.Continuation = p.Continuation
	q.MaxItems = 500
	for q.Continuation != "" {
		p, err := e.QueryItems(ctx, "db", "k", Scope{PK: pk}, q)
		if err != nil {
			t.Fatal(err)
		}
		rows += len(p.Items)
		q.Continuation = p.Continuation
	}
	want, _, _ := drainQuery(t, e, "scan", Scope{PK: pk}, Query{Text: "SELECT VALUE COUNT(1) FROM c WHERE c.n >= 0 AND c.n < 1000000"}, nil)
	if fmt.Sprint(rows) != want[0] {
		t.Errorf("drained %d rows, %s documents match", rows, want[0])
	}
}
