// Package plan decides where a query runs. Today it finds the logical
// partition a query's filter pins, so that a query naming its partition key
// in WHERE is routed to one partition, as Cosmos DB's gateway routes it,
// instead of fanning out. Index selection and the cross-partition merge
// strategy (issue #3) will live here too.
package plan

import (
	"encoding/json"
	"strings"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/parse"
)

// PartitionKey returns the partition key value the query's WHERE clause
// pins, and whether it pins one: for every path of the partition key
// definition (paths, e.g. ["/tenant", "/user"]) a top-level AND conjunct
// `alias.path = value`, where value is a string, number, boolean or null
// literal, or a parameter holding one. Queries over a sub-document
// (`FROM x IN c.list`) or a subquery are never pinned, nor are filters that
// pin one path to two different values.
func PartitionKey(q *parse.Query, paths []string, params map[string][]byte) (document.PartitionKey, bool) {
	if q == nil || q.From == nil || q.From.In || q.From.Subquery != nil || q.Where == nil || len(paths) == 0 {
		return nil, false
	}
	if _, ok := q.From.Expr.(*parse.Ident); !ok {
		return nil, false
	}
	segs := make([][]string, len(paths))
	for i, p := range paths {
		segs[i] = splitPath(p)
		if segs[i] == nil {
			return nil, false
		}
	}
	pk := make(document.PartitionKey, len(paths))
	found := make([]bool, len(paths))
	for _, c := range conjuncts(q.Where, nil) {
		b, ok := c.(*parse.Binary)
		if !ok || b.Op != parse.OpEq {
			continue
		}
		for _, side := range [2][2]parse.Expr{{b.X, b.Y}, {b.Y, b.X}} {
			path, ok := propertyPath(side[0], q.From.Alias)
			if !ok {
				continue
			}
			v, ok := value(side[1], params)
			if !ok {
				continue
			}
			for i, s := range segs {
				if !equalSegs(s, path) {
					continue
				}
				if found[i] && !pk[i].Equal(v) {
					return nil, false // c.pk = 'a' AND c.pk = 'b' matches nothing
				}
				pk[i], found[i] = v, true
			}
		}
	}
	for _, f := range found {
		if !f {
			return nil, false
		}
	}
	return pk, true
}

// PartitionKeys returns the partition keys a query's WHERE clause confines
// it to when it does not pin one full key (PartitionKey): the leading paths
// of a hierarchical key pinned by equality give one prefix key; a
// single-path key with a top-level conjunct `alias.path IN (v, ...)` of
// scalar literals or parameters gives those keys. The query still spans
// logical partitions, but only the physical partitions owning these keys
// hold matches. It returns false when the filter confines it to nothing
// narrower than the container.
func PartitionKeys(q *parse.Query, paths []string, params map[string][]byte) ([]document.PartitionKey, bool) {
	if q == nil || q.From == nil || q.From.In || q.From.Subquery != nil || q.Where == nil || len(paths) == 0 {
		return nil, false
	}
	if _, ok := q.From.Expr.(*parse.Ident); !ok {
		return nil, false
	}
	segs := make([][]string, len(paths))
	for i, p := range paths {
		if segs[i] = splitPath(p); segs[i] == nil {
			return nil, false
		}
	}
	pinned := make(document.PartitionKey, len(paths))
	found := make([]bool, len(paths))
	var in []document.PartitionKey
	for _, c := range conjuncts(q.Where, nil) {
		switch x := c.(type) {
		case *parse.Binary:
			if x.Op != parse.OpEq {
				continue
			}
			for _, side := range [2][2]parse.Expr{{x.X, x.Y}, {x.Y, x.X}} {
				path, ok := propertyPath(side[0], q.From.Alias)
				if !ok {
					continue
				}
				v, ok := value(side[1], params)
				if !ok {
					continue
				}
				for i, sg := range segs {
					if equalSegs(sg, path) {
						if found[i] && !pinned[i].Equal(v) {
							return nil, false // matches nothing: leave it to the filter
						}
						pinned[i], found[i] = v, true
					}
				}
			}
		case *parse.In:
			path, ok := propertyPath(x.X, q.From.Alias)
			if x.Not || !ok || len(segs) != 1 || !equalSegs(segs[0], path) || in != nil {
				continue
			}
			keys := make([]document.PartitionKey, 0, len(x.List))
			for _, e := range x.List {
				v, ok := value(e, params)
				if !ok {
					keys = nil
					break
				}
				keys = append(keys, document.PartitionKey{v})
			}
			in = keys
		}
	}
	k := 0
	for k < len(found) && found[k] {
		k++
	}
	switch {
	case k > 0:
		return []document.PartitionKey{pinned[:k]}, true
	case len(in) > 0:
		return in, true
	}
	return nil, false
}

// conjuncts flattens the top-level ANDs of e.
func conjuncts(e parse.Expr, out []parse.Expr) []parse.Expr {
	if b, ok := e.(*parse.Binary); ok && b.Op == parse.OpAnd {
		return conjuncts(b.Y, conjuncts(b.X, out))
	}
	return append(out, e)
}

// propertyPath returns the property names of a path rooted at alias:
// c.a.b or c["a"]["b"] gives [a b].
func propertyPath(e parse.Expr, alias string) ([]string, bool) {
	var rev []string
	for {
		switch x := e.(type) {
		case *parse.Property:
			rev = append(rev, x.Name)
			e = x.X
		case *parse.Index:
			lit, ok := x.Index.(*parse.Literal)
			if !ok || lit.Kind != parse.LitString {
				return nil, false
			}
			rev = append(rev, lit.Str)
			e = x.X
		case *parse.Ident:
			if x.Name != alias || len(rev) == 0 {
				return nil, false
			}
			out := make([]string, len(rev))
			for i, s := range rev {
				out[len(rev)-1-i] = s
			}
			return out, true
		default:
			return nil, false
		}
	}
}

// value returns the partition key component a literal or parameter holds.
func value(e parse.Expr, params map[string][]byte) (document.PKValue, bool) {
	switch x := e.(type) {
	case *parse.Literal:
		switch x.Kind {
		case parse.LitString:
			return document.PKValue{Kind: document.String, String: x.Str}, true
		case parse.LitNumber:
			return document.PKValue{Kind: document.Number, Number: x.Num}, true
		case parse.LitBool:
			return document.PKValue{Kind: document.Bool, Bool: x.Bool}, true
		case parse.LitNull:
			return document.PKValue{Kind: document.Null}, true
		}
	case *parse.Unary:
		if lit, ok := x.X.(*parse.Literal); ok && x.Op == parse.OpNeg && lit.Kind == parse.LitNumber {
			return document.PKValue{Kind: document.Number, Number: -lit.Num}, true
		}
	case *parse.Param:
		raw, ok := params[x.Name]
		if !ok {
			return document.PKValue{}, false
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return document.PKValue{}, false
		}
		switch t := v.(type) {
		case string:
			return document.PKValue{Kind: document.String, String: t}, true
		case float64:
			return document.PKValue{Kind: document.Number, Number: t}, true
		case bool:
			return document.PKValue{Kind: document.Bool, Bool: t}, true
		case nil:
			return document.PKValue{Kind: document.Null}, true
		}
	}
	return document.PKValue{}, false
}

// splitPath splits a partition key path, "/a/b" or `/"a b"/c`, into names.
func splitPath(p string) []string {
	if !strings.HasPrefix(p, "/") {
		return nil
	}
	var out []string
	for _, s := range strings.Split(p[1:], "/") {
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			s = s[1 : len(s)-1]
		}
		if s == "" {
			return nil
		}
		out = append(out, s)
	}
	return out
}

func equalSegs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
