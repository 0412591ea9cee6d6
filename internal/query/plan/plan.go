// Package plan decides where and how a query runs. It finds the logical
// partition a query's filter pins, so that a query naming its partition key
// in WHERE is routed to one partition, as Cosmos DB's gateway routes it,
// instead of fanning out (PartitionKey, PartitionKeys); it builds the
// gateway's query plan that SDKs run across partitions (Build); and Choose
// turns a parsed query, its parameters, the indexing policy, the scope and
// its statistics into the physical plan the engine executes (Physical:
// access path, executor, continuation kind; docs/query-plan.md), and
// Implied finds the filter's conjuncts that one logical partition's key
// makes true, which the engine leaves out of what it evaluates. Everything
// here is pure: no I/O, no clock.
package plan

import (
	"bytes"
	"encoding/json"
	"slices"

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
	f, ok := keyFilter(q, paths, params)
	if !ok || slices.Contains(f.found, false) {
		return nil, false
	}
	return f.pinned, true
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
	f, ok := keyFilter(q, paths, params)
	if !ok {
		return nil, false
	}
	return f.confined()
}

// Routing is PartitionKey and PartitionKeys from one reading of the WHERE
// clause, as the engine routes a query: the key the query pins (nil when
// it pins none), or else the keys it confines it to (nil when none).
func Routing(q *parse.Query, paths []string, params map[string][]byte) (pinned document.PartitionKey, keys []document.PartitionKey) {
	f, ok := keyFilter(q, paths, params)
	switch {
	case !ok:
		return nil, nil
	case !slices.Contains(f.found, false):
		return f.pinned, nil
	}
	keys, _ = f.confined()
	return nil, keys
}

// confined returns the keys f confines a query to when it pins no full key:
// the prefix of the leading pinned paths, or a single path's IN keys.
func (f keyConjuncts) confined() ([]document.PartitionKey, bool) {
	k := 0
	for k < len(f.found) && f.found[k] {
		k++
	}
	switch {
	case k > 0:
		return []document.PartitionKey{f.pinned[:k]}, true
	case len(f.in) > 0:
		return f.in, true
	}
	return nil, false
}

// keyConjuncts is what a WHERE clause says about the partition key paths.
type keyConjuncts struct {
	pinned document.PartitionKey   // pinned[i] is path i's value where found[i]
	found  []bool                  // path i is pinned by `alias.path = v`
	in     []document.PartitionKey // a single-path key's `alias.path IN (v, ...)` keys
}

// keyFilter reads the top-level AND conjuncts of q's WHERE that compare a
// partition key path of the FROM alias with scalar literals or parameters.
// It returns false for queries it cannot reason about (FROM x IN ..., a
// subquery, no WHERE) and for filters that pin a path to two values (they
// match nothing; the filter itself will say so).
func keyFilter(q *parse.Query, paths []string, params map[string][]byte) (keyConjuncts, bool) {
	if q == nil || q.From == nil || q.From.In || q.From.Subquery != nil || q.Where == nil || len(paths) == 0 {
		return keyConjuncts{}, false
	}
	if _, ok := q.From.Expr.(*parse.Ident); !ok {
		return keyConjuncts{}, false
	}
	segs := make([][]string, len(paths))
	for i, p := range paths {
		if segs[i] = splitPath(p); segs[i] == nil {
			return keyConjuncts{}, false
		}
	}
	f := keyConjuncts{pinned: make(document.PartitionKey, len(paths)), found: make([]bool, len(paths))}
	for _, c := range conjuncts(q.Where, nil) {
		switch x := c.(type) {
		case *parse.Binary:
			if x.Op != parse.OpEq {
				continue
			}
			for _, side := range [2][2]parse.Expr{{x.X, x.Y}, {x.Y, x.X}} {
				path, ok := propertyPath(side[0], q.From.Alias)
				if !ok || !slices.ContainsFunc(segs, func(sg []string) bool { return slices.Equal(sg, path) }) {
					continue // decode a value only for a key path
				}
				v, ok := value(side[1], params)
				if !ok {
					continue
				}
				for i, sg := range segs {
					if !slices.Equal(sg, path) {
						continue
					}
					if f.found[i] && !f.pinned[i].Equal(v) {
						return keyConjuncts{}, false // c.pk = 'a' AND c.pk = 'b' matches nothing
					}
					f.pinned[i], f.found[i] = v, true
				}
			}
		case *parse.In:
			path, ok := propertyPath(x.X, q.From.Alias)
			if x.Not || !ok || len(segs) != 1 || !slices.Equal(segs[0], path) || f.in != nil {
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
			f.in = keys
		}
	}
	return f, true
}

// conjuncts flattens the top-level ANDs of e.
func conjuncts(e parse.Expr, out []parse.Expr) []parse.Expr {
	if b, ok := e.(*parse.Binary); ok && b.Op == parse.OpAnd {
		return conjuncts(b.Y, conjuncts(b.X, out))
	}
	return append(out, e)
}

// propertyPath returns the property names of a path rooted at alias:
// c.a.b or c["a"]["b"] gives [a b]. Array positions are not names.
func propertyPath(e parse.Expr, alias string) ([]string, bool) {
	return walkPath(e, alias, false)
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
		if b := bytes.TrimLeft(raw, " \t\r\n"); len(b) > 0 && (b[0] == '[' || b[0] == '{') {
			// Not a key component, and not worth decoding: an array of
			// millions of elements is a few megabytes of text.
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
	segs, err := document.PKPathSegments(p)
	if err != nil {
		return nil
	}
	return segs
}
