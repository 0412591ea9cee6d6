package index

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

// treeTerms is the reference the walk (walk.go) replaced: it parses doc
// with fastjson and walks the tree, as Terms did until the walk read the
// text itself. It returns the distinct terms in ascending order.
func treeTerms(p *Policy, doc []byte) ([][]byte, error) {
	var parser fastjson.Parser
	root, err := parser.ParseBytes(doc)
	if err != nil {
		return nil, err
	}
	var terms [][]byte
	if root.Type() != fastjson.TypeObject {
		return nil, nil
	}
	var segs, wsegs [][]byte
	var walk func(v *fastjson.Value, positions int) error
	term := func(segs [][]byte, v *fastjson.Value) error {
		var b []byte
		for _, s := range segs {
			b = appendSegment(b, s)
		}
		b = append(b, esc, escPathEnd)
		switch v.Type() {
		case fastjson.TypeNull:
			b = append(b, tagNull)
		case fastjson.TypeTrue:
			b = append(b, tagBool, 1)
		case fastjson.TypeFalse:
			b = append(b, tagBool, 0)
		case fastjson.TypeNumber:
			f, err := v.Float64()
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) && !finiteSyntax(v) {
				return fmt.Errorf("bad number")
			}
			b = appendValue(b, Value{Kind: Number, Num: f})
		case fastjson.TypeString:
			s, _ := v.StringBytes()
			b = appendString(append(b, tagString), s)
		}
		terms = append(terms, b)
		return nil
	}
	walk = func(v *fastjson.Value, positions int) error {
		var err error
		switch v.Type() {
		case fastjson.TypeObject:
			o, _ := v.Object()
			top := len(segs) == 0
			o.Visit(func(key []byte, child *fastjson.Value) {
				if err != nil || top && isSystem(key) {
					return
				}
				k := slices.Clone(key)
				segs, wsegs = append(segs, k), append(wsegs, k)
				err = walk(child, positions)
				segs, wsegs = segs[:len(segs)-1], wsegs[:len(wsegs)-1]
			})
		case fastjson.TypeArray:
			a, _ := v.Array()
			for i, child := range a {
				segs, wsegs = append(segs, []byte(strconv.Itoa(i))), append(wsegs, wildSeg)
				err = walk(child, positions+1)
				segs, wsegs = segs[:len(segs)-1], wsegs[:len(wsegs)-1]
				if err != nil {
					break
				}
			}
		default:
			if match(p.patterns, segs) {
				err = term(segs, v)
			}
			if err == nil && positions > 0 && match(p.patterns, wsegs) {
				err = term(wsegs, v)
			}
		}
		return err
	}
	if err := walk(root, 0); err != nil {
		return nil, err
	}
	slices.SortFunc(terms, bytes.Compare)
	return slices.CompactFunc(terms, bytes.Equal), nil
}

// walkTerms collects what Terms emits.
func walkTerms(p *Policy, doc []byte) ([][]byte, error) {
	var terms [][]byte
	err := p.Terms(doc, func(t []byte) { terms = append(terms, slices.Clone(t)) })
	return terms, err
}

// checkWalk fails t when the walk's terms of doc differ from the tree's: a
// document valid as JSON has the same terms both ways, and the walk accepts
// nothing the tree refused.
func checkWalk(t *testing.T, p *Policy, doc []byte) {
	t.Helper()
	want, werr := treeTerms(p, doc)
	got, err := walkTerms(p, doc)
	if err != nil && json.Valid(doc) && werr == nil && depth(doc) < maxWalkDepth-10 {
		t.Fatalf("Terms(%q) error %v; the tree's walk read it", doc, err)
	}
	if err == nil && werr != nil {
		t.Fatalf("Terms(%q) accepted what the tree refused (%v)", doc, werr)
	}
	if err == nil && !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("Terms(%q):\n got %q\nwant %q", doc, got, want)
	}
}

// depth is the deepest nesting of brackets in doc, strings aside (roughly).
func depth(doc []byte) int {
	d, most, in := 0, 0, false
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == '[' || c == '{'):
			d++
			most = max(most, d)
		case !in && (c == ']' || c == '}'):
			d--
		}
	}
	return most
}

var walkPolicies = []string{
	defaultPolicyJSON,
	`{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/a/*"},{"path":"/tags/[]/?"}]}`,
	`{"includedPaths":[{"path":"/x/[]/y/?"},{"path":"/\"q\\\"k\"/?"}],"excludedPaths":[{"path":"/*"}]}`,
}

var walkSeeds = []string{
	`{}`, `[]`, `1`, `"s"`, `null`, ` {"a" : 1 } `,
	`{"a":1}`,
	benchDoc,
	`{"tags":["x","y","x"],"n":[[1,[2]],{"z":null}],"x":[{"y":1},{"y":[2,3]}]}`,
	`{"a\u0000":"\u0000","":"","b":-0,"c":1e308,"d":true,"e":false,"f":-1.5E-7,"g":0.1,"h":123456789012345678901234}`,
	`{"esc":"a\"b\\c\/d\b\f\n\r\t","u":"\u00e9\u4e2d\ud83d\ude00","lone":"\ud800","lone2":"\ud800x","bad":"\ud800\u0041","k\u00e9y":1,"q\"k":2}`,
	`{"weird":"\x","short":"\u12","hex":"\uZZZZ"}`,
	`{"a":1,"a":{"a":[1,1]}}`,
	`{"_rid":"r","_self":"s","_etag":"e","_attachments":"a","_ts":1,"x":{"_rid":1}}`,
	`{"l":["` + strings.Repeat("x", StringTermBytes) + `a","` + strings.Repeat("x", StringTermBytes) + `"]}`,
	`{"a":NaN}`, `{"a":Infinity}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":tru}`, `{"a":1}x`, `{"a":[1,]}`, `{"a":1,}`, `{`, `{"a`, `{"a":"b`,
}

// TestWalkMatchesTree: the walk gives every document the terms the tree
// walk gave it (so indexes written before it stay right), for the seeds and
// for random documents of every shape.
func TestWalkMatchesTree(t *testing.T) {
	var policies []*Policy
	for _, s := range walkPolicies {
		policies = append(policies, mustParse(t, s))
	}
	for _, doc := range walkSeeds {
		for _, p := range policies {
			checkWalk(t, p, []byte(doc))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		doc := randomDoc(r)
		for _, p := range policies {
			checkWalk(t, p, doc)
		}
	}
}

func randomDoc(r *rand.Rand) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	n := r.IntN(6)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		writeRandString(r, &b, true)
		b.WriteByte(':')
		writeRandValue(r, &b, 0)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func writeRandValue(r *rand.Rand, b *bytes.Buffer, depth int) {
	k := r.IntN(10)
	if depth > 4 && k < 3 {
		k = 3 + r.IntN(7)
	}
	switch k {
	case 0, 1:
		b.WriteByte('[')
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteString(", "[:1+r.IntN(2)])
			}
			writeRandValue(r, b, depth+1)
		}
		b.WriteByte(']')
	case 2:
		b.WriteByte('{')
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeRandString(r, b, true)
			b.WriteString(" : "[r.IntN(2) : 2+r.IntN(2)])
			writeRandValue(r, b, depth+1)
		}
		b.WriteByte('}')
	case 3, 4:
		writeRandString(r, b, false)
	case 5, 6:
		nums := []string{"0", "-0", "1", "-1", "0.5", "1e3", "1E-3", "-2.5e+10", "1e308", "-1e308", "5e-324", "123456789012345678901", "0.1", "9007199254740993", "3.141592653589793238", "1e400"}
		if r.IntN(3) == 0 {
			b.WriteString(strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)), 'g', -1, 64))
		} else {
			b.WriteString(nums[r.IntN(len(nums))])
		}
	case 7:
		b.WriteString("true")
	case 8:
		b.WriteString("false")
	default:
		b.WriteString("null")
	}
}

func writeRandString(r *rand.Rand, b *bytes.Buffer, name bool) {
	pieces := []string{"a", "id", "x", "y", "[]", "0", "_rid", "_ts", "é", "中", "😀", `\"`, `\\`, `\/`, `\n`, `\t`, `\u0041`, `\u00e9`, `\ud83d\ude00`, `\ud800`, `\ud800\u0041`, `\udc00`, " ", "\u007f"}
	if name && r.IntN(3) == 0 {
		b.WriteString(`"` + []string{"a", "x", "tags", "_rid", "_self", "id", "q\\\"k"}[r.IntN(7)] + `"`)
		return
	}
	b.WriteByte('"')
	for range r.IntN(5) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	b.WriteByte('"')
}

// FuzzWalkMatchesTree is TestWalkMatchesTree on the fuzzer's documents.
func FuzzWalkMatchesTree(f *testing.F) {
	for _, s := range walkSeeds {
		f.Add([]byte(s))
	}
	var policies []*Policy
	for _, s := range walkPolicies {
		policies = append(policies, mustParse(f, s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, p := range policies {
			checkWalk(t, p, doc)
		}
	})
}
