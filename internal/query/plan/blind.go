package plan

import (
	"math"
	"slices"
	"strconv"

	"github.com/partitadb/partita/internal/index"
	"github.com/partitadb/partita/internal/query/parse"
)

// Conjuncts returns the top-level conjuncts of a WHERE clause (nil: none),
// in their order.
func Conjuncts(where parse.Expr) []parse.Expr { return conjuncts(where, nil) }

// blind reports whether p's lookups decide q's whole filter and nothing
// else of the query reads a document, so that the engine need not load
// the documents the lookups find (Physical.Blind): COUNT(1) … WHERE
// c.cat = 'a' counts the lookup's entries.
//
// Every top-level conjunct must be implied by the scope (Implied) or be
// the conjunct of p's Lookup or of one of its Intersect lookups, each
// exact (exactLookup: it finds exactly the documents its conjunct is true
// of); the query must read documents directly (FROM c), with no JOIN,
// GROUP BY or ORDER BY, and its projection must not name the document
// (no identifier, subquery or user-defined function in it: COUNT(1),
// VALUE 1, SUM(2)). No document may be hidden from the query (a time to
// live, a partition key delete under way: Scope.Hides), since only a
// loaded document tells whether it is.
func blind(in Input, p Physical, hits []*IndexScan, implied []parse.Expr) bool {
	q := in.Query
	switch p.Access {
	case IndexPoint, IndexMerge, IndexGather, IndexIntersect:
	default:
		return false
	}
	if in.Scope.Hides || p.Lookup == nil || p.KeyOrder || q.Where == nil || !plainFrom(q) ||
		len(q.Joins) > 0 || len(q.GroupBy) > 0 || len(q.OrderBy) > 0 || q.Select.Star {
		return false
	}
	cs := conjuncts(q.Where, nil)
	if len(hits) != len(cs) {
		return false
	}
	used := append([]*IndexScan{p.Lookup}, p.Intersect...)
	for i, c := range cs {
		if slices.Contains(implied, c) {
			continue
		}
		if hits[i] == nil || !direct(c) || !slices.Contains(used, hits[i]) || !exactLookup(hits[i]) {
			return false
		}
	}
	exprs := make([]parse.Expr, 0, 1+len(q.Select.Items))
	if q.Select.Value != nil {
		exprs = append(exprs, q.Select.Value)
	}
	for _, it := range q.Select.Items {
		exprs = append(exprs, it.Expr)
	}
	reads := false
	for _, e := range exprs {
		parse.Inspect(e, func(x parse.Expr) bool {
			switch x := x.(type) {
			case *parse.Ident, *parse.Exists, *parse.ArrayQuery, *parse.Subquery:
				reads = true
			case *parse.Call:
				reads = reads || x.UDF
			}
			return !reads
		})
	}
	return !reads
}

// direct reports whether c is one comparison, BETWEEN or IN, whose lookup
// is its predicate itself; an OR's lookup (unionLookup, spanUnion) finds a
// superset of what its disjuncts match.
func direct(c parse.Expr) bool {
	switch x := c.(type) {
	case *parse.Binary:
		switch x.Op {
		case parse.OpEq, parse.OpLt, parse.OpLe, parse.OpGt, parse.OpGe:
			return true
		}
	case *parse.Between:
		return !x.Not
	case *parse.In:
		return !x.Not
	}
	return false
}

// exactLookup reports whether s finds exactly the documents its conjunct
// is true of, no candidate the filter would refuse: an equality or IN of
// scalars, or a range of numbers, on a path of properties (no array
// wildcard, no segment that could be an array position: a property "0"
// shares its terms with position 0). Strings longer than a term holds
// (bounded terms, whose buckets hold candidates) and numbers past 2⁵³
// (whose float terms may join integers the filter tells apart) are not
// exact.
func exactLookup(s *IndexScan) bool {
	if s.Composite != nil || s.Counted || len(s.Path) == 0 {
		return false
	}
	for _, seg := range s.Path {
		if seg == "[]" {
			return false
		}
		if _, err := strconv.ParseUint(seg, 10, 64); err == nil {
			return false
		}
	}
	switch s.Kind {
	case "equality", "in":
		if len(s.Values) == 0 {
			return false
		}
		for _, v := range s.Values {
			if !exactValue(v) {
				return false
			}
		}
		return true
	case "range":
		return (s.Lo != nil || s.Hi != nil) &&
			(s.Lo == nil || s.Lo.V.Kind == index.Number && exactValue(s.Lo.V)) &&
			(s.Hi == nil || s.Hi.V.Kind == index.Number && exactValue(s.Hi.V))
	}
	return false
}

// exactValue reports whether the term of v holds v whole and tells it
// apart from every value the filter tells it apart from.
func exactValue(v index.Value) bool {
	switch v.Kind {
	case index.Null, index.Bool:
		return true
	case index.Number:
		return math.Abs(v.Num) < 1<<53
	case index.String:
		return !v.Bounded && len(v.Str) <= index.StringTermBytes
	}
	return false
}
