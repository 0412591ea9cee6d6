package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Backend persists the catalog's records: a map from string keys to byte
// values, read by key or by prefix and changed atomically. It uses Go's own
// types only, so the catalog depends on no storage package: the node's
// Pebble store implements it today (replica.Meta), a replicated store
// (etcd) will tomorrow.
type Backend interface {
	// Get returns key's value and whether it exists.
	Get(key string) ([]byte, bool, error)
	// Load calls fn with every key that has prefix and its value, in key
	// order, stopping at fn's first error, which it returns.
	Load(ctx context.Context, prefix string, fn func(key string, value []byte) error) error
	// Apply sets the keys of set and deletes the keys of del, atomically.
	Apply(set map[string][]byte, del []string) error
}

// changes collects one atomic change of the catalog's records.
type changes struct {
	set map[string][]byte
	del []string
}

func newChanges() *changes { return &changes{set: map[string][]byte{}} }

func (ch *changes) put(key string, v []byte) { ch.set[key] = v }

func (ch *changes) delete(key string) {
	delete(ch.set, key)
	ch.del = append(ch.del, key)
}

func (ch *changes) apply(b Backend) error {
	if err := b.Apply(ch.set, ch.del); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

// Shared is a Backend that the catalogs of other nodes write too (etcd, in
// a cluster: docs/cluster.md, "The catalog in a cluster"). The catalog
// takes its cluster-wide write lock around every write, and the owner of
// the backend passes it the records other nodes change (Catalog.Observe).
type Shared interface {
	Backend
	// Lock blocks until this node holds the catalog's cluster-wide write
	// lock and has passed to Observe every change made before the lock was
	// granted, and returns the lock's release. Apply is fenced by the lock:
	// it fails once the lock is lost.
	Lock(ctx context.Context) (unlock func(), err error)
	// Sync returns once this node has passed to Observe every change made
	// to the backend before the call.
	Sync(ctx context.Context) error
	// Current returns nil once this node's catalog is known to hold every
	// change acknowledged (Propagated) before the call; an error wrapping
	// ErrStale when that cannot be confirmed.
	Current(ctx context.Context) error
	// Written returns a mark of this node's writes so far, for Propagated.
	Written() int64
	// Propagated returns at once when this node wrote nothing since mark
	// (Written); otherwise once its last write is in every node's catalog,
	// or no node can act on a catalog that misses it any longer (Current
	// fails there until it has it). It fails only when ctx ends.
	Propagated(ctx context.Context, mark int64) error
}

// ErrUnavailable wraps a shared backend's error that means it cannot be
// read or written for now (in a cluster: etcd has no leader, or no
// majority): the request may be retried.
var ErrUnavailable = errors.New("catalog: the shared catalog is unavailable")

// ErrLockTimeout is ErrUnavailable when a write could not have the shared
// backend's lock within lockTimeout: nothing was written, and the request
// may be retried.
var ErrLockTimeout = fmt.Errorf("%w: its write lock was not granted in time", ErrUnavailable)

// lockTimeout bounds how long a write waits for a shared backend's lock:
// longer than a cluster node's etcd session lives unrenewed (10 s), so that
// a write behind a holder that died is granted the lock when the holder's
// session expires, rather than refused just before.
const lockTimeout = 15 * time.Second

// Sync returns once the catalog's memory holds every change other nodes
// made to a shared backend before the call; at once for a backend only this
// node writes. A node that misses a record it is asked for syncs before it
// answers that the record does not exist.
func (c *Catalog) Sync(ctx context.Context) error {
	if c.shared == nil {
		return nil
	}
	return c.shared.Sync(ctx)
}

// Current returns nil once this catalog holds every change acknowledged
// before the call (Propagated); at once for a backend only this node
// writes. Errors wrap ErrStale: it could not be confirmed (in a cluster:
// etcd did not answer in time). Writes and linearizable reads call it
// before they look anything up (docs/cluster.md, "Catalog changes every
// node has seen").
func (c *Catalog) Current(ctx context.Context) error {
	if c.shared == nil {
		return nil
	}
	return c.shared.Current(ctx)
}

// Mark returns a mark of this node's changes to the catalog so far, for
// Propagated (0 for a backend only this node writes).
func (c *Catalog) Mark() int64 {
	if c.shared == nil {
		return 0
	}
	return c.shared.Written()
}

// Propagated returns at once when this node changed nothing since mark
// (Mark), or for a backend only this node writes; otherwise once its last
// change to the catalog can be missed by no node's Current catalog. A
// client's change is acknowledged only then. It fails only when ctx ends.
func (c *Catalog) Propagated(ctx context.Context, mark int64) error {
	if c.shared == nil {
		return nil
	}
	return c.shared.Propagated(ctx, mark)
}

// Shared reports whether other nodes write the catalog's backend too.
func (c *Catalog) Shared() bool { return c.shared != nil }

// lockWrite takes the catalog's write locks, the cluster-wide one first
// (a shared backend), then the local mutex; the caller calls the release.
// Errors: the shared backend's, when its lock cannot be had in time.
func (c *Catalog) lockWrite() (func(), error) {
	if c.shared == nil {
		c.mu.Lock()
		return c.mu.Unlock, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	unlock, err := c.shared.Lock(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: the cluster-wide write lock: %w", err)
	}
	c.mu.Lock()
	return func() {
		c.mu.Unlock()
		unlock()
	}, nil
}
