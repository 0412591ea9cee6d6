package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/replication"
	"github.com/partitadb/partita/internal/store"
)

// Keyspaces is a node's replica.Host in a cluster: every keyspace is a Raft
// group of the replication host whose voters the placement names, its data
// in their stores (through replica.Local). On a voter, a keyspace's group
// is created on first use, with the same voters on every node
// (replication.Host.Create), so any voter may create it: the engine asks
// for the keyspaces its catalog refers to, and for a group another node
// sends messages for. On any other node the keyspace is a Remote, read
// from its voters.
type Keyspaces struct {
	host      *replication.Host
	local     *replica.Local
	self      uint64
	placement Placement
	wait      time.Duration
	net       *remoteNet

	mu      sync.Mutex
	reps    map[uint64]*replication.Replica
	remotes map[uint64]*Remote
}

var _ replica.Host = (*Keyspaces)(nil)

// NewKeyspaces returns the keyspaces of host (node self), over local's
// store, placed by placement; wait bounds how long a write or a
// linearizable read waits for its group; net reaches the other members
// for the keyspaces this node holds no replica of.
func NewKeyspaces(host *replication.Host, local *replica.Local, self uint64, placement Placement, wait time.Duration, net *remoteNet) *Keyspaces {
	return &Keyspaces{host: host, local: local, self: self, placement: placement, wait: wait, net: net,
		reps: map[uint64]*replication.Replica{}, remotes: map[uint64]*Remote{}}
}

// Replica returns keyspace id's replica: on one of its voters this node's
// (creating its replica of the group if it has none), elsewhere a Remote.
func (k *Keyspaces) Replica(id uint64) (replica.Replica, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r, ok := k.reps[id]; ok {
		return r, nil
	}
	voters := k.placement.Voters(id)
	if !slices.Contains(voters, k.self) {
		return k.remote(id, voters), nil
	}
	if err := k.host.Create(id, voters); err != nil {
		if _, full := errors.AsType[*store.DiskFullError](err); full {
			// No room to make its replica (a container created while this
			// node's disk is full): served as a keyspace this node holds no
			// replica of, its requests forwarded to the voters that do,
			// until there is room. Before, every request answered 503 —
			// "the store is recovering from a failed disk write" — and
			// logged an error (a bug hunt: 12,947 lines in 3 s).
			return k.remote(id, voters), nil
		}
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

// remote returns the Remote through which this node reaches keyspace id's
// voters. k.mu is held.
func (k *Keyspaces) remote(id uint64, voters []uint64) *Remote {
	r, ok := k.remotes[id]
	if !ok {
		r = &Remote{id: id, voters: voters, net: k.net}
		k.remotes[id] = r
	}
	return r
}

// held returns this node's replica of keyspace id if it has created one:
// a remote read must not create a group (a node creates its replica only
// while its catalog refers to the keyspace, which a reader's may have
// stopped doing).
func (k *Keyspaces) held(id uint64) (*replication.Replica, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r, ok := k.reps[id]
	return r, ok
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
	delete(k.remotes, id)
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

// Holds reports whether this node is one of keyspace id's voters
// (replica.Host.Holds).
func (k *Keyspaces) Holds(id uint64) bool { return k.placement.Holds(k.self, id) }

// ReadsHere reports whether this node is one of keyspace id's voters and
// its disk has room (replica.Host.ReadsHere): a node whose store refuses
// writes stalls behind the others as soon as they append, and its session
// reads waited 2 s for writes it could not apply, then answered 404/1002
// (a bug hunt of a member's full disk). Its reads go to the leader.
func (k *Keyspaces) ReadsHere(id uint64) bool { return k.Holds(id) && !k.host.Full() }

// Leader returns the node this node believes leads keyspace id's group
// (0: none known); for a keyspace this node holds no replica of, as its
// voters last named it.
func (k *Keyspaces) Leader(id uint64) uint64 {
	if !k.placement.Holds(k.self, id) {
		r, _ := k.Replica(id)
		return r.(*Remote).Leader()
	}
	l, err := k.host.Leader(id)
	if err != nil {
		return 0
	}
	return l.ID
}
