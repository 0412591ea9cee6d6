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
		for _, k := range []string{"x", "y"}[:r.IntN(3)%2+1] {
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
			raw  []byte
			vals []*fastjson.Value
			term []byte
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
			docs = append(docs, doc{raw, vals, terms[1]})
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
}
