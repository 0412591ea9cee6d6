package parse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of parentheses, subqueries and prefix operators, so that hostile
// input cannot drive the recursive-descent parser (or the evaluator after it) arbitrarily deep.
const maxDepth = 200

// IsReserved reports whether name (in any case) is a reserved keyword. A reserved word cannot
// be a bare alias or name reference; it may still follow '.' as a property name, or follow AS.
func IsReserved(name string) bool {
	const longest = len("UNDEFINED")
	if len(name) < 2 || len(name) > longest {
		return false
	}
	var buf [longest]byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(name)]) {
	case "AND", "ARRAY", "AS", "ASC", "BETWEEN", "BY", "DESC", "DISTINCT", "ESCAPE", "EXISTS",
		"FALSE", "FROM", "GROUP", "IN", "JOIN", "LIKE", "LIMIT", "NOT", "NULL", "OFFSET", "OR",
		"ORDER", "SELECT", "TOP", "TRUE", "UDF", "UNDEFINED", "VALUE", "WHERE":
		return true
	}
	return false
}

// The limits of a query, those Azure Cosmos DB documents ("SQL query limits" of its service
// quotas) and advertises in the account's queryEngineConfiguration: Parse refuses a query past
// any of them with a *LimitError. ANDs and ORs are bounded by the query's length alone, as an
// account advertises them (2,147,483,647): the SDKs' read-many sends 1,000 items a query,
// (c.id = @i AND c.pk = @p) OR …, an AND more per level of a hierarchical key, and 500 of
// each, the emulator's, refused it past 500 items (a bug hunt with azcosmos's ReadManyItems).
const (
	MaxQueryLength = 262144        // characters of query text
	MaxJoins       = 10            // JOIN clauses, subqueries' included
	MaxAnds        = math.MaxInt32 // logical AND operators (BETWEEN's AND is not one)
	MaxOrs         = math.MaxInt32 // logical OR operators
	MaxUDFRefs     = 10            // references to user-defined functions (udf.name(...))
	MaxInItems     = 16000         // items in one IN list
)

// LimitError refuses a query past one of the limits above. Msg is complete and client-safe,
// worded as Azure Cosmos DB words it.
type LimitError struct{ Msg string }

// Error returns e.Msg.
func (e *LimitError) Error() string { return e.Msg }

// Parse parses one query. On malformed input it returns a *SyntaxError; past a limit, a
// *LimitError.
func Parse(text string) (*Query, error) {
	if len(text) > MaxQueryLength && utf8.RuneCountInString(text) > MaxQueryLength {
		return nil, &LimitError{Msg: fmt.Sprintf("The SQL query text exceeded the maximum limit of %d characters.", MaxQueryLength)}
	}
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	q, err := p.query()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tokEOF {
		return nil, p.unexpected()
	}
	if n := tooDeep(q); n != nil {
		return nil, errorAt(n.Pos(), "query nested too deeply")
	}
	return q, p.overLimit()
}

type parser struct {
	toks  []token
	i     int
	depth int
	// What the limits count, over the whole query.
	joins, ands, ors, udfs int
}

// overLimit returns a *LimitError for the first limit the parsed query is past, else nil.
// (An IN list past MaxInItems fails as it is parsed.)
func (p *parser) overLimit() error {
	for _, l := range []struct {
		n, max int
		what   string
	}{
		{p.joins, MaxJoins, "joins"},
		{p.ands, MaxAnds, "'AND' operators"},
		{p.ors, MaxOrs, "'OR' operators"},
		{p.udfs, MaxUDFRefs, "user-defined function references"},
	} {
		if l.n > l.max {
			return &LimitError{Msg: fmt.Sprintf("The SQL query exceeded the maximum number of %s. The allowed limit is %d.", l.what, l.max)}
		}
	}
	return nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1] // EOF
}

func (p *parser) advance() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// isKw reports whether t is the keyword kw (upper case), case-insensitively.
func isKw(t token, kw string) bool {
	return t.kind == tokIdent && len(t.text) == len(kw) && strings.EqualFold(t.text, kw)
}

func (p *parser) isKw(kw string) bool { return isKw(p.peek(), kw) }

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectKw(kw string) error {
	if !p.acceptKw(kw) {
		return p.unexpected()
	}
	return nil
}

func (p *parser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == op
}

// isOpAt reports whether the token k ahead is the operator op.
func (p *parser) isOpAt(k int, op string) bool {
	t := p.peekAt(k)
	return t.kind == tokOp && t.text == op
}

func (p *parser) acceptOp(op string) bool {
	if p.isOp(op) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectOp(op string) error {
	if !p.acceptOp(op) {
		return p.unexpected()
	}
	return nil
}

func (p *parser) unexpected() *SyntaxError {
	t := p.peek()
	if t.kind == tokEOF {
		return errorAt(t.pos, "unexpected end of query")
	}
	return errorAt(t.pos, "unexpected %s", strconv.Quote(t.text))
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return errorAt(p.peek().pos, "query nested too deeply")
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// name accepts an identifier token, reserved or not (after '.', AS, or in an object key).
func (p *parser) name() (string, error) {
	t := p.peek()
	if t.kind != tokIdent {
		return "", p.unexpected()
	}
	p.i++
	return t.text, nil
}

// ident accepts a non-reserved identifier.
func (p *parser) ident() (string, error) {
	t := p.peek()
	if t.kind != tokIdent || IsReserved(t.text) {
		return "", p.unexpected()
	}
	p.i++
	return t.text, nil
}

func (p *parser) query() (*Query, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	q := &Query{Position: p.peek().pos}
	if err := p.expectKw("SELECT"); err != nil {
		return nil, err
	}
	q.Distinct = p.acceptKw("DISTINCT")
	if p.acceptKw("TOP") {
		n, err := p.count()
		if err != nil {
			return nil, err
		}
		q.Top = n
	}
	if err := p.selection(&q.Select); err != nil {
		return nil, err
	}
	if p.acceptKw("FROM") {
		f, err := p.fromSource(false)
		if err != nil {
			return nil, err
		}
		q.From = f
		for p.acceptKw("JOIN") {
			p.joins++
			j, err := p.fromSource(true)
			if err != nil {
				return nil, err
			}
			q.Joins = append(q.Joins, j)
		}
	}
	if p.acceptKw("WHERE") {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		q.Where = e
	}
	if p.isKw("GROUP") {
		p.i++
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		list, err := p.exprList()
		if err != nil {
			return nil, err
		}
		q.GroupBy = list
	}
	if p.isKw("ORDER") {
		p.i++
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if t := p.peek(); t.kind == tokIdent && strings.EqualFold(t.text, "RANK") && p.peekAt(1).kind == tokIdent && p.isOpAt(2, "(") {
			// ORDER BY RANK FullTextScore(…) / RRF(…): said so, rather
			// than "unexpected" at the function's name (a bug hunt).
			return nil, errorAt(t.pos, "ORDER BY RANK (full-text and hybrid search ranking) is not supported by Partita")
		}
		for {
			item := OrderItem{Position: p.peek().pos}
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			item.Expr = e
			if p.acceptKw("DESC") {
				item.Desc = true
			} else {
				p.acceptKw("ASC")
			}
			q.OrderBy = append(q.OrderBy, item)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.acceptKw("OFFSET") {
		off, err := p.count()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("LIMIT"); err != nil {
			return nil, err
		}
		lim, err := p.count()
		if err != nil {
			return nil, err
		}
		q.Offset, q.Limit = off, lim
	}
	return q, nil
}

// count parses the argument of TOP, OFFSET or LIMIT: a number literal or a parameter.
func (p *parser) count() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tokNumber:
		p.i++
		return &Literal{Position: t.pos, Kind: LitNumber, Num: t.num, Text: t.text}, nil
	case tokParam:
		p.i++
		return &Param{Position: t.pos, Name: t.text}, nil
	}
	return nil, p.unexpected()
}

func (p *parser) selection(s *Select) error {
	s.Position = p.peek().pos
	if p.acceptOp("*") {
		s.Star = true
		return nil
	}
	if p.acceptKw("VALUE") {
		e, err := p.expr()
		if err != nil {
			return err
		}
		s.Value = e
		return nil
	}
	for {
		item := SelectItem{Position: p.peek().pos}
		e, err := p.expr()
		if err != nil {
			return err
		}
		item.Expr = e
		if p.acceptKw("AS") {
			if item.Alias, err = p.name(); err != nil {
				return err
			}
		} else if t := p.peek(); t.kind == tokIdent && !IsReserved(t.text) {
			item.Alias = t.text
			p.i++
		}
		s.Items = append(s.Items, item)
		if !p.acceptOp(",") {
			return nil
		}
	}
}

// fromSource parses `alias IN collection`, `collection [[AS] alias]`, or `(query) [[AS] alias]`
// (a JOIN's, join, with its alias).
func (p *parser) fromSource(join bool) (*From, error) {
	f := &From{Position: p.peek().pos}
	if t := p.peek(); t.kind == tokIdent && !IsReserved(t.text) && isKw(p.peekAt(1), "IN") {
		f.Alias = t.text
		f.In = true
		p.i += 2
		return f, p.collection(f)
	}
	if err := p.collection(f); err != nil {
		return nil, err
	}
	switch {
	case p.acceptKw("AS"):
		alias, err := p.name()
		if err != nil {
			return nil, err
		}
		f.Alias = alias
	case p.peek().kind == tokIdent && !IsReserved(p.peek().text):
		f.Alias = p.advance().text
	default:
		// Without an alias the source is named by its last path segment, as in Cosmos DB
		// (FROM c -> c, FROM root.children -> children).
		// The FROM's subquery needs no name (FROM (SELECT …), as Cosmos
		// DB's grammar allows: SELECT VALUE COUNT(1) FROM (SELECT DISTINCT
		// VALUE c.v FROM c)); its alias is empty, which no identifier
		// names, and SELECT * returns its rows. A JOIN's must be named to
		// be of any use.
		switch e := f.Expr.(type) {
		case *Ident:
			f.Alias = e.Name
		case *Property:
			f.Alias = e.Name
		default:
			if f.Subquery == nil || join {
				return nil, p.unexpected()
			}
		}
	}
	return f, nil
}

// collection parses a FROM path (identifier, then .name, [number] or ["name"] steps) or a
// parenthesised subquery, into f.Expr or f.Subquery.
func (p *parser) collection(f *From) error {
	if p.isOp("(") && isKw(p.peekAt(1), "SELECT") {
		p.i++
		q, err := p.query()
		if err != nil {
			return err
		}
		f.Subquery = q
		return p.expectOp(")")
	}
	t := p.peek()
	name, err := p.ident()
	if err != nil {
		return err
	}
	var e Expr = &Ident{Position: t.pos, Name: name}
	for {
		t := p.peek()
		switch {
		case p.acceptOp("."):
			n, err := p.name()
			if err != nil {
				return err
			}
			e = &Property{Position: t.pos, X: e, Name: n}
		case p.acceptOp("["):
			it := p.peek()
			if it.kind != tokNumber && it.kind != tokString {
				return p.unexpected()
			}
			p.i++
			e = &Index{Position: t.pos, X: e, Index: literalOf(it)}
			if err := p.expectOp("]"); err != nil {
				return err
			}
		default:
			f.Expr = e
			return nil
		}
	}
}

func literalOf(t token) *Literal {
	if t.kind == tokNumber {
		return &Literal{Position: t.pos, Kind: LitNumber, Num: t.num, Text: t.text}
	}
	return &Literal{Position: t.pos, Kind: LitString, Str: t.str}
}

func (p *parser) exprList() ([]Expr, error) {
	var list []Expr
	for {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		list = append(list, e)
		if !p.acceptOp(",") {
			return list, nil
		}
	}
}

// expr parses a full scalar expression: the conditional level.
func (p *parser) expr() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	pos := p.peek().pos
	cond, err := p.coalesce()
	if err != nil {
		return nil, err
	}
	if !p.acceptOp("?") {
		return cond, nil
	}
	then, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expectOp(":"); err != nil {
		return nil, err
	}
	els, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &Conditional{Position: pos, Cond: cond, Then: then, Else: els}, nil
}

func (p *parser) coalesce() (Expr, error) {
	x, err := p.or()
	if err != nil {
		return nil, err
	}
	for p.isOp("??") {
		pos := p.advance().pos
		y, err := p.or()
		if err != nil {
			return nil, err
		}
		x = &Binary{Position: pos, Op: OpCoalesce, X: x, Y: y}
	}
	return x, nil
}

// or parses a chain of ORs, built balanced (balance).
func (p *parser) or() (Expr, error) {
	x, err := p.and()
	if err != nil || !p.isKw("OR") {
		return x, err
	}
	xs, at := []Expr{x}, []Position(nil)
	for p.isKw("OR") {
		p.ors++
		at = append(at, p.advance().pos)
		y, err := p.and()
		if err != nil {
			return nil, err
		}
		xs = append(xs, y)
	}
	return balance(OpOr, xs, at), nil
}

// and parses a chain of ANDs, built balanced (balance).
func (p *parser) and() (Expr, error) {
	x, err := p.not()
	if err != nil || !p.isKw("AND") {
		return x, err
	}
	xs, at := []Expr{x}, []Position(nil)
	for p.isKw("AND") {
		p.ands++
		at = append(at, p.advance().pos)
		y, err := p.not()
		if err != nil {
			return nil, err
		}
		xs = append(xs, y)
	}
	return balance(OpAnd, xs, at), nil
}

func (p *parser) not() (Expr, error) {
	if !p.isKw("NOT") {
		return p.predicate()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	pos := p.advance().pos
	x, err := p.not()
	if err != nil {
		return nil, err
	}
	return &Unary{Position: pos, Op: OpNot, X: x}, nil
}

// predicate parses x [NOT] IN (...), x [NOT] LIKE p [ESCAPE s], x [NOT] BETWEEN lo AND hi,
// or just x.
func (p *parser) predicate() (Expr, error) {
	x, err := p.binary(1)
	if err != nil {
		return nil, err
	}
	pos := p.peek().pos
	not := false
	if p.isKw("NOT") && (isKw(p.peekAt(1), "IN") || isKw(p.peekAt(1), "LIKE") || isKw(p.peekAt(1), "BETWEEN")) {
		p.i++
		not = true
	}
	switch {
	case p.acceptKw("IN"):
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		list, err := p.exprList()
		if err != nil {
			return nil, err
		}
		if len(list) > MaxInItems {
			return nil, &LimitError{Msg: fmt.Sprintf("The number of items in the IN expression exceeded the maximum limit of %d.", MaxInItems)}
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return &In{Position: pos, X: x, List: list, Not: not}, nil
	case p.acceptKw("LIKE"):
		pat, err := p.binary(1)
		if err != nil {
			return nil, err
		}
		l := &Like{Position: pos, X: x, Pattern: pat, Not: not}
		if p.acceptKw("ESCAPE") {
			t := p.peek()
			if t.kind != tokString {
				return nil, p.unexpected()
			}
			p.i++
			l.Escape = literalOf(t)
		}
		return l, nil
	case p.acceptKw("BETWEEN"):
		lo, err := p.binary(1)
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("AND"); err != nil {
			return nil, err
		}
		hi, err := p.binary(1)
		if err != nil {
			return nil, err
		}
		return &Between{Position: pos, X: x, Lo: lo, Hi: hi, Not: not}, nil
	}
	return x, nil
}

// binaryOp returns the operator and precedence level of t, or level 0 if t is not a binary
// operator handled by binary. Higher levels bind tighter.
func binaryOp(t token) (Op, int) {
	if t.kind != tokOp {
		return OpInvalid, 0
	}
	switch t.text {
	case "||":
		return OpConcat, 1
	case "|":
		return OpBitOr, 2
	case "^":
		return OpBitXor, 3
	case "&":
		return OpBitAnd, 4
	case "=":
		return OpEq, 5
	case "!=", "<>":
		return OpNe, 5
	case "<":
		return OpLt, 6
	case "<=":
		return OpLe, 6
	case ">":
		return OpGt, 6
	case ">=":
		return OpGe, 6
	case "<<":
		return OpShl, 7
	case ">>":
		return OpShr, 7
	case ">>>":
		return OpShrZero, 7
	case "+":
		return OpAdd, 8
	case "-":
		return OpSub, 8
	case "*":
		return OpMul, 9
	case "/":
		return OpDiv, 9
	case "%":
		return OpMod, 9
	}
	return OpInvalid, 0
}

// binary parses left-associative binary operators of level minLevel and tighter.
func (p *parser) binary(minLevel int) (Expr, error) {
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		op, level := binaryOp(p.peek())
		if level < minLevel || level == 0 {
			return x, nil
		}
		pos := p.advance().pos
		y, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		x = &Binary{Position: pos, Op: op, X: x, Y: y}
	}
}

func (p *parser) unary() (Expr, error) {
	t := p.peek()
	var op Op
	switch {
	case t.kind == tokOp && t.text == "-":
		op = OpNeg
	case t.kind == tokOp && t.text == "+":
		op = OpPlus
	case t.kind == tokOp && t.text == "~":
		op = OpBitNot
	case isKw(t, "NOT"):
		op = OpNot
	default:
		return p.postfix()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.i++
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	return &Unary{Position: t.pos, Op: op, X: x}, nil
}

func (p *parser) postfix() (Expr, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case p.acceptOp("."):
			n, err := p.name()
			if err != nil {
				return nil, err
			}
			x = &Property{Position: t.pos, X: x, Name: n}
		case p.acceptOp("["):
			idx, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
			x = &Index{Position: t.pos, X: x, Index: idx}
		default:
			return x, nil
		}
	}
}

func (p *parser) subquery() (*Query, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	q, err := p.query()
	if err != nil {
		return nil, err
	}
	return q, p.expectOp(")")
}

func (p *parser) primary() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tokNumber, tokString:
		p.i++
		return literalOf(t), nil
	case tokParam:
		p.i++
		return &Param{Position: t.pos, Name: t.text}, nil
	case tokOp:
		switch t.text {
		case "(":
			if isKw(p.peekAt(1), "SELECT") {
				q, err := p.subquery()
				if err != nil {
					return nil, err
				}
				return &Subquery{Position: t.pos, Query: q}, nil
			}
			p.i++
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			return e, p.expectOp(")")
		case "[":
			p.i++
			a := &ArrayLit{Position: t.pos}
			if p.acceptOp("]") {
				return a, nil
			}
			list, err := p.exprList()
			if err != nil {
				return nil, err
			}
			a.Elems = list
			return a, p.expectOp("]")
		case "{":
			return p.object()
		}
		return nil, p.unexpected()
	case tokIdent:
		return p.identPrimary()
	}
	return nil, p.unexpected()
}

func (p *parser) object() (Expr, error) {
	o := &ObjectLit{Position: p.advance().pos}
	if p.acceptOp("}") {
		return o, nil
	}
	for {
		f := ObjectField{Position: p.peek().pos}
		switch t := p.peek(); t.kind {
		case tokString:
			f.Name = t.str
			p.i++
		case tokIdent:
			f.Name = t.text
			p.i++
		default:
			return nil, p.unexpected()
		}
		if err := p.expectOp(":"); err != nil {
			return nil, err
		}
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		f.Value = v
		o.Fields = append(o.Fields, f)
		if !p.acceptOp(",") {
			return o, p.expectOp("}")
		}
	}
}

func (p *parser) identPrimary() (Expr, error) {
	t := p.peek()
	switch strings.ToUpper(t.text) {
	case "TRUE", "FALSE":
		p.i++
		return &Literal{Position: t.pos, Kind: LitBool, Bool: strings.EqualFold(t.text, "true")}, nil
	case "NULL":
		p.i++
		return &Literal{Position: t.pos, Kind: LitNull}, nil
	case "UNDEFINED":
		p.i++
		return &Literal{Position: t.pos, Kind: LitUndefined}, nil
	case "EXISTS", "ARRAY":
		p.i++
		q, err := p.subquery()
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(t.text, "EXISTS") {
			return &Exists{Position: t.pos, Query: q}, nil
		}
		return &ArrayQuery{Position: t.pos, Query: q}, nil
	case "UDF":
		p.udfs++
		p.i++
		if err := p.expectOp("."); err != nil {
			return nil, err
		}
		name, err := p.name()
		if err != nil {
			return nil, err
		}
		if !p.isOp("(") {
			return nil, p.unexpected()
		}
		args, err := p.args()
		if err != nil {
			return nil, err
		}
		return &Call{Position: t.pos, Name: name, UDF: true, Args: args}, nil
	}
	if IsReserved(t.text) {
		return nil, p.unexpected()
	}
	p.i++
	if p.isOp("(") {
		args, err := p.args()
		if err != nil {
			return nil, err
		}
		return &Call{Position: t.pos, Name: t.text, Args: args}, nil
	}
	return &Ident{Position: t.pos, Name: t.text}, nil
}

// args parses a parenthesised, possibly empty argument list.
func (p *parser) args() ([]Expr, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if p.acceptOp(")") {
		return nil, nil
	}
	list, err := p.exprList()
	if err != nil {
		return nil, err
	}
	return list, p.expectOp(")")
}
