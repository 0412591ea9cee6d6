package exec

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
	"github.com/valyala/fastjson"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/parse"
)

// builtin is a scalar system function. fn receives exactly the evaluated arguments (between
// min and max of them; max < 0 means no upper bound) and must not keep the slice.
type builtin struct {
	min, max int
	fn       func(args []value) value
}

// maxStringLen bounds strings built by REPLICATE, as Cosmos DB does (10,000 characters), so
// that a query cannot ask for unbounded memory.
const maxStringLen = 10000

// aggregateKind returns the aggregate named upper (an upper-cased function name), or 0.
func aggregateKind(upper string) aggKind {
	switch upper {
	case "COUNT":
		return aggCount
	case "SUM":
		return aggSum
	case "AVG":
		return aggAvg
	case "MIN":
		return aggMin
	case "MAX":
		return aggMax
	case "COUNTIF":
		return aggCountIf
	case "MAKELIST":
		return aggMakeList
	case "MAKESET":
		return aggMakeSet
	}
	return 0
}

// lookupBuiltin returns the scalar function named upper (an upper-cased function name).
func lookupBuiltin(upper string) (builtin, bool) {
	f1 := func(fn func(value) value) builtin {
		return builtin{1, 1, func(a []value) value { return fn(a[0]) }}
	}
	isKind := func(ks ...kind) builtin {
		return f1(func(v value) value { return boolean(slices.Contains(ks, v.k)) })
	}
	math1 := func(fn func(float64) float64) builtin {
		return f1(func(v value) value {
			if v.k != kNum {
				return undef
			}
			return num(fn(v.n))
		})
	}
	str1 := func(fn func(string) value) builtin {
		return f1(func(v value) value {
			if v.k != kStr {
				return undef
			}
			return fn(v.s)
		})
	}
	switch upper {
	// Type checks.
	case "IS_DEFINED":
		return f1(func(v value) value { return boolean(v.k != kUndef) }), true
	case "IS_NULL":
		return isKind(kNull), true
	case "IS_BOOL":
		return isKind(kBool), true
	case "IS_NUMBER":
		return isKind(kNum), true
	case "IS_STRING":
		return isKind(kStr), true
	case "IS_ARRAY":
		return isKind(kArr), true
	case "IS_OBJECT":
		return isKind(kObj), true
	case "IS_PRIMITIVE":
		return isKind(kNull, kBool, kNum, kStr), true
	case "IS_FINITE_NUMBER":
		return f1(func(v value) value { return boolean(v.k == kNum && !math.IsInf(v.n, 0)) }), true
	case "IS_INTEGER":
		return f1(func(v value) value { _, ok := toInt64(v); return boolean(ok) }), true
	case "IIF":
		return builtin{3, 3, func(a []value) value {
			if a[0].isTrue() {
				return a[1]
			}
			return a[2]
		}}, true

	// Strings.
	case "CONCAT":
		return builtin{1, -1, func(a []value) value {
			var b strings.Builder
			for _, v := range a {
				if v.k != kStr {
					return undef
				}
				b.WriteString(v.s)
			}
			return str(b.String())
		}}, true
	case "CONTAINS":
		return stringTest(strings.Contains), true
	case "STARTSWITH":
		return stringTest(strings.HasPrefix), true
	case "ENDSWITH":
		return stringTest(strings.HasSuffix), true
	case "STRINGEQUALS":
		return stringTest(func(a, b string) bool { return a == b }), true
	case "CONTAINS_ALL_CS", "CONTAINS_ALL_CI", "CONTAINS_ANY_CS", "CONTAINS_ANY_CI":
		return containsList(strings.HasPrefix(upper, "CONTAINS_ALL"), strings.HasSuffix(upper, "_CI")), true
	case "LOWER":
		return str1(func(s string) value { return str(strings.ToLower(s)) }), true
	case "UPPER":
		return str1(func(s string) value { return str(strings.ToUpper(s)) }), true
	case "LENGTH":
		return str1(func(s string) value { return num(float64(utf8.RuneCountInString(s))) }), true
	case "REVERSE":
		return str1(func(s string) value {
			r := []rune(s)
			slices.Reverse(r)
			return str(string(r))
		}), true
	case "LTRIM":
		return trimFunc(strings.TrimLeftFunc, strings.TrimLeft), true
	case "RTRIM":
		return trimFunc(strings.TrimRightFunc, strings.TrimRight), true
	case "TRIM":
		return trimFunc(strings.TrimFunc, strings.Trim), true
	case "SUBSTRING":
		return builtin{3, 3, func(a []value) value {
			start, ok1 := toInt64(a[1])
			n, ok2 := toInt64(a[2])
			if a[0].k != kStr || !ok1 || !ok2 {
				return undef
			}
			return str(runeSlice(a[0].s, start, n))
		}}, true
	case "LEFT":
		return builtin{2, 2, func(a []value) value {
			n, ok := toInt64(a[1])
			if a[0].k != kStr || !ok || n < 0 {
				return undef
			}
			return str(runeSlice(a[0].s, 0, n))
		}}, true
	case "RIGHT":
		return builtin{2, 2, func(a []value) value {
			n, ok := toInt64(a[1])
			if a[0].k != kStr || !ok || n < 0 {
				return undef
			}
			total := int64(utf8.RuneCountInString(a[0].s))
			return str(runeSlice(a[0].s, max(total-n, 0), n))
		}}, true
	case "INDEX_OF":
		return builtin{2, 3, func(a []value) value {
			if a[0].k != kStr || a[1].k != kStr {
				return undef
			}
			start := int64(0)
			if len(a) == 3 {
				var ok bool
				if start, ok = toInt64(a[2]); !ok {
					return undef
				}
			}
			s := a[0].s
			skip := runeSlice(s, 0, max(start, 0))
			if start > int64(utf8.RuneCountInString(s)) {
				return num(-1)
			}
			i := strings.Index(s[len(skip):], a[1].s)
			if i < 0 {
				return num(-1)
			}
			return num(float64(max(start, 0) + int64(utf8.RuneCountInString(s[len(skip):len(skip)+i]))))
		}}, true
	case "LASTINDEXOF":
		// LASTINDEXOF(s, t [, start]): where the last t in s begins, in characters, or -1.
		// With start, t must end at or before character start (the search runs from start
		// back to the beginning): LASTINDEXOF("abcdeabc", "abc", 6) is 0, with 7 it is 5.
		return builtin{2, 3, func(a []value) value {
			if a[0].k != kStr || a[1].k != kStr {
				return undef
			}
			s := a[0].s
			if len(a) == 3 {
				start, ok := toInt64(a[2])
				if !ok {
					return undef
				}
				if start < 0 {
					return num(-1)
				}
				if start < int64(len(s)) { // else past the end, as characters are bytes or more
					s = s[:len(runeSlice(s, 0, start+1))]
				}
			}
			i := strings.LastIndex(s, a[1].s)
			if i < 0 {
				return num(-1)
			}
			return num(float64(utf8.RuneCountInString(s[:i])))
		}}, true
	case "STRINGJOIN":
		// STRINGJOIN(strings, separator): an array of strings only.
		return builtin{2, 2, func(a []value) value {
			if a[0].k != kArr || a[1].k != kStr {
				return undef
			}
			elems := a[0].elems()
			n := 2
			for i, e := range elems {
				if e.k != kStr {
					return undef
				}
				if i > 0 {
					n += len(a[1].s)
				}
				if n += len(e.s); n > maxValueBytes {
					return tooLarge
				}
			}
			var b strings.Builder
			b.Grow(n - 2)
			for i, e := range elems {
				if i > 0 {
					b.WriteString(a[1].s)
				}
				b.WriteString(e.s)
			}
			return str(b.String())
		}}, true
	case "STRINGSPLIT":
		// STRINGSPLIT(s, separator): the pieces of s between separators; an empty separator
		// splits nothing (["Helmet"]), and an empty s is one empty piece.
		return builtin{2, 2, func(a []value) value {
			if a[0].k != kStr || a[1].k != kStr {
				return undef
			}
			s, sep := a[0].s, a[1].s
			if sep == "" {
				return arrayOf([]value{str(s)})
			}
			// Each piece costs its quotes and a comma in the result, and the value
			// holding it (sizeOf): measured before any piece is made.
			pieces := strings.Count(s, sep) + 1
			size := 2 + len(s) - (pieces-1)*len(sep) + (3+elemBytes)*pieces
			if size > maxValueBytes {
				return tooLarge
			}
			elems := make([]value, 0, pieces)
			for piece := range strings.SplitSeq(s, sep) {
				elems = append(elems, str(piece))
			}
			r := arrayOf(elems)
			r.c.size = size
			return r
		}}, true
	case "REPLACE":
		return builtin{3, 3, func(a []value) value {
			if a[0].k != kStr || a[1].k != kStr || a[2].k != kStr {
				return undef
			}
			if a[1].s == "" {
				return a[0]
			}
			if n := strings.Count(a[0].s, a[1].s); n > 0 &&
				len(a[0].s)+n*(len(a[2].s)-len(a[1].s)) > maxStringLen*utf8.UTFMax {
				return undef
			}
			return str(strings.ReplaceAll(a[0].s, a[1].s, a[2].s))
		}}, true
	case "REPLICATE":
		return builtin{2, 2, func(a []value) value {
			n, ok := toInt64(a[1])
			if a[0].k != kStr || !ok || n < 0 {
				return undef
			}
			if n > 0 && int64(utf8.RuneCountInString(a[0].s))*n > maxStringLen {
				return undef
			}
			return str(strings.Repeat(a[0].s, int(n)))
		}}, true
	case "TOSTRING":
		return f1(toString), true
	case "STRINGTONUMBER":
		return str1(func(s string) value { return parseJSONAs(s, kNum) }), true
	case "STRINGTOBOOLEAN":
		return str1(func(s string) value { return parseJSONAs(s, kBool) }), true
	case "STRINGTONULL":
		return str1(func(s string) value { return parseJSONAs(s, kNull) }), true
	case "STRINGTOARRAY":
		return str1(func(s string) value { return parseJSONAs(s, kArr) }), true
	case "STRINGTOOBJECT":
		return str1(func(s string) value { return parseJSONAs(s, kObj) }), true
	case "REGEXMATCH":
		return builtin{2, 3, func(a []value) value {
			if a[0].k != kStr {
				return undef
			}
			re, ok := regexArgs(a[1:])
			if !ok {
				return undef
			}
			return boolean(re.MatchString(a[0].s))
		}}, true

	// Math.
	case "ABS":
		return math1(math.Abs), true
	case "CEILING":
		return math1(math.Ceil), true
	case "FLOOR":
		return math1(math.Floor), true
	case "ROUND":
		return math1(math.Round), true // half away from zero, as Cosmos DB
	case "TRUNC":
		return math1(math.Trunc), true
	case "SQRT":
		return math1(math.Sqrt), true
	case "SQUARE":
		return math1(func(x float64) float64 { return x * x }), true
	case "EXP":
		return math1(math.Exp), true
	case "LOG10":
		return math1(math.Log10), true
	case "SIGN":
		return math1(func(x float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		}), true
	case "SIN":
		return math1(math.Sin), true
	case "COS":
		return math1(math.Cos), true
	case "TAN":
		return math1(math.Tan), true
	case "COT":
		return math1(func(x float64) float64 { return 1 / math.Tan(x) }), true
	case "ASIN":
		return math1(math.Asin), true
	case "ACOS":
		return math1(math.Acos), true
	case "ATAN":
		return math1(math.Atan), true
	case "DEGREES":
		return math1(func(x float64) float64 { return x * 180 / math.Pi }), true
	case "RADIANS":
		return math1(func(x float64) float64 { return x * math.Pi / 180 }), true
	case "PI":
		return builtin{0, 0, func([]value) value { return num(math.Pi) }}, true
	case "RAND":
		return builtin{0, 0, func([]value) value { return num(rand.Float64()) }}, true // [0, 1)
	case "LOG":
		return builtin{1, 2, func(a []value) value {
			if a[0].k != kNum {
				return undef
			}
			if len(a) == 1 {
				return num(math.Log(a[0].n))
			}
			if a[1].k != kNum {
				return undef
			}
			return num(math.Log(a[0].n) / math.Log(a[1].n))
		}}, true
	case "POWER":
		return math2(math.Pow), true
	case "ATN2":
		// ATN2(x, y) is the angle of the point (x, y): atan2(y, x).
		return math2(func(x, y float64) float64 { return math.Atan2(y, x) }), true
	case "NUMBERBIN":
		return builtin{1, 2, func(a []value) value {
			bin := 1.0
			if len(a) == 2 {
				// A negative bin rounds to its multiples too: NUMBERBIN(37.752,
				// -100) is 100 (Cosmos DB's own example); only 0 has none.
				if a[1].k != kNum || a[1].n == 0 || math.IsNaN(a[1].n) {
					return undef
				}
				bin = a[1].n
			}
			if a[0].k != kNum {
				return undef
			}
			return num(math.Floor(a[0].n/bin) * bin)
		}}, true
	case "INTADD":
		return int2(func(x, y int64) (int64, bool) { return x + y, true }), true
	case "INTSUB":
		return int2(func(x, y int64) (int64, bool) { return x - y, true }), true
	case "INTMUL":
		return int2(func(x, y int64) (int64, bool) { return x * y, true }), true
	case "INTDIV":
		return int2(func(x, y int64) (int64, bool) {
			if y == 0 || (x == math.MinInt64 && y == -1) {
				return 0, false
			}
			return x / y, true
		}), true
	case "INTMOD":
		return int2(func(x, y int64) (int64, bool) {
			if y == 0 || y == -1 {
				return 0, y == -1
			}
			return x % y, true
		}), true
	case "INTBITAND":
		return int2(func(x, y int64) (int64, bool) { return x & y, true }), true
	case "INTBITOR":
		return int2(func(x, y int64) (int64, bool) { return x | y, true }), true
	case "INTBITXOR":
		return int2(func(x, y int64) (int64, bool) { return x ^ y, true }), true
	case "INTBITLEFTSHIFT":
		return int2(func(x, y int64) (int64, bool) { return x << (uint64(y) & 63), y >= 0 }), true
	case "INTBITRIGHTSHIFT":
		return int2(func(x, y int64) (int64, bool) { return x >> (uint64(y) & 63), y >= 0 }), true
	case "INTBITNOT":
		return f1(func(v value) value {
			x, ok := toInt64(v)
			if !ok {
				return undef
			}
			return intValue(^x)
		}), true

	// Arrays.
	case "ARRAY_LENGTH":
		return f1(func(v value) value {
			if v.k != kArr {
				return undef
			}
			return num(float64(v.length()))
		}), true
	case "ARRAY_CONTAINS":
		return builtin{2, 3, func(a []value) value {
			partial := false
			if len(a) == 3 {
				if a[2].k != kBool {
					return undef
				}
				partial = a[2].isTrue()
			}
			if a[0].k != kArr {
				return undef
			}
			return boolean(arrayContains(a[0], a[1], partial))
		}}, true
	case "ARRAY_CONTAINS_ANY", "ARRAY_CONTAINS_ALL":
		all := upper == "ARRAY_CONTAINS_ALL"
		return builtin{2, -1, func(a []value) value {
			if a[0].k != kArr {
				return undef
			}
			for _, v := range a[1:] {
				if arrayContains(a[0], v, false) != all {
					return boolean(!all)
				}
			}
			return boolean(all)
		}}, true
	case "ARRAY_SLICE":
		return builtin{2, 3, func(a []value) value {
			start, ok := toInt64(a[1])
			if a[0].k != kArr || !ok {
				return undef
			}
			elems := a[0].elems()
			n := int64(len(elems))
			if start < 0 {
				start = max(n+start, 0)
			}
			start = min(start, n)
			end := n
			if len(a) == 3 {
				l, ok := toInt64(a[2])
				if !ok {
					return undef
				}
				end = start + min(max(l, 0), n-start)
			}
			return arrayOf(slices.Clone(elems[start:end]))
		}}, true
	case "ARRAY_CONCAT":
		return builtin{2, -1, func(a []value) value {
			var out []value
			for _, v := range a {
				if v.k != kArr {
					return undef
				}
				out = append(out, v.elems()...)
			}
			return arrayOf(out)
		}}, true
	case "SETINTERSECT", "SETUNION":
		union := upper == "SETUNION"
		return builtin{2, 2, func(a []value) value {
			if a[0].k != kArr || a[1].k != kArr {
				return undef
			}
			return setOp(a[0].elems(), a[1].elems(), union)
		}}, true

	case "SETDIFFERENCE":
		return builtin{2, 2, func(a []value) value {
			if a[0].k != kArr || a[1].k != kArr {
				return undef
			}
			return setDifference(a[0].elems(), a[1].elems())
		}}, true
	case "SETEQUAL":
		return builtin{2, 2, func(a []value) value {
			if a[0].k != kArr || a[1].k != kArr {
				return undef
			}
			x, y := setKeys(a[0].elems()), setKeys(a[1].elems())
			if len(x) != len(y) {
				return vFalse
			}
			for k := range x {
				if !y[k] {
					return vFalse
				}
			}
			return vTrue
		}}, true
	case "ARRAY_MAX", "ARRAY_MIN":
		// Numbers, strings, booleans and null, compared across types as MAX and MIN do
		// (null < false < true < numbers < strings); an array or object element makes the
		// result undefined, and so does an empty array.
		sign := 1
		if upper == "ARRAY_MIN" {
			sign = -1
		}
		return f1(func(v value) value {
			if v.k != kArr {
				return undef
			}
			best := undef
			for _, e := range v.elems() {
				if e.k == kArr || e.k == kObj {
					return undef
				}
				if best.k == kUndef || sign*compareValues(e, best) > 0 {
					best = e
				}
			}
			return best
		}), true
	case "ARRAY_SUM", "ARRAY_AVG", "ARRAY_MEDIAN":
		// Numbers only: any other element makes the result undefined. As SUM and AVG over no
		// rows, the sum of an empty array is 0 and its average (and median) undefined.
		return f1(func(v value) value {
			if v.k != kArr {
				return undef
			}
			elems := v.elems()
			ns := make([]float64, len(elems))
			sum := 0.0
			for i, e := range elems {
				if e.k != kNum {
					return undef
				}
				ns[i] = e.n
				sum += e.n
			}
			switch {
			case upper == "ARRAY_SUM":
				return num(sum)
			case len(ns) == 0:
				return undef
			case upper == "ARRAY_AVG":
				return num(sum / float64(len(ns)))
			}
			slices.Sort(ns)
			mid := len(ns) / 2
			if len(ns)%2 == 1 {
				return num(ns[mid])
			}
			return num((ns[mid-1] + ns[mid]) / 2)
		}), true
	case "CHOOSE":
		// CHOOSE(i, e1, ..., eN): ei, counting from 1; undefined for an index out of range
		// or not a whole number.
		return builtin{2, -1, func(a []value) value {
			i, ok := toInt64(a[0])
			if !ok || i < 1 || i >= int64(len(a)) {
				return undef
			}
			return a[i]
		}}, true
	case "OBJECTTOARRAY":
		return builtin{1, 3, objectToArray}, true

	// Items.
	case "DOCUMENTID":
		return f1(documentID), true

	// Full-text search.
	case "FULLTEXTCONTAINS":
		return builtin{2, 2, fullText(true)}, true
	case "FULLTEXTCONTAINSALL":
		return builtin{2, -1, fullText(true)}, true
	case "FULLTEXTCONTAINSANY":
		return builtin{2, -1, fullText(false)}, true
	}
	if b, ok := lookupSpatial(upper); ok {
		return b, true
	}
	return lookupDateTime(upper)
}

// stringTest builds F(s, t [, ignoreCase]) -> bool for CONTAINS, STARTSWITH and friends.
func stringTest(test func(s, t string) bool) builtin {
	return builtin{2, 3, func(a []value) value {
		if a[0].k != kStr || a[1].k != kStr {
			return undef
		}
		s, t := a[0].s, a[1].s
		if len(a) == 3 {
			if a[2].k != kBool {
				return undef
			}
			if a[2].isTrue() {
				s, t = strings.ToLower(s), strings.ToLower(t)
			}
		}
		return boolean(test(s, t))
	}}
}

// trimFunc builds TRIM, LTRIM and RTRIM: whitespace by default, or the characters of an
// optional second argument.
func trimFunc(space func(string, func(rune) bool) string, chars func(string, string) string) builtin {
	return builtin{1, 2, func(a []value) value {
		if a[0].k != kStr {
			return undef
		}
		if len(a) == 2 {
			if a[1].k != kStr {
				return undef
			}
			return str(chars(a[0].s, a[1].s))
		}
		return str(space(a[0].s, unicode.IsSpace))
	}}
}

func math2(fn func(x, y float64) float64) builtin {
	return builtin{2, 2, func(a []value) value {
		if a[0].k != kNum || a[1].k != kNum {
			return undef
		}
		return num(fn(a[0].n, a[1].n))
	}}
}

func int2(fn func(x, y int64) (int64, bool)) builtin {
	return builtin{2, 2, func(a []value) value {
		x, ok1 := toInt64(a[0])
		y, ok2 := toInt64(a[1])
		if !ok1 || !ok2 {
			return undef
		}
		r, ok := fn(x, y)
		if !ok {
			return undef
		}
		return intValue(r)
	}}
}

// toInt64 returns v as an integer if it is an integral number within int64 range. A number
// read from a document or a parameter, or an integer literal, is taken from its text, so an
// integer past 2^53 keeps its digits (Cosmos DB's INT* functions work on 64-bit integers).
func toInt64(v value) (int64, bool) {
	if v.k != kNum {
		return 0, false
	}
	if v.j != nil {
		if i, err := v.j.Int64(); err == nil {
			return i, true
		}
	}
	if v.n != math.Trunc(v.n) || v.n < -(1<<63) || v.n >= 1<<63 {
		return 0, false
	}
	return int64(v.n), true
}

// maxExact is the largest magnitude up to which every integer is a float64.
const maxExact = 1 << 53

// intValue is the number i: past maxExact it keeps i's digits for its JSON and for toInt64.
func intValue(i int64) value {
	if -maxExact <= i && i <= maxExact {
		return num(float64(i))
	}
	var a fastjson.Arena
	return value{k: kNum, n: float64(i), j: a.NewNumberString(strconv.FormatInt(i, 10))}
}

// bigInt returns v's integer if v keeps one past maxExact (intValue, a document's number).
func bigInt(v value) (int64, bool) {
	if v.k != kNum || v.j == nil || (v.n > -maxExact && v.n < maxExact) {
		return 0, false
	}
	i, err := v.j.Int64()
	return i, err == nil
}

// numLiteral is the value of a number literal: an integer past maxExact keeps its digits.
func numLiteral(l *parse.Literal) value {
	if l.Num >= maxExact && l.Num <= math.MaxInt64 && l.Text != "" {
		if i, err := strconv.ParseInt(l.Text, 10, 64); err == nil {
			return intValue(i)
		}
	}
	return num(l.Num)
}

// runeSlice returns up to n characters of s starting at character start (clamped to s).
func runeSlice(s string, start, n int64) string {
	if start < 0 {
		start = 0
	}
	if n <= 0 {
		return ""
	}
	i := 0
	for ; start > 0 && i < len(s); start-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	j := i
	for ; n > 0 && j < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[j:])
		j += size
	}
	return s[i:j]
}

// toString is TOSTRING: strings as they are, everything else as JSON text.
func toString(v value) value {
	switch v.k {
	case kUndef:
		return undef
	case kStr:
		return v
	case kNum:
		return str(string(appendNumberOf(nil, v)))
	}
	return str(string(appendJSON(nil, v)))
}

// appendNumberOf prints a number the JavaScript way even when it came from a document with
// another spelling (1.0 prints as 1).
func appendNumberOf(dst []byte, v value) []byte {
	v.j = nil
	return appendJSON(dst, v)
}

// parseJSONAs parses s as JSON and returns it if it has kind k, else undefined.
func parseJSONAs(s string, k kind) value {
	var p fastjson.Parser
	j, err := p.Parse(s)
	if err != nil || !finiteJSON(j) {
		return undef
	}
	v := fromJSON(j)
	if v.k != k {
		return undef
	}
	return owned(v)
}

// finiteJSON reports whether every number in j is a finite double:
// fastjson accepts NaN, Inf and numbers past a double's range (1e400), which
// JSON has no such values for; STRINGTONUMBER("NaN") and friends are
// undefined, not null (found by a bug hunt).
func finiteJSON(j *fastjson.Value) bool {
	switch j.Type() {
	case fastjson.TypeNumber:
		f, err := j.Float64()
		return err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	case fastjson.TypeArray:
		a, _ := j.Array()
		for _, e := range a {
			if !finiteJSON(e) {
				return false
			}
		}
	case fastjson.TypeObject:
		ok := true
		o, _ := j.Object()
		o.Visit(func(_ []byte, v *fastjson.Value) {
			if ok && !finiteJSON(v) {
				ok = false
			}
		})
		return ok
	}
	return true
}

// regexArgs compiles REGEXMATCH's pattern and optional modifiers (any of "imsx").
func regexArgs(a []value) (*regexp.Regexp, bool) {
	if a[0].k != kStr {
		return nil, false
	}
	mods := ""
	if len(a) == 2 {
		if a[1].k != kStr {
			return nil, false
		}
		mods = a[1].s
	}
	return compileRegex(a[0].s, mods)
}

func compileRegex(pattern, mods string) (*regexp.Regexp, bool) {
	flags := ""
	for _, m := range mods {
		switch m {
		case 'i', 'm', 's':
			if !strings.ContainsRune(flags, m) {
				flags += string(m)
			}
		case 'x':
			// RE2 has no extended mode: the pattern is rewritten without it.
			pattern = extendedPattern(pattern)
		default:
			return nil, false
		}
	}
	if flags != "" {
		pattern = "(?" + flags + ")" + pattern
	}
	re, err := regexp.Compile(pattern)
	return re, err == nil
}

// extendedPattern rewrites a pattern of the extended mode (RegexMatch's "x", PCRE's and .NET's
// IgnorePatternWhitespace) into one without it: whitespace outside a character class is
// dropped and '#' starts a comment to the end of the line, while an escaped character
// (whitespace and '#' included), a character class and \Q…\E are kept as written. (Every
// whitespace character was dropped, escaped or in a class, so `a\ d` became `a\d`, the digit
// class, and comments were kept: a query hunt.)
func extendedPattern(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\\' && strings.HasPrefix(p[i:], `\Q`):
			end := strings.Index(p[i+2:], `\E`)
			if end < 0 {
				b.WriteString(p[i:])
				return b.String()
			}
			b.WriteString(p[i : i+2+end+2])
			i += 2 + end + 2
		case c == '\\':
			_, n := utf8.DecodeRuneInString(p[i+1:])
			b.WriteString(p[i : i+1+n])
			i += 1 + n
		case c == '[':
			j := classEnd(p, i)
			b.WriteString(p[i:j])
			i = j
		case c == '#':
			for i < len(p) && p[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// classEnd returns the index just past the character class that starts at p[i] == '[': a ']'
// right after '[' or '[^' is a member, a backslash escapes the next character, and a POSIX
// class [:name:] is kept whole. An unterminated class runs to the end (the compiler refuses it).
func classEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && p[j] == '^' {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) {
		switch {
		case p[j] == '\\':
			_, n := utf8.DecodeRuneInString(p[j+1:])
			j += 1 + n
		case strings.HasPrefix(p[j:], "[:"):
			if end := strings.Index(p[j+2:], ":]"); end >= 0 {
				j += 2 + end + 2
			} else {
				j++
			}
		case p[j] == ']':
			return j + 1
		default:
			j++
		}
	}
	return len(p)
}

// arrayContains reports whether arr has an element equal to v; with partial, an object
// element also matches when it has all of v's properties with equal values.
func arrayContains(arr, v value, partial bool) bool {
	found := false
	arr.each(func(_ string, e value) bool {
		if equalValues(e, v).isTrue() || (partial && e.k == kObj && v.k == kObj && objectSubset(e, v)) {
			found = true
			return false
		}
		return true
	})
	return found
}

func objectSubset(obj, sub value) bool {
	ok := true
	sub.each(func(k string, sv value) bool {
		if !equalValues(obj.get(k), sv).isTrue() {
			ok = false
		}
		return ok
	})
	return ok
}

// setOp returns the distinct elements of a that are also in b (intersect), or the distinct
// elements of a then b (union), in first-seen order.
func setOp(a, b []value, union bool) value {
	key := func(v value) string { return string(appendKey(nil, v)) }
	inB := make(map[string]bool, len(b))
	for _, v := range b {
		inB[key(v)] = true
	}
	seen := make(map[string]bool)
	var out []value
	add := func(v value) {
		k := key(v)
		if !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	for _, v := range a {
		if union || inB[key(v)] {
			add(v)
		}
	}
	if union {
		for _, v := range b {
			add(v)
		}
	}
	return arrayOf(out)
}

// setKeys returns the canonical encodings (appendKey) of elems.
func setKeys(elems []value) map[string]bool {
	keys := make(map[string]bool, len(elems))
	for _, v := range elems {
		keys[string(appendKey(nil, v))] = true
	}
	return keys
}

// setDifference returns the distinct elements of a that are not in b, in first-seen order.
func setDifference(a, b []value) value {
	inB := setKeys(b)
	seen := make(map[string]bool)
	out := []value{}
	for _, v := range a {
		k := string(appendKey(nil, v))
		if !inB[k] && !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return arrayOf(out)
}

// objectToArray is OBJECTTOARRAY(obj [, keyName [, valueName]]): an element {"k": name,
// "v": value} for each property of obj, in order, with the names "k" and "v" replaced by
// keyName and valueName when given. Names that are not strings, or one name given twice
// (an element would have the same property twice), make it undefined.
func objectToArray(a []value) value {
	names := [2]string{"k", "v"}
	for i, n := range a[1:] {
		if n.k != kStr {
			return undef
		}
		names[i] = n.s
	}
	if a[0].k != kObj || names[0] == names[1] {
		return undef
	}
	// Measured as sizeOf measures the result, as its elements are made: the names are
	// repeated in every element.
	size := 2
	out := make([]value, 0, a[0].length())
	keys := names[:]
	a[0].each(func(k string, v value) bool {
		// The element's object, {"<names[0]>": k, "<names[1]>": v}, as sizeOf counts
		// it, and the element itself.
		obj := 2 + len(names[0]) + 3 + nameBytes + len(k) + 2 + 1 + elemBytes +
			len(names[1]) + 3 + nameBytes + sizeOf(v, maxValueBytes) + 1 + elemBytes
		size += obj + 1 + elemBytes
		if size > maxValueBytes {
			return false
		}
		out = append(out, value{k: kObj, c: &composite{keys: keys, elems: []value{str(k), v}}})
		return true
	})
	if size > maxValueBytes {
		return tooLarge
	}
	r := arrayOf(out)
	r.c.size = size
	return r
}

// documentID is DOCUMENTID(root): the item's number within its container, which its _rid
// carries. Cosmos DB's documentation has it return an integer that identifies the item
// within its physical partition (13 for the _rid "36ZyAPW+uN8NAAAAAAAAAA==", whose last
// eight bytes hold 13). An item's _rid here is its container's _rid and then its sequence
// number (big-endian, engine.ridSeq), unique in the container. What is not an item (no
// _rid of an item's length) has none: undefined.
func documentID(v value) value {
	rid := v.get("_rid")
	if rid.k != kStr {
		return undef
	}
	b, err := document.DecodeRID(rid.s)
	if err != nil || len(b) != 16 {
		return undef
	}
	seq := binary.BigEndian.Uint64(b[8:])
	if seq > math.MaxInt64 {
		return undef
	}
	return intValue(int64(seq))
}

// containsList builds CONTAINS_ALL_CS and friends: CONTAINS(s, t, ci) for each t, joined by
// AND (all) or OR (any) with their undefined rules, as the pages define them:
// CONTAINS_ALL_CI(s, undefined, "x") is undefined when s contains x, and false otherwise.
func containsList(all, ci bool) builtin {
	return builtin{2, -1, func(a []value) value {
		unknown := false
		for _, t := range a[1:] {
			if a[0].k != kStr || t.k != kStr {
				unknown = true
				continue
			}
			s, sub := a[0].s, t.s
			if ci {
				s, sub = strings.ToLower(s), strings.ToLower(sub)
			}
			if strings.Contains(s, sub) != all {
				return boolean(!all)
			}
		}
		if unknown {
			return undef
		}
		return boolean(all)
	}}
}

// fullText builds FullTextContains / FullTextContainsAll (all terms) and FullTextContainsAny.
// A term matches when its words appear, in order and adjacent, among the words of the text;
// words are runs of letters and digits, compared case-insensitively.
// fullText is FullTextContainsAll (all) or FullTextContainsAny: whether the
// text holds all (any) of the terms, each a word or a phrase, after both
// went through textWords. A term left empty by it (stop words only) is
// passed over; with no term left, nothing matches. The terms' analysis is
// kept for the next row, whose terms are the same (constants or
// parameters) but for a term computed from the row.
func fullText(all bool) func(a []value) value {
	var last atomic.Pointer[analyzedTerms]
	return func(a []value) value {
		if a[0].k != kStr {
			return boolean(false)
		}
		terms := a[1:]
		for _, t := range terms {
			if t.k != kStr {
				return undef
			}
		}
		at := last.Load()
		if at == nil || !at.same(terms) {
			at = &analyzedTerms{}
			for _, t := range terms {
				at.terms = append(at.terms, t.s)
				at.phrases = append(at.phrases, textWords(t.s))
			}
			last.Store(at)
		}
		words := textWords(a[0].s)
		counted := false
		for _, phrase := range at.phrases {
			if len(phrase) == 0 {
				continue
			}
			counted = true
			if containsPhrase(words, phrase) != all {
				return boolean(!all)
			}
		}
		return boolean(all && counted)
	}
}

// analyzedTerms are full-text terms and their analysis (textWords).
type analyzedTerms struct {
	terms   []string
	phrases [][]string
}

func (at *analyzedTerms) same(terms []value) bool {
	if len(terms) != len(at.terms) {
		return false
	}
	for i, t := range terms {
		if t.s != at.terms[i] {
			return false
		}
	}
	return true
}

// maxTokenRunes is the longest token full-text analysis stems: a longer
// run of letters and digits is cut into tokens of this length, as search
// engines' tokenizers cut theirs (Lucene's standard tokenizer: 255). The
// Snowball stemmer's time grows with the square of a token's length on
// some words (a run of "y": 70 s for a 1 MB item, past every query limit).
const maxTokenRunes = 255

// textWords is the full-text analysis of s, as Cosmos DB's full-text search
// documents it for English (its one generally available language):
// tokenized into runs of letters and digits (cut at maxTokenRunes),
// lower-cased, stop words left out, and each word stemmed (the Snowball
// English stemmer, so "foxes" matches "fox" and "helmets" "helmet").
func textWords(s string) []string {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := make([]string, 0, len(words))
	for _, w := range words {
		for w != "" {
			i := 0
			for n := 0; i < len(w) && n < maxTokenRunes; n++ {
				_, size := utf8.DecodeRuneInString(w[i:])
				i += size
			}
			tok := w[:i]
			w = w[i:]
			if englishStopWords[tok] {
				continue
			}
			env := snowballstem.NewEnv(tok)
			english.Stem(env)
			out = append(out, env.Current())
		}
	}
	return out
}

// englishStopWords are the words full-text analysis leaves out: the
// common English stop list of search engines (Lucene's English analyzer's).
var englishStopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "but": true,
	"by": true, "for": true, "if": true, "in": true, "into": true, "is": true, "it": true, "no": true,
	"not": true, "of": true, "on": true, "or": true, "such": true, "that": true, "the": true,
	"their": true, "then": true, "there": true, "these": true, "they": true, "this": true, "to": true,
	"was": true, "will": true, "with": true,
}

func containsPhrase(words, phrase []string) bool {
	if len(phrase) == 0 {
		return false
	}
	for i := 0; i+len(phrase) <= len(words); i++ {
		if slices.Equal(words[i:i+len(phrase)], phrase) {
			return true
		}
	}
	return false
}

// likeRegexp translates a LIKE pattern (% any run, _ one character, [set] and [^set]
// character classes, esc making the next character literal) into an anchored regexp.
func likeRegexp(pattern string, esc rune) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case esc != 0 && r == esc && i+1 < len(rs):
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case r == '%':
			b.WriteString(".*")
		case r == '_':
			b.WriteByte('.')
		case r == '[':
			end := slices.Index(rs[i+1:], ']')
			if end <= 0 {
				b.WriteString(`\[`)
				continue
			}
			set := rs[i+1 : i+1+end]
			b.WriteByte('[')
			for k, c := range set {
				switch {
				case k == 0 && c == '^':
					b.WriteByte('^')
				case c == '-' && k > 0 && k < len(set)-1 && (k != 1 || set[0] != '^'):
					b.WriteByte('-') // a range such as a-f
				case c < utf8.RuneSelf && !unicode.IsLetter(c) && !unicode.IsDigit(c):
					b.WriteByte('\\') // RE2 reads an escaped ASCII non-word character literally
					b.WriteRune(c)
				default:
					b.WriteRune(c)
				}
			}
			b.WriteByte(']')
			i += end + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`\z`)
	return regexp.Compile(b.String())
}

// ItemFunction reports whether the built-in function name computes its
// value from its arguments alone: not an aggregate, a spatial function, or
// one that reads the clock or a random source. A computed property's query
// may call only such functions (Cosmos DB's rule); whether name exists is
// Compile's to say.
func ItemFunction(name string) bool {
	upper := strings.ToUpper(name)
	if aggregateKind(upper) != 0 || strings.HasPrefix(upper, "ST_") || upper == "RAND" {
		return false
	}
	if _, ok := currentTime(upper); ok {
		return false
	}
	_, ok := clockFunc(upper)
	return !ok
}
