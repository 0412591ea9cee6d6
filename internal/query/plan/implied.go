package plan

import (
	"slices"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/parse"
)

// Implied splits the WHERE clause of a query over one logical partition
// into the top-level conjuncts the scope makes true for every document
// there, and the filter left to evaluate (nil when nothing is left).
//
// A conjunct is implied when it is `alias.path = v` (either way round) on a
// partition key path, v a literal or parameter equal to the scope's key
// component for that path (document.PKValue.Equal), and that component a
// defined scalar: a logical partition holds exactly the documents whose
// key encodes as its key does (strings byte for byte, numbers as float64,
// -0 as 0), and each of them has that value there, so the comparison is
// true on every one. A component that is undefined (documents without the
// path) implies nothing: `c.pk = v` is never true there. The rest keeps
// its conjuncts in their order, so its value on every document is the
// whole filter's (true AND x is x).
//
// With no Key, not Logical, or a FROM that is not a plain alias, nothing is
// implied and rest is q's WHERE.
func Implied(q *parse.Query, params map[string][]byte, sc Scope) (rest parse.Expr, implied []parse.Expr) {
	if q == nil || q.Where == nil || !sc.Logical || len(sc.Key) == 0 || len(sc.Key) != len(sc.KeyPaths) || !plainFrom(q) {
		return whereOf(q), nil
	}
	segs := make([][]string, len(sc.KeyPaths))
	for i, p := range sc.KeyPaths {
		if segs[i] = splitPath(p); segs[i] == nil {
			return q.Where, nil
		}
	}
	cs := conjuncts(q.Where, nil)
	keep := make([]bool, len(cs))
	for i, c := range cs {
		keep[i] = !impliedBy(c, q.From.Alias, params, segs, sc.Key)
		if !keep[i] {
			implied = append(implied, c)
		}
	}
	if len(implied) == 0 {
		return q.Where, nil
	}
	for i, c := range cs {
		switch {
		case !keep[i]:
		case rest == nil:
			rest = c
		default:
			rest = &parse.Binary{Position: c.Pos(), Op: parse.OpAnd, X: rest, Y: c}
		}
	}
	return rest, implied
}

func whereOf(q *parse.Query) parse.Expr {
	if q == nil {
		return nil
	}
	return q.Where
}

// impliedBy reports whether c is `alias.path = v` with path one of segs and
// v equal to key's defined scalar component there.
func impliedBy(c parse.Expr, alias string, params map[string][]byte, segs [][]string, key document.PartitionKey) bool {
	b, ok := c.(*parse.Binary)
	if !ok || b.Op != parse.OpEq {
		return false
	}
	for _, side := range [2][2]parse.Expr{{b.X, b.Y}, {b.Y, b.X}} {
		path, ok := propertyPath(side[0], alias)
		if !ok {
			continue
		}
		i := slices.IndexFunc(segs, func(sg []string) bool { return slices.Equal(sg, path) })
		if i < 0 {
			continue
		}
		switch key[i].Kind {
		case document.Null, document.Bool, document.Number, document.String:
		default:
			return false
		}
		if v, ok := value(side[1], params); ok && v.Equal(key[i]) {
			return true
		}
	}
	return false
}
