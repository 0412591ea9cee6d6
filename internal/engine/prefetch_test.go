package engine

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/partitadb/partita/internal/replica"
)

// batchHost is a replica.Host whose snapshots read like a keyspace held
// by another node (replica.BatchReader), counting point reads and batches.
type batchHost struct {
	*replica.Local
	gets, batches, batched atomic.Int64
}

func (h *batchHost) Replica(id uint64) (replica.Replica, error) {
	r, err := h.Local.Replica(id)
	if err != nil {
		return nil, err
	}
	return batchReplica{r, h}, nil
}

type batchReplica struct {
	replica.Replica
	h *batchHost
}

func (r batchReplica) Snapshot() (replica.Snapshot, error) {
	s, err := r.Replica.Snapshot()
	if err != nil {
		return nil, err
	}
	return &batchSnap{s, r.h}, nil
}

type batchSnap struct {
	replica.Snapshot
	h *batchHost
}

func (s *batchSnap) Get(key []byte) ([]byte, error) {
	s.h.gets.Add(1)
	return s.Snapshot.Get(key)
}

func (s *batchSnap) GetMany(keys [][]byte) ([][]byte, error) {
	s.h.batches.Add(1)
	s.h.batched.Add(int64(len(keys)))
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := s.Snapshot.Get(k)
		switch {
		case err == nil:
			out[i] = v
		case err != replica.ErrNotFound:
			return nil, err
		}
	}
	return out, nil
}

// TestPrefetchRemoteItems: a query reading keyspaces whose items cost a
// round trip each (another node's) fetches them in batches ahead of the
// merge (in creation order, and by an ORDER BY's index), and returns exactly, page for page, what the same query returns
// over local keyspaces (deleted items included, which a batch answers as
// absent).
func TestPrefetchRemoteItems(t *testing.T) {
	host := &batchHost{}
	remote := engineOnHost(t, func(l *replica.Local) replica.Host { host.Local = l; return host }, Throughput{Manual: 24000})
	local := engineOnHost(t, func(l *replica.Local) replica.Host { return l }, Throughput{Manual: 24000})
	ordered := 0 // entries read by the index's order (orderedStream)
	testHookOrderedEntry = func() { ordered++ }
	defer func() { testHookOrderedEntry = nil }()
	for _, e := range []*Engine{remote, local} {
		e.cfg.GatewayQueryFull = true
		queryFixture(t, e, 400)
	}
	for _, q := range []Query{
		{Text: "SELECT VALUE c.id FROM c"},
		{Text: "SELECT VALUE c.id FROM c WHERE c.n > 100", MaxItems: 37},
		{Text: "SELECT VALUE c.id FROM c WHERE c.n IN (3, 50, 51, 399)"},
		{Text: "SELECT c.id, c.n FROM c WHERE ARRAY_CONTAINS(c.tags, 't')", MaxItems: 100},
		// ORDER BY served from the index: its own merge (orderedStream).
		{Text: "SELECT VALUE c.id FROM c ORDER BY c.n DESC", MaxItems: 50},
		{Text: "SELECT VALUE c.id FROM c WHERE c.n < 200 ORDER BY c.id"},
		{Text: "SELECT c.id, c.n FROM c WHERE c.n >= 0 ORDER BY c.n DESC", MaxItems: 40},
	} {
		q.EnableCrossPartition = true
		host.gets.Store(0)
		host.batches.Store(0)
		host.batched.Store(0)
		got := queryAll(t, remote, Scope{}, q)
		want := queryAll(t, local, Scope{}, q)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: %d rows through batches, %d locally:\n%v\n%v", q.Text, len(got), len(want), got, want)
		}
		if len(want) > 0 && host.batches.Load() == 0 {
			t.Errorf("%q: no batch read", q.Text)
		}
		if host.gets.Load() != 0 {
			t.Errorf("%q: %d point reads, want every item read in a batch", q.Text, host.gets.Load())
		}
		t.Logf("%q: %d rows, %d batches of %d keys, %d point reads", q.Text, len(got), host.batches.Load(), host.batched.Load(), host.gets.Load())
	}
	if ordered == 0 {
		t.Error("no query read the index in order: orderedStream's batches untested")
	}
}
