package plan

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/partitadb/partita/internal/index"
	"github.com/partitadb/partita/internal/query/parse"
)

// IndexScan is an index lookup that finds a superset of the documents a
// query's filter can match: every such document has an index entry in one
// of Spans (sorted, not overlapping). The filter must still be evaluated on
// what the scan finds.
type IndexScan struct {
	// Path is the property path the spans are on.
	Path []string
	// Spans are term spans of that path (index.Eq, Range, In, Prefix).
	Spans []index.Span
	// Kind says what the predicate was: "equality" (or "contains", an
	// ARRAY_CONTAINS, read alike), "in", "prefix", "range" or "match" (a
	// string test no span narrows, Match), best first; "path" for an
	// ordered scan of a whole path.
	Kind string
	// Pred is the predicate, printed: "n >= 500", "cat IN (\"a\", \"b\")".
	Pred string
	// Counted: a "path" scan that finds every document only if every
	// document of the scope has a scalar on the path, which the engine
	// counts (Physical.Cover).
	Counted bool
	// Values are the literals of an "equality", "in" or "prefix" lookup
	// (the prefix's string), and Lo and Hi the bounds of a "range" (either
	// nil for none): a composite index led by the path narrows by them too.
	Values []index.Value
	Lo, Hi *index.Bound
	// Match is a "match" lookup's test of each term of its spans (every
	// string of the path): the entries of the terms it refuses are not
	// read further.
	Match *Match
	// Composite, when not nil, makes this a "composite" scan: of the
	// entries of a composite index (index.CompositeSpan), which serves an
	// ORDER BY on several paths. Path is then nil.
	Composite *CompositeScan
}

// CompositeScan names the composite index a "composite" IndexScan reads.
type CompositeScan struct {
	// Number is the index's position in the policy's compositeIndexes.
	Number int
	// Paths are its paths, and Desc their directions as declared.
	Paths [][]string
	Desc  []bool
}

// Target names what the scan reads: "/n", or "composite index 0 (/a, /b
// DESC)".
func (s *IndexScan) Target() string {
	if c := s.Composite; c != nil {
		var b strings.Builder
		fmt.Fprintf(&b, "composite index %d (", c.Number)
		for i, p := range c.Paths {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("/" + strings.Join(p, "/"))
			if c.Desc[i] {
				b.WriteString(" DESC")
			}
		}
		b.WriteString(")")
		return b.String()
	}
	return "/" + strings.Join(s.Path, "/")
}

// Point reports whether the scan reads a single term: its entries then come
// in sequence-number order.
func (s *IndexScan) Point() bool { return s.Kind == "equality" || s.Kind == "contains" }

// lookup returns the index lookup for one conjunct, or nil.
func lookup(e parse.Expr, r roots, params map[string][]byte) *IndexScan {
	switch x := e.(type) {
	case *parse.Binary:
		if x.Op == parse.OpOr {
			return unionLookup(x, r, params)
		}
		op := x.Op
		path, ok := r.path(x.X)
		v, vok := scalar(x.Y, params)
		if !ok || !vok {
			// v op path: mirror the comparison.
			if path, ok = r.path(x.Y); !ok {
				return nil
			}
			if v, vok = scalar(x.X, params); !vok {
				return nil
			}
			op = mirror(op)
		}
		pred := predPath(path) + " " + opText[op] + " " + valueText(v)
		switch op {
		case parse.OpEq:
			return &IndexScan{Path: path, Spans: []index.Span{index.Eq(path, v)}, Kind: "equality", Pred: pred, Values: []index.Value{v}}
		case parse.OpLt:
			return rangeScan(path, nil, &index.Bound{V: v}, pred)
		case parse.OpLe:
			return rangeScan(path, nil, &index.Bound{V: v, Inclusive: true}, pred)
		case parse.OpGt:
			return rangeScan(path, &index.Bound{V: v}, nil, pred)
		case parse.OpGe:
			return rangeScan(path, &index.Bound{V: v, Inclusive: true}, nil, pred)
		}
	case *parse.Between:
		path, ok := r.path(x.X)
		lo, lok := scalar(x.Lo, params)
		hi, hok := scalar(x.Hi, params)
		if x.Not || !ok || !lok || !hok {
			return nil
		}
		return rangeScan(path, &index.Bound{V: lo, Inclusive: true}, &index.Bound{V: hi, Inclusive: true},
			predPath(path)+" BETWEEN "+valueText(lo)+" AND "+valueText(hi))
	case *parse.In:
		path, ok := r.path(x.X)
		if x.Not || !ok {
			return nil
		}
		vs := make([]index.Value, 0, len(x.List))
		for _, item := range x.List {
			v, ok := scalar(item, params)
			if !ok {
				return nil
			}
			vs = append(vs, v)
		}
		return &IndexScan{Path: path, Spans: index.In(path, vs), Kind: "in", Pred: inText(path, vs), Values: vs}
	case *parse.Call:
		if !x.UDF && strings.EqualFold(x.Name, "ARRAY_CONTAINS") {
			return containsLookup(x, r, params)
		}
		if x.UDF || len(x.Args) < 2 || len(x.Args) > 3 {
			return nil
		}
		name := strings.ToUpper(x.Name)
		switch name {
		case "STARTSWITH", "ENDSWITH", "CONTAINS", "STRINGEQUALS":
		default:
			return nil
		}
		path, ok := r.path(x.Args[0])
		v, vok := scalar(x.Args[1], params)
		if !ok || !vok || v.Kind != index.String {
			return nil
		}
		fold := false
		if len(x.Args) == 3 {
			ci, ok := scalar(x.Args[2], params)
			if !ok || ci.Kind != index.Bool {
				return nil
			}
			fold = ci.Bool
		}
		pred := name + "(" + predPath(path) + ", " + valueText(v)
		if fold {
			pred += ", true"
		}
		pred += ")"
		switch {
		case name == "STARTSWITH" && !fold:
			return &IndexScan{Path: path, Spans: []index.Span{index.Prefix(path, v.Str)}, Kind: "prefix", Pred: pred, Values: []index.Value{v}}
		case name == "STRINGEQUALS" && !fold:
			return &IndexScan{Path: path, Spans: []index.Span{index.Eq(path, v)}, Kind: "equality", Pred: pred, Values: []index.Value{v}}
		}
		m := &Match{Func: name, Arg: v.Str, Fold: fold}
		if fold {
			m.Arg = strings.ToLower(v.Str)
		}
		return &IndexScan{Path: path, Spans: []index.Span{index.Prefix(path, "")}, Kind: "match", Pred: pred, Match: m}
	}
	return nil
}

// Match is the test of a "match" lookup (CONTAINS, ENDSWITH, and
// case-insensitive STARTSWITH and STRINGEQUALS of a path and a string):
// no span holds just the strings it is true of, so the lookup reads every
// string term of the path and keeps the entries of those it may be true
// of (Candidate), without loading their documents.
type Match struct {
	Func string // CONTAINS, ENDSWITH, STARTSWITH or STRINGEQUALS
	Arg  string // the string, lowercased when Fold
	Fold bool   // case-insensitive (the third argument true)
}

// Candidate reports whether the test may be true of a document whose
// string at the path has the term value v (index.TermValue): as the
// query's function evaluates it (lowercasing both strings when
// case-insensitive), and always for a bounded term, which holds only the
// string's first bytes.
func (m *Match) Candidate(v index.Value) bool {
	if v.Kind != index.String {
		return false
	}
	if v.Bounded {
		return true
	}
	s := v.Str
	if m.Fold {
		s = strings.ToLower(s)
	}
	switch m.Func {
	case "CONTAINS":
		return strings.Contains(s, m.Arg)
	case "ENDSWITH":
		return strings.HasSuffix(s, m.Arg)
	case "STARTSWITH":
		return strings.HasPrefix(s, m.Arg)
	case "STRINGEQUALS":
		return s == m.Arg
	}
	return true
}

// containsLookup returns the lookup of ARRAY_CONTAINS(alias.path, v) (or
// with false, whole elements only) for a scalar v: the terms of path's
// any-element wildcard equal to v (index/doc.go: every element of an array
// has one), which every document whose array holds v has. A "contains"
// lookup is read as an equality (one term, in creation order); a property
// literally named "[]" shares the wildcard's terms, and the filter
// re-checks what it finds. Partial matches (true), non-scalar values and
// arrays reached through a position are not looked up.
func containsLookup(x *parse.Call, r roots, params map[string][]byte) *IndexScan {
	if len(x.Args) < 2 || len(x.Args) > 3 {
		return nil
	}
	if len(x.Args) == 3 {
		partial, ok := scalar(x.Args[2], params)
		if !ok || partial.Kind != index.Bool || partial.Bool {
			return nil
		}
	}
	path, ok := r.path(x.Args[0])
	v, vok := scalar(x.Args[1], params)
	if !ok || !vok || v.Kind == index.Undefined || positional(append([]string{""}, path...)) {
		// An array reached through a position (c.m[0]) has no wildcard
		// terms of its own: the index holds no term that mixes positions
		// and wildcards (a bug hunt: ARRAY_CONTAINS(c.m[0], 1) found
		// nothing).
		return nil
	}
	path = append(path, index.AnyElement)
	return &IndexScan{Path: path, Spans: []index.Span{index.Eq(path, v)}, Kind: "contains",
		Pred: "ARRAY_CONTAINS(" + predPath(path[:len(path)-1]) + ", " + valueText(v) + ")", Values: []index.Value{v}}
}

// unionLookup returns the lookup of a disjunction whose every disjunct
// pins one same path to values by equality or IN (in one of its AND
// conjuncts), such as the read-many queries of the Go SDK:
// (c.id = @id0 AND c.pk = @pk0) OR (c.id = @id1 AND c.pk = @pk1). It looks
// up the union of those values; nil when there is no such path.
func unionLookup(e *parse.Binary, r roots, params map[string][]byte) *IndexScan {
	var values map[string][]index.Value // path key → values, over the disjuncts so far
	var paths map[string][]string
	for i, d := range disjuncts(e, nil) {
		here := map[string][]index.Value{}
		for _, c := range conjuncts(d, nil) {
			var s *IndexScan
			var vs []index.Value
			switch x := c.(type) {
			case *parse.Binary:
				if s = lookup(x, r, params); s != nil && s.Kind == "equality" {
					v, _ := scalar(x.Y, params)
					if _, ok := r.path(x.X); !ok {
						v, _ = scalar(x.X, params)
					}
					vs = []index.Value{v}
				}
			case *parse.In:
				if s = lookup(x, r, params); s != nil {
					for _, item := range x.List {
						v, _ := scalar(item, params)
						vs = append(vs, v)
					}
				}
			}
			if vs == nil {
				continue
			}
			k := strings.Join(s.Path, "\x00")
			here[k] = append(here[k], vs...)
			if i == 0 {
				if paths == nil {
					paths = map[string][]string{}
				}
				paths[k] = s.Path
			}
		}
		if i == 0 {
			values = here
			continue
		}
		for k, vs := range values {
			if more, ok := here[k]; ok {
				values[k] = append(vs, more...)
			} else {
				delete(values, k)
			}
		}
	}
	// Of several paths, id is the most selective (few items share one; a
	// read-many pins both id and partition key), then the one with the
	// most distinct values.
	var best *IndexScan
	var bestKey string
	for k, vs := range values {
		spans := index.In(paths[k], vs)
		switch {
		case best != nil && bestKey == "id":
		case best == nil, k == "id", len(spans) > len(best.Spans), len(spans) == len(best.Spans) && k < bestKey:
			best, bestKey = &IndexScan{Path: paths[k], Spans: spans, Kind: "in", Pred: inText(paths[k], vs), Values: vs}, k
		}
	}
	if best == nil {
		best = spanUnion(disjuncts(e, nil), r, params)
	}
	return best
}

// spanUnion returns the lookup of a disjunction whose every disjunct has a
// lookup (a range, a prefix, an equality or IN) on one same path in one of
// its AND conjuncts, as c.n < 3 OR c.n > 996: the union of their spans, a
// "range" lookup (its terms unknown: Choose measures them). A disjunct
// with two conjuncts on the path contributes the first's spans (a
// superset of what it matches). nil when no path is in every disjunct; of
// several, the first in the first disjunct.
func spanUnion(ds []parse.Expr, r roots, params map[string][]byte) *IndexScan {
	type found struct {
		path  []string
		spans []index.Span
		preds []string
	}
	var common []*found
	for i, d := range ds {
		here := map[string]*IndexScan{}
		var order []string
		for _, c := range conjuncts(d, nil) {
			s := lookup(c, r, params)
			if s == nil || s.Kind == "contains" || s.Kind == "match" {
				continue
			}
			k := strings.Join(s.Path, "\x00")
			if _, ok := here[k]; !ok {
				here[k] = s
				order = append(order, k)
			}
		}
		if i == 0 {
			for _, k := range order {
				s := here[k]
				common = append(common, &found{path: s.Path, spans: slices.Clone(s.Spans), preds: []string{s.Pred}})
			}
			continue
		}
		common = slices.DeleteFunc(common, func(f *found) bool {
			s, ok := here[strings.Join(f.path, "\x00")]
			if ok {
				f.spans = append(f.spans, s.Spans...)
				f.preds = append(f.preds, s.Pred)
			}
			return !ok
		})
	}
	if len(common) == 0 {
		return nil
	}
	f := common[0]
	spans := slices.DeleteFunc(f.spans, index.Span.Empty)
	slices.SortFunc(spans, func(a, b index.Span) int { return bytes.Compare(a.Lower, b.Lower) })
	var merged []index.Span
	for _, sp := range spans {
		if n := len(merged); n > 0 && bytes.Compare(sp.Lower, merged[n-1].Upper) <= 0 {
			if bytes.Compare(sp.Upper, merged[n-1].Upper) > 0 {
				merged[n-1].Upper = sp.Upper
			}
			continue
		}
		merged = append(merged, sp)
	}
	if len(merged) == 0 {
		merged = []index.Span{{Lower: index.AppendPath(nil, f.path), Upper: index.AppendPath(nil, f.path)}} // matches nothing
	}
	return &IndexScan{Path: f.path, Spans: merged, Kind: "range", Pred: "(" + strings.Join(f.preds, " OR ") + ")"}
}

// disjuncts flattens a tree of ORs.
func disjuncts(e parse.Expr, out []parse.Expr) []parse.Expr {
	if b, ok := e.(*parse.Binary); ok && b.Op == parse.OpOr {
		return disjuncts(b.Y, disjuncts(b.X, out))
	}
	return append(out, e)
}

// mergeRanges replaces the range lookups of several conjuncts on one path
// by one lookup of their intersection, which each of those conjuncts then
// names: c.n >= 100 AND c.n < 200 reads the terms between 100 and 200, not
// every term above 100. Only ranges of numbers are merged (their terms
// order as the numbers do); ranges of other kinds, and an OR's union (no
// bounds), stay as they are.
func mergeRanges(hits []*IndexScan) {
	var merged []*IndexScan
	for i, h := range hits {
		if !numberRange(h) || slices.Contains(merged, h) {
			continue
		}
		same := []int{i}
		for j := i + 1; j < len(hits); j++ {
			if numberRange(hits[j]) && slices.Equal(hits[j].Path, h.Path) {
				same = append(same, j)
			}
		}
		if len(same) < 2 {
			continue
		}
		var lo, hi *index.Bound
		preds := make([]string, len(same))
		for k, j := range same {
			if b := hits[j].Lo; b != nil && (lo == nil || b.V.Num > lo.V.Num || b.V.Num == lo.V.Num && !b.Inclusive) {
				lo = b
			}
			if b := hits[j].Hi; b != nil && (hi == nil || b.V.Num < hi.V.Num || b.V.Num == hi.V.Num && !b.Inclusive) {
				hi = b
			}
			preds[k] = hits[j].Pred
		}
		m := rangeScan(h.Path, lo, hi, strings.Join(preds, " AND "))
		for _, j := range same {
			hits[j] = m
		}
		merged = append(merged, m)
	}
}

// numberRange reports whether h is a range lookup with bounds, each a
// number (a comparison or BETWEEN of numbers).
func numberRange(h *IndexScan) bool {
	return h != nil && h.Kind == "range" && (h.Lo != nil || h.Hi != nil) &&
		(h.Lo == nil || h.Lo.V.Kind == index.Number) && (h.Hi == nil || h.Hi.V.Kind == index.Number)
}

func rangeScan(path []string, lo, hi *index.Bound, pred string) *IndexScan {
	return &IndexScan{Path: path, Spans: []index.Span{index.Range(path, lo, hi)}, Kind: "range", Pred: pred, Lo: lo, Hi: hi}
}

var opText = map[parse.Op]string{parse.OpEq: "=", parse.OpLt: "<", parse.OpLe: "<=", parse.OpGt: ">", parse.OpGe: ">="}

// predPath prints an index path as a predicate names it: a.b.0.
func predPath(path []string) string { return strings.Join(path, ".") }

// valueText prints a scalar as a query literal.
func valueText(v index.Value) string {
	switch v.Kind {
	case index.Null:
		return "null"
	case index.Bool:
		return strconv.FormatBool(v.Bool)
	case index.Number:
		return strconv.FormatFloat(v.Num, 'g', -1, 64)
	case index.String:
		return strconv.Quote(v.Str)
	}
	return "undefined"
}

// inText prints path IN (vs...), at most 8 values.
func inText(path []string, vs []index.Value) string {
	var b strings.Builder
	b.WriteString(predPath(path) + " IN (")
	for i, v := range vs {
		if i == 8 {
			fmt.Fprintf(&b, ", … %d more", len(vs)-8)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(valueText(v))
	}
	b.WriteString(")")
	return b.String()
}

// mirror turns `v op path` into `path op' v`.
func mirror(op parse.Op) parse.Op {
	switch op {
	case parse.OpLt:
		return parse.OpGt
	case parse.OpLe:
		return parse.OpGe
	case parse.OpGt:
		return parse.OpLt
	case parse.OpGe:
		return parse.OpLe
	}
	return op
}

// roots maps the aliases a query's lookups may name to the index paths
// they stand for: the FROM alias to the documents' root (nil), and a JOIN
// alias over an array path of one of them (JOIN t IN c.tags) to that
// path's any-element wildcard (tags/[]): a top-level conjunct on t holds
// for some element of the array, and every element has a term under the
// wildcard (index/doc.go), so the lookup finds every document with a row
// that can match. A JOIN over a path with an array position, or over a
// subquery, names nothing (the index holds no term mixing positions and
// wildcards).
type roots map[string][]string

// rootsOf returns q's roots.
func rootsOf(q *parse.Query) roots {
	r := roots{q.From.Alias: nil}
	for _, j := range q.Joins {
		if j == nil || !j.In || j.Subquery != nil || j.Alias == "" {
			continue
		}
		if _, taken := r[j.Alias]; taken {
			continue
		}
		if p, ok := r.path(j.Expr); ok && !positional(append([]string{""}, p...)) {
			r[j.Alias] = append(slices.Clone(p), index.AnyElement)
		}
	}
	return r
}

// path returns the index path of a property path rooted at one of r's
// aliases (with array positions, not below a JOIN alias): c.a["b"][0]
// gives [a b 0]; t.name, for JOIN t IN c.tags, [tags [] name]; t itself
// [tags []].
func (r roots) path(e parse.Expr) ([]string, bool) {
	root, rest := e, []string(nil)
	for {
		switch x := root.(type) {
		case *parse.Property:
			root = x.X
			continue
		case *parse.Index:
			root = x.X
			continue
		case *parse.Ident:
			base, ok := r[x.Name]
			if !ok {
				return nil, false
			}
			if base == nil {
				return walkPath(e, x.Name, true)
			}
			if e != root {
				var ok bool
				if rest, ok = walkPath(e, x.Name, false); !ok {
					return nil, false
				}
			}
			return append(slices.Clone(base), rest...), true
		}
		return nil, false
	}
}

// indexPath returns the index path of a property path rooted at alias:
// c.a["b"][0] gives [a b 0].
func indexPath(e parse.Expr, alias string) ([]string, bool) {
	return walkPath(e, alias, true)
}

// walkPath returns the segments of a property path rooted at alias, with
// array positions (as decimal strings) when positions is set. A property
// named "[]" is no path: the index's terms for it are those of the
// wildcard that stands for any element of an array (index/doc.go), so a
// lookup on it finds every element of an array there, and a document once
// per element (a bug hunt: ORDER BY c.m["[]"] in index order returned a
// document twice and dropped another; a range on it, in pages cut short by
// the time limit, never moved on).
func walkPath(e parse.Expr, alias string, positions bool) ([]string, bool) {
	var rev []string
	for {
		switch x := e.(type) {
		case *parse.Property:
			if x.Name == index.AnyElement {
				return nil, false
			}
			rev = append(rev, x.Name)
			e = x.X
		case *parse.Index:
			lit, ok := x.Index.(*parse.Literal)
			switch {
			case ok && lit.Kind == parse.LitString && lit.Str == index.AnyElement:
				return nil, false
			case ok && lit.Kind == parse.LitString:
				rev = append(rev, lit.Str)
			case positions && ok && lit.Kind == parse.LitNumber && lit.Num >= 0 && lit.Num == math.Trunc(lit.Num) && lit.Num < 1<<31:
				rev = append(rev, strconv.Itoa(int(lit.Num)))
			default:
				return nil, false
			}
			e = x.X
		case *parse.Ident:
			if x.Name != alias || len(rev) == 0 {
				return nil, false
			}
			slices.Reverse(rev)
			return rev, true
		default:
			return nil, false
		}
	}
}

// scalar returns the index value of a scalar literal or a parameter holding
// one.
func scalar(e parse.Expr, params map[string][]byte) (index.Value, bool) {
	switch x := e.(type) {
	case *parse.Literal:
		switch x.Kind {
		case parse.LitString:
			return index.StringValue(x.Str), true
		case parse.LitNumber:
			return index.NumberValue(x.Num), true
		case parse.LitBool:
			return index.BoolValue(x.Bool), true
		case parse.LitNull:
			return index.NullValue(), true
		}
	case *parse.Unary:
		if lit, ok := x.X.(*parse.Literal); ok && x.Op == parse.OpNeg && lit.Kind == parse.LitNumber {
			return index.NumberValue(-lit.Num), true
		}
	case *parse.Param:
		if raw, ok := params[x.Name]; ok {
			return index.ValueFromJSON(raw)
		}
	}
	return index.Value{}, false
}

// OrderByError says an ORDER BY has no index to be served from.
type OrderByError struct{ Msg string }

func (e *OrderByError) Error() string { return e.Msg }

// CheckOrderByPaths returns an *OrderByError when an item of the query's
// ORDER BY is not a document path (documentPath), Cosmos DB's error 2206:
// ORDER BY LENGTH(c.s), -c.n, 1 or @p (a constant: rows in no order) were
// accepted (a bug hunt). The query plan checks it too, before any index.
func CheckOrderByPaths(q *parse.Query) error {
	for _, o := range q.OrderBy {
		if !documentPath(o.Expr) {
			return &OrderByError{Msg: "Unsupported ORDER BY clause. ORDER BY item expression could not be mapped to a document path."}
		}
	}
	return nil
}

// documentPath reports whether e names a place in the documents: an alias,
// or properties and array positions of one (c.a.b, c["a b"], c.a[0]), a
// property's name or a position given by a parameter too (c[@p]: a review
// found it refused, which Cosmos DB serves; applications sort by a
// parameter's property so). Expressions of them (functions, operators),
// constants and parameters alone do not.
func documentPath(e parse.Expr) bool {
	for {
		switch x := e.(type) {
		case *parse.Ident:
			return true
		case *parse.Property:
			e = x.X
		case *parse.Index:
			switch i := x.Index.(type) {
			case *parse.Param:
			case *parse.Literal:
				if i.Kind != parse.LitString && (i.Kind != parse.LitNumber || i.Num < 0 || i.Num != math.Trunc(i.Num)) {
					return false // c[true], c.a[1.5]: no property name or position
				}
			default:
				return false
			}
			e = x.X
		default:
			return false
		}
	}
}

// alwaysIndexed reports whether path is id or _ts, which Cosmos DB always
// indexes in consistent mode ("Indexing policies": they cannot be
// excluded).
func alwaysIndexed(path []string) bool {
	return len(path) == 1 && (path[0] == "id" || path[0] == "_ts")
}

// CheckOrderBy returns an *OrderByError when the query's ORDER BY needs an
// index that pol lacks, as Cosmos DB refuses such queries: a single key
// needs its path range-indexed, several keys a composite index with those
// paths in that order and those directions (or all inverted). An ORDER BY
// item must name a place in the documents (documentPath); the index is not
// checked for items that are paths of another alias than the FROM's (a
// JOIN's, say), nor in containers that index nothing.
func CheckOrderBy(q *parse.Query, pol *index.Policy) error {
	if q == nil {
		return nil
	}
	if err := CheckOrderByPaths(q); err != nil {
		return err
	}
	if len(q.OrderBy) == 0 || q.From == nil || pol == nil || pol.None() {
		return nil
	}
	paths := make([][]string, len(q.OrderBy))
	desc := make([]bool, len(q.OrderBy))
	for i, o := range q.OrderBy {
		p, ok := indexPath(o.Expr, q.From.Alias)
		if !ok {
			return nil
		}
		paths[i], desc[i] = p, o.Desc
	}
	if len(paths) == 1 {
		// Cosmos DB indexes id and _ts whatever the policy excludes, so
		// ORDER BY either is always served (here by sorting, when the
		// policy leaves them out of Partita's index: a bug hunt found
		// ORDER BY c.id refused under a policy excluding /*).
		if !pol.Indexed(paths[0]) && !alwaysIndexed(paths[0]) {
			return &OrderByError{Msg: "Order-by item requires a range index to be defined on the corresponding index path."}
		}
		return nil
	}
	if !pol.HasComposite(paths, desc) {
		return &OrderByError{Msg: "The order by query does not have a corresponding composite index that it can be served from."}
	}
	return nil
}
