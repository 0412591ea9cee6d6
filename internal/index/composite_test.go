package index

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

// refCompare orders two parsed values as ORDER BY does (exec's
// compareValues): undefined (nil) < null < false < true < numbers <
// strings < arrays < objects; arrays element by element, objects by their
// sorted members.
func refCompare(a, b *fastjson.Value) int {
	rank := func(v *fastjson.Value) int {
		if v == nil {
			return 0
		}
		switch v.Type() {
		case fastjson.TypeNull:
			return 1
		case fastjson.TypeFalse:
			return 2
		case fastjson.TypeTrue:
			return 3
		case fastjson.TypeNumber:
			return 4
		case fastjson.TypeString:
			return 5
		case fastjson.TypeArray:
			return 6
		}
		return 7
	}
	if c := cmp.Compare(rank(a), rank(b)); c != 0 || a == nil {
		return c
	}
	switch a.Type() {
	case fastjson.TypeNumber:
		return cmp.Compare(a.GetFloat64(), b.GetFloat64())
	case fastjson.TypeString:
		return strings.Compare(string(a.GetStringBytes()), string(b.GetStringBytes()))
	case fastjson.TypeArray:
		ea, eb := a.GetArray(), b.GetArray()
		for i := 0; i < len(ea) && i < len(eb); i++ {
			if c := refCompare(ea[i], eb[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(ea), len(eb))
	case fastjson.TypeObject:
		type kv struct {
			k string
			v *fastjson.Value
		}
		fields := func(v *fastjson.Value) []kv {
			var fs []kv
			v.GetObject().Visit(func(k []byte, v *fastjson.Value) { fs = append(fs, kv{string(k), v}) })
			slices.SortStableFunc(fs, func(x, y kv) int { return strings.Compare(x.k, y.k) })
			return fs
		}
		fa, fb := fields(a), fields(b)
		for i := 0; i < len(fa) && i < len(fb); i++ {
			if c := strings.Compare(fa[i].k, fb[i].k); c != 0 {
				return c
			}
			if c := refCompare(fa[i].v, fb[i].v); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(fa), len(fb))
	}
	return 0
}

// randomValue returns a random JSON value (or nil: the property is left
// out), drawn so that equal values and shared prefixes are frequent.
func randomValue(r *rand.Rand, depth int) any {
	long := strings.Repeat("p", StringTermBytes)
	switch r.IntN(12) {
	case 0:
		return nil
	case 1:
		return json.RawMessage("null")
	case 2:
		return r.IntN(2) == 0
	case 3:
		return []float64{-1e300, -2, -0.5, 0, 0.5, 1, 2, 3, 1e300}[r.IntN(9)]
	case 4:
		return json.RawMessage("-0")
	case 5:
		return []string{"", "a", "ab", "b", "a\u0000", "a\u0001", "é", "\U0001F600", "ÿ"}[r.IntN(9)]
	case 6:
		// Long strings sharing their first StringTermBytes bytes (one
		// bucket), and the string of exactly those bytes.
		return long + []string{"", "a", "b", "ab", "\u0000"}[r.IntN(5)]
	case 7:
		return long[:StringTermBytes-1] + []string{"a", "b", "ab"}[r.IntN(3)]
	case 8, 9:
		if depth > 1 {
			return "x"
		}
		n := r.IntN(3)
		a := make([]any, n)
		for i := range a {
			if a[i] = randomValue(r, depth+1); a[i] == nil {
				a[i] = json.RawMessage("null")
			}
		}
		return a
	default:
		if depth > 1 {
			return 7
		}
		m := map[string]any{}
		keys := []string{"", "x", "x\u0000", "y"}
		for range r.IntN(3) {
			k := keys[r.IntN(len(keys))]
			if v := randomValue(r, depth+1); v != nil {
				m[k] = v
			}
		}
		return m
	}
}

// TestCompositeOrder checks that the byte order of composite terms is the
// ORDER BY order of their documents' values wherever the terms are in
// different runs (CompositeRun), and that documents with equal values have
// equal terms when exact, for every direction of three paths, one of them
// nested.
func TestCompositeOrder(t *testing.T) {
	paths := [][]string{{"a"}, {"b", "c"}, {"d"}}
	for dirs := range 8 {
		desc := []bool{dirs&1 != 0, dirs&2 != 0, dirs&4 != 0}
		var comps []string
		for i, p := range paths {
			order := "ascending"
			if desc[i] {
				order = "descending"
			}
			comps = append(comps, fmt.Sprintf(`{"path":"/%s","order":%q}`, strings.Join(p, "/"), order))
		}
		pol, err := ParsePolicy([]byte(`{"compositeIndexes":[[{"path":"/z"},{"path":"/y"}],[` + strings.Join(comps, ",") + `]]}`))
		if err != nil {
			t.Fatal(err)
		}
		if pol.Composites() != 2 {
			t.Fatalf("Composites() = %d, want 2", pol.Composites())
		}
		r := rand.New(rand.NewPCG(uint64(dirs), 7))
		type doc struct {
			raw   []byte
			vals  []*fastjson.Value
			term  []byte
			exact []byte
		}
		var docs []doc
		for range 300 {
			m := map[string]any{"id": "x"}
			if v := randomValue(r, 0); v != nil {
				m["a"] = v
			}
			switch r.IntN(4) {
			case 0: // b missing
			case 1:
				m["b"] = randomValue(r, 1) // b not an object, or nil
			default:
				inner := map[string]any{}
				if v := randomValue(r, 0); v != nil {
					inner["c"] = v
				}
				m["b"] = inner
			}
			if v := randomValue(r, 0); v != nil {
				m["d"] = v
			}
			raw, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			var terms [][]byte
			if err := pol.CompositeTerms(raw, func(term []byte) { terms = append(terms, bytes.Clone(term)) }); err != nil {
				t.Fatal(err)
			}
			if len(terms) != 2 || terms[0][0] != 0 || terms[0][1] != 0 || terms[1][0] != 0 || terms[1][1] != 1 {
				t.Fatalf("%s: terms %x, want one per composite, numbered 0 and 1", raw, terms)
			}
			root, err := fastjson.ParseBytes(raw)
			if err != nil {
				t.Fatal(err)
			}
			var vals []*fastjson.Value
			for _, p := range paths {
				vals = append(vals, valueAt(root, p))
			}
			term, exact, err := pol.CompositeOrder(raw, 1)
			if err != nil || !bytes.Equal(term, terms[1]) {
				t.Fatalf("%s: CompositeOrder term %x, %v; CompositeTerms %x", raw, term, err, terms[1])
			}
			docs = append(docs, doc{raw, vals, terms[1], exact})
		}
		for i := range docs {
			for j := range docs {
				a, b := docs[i], docs[j]
				ref := 0
				for k := range paths {
					c := refCompare(a.vals[k], b.vals[k])
					if desc[k] {
						c = -c
					}
					if c != 0 {
						ref = c
						break
					}
				}
				got := bytes.Compare(a.term, b.term)
				if c := bytes.Compare(a.exact, b.exact); c != ref {
					t.Fatalf("directions %v: values order %d, exact keys %d:\n%s %x\n%s %x", desc, ref, c, a.raw, a.exact, b.raw, b.exact)
				}
				ra, exactA, errA := CompositeRun(a.term, len(paths))
				rb, exactB, errB := CompositeRun(b.term, len(paths))
				if errA != nil || errB != nil {
					t.Fatalf("CompositeRun: %v, %v", errA, errB)
				}
				if exactA && ra != len(a.term) {
					t.Fatalf("%s: exact run %d, term length %d", a.raw, ra, len(a.term))
				}
				sameRun := !exactA && !exactB && bytes.Equal(a.term[:ra], b.term[:rb])
				switch {
				case sameRun:
				case ref == 0 && got != 0:
					t.Fatalf("directions %v: equal values, different terms:\n%s %x\n%s %x", desc, a.raw, a.term, b.raw, b.term)
				case ref != 0 && got != ref:
					t.Fatalf("directions %v: values order %d, terms %d:\n%s %x\n%s %x", desc, ref, got, a.raw, a.term, b.raw, b.term)
				}
			}
		}
	}
}

// TestCompositeComponent checks that CompositeComponent writes the bytes
// CompositeTerms writes for a scalar or an undefined value, either way.
func TestCompositeComponent(t *testing.T) {
	pol, err := ParsePolicy([]byte(`{"compositeIndexes":[[{"path":"/a"},{"path":"/b","order":"descending"}]]}`))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("q", StringTermBytes+5)
	for _, tc := range []struct {
		json string
		a, b Value
	}{
		{`{}`, Value{}, Value{}},
		{`{"a":null,"b":true}`, NullValue(), BoolValue(true)},
		{`{"a":-0,"b":1.5}`, NumberValue(0), NumberValue(1.5)},
		{`{"a":"x\u0000y","b":"` + long + `"}`, StringValue("x\x00y"), StringValue(long)},
	} {
		want := CompositeComponent(CompositeComponent([]byte{0, 0}, tc.a, false), tc.b, true)
		var got []byte
		if err := pol.CompositeTerms([]byte(tc.json), func(term []byte) { got = bytes.Clone(term) }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: CompositeTerms %x, CompositeComponent %x", tc.json, got, want)
		}
	}
	if err := pol.CompositeTerms([]byte(`{"a":`), func([]byte) {}); err == nil {
		t.Error("invalid JSON: no error")
	}
	none, _ := ParsePolicy([]byte(`{"indexingMode":"none","compositeIndexes":[[{"path":"/a"},{"path":"/b"}]]}`))
	called := false
	if err := none.CompositeTerms([]byte(`{}`), func([]byte) { called = true }); err != nil || called {
		t.Errorf("mode none: called %v, err %v; want no term", called, err)
	}
	if _, _, err := CompositeRun([]byte{0, 0, tagString, 'a'}, 1); err == nil {
		t.Error("CompositeRun of a cut string: no error")
	}
	if _, _, err := pol.CompositeOrder([]byte(`{}`), 1); err == nil {
		t.Error("CompositeOrder of an undeclared composite: no error")
	}
}

// TestCompositeSpans checks CompositeEq, CompositePrefix and CompositeRange
// against the predicates they narrow to, in both directions, behind a
// pinned first component: every document whose value satisfies the
// predicate has its entry in the span, and every entry in the span
// satisfies it, but for long strings sharing a bounded literal's first
// bytes (candidates the filter tells apart); a document with another first
// component is in none.
func TestCompositeSpans(t *testing.T) {
	long := strings.Repeat("p", StringTermBytes)
	literals := []Value{NullValue(), BoolValue(false), BoolValue(true), NumberValue(-2), NumberValue(0), NumberValue(0.5), NumberValue(3),
		StringValue(""), StringValue("a"), StringValue("ab"), StringValue("b"), StringValue("a\x00"),
		StringValue(long), StringValue(long + "a"), StringValue(long[:StringTermBytes-1] + "a")}
	for _, desc := range []bool{false, true} {
		order := "ascending"
		if desc {
			order = "descending"
		}
		pol, err := ParsePolicy([]byte(`{"compositeIndexes":[[{"path":"/p"},{"path":"/x","order":"` + order + `"}]]}`))
		if err != nil {
			t.Fatal(err)
		}
		prefix := CompositeComponent([]byte{0, 0}, NumberValue(1), false)
		r := rand.New(rand.NewPCG(3, uint64(len(order))))
		type doc struct {
			raw  []byte
			x    *fastjson.Value
			p1   bool
			term []byte
		}
		var docs []doc
		for i := range 400 {
			m := map[string]any{"p": 1 + i%7/6}
			if v := randomValue(r, 0); v != nil {
				m["x"] = v
			}
			raw, _ := json.Marshal(m)
			var term []byte
			if err := pol.CompositeTerms(raw, func(b []byte) { term = bytes.Clone(b) }); err != nil {
				t.Fatal(err)
			}
			root, _ := fastjson.ParseBytes(raw)
			docs = append(docs, doc{raw, root.Get("x"), m["p"] == 1, term})
		}
		scalarOf := func(v *fastjson.Value) (Value, bool) {
			if v == nil {
				return Value{}, false
			}
			return valueOf(v)
		}
		// candidate: a long string sharing its bounded term's first bytes
		// with a long literal of the predicate.
		candidate := func(x Value, lits ...Value) bool {
			for _, l := range lits {
				if x.Kind == String && l.Kind == String && len(x.Str) > StringTermBytes && len(l.Str) >= StringTermBytes && x.Str[:StringTermBytes] == l.Str[:StringTermBytes] {
					return true
				}
			}
			return false
		}
		check := func(name string, spans []Span, pred func(Value) bool, lits ...Value) {
			t.Helper()
			for _, d := range docs {
				in := slices.ContainsFunc(spans, func(s Span) bool { return s.Contains(d.term) })
				x, ok := scalarOf(d.x)
				sat := d.p1 && ok && pred(x)
				switch {
				case sat && !in:
					t.Fatalf("%s %s: %s satisfies it, its entry %x is in no span %x", order, name, d.raw, d.term, spans)
				case in && !sat && !(d.p1 && ok && candidate(x, lits...)):
					t.Fatalf("%s %s: %s does not satisfy it, its entry %x is in a span %x", order, name, d.raw, d.term, spans)
				}
			}
		}
		for _, v := range literals {
			check(fmt.Sprintf("= %q", valueText(v)), []Span{CompositeEq(prefix, v, desc)}, func(x Value) bool { return x.Kind == v.Kind && Compare(x, v) == 0 }, v)
			if v.Kind == String {
				check(fmt.Sprintf("STARTSWITH %q", v.Str), []Span{CompositePrefix(prefix, v.Str, desc)}, func(x Value) bool { return x.Kind == String && strings.HasPrefix(x.Str, v.Str) }, v)
			}
			for _, w := range literals {
				for incl := range 4 {
					lo, hi := &Bound{V: v, Inclusive: incl&1 != 0}, &Bound{V: w, Inclusive: incl&2 != 0}
					in := func(x Value, b *Bound, sign int) bool {
						c := Compare(x, b.V) * sign
						return x.Kind == b.V.Kind && (c > 0 || c == 0 && b.Inclusive)
					}
					check(fmt.Sprintf("range %v..%v", lo, hi), []Span{CompositeRange(prefix, lo, hi, desc)}, func(x Value) bool { return in(x, lo, 1) && in(x, hi, -1) }, v, w)
					check(fmt.Sprintf("range %v..", lo), []Span{CompositeRange(prefix, lo, nil, desc)}, func(x Value) bool { return in(x, lo, 1) }, v)
					check(fmt.Sprintf("range ..%v", hi), []Span{CompositeRange(prefix, nil, hi, desc)}, func(x Value) bool { return in(x, hi, -1) }, w)
				}
			}
		}
	}
}

// valueText prints a literal for test names.
func valueText(v Value) string { return fmt.Sprintf("%v:%v%v%q", v.Kind, v.Bool, v.Num, v.Str) }

// TestCompositeLedBy checks which composite serves an ORDER BY once the
// query pins some paths: the one of exactly its paths first, else one led
// by pinned paths only, directions as declared or all inverted.
func TestCompositeLedBy(t *testing.T) {
	pol, err := ParsePolicy([]byte(`{"compositeIndexes":[[{"path":"/a"},{"path":"/b","order":"descending"}],` +
		`[{"path":"/x"},{"path":"/y"},{"path":"/z","order":"descending"}],[{"path":"/b"},{"path":"/c"}]]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := func(s ...string) [][]string {
		var out [][]string
		for _, x := range s {
			out = append(out, []string{x})
		}
		return out
	}
	pins := func(s ...string) func([]string) bool {
		return func(path []string) bool { return slices.Contains(s, path[0]) }
	}
	for _, tc := range []struct {
		paths  [][]string
		desc   []bool
		pinned func([]string) bool
		ok     bool
		number int
		lead   int
		inv    bool
	}{
		{p("a", "b"), []bool{false, true}, pins(), true, 0, 0, false},
		{p("a", "b"), []bool{true, false}, pins("a"), true, 0, 0, true},
		{p("b"), []bool{true}, pins("a"), true, 0, 1, false},
		{p("b"), []bool{false}, pins("a"), true, 0, 1, true},
		{p("b"), []bool{false}, pins(), false, 0, 0, false},
		{p("c"), []bool{true}, pins("b"), true, 2, 1, true},
		{p("z"), []bool{false}, pins("x"), false, 0, 0, false},
		{p("z"), []bool{false}, pins("x", "y"), true, 1, 2, true},
		{p("y", "z"), []bool{false, true}, pins("x"), true, 1, 1, false},
		{p("y", "z"), []bool{false, false}, pins("x"), false, 0, 0, false},
	} {
		m, ok := pol.CompositeLedBy(tc.paths, tc.desc, tc.pinned)
		if ok != tc.ok || ok && (m.Number != tc.number || m.Lead != tc.lead || m.Inverted != tc.inv || len(m.Paths) != len(m.Desc) || len(m.Paths) != tc.lead+len(tc.paths)) {
			t.Errorf("%v %v: %+v, %v; want number %d lead %d inverted %v, %v", tc.paths, tc.desc, m, ok, tc.number, tc.lead, tc.inv, tc.ok)
		}
	}
}
