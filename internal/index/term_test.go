package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sampleValues covers every kind and the edge cases of the encoding.
func sampleValues() []Value {
	return []Value{
		NullValue(), BoolValue(false), BoolValue(true),
		NumberValue(math.Inf(-1)), NumberValue(-math.MaxFloat64), NumberValue(-1e300),
		NumberValue(-5), NumberValue(-1), NumberValue(-math.SmallestNonzeroFloat64),
		NumberValue(math.Copysign(0, -1)), NumberValue(0), NumberValue(math.SmallestNonzeroFloat64),
		NumberValue(0.5), NumberValue(1), NumberValue(5), NumberValue(1 << 53), NumberValue(1<<53 + 2),
		NumberValue(1e300), NumberValue(math.MaxFloat64), NumberValue(math.Inf(1)),
		StringValue(""), StringValue("\x00"), StringValue("\x00\x00"), StringValue("\x00\x01"),
		StringValue("\x01"), StringValue("a"), StringValue("a\x00"), StringValue("a\x00b"),
		StringValue("a\x01"), StringValue("ab"), StringValue("abc"), StringValue("b"),
		StringValue("Z"), StringValue("é"), StringValue("日本"), StringValue("😀"),
		StringValue("\uffff"), StringValue("\xff"), StringValue("\xff\xff"),
	}
}

// randValue returns a random scalar biased towards collisions.
func randValue(r *rand.Rand) Value {
	switch r.IntN(5) {
	case 0:
		return NullValue()
	case 1:
		return BoolValue(r.IntN(2) == 1)
	case 2:
		switch r.IntN(3) {
		case 0:
			return NumberValue(float64(r.IntN(7) - 3))
		case 1:
			return NumberValue(math.Float64frombits(r.Uint64()))
		}
		return NumberValue(r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20)))
	}
	alphabet := []byte{0x00, 0x01, 'a', 'b', 0x7f, 0xc3, 0xa9, 0xff}
	b := make([]byte, r.IntN(5))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return StringValue(string(b))
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// TestTermOrder checks that for a fixed path the byte order of terms, with or
// without a ridSeq appended, is Compare's order (Cosmos DB's).
func TestTermOrder(t *testing.T) {
	vals := sampleValues()
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		if v := randValue(r); !math.IsNaN(v.Num) {
			vals = append(vals, v)
		}
	}
	path := []string{"a", "b\x00", "[]"}
	for i, a := range vals {
		ta := Term(path, a)
		for j, b := range vals {
			if i > 300 && j > 300 && r.IntN(20) != 0 {
				continue // keep the quadratic part affordable
			}
			tb := Term(path, b)
			want := Compare(a, b)
			if got := sign(bytes.Compare(ta, tb)); got != want {
				t.Fatalf("bytes.Compare(Term(%v), Term(%v)) = %d, want %d", a, b, got, want)
			}
			if want == 0 {
				continue
			}
			// A suffix (the engine's ridSeq) must not change the order.
			sa := binary.BigEndian.AppendUint64(bytes.Clone(ta), math.MaxUint64)
			sb := binary.BigEndian.AppendUint64(bytes.Clone(tb), 0)
			if got := sign(bytes.Compare(sa, sb)); got != want {
				t.Fatalf("bytes.Compare(Term(%v)+max, Term(%v)+0) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestNegativeZero checks that -0 and 0 have one term.
func TestNegativeZero(t *testing.T) {
	neg, pos := Term([]string{"n"}, NumberValue(math.Copysign(0, -1))), Term([]string{"n"}, NumberValue(0))
	if !bytes.Equal(neg, pos) {
		t.Errorf("Term(-0) = %x, want Term(0) = %x", neg, pos)
	}
	_, v, err := DecodeTerm(neg)
	if err != nil || v.Num != 0 || math.Signbit(v.Num) {
		t.Errorf("DecodeTerm(Term(-0)) = %v, %v, want +0", v, err)
	}
}

// samplePaths are paths that stress the segment encoding.
func samplePaths() [][]string {
	return [][]string{
		nil, {""}, {"", ""}, {"a"}, {"a", ""}, {"a", "b"}, {"ab"}, {"a\x00"}, {"a\x00", "b"},
		{"a", "\x00b"}, {"a\x00b"}, {"a\x01"}, {"a\x02"}, {"\x00"}, {"\x00\x02"}, {"\xff"},
		{"tags", "0"}, {"tags", "[]"}, {"tags", "10"}, {"tags", "1"}, {"tags", "1", "x"},
	}
}

// TestPathsDoNotCollide checks that no term of one path is a prefix of a term
// of another, and that PathSpan holds exactly its path's terms.
func TestPathsDoNotCollide(t *testing.T) {
	paths := samplePaths()
	vals := sampleValues()
	type term struct {
		path int
		b    []byte
	}
	var all []term
	for i, p := range paths {
		for _, v := range vals {
			all = append(all, term{i, Term(p, v)})
		}
	}
	for i, p := range paths {
		s := PathSpan(p)
		for _, tm := range all {
			key := binary.BigEndian.AppendUint64(bytes.Clone(tm.b), 42)
			if got, want := s.Contains(key), tm.path == i; got != want {
				t.Errorf("PathSpan(%q).Contains(%x) = %v, want %v", p, key, got, want)
			}
		}
	}
	for _, a := range all {
		for _, b := range all {
			if len(a.b) < len(b.b) && bytes.HasPrefix(b.b, a.b) {
				t.Errorf("term %x (path %q) is a prefix of %x (path %q)", a.b, paths[a.path], b.b, paths[b.path])
			}
		}
	}
}

// TestDecodeTerm checks that every sample term decodes to its path and value.
func TestDecodeTerm(t *testing.T) {
	for _, p := range samplePaths() {
		for _, v := range sampleValues() {
			term := Term(p, v)
			gp, gv, err := DecodeTerm(term)
			if err != nil {
				t.Fatalf("DecodeTerm(Term(%q, %v)) error %v", p, v, err)
			}
			wantV := v
			if v.Kind == Number && v.Num == 0 {
				wantV.Num = 0
			}
			if len(p) == 0 {
				p = nil
			}
			if diff := cmp.Diff(p, gp); diff != "" {
				t.Errorf("DecodeTerm(Term(%q, %v)) path diff (-want +got):\n%s", p, v, diff)
			}
			if Compare(gv, wantV) != 0 || gv.Kind != wantV.Kind {
				t.Errorf("DecodeTerm(Term(%q, %v)) value = %v", p, v, gv)
			}
			withSeq := binary.BigEndian.AppendUint64(bytes.Clone(term), 7)
			if n, err := TermLen(withSeq); err != nil || n != len(term) {
				t.Errorf("TermLen(Term(%q, %v)+seq) = %d, %v, want %d", p, v, n, err, len(term))
			}
			if gp, err := TermPath(withSeq); err != nil || !cmp.Equal(gp, p) {
				t.Errorf("TermPath(Term(%q, %v)+seq) = %q, %v", p, v, gp, err)
			}
		}
	}
}

// TestDecodeTermInvalid checks that malformed terms are refused.
func TestDecodeTermInvalid(t *testing.T) {
	valid := Term([]string{"a"}, StringValue("x"))
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"no path end", []byte("a\x00\x01")},
		{"bad escape in segment", []byte("a\x00\x03\x00\x02\x02")},
		{"dangling escape", []byte("a\x00")},
		{"no value", []byte("\x00\x02")},
		{"unknown tag", []byte("\x00\x02\x09")},
		{"short number", []byte("\x00\x02\x04\x80\x00")},
		{"bool out of range", []byte("\x00\x02\x03\x02")},
		{"bool missing", []byte("\x00\x02\x03")},
		{"negative zero", append([]byte("\x00\x02\x04"), 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)},
		{"nan", append([]byte("\x00\x02\x04"), 0xff, 0xf8, 0, 0, 0, 0, 0, 0)},
		{"unterminated string", []byte("\x00\x02\x05ab")},
		{"trailing bytes", append(bytes.Clone(valid), 1)},
	}
	for _, tt := range tests {
		if _, _, err := DecodeTerm(tt.in); !errors.Is(err, ErrInvalidTerm) {
			t.Errorf("%s: DecodeTerm(%x) error = %v, want ErrInvalidTerm", tt.name, tt.in, err)
		}
	}
}

// TestSpans checks Eq, In, Range and Prefix against Cosmos DB's predicate
// semantics over every sample term of the path and of neighbouring paths.
func TestSpans(t *testing.T) {
	path := []string{"a"}
	vals := sampleValues()
	type key struct {
		path int
		v    Value
		b    []byte
	}
	paths := samplePaths()
	var keys []key
	for i, p := range paths {
		for _, v := range vals {
			for _, seq := range []uint64{0, math.MaxUint64} {
				keys = append(keys, key{i, v, binary.BigEndian.AppendUint64(Term(p, v), seq)})
			}
		}
	}
	const pathIdx = 3 // samplePaths()[3] == {"a"}
	if !cmp.Equal(paths[pathIdx], path) {
		t.Fatalf("samplePaths()[%d] = %q, want %q", pathIdx, paths[pathIdx], path)
	}
	check := func(t *testing.T, name string, s Span, pred func(Value) bool) {
		t.Helper()
		for _, k := range keys {
			want := k.path == pathIdx && pred(k.v)
			if got := s.Contains(k.b); got != want {
				t.Errorf("%s.Contains(%q, %#v) = %v, want %v", name, paths[k.path], k.v, got, want)
			}
		}
	}
	sameKind := func(a, b Value) bool { return a.Kind == b.Kind }
	for _, lit := range vals {
		check(t, "Eq("+lit.Kind.String()+")", Eq(path, lit), func(v Value) bool { return sameKind(v, lit) && Compare(v, lit) == 0 })
		for _, incl := range []bool{false, true} {
			lo, hi := &Bound{lit, incl}, &Bound{lit, incl}
			check(t, "Range(lo)", Range(path, lo, nil), func(v Value) bool {
				c := Compare(v, lit)
				return sameKind(v, lit) && (c > 0 || incl && c == 0)
			})
			check(t, "Range(hi)", Range(path, nil, hi), func(v Value) bool {
				c := Compare(v, lit)
				return sameKind(v, lit) && (c < 0 || incl && c == 0)
			})
		}
		if lit.Kind == String {
			check(t, "Prefix("+lit.Str+")", Prefix(path, lit.Str), func(v Value) bool {
				return v.Kind == String && strings.HasPrefix(v.Str, lit.Str)
			})
		}
	}
	// Two-sided ranges over a sample of pairs, including lo > hi and mixed
	// kinds (both empty).
	r := rand.New(rand.NewPCG(3, 4))
	for range 400 {
		a, b := vals[r.IntN(len(vals))], vals[r.IntN(len(vals))]
		li, hi := r.IntN(2) == 1, r.IntN(2) == 1
		s := Range(path, &Bound{a, li}, &Bound{b, hi})
		check(t, "Range(lo, hi)", s, func(v Value) bool {
			if !sameKind(v, a) || !sameKind(v, b) {
				return false
			}
			cl, ch := Compare(v, a), Compare(v, b)
			return (cl > 0 || li && cl == 0) && (ch < 0 || hi && ch == 0)
		})
	}
	check(t, "Range(nil, nil)", Range(path, nil, nil), func(Value) bool { return true })
	check(t, "Eq(undefined)", Eq(path, Value{}), func(Value) bool { return false })
	check(t, "Range(undefined)", Range(path, &Bound{Value{}, true}, nil), func(Value) bool { return false })

	in := In(path, []Value{StringValue("b"), NumberValue(1), StringValue("b"), {}, NullValue(), NumberValue(math.Copysign(0, -1)), NumberValue(0)})
	if len(in) != 4 {
		t.Fatalf("In(b, 1, b, undefined, null, -0, 0) = %d spans, want 4", len(in))
	}
	for i := 1; i < len(in); i++ {
		if bytes.Compare(in[i-1].Upper, in[i].Lower) > 0 {
			t.Errorf("In spans %d and %d overlap or are unsorted", i-1, i)
		}
	}
}

// TestEmptySpans checks that empty spans are empty but not unbounded.
func TestEmptySpans(t *testing.T) {
	p := []string{"x"}
	for name, s := range map[string]Span{
		"Eq(undefined)":   Eq(p, Value{}),
		"Range(5, 3)":     Range(p, &Bound{NumberValue(5), true}, &Bound{NumberValue(3), true}),
		"Range(5, 5)":     Range(p, &Bound{NumberValue(5), false}, &Bound{NumberValue(5), true}),
		"Range(1, \"a\")": Range(p, &Bound{NumberValue(1), true}, &Bound{StringValue("a"), true}),
	} {
		if !s.Empty() || s.Lower == nil || s.Upper == nil {
			t.Errorf("%s = %x..%x, want empty with non-nil bounds", name, s.Lower, s.Upper)
		}
	}
	if s := Range(p, &Bound{NumberValue(5), true}, &Bound{NumberValue(5), true}); s.Empty() {
		t.Errorf("Range([5, 5]).Empty() = true, want false")
	}
}

// TestValueFromJSON checks literal parsing.
func TestValueFromJSON(t *testing.T) {
	tests := []struct {
		in   string
		want Value
		ok   bool
	}{
		{"null", NullValue(), true},
		{" true ", BoolValue(true), true},
		{"false", BoolValue(false), true},
		{"-1.5e3", NumberValue(-1500), true},
		{"1e999", NumberValue(math.Inf(1)), true},
		{`"a\u0000b"`, StringValue("a\x00b"), true},
		{`"\u00e9"`, StringValue("é"), true},
		{"[1]", Value{}, false},
		{"{}", Value{}, false},
		{"NaN", Value{}, false},
		{"-Infinity", Value{}, false},
		{"inf", Value{}, false},
		{"", Value{}, false},
		{"nul", Value{}, false},
		{"1 2", Value{}, false},
	}
	for _, tt := range tests {
		got, ok := ValueFromJSON([]byte(tt.in))
		if ok != tt.ok || ok && (got.Kind != tt.want.Kind || Compare(got, tt.want) != 0) {
			t.Errorf("ValueFromJSON(%q) = %#v, %v, want %#v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestBoundedStringTerms: a string longer than StringTermBytes has a
// bounded term (its first StringTermBytes bytes), which it shares with the
// longer strings of the same first bytes. The order of terms stays the
// order of values where terms differ, and the spans of equality, ranges
// and prefixes keep every string they match.
func TestBoundedStringTerms(t *testing.T) {
	path := []string{"s"}
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []string
	for range 400 {
		// Lengths around the bound, over few letters (zero bytes, which
		// the encoding escapes, among them), so that prefixes are shared.
		n := StringTermBytes - 3 + rng.IntN(7)
		b := make([]byte, n)
		for i := range b {
			b[i] = "xy\x00"[min(rng.IntN(39)/19, 2)]
		}
		vals = append(vals, string(b))
	}
	vals = append(vals, "", "x", strings.Repeat("x", StringTermBytes), strings.Repeat("x", StringTermBytes)+"a", strings.Repeat("x", StringTermBytes+1))
	long := func(s string) bool { return len(s) > StringTermBytes }
	for _, a := range vals {
		ta := Term(path, StringValue(a))
		_, v, err := DecodeTerm(ta)
		if err != nil {
			t.Fatalf("DecodeTerm(%x): %v", ta, err)
		}
		if v.Bounded != long(a) || (long(a) && v.Str != a[:StringTermBytes]) || (!long(a) && v.Str != a) {
			t.Fatalf("DecodeTerm of %q's term = %+v", a, v)
		}
		if again := Term(path, v); !bytes.Equal(again, ta) {
			t.Fatalf("Term(DecodeTerm) of %q's term = %x, want %x", a, again, ta)
		}
		n, b, err := BoundedTerm(append(bytes.Clone(ta), 0, 0, 0, 0, 0, 0, 0, 1))
		if err != nil || b != long(a) || (b && n != len(ta)-8) {
			t.Fatalf("BoundedTerm of %q's term and a seq = %d, %v, %v", a, n, b, err)
		}
		if !Eq(path, StringValue(a)).Contains(ta) {
			t.Fatalf("Eq(%q) does not contain its term", a)
		}
		for _, b := range vals {
			tb := Term(path, StringValue(b))
			c, want := bytes.Compare(ta, tb), strings.Compare(a, b)
			shared := long(a) && long(b) && a[:StringTermBytes] == b[:StringTermBytes]
			switch {
			case shared:
				// One bucket, ordered by hash: equal terms only for equal
				// strings, and both under the bucket's prefix.
				if (c == 0) != (want == 0) || !bytes.Equal(ta[:len(ta)-8], tb[:len(tb)-8]) {
					t.Fatalf("%q and %q share their first %d bytes: terms %x and %x", a, b, StringTermBytes, ta, tb)
				}
			case c != want:
				t.Fatalf("terms of %q and %q compare %d, values %d", a, b, c, want)
			}
			if a != b && Eq(path, StringValue(a)).Contains(tb) {
				t.Fatalf("Eq(%q) holds the term of %q", a, b)
			}
			// Every span that a's predicate makes holds b's term if b
			// matches it.
			lo, hi := &Bound{V: StringValue(a)}, &Bound{V: StringValue(a), Inclusive: true}
			if b > a && !Range(path, lo, nil).Contains(tb) {
				t.Fatalf("%q > %q: not in the span of > %q", b, a, a)
			}
			if b <= a && !Range(path, nil, hi).Contains(tb) {
				t.Fatalf("%q <= %q: not in the span of <= %q", b, a, a)
			}
			if b < a && !Range(path, nil, &Bound{V: StringValue(a)}).Contains(tb) {
				t.Fatalf("%q < %q: not in the span of < %q", b, a, a)
			}
			if strings.HasPrefix(b, a) && !Prefix(path, a).Contains(tb) {
				t.Fatalf("%q starts with %q: not in the span of STARTSWITH", b, a)
			}
			if a == b && !Eq(path, StringValue(a)).Contains(tb) {
				t.Fatalf("Eq(%q) misses it", a)
			}
		}
	}
	// A bounded term's span is no wider than its term.
	l := strings.Repeat("x", StringTermBytes) + "q"
	if sp, t0 := Eq(path, StringValue(l)), Term(path, StringValue(strings.Repeat("x", StringTermBytes))); sp.Contains(t0) {
		t.Fatal("the span of a long string holds the exact string of its first bytes")
	}
}
