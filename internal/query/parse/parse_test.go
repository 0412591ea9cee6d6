package parse

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// ignorePos compares ASTs without their source positions.
// ignorePos ignores positions and a number literal's source text (printing writes the
// number's shortest form: 1e3 reads back as 1000).
var ignorePos = cmp.Options{cmpopts.IgnoreTypes(Position{}), cmpopts.IgnoreFields(Literal{}, "Text")}

// TestParseString checks the structure of parsed queries through their canonical printed
// form, which parenthesises every compound operand and so shows precedence and grouping.
func TestParseString(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		// Sources and projections (wire protocol §6.5).
		{"SELECT * FROM c", "SELECT * FROM c"},
		{"select * from root r", "SELECT * FROM root AS r"},
		{"SELECT * FROM docs c", "SELECT * FROM docs AS c"},
		{"SELECT * FROM docs AS c", "SELECT * FROM docs AS c"},
		{"SELECT VALUE c.id FROM c", "SELECT VALUE c.id FROM c"},
		{"SELECT c.id, c.name AS n, c.x y FROM c", "SELECT c.id, c.name AS n, c.x AS y FROM c"},
		{"SELECT c FROM c IN c.children", "SELECT c FROM c IN c.children"},
		{"SELECT * FROM c.children[0] ch", "SELECT * FROM c.children[0] AS ch"},
		{"SELECT * FROM root.children", "SELECT * FROM root.children AS children"},
		{`SELECT * FROM c["a b"] x`, `SELECT * FROM c["a b"] AS x`},
		{"SELECT 1", "SELECT 1"},
		{"SELECT * FROM (SELECT VALUE c.a FROM c) AS s", "SELECT * FROM (SELECT VALUE c.a FROM c) AS s"},
		{"SELECT c.id, t FROM c JOIN t IN c.tags JOIN u IN c.us", "SELECT c.id, t FROM c JOIN t IN c.tags JOIN u IN c.us"},
		{"SELECT DISTINCT TOP 5 VALUE c.a FROM c", "SELECT DISTINCT TOP 5 VALUE c.a FROM c"},
		{"SELECT TOP @n * FROM c", "SELECT TOP @n * FROM c"},
		{"SELECT * FROM c ORDER BY c.a, c.b DESC, c.c asc", "SELECT * FROM c ORDER BY c.a ASC, c.b DESC, c.c ASC"},
		{"SELECT * FROM c OFFSET 10 LIMIT @lim", "SELECT * FROM c OFFSET 10 LIMIT @lim"},
		{"SELECT c.city, COUNT(1) AS n FROM c GROUP BY c.city", "SELECT c.city, COUNT(1) AS n FROM c GROUP BY c.city"},
		// Property access.
		{`SELECT * FROM c WHERE c["my-field"]["sub"] = 'x'`, `SELECT * FROM c WHERE c["my-field"]["sub"] = "x"`},
		{"SELECT c.a[0].b[@i] FROM c", "SELECT c.a[0].b[@i] FROM c"},
		{"SELECT c.value, c.select FROM c", "SELECT c.value, c.select FROM c"},
		// Literals.
		{`SELECT VALUE [1, 2.5, -3, 1e3, .5, "s", 'q', true, FALSE, null, undefined]`,
			`SELECT VALUE [1, 2.5, -3, 1000, 0.5, "s", "q", true, false, null, undefined]`},
		{`SELECT VALUE 'it\'s "x"\n\u00e9\ud83d\ude00'`, `SELECT VALUE "it's \"x\"\né😀"`},
		{`SELECT VALUE {"a": 1, b: c.x, "c d": [1]} FROM c`, `SELECT VALUE {"a": 1, "b": c.x, "c d": [1]} FROM c`},
		{"SELECT VALUE {}", "SELECT VALUE {}"},
		{"SELECT VALUE []", "SELECT VALUE []"},
		{"SELECT VALUE 1e21", "SELECT VALUE 1e+21"},
		{"SELECT VALUE 0.0000001", "SELECT VALUE 1e-7"},
		// A leading-dot number after a keyword (a query hunt: refused after SELECT, VALUE,
		// AND, BETWEEN, NOT), and hexadecimal literals (Cosmos DB's hexadecimal_literal).
		{"SELECT VALUE .5", "SELECT VALUE 0.5"},
		{"SELECT .5 AS h FROM c", "SELECT 0.5 AS h FROM c"},
		{"SELECT * FROM c WHERE c.n BETWEEN .5 AND .75", "SELECT * FROM c WHERE c.n BETWEEN 0.5 AND 0.75"},
		{"SELECT * FROM c WHERE c.n > 1 AND .5 < c.n OR .25 = c.m", "SELECT * FROM c WHERE ((c.n > 1) AND (0.5 < c.n)) OR (0.25 = c.m)"},
		{"SELECT * FROM c WHERE NOT .5 > c.n", "SELECT * FROM c WHERE NOT (0.5 > c.n)"},
		{"SELECT * FROM c WHERE c.n IN (.5, 5) AND c.m = (.5)", "SELECT * FROM c WHERE (c.n IN (0.5, 5)) AND (c.m = 0.5)"},
		{"SELECT c.select FROM c", "SELECT c.select FROM c"},
		{"SELECT VALUE [0x1F, 0XfF, -0x10, 0x0]", "SELECT VALUE [31, 255, -16, 0]"},
		{"SELECT * FROM c WHERE c.n < 0x10", "SELECT * FROM c WHERE c.n < 16"},
		// Precedence.
		{"SELECT VALUE 1 + 2 * 3", "SELECT VALUE 1 + (2 * 3)"},
		{"SELECT VALUE (1 + 2) * 3", "SELECT VALUE (1 + 2) * 3"},
		{"SELECT VALUE 1 - 2 - 3", "SELECT VALUE (1 - 2) - 3"},
		{"SELECT VALUE a || b = c FROM a", "SELECT VALUE a || (b = c) FROM a"},
		{"SELECT VALUE 1 < 2 = true", "SELECT VALUE (1 < 2) = true"},
		{"SELECT VALUE 1 | 2 ^ 3 & 4", "SELECT VALUE 1 | (2 ^ (3 & 4))"},
		{"SELECT VALUE 1 << 2 + 3 >>> 1", "SELECT VALUE (1 << (2 + 3)) >>> 1"},
		{"SELECT * FROM c WHERE c.a = 1 OR c.b = 2 AND c.c = 3", "SELECT * FROM c WHERE (c.a = 1) OR ((c.b = 2) AND (c.c = 3))"},
		{"SELECT * FROM c WHERE NOT c.a = 1 AND c.b", "SELECT * FROM c WHERE (NOT (c.a = 1)) AND c.b"},
		{"SELECT * FROM c WHERE NOT NOT c.a", "SELECT * FROM c WHERE NOT (NOT c.a)"},
		{"SELECT VALUE -c.a * ~c.b FROM c", "SELECT VALUE (-c.a) * (~c.b) FROM c"},
		{"SELECT VALUE - -1", "SELECT VALUE -(-1)"},
		{"SELECT VALUE 1 - -1", "SELECT VALUE 1 - (-1)"},
		{"SELECT VALUE c.a ?? c.b ?? 3 FROM c", "SELECT VALUE (c.a ?? c.b) ?? 3 FROM c"},
		{"SELECT VALUE c.a ? 1 : c.b ? 2 : 3 FROM c", "SELECT VALUE c.a ? 1 : (c.b ? 2 : 3) FROM c"},
		{"SELECT VALUE c.a OR c.b ? 1 : 2 FROM c", "SELECT VALUE (c.a OR c.b) ? 1 : 2 FROM c"},
		{"SELECT * FROM c WHERE c.a <> 1 AND c.b != 2", "SELECT * FROM c WHERE (c.a != 1) AND (c.b != 2)"},
		// Predicates.
		{"SELECT * FROM c WHERE c.a IN (1, 'x', @p)", `SELECT * FROM c WHERE c.a IN (1, "x", @p)`},
		{"SELECT * FROM c WHERE c.a NOT IN (1) AND c.b", "SELECT * FROM c WHERE (c.a NOT IN (1)) AND c.b"},
		{"SELECT * FROM c WHERE c.a BETWEEN 1 AND 5 AND c.b", "SELECT * FROM c WHERE (c.a BETWEEN 1 AND 5) AND c.b"},
		{"SELECT * FROM c WHERE c.a NOT BETWEEN 1 + 1 AND 5", "SELECT * FROM c WHERE c.a NOT BETWEEN (1 + 1) AND 5"},
		{"SELECT * FROM c WHERE c.s LIKE 'a%' ESCAPE '!'", `SELECT * FROM c WHERE c.s LIKE "a%" ESCAPE "!"`},
		{"SELECT * FROM c WHERE c.s NOT LIKE @p", "SELECT * FROM c WHERE c.s NOT LIKE @p"},
		// Calls and subqueries.
		{"SELECT * FROM c WHERE IS_NULL(c.a) OR FullTextContains(c.title, \"search\")",
			`SELECT * FROM c WHERE IS_NULL(c.a) OR FullTextContains(c.title, "search")`},
		{"SELECT VALUE udf.tax(c.price) FROM c", "SELECT VALUE udf.tax(c.price) FROM c"},
		{"SELECT VALUE PI()", "SELECT VALUE PI()"},
		{"SELECT VALUE LEFT(c.s, 2) FROM c", "SELECT VALUE LEFT(c.s, 2) FROM c"},
		{"SELECT * FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'a')",
			`SELECT * FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = "a")`},
		{"SELECT ARRAY(SELECT VALUE t.n FROM t IN c.tags) AS ns FROM c",
			"SELECT ARRAY(SELECT VALUE t.n FROM t IN c.tags) AS ns FROM c"},
		{"SELECT VALUE (SELECT VALUE COUNT(1) FROM t IN c.tags) FROM c",
			"SELECT VALUE (SELECT VALUE COUNT(1) FROM t IN c.tags) FROM c"},
		{"SELECT VALUE (1).a", "SELECT VALUE (1).a"},
		// Comments and whitespace.
		{"SELECT * -- all\nFROM c\r\n\tWHERE c.a = 1 -- tail", "SELECT * FROM c WHERE c.a = 1"},
	}
	for _, tt := range tests {
		q, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q) error: %v", tt.in, err)
			continue
		}
		if got := q.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		q2, err := Parse(q.String())
		if err != nil {
			t.Errorf("Parse(%q) (reprinted) error: %v", q.String(), err)
			continue
		}
		if d := cmp.Diff(q, q2, ignorePos); d != "" {
			t.Errorf("Parse(%q) round trip differs (-first +second):\n%s", tt.in, d)
		}
	}
}

func TestParseAST(t *testing.T) {
	q, err := Parse("SELECT c.id AS id FROM root c JOIN t IN c.tags WHERE c.n >= @min ORDER BY c.n DESC OFFSET 1 LIMIT 2")
	if err != nil {
		t.Fatal(err)
	}
	want := &Query{
		Select: Select{Items: []SelectItem{{Expr: &Property{X: &Ident{Name: "c"}, Name: "id"}, Alias: "id"}}},
		From:   &From{Alias: "c", Expr: &Ident{Name: "root"}},
		Joins:  []*From{{Alias: "t", In: true, Expr: &Property{X: &Ident{Name: "c"}, Name: "tags"}}},
		Where: &Binary{Op: OpGe, X: &Property{X: &Ident{Name: "c"}, Name: "n"},
			Y: &Param{Name: "@min"}},
		OrderBy: []OrderItem{{Expr: &Property{X: &Ident{Name: "c"}, Name: "n"}, Desc: true}},
		Offset:  &Literal{Kind: LitNumber, Num: 1},
		Limit:   &Literal{Kind: LitNumber, Num: 2},
	}
	if d := cmp.Diff(want, q, ignorePos); d != "" {
		t.Errorf("Parse AST mismatch (-want +got):\n%s", d)
	}
	// Positions: the WHERE comparison sits at ">=", the parameter after it.
	b := q.Where.(*Binary)
	if got, want := b.Pos(), (Position{Offset: 57, Line: 1, Col: 58}); got != want {
		t.Errorf("Where.Pos() = %+v, want %+v", got, want)
	}
	if got, want := b.Y.Pos(), (Position{Offset: 60, Line: 1, Col: 61}); got != want {
		t.Errorf("Where.Y.Pos() = %+v, want %+v", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in        string
		line, col int
		msg       string
	}{
		{"SELECT FROM c", 1, 8, `unexpected "FROM" at line 1, column 8`},
		{"SELECT * FROM", 1, 14, "unexpected end of query at line 1, column 14"},
		{"SELECT *\nFROM c\nWHERE c.a = = 1", 3, 13, `unexpected "=" at line 3, column 13`},
		{"SELECT * FROM c WHERE c.a = 'abc", 1, 29, "unterminated string at line 1, column 29"},
		{`SELECT VALUE "\q"`, 1, 15, `invalid escape sequence "\\q" at line 1, column 15`},
		{"SELECT VALUE 1 ! 2", 1, 16, `invalid character '!' at line 1, column 16`},
		{"SELECT VALUE @", 1, 14, "invalid parameter name at line 1, column 14"},
		{"SELECT VALUE 12abc", 1, 14, `invalid number "12a" at line 1, column 14`},
		{"SELECT VALUE 1e999", 1, 14, "number 1e999 out of range at line 1, column 14"},
		{"SELECT VALUE 0x", 1, 14, `invalid number "0x" at line 1, column 14`},
		{"SELECT VALUE 0x1G", 1, 14, `invalid number "0x1G" at line 1, column 14`},
		{"SELECT VALUE 0x10000000000000000", 1, 14, "number 0x10000000000000000 out of range at line 1, column 14"},
		{"SELECT VALUE c.a .5", 1, 19, `unexpected "5" at line 1, column 19`},
		{"SELECT * FROM c WHERE c.a IN ()", 1, 31, `unexpected ")" at line 1, column 31`},
		{"SELECT * FROM c x y", 1, 19, `unexpected "y" at line 1, column 19`},
		{"SELECT * FROM c ORDER c.a", 1, 23, `unexpected "c" at line 1, column 23`},
		{"SELECT * FROM c OFFSET 1", 1, 25, "unexpected end of query at line 1, column 25"},
		{"SELECT TOP c.a * FROM c", 1, 12, `unexpected "c" at line 1, column 12`},
		{"SELECT VALUE select", 1, 14, `unexpected "select" at line 1, column 14`},
		{"SELECT VALUE EXISTS(1)", 1, 21, `unexpected "1" at line 1, column 21`},
		{"SELECT VALUE udf.f", 1, 19, "unexpected end of query at line 1, column 19"},
		{"SELECT * FROM c JOIN (SELECT 1)", 1, 32, "unexpected end of query at line 1, column 32"},
		{"SELECT * FROM c ORDER BY RANK FullTextScore(c.t, ['a'])", 1, 26, "ORDER BY RANK (full-text and hybrid search ranking) is not supported by Partita at line 1, column 26"},
		{"SELECT * FROM c.a[c.b]", 1, 19, `unexpected "c" at line 1, column 19`},
		{"SELECT VALUE 'é' +", 1, 19, "unexpected end of query at line 1, column 19"},
		{"SELECT 1 2", 1, 10, `unexpected "2" at line 1, column 10`},
		{"SELECT * FROM c.a[0]", 1, 21, "unexpected end of query at line 1, column 21"},
		{"", 1, 1, "unexpected end of query at line 1, column 1"},
		{"SELECT VALUE 'a\nb' +", 2, 5, "unexpected end of query at line 2, column 5"},
		{"SELECT VALUE 'é', 'ü' ü", 1, 23, `invalid character 'ü' at line 1, column 23`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) error = %v, want *SyntaxError", tt.in, err)
			continue
		}
		if se.Line != tt.line || se.Col != tt.col || se.Msg != tt.msg {
			t.Errorf("Parse(%q) = line %d col %d %q, want line %d col %d %q",
				tt.in, se.Line, se.Col, se.Msg, tt.line, tt.col, tt.msg)
		}
	}
}

func TestParseDepthLimit(t *testing.T) {
	deep := "SELECT VALUE "
	for range 500 {
		deep += "("
	}
	deep += "1"
	for range 500 {
		deep += ")"
	}
	if _, err := Parse(deep); err == nil {
		t.Errorf("Parse(500 nested parentheses) = nil error, want a *SyntaxError")
	}
	ok := "SELECT VALUE ((((((((((1))))))))))"
	if _, err := Parse(ok); err != nil {
		t.Errorf("Parse(%q) error: %v", ok, err)
	}
}

// TestParseHeightLimit: chains the parser builds in a loop (c.a.a…, c[0][0]…, 1+1+…,
// 1=1=…, a ?? b ?? …) nest one level per link, and everything after the parser walks them
// recursively: past maxHeight levels, in any part of a query or its subqueries, a query is
// refused (a security review's 260 KB query of 130,000 links took 256 MB of stack). AND and
// OR chains are built balanced: a query of 15,000 ORs parses, its tree 15 levels deep, its
// operands in source order.
func TestParseHeightLimit(t *testing.T) {
	chain := func(head, link string, n int) string { return head + strings.Repeat(link, n) }
	for _, tc := range []struct{ name, at, past string }{
		{"properties", "SELECT VALUE " + chain("c", ".a", maxHeight-1), "SELECT VALUE " + chain("c", ".a", maxHeight)},
		{"indexes", "SELECT VALUE " + chain("c", "[0]", maxHeight-1), "SELECT VALUE " + chain("c", "[0]", maxHeight)},
		{"sums", "SELECT VALUE " + chain("1", "+1", maxHeight-1), "SELECT VALUE " + chain("1", "+1", maxHeight)},
		{"comparisons in WHERE", "SELECT * FROM c WHERE " + chain("1", "=1", maxHeight-2), "SELECT * FROM c WHERE " + chain("1", "=1", maxHeight)},
		{"coalesce in ORDER BY", "SELECT * FROM c ORDER BY " + chain("c.a", " ?? c.a", maxHeight-3), "SELECT * FROM c ORDER BY " + chain("c.a", " ?? c.a", maxHeight)},
		{"in a subquery", "SELECT VALUE ARRAY(SELECT VALUE " + chain("c", ".a", maxHeight-2) + " FROM c)", "SELECT VALUE ARRAY(SELECT VALUE " + chain("c", ".a", maxHeight-1) + " FROM c)"},
		{"in a JOIN", "SELECT VALUE 1 FROM c JOIN t IN " + chain("c", ".a", maxHeight-1), "SELECT VALUE 1 FROM c JOIN t IN " + chain("c", ".a", maxHeight)},
	} {
		if _, err := Parse(tc.at); err != nil {
			t.Errorf("%s: at the limit: %v", tc.name, err)
		}
		_, err := Parse(tc.past)
		if se, ok := errors.AsType[*SyntaxError](err); !ok || !strings.Contains(se.Msg, "nested too deeply") {
			t.Errorf("%s: past the limit: %v; want a *SyntaxError saying nested too deeply", tc.name, err)
		}
	}

	const n = 15000
	terms := make([]string, n)
	for i := range terms {
		terms[i] = fmt.Sprintf("c.a=%d", i)
	}
	q, err := Parse("SELECT * FROM c WHERE " + strings.Join(terms, " OR ") + " AND c.b")
	if err != nil {
		t.Fatal(err)
	}
	height := 0
	var walk func(e Expr, h int)
	walk = func(e Expr, h int) {
		height = max(height, h)
		if b, ok := e.(*Binary); ok && (b.Op == OpOr || b.Op == OpAnd) {
			walk(b.X, h+1)
			walk(b.Y, h+1)
		}
	}
	walk(q.Where, 1)
	if height > 16 {
		t.Errorf("%d ORs: a tree %d levels deep", n, height)
	}
	var got []string
	Inspect(q.Where, func(e Expr) bool {
		if l, ok := e.(*Literal); ok && l.Kind == LitNumber {
			got = append(got, l.Text)
		}
		return true
	})
	if len(got) != n || got[0] != "0" || got[n-1] != fmt.Sprint(n-1) || !slices.IsSortedFunc(got, func(a, b string) int { return cmpInt(a, b) }) {
		t.Errorf("the operands are not in source order: %d of them, first %v", len(got), got[:min(3, len(got))])
	}
	// AND binds tighter than OR: the last OR's operand is "c.a=14999 AND c.b".
	if b, ok := q.Where.(*Binary); !ok || b.Op != OpOr {
		t.Fatalf("WHERE is %T, want an OR", q.Where)
	}
}

func cmpInt(a, b string) int {
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	return x - y
}

// TestParseLimits: each documented query limit accepts a query at it and refuses one past
// it with a *LimitError naming the limit.
func TestParseLimits(t *testing.T) {
	repeat := func(part, sep string, n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = part
		}
		return strings.Join(parts, sep)
	}
	joins := func(n int) string {
		q := "SELECT VALUE 1 FROM c"
		for i := range n {
			q += fmt.Sprintf(" JOIN t%d IN c.a", i)
		}
		return q
	}
	// JOINs in subqueries count too: five here and five outside.
	sub := "SELECT VALUE 1 FROM c WHERE EXISTS(" + joins(5) + ")"
	for i := range 5 {
		sub = strings.Replace(sub, " WHERE", fmt.Sprintf(" JOIN u%d IN c.b WHERE", i), 1)
	}
	for _, tc := range []struct {
		name      string
		at, past  string
		wantInMsg string
	}{
		{"joins", joins(MaxJoins), joins(MaxJoins + 1), "maximum number of joins. The allowed limit is 10"},
		{"subquery joins", sub, strings.Replace(sub, " WHERE", " JOIN v IN c.d WHERE", 1), "joins"},
		{"udf", "SELECT VALUE " + repeat("udf.f(1)", " + ", MaxUDFRefs), "SELECT VALUE " + repeat("udf.f(1)", " + ", MaxUDFRefs+1), "user-defined function references"},
		{"in", "SELECT * FROM c WHERE c.a IN (" + repeat("1", ",", MaxInItems) + ")", "SELECT * FROM c WHERE c.a IN (" + repeat("1", ",", MaxInItems+1) + ")", "IN expression exceeded the maximum limit of 16000"},
		{"length", "SELECT VALUE '" + strings.Repeat("é", MaxQueryLength-len("SELECT VALUE ''")) + "'", "SELECT VALUE '" + strings.Repeat("a", MaxQueryLength) + "'", "query text exceeded the maximum limit of 262144 characters"},
	} {
		if _, err := Parse(tc.at); err != nil {
			t.Errorf("%s: at the limit: %v", tc.name, err)
		}
		_, err := Parse(tc.past)
		le, ok := errors.AsType[*LimitError](err)
		if !ok || !strings.Contains(le.Msg, tc.wantInMsg) {
			t.Errorf("%s: past the limit: %v; want a *LimitError saying %q", tc.name, err, tc.wantInMsg)
		}
	}
}

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-2.5, "-2.5"}, {100000000, "100000000"}, {1e21, "1e+21"},
		{1.5e-7, "1.5e-7"}, {0.000001, "0.000001"}, {123456789012, "123456789012"}, {1e300, "1e+300"},
	}
	for _, tt := range tests {
		if got := FormatNumber(tt.in); got != tt.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsReserved(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"select", true}, {"Value", true}, {"UNDEFINED", true}, {"c", false}, {"root", false},
		{"COUNT", false}, {"selects", false}, {"undefinedx", false},
	}
	for _, tt := range tests {
		if got := IsReserved(tt.in); got != tt.want {
			t.Errorf("IsReserved(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// FuzzParse checks that Parse never panics and that every accepted query prints to text that
// parses back to the same AST and prints identically.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM c",
		"SELECT VALUE c.id FROM root c WHERE c.a = @a AND c['b-c'] IN (1, 'x') ORDER BY c.n DESC",
		"SELECT DISTINCT TOP 3 c.a, COUNT(1) AS n FROM c JOIN t IN c.tags GROUP BY c.a OFFSET 1 LIMIT 2",
		"SELECT VALUE {a: [1, -2.5e3, \"s\\n\"], 'b': c.x ?? null ? 1 : 2} FROM c",
		"SELECT * FROM c WHERE NOT c.a BETWEEN 1 AND 2 OR c.s NOT LIKE 'a%' ESCAPE '!'",
		"SELECT * FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags) AND ARRAY(SELECT 1)[0] = (SELECT VALUE 1)",
		"SELECT VALUE udf.f(1 << 2 >>> 3 | 4 & ~5 ^ 6 || 'x')",
		"SELECT * FROM (SELECT VALUE c FROM c) s -- comment",
		"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.v FROM c)",
		"SELECT VALUE rank FROM c JOIN rank IN c.arr ORDER BY rank DESC",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		q, err := Parse(in)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %T, want *SyntaxError", in, err)
			}
			return
		}
		s := q.String()
		q2, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q, which does not parse: %v", in, s, err)
		}
		if d := cmp.Diff(q, q2, ignorePos); d != "" {
			t.Fatalf("Parse(%q) round trip through %q differs:\n%s", in, s, d)
		}
		if s2 := q2.String(); s2 != s {
			t.Fatalf("printing is not stable: %q then %q", s, s2)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	const q = "SELECT c.id, c.name, c.address.city AS city FROM c JOIN t IN c.tags " +
		"WHERE c.age >= @min AND (c.kind IN ('a', 'b', 'c') OR STARTSWITH(c.name, 'x')) " +
		"ORDER BY c.age DESC OFFSET 10 LIMIT 20"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(q); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParamNames(t *testing.T) {
	cases := []struct {
		q    string
		want []string
	}{
		{"SELECT * FROM c", []string{}},
		{"SELECT * FROM c WHERE c.pk = @pk AND c.n > @n AND c.m < @n", []string{"@n", "@pk"}},
		{"SELECT TOP @top VALUE {a: @a, b: [@b]} FROM c ORDER BY c.x", []string{"@a", "@b", "@top"}},
		{"SELECT c.id FROM c JOIN t IN c.tags WHERE EXISTS(SELECT VALUE 1 FROM x IN c.y WHERE x = @e) OFFSET @o LIMIT @l", []string{"@e", "@l", "@o"}},
		{"SELECT VALUE COUNT(1) FROM (SELECT * FROM c WHERE c.a = @in) s GROUP BY s.g", []string{"@in"}},
		{"SELECT ARRAY(SELECT VALUE t FROM t IN c.tags WHERE t = @arr) AS a, (SELECT VALUE MAX(@sub)) AS m FROM c", []string{"@arr", "@sub"}},
		{"SELECT * FROM c WHERE REGEXMATCH(c.s, @re, @mod) AND c.v BETWEEN @lo AND @hi AND c.k IN (@i1, @i2) AND (c.b ? @t : @f) AND c.l LIKE @p ESCAPE '!'",
			[]string{"@f", "@hi", "@i1", "@i2", "@lo", "@mod", "@p", "@re", "@t"}},
	}
	for _, tc := range cases {
		q, err := Parse(tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		if got := ParamNames(q); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ParamNames = %q, want %q", tc.q, got, tc.want)
		}
	}
}
