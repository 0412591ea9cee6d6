package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/document"
)

// pageIDs returns the ids of a page's items, sorted.
func pageIDs(t *testing.T, items [][]byte) []string {
	t.Helper()
	ids := []string{}
	for _, it := range items {
		var x struct{ ID string }
		if err := json.Unmarshal(it, &x); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, x.ID)
	}
	slices.Sort(ids)
	return ids
}

// checkClean runs Check and fails the test on any problem.
func checkClean(t *testing.T, e *Engine) {
	t.Helper()
	r, err := e.Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Problems {
		t.Errorf("check: %v", p)
	}
}

// TestSystemKeyNonePartition: in a container with the system key (created
// non-partitioned), an absent header, [] and [{}] all address the none
// partition of items without _partitionKey, at the empty EPK; a query or
// feed scoped by [] reads only it, an unscoped one everything; the derived
// entries check clean.
func TestSystemKeyNonePartition(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	def := `{"id":"fixed","partitionKey":{"paths":["/_partitionKey"],"kind":"Hash","systemKey":true}}`
	if _, err := e.CreateContainer("db", []byte(def), Throughput{Manual: 10000}); err != nil {
		t.Fatal(err)
	}
	undefined := document.PartitionKey{{Kind: document.Undefined}}
	for _, w := range []struct {
		id string
		pk document.PartitionKey
	}{{"absent", nil}, {"empty", document.PartitionKey{}}, {"undefined", undefined}} {
		body := []byte(`{"id":"` + w.id + `"}`)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "fixed", Kind: Create, PK: w.pk, Body: body}); err != nil {
			t.Fatalf("create %s: %v", w.id, err)
		}
	}
	keyed := document.PartitionKey{{Kind: document.String, String: "p1"}}
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "fixed", Kind: Create, PK: keyed, Body: []byte(`{"id":"keyed","_partitionKey":"p1"}`)}); err != nil {
		t.Fatal(err)
	}
	for _, pk := range []document.PartitionKey{nil, {}, undefined} {
		if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "fixed", ID: "absent"}, pk, ""); err != nil {
			t.Errorf("read with %v: %v", pk, err)
		}
	}
	if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "fixed", ID: "keyed"}, nil, ""); code(err) != http.StatusNotFound {
		t.Errorf("read of a keyed item without a header: %v, want 404", err)
	}

	q := Query{Text: "SELECT * FROM c", EnableCrossPartition: true, MaxItems: -1}
	all := []string{"absent", "empty", "keyed", "undefined"}
	for _, tt := range []struct {
		name string
		pk   document.PartitionKey
		want []string
	}{
		{"unscoped", nil, all},
		{"none partition", document.PartitionKey{}, []string{"absent", "empty", "undefined"}},
		{"keyed", keyed, []string{"keyed"}},
	} {
		p, err := e.QueryItems(ctx, "db", "fixed", Scope{PK: tt.pk}, q)
		if err != nil {
			t.Fatalf("%s query: %v", tt.name, err)
		}
		if got := pageIDs(t, p.Items); !slices.Equal(got, tt.want) {
			t.Errorf("%s query = %v, want %v", tt.name, got, tt.want)
		}
		f, err := e.ReadFeed(ctx, "db", "fixed", Scope{PK: tt.pk}, -1, "")
		if err != nil {
			t.Fatalf("%s feed: %v", tt.name, err)
		}
		if got := pageIDs(t, f.Items); !slices.Equal(got, tt.want) {
			t.Errorf("%s feed = %v, want %v", tt.name, got, tt.want)
		}
		cf, err := e.ReadChanges(ctx, "db", "fixed", ChangeFeed{Scope: Scope{PK: tt.pk}, MaxItems: -1})
		if err != nil {
			t.Fatalf("%s change feed: %v", tt.name, err)
		}
		if got := pageIDs(t, cf.Items); !slices.Equal(got, tt.want) {
			t.Errorf("%s change feed = %v, want %v", tt.name, got, tt.want)
		}
	}

	// A batch and a stored procedure on the none partition.
	resp, err := e.ExecuteBatch(ctx, "db", "fixed", document.PartitionKey{}, []BatchOp{{Type: "Create", Body: []byte(`{"id":"batched"}`)}, {Type: "Create", PK: document.PartitionKey{}, Body: []byte(`{"id":"batched2"}`)}})
	if err != nil || !resp.OK {
		t.Fatalf("batch on the none partition: %+v, %v", resp, err)
	}
	if _, err := e.DeleteItem(ctx, ItemRef{DB: "db", Container: "fixed", ID: "empty"}, nil, "", TriggerSet{}); err != nil {
		t.Errorf("delete without a header: %v", err)
	}

	// The none partition sits at the start of the first range; splitting
	// and separating that range keeps it whole and readable.
	for i := range 40 {
		pk := document.PartitionKey{{Kind: document.String, String: fmt.Sprint("k", i)}}
		body := []byte(fmt.Sprintf(`{"id":"x","_partitionKey":"k%d"}`, i))
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "fixed", Kind: Create, PK: pk, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	kids, err := e.SplitRange(ctx, "db", "fixed", "0")
	if err != nil {
		t.Fatalf("split of the first range: %v", err)
	}
	if err := e.SeparateRange(ctx, "db", "fixed", kids[0].ID); err != nil {
		t.Fatalf("separate %s: %v", kids[0].ID, err)
	}
	p, err := e.QueryItems(ctx, "db", "fixed", Scope{PK: document.PartitionKey{}}, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := pageIDs(t, p.Items); !slices.Equal(got, []string{"absent", "batched", "batched2", "undefined"}) {
		t.Errorf("none partition after a split = %v", got)
	}
	if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "fixed", ID: "absent"}, nil, ""); err != nil {
		t.Errorf("read after a split: %v", err)
	}
	checkClean(t, e)
}

// TestUndefinedLowerLevels: in a hierarchical container, an item whose
// lower level is missing, {} or another object is stored under the
// Undefined component; a point read names it with {}, and a query or feed
// scoped by the leading prefix finds it.
func TestUndefinedLowerLevels(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	def := `{"id":"hier","partitionKey":{"paths":["/tenant","/user","/session"],"kind":"MultiHash","version":2}}`
	if _, err := e.CreateContainer("db", []byte(def), Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	str := func(s string) document.PKValue { return document.PKValue{Kind: document.String, String: s} }
	undef := document.PKValue{Kind: document.Undefined}
	items := []struct {
		body string
		pk   document.PartitionKey
	}{
		{`{"id":"full","tenant":"acme","user":"u1","session":"s1"}`, document.PartitionKey{str("acme"), str("u1"), str("s1")}},
		{`{"id":"nosession","tenant":"acme","user":"u1"}`, document.PartitionKey{str("acme"), str("u1"), undef}},
		{`{"id":"nouser","tenant":"acme"}`, document.PartitionKey{str("acme"), undef, undef}},
		{`{"id":"emptyuser","tenant":"acme","user":{},"session":"s1"}`, document.PartitionKey{str("acme"), undef, str("s1")}},
		{`{"id":"objectuser","tenant":"acme","user":{"a":1},"session":[1]}`, document.PartitionKey{str("acme"), undef, undef}},
		{`{"id":"other","tenant":"zeta"}`, document.PartitionKey{str("zeta"), undef, undef}},
	}
	for _, it := range items {
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "hier", Kind: Create, PK: it.pk, Body: []byte(it.body)}); err != nil {
			t.Fatalf("create %s: %v", it.body, err)
		}
	}
	for _, it := range items {
		var x struct{ ID string }
		_ = json.Unmarshal([]byte(it.body), &x)
		if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "hier", ID: x.ID}, it.pk, ""); err != nil {
			t.Errorf("read %s with %v: %v", x.ID, it.pk, err)
		}
	}
	q := Query{Text: "SELECT * FROM c", EnableCrossPartition: true, MaxItems: -1}
	for _, tt := range []struct {
		prefix document.PartitionKey
		want   []string
	}{
		{document.PartitionKey{str("acme")}, []string{"emptyuser", "full", "nosession", "nouser", "objectuser"}},
		{document.PartitionKey{str("acme"), undef}, []string{"emptyuser", "nouser", "objectuser"}},
		{document.PartitionKey{str("acme"), str("u1")}, []string{"full", "nosession"}},
	} {
		p, err := e.QueryItems(ctx, "db", "hier", Scope{PK: tt.prefix}, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := pageIDs(t, p.Items); !slices.Equal(got, tt.want) {
			t.Errorf("query with prefix %v = %v, want %v", tt.prefix, got, tt.want)
		}
		f, err := e.ReadFeed(ctx, "db", "hier", Scope{PK: tt.prefix}, -1, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := pageIDs(t, f.Items); !slices.Equal(got, tt.want) {
			t.Errorf("feed with prefix %v = %v, want %v", tt.prefix, got, tt.want)
		}
	}
	// The filter on the leading path alone routes to the prefix too.
	p, err := e.QueryItems(ctx, "db", "hier", Scope{}, Query{Text: "SELECT * FROM c WHERE c.tenant = 'acme'", EnableCrossPartition: true, MaxItems: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := pageIDs(t, p.Items); !slices.Equal(got, []string{"emptyuser", "full", "nosession", "nouser", "objectuser"}) {
		t.Errorf("query by tenant = %v", got)
	}
	checkClean(t, e)
}

// TestSystemKeyQueryWithoutHeader: a container created non-partitioned, in
// one physical partition, is queried without the cross-partition header by
// the clients of its API version (the Python SDK 3.1.1), and its whole
// query answered by the server, ORDER BY, DISTINCT, GROUP BY, OFFSET and
// aggregates included, with the header or without (they got 400: a Python
// SDK hunt). A partitioned
// container still needs the header, and so does a system-key container in
// several physical partitions.
func TestSystemKeyQueryWithoutHeader(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	def := `{"id":"fixed","partitionKey":{"paths":["/_partitionKey"],"kind":"Hash","systemKey":true}}`
	if _, err := e.CreateContainer("db", []byte(def), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	for i, pk := range []document.PartitionKey{nil, {{Kind: document.String, String: "p1"}}, {{Kind: document.String, String: "p2"}}} {
		body := fmt.Sprintf(`{"id":"i%d","n":%d}`, i, i%2)
		if pk != nil {
			body = fmt.Sprintf(`{"id":"i%d","n":%d,"_partitionKey":%q}`, i, i%2, pk[0].String)
		}
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "fixed", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ query, want string }{
		{"SELECT VALUE c.id FROM c", `["i0","i1","i2"]`},
		{"SELECT VALUE c.id FROM c ORDER BY c.id DESC", `["i2","i1","i0"]`},
		{"SELECT DISTINCT VALUE c.n FROM c ORDER BY c.n", `[0,1]`},
		{"SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.n", `[{"n":0,"k":2},{"n":1,"k":1}]`},
		{"SELECT VALUE c.id FROM c ORDER BY c.id OFFSET 1 LIMIT 1", `["i1"]`},
		{"SELECT VALUE COUNT(1) FROM c", `[3]`},
	} {
		for _, header := range []bool{false, true} {
			p, err := e.QueryItems(ctx, "db", "fixed", Scope{}, Query{Text: tt.query, MaxItems: -1, EnableCrossPartition: header})
			if err != nil {
				t.Errorf("%s (cross-partition header %v): %v", tt.query, header, err)
				continue
			}
			if got := "[" + string(bytes.Join(p.Items, []byte(","))) + "]"; got != tt.want {
				t.Errorf("%s (cross-partition header %v) = %s, want %s", tt.query, header, got, tt.want)
			}
		}
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"keyed","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.QueryItems(ctx, "db", "keyed", Scope{}, Query{Text: "SELECT * FROM c", MaxItems: -1}); code(err) != http.StatusBadRequest {
		t.Errorf("a partitioned container queried without the header: %v, want 400", err)
	}
}

// TestSystemKeyContainerIsOnePartition: a container without a partition key
// is one physical partition at any throughput it may have (at most 10,000
// RU/s, as Cosmos DB documents non-partitioned containers), so the SDKs of
// its API version, which send no cross-partition header, can query it; it
// started with two at 10,000 RU/s, and every plain query was refused (a
// Python SDK hunt). More throughput and shared throughput are refused with
// 400 naming why.
func TestSystemKeyContainerIsOnePartition(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	def := func(id string) []byte {
		return []byte(`{"id":"` + id + `","partitionKey":{"paths":["/_partitionKey"],"kind":"Hash","systemKey":true}}`)
	}
	if _, err := e.CreateContainer("db", def("fixed"), Throughput{Manual: 10000}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		body := fmt.Sprintf(`{"id":"i%d","_partitionKey":"p%d"}`, i, i)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "fixed", Kind: Create, PK: document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i)}}, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	ranges := func() int {
		rs, _, _, err := e.PKRanges("db", "fixed")
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}
	if n := ranges(); n != 1 {
		t.Fatalf("a container without a partition key at 10,000 RU/s has %d physical partitions, want 1", n)
	}
	p, err := e.QueryItems(ctx, "db", "fixed", Scope{}, Query{Text: "SELECT VALUE COUNT(1) FROM c", MaxItems: -1})
	if err != nil || len(p.Items) != 1 || string(p.Items[0]) != "40" {
		t.Errorf("COUNT without the cross-partition header = %v, %v; want [40]", p.Items, err)
	}
	for _, tp := range []Throughput{{Manual: 10100}, {AutoscaleMax: 20000}} {
		if _, err := e.CreateContainer("db", def(fmt.Sprint("wide", tp.Manual)), tp); code(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "without a partition key") {
			t.Errorf("create at %+v: %v, want 400 naming the limit of a container without a partition key", tp, err)
		}
	}
	c, err := e.cat.Container("db", "fixed")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReplaceOffer(c.OfferID, Throughput{Manual: 20000}, "", 0); code(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "without a partition key") {
		t.Errorf("offer raised to 20,000 RU/s: %v, want 400", err)
	}
	if _, err := e.ReplaceOffer(c.OfferID, Throughput{Manual: 4000}, "", 0); err != nil {
		t.Errorf("offer lowered to 4,000 RU/s: %v", err)
	}
	if n := ranges(); n != 1 {
		t.Errorf("after the offer's changes: %d physical partitions, want 1", n)
	}
	if _, err := e.CreateDatabase("shared", Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("shared", def("inshared"), Throughput{}); code(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "needs a partition key") {
		t.Errorf("a container without a partition key on shared throughput: %v, want 400", err)
	}
}
