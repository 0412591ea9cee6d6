package exec

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/partitadb/partita/internal/query/parse"
)

// Params maps parameter names, including the leading '@' ("@name"), to raw JSON values.
type Params map[string][]byte

// Error is a query error the client caused; the API answers it with 400 Bad Request. Msg is
// client-safe and carries no position; Line and Col (from 1) locate the offending expression
// when known (0 otherwise).
type Error struct {
	Msg       string
	Line, Col int
	// Err is what a user-defined function returned, for a failure of
	// one (its caller may answer it as the function's own failure).
	Err error
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Error returns Msg, followed by the position when known.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s at line %d, column %d", e.Msg, e.Line, e.Col)
	}
	return e.Msg
}

func errorAt(n parse.Node, format string, args ...any) *Error {
	e := &Error{Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p := n.Pos()
		e.Line, e.Col = p.Line, p.Col
	}
	return e
}

// Features reports which parts of a query need state across partitions: a query with any of
// them cannot be answered by concatenating per-partition results.
type Features struct {
	OrderBy, Aggregate, GroupBy, Distinct, Top, OffsetLimit bool
}

// Program is a compiled query. It is immutable and safe for concurrent use.
type Program struct {
	q        *cquery
	nslots   int
	features Features
	now      func() time.Time
	pool     fastjson.ParserPool // parsers for Match
	udfs     func(name string) (UDF, bool)
	hasUDFs  bool // the query calls user-defined functions
	// varies: the query reads the clock or a random source, so two runs
	// over the same documents may differ.
	varies bool
	// whole: every document is a row as it is (wholeDocs), so streaming
	// needs no parse of it.
	whole bool
}

// Option configures Compile.
type Option func(*Program)

// UDF is a user-defined function: JSON arguments in, a JSON result out (nil
// for undefined). An error fails the query with it.
type UDF func(ctx context.Context, args [][]byte) ([]byte, error)

// WithUDFs resolves udf.name(...) calls when compiling: lookup returns the
// function of a name, or false for an unknown one (an *Error).
func WithUDFs(lookup func(name string) (UDF, bool)) Option {
	return func(p *Program) { p.udfs = lookup }
}

// WithClock makes GetCurrentDateTime, GetCurrentTimestamp and GetCurrentTicks read now
// (called once per Run, so every row sees the same time) instead of time.Now.
func WithClock(now func() time.Time) Option {
	return func(p *Program) { p.now = now }
}

// Compile checks q against the built-in functions and params and returns a runnable Program.
// It returns an *Error for an unknown function, a wrong number of arguments, a parameter
// missing from params (or not valid JSON), a user-defined function call (not supported yet),
// an unknown alias, an aggregate where none is allowed, a property outside GROUP BY and
// aggregates in a grouped query, or an invalid TOP, OFFSET or LIMIT value.
func Compile(q *parse.Query, params Params, opts ...Option) (*Program, error) {
	var o Program
	for _, opt := range opts {
		opt(&o)
	}
	c := &compiler{raw: params, params: make(map[string]value), udfs: o.udfs}
	cq, err := c.query(q, nil, true)
	if err != nil {
		return nil, err
	}
	f := Features{
		OrderBy:     len(cq.orderBy) > 0, // an aggregate's single row drops its ORDER BY
		GroupBy:     len(q.GroupBy) > 0,
		Aggregate:   cq.aggregates,
		Distinct:    q.Distinct,
		Top:         q.Top != nil,
		OffsetLimit: q.Offset != nil || q.Limit != nil,
	}
	p := &Program{q: cq, nslots: c.nslots, features: f, now: time.Now, hasUDFs: c.usedUDF, varies: c.varies, whole: wholeDocs(q)}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// wholeDocs reports whether q's rows are its documents as they are: FROM a
// plain alias (FROM c, FROM root r), no JOIN, WHERE, GROUP BY, aggregate or
// DISTINCT, and SELECT * or SELECT VALUE of the alias.
func wholeDocs(q *parse.Query) bool {
	if q.From == nil || q.From.In || q.From.Subquery != nil || len(q.Joins) > 0 || q.Where != nil ||
		len(q.GroupBy) > 0 || q.Distinct || hasAggregate(q) {
		return false
	}
	if _, ok := q.From.Expr.(*parse.Ident); !ok {
		return false
	}
	if q.Select.Star {
		return true
	}
	v, ok := q.Select.Value.(*parse.Ident)
	return ok && v.Name == q.From.Alias
}

// Features reports what the query needs when it spans several partitions.
func (p *Program) Features() Features { return p.features }

// CallsUDFs reports whether the query calls user-defined functions (bound
// when it was compiled, through WithUDFs).
func (p *Program) CallsUDFs() bool { return p.hasUDFs }

// Repeatable reports whether two runs of the program over the same
// documents give the same rows in the same order: it calls no user-defined
// function (JavaScript may read the clock) and nothing that reads the
// clock (GetCurrentDateTime, NOW, …) or a random source (RAND).
func (p *Program) Repeatable() bool { return !p.hasUDFs && !p.varies }

// evalFn evaluates an expression against the bindings in e.
type evalFn func(e *env) value

// compiler turns an AST into closures, assigning each alias a slot in env.slots.
type compiler struct {
	raw    Params
	params map[string]value
	nslots int
	udfs   func(name string) (UDF, bool)
	// usedUDF is set once a user-defined function call is compiled.
	usedUDF bool
	// varies is set once a call that reads the clock or a random source
	// is compiled.
	varies bool
}

// scope holds the aliases one query level binds. Lookups continue in parent, the enclosing
// query of a subquery.
type scope struct {
	parent *scope
	names  map[string]int
	// grouped is set while compiling the projection and ORDER BY of a grouped query, where
	// the aliases are out of reach except inside aggregates and GROUP BY expressions.
	grouped bool
}

func (s *scope) lookup(name string) (slot int, owner *scope, ok bool) {
	for ; s != nil; s = s.parent {
		if slot, ok := s.names[name]; ok {
			return slot, s, true
		}
	}
	return 0, nil, false
}

// groupCtx is the state for compiling the post-grouping part of a query.
type groupCtx struct {
	keys  []parse.Expr // the GROUP BY expressions
	sizes []int        // their sizes in nodes (exprSize)
	aggs  []*aggSpec   // the aggregates met so far
	inAgg bool         // compiling an aggregate's argument
	// size memoizes exprSize over the expressions compiled after grouping.
	size map[parse.Expr]int
}

// matches returns the GROUP BY key that e is, if any (sameExpr). Only an
// expression of a key's size is compared: comparing (it was printing)
// every subexpression cost the square of an expression's size (a bug
// hunt's 80 KB SELECT of 20,000 terms took 15 s to compile).
// Subexpressions of one size are disjoint, so the comparisons cost at most
// the expression's size per key.
func (g *groupCtx) matches(e parse.Expr) (int, bool) {
	n := g.exprSize(e)
	for i, k := range g.keys {
		if g.sizes[i] == n && sameExpr(e, k) {
			return i, true
		}
	}
	return 0, false
}

// exprSize returns the nodes of e (parse.Inspect's, subqueries' bodies not
// entered; x["name"] counted as x.name, which sameExpr equates), memoized
// so that the sizes of every subexpression cost the expression's size once.
func (g *groupCtx) exprSize(e parse.Expr) int {
	if n, ok := g.size[e]; ok {
		return n
	}
	n := 1
	if ix, ok := e.(*parse.Index); ok && stringLiteral(ix.Index) {
		n = 0 // the literal's node stands for the property name
	}
	parse.Inspect(e, func(x parse.Expr) bool {
		if x == e {
			return true
		}
		n += g.exprSize(x)
		return false
	})
	if g.size == nil {
		g.size = map[parse.Expr]int{}
	}
	g.size[e] = n
	return n
}

// stringLiteral reports whether e is a string literal.
func stringLiteral(e parse.Expr) bool {
	l, ok := e.(*parse.Literal)
	return ok && l.Kind == parse.LitString
}

// sameExpr reports whether a and b are the same expression for GROUP BY:
// equal trees, where x["name"] is x.name and built-in function names match
// in any case (as Cosmos DB compares them: SELECT LOWER(c.s) … GROUP BY
// lower(c.s), and c["g"] against c.g, were refused when keys were compared
// as printed text). Object and array literals and subqueries compare as
// printed.
func sameExpr(a, b parse.Expr) bool {
	a, b = asProperty(a), asProperty(b)
	switch x := a.(type) {
	case *parse.Literal:
		y, ok := b.(*parse.Literal)
		return ok && x.Kind == y.Kind && (x.Num == y.Num || x.Num != x.Num && y.Num != y.Num) && x.Str == y.Str && x.Bool == y.Bool
	case *parse.Param:
		y, ok := b.(*parse.Param)
		return ok && x.Name == y.Name
	case *parse.Ident:
		y, ok := b.(*parse.Ident)
		return ok && x.Name == y.Name
	case *parse.Property:
		y, ok := b.(*parse.Property)
		return ok && x.Name == y.Name && sameExpr(x.X, y.X)
	case *parse.Index:
		y, ok := b.(*parse.Index)
		return ok && sameExpr(x.X, y.X) && sameExpr(x.Index, y.Index)
	case *parse.Unary:
		y, ok := b.(*parse.Unary)
		return ok && x.Op == y.Op && sameExpr(x.X, y.X)
	case *parse.Binary:
		y, ok := b.(*parse.Binary)
		return ok && x.Op == y.Op && sameExpr(x.X, y.X) && sameExpr(x.Y, y.Y)
	case *parse.Between:
		y, ok := b.(*parse.Between)
		return ok && x.Not == y.Not && sameExpr(x.X, y.X) && sameExpr(x.Lo, y.Lo) && sameExpr(x.Hi, y.Hi)
	case *parse.In:
		y, ok := b.(*parse.In)
		return ok && x.Not == y.Not && sameExpr(x.X, y.X) && sameExprs(x.List, y.List)
	case *parse.Like:
		y, ok := b.(*parse.Like)
		return ok && x.Not == y.Not && sameExpr(x.X, y.X) && sameExpr(x.Pattern, y.Pattern) &&
			(x.Escape == nil) == (y.Escape == nil) && (x.Escape == nil || sameExpr(x.Escape, y.Escape))
	case *parse.Conditional:
		y, ok := b.(*parse.Conditional)
		return ok && sameExpr(x.Cond, y.Cond) && sameExpr(x.Then, y.Then) && sameExpr(x.Else, y.Else)
	case *parse.Call:
		y, ok := b.(*parse.Call)
		if !ok || x.UDF != y.UDF || !(x.Name == y.Name || !x.UDF && strings.EqualFold(x.Name, y.Name)) {
			return false
		}
		return sameExprs(x.Args, y.Args)
	}
	return parse.ExprString(a) == parse.ExprString(b)
}

func sameExprs(a, b []parse.Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameExpr(a[i], b[i]) {
			return false
		}
	}
	return true
}

// asProperty returns x["name"] as x.name, and e otherwise.
func asProperty(e parse.Expr) parse.Expr {
	if ix, ok := e.(*parse.Index); ok && stringLiteral(ix.Index) {
		return &parse.Property{X: ix.X, Name: ix.Index.(*parse.Literal).Str}
	}
	return e
}

type ectx struct {
	sc *scope
	g  *groupCtx // nil outside the projection and ORDER BY of a grouped query
}

func (c *compiler) newSlot() int {
	c.nslots++
	return c.nslots - 1
}

func (c *compiler) param(p *parse.Param) (value, error) {
	if v, ok := c.params[p.Name]; ok {
		return v, nil
	}
	raw, ok := c.raw[p.Name]
	if !ok {
		return undef, errorAt(p, "parameter %s is not defined", p.Name)
	}
	if rawCost(raw) > maxValueBytes {
		return undef, errorAt(p, "parameter %s takes more than 16 MiB as a value (its JSON and %d bytes for each element and member): pass fewer elements", p.Name, elemBytes)
	}
	var jp fastjson.Parser
	j, err := jp.ParseBytes(raw)
	if err != nil {
		return undef, errorAt(p, "parameter %s is not valid JSON", p.Name)
	}
	v := owned(fromJSON(j))
	c.params[p.Name] = v
	return v, nil
}

// cquery is a compiled query (top-level or subquery).
type cquery struct {
	top      bool // reads the document stream (a top-level query, or its FROM subquery)
	rootSlot int  // top: the slot of the current document
	from     *csource
	joins    []*csource
	where    evalFn
	proj     evalFn // the projected row; undefined rows are dropped

	grouped    bool // GROUP BY or aggregates: rows are folded into groups before projection
	aggregates bool // the projection has aggregates
	groupBy    []evalFn
	aggs       []*aggSpec

	orderBy  []corder
	distinct bool
	topN     int // -1 when absent
	offset   int
	limit    int // -1 when absent

	// retain is set when values outlive the document they were read from (ORDER BY buffers
	// rows), so each document needs a parser of its own.
	retain bool
}

// csource is a compiled FROM or JOIN source binding slot.
type csource struct {
	slot int
	in   bool
	path evalFn
	sub  *cquery
}

type corder struct {
	fn   evalFn
	desc bool
}

func (c *compiler) query(q *parse.Query, parent *scope, top bool) (*cquery, error) {
	cq := &cquery{top: top, topN: -1, limit: -1, distinct: q.Distinct}
	sc := &scope{parent: parent, names: make(map[string]int)}
	if q.From != nil {
		src, err := c.source(q.From, sc, cq, true)
		if err != nil {
			return nil, err
		}
		cq.from = src
		for _, j := range q.Joins {
			src, err := c.source(j, sc, cq, false)
			if err != nil {
				return nil, err
			}
			cq.joins = append(cq.joins, src)
		}
	}
	row := ectx{sc: sc}
	if q.Where != nil {
		fn, err := c.expr(q.Where, row)
		if err != nil {
			return nil, err
		}
		cq.where = fn
	}

	var g *groupCtx
	cq.aggregates = hasAggregate(q)
	if cq.aggregates || len(q.GroupBy) > 0 {
		cq.grouped = true
		g = &groupCtx{}
		for _, e := range q.GroupBy {
			if err := checkGroupKey(e); err != nil {
				return nil, err
			}
			fn, err := c.expr(e, row)
			if err != nil {
				return nil, err
			}
			cq.groupBy = append(cq.groupBy, fn)
			g.keys = append(g.keys, e)
			g.sizes = append(g.sizes, g.exprSize(e))
		}
		sc.grouped = true
	}
	out := ectx{sc: sc, g: g}
	if err := c.projection(q, cq, out); err != nil {
		return nil, err
	}
	// Aggregates without GROUP BY fold every row into one, which no ORDER BY
	// can reorder: Cosmos DB accepts SELECT VALUE AVG(c.n) FROM c ORDER BY c.n
	// (the JavaScript SDK's aggregate tests send it) and answers the single
	// row. The keys are still compiled, against the rows, so that a bad
	// name is an error, then dropped.
	single := cq.aggregates && len(q.GroupBy) == 0
	for _, it := range q.OrderBy {
		if single {
			sc.grouped = false
		}
		fn, err := c.expr(it.Expr, out)
		if err != nil {
			return nil, err
		}
		if !single {
			cq.orderBy = append(cq.orderBy, corder{fn: fn, desc: it.Desc})
		}
	}
	sc.grouped = false
	if g != nil {
		cq.aggs = g.aggs
	}

	var err error
	if q.Top != nil {
		if cq.topN, err = c.count(q.Top, "TOP"); err != nil {
			return nil, err
		}
	}
	if q.Offset != nil {
		if cq.offset, err = c.count(q.Offset, "OFFSET"); err != nil {
			return nil, err
		}
		if cq.limit, err = c.count(q.Limit, "LIMIT"); err != nil {
			return nil, err
		}
	}
	// Grouping keeps only owned copies (group keys, MIN/MAX), so only ORDER BY retains.
	cq.retain = len(cq.orderBy) > 0
	if cq.from != nil && cq.from.sub != nil && cq.from.sub.top && cq.retain {
		// The FROM subquery reads the documents; its rows are buffered here.
		cq.from.sub.retainAll()
	}
	return cq, nil
}

func (q *cquery) retainAll() {
	q.retain = true
	if q.from != nil && q.from.sub != nil && q.from.sub.top {
		q.from.sub.retainAll()
	}
}

// count evaluates the argument of TOP, OFFSET or LIMIT: a non-negative integer literal or
// parameter.
func (c *compiler) count(e parse.Expr, clause string) (int, error) {
	var v value
	switch e := e.(type) {
	case *parse.Literal:
		if e.Kind == parse.LitNumber {
			v = num(e.Num)
		}
	case *parse.Param:
		var err error
		if v, err = c.param(e); err != nil {
			return 0, err
		}
	}
	n, ok := toInt64(v)
	if !ok || n < 0 || n > math.MaxInt32 {
		return 0, errorAt(e, "%s requires a non-negative integer", clause)
	}
	return int(n), nil
}

// source compiles a FROM (first) or JOIN source of cq and binds its alias in sc.
func (c *compiler) source(f *parse.From, sc *scope, cq *cquery, first bool) (*csource, error) {
	src := &csource{in: f.In}
	switch {
	case f.Subquery != nil && cq.top && first:
		// FROM (SELECT ...) s: the subquery reads the documents and s ranges over its rows.
		sub, err := c.query(f.Subquery, nil, true)
		if err != nil {
			return nil, err
		}
		src.sub = sub
	case f.Subquery != nil:
		sub, err := c.query(f.Subquery, sc, false)
		if err != nil {
			return nil, err
		}
		src.sub = sub
	default:
		pathScope := sc
		if cq.top && first {
			// The head of a top-level FROM path names the container, whatever the name.
			cq.rootSlot = c.newSlot()
			pathScope = &scope{names: map[string]int{pathHead(f.Expr): cq.rootSlot}}
		}
		fn, err := c.expr(f.Expr, ectx{sc: pathScope})
		if err != nil {
			return nil, err
		}
		src.path = fn
	}
	if _, dup := sc.names[f.Alias]; dup {
		return nil, errorAt(f, "duplicate alias %q", f.Alias)
	}
	src.slot = c.newSlot()
	sc.names[f.Alias] = src.slot
	return src, nil
}

// pathHead returns the identifier at the head of a FROM path.
func pathHead(e parse.Expr) string {
	for {
		switch x := e.(type) {
		case *parse.Ident:
			return x.Name
		case *parse.Property:
			e = x.X
		case *parse.Index:
			e = x.X
		default:
			return ""
		}
	}
}

// hasAggregate reports whether q's projection or ORDER BY calls an aggregate outside
// subqueries.
func hasAggregate(q *parse.Query) bool {
	found := false
	visit := func(e parse.Expr) {
		parse.Inspect(e, func(e parse.Expr) bool {
			if call, ok := e.(*parse.Call); ok && !call.UDF && aggregateKind(strings.ToUpper(call.Name)) != 0 {
				found = true
			}
			return !found
		})
	}
	visit(q.Select.Value)
	for _, it := range q.Select.Items {
		visit(it.Expr)
	}
	for _, it := range q.OrderBy {
		visit(it.Expr)
	}
	return found
}

func (c *compiler) projection(q *parse.Query, cq *cquery, x ectx) error {
	sel := q.Select
	switch {
	case sel.Star:
		if q.From == nil || len(q.Joins) > 0 {
			return errorAt(sel, "'SELECT *' is only valid with a single input set")
		}
		if cq.grouped {
			return errorAt(sel, "'SELECT *' is not valid with GROUP BY or aggregates")
		}
		slot := cq.from.slot
		cq.proj = func(e *env) value { return e.slots[slot] }
	case sel.Value != nil:
		fn, err := c.expr(sel.Value, x)
		if err != nil {
			return err
		}
		cq.proj = fn
	default:
		names := make([]string, len(sel.Items))
		fns := make([]evalFn, len(sel.Items))
		seen := make(map[string]bool)
		anon := 0
		for i, it := range sel.Items {
			fn, err := c.expr(it.Expr, x)
			if err != nil {
				return err
			}
			name := it.Alias
			if name == "" {
				name = parse.InferName(it.Expr)
			}
			if name == "" {
				anon++
				name = "$" + strconv.Itoa(anon)
			}
			if seen[name] {
				return errorAt(it, "duplicate output property %q", name)
			}
			seen[name] = true
			names[i], fns[i] = name, fn
		}
		cq.proj = func(e *env) value {
			obj := &composite{keys: make([]string, 0, len(fns)), elems: make([]value, 0, len(fns))}
			for i, fn := range fns {
				if v := fn(e); v.k != kUndef {
					obj.keys = append(obj.keys, names[i])
					obj.elems = append(obj.elems, v)
				}
			}
			return value{k: kObj, c: obj}
		}
	}
	return nil
}

func constant(v value) evalFn { return func(*env) value { return v } }

func (c *compiler) exprs(list []parse.Expr, x ectx) ([]evalFn, error) {
	fns := make([]evalFn, len(list))
	for i, e := range list {
		fn, err := c.expr(e, x)
		if err != nil {
			return nil, err
		}
		fns[i] = fn
	}
	return fns, nil
}

func (c *compiler) expr(e parse.Expr, x ectx) (evalFn, error) {
	if x.g != nil && !x.g.inAgg {
		if _, lit := e.(*parse.Literal); !lit {
			if i, ok := x.g.matches(e); ok {
				return func(e *env) value { return e.groups[i] }, nil
			}
		}
	}
	switch e := e.(type) {
	case *parse.Literal:
		switch e.Kind {
		case parse.LitNumber:
			return constant(numLiteral(e)), nil
		case parse.LitString:
			return constant(str(e.Str)), nil
		case parse.LitBool:
			return constant(boolean(e.Bool)), nil
		case parse.LitNull:
			return constant(null), nil
		}
		return constant(undef), nil
	case *parse.Param:
		v, err := c.param(e)
		if err != nil {
			return nil, err
		}
		return constant(v), nil
	case *parse.Ident:
		slot, owner, ok := x.sc.lookup(e.Name)
		if !ok {
			return nil, errorAt(e, "identifier %q could not be resolved", e.Name)
		}
		if owner.grouped {
			return nil, errorAt(e, "%q is invalid in the select list because it is not contained in an aggregate function or the GROUP BY clause", e.Name)
		}
		return func(e *env) value { return e.slots[slot] }, nil
	case *parse.Property:
		xf, err := c.expr(e.X, x)
		if err != nil {
			return nil, err
		}
		name := e.Name
		return func(e *env) value { return xf(e).get(name) }, nil
	case *parse.Index:
		return c.index(e, x)
	case *parse.Unary:
		return c.unary(e, x)
	case *parse.Binary:
		return c.binary(e, x)
	case *parse.Between:
		return c.between(e, x)
	case *parse.In:
		return c.in(e, x)
	case *parse.Like:
		return c.like(e, x)
	case *parse.Conditional:
		fns, err := c.exprs([]parse.Expr{e.Cond, e.Then, e.Else}, x)
		if err != nil {
			return nil, err
		}
		cond, then, els := fns[0], fns[1], fns[2]
		return func(e *env) value {
			if cond(e).isTrue() {
				return then(e)
			}
			return els(e)
		}, nil
	case *parse.ArrayLit:
		fns, err := c.exprs(e.Elems, x)
		if err != nil {
			return nil, err
		}
		return func(e *env) value {
			elems := make([]value, 0, len(fns))
			for _, fn := range fns {
				if v := fn(e); v.k != kUndef {
					elems = append(elems, v)
				}
			}
			return arrayOf(elems)
		}, nil
	case *parse.ObjectLit:
		names := make([]string, len(e.Fields))
		fns := make([]evalFn, len(e.Fields))
		seen := make(map[string]bool)
		for i, f := range e.Fields {
			if seen[f.Name] {
				return nil, errorAt(f, "duplicate property %q in object literal", f.Name)
			}
			seen[f.Name] = true
			fn, err := c.expr(f.Value, x)
			if err != nil {
				return nil, err
			}
			names[i], fns[i] = f.Name, fn
		}
		return func(e *env) value {
			obj := &composite{keys: make([]string, 0, len(fns)), elems: make([]value, 0, len(fns))}
			for i, fn := range fns {
				if v := fn(e); v.k != kUndef {
					obj.keys = append(obj.keys, names[i])
					obj.elems = append(obj.elems, v)
				}
			}
			return value{k: kObj, c: obj}
		}, nil
	case *parse.Call:
		return c.call(e, x)
	case *parse.Exists:
		sub, err := c.query(e.Query, x.sc, false)
		if err != nil {
			return nil, err
		}
		return func(e *env) value {
			found := false
			sub.exec(e, func(value) bool {
				found = true
				return false
			})
			return boolean(found)
		}, nil
	case *parse.ArrayQuery:
		sub, err := c.query(e.Query, x.sc, false)
		if err != nil {
			return nil, err
		}
		return func(e *env) value {
			elems := []value{}
			size := 2
			sub.exec(e, func(v value) bool {
				if size += sizeOf(v, maxValueBytes-size) + 1 + elemBytes; size > maxValueBytes {
					e.rc.fail(errValueTooLarge("an ARRAY subquery's array"))
					return false
				}
				elems = append(elems, v)
				return true
			})
			if e.rc.err != nil {
				return undef
			}
			a := arrayOf(elems)
			a.c.size = size
			return a
		}, nil
	case *parse.Subquery:
		sub, err := c.query(e.Query, x.sc, false)
		if err != nil {
			return nil, err
		}
		return func(e *env) value {
			first := undef
			sub.exec(e, func(v value) bool {
				first = v
				return false
			})
			return first
		}, nil
	}
	return nil, errorAt(e, "unsupported expression")
}

func (c *compiler) index(e *parse.Index, x ectx) (evalFn, error) {
	xf, err := c.expr(e.X, x)
	if err != nil {
		return nil, err
	}
	if l, ok := e.Index.(*parse.Literal); ok && l.Kind == parse.LitString {
		name := l.Str
		return func(e *env) value { return xf(e).get(name) }, nil
	}
	idx, err := c.expr(e.Index, x)
	if err != nil {
		return nil, err
	}
	return func(e *env) value {
		v, i := xf(e), idx(e)
		switch i.k {
		case kStr:
			return v.get(i.s)
		case kNum:
			if n, ok := toInt64(i); ok && n <= math.MaxInt32 {
				return v.index(int(n))
			}
		}
		return undef
	}, nil
}

func (c *compiler) unary(e *parse.Unary, x ectx) (evalFn, error) {
	xf, err := c.expr(e.X, x)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case parse.OpNot:
		return func(e *env) value {
			if v := xf(e); v.k == kBool {
				return boolean(v.n == 0)
			}
			return undef
		}, nil
	case parse.OpNeg:
		return func(e *env) value {
			if v := xf(e); v.k == kNum {
				if i, ok := bigInt(v); ok && i != math.MinInt64 {
					return intValue(-i)
				}
				return num(-v.n)
			}
			return undef
		}, nil
	case parse.OpPlus:
		return func(e *env) value {
			if v := xf(e); v.k == kNum {
				return num(v.n)
			}
			return undef
		}, nil
	case parse.OpBitNot:
		return func(e *env) value {
			if v := xf(e); v.k == kNum {
				return num(float64(^toInt32(v.n)))
			}
			return undef
		}, nil
	}
	return nil, errorAt(e, "unsupported operator %s", e.Op)
}

// toInt32 is JavaScript's ToInt32, which the bitwise operators apply to their operands.
func toInt32(f float64) int32 {
	if math.IsInf(f, 0) || f != f {
		return 0
	}
	return int32(uint32(int64(math.Mod(math.Trunc(f), 1<<32))))
}

func (c *compiler) binary(e *parse.Binary, x ectx) (evalFn, error) {
	xf, err := c.expr(e.X, x)
	if err != nil {
		return nil, err
	}
	yf, err := c.expr(e.Y, x)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case parse.OpAnd:
		return func(e *env) value {
			a := xf(e)
			if a.k == kBool && a.n == 0 {
				return vFalse
			}
			b := yf(e)
			if b.k == kBool && b.n == 0 {
				return vFalse
			}
			if a.isTrue() && b.isTrue() {
				return vTrue
			}
			return undef
		}, nil
	case parse.OpOr:
		return func(e *env) value {
			a := xf(e)
			if a.isTrue() {
				return vTrue
			}
			b := yf(e)
			if b.isTrue() {
				return vTrue
			}
			if a.k == kBool && b.k == kBool {
				return vFalse
			}
			return undef
		}, nil
	case parse.OpCoalesce:
		return func(e *env) value {
			if a := xf(e); a.k != kUndef {
				return a
			}
			return yf(e)
		}, nil
	case parse.OpEq:
		return func(e *env) value { return equalValues(xf(e), yf(e)) }, nil
	case parse.OpNe:
		return func(e *env) value {
			a, b := xf(e), yf(e)
			if a.k == b.k && (a.k == kObj || a.k == kArr) {
				// Cosmos DB: != between two objects or two arrays is
				// undefined, though = compares them (found by a bug hunt).
				return undef
			}
			v := equalValues(a, b)
			if v.k == kBool {
				return boolean(v.n == 0)
			}
			return undef
		}, nil
	case parse.OpLt, parse.OpLe, parse.OpGt, parse.OpGe:
		op := e.Op
		return func(e *env) value { return relational(op, xf(e), yf(e)) }, nil
	case parse.OpConcat:
		return func(e *env) value {
			a, b := xf(e), yf(e)
			if a.k != kStr || b.k != kStr {
				return undef
			}
			return str(a.s + b.s)
		}, nil
	}
	arith := arithmetic(e.Op)
	if arith == nil {
		return nil, errorAt(e, "unsupported operator %s", e.Op)
	}
	return func(e *env) value {
		a, b := xf(e), yf(e)
		if a.k != kNum || b.k != kNum {
			return undef
		}
		return num(arith(a.n, b.n))
	}, nil
}

// relational is <, <=, > and >=: defined only for two values of the same primitive type.
func relational(op parse.Op, a, b value) value {
	if a.k != b.k || a.k == kUndef || a.k == kArr || a.k == kObj {
		return undef
	}
	c := compareValues(a, b)
	switch op {
	case parse.OpLt:
		return boolean(c < 0)
	case parse.OpLe:
		return boolean(c <= 0)
	case parse.OpGt:
		return boolean(c > 0)
	}
	return boolean(c >= 0)
}

func arithmetic(op parse.Op) func(a, b float64) float64 {
	switch op {
	case parse.OpAdd:
		return func(a, b float64) float64 { return a + b }
	case parse.OpSub:
		return func(a, b float64) float64 { return a - b }
	case parse.OpMul:
		return func(a, b float64) float64 { return a * b }
	case parse.OpDiv:
		return func(a, b float64) float64 { return a / b } // x/0 is ±Inf: undefined
	case parse.OpMod:
		return math.Mod
	case parse.OpBitAnd:
		return func(a, b float64) float64 { return float64(toInt32(a) & toInt32(b)) }
	case parse.OpBitOr:
		return func(a, b float64) float64 { return float64(toInt32(a) | toInt32(b)) }
	case parse.OpBitXor:
		return func(a, b float64) float64 { return float64(toInt32(a) ^ toInt32(b)) }
	case parse.OpShl:
		return func(a, b float64) float64 { return float64(toInt32(a) << (uint32(toInt32(b)) & 31)) }
	case parse.OpShr:
		return func(a, b float64) float64 { return float64(toInt32(a) >> (uint32(toInt32(b)) & 31)) }
	case parse.OpShrZero:
		return func(a, b float64) float64 { return float64(uint32(toInt32(a)) >> (uint32(toInt32(b)) & 31)) }
	}
	return nil
}

func (c *compiler) between(e *parse.Between, x ectx) (evalFn, error) {
	fns, err := c.exprs([]parse.Expr{e.X, e.Lo, e.Hi}, x)
	if err != nil {
		return nil, err
	}
	xf, lo, hi, not := fns[0], fns[1], fns[2], e.Not
	return func(e *env) value {
		v := xf(e)
		a, b := relational(parse.OpGe, v, lo(e)), relational(parse.OpLe, v, hi(e))
		if a.k != kBool || b.k != kBool {
			return undef
		}
		return boolean((a.isTrue() && b.isTrue()) != not)
	}, nil
}

func (c *compiler) in(e *parse.In, x ectx) (evalFn, error) {
	xf, err := c.expr(e.X, x)
	if err != nil {
		return nil, err
	}
	list, err := c.exprs(e.List, x)
	if err != nil {
		return nil, err
	}
	not := e.Not
	return func(e *env) value {
		v := xf(e)
		if v.k == kUndef {
			return undef
		}
		// x IN (a, b) is x = a OR x = b: true if one is true, false if all are false,
		// and undefined otherwise (comparisons across types are undefined).
		defined := true
		for _, fn := range list {
			eq := equalValues(v, fn(e))
			if eq.isTrue() {
				return boolean(!not)
			}
			defined = defined && eq.k == kBool
		}
		if !defined {
			return undef
		}
		return boolean(not)
	}, nil
}

func (c *compiler) like(e *parse.Like, x ectx) (evalFn, error) {
	xf, err := c.expr(e.X, x)
	if err != nil {
		return nil, err
	}
	var esc rune
	if l, ok := e.Escape.(*parse.Literal); ok {
		if utf8.RuneCountInString(l.Str) != 1 {
			return nil, errorAt(e.Escape, "the ESCAPE argument must be a single character")
		}
		esc, _ = utf8.DecodeRuneInString(l.Str)
	}
	not := e.Not
	match := func(re *regexp.Regexp, v value) value {
		if v.k != kStr || re == nil {
			return undef
		}
		return boolean(re.MatchString(v.s) != not)
	}
	if l, ok := e.Pattern.(*parse.Literal); ok && l.Kind == parse.LitString {
		re, err := likeRegexp(l.Str, esc)
		if err != nil {
			return nil, errorAt(e.Pattern, "invalid LIKE pattern")
		}
		return func(e *env) value { return match(re, xf(e)) }, nil
	}
	pat, err := c.expr(e.Pattern, x)
	if err != nil {
		return nil, err
	}
	return func(e *env) value {
		p := pat(e)
		if p.k != kStr {
			return undef
		}
		re, err := likeRegexp(p.s, esc)
		if err != nil {
			return undef
		}
		return match(re, xf(e))
	}, nil
}

func (c *compiler) call(e *parse.Call, x ectx) (evalFn, error) {
	if e.UDF {
		return c.udfCall(e, x)
	}
	upper := strings.ToUpper(e.Name)
	if k := aggregateKind(upper); k != 0 {
		return c.aggregate(e, k, x)
	}
	if upper == "RAND" {
		c.varies = true
	}
	if fn, ok := currentTime(upper); ok {
		c.varies = true
		if len(e.Args) != 0 {
			return nil, errorAt(e, "function %s called with %d arguments", upper, len(e.Args))
		}
		return fn, nil
	}
	if b, ok := clockFunc(upper); ok {
		c.varies = true
		return c.clockCall(e, upper, b, x)
	}
	b, ok := lookupBuiltin(upper)
	if !ok {
		if why, known := unsupportedFunc[upper]; known {
			return nil, errorAt(e, "the function %s (%s) is not supported by Partita", upper, why)
		}
		return nil, errorAt(e, "unknown function %q", e.Name)
	}
	if len(e.Args) < b.min || (b.max >= 0 && len(e.Args) > b.max) {
		return nil, errorAt(e, "function %s called with %d arguments", upper, len(e.Args))
	}
	args, err := c.exprs(e.Args, x)
	if err != nil {
		return nil, err
	}
	if upper == "REGEXMATCH" {
		if fn, ok, err := c.constRegex(e, args[0]); ok || err != nil {
			return fn, err
		}
	}
	if fn, ok := c.constSpatial(upper, e, args); ok {
		return fn, nil
	}
	fn := b.fn
	return func(e *env) value {
		// Arguments go on env's stack to avoid a slice allocation per call; nested calls
		// push above them and pop before we read.
		base := len(e.stack)
		for _, a := range args {
			v := a(e)
			e.stack = append(e.stack, v)
		}
		r := fn(e.stack[base:])
		clear(e.stack[base:])
		e.stack = e.stack[:base]
		if r.c == tooLarge.c {
			e.rc.fail(errValueTooLarge(upper + "'s result"))
			return undef
		}
		if (r.k == kStr || r.k == kArr || r.k == kObj) && r.j == nil && sizeOf(r, maxValueBytes) > maxValueBytes {
			e.rc.fail(errValueTooLarge(upper + "'s result"))
			return undef
		}
		return r
	}, nil
}

// constRegex precompiles REGEXMATCH's pattern when it (and the modifiers) are literals or
// parameters. ok is false when they are not.
func (c *compiler) constRegex(e *parse.Call, subject evalFn) (fn evalFn, ok bool, err error) {
	var consts []value
	for _, a := range e.Args[1:] {
		switch a := a.(type) {
		case *parse.Literal:
			if a.Kind != parse.LitString {
				return nil, false, nil
			}
			consts = append(consts, str(a.Str))
		case *parse.Param:
			v, err := c.param(a)
			if err != nil {
				return nil, false, err
			}
			consts = append(consts, v)
		default:
			return nil, false, nil
		}
	}
	re, ok := regexArgs(consts)
	if !ok {
		return nil, false, errorAt(e, "invalid regular expression in REGEXMATCH")
	}
	return func(e *env) value {
		v := subject(e)
		if v.k != kStr {
			return undef
		}
		return boolean(re.MatchString(v.s))
	}, true, nil
}

func (c *compiler) aggregate(e *parse.Call, k aggKind, x ectx) (evalFn, error) {
	name := strings.ToUpper(e.Name)
	if x.g == nil {
		return nil, errorAt(e, "aggregate %s is not allowed here", name)
	}
	if x.g.inAgg {
		return nil, errorAt(e, "aggregate %s cannot be nested in another aggregate", name)
	}
	if len(e.Args) != 1 {
		return nil, errorAt(e, "function %s called with %d arguments", name, len(e.Args))
	}
	// The argument is evaluated per input row, where the aliases are in reach.
	x.g.inAgg = true
	grouped := x.sc.grouped
	x.sc.grouped = false
	arg, err := c.expr(e.Args[0], x)
	x.sc.grouped = grouped
	x.g.inAgg = false
	if err != nil {
		return nil, err
	}
	i := len(x.g.aggs)
	x.g.aggs = append(x.g.aggs, &aggSpec{kind: k, arg: arg})
	return func(e *env) value { return e.aggs[i] }, nil
}

// currentTime compiles the GetCurrent* functions, which read the run's clock.
func currentTime(upper string) (evalFn, bool) {
	switch strings.TrimSuffix(upper, "STATIC") {
	case "GETCURRENTDATETIME":
		return func(e *env) value { return formatDateTime(e.rc.now) }, true
	case "GETCURRENTTIMESTAMP":
		return func(e *env) value { return num(float64(e.rc.now.UnixMilli())) }, true
	case "GETCURRENTTICKS":
		return func(e *env) value { return intValue(unixTicks(e.rc.now)) }, true
	}
	return nil, false
}

// clockCall compiles NOW and AGO, which take arguments and read the run's clock (the same
// time GetCurrentDateTime reads, for every row of the run).
func (c *compiler) clockCall(e *parse.Call, upper string, b clockBuiltin, x ectx) (evalFn, error) {
	if len(e.Args) != b.min && len(e.Args) != b.max {
		return nil, errorAt(e, "function %s called with %d arguments", upper, len(e.Args))
	}
	args, err := c.exprs(e.Args, x)
	if err != nil {
		return nil, err
	}
	fn := b.fn
	return func(e *env) value {
		var a [2]value
		for i, arg := range args {
			a[i] = arg(e)
		}
		return fn(e.rc.now, a[:len(args)])
	}, nil
}

// udfCall compiles udf.name(args): the arguments are passed as JSON and the
// result parsed back. Undefined has no JSON form, so a call with an
// undefined argument yields undefined without running the function.
func (c *compiler) udfCall(e *parse.Call, x ectx) (evalFn, error) {
	c.usedUDF = true
	if c.udfs == nil {
		return nil, errorAt(e, "user-defined function udf.%s does not exist", e.Name)
	}
	fn, ok := c.udfs(e.Name)
	if !ok {
		return nil, errorAt(e, "user-defined function udf.%s does not exist", e.Name)
	}
	args, err := c.exprs(e.Args, x)
	if err != nil {
		return nil, err
	}
	name := e.Name
	return func(en *env) value {
		in := make([][]byte, len(args))
		for i, a := range args {
			v := a(en)
			if v.k == kUndef {
				return undef
			}
			in[i] = appendJSON(nil, v)
		}
		out, err := fn(en.rc.ctx, in)
		if err != nil {
			en.rc.fail(&Error{Msg: fmt.Sprintf("udf.%s: %v", name, err), Err: err})
			return undef
		}
		if out == nil {
			return undef
		}
		if len(out) > maxValueBytes {
			en.rc.fail(errValueTooLarge("udf." + name + "'s result"))
			return undef
		}
		j, err := fastjson.ParseBytes(out)
		if err != nil {
			en.rc.fail(&Error{Msg: fmt.Sprintf("udf.%s returned invalid JSON", name)})
			return undef
		}
		return owned(fromJSON(j))
	}, nil
}

// checkGroupKey refuses a GROUP BY expression Cosmos DB does not allow:
// "any scalar expression … except for scalar subqueries and scalar
// aggregates", and one that "must contain at least one property
// reference" (GROUP BY 1 or GROUP BY @p put every row in one group: a bug
// hunt found them accepted). Aggregates are refused where the expression
// is compiled.
func checkGroupKey(e parse.Expr) error {
	refers, sub := false, false
	parse.Inspect(e, func(x parse.Expr) bool {
		switch x.(type) {
		case *parse.Ident:
			refers = true
		case *parse.Exists, *parse.ArrayQuery, *parse.Subquery:
			sub = true
			return false
		}
		return true
	})
	switch {
	case sub:
		return errorAt(e, "a GROUP BY expression may not be or contain a subquery")
	case !refers:
		return errorAt(e, "a GROUP BY expression must contain at least one property reference (a constant or a parameter alone groups nothing)")
	}
	return nil
}

// unsupportedFunc names the system functions Cosmos DB documents that
// Partita does not run, and what they are, so that a query calling one is
// told so rather than that the function is unknown (a bug hunt).
var unsupportedFunc = map[string]string{
	"VECTORDISTANCE": "vector search",
	"FULLTEXTSCORE":  "full-text scoring, for ORDER BY RANK",
	"RRF":            "hybrid search's reciprocal rank fusion, for ORDER BY RANK",
	"DATETIMEFORMAT": "its format codes are not documented",
}
