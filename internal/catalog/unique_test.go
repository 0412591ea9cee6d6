package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fastjson"
)

func containerWith(policy string) []byte {
	if policy == "" {
		return []byte(`{"id":"u","partitionKey":{"paths":["/pk"]}}`)
	}
	return []byte(`{"id":"u","partitionKey":{"paths":["/pk"]},"uniqueKeyPolicy":` + policy + `}`)
}

func keysJSON(n, paths int) string {
	var ks []string
	for i := range n {
		var ps []string
		for j := range paths {
			ps = append(ps, fmt.Sprintf(`"/k%d/p%d"`, i, j))
		}
		ks = append(ks, `{"paths":[`+strings.Join(ps, ",")+`]}`)
	}
	return `{"uniqueKeys":[` + strings.Join(ks, ",") + `]}`
}

// TestUniqueKeyPolicy: CreateContainer accepts valid unique key policies
// (UniqueKeys and UniqueKeySegments give them back) and refuses invalid ones
// with an *InvalidError.
func TestUniqueKeyPolicy(t *testing.T) {
	tests := []struct {
		policy   string
		want     [][]string   // UniqueKeys; ignored when bad
		wantSegs [][][]string // UniqueKeySegments; nil: not checked
		bad      bool
	}{
		{policy: "", want: nil},
		{policy: `null`, want: nil},
		{policy: `{}`, want: nil},
		{policy: `{"uniqueKeys":[]}`, want: nil},
		{policy: `{"uniqueKeys":null}`, want: nil},
		{policy: `{"uniqueKeys":[{"paths":["/email"]}]}`, want: [][]string{{"/email"}}, wantSegs: [][][]string{{{"email"}}}},
		{policy: `{"uniqueKeys":[{"paths":["/a","/b/c"]},{"paths":["/email"]}]}`, want: [][]string{{"/a", "/b/c"}, {"/email"}},
			wantSegs: [][][]string{{{"a"}, {"b", "c"}}, {{"email"}}}},
		{policy: `{"uniqueKeys":[{"paths":["/\"odd/name\"/x"]}]}`, want: [][]string{{`/"odd/name"/x`}}, wantSegs: [][][]string{{{"odd/name", "x"}}}},
		{policy: `{"uniqueKeys":[{"paths":["/id"]}]}`, want: [][]string{{"/id"}}},
		{policy: `{"uniqueKeys":[{"paths":["/pk","/x"]}]}`, want: [][]string{{"/pk", "/x"}}},
		{policy: `{"uniqueKeys":[{"paths":["/a/_ts"]}]}`, want: [][]string{{"/a/_ts"}}}, // nested: not a system property
		{policy: keysJSON(MaxUniqueKeys, MaxUniqueKeyPaths), want: nil},                 // at the limits; paths checked by count below
		{policy: keysJSON(MaxUniqueKeys+1, 1), bad: true},
		{policy: keysJSON(1, MaxUniqueKeyPaths+1), bad: true},
		{policy: `{"uniqueKeys":[{"paths":[]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":"/a"}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":[1]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/a","/a"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/a","/\"a\""]}]}`, bad: true}, // the same path, quoted
		{policy: `{"uniqueKeys":[{"paths":["a"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":[""]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/a/"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/a//b"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/a/*"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/a/?"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/a/[]/b"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/a\"b"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/\"a"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/\"a\"b"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/_etag"]}]}`, bad: true},
		{policy: `{"uniqueKeys":[{"paths":["/_ts"]}]}`, bad: true},
		{policy: `{"uniqueKeys":{}}`, bad: true},
		{policy: `{"uniqueKeys":[[]]}`, bad: true},
		{policy: `[]`, bad: true},
		{policy: `"x"`, bad: true},
	}
	for _, tt := range tests {
		c, st := openCatalog(t, newMemBackend())
		if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
			t.Fatal(err)
		}
		k, err := c.CreateContainer("db", containerWith(tt.policy), Throughput{})
		switch {
		case tt.bad:
			if _, ok := errors.AsType[*InvalidError](err); !ok {
				t.Errorf("CreateContainer(uniqueKeyPolicy %s) = %v, want an *InvalidError", tt.policy, err)
			}
		case err != nil:
			t.Errorf("CreateContainer(uniqueKeyPolicy %s) = %v, want success", tt.policy, err)
		case tt.policy == keysJSON(MaxUniqueKeys, MaxUniqueKeyPaths):
			if n := len(k.UniqueKeys()); n != MaxUniqueKeys || len(k.UniqueKeys()[0]) != MaxUniqueKeyPaths {
				t.Errorf("CreateContainer(limits).UniqueKeys() has %d keys of %d paths, want %d of %d", n, len(k.UniqueKeys()[0]), MaxUniqueKeys, MaxUniqueKeyPaths)
			}
		default:
			if d := cmp.Diff(tt.want, k.UniqueKeys()); d != "" {
				t.Errorf("CreateContainer(uniqueKeyPolicy %s).UniqueKeys() (-want +got):\n%s", tt.policy, d)
			}
			if tt.wantSegs != nil {
				if d := cmp.Diff(tt.wantSegs, k.UniqueKeySegments()); d != "" {
					t.Errorf("CreateContainer(uniqueKeyPolicy %s).UniqueKeySegments() (-want +got):\n%s", tt.policy, d)
				}
			}
		}
		st.Close()
	}
}

// TestUniqueKeyPolicyReplace: a replace may not change the unique key policy;
// an identical one, or none for a container without one, is fine.
func TestUniqueKeyPolicyReplace(t *testing.T) {
	const ab = `{"uniqueKeys":[{"paths":["/a","/b"]}]}`
	tests := []struct {
		before, after string
		ok            bool
	}{
		{"", "", true},
		{"", `{"uniqueKeys":[]}`, true},
		{`{"uniqueKeys":[]}`, "", true},
		{ab, ab, true},
		{ab, `{"uniqueKeys":[{"paths":["/a", "/b"]}]}`, true},    // spacing differs
		{ab, `{"uniqueKeys":[{"paths":["/\"a\"","/b"]}]}`, true}, // the same paths, quoted
		{ab, "", false},
		{"", ab, false},
		{ab, `{"uniqueKeys":[{"paths":["/b","/a"]}]}`, false},
		{ab, `{"uniqueKeys":[{"paths":["/a"]}]}`, false},
		{ab, `{"uniqueKeys":[{"paths":["/a","/b"]},{"paths":["/c"]}]}`, false},
	}
	for _, tt := range tests {
		c, st := openCatalog(t, newMemBackend())
		if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateContainer("db", containerWith(tt.before), Throughput{}); err != nil {
			t.Fatal(err)
		}
		_, err := c.ReplaceContainer("db", "u", containerWith(tt.after), "")
		if _, bad := errors.AsType[*InvalidError](err); tt.ok && err != nil || !tt.ok && !bad {
			t.Errorf("ReplaceContainer(%q → %q) = %v, want ok %v", tt.before, tt.after, err, tt.ok)
		}
		st.Close()
	}
}

// TestUniqueKeysPersist: the unique keys survive a reopen of the catalog.
func TestUniqueKeysPersist(t *testing.T) {
	fs := newMemBackend()
	c, st := openCatalog(t, fs)
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateContainer("db", containerWith(`{"uniqueKeys":[{"paths":["/a","/b/c"]}]}`), Throughput{}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	c, st = openCatalog(t, fs)
	defer st.Close()
	k, err := c.Container("db", "u")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([][][]string{{{"a"}, {"b", "c"}}}, k.UniqueKeySegments()); d != "" {
		t.Errorf("reopened UniqueKeySegments() (-want +got):\n%s", d)
	}
}

// FuzzUniqueKeyPolicy: parseUniqueKeys never panics; what it accepts is
// within the limits, and each path, rebuilt from its segments with every
// segment JSON-quoted, splits back into the same segments.
func FuzzUniqueKeyPolicy(f *testing.F) {
	for _, s := range []string{
		`{"uniqueKeys":[{"paths":["/a","/b/c"]},{"paths":["/email"]}]}`,
		`{"uniqueKeys":[{"paths":["/\"odd/name\"/x"]}]}`,
		`{"uniqueKeys":[{"paths":["/a/*"]}]}`, `{"uniqueKeys":[]}`, `null`, `{"uniqueKeys":[{"paths":["/\"a\\u0000\""]}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, policy string) {
		var p fastjson.Parser
		v, err := p.Parse(policy)
		if err != nil {
			return
		}
		u, err := parseUniqueKeys(v)
		if err != nil {
			if _, ok := errors.AsType[*InvalidError](err); !ok {
				t.Fatalf("parseUniqueKeys(%s) = %v, want an *InvalidError", policy, err)
			}
			return
		}
		if len(u.paths) > MaxUniqueKeys || len(u.paths) != len(u.segs) {
			t.Fatalf("parseUniqueKeys(%s) has %d keys (%d split)", policy, len(u.paths), len(u.segs))
		}
		for i, paths := range u.paths {
			if len(paths) == 0 || len(paths) > MaxUniqueKeyPaths {
				t.Fatalf("parseUniqueKeys(%s) key %d has %d paths", policy, i, len(paths))
			}
			for j, path := range paths {
				var quoted strings.Builder
				for _, s := range u.segs[i][j] {
					b, _ := json.Marshal(s)
					quoted.WriteString("/" + string(b))
				}
				got, why := splitUniquePath(quoted.String())
				if why != "" || !slices.Equal(got, u.segs[i][j]) {
					t.Fatalf("splitUniquePath(%s) (from %q) = %q, %q; want %q", quoted.String(), path, got, why, u.segs[i][j])
				}
			}
		}
	})
}

// TestConflictPolicyReplace: a replace may not change the conflict
// resolution policy (Cosmos DB sets it at creation only); the same policy,
// spelled otherwise, or the default for a container that has it, is fine.
func TestConflictPolicyReplace(t *testing.T) {
	with := func(policy string) []byte {
		if policy == "" {
			return []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`)
		}
		return []byte(`{"id":"k","partitionKey":{"paths":["/pk"]},"conflictResolutionPolicy":` + policy + `}`)
	}
	const lwwTS, lwwX = `{"mode":"LastWriterWins","conflictResolutionPath":"/_ts"}`, `{"mode":"LastWriterWins","conflictResolutionPath":"/x"}`
	const custom = `{"mode":"Custom","conflictResolutionProcedure":"dbs/db/colls/k/sprocs/r"}`
	for _, tt := range []struct {
		before, after string
		ok            bool
	}{
		{"", "", true},
		{"", lwwTS, true},
		{lwwTS, `{"mode":"lastWriterWins","conflictResolutionPath":"/_ts","conflictResolutionProcedure":""}`, true},
		{lwwX, lwwX, true},
		{custom, custom, true},
		{"", lwwX, false},
		{lwwX, "", false},
		{lwwX, `{"mode":"LastWriterWins","conflictResolutionPath":"/y"}`, false},
		{lwwTS, custom, false},
		{custom, lwwTS, false},
	} {
		c, st := openCatalog(t, newMemBackend())
		if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateContainer("db", with(tt.before), Throughput{}); err != nil {
			t.Fatal(err)
		}
		_, err := c.ReplaceContainer("db", "k", with(tt.after), "")
		if _, bad := errors.AsType[*InvalidError](err); tt.ok && err != nil || !tt.ok && !bad {
			t.Errorf("ReplaceContainer(%s → %s) = %v, want ok %v", tt.before, tt.after, err, tt.ok)
		}
		st.Close()
	}
}
