package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/partition"
)

// TestDecisionsRoundTrip: move decisions decode as encoded, a "moved" one
// with its cut, one written before decisions carried a cut with cut 0, and
// a malformed record is an error, not a panic.
func TestDecisionsRoundTrip(t *testing.T) {
	ds := []decision{
		{state: moveMoved, to: 7, min: partition.EPK{}, max: partition.EPK{0x3F, 0x01}, cut: 1 << 33},
		{state: moveAbandoned, to: 1 << 40, min: partition.EPK{0x3F, 0x01}, max: partition.EPK{0xFF}},
	}
	got, err := decodeDecisions(encodeDecisions(ds))
	if err != nil || len(got) != 2 {
		t.Fatalf("decode: %v, %+v", err, got)
	}
	for i := range ds {
		if got[i].state != ds[i].state || got[i].to != ds[i].to || string(got[i].min) != string(ds[i].min) || string(got[i].max) != string(ds[i].max) || got[i].cut != ds[i].cut {
			t.Fatalf("decision %d: %+v, want %+v", i, got[i], ds[i])
		}
	}
	// The record of an earlier release: 'm', target, bounds, no cut.
	old := []byte{'m', 0, 0, 0, 0, 0, 0, 0, 9, 1, 0x3F, 0}
	if od, err := decodeDecisions(old); err != nil || len(od) != 1 || od[0].state != moveMoved || od[0].to != 9 || od[0].cut != 0 || string(od[0].min) != "\x3f" || len(od[0].max) != 0 {
		t.Fatalf("an earlier release's record: %+v, %v", od, err)
	}
	enc := encodeDecisions(ds)
	for n := 1; n < len(enc); n++ {
		if _, err := decodeDecisions(enc[:n]); err == nil && n != len(encodeDecisions(ds[:1])) {
			t.Fatalf("a record cut at %d of %d bytes decoded", n, len(enc))
		}
	}
	if _, err := decodeDecisions([]byte{'x', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}); err == nil {
		t.Fatal("an unknown state decoded")
	}
}

// TestFence: in a replicated engine, once a keyspace records that a range
// moved out, transactions, point reads, queries and the change feed of
// that range through this node's (now stale) catalog fail with
// RangeMoved, having written nothing; the first decision for a target
// stands; an abandoned move fences nothing; a single node checks nothing.
func TestFence(t *testing.T) {
	ctx := context.Background()
	for _, replicated := range []bool{true, false} {
		e := testEngineWith(t, Config{Replicated: replicated})
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(1), Body: []byte(`{"id":"a","pk":"p1"}`)}); err != nil {
			t.Fatal(err)
		}
		c, _ := e.container("db", "k")
		loc, err := locate(c, pkN(1), "a")
		if err != nil {
			t.Fatal(err)
		}
		rep, err := e.replicaOf(c, loc.rng)
		if err != nil {
			t.Fatal(err)
		}
		// Another target's abandoned move fences nothing.
		if d, err := e.decideMove(rep, moveAbandoned, 100, loc.rng, 0); err != nil || d.state != moveAbandoned {
			t.Fatalf("decide abandoned: %c, %v", d.state, err)
		}
		if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "a"}, pkN(1), ""); err != nil {
			t.Fatalf("read after an abandoned move: %v", err)
		}
		if d, err := e.decideMove(rep, moveMoved, 99, loc.rng, 42); err != nil || d.state != moveMoved || d.cut != 42 {
			t.Fatalf("decide moved: %+v, %v", d, err)
		}
		if d, err := e.decideMove(rep, moveAbandoned, 99, loc.rng, 0); err != nil || d.state != moveMoved || d.cut != 42 {
			t.Fatalf("a second decision for the target: %+v, %v; want the first (moved, cut 42) to stand", d, err)
		}
		_, werr := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(1), Body: []byte(`{"id":"b","pk":"p1"}`)})
		_, rerr := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "a"}, pkN(1), "")
		_, qerr := e.QueryItems(ctx, "db", "k", Scope{}, Query{Text: "SELECT * FROM c", EnableCrossPartition: true, MaxItems: -1})
		_, ferr := e.ReadChanges(ctx, "db", "k", ChangeFeed{Scope: Scope{}, MaxItems: 10})
		for what, err := range map[string]error{"write": werr, "read": rerr, "query": qerr, "change feed": ferr} {
			if replicated && (!RangeMoved(err) || code(err) != 503) {
				t.Errorf("replicated: %s of a fenced range: %v; want RangeMoved (503)", what, err)
			}
			if !replicated && err != nil {
				t.Errorf("single node: %s: %v; want no check", what, err)
			}
		}
		if replicated {
			if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "b"}, pkN(1), ""); !RangeMoved(err) {
				t.Errorf("read of the refused write: %v", err)
			}
			// Nothing was written: the item is not in the keyspace.
			k2, _ := locate(c, pkN(1), "b")
			if _, err := rep.Get(k2.key); err == nil {
				t.Error("the refused write is in the keyspace")
			}
		}
		// The rest of the EPK space is not fenced.
		for _, r := range c.Map().Ranges() {
			if r.ID != loc.rng.ID {
				if err := e.checkFence(rep, 0, r.Min); err != nil {
					t.Errorf("EPK %s of range %s outside the fence: %v", r.Min, r.ID, err)
				}
			}
		}
	}
}

// TestSettleMove: a range found moving with no separation running here
// (its coordinator died or was deposed) is settled by the source's
// leader: abandoned when the source holds no decision for the target (and
// the abandonment recorded there first, so a late fence cannot follow),
// recorded in the catalog with the fence's cut when the source fenced it
// (it was recorded with none, so a lagging replica of the new keyspace
// served the range before it held the copy); on a single node it is
// abandoned.
func TestSettleMove(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		replicated bool
		fenced     bool
	}{{"single node", false, false}, {"replicated, no decision", true, false}, {"replicated, fenced", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := testEngineWith(t, Config{Replicated: tc.replicated})
			c, _ := e.container("db", "k")
			r := c.Map().Ranges()[0]
			from, _ := c.Keyspace(r.ID)
			_, to, err := e.cat.BeginMove("db", "k", c.Internal, r.ID, from, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !e.Moving(from) || !e.Moving(to) {
				t.Fatalf("Moving(%d), Moving(%d): want both", from, to)
			}
			src, _ := e.host.Replica(from)
			if tc.fenced {
				if _, err := e.decideMove(src, moveMoved, to, r, 77); err != nil {
					t.Fatal(err)
				}
			}
			e.checkSeparations(ctx)
			c, _ = e.container("db", "k")
			rec, _ := c.Record(r.ID)
			if rec.Moving != 0 || e.Moving(from) {
				t.Fatalf("after the check: %+v, still moving", rec)
			}
			if tc.fenced {
				if rec.Keyspace != to || rec.From != from || rec.Cut != 77 {
					t.Fatalf("fenced: %+v, want the move to %d recorded with the fence's cut 77", rec, to)
				}
				// The test decided the move without the separation
				// that fills the target (and writes its format
				// record); the next reconcile writes it.
				e.reconcile(ctx)
				return
			}
			if rec.Keyspace != from {
				t.Fatalf("abandoned: %+v, want keyspace %d", rec, from)
			}
			if tc.replicated {
				ds, _ := readDecisions(src)
				if len(ds) != 1 || ds[0].state != moveAbandoned || ds[0].to != to {
					t.Fatalf("source's decisions %+v, want the abandonment of %d", ds, to)
				}
				if d, _ := e.decideMove(src, moveMoved, to, r, 1); d.state != moveAbandoned {
					t.Fatalf("a fence after the abandonment: %c stands", d.state)
				}
			}
		})
	}
}

// TestSplitRangeWaitsForMove: an asked split of a range a separation is
// copying waits for the copy to end, as a split for throughput does, then
// splits (it answered 503 at once: a test splitting right after an
// earlier split met the separation that split started, under load).
func TestSplitRangeWaitsForMove(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	for i := range 20 {
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkOf(i), Body: fmt.Appendf(nil, `{"id":"x","pk":"p%d"}`, i)}); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := e.container("db", "k")
	r := c.Map().Ranges()[0]
	from, _ := c.Keyspace(r.ID)
	_, to, err := e.cat.BeginMove("db", "k", c.Internal, r.ID, from, nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		ranges []PKRange
		err    error
	}
	done := make(chan result, 1)
	go func() {
		rs, err := e.SplitRange(ctx, "db", "k", r.ID)
		done <- result{rs, err}
	}()
	select {
	case res := <-done:
		t.Fatalf("split of a moving range: %d ranges, %v; want it to wait for the move", len(res.ranges), res.err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := e.cat.AbandonMove("db", "k", c.Internal, r.ID, to); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || len(res.ranges) != c.Map().Len()+1 {
		t.Fatalf("split after the move ended: %d ranges, %v; want %d", len(res.ranges), res.err, c.Map().Len()+1)
	}
}
