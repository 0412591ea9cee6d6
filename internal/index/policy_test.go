package index

import (
	"errors"
	"strings"
	"testing"
)

// TestIndexed checks path matching and precedence per policy.
func TestIndexed(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		path   string // "/"-separated concrete path, segments unescaped
		want   bool
	}{
		{"default user prop", "", "name", true},
		{"default nested", "", "a/b/c", true},
		{"default array position", "", "tags/0", true},
		{"default array wildcard", "", "tags/[]", true},
		{"default id", "", "id", true},
		{"default _ts", "", "_ts", true},
		{"default _etag", "", "_etag", false},
		{"default _rid", "", "_rid", false},
		{"system _self even if included", `{"includedPaths":[{"path":"/*"},{"path":"/_self/?"}]}`, "_self", false},
		{"default nested _etag", "", "a/_etag", true},
		{"default root", "", "", false},

		{"excluded subtree", `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/meta/*"}]}`, "meta/x", false},
		{"excluded subtree scalar itself", `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/meta/*"}]}`, "meta", false},
		{"excluded subtree sibling", `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/meta/*"}]}`, "metadata", true},

		{"only name included", `{"includedPaths":[{"path":"/name/?"}],"excludedPaths":[{"path":"/*"}]}`, "name", true},
		{"only name: other", `{"includedPaths":[{"path":"/name/?"}],"excludedPaths":[{"path":"/*"}]}`, "age", false},
		{"only name: below name", `{"includedPaths":[{"path":"/name/?"}],"excludedPaths":[{"path":"/*"}]}`, "name/first", false},

		{"precedence: deeper include wins", `{"includedPaths":[{"path":"/category/name/?"}],"excludedPaths":[{"path":"/*"},{"path":"/category/*"}]}`, "category/name", true},
		{"precedence: rest excluded", `{"includedPaths":[{"path":"/category/name/?"},{"path":"/*"}],"excludedPaths":[{"path":"/category/*"}]}`, "category/id", false},
		{"precedence: ? beats * at same depth", `{"includedPaths":[{"path":"/*"},{"path":"/a/?"}],"excludedPaths":[{"path":"/a/*"}]}`, "a", true},
		{"precedence: * still excludes below", `{"includedPaths":[{"path":"/*"},{"path":"/a/?"}],"excludedPaths":[{"path":"/a/*"}]}`, "a/b", false},
		{"precedence: tie goes to excluded", `{"includedPaths":[{"path":"/*"},{"path":"/a/*"}],"excludedPaths":[{"path":"/a/*"}]}`, "a/b", false},
		{"precedence: named beats []", `{"includedPaths":[{"path":"/*"},{"path":"/t/0/?"}],"excludedPaths":[{"path":"/t/[]/?"}]}`, "t/0", true},

		{"array pattern matches position", `{"includedPaths":[{"path":"/tags/[]/?"}],"excludedPaths":[{"path":"/*"}]}`, "tags/3", true},
		{"array pattern matches wildcard", `{"includedPaths":[{"path":"/tags/[]/?"}],"excludedPaths":[{"path":"/*"}]}`, "tags/[]", true},
		{"array pattern not property", `{"includedPaths":[{"path":"/tags/[]/?"}],"excludedPaths":[{"path":"/*"}]}`, "tags/x", false},
		{"array subtree", `{"includedPaths":[{"path":"/items/[]/*"}],"excludedPaths":[{"path":"/*"}]}`, "items/[]/name", true},
		{"array excluded", `{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/tags/[]/?"}]}`, "tags/12", false},

		{"quoted name", `{"includedPaths":[{"path":"/\"a b\"/?"}],"excludedPaths":[{"path":"/*"}]}`, "a b", true},
		{"quoted escape", `{"includedPaths":[{"path":"/\"q\\\"x\"/?"}],"excludedPaths":[{"path":"/*"}]}`, `q"x`, true},

		{"none mode", `{"indexingMode":"none"}`, "name", false},
		{"none mode case-insensitive", `{"indexingMode":"None","automatic":false}`, "name", false},
		{"lazy indexes", `{"indexingMode":"lazy"}`, "name", true},
		{"consistent only", `{"indexingMode":"Consistent"}`, "name", true},
		{"only excluded: root implied", `{"excludedPaths":[{"path":"/big/*"}]}`, "small", true},
		{"only excluded: excluded", `{"excludedPaths":[{"path":"/big/*"}]}`, "big/x", false},
		{"null policy", `null`, "name", true},
		{"null members", `{"indexingMode":null,"includedPaths":null,"excludedPaths":null,"compositeIndexes":null}`, "name", true},
		{"legacy indexes", `{"includedPaths":[{"path":"/*","indexes":[{"kind":"Range","dataType":"Number","precision":-1}]}]}`, "n", true},
		{"legacy hash and spatial indexes", `{"includedPaths":[{"path":"/*","indexes":[{"kind":"Hash","dataType":"String","precision":3},{"kind":"range","dataType":"number"},{"kind":"Spatial","dataType":"Point"}]}]}`, "n", true},
		{"legacy root path", `{"includedPaths":[{"path":"/","indexes":[{"kind":"Hash","dataType":"String","precision":3}]}],"excludedPaths":[{"path":"/\"secret\"/*"}]}`, "n", true},
		{"legacy root path excludes", `{"includedPaths":[{"path":"/","indexes":[]}],"excludedPaths":[{"path":"/\"secret\"/*"}]}`, "secret/x", false},
		{"legacy root path excluded", `{"includedPaths":[{"path":"/a/?"}],"excludedPaths":[{"path":"/"}]}`, "b", false},
		{"extras ignored", `{"spatialIndexes":[{"path":"/loc/*","types":["Point"]}],"vectorIndexes":[],"fullTextIndexes":[],"x":1}`, "loc", true},
	}
	for _, tt := range tests {
		p, err := ParsePolicy([]byte(tt.policy))
		if err != nil {
			t.Errorf("%s: ParsePolicy(%s) error %v", tt.name, tt.policy, err)
			continue
		}
		var path []string
		if tt.path != "" {
			path = strings.Split(tt.path, "/")
		}
		if got := p.Indexed(path); got != tt.want {
			t.Errorf("%s: ParsePolicy(%s).Indexed(%q) = %v, want %v", tt.name, tt.policy, path, got, tt.want)
		}
	}
}

// TestQuotedSlash checks that a quoted segment may contain "/".
func TestQuotedSlash(t *testing.T) {
	p := mustParse(t, `{"includedPaths":[{"path":"/\"a/b\"/?"}],"excludedPaths":[{"path":"/*"}]}`)
	for _, tt := range []struct {
		path []string
		want bool
	}{{[]string{"a/b"}, true}, {[]string{"a", "b"}, false}} {
		if got := p.Indexed(tt.path); got != tt.want {
			t.Errorf("Indexed(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// TestParsePolicyInvalid checks that invalid policies are *PolicyError.
func TestParsePolicyInvalid(t *testing.T) {
	tests := []string{
		`{`,
		`[]`,
		`"consistent"`,
		`{"indexingMode":"eager"}`,
		`{"indexingMode":1}`,
		`{"automatic":"yes"}`,
		`{"includedPaths":{}}`,
		`{"includedPaths":["/*"]}`,
		`{"includedPaths":[{}]}`,
		`{"includedPaths":[{"path":5}]}`,
		`{"includedPaths":[{"path":"/*","indexes":{}}]}`,
		`{"includedPaths":[{"path":"/name/?"}]}`, // no root
		`{"includedPaths":[{"path":"*"}]}`,
		`{"includedPaths":[{"path":"/*","indexes":[5]}]}`,
		`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Range"}]}]}`,
		`{"includedPaths":[{"path":"/*","indexes":[{"kind":"BTree","dataType":"String"}]}]}`,
		`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Range","dataType":"Date"}]}]}`,
		`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Spatial","dataType":"String"}]}]}`,
		`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Hash","dataType":"Point"}]}]}`,
		`{"includedPaths":[{"path":"/*","indexes":[{"kind":"Hash","dataType":"String","precision":"3"}]}]}`,
		`{"includedPaths":[{"path":"/*","indexes":[{"kind":1,"dataType":"String"}]}]}`,
		`{"includedPaths":[{"path":"/a"}]}`,
		`{"includedPaths":[{"path":"/a/"}]}`,
		`{"includedPaths":[{"path":"/*"},{"path":"//?"}]}`,
		`{"includedPaths":[{"path":"/*"},{"path":"/a/*/b/?"}]}`,
		`{"includedPaths":[{"path":"/*"},{"path":"/a/?/?"}]}`,
		`{"includedPaths":[{"path":"/*"},{"path":"/\"a/?"}]}`,
		`{"includedPaths":[{"path":"/*"},{"path":"/\"a\"b/?"}]}`,
		`{"includedPaths":[{"path":"/*"},{"path":"/a\"b/?"}]}`,
		`{"includedPaths":[{"path":"/*"},{"path":"/a[0]/?"}]}`,
		`{"includedPaths":[{"path":"/*"},{"path":"/a/\"?\""}]}`,
		`{"excludedPaths":[{"path":"/tags/[]"}]}`,
		`{"compositeIndexes":{}}`,
		`{"compositeIndexes":[{}]}`,
		`{"compositeIndexes":[[{"path":"/a"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},{"path":"/b/*"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},{"path":"/b","order":"up"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},{"order":"ascending"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},"b"]]}`,
		`{"compositeIndexes":[[{"path":"/"},{"path":"/b"}]]}`,
		`{"spatialIndexes":{}}`,
	}
	for _, in := range tests {
		p, err := ParsePolicy([]byte(in))
		if _, ok := errors.AsType[*PolicyError](err); !ok {
			t.Errorf("ParsePolicy(%s) = %v, %v, want a *PolicyError", in, p, err)
		}
	}
}

// TestCheckNew: what a new policy may not say though a stored one may
// (an earlier version accepted it, and it must still load).
func TestCheckNew(t *testing.T) {
	for _, in := range []string{
		`{"compositeIndexes":[[{"path":"/a"},{"path":"/a","order":"descending"}]]}`,
		`{"compositeIndexes":[[{"path":"/a"},{"path":"/b"},{"path":"/\"a\""}]]}`,
		`{"spatialIndexes":[{"path":"/loc/*","types":["Point","Circle"]}]}`,
		`{"spatialIndexes":[{"types":["Point"]}]}`,
		`{"spatialIndexes":[{"path":"loc","types":["Point"]}]}`,
		`{"spatialIndexes":[{"path":"/loc/*","types":"Point"}]}`,
		`{"spatialIndexes":["/loc/*"]}`,
		`{"indexingMode":"lazy"}`,
		`{"indexingMode":"None","automatic":true}`,
	} {
		if _, err := ParsePolicy([]byte(in)); err != nil {
			t.Errorf("ParsePolicy(%s) = %v, want it to load", in, err)
		}
		if _, ok := errors.AsType[*PolicyError](CheckNew([]byte(in))); !ok {
			t.Errorf("CheckNew(%s) = nil, want a *PolicyError", in)
		}
	}
	for _, in := range []string{
		"", "null", `{}`, defaultPolicyJSON,
		`{"compositeIndexes":[[{"path":"/a"},{"path":"/b"}],[{"path":"/a"},{"path":"/b","order":"descending"}]]}`,
		`{"spatialIndexes":[{"path":"/location/*","types":["Point","LineString","Polygon","MultiPolygon"]},{"path":"/p/?","types":[]}]}`,
		`{"indexingMode":"none","automatic":false}`, `{"indexingMode":"none"}`, `{"indexingMode":"Consistent","automatic":true}`,
	} {
		if err := CheckNew([]byte(in)); err != nil {
			t.Errorf("CheckNew(%s) = %v, want nil", in, err)
		}
	}
}

// TestDefaultPolicy checks the default policy's flags.
func TestDefaultPolicy(t *testing.T) {
	for name, p := range map[string]*Policy{"DefaultPolicy": DefaultPolicy(), "ParsePolicy(nil)": mustParse(t, "")} {
		if p.None() || !p.Automatic() {
			t.Errorf("%s: None() = %v, Automatic() = %v, want false, true", name, p.None(), p.Automatic())
		}
	}
	p := mustParse(t, `{"indexingMode":"none","automatic":false}`)
	if !p.None() || p.Automatic() {
		t.Errorf("none policy: None() = %v, Automatic() = %v, want true, false", p.None(), p.Automatic())
	}
}

func mustParse(t testing.TB, s string) *Policy {
	t.Helper()
	p, err := ParsePolicy([]byte(s))
	if err != nil {
		t.Fatalf("ParsePolicy(%s) error %v", s, err)
	}
	return p
}

// TestHasComposite checks Cosmos DB's composite-index matching rules.
func TestHasComposite(t *testing.T) {
	p := mustParse(t, `{"compositeIndexes":[
		[{"path":"/name","order":"ascending"},{"path":"/age","order":"descending"}],
		[{"path":"/a/b"},{"path":"/\"c d\""},{"path":"/ts","order":"Descending"}]]}`)
	tests := []struct {
		paths string // ","-separated, segments "."-separated
		desc  []bool
		want  bool
	}{
		{"name,age", []bool{false, true}, true},
		{"name,age", []bool{true, false}, true}, // all inverted
		{"name,age", []bool{false, false}, false},
		{"name,age", []bool{true, true}, false},
		{"age,name", []bool{true, false}, false}, // order matters
		{"name", []bool{false}, false},           // prefix not served
		{"a.b,c d,ts", []bool{false, false, true}, true},
		{"a.b,c d,ts", []bool{true, true, false}, true},
		{"a.b,c d", []bool{false, false}, false},
		{"a,c d,ts", []bool{false, false, true}, false},
		{"name,age", []bool{false}, false}, // mismatched lengths
	}
	for _, tt := range tests {
		var paths [][]string
		for _, s := range strings.Split(tt.paths, ",") {
			paths = append(paths, strings.Split(s, "."))
		}
		if got := p.HasComposite(paths, tt.desc); got != tt.want {
			t.Errorf("HasComposite(%q, %v) = %v, want %v", paths, tt.desc, got, tt.want)
		}
	}
	if DefaultPolicy().HasComposite([][]string{{"name"}, {"age"}}, []bool{false, false}) {
		t.Errorf("DefaultPolicy().HasComposite(name, age) = true, want false")
	}
}
