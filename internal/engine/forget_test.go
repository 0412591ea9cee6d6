package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestForgetGone: what the engine keeps in memory of a container's
// partitions (charges and hot keys, size estimates, throughput buckets) and
// of the container (its lock) goes with the container; another's stays.
// Each deleted container's stayed for good before (a soak hunt: 20,000
// containers created and deleted, +90 MB of heap).
func TestForgetGone(t *testing.T) {
	e := testEngineWith(t, Config{RateLimit: true})
	ctx := context.Background()
	for _, id := range []string{"gone", "kept"} {
		if _, err := e.CreateContainer("db", fmt.Appendf(nil, `{"id":%q,"partitionKey":{"paths":["/pk"]}}`, id), Throughput{Manual: 12000}); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: id, Kind: Upsert, PK: pkN(i), Body: fmt.Appendf(nil, `{"id":"x","pk":"p%d"}`, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	gone, err := e.cat.Container("db", "gone")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := e.cat.Container("db", "kept")
	if err != nil {
		t.Fatal(err)
	}
	e.checkSplits(ctx) // size estimates of the ranges written
	of := func(keys []string, internal uint64) int {
		n := 0
		for _, k := range keys {
			if id, ok := rangeKeyContainer(k); ok && id == internal {
				n++
			}
		}
		return n
	}
	state := func(internal uint64) string {
		return fmt.Sprintf("hot %d, sizes %d, buckets %d, lock %v", of(e.hot.keys(), internal), of(e.sizes.keys(), internal),
			of(e.limit.Keys(), internal), slices.Contains(e.colls.ids(), internal))
	}
	want := fmt.Sprintf("hot %d, sizes %d, buckets %d, lock true", len(gone.Ranges), len(gone.Ranges), len(gone.Ranges))
	if got := state(gone.Internal); got != want {
		t.Fatalf("before the delete: %s, want %s", got, want)
	}
	if err := e.DeleteContainer("db", "gone", ""); err != nil {
		t.Fatal(err)
	}
	if got := state(gone.Internal); got != "hot 0, sizes 0, buckets 0, lock false" {
		t.Errorf("after the delete: %s, want nothing kept", got)
	}
	if got, want := state(kept.Internal), fmt.Sprintf("hot %d, sizes %d, buckets %d, lock true", len(kept.Ranges), len(kept.Ranges), len(kept.Ranges)); got != want {
		t.Errorf("the other container after the delete: %s, want %s", got, want)
	}
}

// TestForgetGoneSharedBudget: a shared database's budget goes with the
// database.
func TestForgetGoneSharedBudget(t *testing.T) {
	e := testEngineWith(t, Config{RateLimit: true})
	ctx := context.Background()
	if _, err := e.CreateDatabase("shared", Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("shared", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WriteItem(ctx, Write{DB: "shared", Container: "c", Kind: Upsert, PK: pkN(1), Body: []byte(`{"id":"x","pk":"p1"}`)}); err != nil {
		t.Fatal(err)
	}
	shared := func() int {
		n := 0
		for _, k := range e.limit.Keys() {
			if _, _, ok := parseSharedBudgetKey(k); ok {
				n++
			}
		}
		return n
	}
	if shared() == 0 {
		t.Fatal("no shared budget bucket after a write to a shared database's container")
	}
	if err := e.DeleteDatabase("shared", ""); err != nil {
		t.Fatal(err)
	}
	if n := shared(); n != 0 {
		t.Errorf("%d shared budget buckets kept after the database was deleted", n)
	}
}
