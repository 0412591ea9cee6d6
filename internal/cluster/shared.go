package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/partitadb/partita/internal/catalog"
)

// CatalogLockKey is the etcd prefix of the catalog's cluster-wide write
// lock (queueLock: a concurrency.Mutex's queue).
const CatalogLockKey = "/partita/locks/catalog"

// SharedCatalog makes etcd the catalog of several nodes (docs/cluster.md,
// "The catalog in a cluster"). It is a catalog.Shared:
//
//   - Lock takes the cluster-wide write lock (queueLock, keyed by this
//     node's session), then waits until this node has passed to its catalog
//     every change made before the lock was granted;
//   - Apply writes only under the lock, fenced by the lock's key (ErrFenced
//     once the session that holds it has expired);
//   - a watch on the catalog's prefix passes the other nodes' changes to
//     the catalog (Follow), in revision order, skipping this node's own
//     writes and anything older than them, which the catalog has already;
//     changes delivered while this node holds the lock (its writer holds
//     the catalog's mutex) are held and passed on when it releases it.
//
// Reads are the base backend's (linearizable).
type SharedCatalog struct {
	base     *Backend
	cli      *clientv3.Client
	ttl      int
	log      *slog.Logger
	self     uint64   // this node's id: the key it reports its applied revision under
	members  []uint64 // every member's id: Propagated waits for each
	lease    time.Duration
	epoch    time.Time     // the monotonic origin of current
	current  atomic.Int64  // the catalog is current until epoch + current (ns)
	kick     chan struct{} // the watch passed changes: report them (keep)
	confirms struct {
		sync.Mutex
		cur  *confirmCall // the confirmation under way, if any
		next *confirmCall // the one to start when cur ends, if callers wait for it
		// failed is the error of the last confirmation to end, nil when
		// it succeeded (Current answers at once while it stands).
		failed error
	}
	// lock lets one holder of the cluster-wide lock at a time on this node
	// (a semaphore of one, so that a request waiting for it gives up when
	// its context ends): while it is held, no key of this node's session in
	// queue is a lock in use by another request.
	lock  chan struct{}
	queue queueLock
	// sess is the node's session: its lease keeps its key in queue. A
	// session whose lease expired (the process paused, or etcd without a
	// quorum, longer than its TTL) is replaced by the next Lock
	// (renewLocked), under lock.
	sess atomic.Pointer[concurrency.Session]

	mu struct {
		sync.Mutex
		fenced  *Backend          // the fenced backend while the lock is held
		applied int64             // every change up to this revision is passed on
		watched int64             // the watch has delivered every change up to this revision
		held    []*clientv3.Event // changes delivered while this node held the lock
		wake    chan struct{}     // closed when applied advances
		written int64             // the revision of this node's last write
		own     map[string]int64  // catalog key → revision of this node's last write of it
		observe func(key string, value []byte, deleted bool) error
		queue   []*clientv3.Event // changes seen before Follow
		err     error             // the watch or the catalog failed: the node must restart
	}
	ctx  context.Context // ends with Close
	stop context.CancelFunc
	// writes ends with Stopping (or Close): the catalog writes in progress
	// end, and those that follow fail at once.
	writes    context.Context
	endWrites context.CancelFunc
	done      chan struct{}
	kept      chan struct{} // keep has returned (nil: not started)
}

var _ catalog.Shared = (*SharedCatalog)(nil)

// SharedConfig configures a SharedCatalog.
type SharedConfig struct {
	Backend BackendConfig
	// TTL is the seconds of the node's etcd session (default 10): the
	// node's lock, if it holds it, goes when the session does.
	TTL int
	// Log (nil: discard) hears of renewed sessions and of members that did
	// not report a change in time.
	Log *slog.Logger
	// Self is this node's id, under which it reports the catalog revision
	// it has applied; Members are every member's ids (Self among them),
	// whose reports Propagated waits for.
	Self    uint64
	Members []uint64
	// Lease is how long one confirmation keeps the catalog current
	// (default CatalogLease): docs/cluster.md, "Catalog changes every
	// node has seen".
	Lease time.Duration
}

// CatalogLease is how long a node's catalog, once confirmed current,
// serves writes and linearizable reads without being confirmed again.
const CatalogLease = 2 * time.Second

// NewSharedCatalog starts following the catalog in etcd through cli. Open
// the node's catalog on it, then call Follow. Close stops it.
func NewSharedCatalog(ctx context.Context, cli *clientv3.Client, cfg SharedConfig) (*SharedCatalog, error) {
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = 10
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = CatalogLease
	}
	base := NewBackend(cli, cfg.Backend)
	// The lease is granted under ctx (NewSession would grant it under the
	// client's own context, and wait as long as etcd has no quorum,
	// whatever --cluster-start-timeout says); the session keeps it alive
	// for as long as the client lives.
	lease, err := cli.Grant(ctx, int64(ttl))
	if err != nil {
		return nil, fmt.Errorf("cluster: catalog session: %w", err)
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithLease(lease.ID))
	if err != nil {
		return nil, fmt.Errorf("cluster: catalog session: %w", err)
	}
	s := &SharedCatalog{base: base, cli: cli, ttl: ttl, log: log, queue: queueLock{cli: cli, pfx: CatalogLockKey + "/"}, done: make(chan struct{}),
		self: cfg.Self, members: cfg.Members, lease: cfg.Lease, epoch: time.Now(), kick: make(chan struct{}, 1),
		lock: make(chan struct{}, 1)}
	s.sess.Store(sess)
	s.mu.own = map[string]int64{}
	// The watch starts after the revision now, before the catalog reads
	// anything, so no change falls between its reads and the watch.
	resp, err := cli.Get(ctx, base.prefix, clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly())
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("cluster: catalog revision: %w", err)
	}
	s.mu.applied, s.mu.watched = resp.Header.Revision, resp.Header.Revision
	wctx, stop := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	s.stop = stop
	s.ctx = wctx
	s.writes, s.endWrites = context.WithCancel(context.Background())
	wch := cli.Watch(wctx, base.prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithProgressNotify())
	go s.watch(wch)
	return s, nil
}

// rewatchDelay is how long watch waits before it watches again after the
// watch ended with an error.
const rewatchDelay = 200 * time.Millisecond

// watch passes the watch's events on until Close. A watch that etcd ends
// (it lost its leader for a while: the watch requires one) is started
// again from the first revision not yet passed on, so that a member that
// lived through a loss of quorum follows the catalog again once it is
// back; only a revision compacted away meanwhile, or a change the catalog
// cannot take, stops following for good (Err: the node must restart).
func (s *SharedCatalog) watch(wch clientv3.WatchChan) {
	defer close(s.done)
	for {
		fatal, err := s.follow(wch)
		switch {
		case s.ctx.Err() != nil:
			return // Close
		case fatal || errors.Is(err, rpctypes.ErrCompacted):
			s.fail(err)
			return
		}
		s.log.Warn("the catalog's watch ended; watching again", "err", err)
		t := time.NewTimer(rewatchDelay)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		s.mu.Lock()
		from := s.mu.applied + 1
		s.mu.held = nil // delivered again from from on
		s.mu.watched = s.mu.applied
		s.mu.Unlock()
		wch = s.cli.Watch(s.ctx, s.base.prefix, clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithProgressNotify())
	}
}

// follow passes wch's events on until it ends, and returns why; fatal when
// the catalog refused a change.
func (s *SharedCatalog) follow(wch clientv3.WatchChan) (fatal bool, err error) {
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return false, fmt.Errorf("cluster: catalog watch: %w", err)
		}
		s.mu.Lock()
		for _, ev := range resp.Events {
			if s.mu.fenced != nil {
				// This node holds the lock, and its writer the
				// catalog's mutex: observing here would deadlock. The
				// change is held until the lock is released (most
				// often this node's own, which its catalog has).
				s.mu.held = append(s.mu.held, ev)
				continue
			}
			if err := s.passLocked(ev); err != nil {
				s.mu.Unlock()
				return true, err
			}
		}
		// A response's header revision is etcd's current one, which a
		// watch catching up (events in batches) has not reached yet: the
		// last event's revision is what was delivered; a progress
		// notification, sent once the watch is caught up, vouches for its
		// header's.
		switch {
		case len(resp.Events) > 0:
			s.mu.watched = max(s.mu.watched, resp.Events[len(resp.Events)-1].Kv.ModRevision)
		case resp.IsProgressNotify():
			s.mu.watched = max(s.mu.watched, resp.Header.Revision)
		}
		s.advanceLocked()
		s.mu.Unlock()
		if len(resp.Events) > 0 {
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
	return false, errors.New("cluster: catalog watch ended")
}

// advanceLocked moves applied to what the watch delivered, short of the
// first change held, and wakes caughtUp.
func (s *SharedCatalog) advanceLocked() {
	to := s.mu.watched
	if len(s.mu.held) > 0 {
		to = s.mu.held[0].Kv.ModRevision - 1
	}
	if to <= s.mu.applied {
		return
	}
	s.mu.applied = to
	for k, rev := range s.mu.own {
		if rev <= s.mu.applied {
			delete(s.mu.own, k)
		}
	}
	if s.mu.wake != nil {
		close(s.mu.wake)
		s.mu.wake = nil
	}
}

// passHeldLocked passes the changes held while this node held the lock:
// its own are skipped (own), any other node's — one that took the lock
// after this node's session expired, or this node's own write whose
// outcome Apply could not learn — reach the catalog.
func (s *SharedCatalog) passHeldLocked() error {
	held := s.mu.held
	s.mu.held = nil
	for _, ev := range held {
		if err := s.passLocked(ev); err != nil {
			return err
		}
	}
	s.advanceLocked()
	return nil
}

// passLocked passes ev to the catalog, or queues it before Follow.
func (s *SharedCatalog) passLocked(ev *clientv3.Event) error {
	if s.mu.observe == nil {
		s.mu.queue = append(s.mu.queue, ev)
		return nil
	}
	key := string(ev.Kv.Key[len(s.base.prefix):])
	if s.mu.own[key] >= ev.Kv.ModRevision {
		return nil // this node wrote it, or later wrote over it
	}
	return s.mu.observe(key, ev.Kv.Value, ev.Type == clientv3.EventTypeDelete)
}

func (s *SharedCatalog) fail(err error) {
	s.mu.Lock()
	if s.mu.err == nil {
		s.mu.err = err
	}
	s.mu.Unlock()
}

// Follow passes the changes seen since NewSharedCatalog, and from then on
// every change another node makes, to observe (the node's
// catalog.Observe). The catalog must have been opened on s.
func (s *SharedCatalog) Follow(observe func(key string, value []byte, deleted bool) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.observe = observe
	queue := s.mu.queue
	s.mu.queue = nil
	for _, ev := range queue {
		if err := s.passLocked(ev); err != nil {
			s.mu.err = err
			return err
		}
	}
	if s.kept == nil {
		s.kept = make(chan struct{})
		go s.keep()
	}
	return nil
}

// Err reports why following failed, if it did: the node's catalog no
// longer follows etcd, and the node must restart.
func (s *SharedCatalog) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.err
}

// Get reads key (linearizable).
func (s *SharedCatalog) Get(key string) ([]byte, bool, error) { return s.base.Get(key) }

// Load reads the keys with prefix (linearizable, one revision).
func (s *SharedCatalog) Load(ctx context.Context, prefix string, fn func(key string, value []byte) error) error {
	return s.base.Load(ctx, prefix, fn)
}

// errStopping is the error of a catalog write in progress when the node
// began to stop (Stopping), or begun after.
var errStopping = fmt.Errorf("cluster: the node is stopping: %w", catalog.ErrUnavailable)

// Stopping ends this node's catalog writes in progress, and makes those
// that follow fail at once (catalog.ErrUnavailable): the node is stopping,
// and its background work (a split's or separation's step) must not wait
// out etcd — the last members of a stopping cluster have no quorum, and a
// write would wait for one until the shutdown gave up on it. An etcd
// transaction ended so may still have been applied, as after any timeout:
// the catalog's writers already take an unknown outcome (a step is done
// again, or settled, when the node is back). Reads go on.
func (s *SharedCatalog) Stopping() { s.endWrites() }

// errUnlocked is Apply's error outside Lock: a catalog bug.
var errUnlocked = errors.New("cluster: catalog write without the cluster-wide lock")

// Apply writes set and del atomically, fenced by the lock this node must
// hold: ErrFenced (nothing written) once its session has expired.
func (s *SharedCatalog) Apply(set map[string][]byte, del []string) error {
	s.mu.Lock()
	fb := s.mu.fenced
	s.mu.Unlock()
	if fb == nil {
		return errUnlocked
	}
	rev, err := fb.apply(s.writes, set, del)
	if err != nil && s.writes.Err() != nil {
		return errStopping
	}
	if err != nil || rev == 0 {
		return err
	}
	s.mu.Lock()
	for k := range set {
		s.mu.own[k] = rev
	}
	for _, k := range del {
		s.mu.own[k] = rev
	}
	s.mu.written = max(s.mu.written, rev)
	s.mu.Unlock()
	return nil
}

// Lock takes the cluster-wide write lock, and returns once every change
// made before it was granted has been passed to the catalog. When ctx ends
// first the error is catalog.ErrLockTimeout: another request holds the lock
// (on this node or another: one that died holding it frees it when its
// session expires, within the session's TTL), or etcd has no majority.
func (s *SharedCatalog) Lock(ctx context.Context) (_ func(), err error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	if s.writes.Err() != nil {
		return nil, errStopping
	}
	ctx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(s.writes, cancel)()
	defer cancel()
	defer func() {
		if err != nil && s.writes.Err() != nil {
			err = errStopping
		}
	}()
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("cluster: catalog lock: another request of this node holds it: %w: %w", catalog.ErrLockTimeout, ctx.Err())
	}
	// Lock is idempotent for the session (its key is the session's lease):
	// a retry keeps the key's place in the queue.
	var h held
	var queued struct {
		key string
		rev int64 // 0: the put's outcome is not known
	}
	err = retryEtcd(ctx, func() error {
		if err := s.renewLocked(ctx, false); err != nil {
			return err
		}
		take := func() (err error) {
			lease := s.sess.Load().Lease()
			queued.key, queued.rev = s.queue.key(lease), 0
			qctx, cancel := context.WithTimeout(context.Background(), s.base.timeout)
			stop := context.AfterFunc(s.writes, cancel)
			queued.rev, err = s.queue.enqueue(qctx, lease)
			expired := errors.Is(qctx.Err(), context.DeadlineExceeded)
			stop()
			cancel()
			if err != nil && expired && ctx.Err() == nil {
				// etcd did not answer within the attempt's bound: its
				// leader died with a node (a new one is elected within
				// seconds), so the attempt is etcd's timeout, retried
				// with the key's place kept. It was a 500 "internal
				// error" (a CI run: a container deleted through a
				// survivor while the killed node led etcd).
				return fmt.Errorf("%w: %w", rpctypes.ErrTimeout, err)
			}
			if err != nil {
				return err
			}
			h, err = s.queue.wait(ctx, lease, queued.rev)
			return err
		}
		err := take()
		if errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, errQueueKeyGone) {
			// Expired (before the session noticed, or the session found
			// out between renewLocked and the put): a new one, at once.
			if err := s.renewLocked(ctx, true); err != nil {
				return err
			}
			err = take()
		}
		return err
	})
	if err != nil {
		if queued.key != "" {
			s.dropQueued(queued.key, queued.rev)
		}
		<-s.lock
		return nil, lockErr(ctx, err)
	}
	release := func() {
		s.mu.Lock()
		s.mu.fenced = nil
		if err := s.passHeldLocked(); err != nil && s.mu.err == nil {
			s.mu.err = err
		}
		s.mu.Unlock()
		s.dropQueued(h.key, h.rev)
		<-s.lock
	}
	if err := s.caughtUp(ctx, h.granted); err != nil {
		release()
		if ctx.Err() != nil {
			return nil, lockErr(ctx, err)
		}
		return nil, err
	}
	s.mu.Lock()
	s.mu.fenced = s.base.Fenced(Fence{Key: h.key, Rev: h.rev})
	s.mu.Unlock()
	return release, nil
}

// dropQueued deletes this node's key in the lock's queue, of create
// revision rev, when a Lock failed or its holder released it. No request of
// this node holds the lock (the caller holds s.lock), so the key is never a
// lock in use. When the delete cannot be confirmed (etcd failing past the
// retries), or rev is 0 (a put whose outcome is unknown: only the node
// stopping, or etcd's timeout, cut it short; a delete sent now could land
// before it), the session is abandoned instead: its keep-alive ends, so
// etcd deletes its keys within its TTL, and the next Lock takes a new one
// (renewLocked). Kept alive, a key left behind held every other node's
// Lock until this node stopped (a review by attack: the release's delete
// was one attempt, and its comment said the session's expiry would end the
// key, which the keep-alive prevented).
func (s *SharedCatalog) dropQueued(key string, rev int64) {
	if rev != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), s.base.timeout)
		err := retryEtcd(ctx, func() error { return s.queue.drop(ctx, key, rev) })
		cancel()
		if err == nil {
			return
		}
		s.log.Warn("could not delete this node's key in the catalog lock's queue: abandoning its etcd session so that the key expires with it",
			"key", key, "err", err)
	}
	s.sess.Load().Orphan()
}

// lockErr is Lock's error for err: catalog.ErrLockTimeout when ctx ended
// first (the lock not had in time, for whatever reason etcd gave).
func lockErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, catalog.ErrUnavailable) {
		return fmt.Errorf("cluster: catalog lock: %w: %w", catalog.ErrLockTimeout, err)
	}
	return fmt.Errorf("cluster: catalog lock: %w", err)
}

// renewLocked replaces the node's session with a new one, on a new lease,
// when the session has ended (its lease expired: its keep-alive stopped)
// or expired is set (etcd answered that its lease is gone): otherwise the
// node could never take the catalog's lock again, and no split, container
// or database could be made through it until it restarted. The lock the
// old session held, if any, went with its lease; writes under it are
// fenced (ErrFenced). The caller holds s.lock.
func (s *SharedCatalog) renewLocked(ctx context.Context, expired bool) error {
	if !expired {
		select {
		case <-s.sess.Load().Done():
		default:
			return nil
		}
	}
	// The lease is granted under ctx; the session keeps it alive for as
	// long as the client lives (NewSession's own context would end with
	// this request).
	lease, err := s.cli.Grant(ctx, int64(s.ttl))
	if err != nil {
		return err
	}
	sess, err := concurrency.NewSession(s.cli, concurrency.WithLease(lease.ID))
	if err != nil {
		return err
	}
	old := s.sess.Swap(sess)
	old.Orphan()
	s.log.Warn("the catalog's etcd session had expired (this process paused, or etcd had no quorum, for longer than its TTL): took a new one",
		"ttl_seconds", s.ttl, "old_lease", fmt.Sprintf("%x", int64(old.Lease())), "new_lease", fmt.Sprintf("%x", int64(lease.ID)))
	return nil
}

// Sync returns once every change to the catalog made before the call has
// been passed to the catalog (a confirmation that began after the call).
func (s *SharedCatalog) Sync(ctx context.Context) error {
	return s.confirm(ctx, s.since())
}

// caughtUp waits until every change up to revision rev is passed on, asking
// etcd for a progress notification so that an idle watch reports it.
func (s *SharedCatalog) caughtUp(ctx context.Context, rev int64) error {
	for {
		s.mu.Lock()
		applied, err := s.mu.applied, s.mu.err
		if s.mu.wake == nil {
			s.mu.wake = make(chan struct{})
		}
		wake := s.mu.wake
		s.mu.Unlock()
		switch {
		case err != nil:
			return err
		case applied >= rev:
			return nil
		}
		if err := s.cli.RequestProgress(clientv3.WithRequireLeader(ctx)); err != nil {
			return fmt.Errorf("cluster: catalog watch progress: %w", err)
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cluster: catalog not caught up with revision %d: %w", rev, ctx.Err())
		case <-wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// revokeTimeout bounds Close's revocation of the session's lease.
const revokeTimeout = time.Second

// Close stops following and ends the session (releasing the lock if this
// node holds it). It waits at most revokeTimeout for the revocation: etcd
// revokes in milliseconds when it has a quorum and cannot without one (the
// last members of a cluster stopping), and an unrevoked lease expires by
// itself within its TTL anyway; concurrency.Session.Close would wait the
// whole TTL.
func (s *SharedCatalog) Close() error {
	s.endWrites()
	s.stop()
	<-s.done
	s.mu.Lock()
	kept := s.kept
	s.mu.Unlock()
	if kept != nil {
		<-kept
	}
	sess := s.sess.Load()
	sess.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), revokeTimeout)
	defer cancel()
	if _, err := s.cli.Revoke(ctx, sess.Lease()); err != nil {
		return fmt.Errorf("cluster: revoke the catalog session's lease: %w", err)
	}
	return nil
}
