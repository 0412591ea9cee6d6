package parse

import (
	"fmt"
	"slices"
)

// Computed properties (Cosmos DB's computedProperties of a container): a
// name and a query `SELECT VALUE <expr> FROM <root>`, whose value a query
// reads as if it were a top-level property of the item, through its root
// alias (c.cp_name or c["cp_name"]). They are not stored: WithComputed
// rewrites a query so that each such reference is the property's
// expression over the query's root alias.

// ComputedProperty is one computed property: its name, and the expression
// of its query's VALUE over the query's root alias Root.
type ComputedProperty struct {
	Name  string
	Root  string
	Value Expr
}

// ComputedShape checks that q has the shape of a computed property's query
// (Cosmos DB's constraints): SELECT VALUE over the root item (FROM c, FROM
// root c, FROM MyContainer c), no JOIN, WHERE, GROUP BY, ORDER BY, TOP,
// DISTINCT or OFFSET/LIMIT, and no subquery, parameter or user-defined
// function in its value. It returns the property, or an error naming what
// is wrong. Which built-in functions the value may call is the caller's
// to check (exec.ItemFunction).
func ComputedShape(name string, q *Query) (ComputedProperty, error) {
	switch {
	case q.Select.Value == nil:
		return ComputedProperty{}, fmt.Errorf("its query must project with SELECT VALUE")
	case q.From == nil || q.From.In || q.From.Subquery != nil:
		return ComputedProperty{}, fmt.Errorf("its query must read FROM the root item (FROM c)")
	case len(q.Joins) > 0:
		return ComputedProperty{}, fmt.Errorf("its query cannot contain JOIN")
	case q.Where != nil:
		return ComputedProperty{}, fmt.Errorf("its query cannot contain WHERE")
	case len(q.GroupBy) > 0:
		return ComputedProperty{}, fmt.Errorf("its query cannot contain GROUP BY")
	case len(q.OrderBy) > 0:
		return ComputedProperty{}, fmt.Errorf("its query cannot contain ORDER BY")
	case q.Top != nil:
		return ComputedProperty{}, fmt.Errorf("its query cannot contain TOP")
	case q.Distinct:
		return ComputedProperty{}, fmt.Errorf("its query cannot contain DISTINCT")
	case q.Offset != nil || q.Limit != nil:
		return ComputedProperty{}, fmt.Errorf("its query cannot contain OFFSET LIMIT")
	}
	if _, ok := q.From.Expr.(*Ident); !ok {
		return ComputedProperty{}, fmt.Errorf("its query must read FROM the root item (FROM c), not a path in it")
	}
	var bad error
	Inspect(q.Select.Value, func(e Expr) bool {
		switch e := e.(type) {
		case *Exists, *ArrayQuery, *Subquery:
			bad = fmt.Errorf("its query cannot contain a subquery")
		case *Param:
			bad = fmt.Errorf("its query cannot use a parameter (%s)", e.Name)
		case *Call:
			if e.UDF {
				bad = fmt.Errorf("its query cannot call a user-defined function (udf.%s)", e.Name)
			}
		case *Ident:
			if e.Name != q.From.Alias {
				bad = fmt.Errorf("its query refers to %s, which is not its root alias %s", e.Name, q.From.Alias)
			}
		}
		return bad == nil
	})
	if bad != nil {
		return ComputedProperty{}, bad
	}
	return ComputedProperty{Name: name, Root: q.From.Alias, Value: q.Select.Value}, nil
}

// WithComputed returns q with every reference to one of props through its
// root alias (c.name, c["name"]) replaced by that property's expression
// over the alias, in every clause and in subqueries that do not bind the
// alias again; an unaliased SELECT item that is such a reference keeps the
// property's name as its alias; a FROM subquery is rewritten so, as a query
// of its own. q is not changed: what differs is copied.
// A query over the elements of an array in the item (FROM x IN c.a) that
// names a computed property there (FROM x IN c.cp_tags) is read as FROM c
// JOIN x IN <its expression>, the same rows; SELECT * over it, or a FROM
// over another path in the item naming one (FROM c.cp_obj x), is an error:
// not supported. A query that binds its root alias again in a JOIN is
// returned as it is.
func WithComputed(q *Query, props []ComputedProperty) (*Query, error) {
	if len(props) == 0 || q.From == nil {
		return q, nil
	}
	if q.From.Subquery != nil {
		// The subquery reads the items; the outer query reads its rows,
		// which name no computed property (a review: SELECT VALUE COUNT(1)
		// FROM (SELECT DISTINCT VALUE c.cp FROM c) counted 0, the property
		// undefined in the subquery).
		sub, err := WithComputed(q.From.Subquery, props)
		if err != nil || sub == q.From.Subquery {
			return q, err
		}
		c, f := *q, *q.From
		f.Subquery = sub
		c.From = &f
		return &c, nil
	}
	byName := make(map[string]*ComputedProperty, len(props))
	for i := range props {
		byName[props[i].Name] = &props[i]
	}
	if _, ok := q.From.Expr.(*Ident); !ok || q.From.In {
		return withComputedPath(q, byName)
	}
	root := q.From.Alias
	for _, j := range q.Joins {
		if j.Alias == root {
			return q, nil
		}
	}
	s := substitution{root: root, props: byName}
	return s.query(q, true), nil
}

// withComputedPath is WithComputed for a FROM over a path in the item,
// headed by the container's name.
func withComputedPath(q *Query, props map[string]*ComputedProperty) (*Query, error) {
	head := q.From.Expr
	for {
		switch e := head.(type) {
		case *Property:
			head = e.X
			continue
		case *Index:
			head = e.X
			continue
		}
		break
	}
	id, ok := head.(*Ident)
	if !ok {
		return q, nil
	}
	s := substitution{root: id.Name, props: props}
	named := false
	Inspect(q.From.Expr, func(e Expr) bool {
		named = named || s.ref(e) != nil
		return !named
	})
	if !named {
		return q, nil
	}
	if !q.From.In || q.Select.Star || q.From.Alias == id.Name || slices.ContainsFunc(q.Joins, func(j *From) bool { return j.Alias == id.Name }) {
		return nil, fmt.Errorf("a computed property in the FROM path %s is supported as FROM %s JOIN %s IN %s, not here",
			ExprString(q.From.Expr), id.Name, q.From.Alias, ExprString(q.From.Expr))
	}
	c := *q
	c.From = &From{Position: q.From.Position, Alias: id.Name, Expr: &Ident{Position: id.Position, Name: id.Name}}
	join := *q.From
	join.Expr = s.expr(q.From.Expr)
	c.Joins = append([]*From{&join}, q.Joins...)
	return &c, nil
}

type substitution struct {
	root  string
	props map[string]*ComputedProperty
	// rename, when set, renames the identifier rename[0] to rename[1].
	rename *[2]string
}

// ref returns the computed property e refers to through the root alias.
func (s *substitution) ref(e Expr) *ComputedProperty {
	switch e := e.(type) {
	case *Property:
		if id, ok := e.X.(*Ident); ok && id.Name == s.root {
			return s.props[e.Name]
		}
	case *Index:
		if id, ok := e.X.(*Ident); ok && id.Name == s.root {
			if l, ok := e.Index.(*Literal); ok && l.Kind == LitString {
				return s.props[l.Str]
			}
		}
	}
	return nil
}

// query rewrites q (top: the top-level query, whose FROM binds the root);
// a subquery that binds the root alias again is its own scope, left alone.
func (s *substitution) query(q *Query, top bool) *Query {
	if q == nil {
		return nil
	}
	if !top {
		for _, f := range append([]*From{q.From}, q.Joins...) {
			if f != nil && f.Alias == s.root {
				return q
			}
		}
	}
	c := *q
	if !top {
		c.From = s.from(q.From)
	}
	if len(q.Joins) > 0 {
		c.Joins = make([]*From, len(q.Joins))
		for i, j := range q.Joins {
			c.Joins[i] = s.from(j)
		}
	}
	c.Top = s.expr(q.Top)
	c.Select.Value = s.expr(q.Select.Value)
	if len(q.Select.Items) > 0 {
		c.Select.Items = make([]SelectItem, len(q.Select.Items))
		for i, it := range q.Select.Items {
			if it.Alias == "" {
				if p := s.ref(it.Expr); p != nil {
					it.Alias = p.Name
				}
			}
			it.Expr = s.expr(it.Expr)
			c.Select.Items[i] = it
		}
	}
	c.Where = s.expr(q.Where)
	c.GroupBy = s.exprs(q.GroupBy)
	if len(q.OrderBy) > 0 {
		c.OrderBy = make([]OrderItem, len(q.OrderBy))
		for i, o := range q.OrderBy {
			o.Expr = s.expr(o.Expr)
			c.OrderBy[i] = o
		}
	}
	c.Offset, c.Limit = s.expr(q.Offset), s.expr(q.Limit)
	return &c
}

func (s *substitution) from(f *From) *From {
	if f == nil {
		return nil
	}
	c := *f
	c.Expr = s.expr(f.Expr)
	c.Subquery = s.query(f.Subquery, false)
	return &c
}

func (s *substitution) exprs(es []Expr) []Expr {
	if es == nil {
		return nil
	}
	out := make([]Expr, len(es))
	for i, e := range es {
		out[i] = s.expr(e)
	}
	return out
}

// expr returns e rewritten; the property's expression is copied with its
// own root alias renamed to the query's.
func (s *substitution) expr(e Expr) Expr {
	if e == nil {
		return nil
	}
	if p := s.ref(e); p != nil {
		return renameRoot(p.Value, p.Root, s.root)
	}
	switch e := e.(type) {
	case *Ident:
		if s.rename != nil && e.Name == s.rename[0] {
			return &Ident{Position: e.Position, Name: s.rename[1]}
		}
	case *Property:
		c := *e
		c.X = s.expr(e.X)
		return &c
	case *Index:
		c := *e
		c.X, c.Index = s.expr(e.X), s.expr(e.Index)
		return &c
	case *Unary:
		c := *e
		c.X = s.expr(e.X)
		return &c
	case *Binary:
		c := *e
		c.X, c.Y = s.expr(e.X), s.expr(e.Y)
		return &c
	case *Between:
		c := *e
		c.X, c.Lo, c.Hi = s.expr(e.X), s.expr(e.Lo), s.expr(e.Hi)
		return &c
	case *In:
		c := *e
		c.X, c.List = s.expr(e.X), s.exprs(e.List)
		return &c
	case *Like:
		c := *e
		c.X, c.Pattern, c.Escape = s.expr(e.X), s.expr(e.Pattern), s.expr(e.Escape)
		return &c
	case *Conditional:
		c := *e
		c.Cond, c.Then, c.Else = s.expr(e.Cond), s.expr(e.Then), s.expr(e.Else)
		return &c
	case *ArrayLit:
		c := *e
		c.Elems = s.exprs(e.Elems)
		return &c
	case *ObjectLit:
		c := *e
		c.Fields = make([]ObjectField, len(e.Fields))
		for i, f := range e.Fields {
			f.Value = s.expr(f.Value)
			c.Fields[i] = f
		}
		return &c
	case *Call:
		c := *e
		c.Args = s.exprs(e.Args)
		return &c
	case *Exists:
		c := *e
		c.Query = s.query(e.Query, false)
		return &c
	case *ArrayQuery:
		c := *e
		c.Query = s.query(e.Query, false)
		return &c
	case *Subquery:
		c := *e
		c.Query = s.query(e.Query, false)
		return &c
	}
	return e
}

// renameRoot returns a copy of e, a computed property's value (no
// subqueries: ComputedShape), with the identifier from renamed to to; e is
// not changed.
func renameRoot(e Expr, from, to string) Expr {
	r := substitution{root: "\x00", rename: &[2]string{from, to}} // root refers to nothing: expr copies and renames
	return r.expr(e)
}
