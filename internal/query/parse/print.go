package parse

import (
	"math"
	"strconv"
	"strings"
)

// String prints q as query text that Parse accepts and that parses back to an AST equal to q
// (apart from positions). Keywords are upper case; every compound operand is parenthesised so
// the output does not depend on precedence rules.
func (q *Query) String() string {
	var b strings.Builder
	writeQuery(&b, q)
	return b.String()
}

// ExprString prints e the way Query.String does.
func ExprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

func writeQuery(b *strings.Builder, q *Query) {
	b.WriteString("SELECT ")
	if q.Distinct {
		b.WriteString("DISTINCT ")
	}
	if q.Top != nil {
		b.WriteString("TOP ")
		writeExpr(b, q.Top)
		b.WriteByte(' ')
	}
	switch s := q.Select; {
	case s.Star:
		b.WriteByte('*')
	case s.Value != nil:
		b.WriteString("VALUE ")
		writeExpr(b, s.Value)
	default:
		for i, it := range s.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, it.Expr)
			if it.Alias != "" {
				b.WriteString(" AS ")
				b.WriteString(it.Alias)
			}
		}
	}
	if q.From != nil {
		b.WriteString(" FROM ")
		writeFrom(b, q.From)
		for _, j := range q.Joins {
			b.WriteString(" JOIN ")
			writeFrom(b, j)
		}
	}
	if q.Where != nil {
		b.WriteString(" WHERE ")
		writeExpr(b, q.Where)
	}
	if len(q.GroupBy) > 0 {
		b.WriteString(" GROUP BY ")
		writeList(b, q.GroupBy)
	}
	if len(q.OrderBy) > 0 {
		b.WriteString(" ORDER BY ")
		for i, it := range q.OrderBy {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, it.Expr)
			if it.Desc {
				b.WriteString(" DESC")
			} else {
				b.WriteString(" ASC")
			}
		}
	}
	if q.Offset != nil || q.Limit != nil {
		b.WriteString(" OFFSET ")
		writeExpr(b, q.Offset)
		b.WriteString(" LIMIT ")
		writeExpr(b, q.Limit)
	}
}

func writeFrom(b *strings.Builder, f *From) {
	switch {
	case f.Subquery != nil:
		b.WriteByte('(')
		writeQuery(b, f.Subquery)
		b.WriteByte(')')
		if f.Alias != "" {
			b.WriteString(" AS ")
			b.WriteString(f.Alias)
		}
	case f.In:
		b.WriteString(f.Alias)
		b.WriteString(" IN ")
		writeExpr(b, f.Expr)
	default:
		writeExpr(b, f.Expr)
		if id, ok := f.Expr.(*Ident); !ok || id.Name != f.Alias {
			b.WriteString(" AS ")
			b.WriteString(f.Alias)
		}
	}
}

func writeList(b *strings.Builder, list []Expr) {
	for i, e := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		writeExpr(b, e)
	}
}

// compound reports whether e must be parenthesised when it is an operand.
func compound(e Expr) bool {
	switch e.(type) {
	case *Unary, *Binary, *Between, *In, *Like, *Conditional:
		return true
	}
	return false
}

func writeOperand(b *strings.Builder, e Expr) {
	if compound(e) {
		b.WriteByte('(')
		writeExpr(b, e)
		b.WriteByte(')')
		return
	}
	writeExpr(b, e)
}

// writeBase writes the X of a property access or index; a number needs parentheses there
// too, or "1.a" would lex as the number "1." followed by "a".
func writeBase(b *strings.Builder, e Expr) {
	if l, ok := e.(*Literal); ok && l.Kind == LitNumber {
		b.WriteByte('(')
		writeExpr(b, e)
		b.WriteByte(')')
		return
	}
	writeOperand(b, e)
}

func writeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case nil:
		b.WriteString("undefined")
	case *Literal:
		switch e.Kind {
		case LitNumber:
			b.WriteString(FormatNumber(e.Num))
		case LitString:
			writeString(b, e.Str)
		case LitBool:
			b.WriteString(strconv.FormatBool(e.Bool))
		case LitNull:
			b.WriteString("null")
		default:
			b.WriteString("undefined")
		}
	case *Param:
		b.WriteString(e.Name)
	case *Ident:
		b.WriteString(e.Name)
	case *Property:
		writeBase(b, e.X)
		if validIdent(e.Name) {
			b.WriteByte('.')
			b.WriteString(e.Name)
		} else {
			b.WriteByte('[')
			writeString(b, e.Name)
			b.WriteByte(']')
		}
	case *Index:
		writeBase(b, e.X)
		b.WriteByte('[')
		writeExpr(b, e.Index)
		b.WriteByte(']')
	case *Unary:
		b.WriteString(e.Op.String())
		if e.Op == OpNot {
			b.WriteByte(' ')
		}
		writeOperand(b, e.X)
	case *Binary:
		writeOperand(b, e.X)
		b.WriteByte(' ')
		b.WriteString(e.Op.String())
		b.WriteByte(' ')
		writeOperand(b, e.Y)
	case *Between:
		writeOperand(b, e.X)
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" BETWEEN ")
		writeOperand(b, e.Lo)
		b.WriteString(" AND ")
		writeOperand(b, e.Hi)
	case *In:
		writeOperand(b, e.X)
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" IN (")
		writeList(b, e.List)
		b.WriteByte(')')
	case *Like:
		writeOperand(b, e.X)
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" LIKE ")
		writeOperand(b, e.Pattern)
		if e.Escape != nil {
			b.WriteString(" ESCAPE ")
			writeExpr(b, e.Escape)
		}
	case *Conditional:
		writeOperand(b, e.Cond)
		b.WriteString(" ? ")
		writeOperand(b, e.Then)
		b.WriteString(" : ")
		writeOperand(b, e.Else)
	case *ArrayLit:
		b.WriteByte('[')
		writeList(b, e.Elems)
		b.WriteByte(']')
	case *ObjectLit:
		b.WriteByte('{')
		for i, f := range e.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			writeString(b, f.Name)
			b.WriteString(": ")
			writeExpr(b, f.Value)
		}
		b.WriteByte('}')
	case *Call:
		if e.UDF {
			b.WriteString("udf.")
		}
		b.WriteString(e.Name)
		b.WriteByte('(')
		writeList(b, e.Args)
		b.WriteByte(')')
	case *Exists:
		b.WriteString("EXISTS(")
		writeQuery(b, e.Query)
		b.WriteByte(')')
	case *ArrayQuery:
		b.WriteString("ARRAY(")
		writeQuery(b, e.Query)
		b.WriteByte(')')
	case *Subquery:
		b.WriteByte('(')
		writeQuery(b, e.Query)
		b.WriteByte(')')
	}
}

func validIdent(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

// writeString writes s as a double-quoted literal. Bytes other than the quote, the backslash
// and control characters are copied unchanged, so any string (even invalid UTF-8) survives a
// print/parse round trip.
func writeString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// FormatNumber formats f the way JavaScript (and so Cosmos DB) prints numbers: plain decimal
// notation for magnitudes in [1e-6, 1e21), exponent notation otherwise ("1e+21", "1e-7").
// NaN and infinities, which JSON cannot represent, print as "null".
func FormatNumber(f float64) string {
	return string(AppendNumber(nil, f))
}

// AppendNumber appends FormatNumber(f) to dst.
func AppendNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0') // also for -0, as JavaScript prints it
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	// Go writes e-07 and e+07; JavaScript writes e-7 and e+7.
	if m := len(dst); m-n >= 4 && dst[m-2] == '0' && (dst[m-3] == '-' || dst[m-3] == '+') {
		dst[m-2] = dst[m-1]
		dst = dst[:m-1]
	}
	return dst
}
