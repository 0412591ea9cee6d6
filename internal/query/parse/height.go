package parse

// maxHeight bounds how deeply a query's expression nodes nest, however the nesting is
// written: parentheses and prefix operators (which maxDepth bounds as they are parsed), but
// also chains the parser builds in a loop, each link one level deeper than the last —
// c.a.a.a…, c[0][0]…, 1+1+1…, 1=1=1… — and subqueries. Everything after the parser (the
// planner, the compiler, the evaluator, Inspect) walks expressions recursively, about 2 KB of
// stack per level: a 260 KB query of 130,000 links took 256 MB of goroutine stack, and a few
// such requests at once several GB (a security review). AND and OR chains, which real
// queries make long (the SDKs' read-many queries OR a thousand conditions), are built
// balanced instead (balance), so their height grows with the logarithm of their length.
const maxHeight = 500

// tooDeep returns a node of q (or of its subqueries) more than maxHeight levels down, or
// nil. It walks with a stack of its own, so that the depth it checks cannot overflow it.
func tooDeep(q *Query) Node {
	type level struct {
		e Expr
		h int
	}
	var stack []level
	push := func(h int, es ...Expr) {
		for _, e := range es {
			if e != nil {
				stack = append(stack, level{e, h})
			}
		}
	}
	var pushQuery func(q *Query, h int)
	pushFrom := func(f *From, h int) {
		if f == nil {
			return
		}
		push(h, f.Expr)
		if f.Subquery != nil {
			pushQuery(f.Subquery, h)
		}
	}
	pushQuery = func(q *Query, h int) {
		push(h, q.Top, q.Select.Value, q.Where, q.Offset, q.Limit)
		for _, it := range q.Select.Items {
			push(h, it.Expr)
		}
		pushFrom(q.From, h)
		for _, j := range q.Joins {
			pushFrom(j, h)
		}
		push(h, q.GroupBy...)
		for _, o := range q.OrderBy {
			push(h, o.Expr)
		}
	}
	pushQuery(q, 1)
	for len(stack) > 0 {
		l := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if l.h > maxHeight {
			return l.e
		}
		h := l.h + 1
		switch e := l.e.(type) {
		case *Property:
			push(h, e.X)
		case *Index:
			push(h, e.X, e.Index)
		case *Unary:
			push(h, e.X)
		case *Binary:
			push(h, e.X, e.Y)
		case *Between:
			push(h, e.X, e.Lo, e.Hi)
		case *In:
			push(h, e.X)
			push(h, e.List...)
		case *Like:
			push(h, e.X, e.Pattern, e.Escape)
		case *Conditional:
			push(h, e.Cond, e.Then, e.Else)
		case *ArrayLit:
			push(h, e.Elems...)
		case *ObjectLit:
			for _, f := range e.Fields {
				push(h, f.Value)
			}
		case *Call:
			push(h, e.Args...)
		case *Exists:
			pushQuery(e.Query, h)
		case *ArrayQuery:
			pushQuery(e.Query, h)
		case *Subquery:
			pushQuery(e.Query, h)
		}
	}
	return nil
}

// balance joins xs (at least one) with op, whose position before xs[i] is at[i-1], into a
// balanced tree: for AND and OR, whose grouping changes neither the result nor the order in
// which the operands are evaluated (left to right, stopping at the same operand), only the
// tree's height, which is then the logarithm of len(xs) rather than len(xs).
func balance(op Op, xs []Expr, at []Position) Expr {
	if len(xs) == 1 {
		return xs[0]
	}
	mid := len(xs) / 2
	return &Binary{Position: at[mid-1], Op: op, X: balance(op, xs[:mid], at[:mid-1]), Y: balance(op, xs[mid:], at[mid:])}
}
