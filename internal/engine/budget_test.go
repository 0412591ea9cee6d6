package engine

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/store"
)

// TestSharedDatabaseBudgets, by budget on a frozen clock: the containers
// sharing a database's throughput draw on the database's budgets, as in
// Cosmos DB. One busy container of four in a 400 RU/s database is served
// the database's whole bucket (400 RU; it was a quarter, divided over the
// sharing containers' partitions), and then the others are refused too;
// a 26th sharing container is refused; raising the database to 30,000
// RU/s gives it three budgets of 10,000 RU/s (it split nothing and served
// one partition 30,000 RU/s), splitting every sharing container's
// partitions at their boundaries, and a container with throughput of its
// own is untouched by all of it; lowering it splits nothing and spreads
// the throughput over the three; containers left spanning a boundary (a
// changed --partition-max-ru here) are aligned by the split check.
func TestSharedDatabaseBudgets(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)} // frozen: budgets never refill
	e, err := openOn(t, t.Context(), st, Config{RateLimit: true}, clock.now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{
		"c0": `{"id":"c0","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`,
		"c1": `{"id":"c1","partitionKey":{"paths":["/pk"],"kind":"Hash"}}`, // hash V1
		"c2": `{"id":"c2","partitionKey":{"paths":["/a","/b"],"kind":"MultiHash","version":2}}`,
		"c3": `{"id":"c3","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`,
	}
	for _, id := range []string{"c0", "c1", "c2", "c3"} {
		if _, err := e.CreateContainer("db", []byte(defs[id]), Throughput{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"own","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	write := func(coll string, i int) (float64, error) {
		body := fmt.Appendf(nil, `{"id":"x%d","pk":"p1","a":"p1","b":"q"}`, i)
		pk := pkN(1)
		if coll == "c2" {
			pk = append(pkN(1), pk[0])
			pk[1].String = "q"
		}
		res, err := e.WriteItem(t.Context(), Write{DB: "db", Container: coll, Kind: Upsert, PK: pk, Body: body})
		return res.RU, err
	}
	served := 0.0
	var last float64
	for i := 0; ; i++ {
		ru, err := write("c0", i)
		if code(err) == http.StatusTooManyRequests {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		served, last = served+ru, ru
		if i > 10_000 {
			t.Fatal("never throttled")
		}
	}
	// Admitted while the bucket is not empty: at least the database's
	// 400 RU, less than one more write.
	if served < 400 || served >= 400+last {
		t.Errorf("one busy container of four was served %.2f RU of a 400 RU/s database's bucket, want [400, %.2f)", served, 400+last)
	}
	for _, coll := range []string{"c1", "c2", "c3"} {
		if _, err := write(coll, 0); code(err) != http.StatusTooManyRequests {
			t.Errorf("%s, sharing the spent budget: %v, want 429", coll, err)
		}
	}
	if _, err := write("own", 0); err != nil {
		t.Errorf("a container with throughput of its own: %v", err)
	}
	reps, err := e.Partitions(t.Context(), "db", "c0")
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].RUPerSecond != 400 || reps[0].SharedBudget != "1 of 1" || reps[0].Throttled != 1 {
		t.Errorf("c0's partitions report: %+v, want one at 400 RU/s, shared budget 1 of 1, 1 throttled", reps)
	}

	for i := 4; i < catalog.MaxSharingContainers; i++ {
		if _, err := e.CreateContainer("db", fmt.Appendf(nil, `{"id":"c%d","partitionKey":{"paths":["/pk"]}}`, i), Throughput{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.CreateContainer("db", []byte(`{"id":"c25","partitionKey":{"paths":["/pk"]}}`), Throughput{})
	if code(err) != http.StatusBadRequest {
		t.Errorf("a 26th sharing container: %v, want 400", err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"own2","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Errorf("a 26th container with throughput of its own: %v", err)
	}

	d, err := e.cat.Database("db")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReplaceOffer(d.OfferID, Throughput{Manual: 30_000}, "", catalog.NoMigration); err != nil {
		t.Fatal(err)
	}
	for _, coll := range []string{"c0", "c1", "c2", "c3", "c9"} {
		c, err := e.cat.Container("db", coll)
		if err != nil {
			t.Fatal(err)
		}
		bounds := partition.EvenBoundaries(c.PK, 3)
		for _, r := range c.Map().Ranges() {
			for _, b := range bounds {
				if r.Contains(b) && !bytes.Equal(r.Min, b) {
					t.Errorf("%s: range %s [%s, %s) spans the budget boundary %s", coll, r.ID, r.Min, r.Max, b)
				}
			}
		}
		reps, err := e.Partitions(t.Context(), "db", coll)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, p := range reps {
			if p.RUPerSecond != 10_000 {
				t.Errorf("%s: partition %s at %.0f RU/s, want 10,000", coll, p.ID, p.RUPerSecond)
			}
			seen[p.SharedBudget] = true
		}
		if len(reps) != 3 || !seen["1 of 3"] || !seen["2 of 3"] || !seen["3 of 3"] {
			t.Errorf("%s: partitions %+v, want three, one on each of the database's budgets", coll, reps)
		}
	}
	own, err := e.Partitions(t.Context(), "db", "own")
	if err != nil {
		t.Fatal(err)
	}
	if len(own) != 1 || own[0].RUPerSecond != 400 || own[0].SharedBudget != "" {
		t.Errorf("a container with its own 400 RU/s: %+v", own)
	}
	// Lowering spreads the throughput over the budgets (and partitions)
	// there are, as Cosmos DB does: nothing splits or merges.
	if _, err := e.ReplaceOffer(d.OfferID, Throughput{Manual: 15_000}, "", catalog.NoMigration); err != nil {
		t.Fatal(err)
	}
	for _, coll := range []string{"c0", "c1", "c2"} {
		reps, err := e.Partitions(t.Context(), "db", coll)
		if err != nil {
			t.Fatal(err)
		}
		if len(reps) != 3 || reps[0].RUPerSecond != 5_000 {
			t.Errorf("%s after lowering to 15,000 RU/s: %+v, want its three partitions at 5,000 RU/s", coll, reps)
		}
	}
	// Budget 1 is new (a full bucket of 10,000 RU) where budget 0 is the
	// one spent: c0's keys in slice 1 are served, those in slice 0 not.
	c0, err := e.cat.Container("db", "c0")
	if err != nil {
		t.Fatal(err)
	}
	for i, done := 0, map[int]bool{}; len(done) < 2; i++ {
		epk, err := c0.PK.Hash(pkN(i))
		if err != nil {
			t.Fatal(err)
		}
		s := c0.PK.Slice(3, epk)
		if s > 1 || done[s] {
			continue
		}
		done[s] = true
		_, err = e.WriteItem(t.Context(), Write{DB: "db", Container: "c0", Kind: Upsert, PK: pkN(i),
			Body: fmt.Appendf(nil, `{"id":"y","pk":"p%d"}`, i)})
		if s == 0 && code(err) != http.StatusTooManyRequests {
			t.Errorf("c0, key p%d of the spent budget 1 of 3: %v, want 429", i, err)
		}
		if s == 1 && err != nil {
			t.Errorf("c0, key p%d of the new budget 2 of 3: %v", i, err)
		}
	}

	// A restart with a smaller --partition-max-ru (or a data directory
	// from before the budgets, or a crash during a raise) leaves
	// containers spanning budget boundaries: the split check aligns them.
	e.cfg.PartitionMaxRU = 5_000 // 30,000 RU/s at its peak: six budgets
	e.checkAlignment(t.Context())
	for _, coll := range []string{"c0", "c1", "c2", "c9"} {
		c, err := e.cat.Container("db", coll)
		if err != nil {
			t.Fatal(err)
		}
		if m := e.misaligned(c); len(m) > 0 || c.Map().Len() != 6 {
			t.Errorf("%s after the split check: %d partitions, spanning %v; want six, one per budget", coll, c.Map().Len(), m)
		}
	}
}

// TestSharedBudgetKeys: a database budget's limiter key parses back, and
// no partition's own key (its container's internal id in hex) parses as
// one.
func TestSharedBudgetKeys(t *testing.T) {
	d := &catalog.Database{RID: "AbC+/d=="}
	rid, s, ok := parseSharedBudgetKey(sharedBudgetKey(d, 7))
	if !ok || rid != d.RID || s != 7 {
		t.Errorf("parse(sharedBudgetKey(%q, 7)) = %q, %d, %v", d.RID, rid, s, ok)
	}
	for _, k := range []string{"5d2a/0", "shared/x/r", "shared/-1/r", "shared/3"} {
		if _, _, ok := parseSharedBudgetKey(k); ok {
			t.Errorf("%q parsed as a shared budget's key", k)
		}
	}
}

// TestSharedContainerAfterLowering: a container created in a shared
// database lowered below its peak is laid out on the database's budgets
// (one partition per budget, no split history); it was laid out for the
// current throughput, then split to match (4 ranges with parents for 3
// budgets).
func TestSharedContainerAfterLowering(t *testing.T) {
	e := testEngine(t)
	if _, err := e.CreateDatabase("sdb", Throughput{Manual: 30_000}); err != nil {
		t.Fatal(err)
	}
	d, err := e.cat.Database("sdb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReplaceOffer(d.OfferID, Throughput{Manual: 20_000}, "", catalog.NoMigration); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("sdb", []byte(`{"id":"late","partitionKey":{"paths":["/pk"]}}`), Throughput{}); err != nil {
		t.Fatal(err)
	}
	c, err := e.cat.Container("sdb", "late")
	if err != nil {
		t.Fatal(err)
	}
	rs := c.Map().Ranges()
	if len(rs) != 3 || len(rs[0].Parents)+len(rs[1].Parents)+len(rs[2].Parents) != 0 {
		t.Errorf("a new container in a 20,000 RU/s database that peaked at 30,000: %+v, want 3 ranges without parents", rs)
	}
}

// TestThroughputSplitsFinished: a container whose own throughput needs
// more physical partitions than it has (its offer recorded, the splits
// not made: a crash between the two in ReplaceOffer) is split by the
// background check, once per shortfall; it stayed at 3 partitions for
// 500,000 RU/s for good (a crash hunt).
func TestThroughputSplitsFinished(t *testing.T) {
	e := testEngine(t)
	if _, err := e.CreateContainer("db", []byte(`{"id":"t","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	c, err := e.cat.Container("db", "t")
	if err != nil {
		t.Fatal(err)
	}
	// What ReplaceOffer writes before it splits.
	if _, err := e.cat.ReplaceOffer(c.OfferID, Throughput{Manual: 5 * e.cfg.PartitionMaxRU}, "", catalog.NoMigration); err != nil {
		t.Fatal(err)
	}
	if c, _ = e.cat.Container("db", "t"); c.Map().Len() != 1 {
		t.Fatalf("%d partitions before the check, want 1", c.Map().Len())
	}
	e.checkThroughput(t.Context(), map[uint64]int{})
	if c, _ = e.cat.Container("db", "t"); c.Map().Len() != 5 {
		t.Errorf("%d partitions after the check, want 5 (5 x PartitionMaxRU)", c.Map().Len())
	}
}

// TestRaiseRacesSplit: a throughput raise whose split finds its range
// already split by another caller (the background split check, another
// raise) goes on from the new ranges and succeeds. It answered 404, the
// range's, after the raise was saved (a throughput hunt: 4 raises of 4 to
// 1,000,000 RU/s on a server with --partition-max-ru 2000).
func TestRaiseRacesSplit(t *testing.T) {
	e := testEngine(t)
	c, err := e.cat.Container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	raced := 0
	testHookSplitUntil = func(c *catalog.Container, r partition.Range) {
		if raced >= 3 {
			return
		}
		raced++
		at, ok := partition.Midpoint(c.PK, r.Min, r.Max)
		if !ok {
			t.Errorf("range %s has no midpoint", r.ID)
			return
		}
		if err := e.splitRange(c, r, at); err != nil {
			t.Errorf("the racing split of %s: %v", r.ID, err)
		}
	}
	t.Cleanup(func() { testHookSplitUntil = nil })
	want := 8
	if _, err := e.ReplaceOffer(c.OfferID, Throughput{Manual: want * e.cfg.PartitionMaxRU}, "", catalog.NoMigration); err != nil {
		t.Fatalf("raise: %v", err)
	}
	if raced != 3 {
		t.Fatalf("%d racing splits, want 3", raced)
	}
	c, _ = e.cat.Container("db", "k")
	if n := len(c.Map().Ranges()); n < want {
		t.Errorf("%d ranges after the raise, want at least %d", n, want)
	}
}
