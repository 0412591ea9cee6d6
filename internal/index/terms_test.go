package index

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// collect returns Terms' output rendered as "path = value" lines, checking
// on the way that the terms are strictly ascending and decode.
func collect(t testing.TB, p *Policy, doc string) ([]string, error) {
	t.Helper()
	var out []string
	var prev []byte
	err := p.Terms([]byte(doc), func(term []byte) {
		if prev != nil && bytes.Compare(prev, term) >= 0 {
			t.Errorf("Terms(%s): term %x not above previous %x", doc, term, prev)
		}
		prev = bytes.Clone(term)
		path, v, err := DecodeTerm(term)
		if err != nil {
			t.Errorf("Terms(%s): DecodeTerm(%x) error %v", doc, term, err)
			return
		}
		out = append(out, render(path, v))
	})
	return out, err
}

func render(path []string, v Value) string {
	var s string
	switch v.Kind {
	case Null:
		s = "null"
	case Bool:
		s = fmt.Sprint(v.Bool)
	case Number:
		s = fmt.Sprint(v.Num)
	case String:
		s = fmt.Sprintf("%q", v.Str)
	}
	return "/" + strings.Join(path, "/") + " = " + s
}

// TestTerms checks the terms of nested documents with arrays under several
// policies. Want lists are in term order (by path encoding, then value).
func TestTerms(t *testing.T) {
	doc := `{"id":"1","_rid":"abc","_self":"s","_etag":"\"e\"","_attachments":"a","_ts":17,
		"name":"Ann","age":-0,"ok":true,"none":null,
		"tags":["x","y","x"],
		"addr":{"city":"Oslo","geo":[1.5,[2,3]],"_etag":"kept"},
		"items":[{"sku":"a","qty":2},{"sku":"b"}],
		"empty":{},"list":[]}`
	tests := []struct {
		name   string
		policy string
		doc    string
		want   []string
	}{
		{"default", "", doc, []string{
			"/_ts = 17",
			"/addr/_etag = \"kept\"",
			"/addr/city = \"Oslo\"",
			"/addr/geo/0 = 1.5",
			"/addr/geo/1/0 = 2",
			"/addr/geo/1/1 = 3",
			"/addr/geo/[] = 1.5",
			"/addr/geo/[]/[] = 2",
			"/addr/geo/[]/[] = 3",
			"/age = 0",
			"/id = \"1\"",
			"/items/0/qty = 2",
			"/items/0/sku = \"a\"",
			"/items/1/sku = \"b\"",
			"/items/[]/qty = 2",
			"/items/[]/sku = \"a\"",
			"/items/[]/sku = \"b\"",
			"/name = \"Ann\"",
			"/none = null",
			"/ok = true",
			"/tags/0 = \"x\"",
			"/tags/1 = \"y\"",
			"/tags/2 = \"x\"",
			"/tags/[] = \"x\"", // once, though two elements hold it
			"/tags/[] = \"y\"",
		}},
		{"excluded subtrees", `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/addr/*"},{"path":"/items/*"},{"path":"/tags/[]/?"},{"path":"/_ts/?"}]}`, doc, []string{
			"/age = 0",
			"/id = \"1\"",
			"/name = \"Ann\"",
			"/none = null",
			"/ok = true",
		}},
		{"only wildcard array paths", `{"includedPaths":[{"path":"/tags/[]/?"},{"path":"/items/[]/sku/?"}],"excludedPaths":[{"path":"/*"}]}`, doc, []string{
			"/items/0/sku = \"a\"", // the pattern's [] matches positions too
			"/items/1/sku = \"b\"",
			"/items/[]/sku = \"a\"",
			"/items/[]/sku = \"b\"",
			"/tags/0 = \"x\"",
			"/tags/1 = \"y\"",
			"/tags/2 = \"x\"",
			"/tags/[] = \"x\"",
			"/tags/[] = \"y\"",
		}},
		{"none", `{"indexingMode":"none"}`, doc, nil},
		{"number order within path", "", `{"n":[10,-1,2.5,-0,"a",null,false]}`, []string{
			"/n/0 = 10", "/n/1 = -1", "/n/2 = 2.5", "/n/3 = 0", "/n/4 = \"a\"", "/n/5 = null", "/n/6 = false",
			"/n/[] = null", "/n/[] = false", "/n/[] = -1", "/n/[] = 0", "/n/[] = 2.5", "/n/[] = 10", "/n/[] = \"a\"",
		}},
		{"escapes and zero bytes", "", `{"a\u0000b":"x\u0000","é":"\u00e9","":""}`, []string{
			"/ = \"\"",
			"/a\x00b = \"x\\x00\"",
			"/é = \"é\"",
		}},
		{"duplicate keys", "", `{"a":1,"a":1,"a":2}`, []string{"/a = 1", "/a = 2"}},
		{"overflowing number", "", `{"big":1e999,"small":-1e999}`, []string{"/big = +Inf", "/small = -Inf"}},
		{"not an object", "", `[1,2]`, nil},
		{"scalar doc", "", `"x"`, nil},
	}
	for _, tt := range tests {
		p := mustParse(t, tt.policy)
		got, err := collect(t, p, tt.doc)
		if err != nil {
			t.Errorf("%s: Terms error %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: Terms(%s) diff (-want +got):\n%s", tt.name, tt.doc, diff)
		}
	}
}

// TestTermsAgreeWithIndexed checks that Terms emits a term exactly for the
// scalar paths Indexed accepts.
func TestTermsAgreeWithIndexed(t *testing.T) {
	p := mustParse(t, `{"includedPaths":[{"path":"/*"},{"path":"/a/b/?"}],"excludedPaths":[{"path":"/a/*"},{"path":"/c/[]/?"}]}`)
	got, err := collect(t, p, `{"a":{"b":1,"c":2},"c":[1,{"d":2}],"d":3}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/a/b = 1", "/c/1/d = 2", "/c/[]/d = 2", "/d = 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Terms diff (-want +got):\n%s", diff)
	}
}

// TestTermsInvalidJSON checks that only invalid JSON is an error.
func TestTermsInvalidJSON(t *testing.T) {
	p := DefaultPolicy()
	for _, doc := range []string{``, `{`, `{"a":}`, `{"a":NaN}`, `{"a":[Infinity]}`, `{"a":-inf}`, `{"a":1.2.3}`, `{"a":1}x`} {
		err := p.Terms([]byte(doc), func([]byte) {})
		if !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("Terms(%s) error = %v, want ErrInvalidJSON", doc, err)
		}
	}
}

// TestTermsConcurrent runs Terms from several goroutines on one Policy (under
// -race) and checks that every result is the same.
func TestTermsConcurrent(t *testing.T) {
	p := DefaultPolicy()
	want, err := collect(t, p, benchDoc)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([][]string, 8)
	for i := range results {
		wg.Go(func() {
			for range 50 {
				var out []string
				_ = p.Terms([]byte(benchDoc), func(term []byte) {
					path, v, _ := DecodeTerm(term)
					out = append(out, render(path, v))
				})
				results[i] = out
			}
		})
	}
	wg.Wait()
	for i, got := range results {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("goroutine %d: Terms diff (-want +got):\n%s", i, diff)
		}
	}
}

// TestTermsSpans ties Terms to the spans: a document's term for a.b = 5
// falls in Eq and Range spans of that path and not in others.
func TestTermsSpans(t *testing.T) {
	var terms [][]byte
	if err := DefaultPolicy().Terms([]byte(`{"a":{"b":5},"s":"hello"}`), func(term []byte) {
		terms = append(terms, bytes.Clone(term))
	}); err != nil {
		t.Fatal(err)
	}
	ab, s := []string{"a", "b"}, []string{"s"}
	tests := []struct {
		name string
		span Span
		want int
	}{
		{"Eq(a.b, 5)", Eq(ab, NumberValue(5)), 1},
		{"Eq(a.b, \"5\")", Eq(ab, StringValue("5")), 0},
		{"Range(a.b > 4.9)", Range(ab, &Bound{NumberValue(4.9), false}, nil), 1},
		{"Range(a.b > 5)", Range(ab, &Bound{NumberValue(5), false}, nil), 0},
		{"Range(a.b <= 5)", Range(ab, nil, &Bound{NumberValue(5), true}), 1},
		{"Range(a.b < \"z\")", Range(ab, nil, &Bound{StringValue("z"), false}), 0},
		{"Prefix(s, he)", Prefix(s, "he"), 1},
		{"Prefix(s, \"\")", Prefix(s, ""), 1},
		{"Prefix(s, He)", Prefix(s, "He"), 0},
		{"PathSpan(a)", PathSpan([]string{"a"}), 0},
		{"PathSpan(a.b)", PathSpan(ab), 1},
	}
	for _, tt := range tests {
		got := 0
		for _, term := range terms {
			if tt.span.Contains(term) {
				got++
			}
		}
		if got != tt.want {
			t.Errorf("%s holds %d terms, want %d", tt.name, got, tt.want)
		}
	}
}
