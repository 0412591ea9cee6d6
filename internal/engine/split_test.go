package engine

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/store"
)

// splitEngine is an engine on a fresh store, configured by cfg with clock
// now (nil: time.Now), holding an empty 400 RU/s container db/k.
func splitEngine(t *testing.T, cfg Config, now func() time.Time) *Engine {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e, err := openOn(t, t.Context(), st, cfg, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	return e
}

// loadEngine is a 400 RU/s, one-partition container with rate limiting and
// load splits on, holding 2 items in each of 12 logical partitions.
func loadEngine(t *testing.T) *Engine {
	t.Helper()
	e := splitEngine(t, Config{RateLimit: true, LoadSplits: true}, nil)
	return e
}

// hammerKeys writes to the given keys until the partitions they live in
// have throttled, and returns.
func hammerKeys(t *testing.T, e *Engine, keys []int) {
	t.Helper()
	throttled := 0
	for i := 0; throttled < 5 && i < 100000; i++ {
		k := keys[i%len(keys)]
		_, err := e.WriteItem(context.Background(), Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(k),
			Body: fmt.Appendf(nil, `{"id":"x%d","pk":"p%d"}`, i%2, k)})
		if code(err) == 429 {
			throttled++
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadSplits: a partition throttled for three checks in a row over
// many keys splits in two; one whose load is one key isolates that key in a
// partition of its own.
func TestLoadSplits(t *testing.T) {
	t.Run("spread", func(t *testing.T) {
		e := loadEngine(t)
		all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
		for range 2 {
			hammerKeys(t, e, all)
			e.checkSplits(t.Context())
		}
		if n := e.mustContainer(t).Map().Len(); n != 1 {
			t.Fatalf("split after 2 throttled checks: %d ranges", n)
		}
		hammerKeys(t, e, all)
		e.checkSplits(t.Context())
		if n := e.mustContainer(t).Map().Len(); n != 2 {
			t.Errorf("after 3 throttled checks: %d ranges, want 2", n)
		}
	})
	t.Run("isolate", func(t *testing.T) {
		e := loadEngine(t)
		hammerKeys(t, e, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) // every key has items
		for range 12 {
			hammerKeys(t, e, []int{5})
			e.checkSplits(t.Context())
		}
		c := e.mustContainer(t)
		loc, err := locate(c, pkN(5), "")
		if err != nil {
			t.Fatal(err)
		}
		rs, err := e.rangeStorage(t.Context(), c, loc.rng)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs.epks) != 1 || !bytes.Equal(rs.epks[0], loc.epk) {
			t.Errorf("hot key p5 shares range %s with %d logical partitions, want it alone (%d ranges)", loc.rng.ID, len(rs.epks), c.Map().Len())
		}
	})
}

func (e *Engine) mustContainer(t *testing.T) *catalog.Container {
	t.Helper()
	c, err := e.container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSplitCheckScansNearLimit: the split check scans a range's
// statistics (linear in its logical partitions) when it knows nothing of
// the range, and then only once writes have brought the range's estimated
// size past the limit, where it splits it; not on every check.
func TestSplitCheckScansNearLimit(t *testing.T) {
	e := splitEngine(t, Config{PartitionMaxBytes: 40_000}, nil)
	scans := 0
	testHookRangeScan = func(string) { scans++ }
	t.Cleanup(func() { testHookRangeScan = nil })
	pad := bytes.Repeat([]byte("x"), 400)
	write := func(i int) {
		t.Helper()
		if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(i),
			Body: fmt.Appendf(nil, `{"id":"i%d","pk":"p%d","pad":"%s"}`, i, i, pad)}); err != nil {
			t.Fatal(err)
		}
	}
	// Under 700 bytes an item: 20 checks of 2 items each stay under
	// 40,000 bytes; the check scans once, to learn the range's size.
	for i := range 40 {
		write(i)
		if i%2 == 1 {
			e.checkSplits(t.Context())
		}
	}
	if scans != 1 {
		t.Fatalf("the split check scanned %d times for 20 checks of a range under its limit, want 1", scans)
	}
	if n := e.mustContainer(t).Map().Len(); n != 1 {
		t.Fatalf("%d ranges under the limit, want 1", n)
	}
	// Past the limit, the estimate makes it scan, and it splits.
	for i := 40; i < 80; i++ {
		write(i)
	}
	e.checkSplits(t.Context())
	if scans != 2 {
		t.Fatalf("the split check scanned %d times in all, want 2 (the first, then the one past the limit)", scans)
	}
	if n := e.mustContainer(t).Map().Len(); n != 2 {
		t.Fatalf("%d ranges past the limit, want 2", n)
	}
}

// TestSplitCheckRescanPacedByCost: a range under its limit is scanned
// again once its estimate is a minute old, or, when its last scan took
// long (many logical partitions), only after rescanCost times as long: at
// 10^7 logical partitions a scan every minute took a core from the requests.
func TestSplitCheckRescanPacedByCost(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	e := splitEngine(t, Config{PartitionMaxBytes: 1 << 30}, func() time.Time { return clock })
	scans, took := 0, time.Duration(0)
	testHookRangeScan = func(string) { scans++; clock = clock.Add(took) }
	t.Cleanup(func() { testHookRangeScan = nil })
	i := 0
	check := func(after time.Duration) {
		t.Helper()
		clock = clock.Add(after)
		i++
		if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(i),
			Body: fmt.Appendf(nil, `{"id":"i%d","pk":"p%d"}`, i, i)}); err != nil {
			t.Fatal(err)
		}
		e.checkSplits(t.Context())
	}
	check(0) // unknown: scanned; a quick scan
	check(59 * time.Second)
	if scans != 1 {
		t.Fatalf("%d scans within a minute of a quick one, want 1", scans)
	}
	took = 5 * time.Second
	check(2 * time.Second) // a minute old: scanned, taking 5 s
	if scans != 2 {
		t.Fatalf("%d scans once the estimate is a minute old, want 2", scans)
	}
	for range 4 {
		check(time.Minute)
	}
	if scans != 2 {
		t.Fatalf("%d scans within 4 minutes of a scan that took 5 s, want 2 (the next after %d × 5 s)", scans, rescanCost)
	}
	check(time.Minute + time.Second)
	if scans != 3 {
		t.Fatalf("%d scans %d × 5 s after a scan that took 5 s, want 3", scans, rescanCost)
	}
}

// TestStorageSplitBoundary: a split at a range's storage midpoint puts its
// boundary strictly between the two logical partitions on either side, at
// the shortest EPK that does. It was the upper one's own EPK, and
// @azure/cosmos computes the version-1 EPK of numbers such as 0 and 2
// without the final 00 byte of the service's encoding: a prefix of the
// true EPK, sorting before such a boundary, so the SDK placed the key in
// the lower child (a pk hashing hunt).
func TestStorageSplitBoundary(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	if _, err := e.CreateContainer("db", []byte(`{"id":"v1","partitionKey":{"paths":["/pk"],"version":1}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []float64{0, 2} {
		pk := document.PartitionKey{{Kind: document.Number, Number: n}}
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "v1", Kind: Create, PK: pk, Body: fmt.Appendf(nil, `{"id":"x","pk":%g}`, n)}); err != nil {
			t.Fatal(err)
		}
	}
	kids, err := e.SplitRange(ctx, "db", "v1", "0")
	if err != nil || len(kids) != 2 {
		t.Fatalf("split: %v, %d ranges", err, len(kids))
	}
	c, _ := e.cat.Container("db", "v1")
	for _, n := range []float64{0, 2} {
		epk, err := c.PK.Hash(document.PartitionKey{{Kind: document.Number, Number: n}})
		if err != nil {
			t.Fatal(err)
		}
		if epk[len(epk)-1] != 0 {
			t.Fatalf("the V1 EPK of %g is %s: the test needs one ending in 00", n, epk)
		}
		sdk := epk[:len(epk)-1] // as @azure/cosmos 4.9.3 computes it
		in, insdk := c.Map().Locate(epk), c.Map().Locate(sdk)
		if in.ID != insdk.ID {
			t.Errorf("key %g: its EPK %s is in range %s, the SDK's %s in range %s (boundary %s)", n, epk, in.ID, sdk, insdk.ID, kids[1].Min)
		}
	}
	for _, tc := range []struct{ lo, hi, want string }{
		{"05C1", "05C2", "05C2"},
		{"05", "05C1D5", "05C1"},
		{"05C1D5", "07", "07"},
		{"05C1D500", "05C1D50100", "05C1D501"},
	} {
		lo, _ := partition.ParseEPK(tc.lo)
		hi, _ := partition.ParseEPK(tc.hi)
		if got := separator(lo, hi); got.String() != tc.want {
			t.Errorf("separator(%s, %s) = %s, want %s", tc.lo, tc.hi, got, tc.want)
		}
	}
}
