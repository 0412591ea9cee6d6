package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
)

// Keyspaces (docs/storage-seams.md): every range's data lives in one
// keyspace of the replica host, which split siblings share.

// replicaOf returns the replica holding range r of container c, or 410/1002
// when c no longer has r.
func (e *Engine) replicaOf(c *catalog.Container, r partition.Range) (replica.Replica, error) {
	ks, ok := c.Keyspace(r.ID)
	if !ok {
		return nil, rangeGone(r.ID)
	}
	rep, err := e.host.Replica(ks)
	if err != nil {
		return nil, translate(err)
	}
	return rep, nil
}

// linearizableKey marks a read's context as asking for linearizable reads.
type linearizableKey struct{}

// Linearizable returns ctx marked so that the engine's reads under it are
// linearizable: each keyspace they read is synced with its group first
// (replica.Replica.Sync), so they see every write acknowledged before they
// began, on whichever node they run. Strong and bounded staleness reads
// ask for it; on one node it changes nothing.
func Linearizable(ctx context.Context) context.Context {
	return context.WithValue(ctx, linearizableKey{}, true)
}

func linearizable(ctx context.Context) bool {
	v, _ := ctx.Value(linearizableKey{}).(bool)
	return v
}

// readReplica returns keyspace ks's replica for a read under ctx, synced
// first when ctx asks for linearizable reads.
func (e *Engine) readReplica(ctx context.Context, ks uint64) (replica.Replica, error) {
	rep, err := e.host.Replica(ks)
	if err != nil {
		return nil, err
	}
	if linearizable(ctx) {
		if err := rep.Sync(ctx); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// readContainer resolves db/coll for a read under ctx and holds its mapping
// of ranges to keyspaces until release: a separation cannot collect data
// the read may still look for. The read's session (WithSession) must be
// reached in the keyspaces of the mapping held, else it fails with
// SessionBehind. A read addressed to a range (rangeID, "" for none) this
// node's catalog does not know, but a split since it last heard from the
// others may have made (unseenRange), first syncs the catalog: a node
// resumed after a split answered 410/1002 "gone" for the split's children
// until its catalog caught up (a cluster hunt).
func (e *Engine) readContainer(ctx context.Context, db, coll, rangeID string) (c *catalog.Container, release func(), err error) {
	c, err = e.owner(db, coll)
	if err != nil {
		return nil, nil, err
	}
	if rangeID != "" && e.cat.Shared() && unseenRange(c, rangeID) {
		sctx, cancel := context.WithTimeout(ctx, catalogSyncWait)
		err := e.cat.Sync(sctx)
		cancel()
		if err == nil {
			if c, err = e.owner(db, coll); err != nil {
				return nil, nil, err
			}
		}
	}
	release = e.maps.shared(c.Internal)
	if cur, err := e.cat.Container(db, coll); err == nil && cur.Internal == c.Internal {
		c = cur // the mapping as of now, held
	}
	if err := e.checkSession(ctx, c); err != nil {
		release()
		return nil, nil, err
	}
	return c, release, nil
}

// initKeyspaces marks the keyspaces of a new container as holding derived
// entries in the current format, so that ensureIndexes does not rebuild
// them at the next start.
func (e *Engine) initKeyspaces(c *catalog.Container) error {
	for _, ks := range c.Keyspaces() {
		if err := e.setFormat(ks); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) setFormat(ks uint64) error {
	rep, err := e.host.Replica(ks)
	if err != nil {
		return err
	}
	return e.markFormat(rep, formatString)
}

// markFormat writes v as keyspace rep's format record.
func (e *Engine) markFormat(rep replica.Replica, v string) error {
	b := rep.NewBatch(false)
	defer b.Close()
	b.Set(formatKey, []byte(v))
	return rep.Commit(b)
}

// dropData drops the keyspaces of a deleted container. A failure is only
// logged: the keyspaces are orphans then, dropped at the next start.
func (e *Engine) dropData(c *catalog.Container) {
	e.rids.forget(c.Internal)
	for _, ks := range append(c.Keyspaces(), c.Targets()...) {
		if err := e.host.Drop(ks); err != nil {
			e.log.Warn("drop the data of a deleted container", "container", c.Link(), "keyspace", ks, "err", err)
		}
	}
	e.forgetGone()
}

// referenced returns every keyspace some container's range maps to, is
// being moved to (catalog.Container.Targets), or left leftovers in that are
// not yet collected (RangeRecord.From).
func (e *Engine) referenced() map[uint64]*catalog.Container {
	out := map[uint64]*catalog.Container{}
	for _, d := range e.cat.Databases() {
		colls, _ := e.cat.Containers(d.ID)
		for _, c := range colls {
			for _, ks := range c.Keyspaces() {
				out[ks] = c
			}
			for _, r := range c.Ranges {
				for _, ks := range []uint64{r.Moving, r.From} {
					if ks != 0 {
						out[ks] = c
					}
				}
			}
		}
	}
	return out
}

// dropOrphans drops the keyspaces no container refers to: the data of
// containers deleted just before a crash.
func (e *Engine) dropOrphans(ctx context.Context) error {
	present, err := e.host.Keyspaces(ctx)
	if err != nil {
		return err
	}
	ref := e.referenced()
	for _, ks := range present {
		if ref[ks] != nil {
			continue
		}
		e.log.Warn("dropping the data of a deleted container", "keyspace", ks)
		if err := e.host.Drop(ks); err != nil {
			return err
		}
	}
	return nil
}

// ridAllocator hands out the _rid sequence numbers of new items, per
// container, from blocks the catalog reserves (catalog.ReserveRIDs).
type ridAllocator struct {
	cat *catalog.Catalog
	mu  sync.Mutex
	m   map[uint64]*ridBlock // by container internal id
}

type ridBlock struct{ next, limit uint64 }

// next returns a fresh _rid sequence number for an item of c.
func (a *ridAllocator) next(c *catalog.Container) (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.m[c.Internal]
	if b == nil || b.next >= b.limit {
		first, limit, err := a.cat.ReserveRIDs(c.DB, c.ID, c.Internal, 1)
		if err != nil {
			return 0, fmt.Errorf("reserve _rids: %w", err)
		}
		if a.m == nil {
			a.m = map[uint64]*ridBlock{}
		}
		b = &ridBlock{next: first, limit: limit}
		a.m[c.Internal] = b
	}
	n := b.next
	b.next++
	return n, nil
}

// prefetch reserves c's first block now if this node has none, so that
// the first create this node evaluates for c needs no catalog write. In a
// cluster that write is to etcd, and the node that takes over a dead
// leader's partitions would otherwise make it just when etcd may be
// electing a new leader of its own (the dead node's member often led it).
func (a *ridAllocator) prefetch(c *catalog.Container) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m[c.Internal] != nil {
		return nil
	}
	first, limit, err := a.cat.ReserveRIDs(c.DB, c.ID, c.Internal, 1)
	if err != nil {
		return fmt.Errorf("reserve _rids: %w", err)
	}
	if a.m == nil {
		a.m = map[uint64]*ridBlock{}
	}
	a.m[c.Internal] = &ridBlock{next: first, limit: limit}
	return nil
}

func (a *ridAllocator) forget(container uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, container)
}

// SessionToken is one entry of a session token: the LSN a session has seen
// in a partition key range.
type SessionToken struct {
	RangeID string
	LSN     uint64
}

// Advanced returns a channel closed the next time this node's replicas may
// have reached further positions (SessionAvailable may change its
// answer): an entry applied, a leadership changed, an LSN released. A keyspace only this node holds
// (replica.Local) is never behind, so for it the channel is nil, which
// never fires. It does not signal changes of the catalog (a range split
// after a token was issued): a waiter checks again now and then too.
func (e *Engine) Advanced() <-chan struct{} {
	if a, ok := e.host.(advancer); ok {
		return a.Advanced()
	}
	return nil
}

// advancer is a replica.Host that signals when its replicas advance
// (cluster.Keyspaces).
type advancer interface {
	Advanced() <-chan struct{}
}

// sessionFor returns the session token of a read of ranges rs of c: each
// range's keyspace's last LSN.
func (e *Engine) sessionFor(c *catalog.Container, rs []partition.Range) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		var lsn uint64
		if rep, err := e.replicaOf(c, r); err == nil {
			lsn = rep.LastLSN()
		}
		parts = append(parts, e.session(r.ID, lsn))
	}
	return strings.Join(parts, ",")
}

// ReadElsewhere reports whether a read of container db/coll in scope sc (a
// point read's partition key, a query's or feed's partition key or range)
// reads a single keyspace that this node holds no replica of, or one it
// cannot keep current (replica.Host.ReadsHere: its disk is full), and if so
// that keyspace and the node its voters last named leader (0: none known).
// The API forwards such a read whole to that node, where it costs one hop
// instead of a round trip for each of its reads (docs/cluster.md,
// "Placement on a subset"). Always false on a single node, and for a scope
// that spans keyspaces or does not resolve (the read itself then answers).
func (e *Engine) ReadElsewhere(db, coll string, sc Scope) (keyspace, leader uint64, ok bool) {
	c, err := e.container(db, coll)
	if err != nil {
		return 0, 0, false
	}
	sc.PK = scopeKey(c, sc.PK)
	r, err := resolveScope(c, sc)
	if err != nil || len(r.ranges) == 0 {
		return 0, 0, false
	}
	for i, rng := range r.ranges {
		ks, found := c.Keyspace(rng.ID)
		if !found || (i > 0 && ks != keyspace) {
			return 0, 0, false
		}
		keyspace = ks
	}
	if e.host.ReadsHere(keyspace) {
		return 0, 0, false
	}
	rep, err := e.host.Replica(keyspace)
	if err != nil {
		return 0, 0, false
	}
	_, leader, _ = NotLeader(rep.Lead())
	return keyspace, leader, true
}
