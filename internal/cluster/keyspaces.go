package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/replication"
)

// Keyspaces is a node's replica.Host in a cluster: every keyspace is a Raft
// group of the replication host whose voters are the cluster's members,
// its data in this node's store (through replica.Local). A keyspace's
// group is created on first use, with the same voters on every node
// (replication.Host.Create), so any node may create it: the engine asks
// for the keyspaces its catalog refers to, and for a group another node
// sends messages for.
type Keyspaces struct {
	host   *replication.Host
	local  *replica.Local
	voters []uint64
	wait   time.Duration

	mu   sync.Mutex
	reps map[uint64]*replication.Replica
}

var _ replica.Host = (*Keyspaces)(nil)

// NewKeyspaces returns the keyspaces of host, over local's store, with
// voters as every group's members; wait bounds how long a write or a
// linearizable read waits for its group.
func NewKeyspaces(host *replication.Host, local *replica.Local, voters []uint64, wait time.Duration) *Keyspaces {
	return &Keyspaces{host: host, local: local, voters: slices.Clone(voters), wait: wait, reps: map[uint64]*replication.Replica{}}
}

// Replica returns keyspace id's replica, creating this node's replica of
// its group if it has none.
func (k *Keyspaces) Replica(id uint64) (replica.Replica, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r, ok := k.reps[id]; ok {
		return r, nil
	}
	if err := k.host.Create(id, k.voters); err != nil {
		return nil, fmt.Errorf("cluster: keyspace %d: create its group: %w: %w", id, replica.ErrUnavailable, err)
	}
	l, err := k.local.Replica(id)
	if err != nil {
		return nil, err
	}
	r := replication.NewReplica(k.host, id, l, k.wait)
	k.reps[id] = r
	return r, nil
}

// Advanced returns a channel closed the next time a replica here applies,
// changes leadership or releases an LSN (replication.Host.Advanced).
func (k *Keyspaces) Advanced() <-chan struct{} { return k.host.Advanced() }

// Keyspaces lists the keyspaces this node holds a replica of.
func (k *Keyspaces) Keyspaces(ctx context.Context) ([]uint64, error) {
	return k.local.Keyspaces(ctx)
}

// Drop removes this node's replica of keyspace id: its group's state and
// its data. The engine drops a keyspace once the catalog no longer refers
// to it, on every node, so the group goes everywhere.
func (k *Keyspaces) Drop(id uint64) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.reps, id)
	if err := k.host.Remove(id); err != nil {
		return err
	}
	return k.local.Drop(id)
}

// Compact compacts this node's copy of keyspace id.
func (k *Keyspaces) Compact(ctx context.Context, id uint64) error {
	return k.local.Compact(ctx, id)
}

// PublishStable has every keyspace this node leads publish its stable
// mark to its followers when theirs lags (replication.Replica.PublishStable).
// It returns once ctx is done, without waiting for the marks proposed.
func (k *Keyspaces) PublishStable(ctx context.Context) {
	k.mu.Lock()
	reps := make([]*replication.Replica, 0, len(k.reps))
	for _, r := range k.reps {
		reps = append(reps, r)
	}
	k.mu.Unlock()
	for _, r := range reps {
		if ctx.Err() != nil {
			return
		}
		_ = r.PublishStable(ctx) // a lost leadership: the next leader publishes its own
	}
}

// Leader returns the node this node believes leads keyspace id's group
// (0: none known, or no replica here).
func (k *Keyspaces) Leader(id uint64) uint64 {
	l, err := k.host.Leader(id)
	if err != nil {
		return 0
	}
	return l.ID
}
