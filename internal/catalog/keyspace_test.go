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
