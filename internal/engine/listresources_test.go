package engine

import (
	"fmt"
	"slices"
	"testing"
)

// TestListResourcesResumesAfterLast: a metadata feed read in pages resumes
// after the last resource returned wherever it stands now, so a resource
// deleted from a page already read skips nothing (a review: a database
// deleted after the first page made the next page skip one) and one
// created before the position repeats nothing; with the last one gone, it
// resumes at its position.
func TestListResourcesResumesAfterLast(t *testing.T) {
	e := testEngine(t)
	res := func(ids ...int) [][]byte {
		var out [][]byte
		for _, i := range ids {
			out = append(out, fmt.Appendf(nil, `{"id":"z%d","_rid":"rid%d","_self":"dbs/rid%d/","_etag":"\"%d\"","_ts":1}`, i, i, i, i))
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
	p, err := e.ListResources(res(all...), 3, "")
	if err != nil || !slices.Equal(ids(p), []string{"z0", "z1", "z2"}) || p.Continuation == "" {
		t.Fatalf("first page: %v %q %v", ids(p), p.Continuation, err)
	}
	// z0 deleted: the next page is z3, z4, z5, not z4, z5, z6.
	next, err := e.ListResources(res(1, 2, 3, 4, 5, 6, 7, 8), 3, p.Continuation)
	if err != nil || !slices.Equal(ids(next), []string{"z3", "z4", "z5"}) {
		t.Errorf("after a deletion before the position: %v %v, want z3 z4 z5", ids(next), err)
	}
	// z2, the last returned, deleted too: resume at its position.
	next, err = e.ListResources(res(0, 1, 3, 4, 5, 6, 7, 8), 3, p.Continuation)
	if err != nil || !slices.Equal(ids(next), []string{"z4", "z5", "z6"}) && !slices.Equal(ids(next), []string{"z3", "z4", "z5"}) {
		t.Errorf("with the last returned gone: %v %v", ids(next), err)
	}
	// A token of the old form (a position alone) still reads.
	if _, err := e.ListResources(res(all...), 3, "AAAAAAAAAAM"); err != nil {
		t.Errorf("a position-only token: %v", err)
	}
}
