package index

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzParsePolicy checks that no policy text panics ParsePolicy, that errors
// are *PolicyError, and that a parsed policy can match paths and index a
// document.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{
		"",
		defaultPolicyJSON,
		`{"indexingMode":"none","automatic":false}`,
		`{"includedPaths":[{"path":"/name/?"}],"excludedPaths":[{"path":"/*"}]}`,
		`{"includedPaths":[{"path":"/*"},{"path":"/\"a b\"/[]/?"}],"excludedPaths":[{"path":"/x/*"}]}`,
		`{"compositeIndexes":[[{"path":"/a","order":"ascending"},{"path":"/b","order":"descending"}]]}`,
		`{"includedPaths":[{"path":"/a/*/b/?"}]}`,
		`{"includedPaths":[{"path":"/\"q\\\"x\"/?"},{"path":"/*"}]}`,
	} {
		f.Add([]byte(s))
	}
	doc := []byte(`{"id":"1","a":{"b":[1,{"c":"x"}]},"name":"n","a b":[true,null],"x":{"y":2}}`)
	paths := [][]string{{"id"}, {"a", "b", "0"}, {"a", "b", "[]", "c"}, {"name"}, {"a b", "[]"}, {"x", "y"}, {"_etag"}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := ParsePolicy(raw)
		if err != nil {
			if _, ok := errors.AsType[*PolicyError](err); !ok {
				t.Fatalf("ParsePolicy(%q) error %T %v, want *PolicyError", raw, err, err)
			}
			return
		}
		for _, path := range paths {
			p.Indexed(path)
		}
		p.HasComposite([][]string{{"a"}, {"b"}}, []bool{false, true})
		err = p.Terms(doc, func(term []byte) {
			path, _, err := DecodeTerm(term)
			if err != nil {
				t.Fatalf("DecodeTerm(%x) error %v", term, err)
			}
			if !p.Indexed(path) {
				t.Fatalf("Terms emitted %q, which Indexed refuses", path)
			}
		})
		if err != nil {
			t.Fatalf("Terms error %v", err)
		}
	})
}

// FuzzTerms checks that Terms never panics, emits strictly ascending terms
// that DecodeTerm round-trips (decode, re-encode, same bytes) and that the
// policy indexes, and errors only with ErrInvalidJSON.
func FuzzTerms(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"a":1}`,
		benchDoc,
		`{"tags":["x","y","x"],"n":[[1,[2]],{"z":null}]}`,
		`{"a\u0000":"\u0000","":"","b":-0,"c":1e999,"d":true,"e":false}`,
		`{"a":NaN}`,
		`[1]`,
		`{"a":1,"a":{"a":[1,1]}}`,
		// Strings past StringTermBytes sharing their bounded term.
		`{"l":["` + strings.Repeat("x", StringTermBytes) + `a","` + strings.Repeat("x", StringTermBytes) + `b","` + strings.Repeat("x", StringTermBytes) + `"]}`,
	} {
		f.Add([]byte(s))
	}
	policies := []*Policy{
		DefaultPolicy(),
		mustParse(f, `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/a/*"},{"path":"/tags/[]/?"}]}`),
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, p := range policies {
			var prev []byte
			err := p.Terms(doc, func(term []byte) {
				if prev != nil && bytes.Compare(prev, term) >= 0 {
					t.Fatalf("term %x not above previous %x", term, prev)
				}
				prev = append(prev[:0], term...)
				path, v, err := DecodeTerm(term)
				if err != nil {
					t.Fatalf("DecodeTerm(%x) error %v", term, err)
				}
				if again := Term(path, v); !bytes.Equal(again, term) {
					t.Fatalf("Term(DecodeTerm(%x)) = %x", term, again)
				}
				if !p.Indexed(path) {
					t.Fatalf("Terms emitted %q, which Indexed refuses", path)
				}
				if !Eq(path, v).Contains(term) || !PathSpan(path).Contains(term) {
					t.Fatalf("Eq/PathSpan(%q, %v) do not contain their term", path, v)
				}
			})
			if err != nil && !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("Terms(%q) error %v, want ErrInvalidJSON", doc, err)
			}
		}
	})
}
