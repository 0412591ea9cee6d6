package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/replica"
)

// Replicated mode (docs/cluster.md, "The engine in a cluster"). Every node
// runs an engine over the same shared catalog; each keyspace is a Raft
// group whose writes only its leader evaluates (replica.Replica.Lead). What
// a single node does inline on the keyspaces when the catalog changes —
// record a new keyspace's format, rebuild the index of a changed indexing
// policy, drop a deleted container's data — a replicated engine does in
// reconcile: on every node for what each node holds alone (its replicas,
// dropped when the catalog no longer refers to them), and on each
// keyspace's leader for what goes through the group.

// policyKey holds, in a replicated keyspace, the indexing policy its index
// entries were last rebuilt for (a rebuild after a policy change runs on
// each keyspace's leader, apart from the others).
var policyKey = []byte{kindMeta, 'p', 'o', 'l', 'i', 'c', 'y'}

// reconcileInterval is how often a replicated engine reconciles without
// being woken.
const reconcileInterval = time.Second

// Observe makes the engine follow a change another node made to the
// shared catalog (catalog.Catalog.Observe) and wakes the reconciliation.
func (e *Engine) Observe(key string, value []byte, deleted bool) error {
	if err := e.cat.Observe(key, value, deleted); err != nil {
		return err
	}
	// A partition key delete hides its items at once, on every node.
	rec, ok, err := catalog.ObservedPKDelete(key, value, deleted)
	switch {
	case err != nil:
		return err
	case ok && deleted:
		e.pkdel.update(rec.Internal, func(ds []*lpDelete) []*lpDelete {
			return slices.DeleteFunc(ds, func(o *lpDelete) bool { return o.rec.PK == rec.PK })
		})
	case ok:
		if c, err := e.cat.Container(rec.DB, rec.Container); err == nil && c.Internal == rec.Internal {
			d, err := lpDeleteOf(c, rec)
			if err != nil {
				return err
			}
			e.pkdel.add(d)
			e.pkdel.signal()
		}
	}
	e.Reconcile()
	return nil
}

// createWait bounds how long a container's creation waits, in a cluster,
// for its keyspaces' groups to elect leaders.
const createWait = 10 * time.Second

// awaitLeaders waits, at most createWait, until every keyspace of the new
// container c has a leader this node knows, and this node has applied the
// keyspace's format record, which the leader writes when it reconciles
// (reconcileKeyspace): an election takes one to two seconds after the
// groups are created, and a container should take writes once its
// creation has answered, as in Cosmos DB. (A write arriving before would
// wait for the election itself, up to the forwarding's bound.) Without
// the format record, the first items written made the leader rebuild
// their derived entries, under the container's exclusive lock, when it
// next reconciled (up to a second later), and a member stopped before
// then held items in a keyspace without one (partita check of node 1's
// directory after the Node tests' partition key delete, against a
// cluster). A cluster without a majority cannot elect: the container is
// created all the same, and its writes answer 503.
func (e *Engine) awaitLeaders(c *catalog.Container) {
	deadline := time.Now().Add(createWait)
	for _, ks := range c.Keyspaces() {
		woken := false
		for {
			if rep, err := e.host.Replica(ks); err == nil {
				err := rep.Lead()
				if nl, ok := errors.AsType[*replica.NotLeaderError](err); err == nil || ok && nl.Leader != 0 {
					if _, err := rep.Get(formatKey); err == nil {
						break
					}
					if err == nil && !woken { // this node leads it: reconcile now
						e.Reconcile()
						woken = true
					}
				}
			}
			if time.Now().After(deadline) {
				e.log.Warn("a new container's partitions have no leader yet, or it has not initialised them; their writes wait for one", "container", c.Link(), "keyspace", ks)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Reconcile asks for a reconciliation soon (it does not wait for it): the
// catalog changed, or another node sent messages for a keyspace this node
// has no replica of yet.
func (e *Engine) Reconcile() {
	select {
	case e.reconcileWake <- struct{}{}:
	default:
	}
}

// runReconcile reconciles whenever woken, and every reconcileInterval,
// until ctx ends.
func (e *Engine) runReconcile(ctx context.Context) {
	t := time.NewTicker(reconcileInterval)
	defer t.Stop()
	for {
		e.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.reconcileWake:
		}
	}
}

// reconcile brings this node's keyspaces in line with the catalog:
//   - every keyspace the catalog refers to has a replica here (its group
//     joins the others');
//   - a keyspace it no longer refers to (its container was deleted, here or
//     on another node) is dropped: keyspace ids are never reused, and this
//     node created its replica only while its catalog referred to it;
//   - on the keyspaces this node leads, a missing format record is written
//     (rebuilding the derived entries of items written before it), and the
//     index entries of a container whose indexing policy changed are
//     rebuilt for the new one;
//   - a container whose every keyspace has its index rebuilt is marked
//     indexed;
//   - every container has a block of _rids reserved on this node
//     (ridAllocator.prefetch).
func (e *Engine) reconcile(ctx context.Context) {
	ref := e.referenced()
	for ks := range ref {
		if _, err := e.host.Replica(ks); err != nil && !storeRefused(err) {
			e.log.Warn("create a keyspace's replica", "keyspace", ks, "err", err)
		}
	}
	present, err := e.host.Keyspaces(ctx)
	if err != nil {
		return
	}
	for _, ks := range present {
		if ref[ks] != nil {
			continue
		}
		if err := e.host.Drop(ks); err != nil {
			e.log.Warn("drop the replica of a deleted container's keyspace", "keyspace", ks, "err", err)
		} else {
			e.log.Info("dropped the replica of a deleted container's keyspace", "keyspace", ks)
		}
	}
	// Every container this node holds replicas of has a block of _rids
	// reserved here before this node may have to lead its partitions: by
	// the prefetcher, since a reservation is a catalog write that may wait
	// for etcd for seconds (a request taken by an etcd leader that was then
	// paused waits etcd's 7 s request timeout), and the keyspace work below
	// (the format records a container's creation waits for) must not wait
	// behind it.
	e.prefetchRIDs(ref)
	pending := map[uint64]*catalog.Container{} // containers whose index is not current, by internal id
	for ks, c := range ref {
		if ctx.Err() != nil {
			return
		}
		if slices.Contains(c.Targets(), ks) {
			continue // a separation fills it, with its format record (separate)
		}
		rep, err := e.host.Replica(ks)
		if err != nil || rep.Lead() != nil {
			if !c.IndexCurrent() {
				pending[c.Internal] = c
			}
			continue
		}
		if err := e.reconcileKeyspace(ctx, c, rep); err != nil && !storeRefused(err) && ctx.Err() == nil {
			e.log.Warn("reconcile a keyspace", "container", c.Link(), "keyspace", ks, "err", err)
		}
		if !c.IndexCurrent() {
			pending[c.Internal] = c
		}
	}
	for _, c := range pending {
		e.markIndexed(c)
	}
}

// prefetchRIDs hands the containers of ref to the prefetcher
// (runPrefetch), which reserves a block of _rids for each that has none on
// this node. It never waits: while the prefetcher is busy, the latest set
// replaces one not yet taken.
func (e *Engine) prefetchRIDs(ref map[uint64]*catalog.Container) {
	cs := make([]*catalog.Container, 0, len(ref))
	seen := map[uint64]bool{}
	for _, c := range ref {
		if !seen[c.Internal] {
			seen[c.Internal] = true
			cs = append(cs, c)
		}
	}
	for {
		select {
		case e.prefetches <- cs:
			return
		default:
		}
		select {
		case <-e.prefetches: // an older set, not taken yet: this one replaces it
		default:
		}
	}
}

// runPrefetch reserves _rid blocks for the containers prefetchRIDs hands
// it, until ctx ends.
func (e *Engine) runPrefetch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case cs := <-e.prefetches:
			for _, c := range cs {
				if ctx.Err() != nil {
					return
				}
				if err := e.rids.prefetch(c); err != nil && ctx.Err() == nil {
					e.log.Warn("reserve a block of _rids", "container", c.Link(), "err", err)
				}
			}
		}
	}
}

// reconcileKeyspace does a leader's part of reconcile on keyspace rep of
// container c.
func (e *Engine) reconcileKeyspace(ctx context.Context, c *catalog.Container, rep replica.Replica) error {
	v, err := rep.Get(formatKey)
	if err != nil && !errors.Is(err, replica.ErrNotFound) {
		return err
	}
	if err != nil || string(v) != formatString {
		defer e.colls.exclusive(c.Internal)()
		if err := rep.Lead(); err != nil {
			return err
		}
		e.log.Info("building a keyspace's derived entries", "container", c.Link(), "keyspace", rep.ID())
		if err := e.rebuildKeyspace(ctx, c, rep); err != nil {
			return err
		}
		return e.setPolicy(rep, c)
	}
	if c.IndexCurrent() {
		return nil
	}
	p, err := rep.Get(policyKey)
	if err == nil && string(p) == c.PolicyJSON() {
		return nil
	}
	defer e.colls.exclusive(c.Internal)()
	// Under the container's lock, no transaction writes entries of the old
	// policy any more; the catalog may have moved on meanwhile.
	cur, err := e.cat.Container(c.DB, c.ID)
	if err != nil || cur.Internal != c.Internal {
		return nil
	}
	if err := rep.Lead(); err != nil {
		return err
	}
	e.log.Info("rebuilding a keyspace's index for a new indexing policy", "container", c.Link(), "keyspace", rep.ID())
	if err := e.rebuild(ctx, rep, indexEntries(cur), indexSpans()...); err != nil {
		return err
	}
	return e.setPolicy(rep, cur)
}

// setPolicy records in keyspace rep that its index entries follow c's
// indexing policy.
func (e *Engine) setPolicy(rep replica.Replica, c *catalog.Container) error {
	b := rep.NewBatch(false)
	defer b.Close()
	b.Set(policyKey, []byte(c.PolicyJSON()))
	return rep.Commit(b)
}

// markIndexed marks c indexed once every keyspace of it records its
// current policy (as this node has applied them).
func (e *Engine) markIndexed(c *catalog.Container) {
	want := c.PolicyJSON()
	for _, ks := range c.Keyspaces() {
		rep, err := e.host.Replica(ks)
		if err != nil {
			return
		}
		if p, err := rep.Get(policyKey); err != nil || string(p) != want {
			return
		}
	}
	if err := e.cat.MarkIndexed(c.DB, c.ID, c.Internal, want); err != nil && !storeRefused(err) {
		e.log.Warn("mark a container indexed", "container", c.Link(), "err", err)
	}
}
