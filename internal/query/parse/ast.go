package parse

import "slices"

// Position is a location in the query text. Offset is a byte offset; Line and Col count from 1,
// and Col counts characters (runes), not bytes. The zero Position means "unknown".
type Position struct {
	Offset, Line, Col int
}

// Pos returns p itself; it lets every node that embeds a Position satisfy Node.
func (p Position) Pos() Position { return p }

// Node is anything in the AST that has a source position.
type Node interface {
	Pos() Position
}

// Expr is a scalar expression. The concrete types are *Literal, *Param, *Ident, *Property,
// *Index, *Unary, *Binary, *Between, *In, *Like, *Conditional, *ArrayLit, *ObjectLit, *Call,
// *Exists, *ArrayQuery and *Subquery.
type Expr interface {
	Node
	exprNode()
}

// Query is one SELECT statement, top-level or nested.
type Query struct {
	Position
	Distinct bool
	Top      Expr // nil, or a *Literal number or *Param
	Select   Select
	From     *From   // nil for a query without FROM (SELECT 1)
	Joins    []*From // JOIN sources, in order; empty without FROM
	Where    Expr    // nil when absent
	GroupBy  []Expr
	OrderBy  []OrderItem
	Offset   Expr // nil, or a *Literal number or *Param; set together with Limit
	Limit    Expr
}

// Select is the projection of a query: exactly one of Star, Value != nil, or len(Items) > 0.
type Select struct {
	Position
	Star  bool         // SELECT *
	Value Expr         // SELECT VALUE expr
	Items []SelectItem // SELECT expr [AS alias], ...
}

// SelectItem is one projected expression. Alias is "" when the query gave none.
type SelectItem struct {
	Position
	Expr  Expr
	Alias string
}

// From is a FROM or JOIN source. It binds Alias to, per input row:
//   - the value of Expr (`FROM c`, `FROM root r`, `FROM c.children[0] ch`), or
//   - each element of the array Expr when In is set (`FROM ch IN c.children`), or
//   - each result of Subquery when it is non-nil (then Expr is nil).
//
// Expr is a path: an *Ident optionally followed by *Property and *Index (with a number or
// string *Literal) nodes. In a top-level FROM the leading identifier names the container
// (any name, conventionally root, c or the container's id); elsewhere it names an alias in
// scope.
type From struct {
	Position
	Alias    string
	In       bool
	Expr     Expr
	Subquery *Query
}

// OrderItem is one ORDER BY key.
type OrderItem struct {
	Position
	Expr Expr
	Desc bool
}

// LitKind tells which JSON type a Literal holds.
type LitKind uint8

// Literal kinds.
const (
	LitUndefined LitKind = iota
	LitNull
	LitBool
	LitNumber
	LitString
)

// Literal is a constant: a number (Num), a string (Str), a boolean (Bool), null, or undefined.
// Negative numbers are a *Unary minus applied to a positive Literal. Text is a number's
// source text (empty for a literal the parser did not read), which keeps an integer past
// 2^53 exact for the INT* functions.
type Literal struct {
	Position
	Kind LitKind
	Num  float64
	Text string
	Str  string
	Bool bool
}

// Param is a query parameter reference; Name includes the leading '@'.
type Param struct {
	Position
	Name string
}

// Ident is a reference to an alias (or, at the head of a top-level FROM path, the container).
type Ident struct {
	Position
	Name string
}

// Property is X.Name.
type Property struct {
	Position
	X    Expr
	Name string
}

// Index is X[Index]: a property by string or an array element by number.
type Index struct {
	Position
	X     Expr
	Index Expr
}

// Op is a unary or binary operator.
type Op uint8

// Operators. OpNe covers both != and <>.
const (
	OpInvalid Op = iota
	// Unary.
	OpNot
	OpNeg
	OpPlus
	OpBitNot
	// Binary.
	OpOr
	OpAnd
	OpCoalesce
	OpConcat
	OpBitOr
	OpBitXor
	OpBitAnd
	OpEq
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpShl
	OpShr
	OpShrZero
	OpAdd
	OpSub
	OpMul
	OpDiv
	OpMod
)

var opText = [...]string{
	OpInvalid:  "?",
	OpNot:      "NOT",
	OpNeg:      "-",
	OpPlus:     "+",
	OpBitNot:   "~",
	OpOr:       "OR",
	OpAnd:      "AND",
	OpCoalesce: "??",
	OpConcat:   "||",
	OpBitOr:    "|",
	OpBitXor:   "^",
	OpBitAnd:   "&",
	OpEq:       "=",
	OpNe:       "!=",
	OpLt:       "<",
	OpLe:       "<=",
	OpGt:       ">",
	OpGe:       ">=",
	OpShl:      "<<",
	OpShr:      ">>",
	OpShrZero:  ">>>",
	OpAdd:      "+",
	OpSub:      "-",
	OpMul:      "*",
	OpDiv:      "/",
	OpMod:      "%",
}

// String returns the operator as written in a query (OpNe prints as "!=").
func (o Op) String() string {
	if int(o) < len(opText) {
		return opText[o]
	}
	return "?"
}

// Unary is Op X for OpNot, OpNeg, OpPlus and OpBitNot.
type Unary struct {
	Position
	Op Op
	X  Expr
}

// Binary is X Op Y for the binary operators, including AND, OR and ??.
type Binary struct {
	Position
	Op   Op
	X, Y Expr
}

// Between is X [NOT] BETWEEN Lo AND Hi.
type Between struct {
	Position
	X, Lo, Hi Expr
	Not       bool
}

// In is X [NOT] IN (List...). List is never empty.
type In struct {
	Position
	X    Expr
	List []Expr
	Not  bool
}

// Like is X [NOT] LIKE Pattern [ESCAPE Escape]; Escape is nil or a string *Literal.
type Like struct {
	Position
	X, Pattern Expr
	Escape     Expr
	Not        bool
}

// Conditional is Cond ? Then : Else.
type Conditional struct {
	Position
	Cond, Then, Else Expr
}

// ArrayLit is [Elems...].
type ArrayLit struct {
	Position
	Elems []Expr
}

// ObjectLit is {Fields...}.
type ObjectLit struct {
	Position
	Fields []ObjectField
}

// ObjectField is one "name": value pair of an ObjectLit.
type ObjectField struct {
	Position
	Name  string
	Value Expr
}

// Call is a function call Name(Args...), or udf.Name(Args...) when UDF is set. Name keeps
// the case the query used; built-in names match case-insensitively.
type Call struct {
	Position
	Name string
	UDF  bool
	Args []Expr
}

// Exists is EXISTS(Query).
type Exists struct {
	Position
	Query *Query
}

// ArrayQuery is ARRAY(Query).
type ArrayQuery struct {
	Position
	Query *Query
}

// Subquery is a scalar subquery (Query).
type Subquery struct {
	Position
	Query *Query
}

func (*Literal) exprNode()     {}
func (*Param) exprNode()       {}
func (*Ident) exprNode()       {}
func (*Property) exprNode()    {}
func (*Index) exprNode()       {}
func (*Unary) exprNode()       {}
func (*Binary) exprNode()      {}
func (*Between) exprNode()     {}
func (*In) exprNode()          {}
func (*Like) exprNode()        {}
func (*Conditional) exprNode() {}
func (*ArrayLit) exprNode()    {}
func (*ObjectLit) exprNode()   {}
func (*Call) exprNode()        {}
func (*Exists) exprNode()      {}
func (*ArrayQuery) exprNode()  {}
func (*Subquery) exprNode()    {}

// Inspect calls f for e and then, while f returns true, for each of e's subexpressions in
// source order. It does not enter the bodies of subqueries (*Exists, *ArrayQuery,
// *Subquery); callers that need them walk Query fields themselves. A nil e is skipped.
func Inspect(e Expr, f func(Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	switch e := e.(type) {
	case *Property:
		Inspect(e.X, f)
	case *Index:
		Inspect(e.X, f)
		Inspect(e.Index, f)
	case *Unary:
		Inspect(e.X, f)
	case *Binary:
		Inspect(e.X, f)
		Inspect(e.Y, f)
	case *Between:
		Inspect(e.X, f)
		Inspect(e.Lo, f)
		Inspect(e.Hi, f)
	case *In:
		Inspect(e.X, f)
		for _, x := range e.List {
			Inspect(x, f)
		}
	case *Like:
		Inspect(e.X, f)
		Inspect(e.Pattern, f)
		Inspect(e.Escape, f)
	case *Conditional:
		Inspect(e.Cond, f)
		Inspect(e.Then, f)
		Inspect(e.Else, f)
	case *ArrayLit:
		for _, x := range e.Elems {
			Inspect(x, f)
		}
	case *ObjectLit:
		for _, fl := range e.Fields {
			Inspect(fl.Value, f)
		}
	case *Call:
		for _, x := range e.Args {
			Inspect(x, f)
		}
	}
}

// InferName is the property name Cosmos DB gives an unaliased SELECT item:
// its last property name (c.a.b gives "b", c["x"] gives "x", c gives "c"),
// or "" when it gets a positional name ($1, $2, ...).
func InferName(e Expr) string {
	switch e := e.(type) {
	case *Ident:
		return e.Name
	case *Property:
		return e.Name
	case *Index:
		if l, ok := e.Index.(*Literal); ok && l.Kind == LitString {
			return l.Str
		}
	}
	return ""
}

// ParamNames returns the names of the parameters q refers to anywhere,
// subqueries included, each once, in sorted order.
func ParamNames(q *Query) []string {
	seen := map[string]bool{}
	var query func(*Query)
	f := func(e Expr) bool {
		switch e := e.(type) {
		case *Param:
			seen[e.Name] = true
		case *Exists:
			query(e.Query)
		case *ArrayQuery:
			query(e.Query)
		case *Subquery:
			query(e.Query)
		}
		return true
	}
	from := func(s *From) {
		if s == nil {
			return
		}
		Inspect(s.Expr, f)
		if s.Subquery != nil {
			query(s.Subquery)
		}
	}
	query = func(q *Query) {
		if q == nil {
			return
		}
		Inspect(q.Top, f)
		Inspect(q.Select.Value, f)
		for _, it := range q.Select.Items {
			Inspect(it.Expr, f)
		}
		from(q.From)
		for _, j := range q.Joins {
			from(j)
		}
		Inspect(q.Where, f)
		for _, g := range q.GroupBy {
			Inspect(g, f)
		}
		for _, o := range q.OrderBy {
			Inspect(o.Expr, f)
		}
		Inspect(q.Offset, f)
		Inspect(q.Limit, f)
	}
	query(q)
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
