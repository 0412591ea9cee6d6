package replication

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
	"testing/cryptotest"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// TestDigest runs the simulator without faults until its replicas have
// applied the same log, and checks that their digests agree: the same
// applied index, key count and hash, which is the hash of what a snapshot
// of the group ships. Then one byte of one replica's keyspace changes: its
// digest differs (with the same applied index and key count), agrees
// again once the byte is restored, and a key added changes the count.
func TestDigest(t *testing.T) {
	const seed = 14
	cryptotest.SetGlobalRandom(t, seed) // Raft's election timeouts
	s, err := newSim(seed)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for step := range 600 {
		// Writes for 400 steps, then 200 to settle: every replica learns
		// the last commit index from the leader's heartbeats.
		if err := s.step(step < 400, false); err != nil {
			t.Fatal(err)
		}
	}
	if s.stats.writes == 0 {
		t.Fatal("the simulation applied no write")
	}
	ctx := t.Context()
	digests := func(g uint64) []Digest {
		t.Helper()
		var out []Digest
		for _, n := range s.nodes {
			d, err := n.h.Digest(ctx, g)
			if err != nil {
				t.Fatalf("node %d: Digest(%d): %v", n.id, g, err)
			}
			out = append(out, d)
		}
		return out
	}
	for g := uint64(1); g <= simGroups; g++ {
		ds := digests(g)
		for i, d := range ds {
			if d != ds[0] {
				t.Errorf("group %d: node %d's digest %+v, node 1's %+v", g, i+1, d, ds[0])
			}
		}
		if ds[0].Keys < 2 || ds[0].Applied == 0 {
			t.Errorf("group %d: digest %+v; want data keys and an applied index", g, ds[0])
		}
		pairs, err := snapshotPairs(s.nodes[0].h, g, 2)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(pairs); sum != ds[0].Sum {
			t.Errorf("group %d: digest %x, want the SHA-256 of the snapshot's pairs %x", g, ds[0].Sum, sum)
		}
	}

	// One byte of one item's value, changed behind Raft's back on node 2.
	n2 := s.nodes[1]
	var key, val []byte
	data := store.Span{Lower: append(replica.KeyspacePrefix(1), 0x01), Upper: keyspaceSpan(1).Upper} // past the replica's own 0x00 keys
	err = n2.st.Scan(ctx, data, nil, func(k, v []byte) bool {
		key, val = bytes.Clone(k), bytes.Clone(v)
		return false
	})
	if err != nil || key == nil {
		t.Fatalf("no item in group 1 on node 2: %v", err)
	}
	set := func(k, v []byte) {
		t.Helper()
		b := n2.st.NewBatch()
		b.Set(k, v)
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	changed := bytes.Clone(val)
	changed[len(changed)-1] ^= 1
	set(key, changed)
	ds := digests(1)
	if ds[1].Sum == ds[0].Sum {
		t.Error("a changed byte on node 2 left its digest equal to node 1's")
	}
	if ds[1].Applied != ds[0].Applied || ds[1].Keys != ds[0].Keys {
		t.Errorf("a changed byte: node 2 applied %d with %d keys, node 1 %d with %d; want the same", ds[1].Applied, ds[1].Keys, ds[0].Applied, ds[0].Keys)
	}
	set(key, val)
	if ds := digests(1); ds[1] != ds[0] {
		t.Errorf("the byte restored: node 2's digest %+v, node 1's %+v", ds[1], ds[0])
	}
	set(append(bytes.Clone(key), 'x'), val)
	if ds := digests(1); ds[1].Sum == ds[0].Sum || ds[1].Keys != ds[0].Keys+1 {
		t.Errorf("a key added on node 2: its digest %+v, node 1's %+v; want another sum and one more key", ds[1], ds[0])
	}

	if _, err := n2.h.Digest(ctx, 99); !errors.Is(err, ErrNoGroup) {
		t.Errorf("Digest of a group node 2 has no replica of: %v, want ErrNoGroup", err)
	}
	if err := n2.h.Remove(1); err != nil {
		t.Fatal(err)
	}
	if _, err := n2.h.Digest(ctx, 1); !errors.Is(err, ErrNoGroup) {
		t.Errorf("Digest of a removed group: %v, want ErrNoGroup", err)
	}
}
