package plan

import (
	"testing"

	"github.com/partitadb/partita/internal/query/parse"
)

// TestCheckOrderByPaths: an ORDER BY item must name a place in the
// documents, Cosmos DB's error 2206 otherwise: a property path of any
// alias, with string names and non-negative integer positions, literal or
// given by a parameter; not a function, an operator, a constant or a
// parameter alone, nor an index no property or position can be.
func TestCheckOrderByPaths(t *testing.T) {
	for _, tc := range []struct {
		query string
		ok    bool
	}{
		{"SELECT * FROM c ORDER BY c.n", true},
		{`SELECT * FROM c ORDER BY c["a b"].x DESC, c.arr[0]`, true},
		{"SELECT * FROM c ORDER BY c[@p]", true},
		{"SELECT * FROM root r ORDER BY r.n", true},
		{"SELECT t FROM c JOIN t IN c.tags ORDER BY t", true},
		{"SELECT * FROM c ORDER BY c", true},
		{"SELECT * FROM c ORDER BY LENGTH(c.s)", false},
		{"SELECT * FROM c ORDER BY -c.n", false},
		{"SELECT * FROM c ORDER BY c.n + 0", false},
		{"SELECT * FROM c ORDER BY 1", false},
		{"SELECT * FROM c ORDER BY @p", false},
		{"SELECT * FROM c ORDER BY c[true]", false},
		{"SELECT * FROM c ORDER BY c.arr[1.5]", false},
		{"SELECT * FROM c ORDER BY c.arr[-1]", false},
		{"SELECT * FROM c ORDER BY c.n, LOWER(c.s)", false},
	} {
		q, err := parse.Parse(tc.query)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if err := CheckOrderByPaths(q); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want accepted %v", tc.query, err, tc.ok)
		}
	}
}
