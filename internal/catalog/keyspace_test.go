package catalog

import (
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/partitadb/partita/internal/partition"
)

// TestKeyspaces: every range of a new container gets a keyspace of its own,
// split children share their parent's, and the allocation survives a
// restart.
func TestKeyspaces(t *testing.T) {
	be := newMemBackend()
	c, _ := openCatalog(t, be)
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	k, err := c.CreateContainer("db", []byte(`{"id":"a","partitionKey":{"paths":["/p"],"kind":"Hash","version":2}}`), Throughput{Manual: 12000})
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Ranges) != 2 || k.Ranges[0].Keyspace == 0 || k.Ranges[0].Keyspace == k.Ranges[1].Keyspace {
		t.Fatalf("ranges %+v: want two with keyspaces of their own", k.Ranges)
	}
	r0 := k.Map().Ranges()[0]
	at := partition.EPK(append([]byte(nil), r0.Max...))
	at[0] /= 2
	s, err := c.SplitRange("db", "a", r0.ID, at)
	if err != nil {
		t.Fatal(err)
	}
	parentKS, _ := k.Keyspace(r0.ID)
	for _, r := range s.Map().Ranges()[:2] {
		if ks, _ := s.Keyspace(r.ID); ks != parentKS {
			t.Fatalf("child %s has keyspace %d, want its parent's %d", r.ID, ks, parentKS)
		}
	}
	if got := s.Keyspaces(); len(got) != 2 {
		t.Fatalf("Keyspaces() = %v, want 2", got)
	}
	c2, _ := openCatalog(t, be)
	b, err := c2.CreateContainer("db", []byte(`{"id":"b","partitionKey":{"paths":["/p"],"kind":"Hash","version":2}}`), Throughput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range k.Ranges {
		if b.Ranges[0].Keyspace == r.Keyspace {
			t.Fatalf("keyspace %d allocated twice across a restart", r.Keyspace)
		}
	}
	// Allocated: every id handed out, live or deleted, and a container's
	// internal id (a format 6 container's keyspace); nothing else.
	if _, err := c2.DeleteContainer("db", "a", ""); err != nil {
		t.Fatal(err)
	}
	for _, r := range append(k.Ranges, b.Ranges...) {
		if !c2.Allocated(r.Keyspace) {
			t.Errorf("keyspace %d not allocated", r.Keyspace)
		}
	}
	last := b.Ranges[len(b.Ranges)-1].Keyspace
	for _, ks := range []uint64{0, last + 1, k.Internal &^ maxKeyspace, (k.Internal &^ maxKeyspace) | 1<<31} {
		if c2.Allocated(ks) {
			t.Errorf("keyspace %d allocated", ks)
		}
	}
	if !c2.Allocated(k.Internal) || !c2.Allocated(b.Internal) {
		t.Errorf("internal ids %d, %d not allocated", k.Internal, b.Internal)
	}
}

// TestReserveRIDs: reservations are disjoint, increase, and survive a
// restart.
func TestReserveRIDs(t *testing.T) {
	be := newMemBackend()
	c, _ := openCatalog(t, be)
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	k, err := c.CreateContainer("db", []byte(`{"id":"a","partitionKey":{"paths":["/p"],"kind":"Hash","version":2}}`), Throughput{})
	if err != nil {
		t.Fatal(err)
	}
	f1, l1, err := c.ReserveRIDs("db", "a", k.Internal, 10)
	if err != nil || f1 < 1 || l1-f1 < 10 {
		t.Fatalf("first reservation [%d, %d), %v", f1, l1, err)
	}
	c2, _ := openCatalog(t, be)
	f2, l2, err := c2.ReserveRIDs("db", "a", k.Internal, 1)
	if err != nil || f2 < l1 || l2 <= f2 {
		t.Fatalf("after a restart: [%d, %d) overlaps [%d, %d), %v", f2, l2, f1, l1, err)
	}
	if _, _, err := c2.ReserveRIDs("db", "a", k.Internal+1, 1); err != ErrNotFound {
		t.Fatalf("reservation for another container of the same name: %v, want ErrNotFound", err)
	}
}

// TestLegacyUpgrade: a container record from before keyspaces gets the
// keyspace numbered by its internal id for every range, and _rids from the
// old node-wide reservation on; the change is persisted.
func TestLegacyUpgrade(t *testing.T) {
	be := newMemBackend()
	c, _ := openCatalog(t, be)
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	k, err := c.CreateContainer("db", []byte(`{"id":"a","partitionKey":{"paths":["/p"],"kind":"Hash","version":2}}`), Throughput{Manual: 12000})
	if err != nil {
		t.Fatal(err)
	}
	// Make the record look like format 6's: no keyspaces, no _rid limit.
	var rec map[string]any
	raw, _, _ := be.Get(collKey("db", "a"))
	_ = json.Unmarshal(raw, &rec)
	delete(rec, "ridLimit")
	for _, r := range rec["ranges"].([]any) {
		delete(r.(map[string]any), "keyspace")
	}
	raw, _ = json.Marshal(rec)
	_ = be.Apply(map[string][]byte{collKey("db", "a"): raw, keyLegacySeq: binary.BigEndian.AppendUint64(nil, 70000)}, nil)

	for range 2 {
		c, _ = openCatalog(t, be)
		got, err := c.Container("db", "a")
		if err != nil {
			t.Fatal(err)
		}
		if got.RIDLimit != 70000 {
			t.Fatalf("RIDLimit = %d, want 70000", got.RIDLimit)
		}
		for _, r := range got.Ranges {
			if r.Keyspace != k.Internal {
				t.Fatalf("range %s keyspace %d, want the internal id %d", r.ID, r.Keyspace, k.Internal)
			}
		}
	}
}

// TestMoveRecords: BeginMove allocates a keyspace and records it as the
// range's target (referenced by Targets, refusing splits and a second
// move) in one change that survives a restart; MoveRange needs that
// target; AbandonMove clears it; a failed change allocates no keyspace;
// the target is the next id its accept function takes.
func TestMoveRecords(t *testing.T) {
	be := newMemBackend()
	c, _ := openCatalog(t, be)
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	k, err := c.CreateContainer("db", []byte(`{"id":"a","partitionKey":{"paths":["/p"],"kind":"Hash","version":2}}`), Throughput{})
	if err != nil {
		t.Fatal(err)
	}
	r := k.Map().Ranges()[0]
	from, _ := k.Keyspace(r.ID)
	if _, _, err := c.BeginMove("db", "a", k.Internal, r.ID, from+1, nil); err == nil {
		t.Fatal("BeginMove from a keyspace the range does not live in: want an error")
	}
	m, to, err := c.BeginMove("db", "a", k.Internal, r.ID, from, nil)
	if err != nil {
		t.Fatal(err)
	}
	if to != from+1 {
		t.Fatalf("target keyspace %d, want %d (the refused move allocated none)", to, from+1)
	}
	if got := m.Targets(); len(got) != 1 || got[0] != to {
		t.Fatalf("Targets() = %v, want [%d]", got, to)
	}
	at := partition.EPK(append([]byte(nil), r.Max...))
	at[0] /= 2
	if _, err := c.SplitRange("db", "a", r.ID, at); err != ErrMoving {
		t.Fatalf("split of a moving range: %v, want ErrMoving", err)
	}
	if _, _, err := c.BeginMove("db", "a", k.Internal, r.ID, from, nil); err == nil {
		t.Fatal("a second move of a moving range: want an error")
	}
	if _, err := c.MoveRange("db", "a", k.Internal, r.ID, from, to+1, 0); err == nil {
		t.Fatal("MoveRange to another target: want an error")
	}
	c, _ = openCatalog(t, be) // a restart keeps the target
	m, _ = c.Container("db", "a")
	if rec, _ := m.Record(r.ID); rec.Moving != to {
		t.Fatalf("after a restart: moving to %d, want %d", rec.Moving, to)
	}
	if _, err := c.AbandonMove("db", "a", k.Internal, r.ID, to+1); err == nil {
		t.Fatal("AbandonMove of another target: want an error")
	}
	m, err = c.AbandonMove("db", "a", k.Internal, r.ID, to)
	if err != nil || len(m.Targets()) != 0 {
		t.Fatalf("AbandonMove: %v, targets %v", err, m.Targets())
	}
	// A cluster takes only keyspaces the separating node holds: here ids
	// congruent to from modulo four.
	_, to2, err := c.BeginMove("db", "a", k.Internal, r.ID, from, func(ks uint64) bool { return ks%4 == from%4 })
	if err != nil || to2 == to || to2%4 != from%4 || to2 <= to {
		t.Fatalf("BeginMove after an abandon, colocated: keyspace %d (the abandoned one %d, from %d), %v", to2, to, from, err)
	}
	m, err = c.MoveRange("db", "a", k.Internal, r.ID, from, to2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := m.Record(r.ID); rec.Keyspace != to2 || rec.From != from || rec.Moving != 0 {
		t.Fatalf("after MoveRange: %+v, want keyspace %d from %d", rec, to2, from)
	}
	if _, err := c.SplitRange("db", "a", r.ID, at); err != nil {
		t.Fatalf("split after the move: %v", err)
	}
}

// TestSplitAt: splitting at several points in one change (one pkranges
// version) gives the ranges,
// ids, lineage and keyspaces that splitting at each in turn gives; points
// on a boundary already are skipped; a moving range refuses it whole.
func TestSplitAt(t *testing.T) {
	def := []byte(`{"id":"a","partitionKey":{"paths":["/p"],"kind":"Hash","version":2}}`)
	d := partition.Definition{Paths: []string{"/p"}, Kind: partition.Hash, Version: 2}
	points := partition.EvenBoundaries(d, 12) // 11 points, in a container of 2 ranges (one is a boundary)
	points = append(points[6:], points[:6]...)

	seq, _ := openCatalog(t, newMemBackend())
	seq.CreateDatabase("db", Throughput{})
	k, err := seq.CreateContainer("db", def, Throughput{Manual: 12000})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range points {
		r := k.Map().Locate(p)
		if string(r.Min) == string(p) {
			continue
		}
		if k, err = seq.SplitRange("db", "a", r.ID, p); err != nil {
			t.Fatal(err)
		}
	}

	be := newMemBackend()
	one, _ := openCatalog(t, be)
	one.CreateDatabase("db", Throughput{})
	if _, err := one.CreateContainer("db", def, Throughput{Manual: 12000}); err != nil {
		t.Fatal(err)
	}
	got, n, err := one.SplitAt("db", "a", points)
	if err != nil || n != 10 {
		t.Fatalf("SplitAt: %d splits, %v; want 10", n, err)
	}
	a, _ := json.Marshal(k.Ranges)
	b, _ := json.Marshal(got.Ranges)
	if string(a) != string(b) || got.RangesVersion != 2 || k.NextRangeID != got.NextRangeID {
		t.Errorf("SplitAt gave ranges\n%s (version %d, next id %d); splitting in turn\n%s (version %d, next id %d)",
			b, got.RangesVersion, got.NextRangeID, a, k.RangesVersion, k.NextRangeID)
	}
	again, _ := openCatalog(t, be) // persisted
	if c, err := again.Container("db", "a"); err != nil || c.Map().Len() != 12 {
		t.Fatalf("after a restart: %v, %v; want 12 ranges", c, err)
	}
	if _, n, err := one.SplitAt("db", "a", points); err != nil || n != 0 {
		t.Errorf("SplitAt at boundaries only: %d splits, %v; want none", n, err)
	}
	r := got.Map().Ranges()[0]
	if _, _, err := one.BeginMove("db", "a", got.Internal, r.ID, got.Ranges[0].Keyspace, nil); err != nil {
		t.Fatal(err)
	}
	mid, _ := partition.Midpoint(d, r.Min, r.Max)
	if _, _, err := one.SplitAt("db", "a", []partition.EPK{mid}); err != ErrMoving {
		t.Errorf("SplitAt in a moving range: %v, want ErrMoving", err)
	}
}
