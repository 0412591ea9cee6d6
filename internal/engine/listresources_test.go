package engine

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/partitadb/partita/internal/document"
)

// TestListResourcesResumesAfterLast: a metadata feed read in pages resumes
// after the last resource returned, by its place in creation order, so a
// resource deleted from a page already read skips nothing — the last one
// returned included (a review: the page after it skipped one) — and one
// created meanwhile comes at the end, once.
func TestListResourcesResumesAfterLast(t *testing.T) {
	e := testEngine(t)
	res := func(ids ...int) [][]byte {
		var out [][]byte
		for _, i := range ids {
			rid := document.EncodeRID(binary.BigEndian.AppendUint32(nil, uint32(i)))
			out = append(out, fmt.Appendf(nil, `{"id":"z%d","_rid":%q,"_self":"dbs/%s/","_etag":"\"%d\"","_ts":1}`, i, rid, rid, i))
		}
		return out
	}
	ids := func(p Page) []string {
		var out []string
		for _, it := range p.Items {
			out = append(out, string(it[7:9]))
		}
		return out
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	p, err := e.ListResources("dbs/", res(all...), 3, "")
	if err != nil || !slices.Equal(ids(p), []string{"z0", "z1", "z2"}) || p.Continuation == "" {
		t.Fatalf("first page: %v %q %v", ids(p), p.Continuation, err)
	}
	for _, tc := range []struct {
		name string
		now  []int
		want []string
	}{
		{"a deletion before the position", []int{1, 2, 3, 4, 5, 6, 7, 8}, []string{"z3", "z4", "z5"}},
		{"the last returned deleted", []int{0, 1, 3, 4, 5, 6, 7, 8}, []string{"z3", "z4", "z5"}},
		{"the page read deleted whole", []int{3, 4, 5, 6, 7, 8}, []string{"z3", "z4", "z5"}},
		{"the next deleted", []int{0, 1, 2, 4, 5, 6, 7, 8}, []string{"z4", "z5", "z6"}},
		{"listed out of order", []int{8, 7, 6, 5, 4, 3, 2, 1, 0}, []string{"z3", "z4", "z5"}},
	} {
		next, err := e.ListResources("dbs/", res(tc.now...), 3, p.Continuation)
		if err != nil || !slices.Equal(ids(next), tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, ids(next), err, tc.want)
		}
	}
	// Created after the first page: at the end, read once.
	var seen []string
	tok := p.Continuation
	for now := append(slices.Clone(all), 9); tok != ""; {
		next, err := e.ListResources("dbs/", res(now...), 3, tok)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ids(next)...)
		tok = next.Continuation
	}
	if want := []string{"z3", "z4", "z5", "z6", "z7", "z8", "z9"}; !slices.Equal(seen, want) {
		t.Errorf("the rest of the feed with z9 created: %v, want %v", seen, want)
	}
	for _, bad := range []string{"AAAAAAAAAAM", "!", "aw"} { // a position (the old form), not base64, a tag alone
		if _, err := e.ListResources("dbs/", res(all...), 3, bad); err == nil {
			t.Errorf("continuation %q accepted", bad)
		}
	}
	// Another feed's continuation (a database's containers) is refused: a
	// /dbs token there listed nothing and ended the feed (a protocol hunt).
	if _, err := e.ListResources("colls/AAAAAQ==", res(all...), 3, p.Continuation); code(err) != 400 {
		t.Errorf("the database feed's continuation on a container feed: %v, want 400", err)
	}
	q := Query{Text: "SELECT * FROM r", MaxItems: 3}
	first, err := e.QueryResources(t.Context(), "dbs/", res(all...), q)
	if err != nil || first.Continuation == "" {
		t.Fatalf("query, first page: %v %q", err, first.Continuation)
	}
	q.Continuation = first.Continuation
	if _, err := e.QueryResources(t.Context(), "colls/AAAAAQ==", res(all...), q); code(err) != 400 {
		t.Errorf("the database query's continuation in a container feed: %v, want 400", err)
	}
	if _, err := e.QueryResources(t.Context(), "dbs/", res(all...), q); err != nil {
		t.Errorf("the query's continuation in its own feed: %v", err)
	}
}

// TestListOffersInCreationOrder: offers, whose _rid is "o" and their
// sequence number in hexadecimal, list in creation order ("o9" before "oa"
// before "o10", and "o1a2" — valid base64 — among them), in pages too.
func TestListOffersInCreationOrder(t *testing.T) {
	e := testEngine(t)
	seqs := []uint64{0x10, 0x9, 0x1a2, 0xa, 0xfff, 0x1000}
	var offers [][]byte
	for _, n := range seqs {
		id := fmt.Sprintf("o%x", n)
		offers = append(offers, fmt.Appendf(nil, `{"id":%q,"_rid":%q,"_self":"offers/%s/","_etag":"\"1\"","_ts":1}`, id, id, id))
	}
	var got []string
	tok := ""
	for {
		p, err := e.ListResources("offers/", offers, 2, tok)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			sp, _ := document.Props(it)
			got = append(got, sp.RID)
		}
		if tok = p.Continuation; tok == "" {
			break
		}
	}
	if want := []string{"o9", "oa", "o10", "o1a2", "offf", "o1000"}; !slices.Equal(got, want) {
		t.Errorf("offers listed %v, want %v", got, want)
	}
}
