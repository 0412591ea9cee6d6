package advise

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// nullData returns n items (n a multiple of 5) whose /k is null in 40%,
// absent in 40%, and one of 40 strings in 20%; /g is one of 7 values.
func nullData(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		switch i % 5 {
		case 0, 1:
			fmt.Fprintf(&b, `{"id":"%d","k":null,"g":"g%d"}`+"\n", i, i%7)
		case 2, 3:
			fmt.Fprintf(&b, `{"id":"%d","g":"g%d"}`+"\n", i, i%7)
		default:
			fmt.Fprintf(&b, `{"id":"%d","k":"v%d","g":"g%d"}`+"\n", i, (i/5)%40, i%7)
		}
	}
	return b.Bytes()
}

// TestNullApartFromMissing: as in Cosmos DB, a single key keeps the items
// whose property is null (the logical partition of null) apart from those
// without it (the undefined one): the advisor pooled them, showing one
// partition of 80% where there are two of 40%. A synthetic key cannot take
// null (synthkey.ErrNull), so there null still counts as missing.
func TestNullApartFromMissing(t *testing.T) {
	w := `{"queries":[{"name":"by g and k","filters":["/g","/k"]}]}`
	r := analyze(t, nullData(1000), w, Options{})
	k := find(t, r, "/k")
	if k.LargestShare != 0.4 || k.LargestKey != "null" || k.Missing != 0.4 || k.Distinct != 41 {
		t.Errorf("/k: largest %v (%q), missing %v, %d distinct; want 0.4 (null), 0.4, 41 (40 strings and null)",
			k.LargestShare, k.LargestKey, k.Missing, k.Distinct)
	}
	if !strings.HasPrefix(k.Build, "the path itself") {
		t.Errorf("/k is built as %q: synthkey refuses its nulls, so only the path itself keys them", k.Build)
	}
	synthetic := map[Strategy]int{}
	for _, c := range r.Candidates {
		if c.Strategy == Single || c.Strategy == Hierarchical ||
			!slices.Contains(c.Paths, "/k") && !slices.Contains(c.HashPaths, "/k") {
			continue
		}
		synthetic[c.Strategy]++
		if c.Missing != 0.8 || c.LargestKey != "(missing)" {
			t.Errorf("%s (%s): missing %v, largest %q; want 0.8 (null is missing in a synthetic key), (missing)",
				c.Key, c.Strategy, c.Missing, c.LargestKey)
		}
		// As before, no suffix variant is built on a base that 80% of the
		// items give no synthetic value.
		if c.Strategy != Concat && c.Paths[0] == "/k" {
			t.Errorf("%s: a suffix variant of /k, null or missing in 80%% of the items", c.Key)
		}
	}
	// /k-/g, and /g.hash(/k,100) (queried together: the hashed path null).
	if synthetic[Concat] == 0 || synthetic[HashSuffix] == 0 {
		t.Errorf("candidates of /k by strategy %v: want a concat and a hash suffix", synthetic)
	}
	if c := find(t, r, "/g.hash(/k,100)"); c.Missing != 0.8 {
		t.Errorf("/g.hash(/k,100): missing %v, want 0.8 (synthkey hashes no null)", c.Missing)
	}
}

// TestNullHierarchicalLevel: a hierarchical key's null level is a value
// (rendered null), its missing level the Undefined component ({}): two
// logical partitions, as Cosmos DB keys them.
func TestNullHierarchicalLevel(t *testing.T) {
	var b bytes.Buffer
	for tn := range 100 {
		for u := range 7 {
			fmt.Fprintf(&b, `{"id":"u%d-%d","tenantId":"t%d","userId":"u%d-%d"}`+"\n", tn, u, tn, tn, u)
		}
		for d := range 3 {
			fmt.Fprintf(&b, `{"id":"n%d-%d","tenantId":"t%d","userId":null}`+"\n", tn, d, tn)
		}
		for d := range 2 {
			fmt.Fprintf(&b, `{"id":"d%d-%d","tenantId":"t%d"}`+"\n", tn, d, tn)
		}
	}
	a := NewAnalyzer(ReadOptions{})
	if err := a.ReadLines(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	a.SetCurrentKey([]string{"/tenantId", "/userId"})
	r, err := a.Analyze(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, r, "[/tenantId, /userId]")
	if c.Distinct != 900 || c.Missing != 0 || c.LargestShare != 0.0025 || !strings.HasSuffix(c.LargestKey, ", null]") {
		t.Errorf("[/tenantId, /userId]: %d distinct, %v missing, largest %v (%s); want 900, 0, 0.0025 (a tenant's null partition)",
			c.Distinct, c.Missing, c.LargestShare, c.LargestKey)
	}

	// The keys and renderings themselves: items 7 (null) and 10 (missing)
	// of tenant t0.
	an := &analysis{a: a, n: a.Items(), nodes: a.nodes, canon: map[int32][]uint32{}, buckets: map[int32][]uint32{}}
	parts := []int32{a.node("/tenantId"), a.node("/userId")}
	key, render := an.keyFunc(spec{strategy: Hierarchical, parts: parts, hash: -1}, false)
	if got, want := render(key(7)), `["t0", null]`; got != want {
		t.Errorf("key of a null /userId = %s, want %s", got, want)
	}
	if got, want := render(key(10)), `["t0", {}]`; got != want {
		t.Errorf("key of a missing /userId = %s, want %s", got, want)
	}
	key, render = an.keyFunc(spec{strategy: Hierarchical, parts: parts[1:], hash: -1}, false)
	if key(7) == missingKey || render(key(7)) != "[null]" || key(10) != missingKey {
		t.Errorf("[/userId]: null item's key %x, missing item's %x; want [null], missing", key(7), key(10))
	}
	// A concatenation of the same paths has no key for either.
	key, _ = an.keyFunc(spec{strategy: Concat, parts: parts, hash: -1}, false)
	if key(7) != missingKey || key(10) != missingKey {
		t.Errorf("/tenantId-/userId of a null and a missing /userId: %x, %x; want both missing", key(7), key(10))
	}
}

// TestNullAtMoment: at one moment every value of a date path is the same,
// but null stays a value of its own, missing only in a synthetic key.
func TestNullAtMoment(t *testing.T) {
	a := NewAnalyzer(ReadOptions{})
	for _, it := range []string{`{"d":"2024-06-01"}`, `{"d":null}`, `{"x":1}`, `{"d":"2024-06-02"}`} {
		if err := a.Add([]byte(it)); err != nil {
			t.Fatal(err)
		}
	}
	id := a.node("/d")
	an := &analysis{a: a, n: a.Items(), nodes: a.nodes, timeID: -1, canon: map[int32][]uint32{},
		timeLike: map[int32]time.Duration{id: 24 * time.Hour}}
	for _, tt := range []struct {
		canonical bool
		want      []uint32
	}{
		{false, []uint32{momentValue, momentNull, 0, momentValue}},
		{true, []uint32{momentValue, 0, 0, momentValue}},
	} {
		col := an.column(id, tt.canonical, true)
		var got []uint32
		for i := range a.Items() {
			got = append(got, col(i))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("column(/d, canonical %v, moment) = %v, want %v", tt.canonical, got, tt.want)
		}
	}
}

// TestNullNotCounted: null is no part of a path's present, strings or
// numbers, nor of its distinct values, so a date path null in many items
// is still found as the time path.
func TestNullNotCounted(t *testing.T) {
	var b bytes.Buffer
	for i := range 500 {
		if i%5 < 2 {
			fmt.Fprintf(&b, `{"id":"%d","date":null,"n":null}`+"\n", i)
		} else {
			fmt.Fprintf(&b, `{"id":"%d","date":"2024-06-0%d","n":%d}`+"\n", i, 1+i%5, i%3)
		}
	}
	a := NewAnalyzer(ReadOptions{})
	if err := a.ReadLines(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/date", "/n"} {
		nd := a.nodes[a.node(p)]
		if nd.present != 300 || nd.strings+nd.numbers != 300 || nd.scalars() != 3 {
			t.Errorf("%s: present %d, strings %d, numbers %d, %d distinct; want 300, 300 of one kind, 3",
				p, nd.present, nd.strings, nd.numbers, nd.scalars())
		}
	}
	r, err := a.Analyze(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.TimePath != "/date" || r.Windows != 3 {
		t.Errorf("time path %q with %d windows, want /date with 3 (null is no time)", r.TimePath, r.Windows)
	}
}
