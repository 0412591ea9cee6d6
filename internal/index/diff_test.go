package index

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// change is one term Diff reports: "+" or "-", then the term in hex.
type change string

// mergeTerms is Diff's reference: Terms of both versions, merged.
func mergeTerms(p *Policy, old, new []byte) ([]change, error) {
	all := func(doc []byte) ([][]byte, error) {
		var ts [][]byte
		if doc == nil {
			return nil, nil
		}
		err := p.Terms(doc, func(term []byte) { ts = append(ts, bytes.Clone(term)) })
		return ts, err
	}
	was, err := all(old)
	if err != nil {
		return nil, err
	}
	is, err := all(new)
	if err != nil {
		return nil, err
	}
	var out []change
	for len(was) > 0 || len(is) > 0 {
		switch {
		case len(is) == 0 || len(was) > 0 && bytes.Compare(was[0], is[0]) < 0:
			out, was = append(out, change(fmt.Sprintf("-%x", was[0]))), was[1:]
		case len(was) == 0 || bytes.Compare(was[0], is[0]) > 0:
			out, is = append(out, change(fmt.Sprintf("+%x", is[0]))), is[1:]
		default:
			was, is = was[1:], is[1:]
		}
	}
	return out, nil
}

// runDiff runs Diff, checking that its terms ascend and that its count is the
// number it reported.
func runDiff(t testing.TB, p *Policy, old, new []byte) ([]change, error) {
	t.Helper()
	var out []change
	var prev []byte
	n, err := p.Diff(old, new, func(term []byte, add bool) {
		if prev != nil && bytes.Compare(prev, term) >= 0 {
			t.Errorf("Diff(%s, %s): term %x not above previous %x", old, new, term, prev)
		}
		prev = bytes.Clone(term)
		sign := "-"
		if add {
			sign = "+"
		}
		out = append(out, change(fmt.Sprintf("%s%x", sign, term)))
	})
	if err == nil && n != len(out) {
		t.Errorf("Diff(%s, %s) = %d, reported %d terms", old, new, n, len(out))
	}
	return out, err
}

func diffPolicies(t testing.TB) []*Policy {
	return []*Policy{
		DefaultPolicy(),
		mustParse(t, `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/a/*"},{"path":"/tags/[]/?"},{"path":"/\"_etag\"/?"}]}`),
		mustParse(t, `{"includedPaths":[{"path":"/a/b/?"},{"path":"/tags/[]/?"},{"path":"/id/?"}],"excludedPaths":[{"path":"/*"}]}`),
		mustParse(t, `{"indexingMode":"none"}`),
	}
}

// TestDiff checks Diff against the merge of Terms on versions that share
// members, differ in them, or cannot be paired member by member.
func TestDiff(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"create", "", `{"id":"1","a":{"b":[1,2]},"_ts":5}`},
		{"delete", `{"id":"1","a":{"b":[1,2]},"_ts":5}`, ""},
		{"same", `{"id":"1","tags":["x","x"],"_ts":5}`, `{"id":"1","tags":["x","x"],"_ts":5}`},
		{"one member changes", `{"id":"1","a":{"b":1,"c":[true]},"n":2}`, `{"id":"1","a":{"b":2,"c":[true]},"n":2}`},
		{"members move", `{"id":"1","x":1,"y":[2,3]}`, `{"y":[2,3],"z":null,"id":"1"}`},
		{"system properties", `{"id":"1","_rid":"r","_self":"s","_etag":"\"1\"","_attachments":"attachments/","_ts":1}`,
			`{"id":"1","_rid":"r","_self":"s","_etag":"\"2\"","_attachments":"attachments/","_ts":2}`},
		{"system property not a string", `{"id":"1","_rid":5,"a":1}`, `{"id":"1","_rid":"r","a":1}`},
		{"repeated name in old", `{"id":"1","a":1,"a":2}`, `{"id":"1","a":1}`},
		{"repeated name, array terms shared", `{"t":["x"],"t":["x","y"]}`, `{"t":["x"],"t":["z","x"]}`},
		{"escaped name", `{"\u0061":1,"b":2}`, `{"a":1,"b":2}`},
		{"white space", " {\"id\" : \"1\" ,\n\"a\":[ 1 , {\"b\" : 2} ] } ", `{"id":"1","a":[1,{"b":3}]}`},
		{"same value, other spacing", `{"a":[1,2]}`, `{"a":[1, 2]}`},
		{"empty objects", `{}`, `{"a":{}}`},
		{"not an object", `[1,2]`, `{"a":1}`},
		{"value with brackets in strings", `{"s":"}]","t":{"u":"[{"}}`, `{"s":"}]","t":{"u":"[{x"}}`},
		{"escaped quotes", `{"s":"a\"b\\","t":1}`, `{"s":"a\"b\\","t":2}`},
		{"big numbers", `{"n":1e999,"m":-0}`, `{"n":1e999,"m":0}`},
		{"nul in strings", `{"a":"x\u0000y","b\u0000":1}`, `{"a":"x\u0000z"}`},
	}
	for _, p := range diffPolicies(t) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				old, new := docOrNil(tt.old), docOrNil(tt.new)
				want, werr := mergeTerms(p, old, new)
				if werr != nil {
					t.Fatal(werr)
				}
				got, err := runDiff(t, p, old, new)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("Diff(%s, %s) differs from merging Terms (-want +got):\n%s", tt.old, tt.new, d)
				}
			})
		}
	}
}

func docOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// TestDiffInvalidJSON checks that a member that does not parse is an
// ErrInvalidJSON, whichever version holds it.
func TestDiffInvalidJSON(t *testing.T) {
	p := DefaultPolicy()
	for _, tt := range []struct{ old, new string }{
		{`{"a":1}`, `{"a":NaN}`},
		{`{"a":[1,}`, `{"a":1}`},
		{`{"a":1}`, `{"a":1.2.3}`},
		{`{"a":1,}`, `{"a":1}`},
		{`{"a":1}`, `{"a":1}x`},
	} {
		if _, err := p.Diff([]byte(tt.old), []byte(tt.new), func([]byte, bool) {}); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("Diff(%s, %s) error = %v, want ErrInvalidJSON", tt.old, tt.new, err)
		}
	}
}

// TestDiffMatchesTerms compares Diff with the merge of Terms on random
// documents and random edits of them: members kept, changed, dropped,
// added, moved, repeated, written with escaped names or spacing.
func TestDiffMatchesTerms(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	policies := diffPolicies(t)
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		old := randDoc(r)
		new := editDoc(r, old)
		a, b := renderDoc(old), renderDoc(new)
		if r.IntN(20) == 0 {
			a = nil
		}
		if r.IntN(20) == 0 {
			b = nil
		}
		for _, p := range policies {
			want, werr := mergeTerms(p, a, b)
			got, err := runDiff(t, p, a, b)
			if (werr == nil) != (err == nil) || cmp.Diff(want, got) != "" {
				t.Fatalf("case %d: Diff(%s, %s) = %v, %v; merging Terms gives %v, %v", i, a, b, got, err, want, werr)
			}
		}
	}
}

// FuzzDiff checks that Diff never panics, fails only with ErrInvalidJSON,
// and agrees with the merge of Terms whenever Terms takes both versions.
func FuzzDiff(f *testing.F) {
	for _, s := range [][2]string{
		{`{"id":"1","a":1,"_ts":1}`, `{"id":"1","a":2,"_ts":1}`},
		{`{"id":"1","t":["x","y"]}`, `{"t":["y","x"],"id":"1"}`},
		{`{"a":1,"a":{"a":[1,1]}}`, `{"a":{"a":[1,1]}}`},
		{`{"_rid":"r","_self":{"x":1},"a":[null,true]}`, `{"_rid":"s","a":[null,false]}`},
		{`{"\u0062":1,"c":"\u0000"}`, `{"b":1,"c":""}`},
		{`{"n":1e999,"m":-0,"k":1.5}`, `{"n":-1e999,"m":0,"k":1.5}`},
		{`{"a":NaN}`, `{"a":1}`},
		{`[1]`, `{}`},
		{benchDoc, strings.Replace(benchDoc, `"floor":3`, `"floor":4`, 1)},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	policies := diffPolicies(f)
	f.Fuzz(func(t *testing.T, old, new []byte) {
		for _, p := range policies {
			got, err := runDiff(t, p, old, new)
			if err != nil && !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("Diff(%q, %q) error %v, want ErrInvalidJSON", old, new, err)
			}
			want, werr := mergeTerms(p, old, new)
			if werr != nil {
				continue // Diff need not find what Terms rejects (see its doc)
			}
			if err != nil || cmp.Diff(want, got) != "" {
				t.Fatalf("Diff(%q, %q) = %v, %v; merging Terms gives %v", old, new, got, err, want)
			}
		}
	})
}

// A jsonMember is a member of a random document: its name as written
// (quotes included) and its value's JSON.
type jsonMember struct{ key, val string }

var randNames = []string{`"id"`, `"a"`, `"b"`, `"tags"`, `"0"`, `"[]"`, `""`, `"_ts"`, `"_rid"`, `"_self"`, `"_etag"`, `"_attachments"`, `"\u0061"`, `"x\u0000"`, `"é"`}

// randDoc returns the members of a random object.
func randDoc(r *rand.Rand) []jsonMember {
	ms := make([]jsonMember, r.IntN(7))
	for i := range ms {
		ms[i] = jsonMember{randNames[r.IntN(len(randNames))], randJSON(r, 0)}
	}
	return ms
}

// randJSON returns random JSON, nested at most four deep below depth.
func randJSON(r *rand.Rand, depth int) string {
	k := r.IntN(10)
	if depth >= 4 && k >= 8 {
		k = r.IntN(8)
	}
	switch k {
	case 0:
		return "null"
	case 1:
		return [...]string{"true", "false"}[r.IntN(2)]
	case 2:
		return [...]string{"0", "-0", "1", "-1.5", "1e999", "-1e999", "12345678901234567890", "0.1", "2E-3"}[r.IntN(9)]
	case 3:
		return strconv.Itoa(r.IntN(100))
	case 4, 5:
		return [...]string{`""`, `"x"`, `"y"`, `"a\"b"`, `"\\"`, `"\u0000"`, `"\ud800"`, `"\ud83d\ude00"`, `"é"`, `"}]"`}[r.IntN(10)]
	case 6:
		return `"_ts"`
	case 7:
		return "[" + strings.Repeat(" ", r.IntN(2)) + "]"
	case 8:
		vs := make([]string, 1+r.IntN(3))
		for i := range vs {
			vs[i] = randJSON(r, depth+1)
		}
		return "[" + strings.Join(vs, ","+strings.Repeat(" ", r.IntN(2))) + "]"
	default:
		ms := randDoc(r)
		for i := range ms {
			ms[i].val = randJSON(r, depth+1)
		}
		return string(renderDoc(ms))
	}
}

// editDoc returns a random edit of ms: members kept, changed, dropped,
// added, moved or repeated.
func editDoc(r *rand.Rand, ms []jsonMember) []jsonMember {
	out := make([]jsonMember, 0, len(ms)+2)
	for _, m := range ms {
		switch r.IntN(8) {
		case 0: // dropped
		case 1:
			out = append(out, jsonMember{m.key, randJSON(r, 0)})
		case 2:
			out = append(out, m, jsonMember{randNames[r.IntN(len(randNames))], randJSON(r, 0)})
		default:
			out = append(out, m)
		}
	}
	if r.IntN(3) == 0 && len(out) > 1 {
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

// renderDoc writes ms as a JSON object, sometimes with spaces between tokens.
func renderDoc(ms []jsonMember) []byte {
	sp := ""
	if len(ms)%3 == 1 {
		sp = " "
	}
	var b strings.Builder
	b.WriteString("{" + sp)
	for i, m := range ms {
		if i > 0 {
			b.WriteString("," + sp)
		}
		b.WriteString(m.key + sp + ":" + sp + m.val)
	}
	b.WriteString(sp + "}")
	return []byte(b.String())
}
