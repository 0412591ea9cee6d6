package engine

// TestQueryDifferential: a randomized differential test of the query
// engine. Random documents go into several containers of one engine and
// random queries must agree between them:
//
//   - "k" (default policy, 4 ranges) vs "scan" (indexingMode none, 4 ranges)
//     vs "cust" (some paths excluded, composite indexes, 4 ranges) vs "one"
//     (default policy, 1 range): index path vs scan, and layouts;
//   - the query drained in pages of 1, 2, 3, 7 and 100 vs unpaged;
//   - scoped to one partition key vs cross-partition with c.pk = that key.
//
// QUERYDIFF_SEED sets the seed (default: 1), QUERYDIFF_N the number of
// queries (default 200), QUERYDIFF_SEEDS how many consecutive seeds to run
// (default 1), QUERYDIFF_DOCS the documents (default 20-250 by seed).
// Every failure prints the seed and the query. Result rows that are not
// valid JSON fail the test (the engine writes strings with control
// characters with Go escapes); QUERYDIFF_IGNORE_INVALID_JSON=1 turns that
// off (rows are repaired before comparing either way). QUERYDIFF_DUMP=1
// logs the documents.
//
//	go test ./internal/engine -run TestQueryDifferential -count=1 -v
//	QUERYDIFF_SEED=7 QUERYDIFF_N=2000 go test ./internal/engine -run TestQueryDifferential -count=1

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/index"
	"github.com/partitadb/partita/internal/query/plan"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

type qdGen struct {
	r      *rand.Rand
	params map[string][]byte
	np     int
}

var qdStrings = []string{`""`, `"a"`, `"A"`, `"ab"`, `"abc"`, `"b"`, `"é"`, `"日本"`, `"a b"`, `"10"`, `"2"`, `"-1"`, `"true"`, `"null"`,
	`"\uff21"`, `"😀"`, `"\ue000"`, `"a😀"`, `"a\uffff"`, `"É"`, `"\u212a"`, `"k"`, `"K"`, `"ß"`, `"SS"`, `"a\u0000"`, `"a\u0000b"`, `"\u0000"`, `"a\u0001"`, `"\u007f"`, `"İ"`, `"i"`}

func (g *qdGen) longString() string {
	var s string
	switch g.r.IntN(4) {
	case 0:
		s = strings.Repeat("q", index.StringTermBytes-3+g.r.IntN(8))
	case 1:
		s = strings.Repeat("é", index.StringTermBytes/2-2+g.r.IntN(4))
	case 2:
		// Longer than the value a continuation carries (maxTokenValue).
		s = strings.Repeat("q", maxTokenValue-2+g.r.IntN(4))
	default:
		s = strings.Repeat("q", index.StringTermBytes-1) + "é"
	}
	s += []string{"", "a", "b", "aa", "é", "z"}[g.r.IntN(6)]
	b, _ := json.Marshal(s)
	return string(b)
}

// scalar returns a random JSON scalar, biased to collide often.
func (g *qdGen) scalar() string {
	switch g.r.IntN(12) {
	case 0, 1, 2:
		return strconv.Itoa(g.r.IntN(7) - 3)
	case 3:
		return []string{"-0", "0.5", "-1.5", "2.25", "0.0", "1.0", "-0.0"}[g.r.IntN(7)]
	case 4:
		return []string{"9007199254740993", "9007199254740992", "1e20", "-1e300", "123456789012", "1.7976931348623157e308", "5e-324", "-9223372036854775808", "18446744073709551616", "1e-7"}[g.r.IntN(10)]
	case 5, 6:
		return qdStrings[g.r.IntN(len(qdStrings))]
	case 7:
		return g.longString()
	case 8:
		return []string{"true", "false"}[g.r.IntN(2)]
	case 9:
		return "null"
	default:
		return strconv.Itoa(g.r.IntN(3))
	}
}

// value returns a random JSON value, sometimes an array or object.
func (g *qdGen) value(depth int) string {
	if depth < 2 {
		switch g.r.IntN(10) {
		case 0:
			n := g.r.IntN(4)
			parts := make([]string, n)
			for i := range parts {
				parts[i] = g.value(depth + 1)
			}
			return "[" + strings.Join(parts, ",") + "]"
		case 1:
			var parts []string
			if g.r.IntN(3) > 0 {
				parts = append(parts, `"x":`+g.value(depth+1))
			}
			if g.r.IntN(2) == 0 {
				parts = append(parts, `"y":`+g.scalar())
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
	}
	return g.scalar()
}

// qdPKs are the partition key values, as JSON; "" is none (no pk property).
var qdPKs = []string{`"p0"`, `"p1"`, `"p2"`, `"p3"`, `"p4"`, `"p5"`, `1`, `"1"`, `0`, `-0`, `1.5`, `true`, `false`, `null`, `""`, ``}

func qdPK(v string) document.PartitionKey {
	h := "[{}]"
	if v != "" {
		h = "[" + v + "]"
	}
	pk, err := document.ParsePKHeader(h)
	if err != nil {
		panic(err)
	}
	return pk
}

// qdPKFilter is the condition selecting partition key value v.
func qdPKFilter(v string) string {
	if v == "" {
		return "NOT IS_DEFINED(c.pk)"
	}
	return "c.pk = " + v
}

func (g *qdGen) doc(i, pki int) (string, document.PartitionKey) {
	if pki < 0 {
		pki = g.r.IntN(len(qdPKs))
		if g.r.IntN(2) == 0 {
			pki = g.r.IntN(6)
		}
	}
	pkv := qdPKs[pki]
	fields := []string{fmt.Sprintf(`"id":"d%03d"`, i)}
	if pkv != "" {
		fields = append(fields, `"pk":`+pkv)
	} else {
		fields = append(fields, `"nopk":true`)
	}
	add := func(name string, p int, v func() string) {
		if g.r.IntN(10) < p {
			fields = append(fields, fmt.Sprintf("%q:%s", name, v()))
		}
	}
	add("a", 9, func() string { return g.value(0) })
	add("b", 7, func() string { return g.value(0) })
	add("n", 8, func() string {
		if g.r.IntN(5) == 0 {
			return g.scalar()
		}
		return strconv.Itoa(g.r.IntN(11) - 5)
	})
	add("s", 8, func() string {
		if g.r.IntN(6) == 0 {
			return g.scalar()
		}
		if g.r.IntN(4) == 0 {
			return g.longString()
		}
		return qdStrings[g.r.IntN(len(qdStrings))]
	})
	add("o", 7, func() string {
		if g.r.IntN(6) == 0 {
			return g.scalar()
		}
		return fmt.Sprintf(`{"x":%s,"y":%s}`, g.value(1), g.scalar())
	})
	add("arr", 8, func() string {
		if g.r.IntN(8) == 0 {
			return g.scalar()
		}
		n := g.r.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			if g.r.IntN(6) == 0 {
				parts[i] = fmt.Sprintf(`{"x":%s}`, g.scalar())
			} else {
				parts[i] = g.scalar()
			}
		}
		return "[" + strings.Join(parts, ",") + "]"
	})
	switch g.r.IntN(4) {
	case 0:
		fields = append(fields, `"p":{"q":`+g.scalar()+`}`)
	case 1:
		fields = append(fields, `"p/q":`+g.scalar())
	case 2:
		fields = append(fields, `"p":{"q/r":`+g.scalar()+`,"~1":`+g.scalar()+`}`)
	}
	switch g.r.IntN(4) {
	case 0:
		fields = append(fields, `"m":[`+g.scalar()+`,`+g.scalar()+`]`)
	case 1:
		fields = append(fields, `"m":{"0":`+g.scalar()+`,"1":`+g.scalar()+`}`)
	case 2:
		fields = append(fields, `"m":{"[]":`+g.scalar()+`}`)
	}
	add("", 2, func() string { return g.scalar() })
	add("we\"ird", 2, func() string { return g.scalar() })
	add("~1", 2, func() string { return g.scalar() })
	add("*", 2, func() string { return g.scalar() })
	add("?", 2, func() string { return g.scalar() })
	add("g", 8, func() string { return []string{`"x"`, `"y"`, `1`, `null`, `true`}[g.r.IntN(5)] })
	g.r.Shuffle(len(fields)-2, func(a, b int) { fields[a+2], fields[b+2] = fields[b+2], fields[a+2] })
	return "{" + strings.Join(fields, ",") + "}", qdPK(pkv)
}

var qdPaths = []string{"c.pk", "c.a", "c.b", "c.n", "c.s", "c.o.x", "c.o.y", "c.arr[0]", "c.arr[1]", "c.g", "c.id", "c['a']", "c.o",
	"c.p.q", `c["p/q"]`, `c.p["q/r"]`, `c.p["~1"]`, "c.m[0]", `c.m["0"]`, `c.m["1"]`, `c.m["[]"]`, `c[""]`, `c["we\"ird"]`, `c["~1"]`, `c["*"]`, `c["?"]`}

func (g *qdGen) path(join bool) string {
	if join && g.r.IntN(3) == 0 {
		return []string{"t", "t.x"}[g.r.IntN(2)]
	}
	return qdPaths[g.r.IntN(len(qdPaths))]
}

// lit returns a literal, sometimes as a parameter.
func (g *qdGen) lit() string {
	v := g.value(1)
	if g.r.IntN(5) == 0 {
		g.np++
		name := fmt.Sprintf("@p%d", g.np)
		g.params[name] = []byte(v)
		return name
	}
	return v
}

func (g *qdGen) strLit() string {
	if g.r.IntN(4) == 0 {
		return g.scalar()
	}
	if g.r.IntN(5) == 0 {
		s := g.longString()
		// a prefix of it
		var str string
		_ = json.Unmarshal([]byte(s), &str)
		cut := g.r.IntN(len(str) + 1)
		for cut > 0 && cut < len(str) && str[cut]&0xC0 == 0x80 {
			cut--
		}
		b, _ := json.Marshal(str[:cut])
		return string(b)
	}
	return qdStrings[g.r.IntN(len(qdStrings))]
}

// simple returns a comparison, IN or BETWEEN of a path and literals: the
// conjuncts an index lookup may decide alone (plan.Physical.Blind).
func (g *qdGen) simple(join bool) string {
	p := g.path(join)
	switch g.r.IntN(3) {
	case 0:
		return p + " " + []string{"=", "<", "<=", ">", ">="}[g.r.IntN(5)] + " " + g.lit()
	case 1:
		parts := make([]string, 1+g.r.IntN(4))
		for i := range parts {
			parts[i] = g.lit()
		}
		return p + " IN (" + strings.Join(parts, ", ") + ")"
	}
	return p + " BETWEEN " + g.lit() + " AND " + g.lit()
}

func (g *qdGen) cond(depth int, join bool) string {
	k := g.r.IntN(16)
	if depth > 2 && k >= 12 {
		k = g.r.IntN(12)
	}
	p := g.path(join)
	switch k {
	case 0, 1, 2, 3:
		op := []string{"=", "!=", "<", "<=", ">", ">=", "<>"}[g.r.IntN(7)]
		if g.r.IntN(6) == 0 {
			return g.lit() + " " + op + " " + p
		}
		return p + " " + op + " " + g.lit()
	case 4:
		n := 1 + g.r.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.lit()
		}
		not := ""
		if g.r.IntN(4) == 0 {
			not = "NOT "
		}
		return p + " " + not + "IN (" + strings.Join(parts, ", ") + ")"
	case 5:
		return p + " BETWEEN " + g.lit() + " AND " + g.lit()
	case 6:
		f := []string{"STARTSWITH", "ENDSWITH", "CONTAINS", "STRINGEQUALS"}[g.r.IntN(4)]
		ci := ""
		if g.r.IntN(4) == 0 {
			ci = ", true"
		}
		return f + "(" + p + ", " + g.strLit() + ci + ")"
	case 7:
		f := []string{"IS_DEFINED", "IS_NUMBER", "IS_STRING", "IS_BOOL", "IS_NULL", "IS_ARRAY", "IS_OBJECT", "IS_PRIMITIVE", "NOT IS_DEFINED"}[g.r.IntN(9)]
		return f + "(" + p + ")"
	case 8:
		arr := []string{"c.arr", "c.a", "c.o.x"}[g.r.IntN(3)]
		if g.r.IntN(4) == 0 {
			return "ARRAY_CONTAINS(" + arr + ", {\"x\": " + g.scalar() + "}, true)"
		}
		return "ARRAY_CONTAINS(" + arr + ", " + g.lit() + ")"
	case 9:
		return p + " = " + g.path(join)
	case 10:
		return []string{"c.a", "c.b", "c.g", "true", "c.n > 0 = true"}[g.r.IntN(5)]
	case 11:
		if g.r.IntN(2) == 0 {
			return []string{"EXISTS(SELECT VALUE x FROM x IN c.arr WHERE x = " + g.lit() + ")",
				"ARRAY_CONTAINS_ANY(c.arr, " + g.lit() + ", " + g.lit() + ")",
				"ARRAY_CONTAINS_ALL(c.arr, " + g.lit() + ", " + g.lit() + ")",
				"STRINGEQUALS(c.s, " + g.strLit() + ", true)",
				"c.id IN ('d001', 'd002')",
				p + " IN (" + g.lit() + ")",
				"NOT " + p + " BETWEEN " + g.lit() + " AND " + g.lit(),
				"IS_DEFINED(" + p + ") = false",
				"(" + p + " > " + g.lit() + ") = false",
				"ABS(c.n) >= 2", "c.n = (SELECT VALUE MAX(x) FROM x IN c.arr)",
				"c.arr = " + g.value(0), "c.o = {\"x\": 1, \"y\": 1}", "c.o.x = " + g.value(0),
				"RegexMatch(c.s, 'a.*')", "c.s > 'qqqq' AND c.s < 'qqqr'", "STARTSWITH(c.s, 'qq') AND c.s >= " + g.longString(),
			}[g.r.IntN(17)]
		}
		return []string{"c.n % 2 = 0", "ARRAY_LENGTH(c.arr) > 1", "LENGTH(c.s) > 3", "c.n + 1 > 2", "LOWER(c.s) = 'a'", "c.s || 'x' = 'ax'", "(c.n ?? 0) > 0"}[g.r.IntN(7)]
	case 12:
		return "NOT (" + g.cond(depth+1, join) + ")"
	case 13, 14:
		return "(" + g.cond(depth+1, join) + " AND " + g.cond(depth+1, join) + ")"
	default:
		return "(" + g.cond(depth+1, join) + " OR " + g.cond(depth+1, join) + ")"
	}
}

type qdQuery struct {
	text    string
	params  map[string][]byte
	ordered bool // ORDER BY: rows carry their keys as k0, k1
	nkeys   int
	window  bool // TOP or OFFSET/LIMIT
	grouped bool // GROUP BY, or DISTINCT without ORDER BY: order undefined
	where   string
	build   func(extra string) string // the text with " AND extra" added to WHERE
}

func (g *qdGen) query() qdQuery {
	g.params = map[string][]byte{}
	g.np = 0
	q := qdQuery{params: g.params}
	join := g.r.IntN(5) == 0
	from := "FROM c"
	if join {
		from += []string{" JOIN t IN c.arr", " JOIN t IN c.a"}[g.r.IntN(2)]
	}
	if g.r.IntN(8) > 0 {
		q.where = g.cond(0, join)
	}
	var sel, tail string
	distinct := ""
	top := ""
	kind := g.r.IntN(10)
	switch {
	case kind < 4: // plain projections
		if g.r.IntN(5) == 0 {
			distinct = "DISTINCT "
			// Order undefined: pages of a DISTINCT without ORDER BY come
			// in the order of their rows' keys (engine.queryToken.KeyOrder).
			q.grouped = true
		}
		switch g.r.IntN(8) {
		case 5:
			if join {
				sel = "VALUE t"
			} else {
				sel = "*"
			}
		case 6:
			sel = "VALUE c"
		case 7:
			sel = "c.id, " + []string{"ARRAY(SELECT VALUE x FROM x IN c.arr WHERE x > 0) AS pos", "EXISTS(SELECT VALUE x FROM x IN c.arr WHERE IS_STRING(x)) AS hs", "ABS(c.n) AS abs", "c.n * 2 AS dbl", "IS_DEFINED(c.a) ? c.a : 'none' AS d", "ARRAY_LENGTH(c.arr) AS len"}[g.r.IntN(6)]
		case 0:
			sel = "VALUE " + g.path(join)
		case 1:
			sel = "c.id, " + g.path(join) + " AS v"
		case 2:
			sel = "VALUE {\"id\": c.id, \"v\": " + g.path(join) + "}"
		case 3:
			sel = "VALUE c.id"
		default:
			sel = g.path(join) + " AS v, " + g.path(join) + " AS w"
		}
		if g.r.IntN(4) == 0 {
			top = fmt.Sprintf("TOP %d ", g.r.IntN(8))
			q.window = true
		} else if g.r.IntN(4) == 0 {
			tail = fmt.Sprintf(" OFFSET %d LIMIT %d", g.r.IntN(6), g.r.IntN(10))
			q.window = true
		}
	case kind < 7: // ORDER BY
		q.ordered = true
		keys := []string{}
		nk := 1
		if g.r.IntN(3) == 0 {
			nk = 2
		}
		orderPaths := []string{"c.a", "c.n", "c.s", "c.o.x", "c.g", "c.id", "c.b", "c.arr[0]", "c.p.q", `c["p/q"]`, "c.m[0]", `c.m["0"]`, `c[""]`, `c["~1"]`, `c["we\"ird"]`, `c.m["[]"]`}
		if join {
			orderPaths = append(orderPaths, "t")
		}
		var obs []string
		for i := range nk {
			k := orderPaths[g.r.IntN(len(orderPaths))]
			keys = append(keys, fmt.Sprintf("\"k%d\": %s", i, k))
			dir := []string{"", " ASC", " DESC"}[g.r.IntN(3)]
			obs = append(obs, k+dir)
		}
		q.nkeys = nk
		if g.r.IntN(6) == 0 {
			distinct = "DISTINCT "
		}
		sel = "VALUE {" + strings.Join(keys, ", ") + ", \"id\": c.id, \"v\": " + g.path(join) + "}"
		tail = " ORDER BY " + strings.Join(obs, ", ")
		if g.r.IntN(4) == 0 {
			top = fmt.Sprintf("TOP %d ", g.r.IntN(8))
			q.window = true
		} else if g.r.IntN(4) == 0 {
			tail += fmt.Sprintf(" OFFSET %d LIMIT %d", g.r.IntN(6), g.r.IntN(10))
			q.window = true
		}
	case kind < 9: // aggregates
		p := []string{"c.a", "c.n", "c.s", "c.b", "c.o.x", "c.arr[0]"}[g.r.IntN(6)]
		if join && g.r.IntN(2) == 0 {
			p = "t"
		}
		agg := []string{"COUNT(1)", "COUNT(" + p + ")", "SUM(" + p + ")", "MIN(" + p + ")", "MAX(" + p + ")", "AVG(" + p + ")"}
		if g.r.IntN(3) == 0 {
			// What lookups may count without loading a document: a
			// projection that reads none, conjuncts a lookup decides.
			sel = []string{"VALUE COUNT(1)", "COUNT(1) AS n, SUM(2) AS s", "VALUE 1"}[g.r.IntN(3)]
			conj := make([]string, 1+g.r.IntN(3))
			for i := range conj {
				conj[i] = g.simple(join)
			}
			q.where = strings.Join(conj, " AND ")
		} else if g.r.IntN(2) == 0 {
			sel = "VALUE " + agg[g.r.IntN(len(agg))]
		} else {
			sel = "COUNT(1) AS n, " + agg[g.r.IntN(len(agg))] + " AS x, " + agg[g.r.IntN(len(agg))] + " AS y"
		}
	default: // GROUP BY
		q.grouped = true
		gk := []string{"c.g", "c.n", "c.pk", "c.s", "c.a"}[g.r.IntN(5)]
		p := []string{"c.a", "c.n", "c.s", "c.b"}[g.r.IntN(4)]
		sel = gk + " AS key, COUNT(1) AS n, MIN(" + p + ") AS lo, MAX(" + p + ") AS hi, SUM(" + p + ") AS s"
		tail = " GROUP BY " + gk
	}
	q.build = func(extra string) string {
		w := q.where
		if extra != "" {
			if w == "" {
				w = extra
			} else {
				w = "(" + w + ") AND " + extra
			}
		}
		text := "SELECT " + distinct + top + sel + " " + from
		if w != "" {
			text += " WHERE " + w
		}
		return text + tail
	}
	q.text = q.build("")
	return q
}

type qdResult struct {
	rows []string
	err  string
	// blind: a page ran without loading documents (plan.Physical.Blind).
	blind bool
	// ranged: a page intersected a range or prefix with its lookup.
	ranged bool
	// matched: a page read a match lookup (plan.Match) rather than a scan.
	matched bool
}

func (r qdResult) String() string {
	if r.err != "" {
		return "error: " + r.err
	}
	return "[" + strings.Join(r.rows, ", ") + "]"
}

func qdRun(e *Engine, coll string, scope Scope, q Query) qdResult {
	return qdRunSizes(e, coll, scope, q, nil)
}

// qdRunSizes is qdRun whose page i asks for sizes(i) items (nil: q.MaxItems).
func qdRunSizes(e *Engine, coll string, scope Scope, q Query, sizes func(int) int) qdResult {
	var out []string
	blind, ranged, matched := false, false, false
	for pages := 0; pages < 3000; pages++ {
		if sizes != nil {
			q.MaxItems = sizes(pages)
		}
		p, err := e.QueryItems(context.Background(), "db", coll, scope, q)
		if err != nil {
			return qdResult{err: fmt.Sprintf("%d %v", code(err), err)}
		}
		if q.MaxItems > 0 && len(p.Items) > q.MaxItems {
			return qdResult{err: fmt.Sprintf("page of %d items, max %d", len(p.Items), q.MaxItems)}
		}
		for _, it := range p.Items {
			out = append(out, qdRow(q.Text, it))
		}
		blind = blind || p.Metrics.Plan.Blind
		for _, o := range p.Metrics.Plan.Intersect {
			ranged = ranged || o.Kind == "range" || o.Kind == "prefix"
		}
		if l := p.Metrics.Plan.Lookup; l != nil && l.Kind == "match" && p.Metrics.Plan.Access != plan.OrderScan {
			matched = true
		}
		if p.Continuation == "" {
			return qdResult{rows: out, blind: blind, ranged: ranged, matched: matched}
		}
		q.Continuation = p.Continuation
	}
	return qdResult{err: fmt.Sprintf("no end after 3000 pages (%d rows so far; last continuation %s)", len(out), q.Continuation)}
}

// Rows that are not valid JSON: the engine writes some strings with Go's
// escapes (\x00, \a, \v, \U0001xxxx) instead of JSON's.
var (
	qdInvalid      atomic.Int64
	qdInvalidSeen  atomic.Bool
	qdInvalidFirst string
	qdGoEscape     = regexp.MustCompile(`\\(x[0-9a-f]{2}|a|v|U[0-9a-f]{8})`)
)

func qdRow(text string, it []byte) string {
	row := string(it)
	if !json.Valid(it) {
		qdInvalid.Add(1)
		if qdInvalidSeen.CompareAndSwap(false, true) {
			qdInvalidFirst = text + " → " + row
		}
		row = qdFixGoEscapes(row)
	}
	return qdStrip(row)
}

// qdFixGoEscapes rewrites Go escapes as JSON ones, so that the rows still
// compare (approximately: a literal backslash before them would confuse it).
func qdFixGoEscapes(row string) string {
	return qdGoEscape.ReplaceAllStringFunc(row, func(m string) string {
		switch m[1] {
		case 'x':
			return `\u00` + m[2:]
		case 'a':
			return `\u0007`
		case 'v':
			return `\u000b`
		}
		r, _ := strconv.ParseUint(m[2:], 16, 32)
		return string(utf16Pair(rune(r)))
	})
}

func utf16Pair(r rune) string {
	r1, r2 := utf16.EncodeRune(r)
	return fmt.Sprintf(`\u%04x\u%04x`, r1, r2)
}

// qdStrip removes the system properties, which differ between containers.
func qdStrip(row string) string {
	if !strings.Contains(row, `"_rid"`) {
		return row
	}
	var v any
	d := json.NewDecoder(strings.NewReader(row))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return row
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case []any:
			for _, y := range x {
				walk(y)
			}
		case map[string]any:
			for _, k := range []string{"_rid", "_self", "_etag", "_ts", "_attachments", "_lsn"} {
				delete(x, k)
			}
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	b, _ := json.Marshal(v)
	return string(b)
}

// qdNorm rewrites a row with floats rounded (sums differ in their last bits
// between summation orders) and object keys sorted.
func qdNorm(row string) string {
	var v any
	d := json.NewDecoder(strings.NewReader(row))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return row
	}
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return string(x)
			}
			if f == 0 {
				f = 0
			}
			return strconv.FormatFloat(f, 'g', 10, 64)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return x
	}
	b, _ := json.Marshal(walk(v))
	return string(b)
}

func qdKeys(row string, n int) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(row), &m) != nil {
		return row
	}
	var ks []string
	for i := range n {
		v, ok := m[fmt.Sprintf("k%d", i)]
		if !ok {
			ks = append(ks, "undef")
		} else {
			ks = append(ks, qdNorm(string(v)))
		}
	}
	return strings.Join(ks, "|")
}

func qdMultiset(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = qdNorm(r)
	}
	slices.Sort(out)
	return out
}

// qdOrderByRefused: the containers' policies legitimately differ in which
// ORDER BYs they serve.
func qdOrderByRefused(r qdResult) bool {
	return strings.Contains(r.err, "composite index") || strings.Contains(r.err, "requires a range index")
}

// qdAgree compares two results of the same query; exact: same order too.
func qdAgree(q qdQuery, a, b qdResult, exact bool) (bool, string) {
	if a.err != "" || b.err != "" {
		if a.err == b.err {
			return true, ""
		}
		if qdOrderByRefused(a) || qdOrderByRefused(b) {
			return true, ""
		}
		return false, "errors differ"
	}
	if exact {
		if slices.Equal(a.rows, b.rows) {
			return true, ""
		}
		return false, "rows differ (exact)"
	}
	if q.ordered {
		ka := make([]string, len(a.rows))
		kb := make([]string, len(b.rows))
		for i, r := range a.rows {
			ka[i] = qdKeys(r, q.nkeys)
		}
		for i, r := range b.rows {
			kb[i] = qdKeys(r, q.nkeys)
		}
		if !slices.Equal(ka, kb) {
			return false, "order keys differ"
		}
		if q.window {
			return true, ""
		}
	} else if q.window {
		// Which rows a window keeps depends on the (undefined) order.
		if len(a.rows) != len(b.rows) {
			return false, "window sizes differ"
		}
		return true, ""
	}
	if !slices.Equal(qdMultiset(a.rows), qdMultiset(b.rows)) {
		return false, "row multisets differ"
	}
	return true, ""
}

func qdParamString(p map[string][]byte) string {
	if len(p) == 0 {
		return ""
	}
	var parts []string
	for k, v := range p {
		parts = append(parts, k+"="+string(v))
	}
	slices.Sort(parts)
	return " params{" + strings.Join(parts, ", ") + "}"
}

func TestQueryDifferential(t *testing.T) {
	seed0 := envInt("QUERYDIFF_SEED", 1)
	nq := envInt("QUERYDIFF_N", 200)
	nseeds := envInt("QUERYDIFF_SEEDS", 1)
	ndocs := envInt("QUERYDIFF_DOCS", 0)
	t.Cleanup(func() {
		if n := qdInvalid.Load(); n > 0 && os.Getenv("QUERYDIFF_IGNORE_INVALID_JSON") == "" {
			t.Errorf("%d result rows were not valid JSON; the first: %s", n, qdInvalidFirst)
		}
	})
	for s := seed0; s < seed0+nseeds; s++ {
		n := ndocs
		if n == 0 {
			n = []int{20, 60, 120, 250}[s%4]
		}
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) { qdRunSeed(t, uint64(s), nq, n) })
	}
}

func qdRunSeed(t *testing.T, seed uint64, nq, ndocs int) {
	e := testEngine(t)
	e.cfg.GatewayQueryFull = true
	if os.Getenv("QUERYDIFF_PAGE_TIME") != "" {
		// Pages cut short by the time budget.
		d, err := time.ParseDuration(os.Getenv("QUERYDIFF_PAGE_TIME"))
		if err != nil {
			t.Fatal(err)
		}
		e.cfg.QueryPageTime = d
	}
	ctx := context.Background()
	// Composite indexes for every pair of ORDER BY paths the generator uses.
	var comps []string
	ops := []string{"/a", "/n", "/s", "/o/x", "/g", "/id", "/b", "/arr/0"}
	for _, x := range ops {
		for _, y := range ops {
			if x != y {
				for _, d := range []string{"ascending", "descending"} {
					comps = append(comps, fmt.Sprintf(`[{"path":%q,"order":"ascending"},{"path":%q,"order":%q}]`, x, y, d))
				}
			}
		}
	}
	rich := `"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[` + strings.Join(comps, ",") + `]}`
	for _, def := range []struct {
		body string
		ru   int
	}{
		{`{"id":"scan","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"none","automatic":false}}`, 24000},
		{`{"id":"one","partitionKey":{"paths":["/pk"]},` + rich + `}`, 400},
		{`{"id":"split","partitionKey":{"paths":["/pk"]},` + rich + `}`, 400},
		{`{"id":"ms","partitionKey":{"paths":["/pk"]},` + rich + `}`, 400},
		{`{"id":"h","partitionKey":{"paths":["/pk","/g"],"kind":"MultiHash","version":2}}`, 24000},
		{`{"id":"re","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"none","automatic":false}}`, 24000},
		{`{"id":"cust","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/b/?"},{"path":"/o/*"},{"path":"/arr/[]/?"}],` +
			`"compositeIndexes":[[{"path":"/a","order":"ascending"},{"path":"/n","order":"ascending"}],[{"path":"/s","order":"ascending"},{"path":"/id","order":"descending"}],[{"path":"/n","order":"descending"},{"path":"/a","order":"ascending"}],[{"path":"/g","order":"ascending"},{"path":"/s","order":"ascending"}]]}}`, 24000},
	} {
		if _, err := e.CreateContainer("db", []byte(def.body), Throughput{Manual: def.ru}); err != nil {
			t.Fatal(err)
		}
	}
	colls := []string{"k", "scan", "one", "cust", "split", "re"}
	allColls := append(slices.Clone(colls), "ms")
	g := &qdGen{r: rand.New(rand.NewPCG(seed, 0x9e3779b9))}
	var docs []string
	var docPK []int
	for i := range ndocs {
		pki := g.r.IntN(len(qdPKs))
		if g.r.IntN(2) == 0 {
			pki = g.r.IntN(6)
		}
		body, pk := g.doc(i, pki)
		docs = append(docs, body)
		docPK = append(docPK, pki)
		for _, coll := range allColls {
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: coll, Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
				t.Fatalf("seed %d: write %s: %v", seed, body, err)
			}
		}
	}
	hpk := func(body string) document.PartitionKey {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		h := "["
		for i, k := range []string{"pk", "g"} {
			if i > 0 {
				h += ","
			}
			if v, ok := m[k]; ok {
				h += string(v)
			} else {
				h += "{}"
			}
		}
		pk, err := document.ParsePKHeader(h + "]")
		if err != nil {
			t.Fatal(err)
		}
		return pk
	}
	// Some replaces and deletes, the same in every container.
	for i := 0; i < ndocs; i += 9 {
		id := fmt.Sprintf("d%03d", i)
		nb, pk := g.doc(i, docPK[i])
		for _, coll := range allColls {
			if i%2 == 0 {
				if _, err := e.DeleteItem(ctx, ItemRef{DB: "db", Container: coll, ID: id}, pk, "", TriggerSet{}); err != nil {
					t.Fatal(err)
				}
			} else if _, err := e.WriteItem(ctx, Write{DB: "db", Container: coll, Kind: Upsert, PK: pk, Body: []byte(nb)}); err != nil {
				t.Fatalf("upsert %s: %v", nb, err)
			}
		}
		if i%2 == 0 {
			docs[i] = ""
		} else {
			docs[i] = nb
		}
	}
	// Random patches, the same in every container.
	for i := 1; i < ndocs; i += 4 {
		if docs[i] == "" {
			continue
		}
		var ops []string
		for range 1 + g.r.IntN(3) {
			switch g.r.IntN(8) {
			case 0:
				ops = append(ops, `{"op":"set","path":"/a","value":`+g.value(1)+`}`)
			case 1:
				ops = append(ops, `{"op":"remove","path":"/b"}`)
			case 2:
				ops = append(ops, `{"op":"incr","path":"/n","value":`+[]string{"1", "0.5", "-2"}[g.r.IntN(3)]+`}`)
			case 3:
				ops = append(ops, `{"op":"add","path":"/arr/`+[]string{"0", "-", "1"}[g.r.IntN(3)]+`","value":`+g.scalar()+`}`)
			case 4:
				ops = append(ops, `{"op":"set","path":"/o/x","value":`+g.value(1)+`}`)
			case 5:
				ops = append(ops, `{"op":"replace","path":"/s","value":`+g.scalar()+`}`)
			case 6:
				ops = append(ops, `{"op":"move","from":"/a","path":"/b"}`)
			default:
				ops = append(ops, `{"op":"add","path":"/m/0","value":`+g.scalar()+`}`)
			}
		}
		body := `{"operations":[` + strings.Join(ops, ",") + `]}`
		var first string
		for j, coll := range allColls {
			_, err := e.PatchItem(ctx, ItemRef{DB: "db", Container: coll, ID: fmt.Sprintf("d%03d", i)}, qdPK(qdPKs[docPK[i]]), []byte(body), "")
			got := fmt.Sprint(code(err))
			if j == 0 {
				first = got
			} else if got != first {
				t.Errorf("seed %d: patch %s of d%03d: %s in %s, %s in k", seed, body, i, got, coll, first)
			}
		}
	}
	// h: the documents as they are now, under hierarchical keys.
	for i := range ndocs {
		r, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: fmt.Sprintf("d%03d", i)}, qdPK(qdPKs[docPK[i]]), "")
		if code(err) == 404 {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		body := qdStrip(string(r.Body))
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "h", Kind: Create, PK: hpk(body), Body: []byte(body)}); err != nil {
			t.Fatalf("seed %d: write h %s: %v", seed, body, err)
		}
	}
	// split: one range split into several after loading.
	for range 3 {
		c, _ := e.container("db", "split")
		rs := c.Map().Ranges()
		if _, err := e.SplitRange(ctx, "db", "split", rs[g.r.IntN(len(rs))].ID); err != nil {
			t.Logf("split: %v", err)
		}
	}
	// re: indexed only now, by a policy replacement (a rebuild).
	if _, err := e.ReplaceContainer("db", "re", []byte(`{"id":"re","partitionKey":{"paths":["/pk"]},`+rich+`}`), ""); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("QUERYDIFF_DUMP") != "" {
		for _, d := range docs {
			if d != "" {
				t.Log(d)
			}
		}
	}
	fails, tieDiffs := 0, 0
	stats := map[string]int{}
	splitsLeft := 12
	defer func() { t.Logf("seed %d stats: %v", seed, stats) }()
	report := func(qi int, q qdQuery, what, why string, a, b qdResult) {
		fails++
		if fails > 15 {
			return
		}
		t.Errorf("seed %d query #%d: %s: %s\n  %s%s\n  A: %v\n  B: %v", seed, qi, what, why, q.text, qdParamString(q.params), a, b)
	}
	for qi := range nq {
		q := g.query()
		base := Query{Text: q.text, Params: q.params, EnableCrossPartition: true, MaxItems: -1}
		res := map[string]qdResult{}
		for _, coll := range colls {
			res[coll] = qdRun(e, coll, Scope{}, base)
		}
		for _, coll := range colls {
			switch r := res[coll]; {
			case r.err != "":
				stats[coll+" err"]++
				if os.Getenv("QUERYDIFF_ERRS") != "" && !qdOrderByRefused(r) {
					t.Logf("%s: %s", q.text, r.err)
				}
			case len(r.rows) == 0:
				stats[coll+" empty"]++
			default:
				stats[coll+" rows"]++
			}
			if res[coll].blind {
				stats[coll+" blind"]++
			}
			if res[coll].matched {
				stats[coll+" matched"]++
			}
			if res[coll].ranged {
				stats[coll+" ranged"]++
			}
		}
		for _, coll := range colls[1:] {
			// k vs scan/cust: same layout, same document order.
			exact := coll != "one" && coll != "split" && !q.ordered && !q.grouped && !strings.Contains(q.text, "DISTINCT")
			if ok, why := qdAgree(q, res["k"], res[coll], exact); !ok {
				report(qi, q, "k vs "+coll, why, res["k"], res[coll])
			}
		}
		// Hierarchical keys: a prefix scope or a full key vs the filter on scan.
		{
			gs := []string{`"x"`, `"y"`, `1`, `null`, `true`, ``}
			gv := gs[g.r.IntN(len(gs))]
			pkv := qdPKs[g.r.IntN(len(qdPKs))]
			hk := qdPK(pkv)
			filter := qdPKFilter(pkv)
			if g.r.IntN(2) == 0 {
				if gv == "" {
					hk = append(hk, document.PKValue{Kind: document.Undefined})
					filter += " AND NOT IS_DEFINED(c.g)"
				} else {
					hk = append(hk, qdPK(gv)...)
					filter += " AND c.g = " + gv
				}
			}
			sq := base
			sq.EnableCrossPartition = false
			scoped := qdRun(e, "h", Scope{PK: hk}, sq)
			fq := base
			fq.Text = q.build(filter)
			want := qdRun(e, "scan", Scope{}, fq)
			if !q.window || q.ordered {
				if ok, why := qdAgree(q, want, scoped, false); !ok && !qdOrderByRefused(scoped) {
					report(qi, q, fmt.Sprintf("h scoped to %v vs scan filtered (%s)", hk, fq.Text), why, want, scoped)
				}
			}
			cross := qdRun(e, "h", Scope{}, fq)
			if ok, why := qdAgree(q, want, cross, false); !ok {
				report(qi, q, fmt.Sprintf("h cross-partition vs scan, filtered (%s)", fq.Text), why, want, cross)
			}
		}
		// A filter narrowing to some partition keys vs the same filter made
		// unnarrowable.
		{
			n := 1 + g.r.IntN(3)
			var vs, fs []string
			for range n {
				v := qdPKs[g.r.IntN(len(qdPKs)-1)]
				vs = append(vs, v)
				fs = append(fs, qdPKFilter(v))
			}
			var narrow string
			if g.r.IntN(2) == 0 {
				narrow = "c.pk IN (" + strings.Join(vs, ", ") + ")"
			} else {
				narrow = "(" + strings.Join(fs, " OR ") + ")"
			}
			wide := "(" + narrow + " OR c.id = 'zzz')"
			for _, coll := range []string{"k", "one", "split"} {
				nq := base
				nq.Text = q.build(narrow)
				a := qdRun(e, coll, Scope{}, nq)
				nq.Text = q.build(wide)
				b := qdRun(e, coll, Scope{}, nq)
				if ok, why := qdAgree(q, a, b, false); !ok {
					report(qi, q, fmt.Sprintf("%s narrowed %s vs wide", coll, narrow), why, a, b)
				}
			}
		}
		// A split between two pages: the same rows, or a clean refusal.
		if qi%10 == 3 && splitsLeft > 0 {
			whole := qdRun(e, "ms", Scope{}, base)
			pq := base
			pq.MaxItems = 1 + g.r.IntN(3)
			p, err := e.QueryItems(ctx, "db", "ms", Scope{}, pq)
			if err == nil && p.Continuation != "" {
				c, _ := e.container("db", "ms")
				rs := c.Map().Ranges()
				split := false
				for _, i := range g.r.Perm(len(rs)) {
					if _, err := e.SplitRange(ctx, "db", "ms", rs[i].ID); err == nil {
						split = true
						break
					}
				}
				if !split {
					splitsLeft = 0
				}
				var first []string
				for _, it := range p.Items {
					first = append(first, qdRow(pq.Text, it))
				}
				pq.Continuation = p.Continuation
				rest := qdRun(e, "ms", Scope{}, pq)
				if rest.err != "" && strings.Contains(rest.err, "restart the query") {
					stats["ms restart"]++
				} else {
					rest.rows = append(first, rest.rows...)
					stats["ms resumed"]++
					if ok, why := qdAgree(q, whole, rest, false); !ok {
						report(qi, q, fmt.Sprintf("ms: pages of %d with a split after the first", pq.MaxItems), why, whole, rest)
					}
				}
			}
		}
		// Paging: exactly the unpaged rows.
		for _, coll := range []string{"k", "scan", "one"} {
			if res[coll].err != "" {
				continue
			}
			size := []int{1, 2, 3, 7, 100}[g.r.IntN(5)]
			pq := base
			pq.MaxItems = size
			got := qdRun(e, coll, Scope{}, pq)
			exact := !q.grouped && !q.ordered
			if q.ordered && got.err == "" && !slices.Equal(got.rows, res[coll].rows) {
				tieDiffs++
			}
			if ok, why := qdAgree(q, res[coll], got, exact); !ok {
				report(qi, q, fmt.Sprintf("%s unpaged vs pages of %d", coll, size), why, res[coll], got)
			}
			// Pages of changing sizes: the same rows (ties may reorder).
			var log []int
			vary := qdRunSizes(e, coll, Scope{}, base, func(int) int {
				n := []int{1, 2, 3, 7, 100, -1}[g.r.IntN(6)]
				log = append(log, n)
				return n
			})
			if vary.err != "" && strings.Contains(vary.err, "page of") {
				vary.err = ""
			}
			if ok, why := qdAgree(q, res[coll], vary, false); !ok {
				report(qi, q, fmt.Sprintf("%s unpaged vs pages of sizes %v", coll, log), why, res[coll], vary)
			}
		}
		// Scoped to a partition key vs cross-partition filtered on it.
		pkv := qdPKs[g.r.IntN(len(qdPKs))]
		pk := qdPK(pkv)
		for _, coll := range []string{"k", "scan"} {
			sq := base
			sq.EnableCrossPartition = false
			scoped := qdRun(e, coll, Scope{PK: pk}, sq)
			fq := base
			fq.Text = q.build(qdPKFilter(pkv))
			filtered := qdRun(e, coll, Scope{}, fq)
			exact := !q.grouped && !q.ordered
			if ok, why := qdAgree(q, scoped, filtered, exact); !ok {
				report(qi, q, fmt.Sprintf("%s scoped to %s vs filtered (%s)", coll, pkv, fq.Text), why, scoped, filtered)
			}
			if size := []int{1, 2, 3}[g.r.IntN(3)]; scoped.err == "" {
				sq.MaxItems = size
				got := qdRun(e, coll, Scope{PK: pk}, sq)
				if ok, why := qdAgree(q, scoped, got, !q.grouped && !q.ordered); !ok {
					report(qi, q, fmt.Sprintf("%s scoped to %s, pages of %d", coll, pkv, size), why, scoped, got)
				}
			}
		}
	}
	t.Logf("seed %d: %d ORDER BY queries whose pages ordered ties differently from one page", seed, tieDiffs)
	if fails > 0 {
		t.Logf("seed %d: %d failures of %d queries", seed, fails, nq)
	}
}

// Minimal repros of the bugs TestQueryDifferential found.

func qdReproEngine(t *testing.T, docs ...string) *Engine {
	e := testEngine(t)
	e.cfg.GatewayQueryFull = true
	if _, err := e.CreateContainer("db", []byte(`{"id":"scan","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"indexingMode":"none","automatic":false}}`), Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	for _, coll := range []string{"k", "scan"} {
		for _, body := range docs {
			if _, err := e.WriteItem(context.Background(), Write{DB: "db", Container: coll, Kind: Create, PK: pkN(1), Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e
}

// A string with a control character, projected from a document, comes out
// with Go's escapes (\x00, \a, \x7f, \U000e0001): not JSON.
func TestQueryDiffReproInvalidJSON(t *testing.T) {
	e := qdReproEngine(t, `{"id":"x","pk":"p1","s":"a\u0000b","u":"q\"\u007f","bell":"\u0007","w":"\"\udb40\udc01"}`)
	for _, text := range []string{"SELECT VALUE c.s FROM c", "SELECT c.u, c.bell, c.w FROM c", "SELECT VALUE c.s FROM c ORDER BY c.s"} {
		p, err := e.QueryItems(context.Background(), "db", "k", Scope{PK: pkN(1)}, Query{Text: text, MaxItems: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			if !json.Valid(it) {
				t.Errorf("%s: %s is not valid JSON", text, it)
			}
		}
	}
}

// ORDER BY a property named "[]", served from the index, whose term it
// shares with the array-element wildcard: a document with a two-element
// array comes twice, and one without the path is lost.
func TestQueryDiffReproBracketOrderBy(t *testing.T) {
	e := qdReproEngine(t, `{"id":"a","pk":"p1","m":["b","a"]}`, `{"id":"d","pk":"p1"}`)
	q := Query{Text: `SELECT VALUE c.id FROM c ORDER BY c.m["[]"]`, EnableCrossPartition: true, MaxItems: -1}
	got, want := qdRun(e, "k", Scope{}, q), qdRun(e, "scan", Scope{}, q)
	if got.String() != want.String() {
		t.Errorf("%s: index %v, scan %v", q.Text, got, want)
	}
}

// A filter on a property named "[]" reads the array-element wildcard
// entries; with pages cut short by the time budget, the query never ends.
func TestQueryDiffReproBracketStall(t *testing.T) {
	e := qdReproEngine(t, `{"id":"x","pk":"p1","m":["a","b"]}`)
	e.cfg.QueryPageTime = time.Nanosecond
	q := Query{Text: `SELECT VALUE c.id FROM c WHERE c.m["[]"] < "z"`, EnableCrossPartition: true, MaxItems: -1}
	if r := qdRun(e, "k", Scope{}, q); r.err != "" {
		t.Errorf("%s: %v", q.Text, r.err)
	}
}

// ORDER BY a path below the root with a decimal segment: an array position
// and a member of that name share their terms, so in index order a
// document whose t is {"0": "z"} (c.t[0] undefined, first in ORDER BY)
// came after one whose t[0] is "b". The order is now sorted.
func TestQueryDiffReproPositionOrderBy(t *testing.T) {
	e := qdReproEngine(t, `{"id":"a","pk":"p1","t":["b"]}`, `{"id":"o","pk":"p1","t":{"0":"z"}}`)
	for _, text := range []string{`SELECT VALUE c.id FROM c ORDER BY c.t[0]`, `SELECT VALUE c.id FROM c ORDER BY c.t["0"] DESC`} {
		q := Query{Text: text, EnableCrossPartition: true, MaxItems: -1}
		got, want := qdRun(e, "k", Scope{}, q), qdRun(e, "scan", Scope{}, q)
		if got.String() != want.String() {
			t.Errorf("%s: index %v, scan %v", q.Text, got, want)
		}
	}
}
