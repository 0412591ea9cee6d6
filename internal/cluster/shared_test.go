package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/catalog"
)

// sharedNode opens one node's catalog on a SharedCatalog over e, logging
// to log (nil: discard), and makes it follow the others.
func sharedNode(t *testing.T, e *Etcd, log *slog.Logger) (*catalog.Catalog, *SharedCatalog) {
	t.Helper()
	return openShared(t, e, SharedConfig{TTL: 5, Log: log}, nil)
}

// openShared opens one node's catalog on a SharedCatalog over e with cfg
// and makes it follow the others; observe, if set, runs before each change
// the node observes (a hook to stall its catalog).
func openShared(t *testing.T, e *Etcd, cfg SharedConfig, observe func()) (*catalog.Catalog, *SharedCatalog) {
	t.Helper()
	s, err := NewSharedCatalog(t.Context(), e.Client(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := catalog.Open(t.Context(), s, func() time.Time { return time.Unix(1700000000, 0) })
	if err != nil {
		t.Fatal(err)
	}
	follow := c.Observe
	if observe != nil {
		follow = func(key string, value []byte, deleted bool) error {
			observe()
			return c.Observe(key, value, deleted)
		}
	}
	if err := s.Follow(follow); err != nil {
		t.Fatal(err)
	}
	return c, s
}

// eventually waits, at most 20 s, until ok holds.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSharedCatalogEtcd: two nodes' catalogs on one etcd. Each sees what
// the other creates, changes and deletes; their writes are ordered by the
// cluster-wide lock, so _rid blocks reserved from both at once never
// overlap; and a node whose session expired can write nothing.
func TestSharedCatalogEtcd(t *testing.T) {
	e := startSingle(t, t.TempDir())
	a, _ := sharedNode(t, e, nil)
	// A database created before b starts is in b's catalog when it opens.
	if _, err := a.CreateDatabase("db", catalog.Throughput{}); err != nil {
		t.Fatal(err)
	}
	var blog logBuffer
	b, sb := sharedNode(t, e, slog.New(slog.NewTextHandler(&blog, nil)))
	if _, err := b.Database("db"); err != nil {
		t.Fatalf("node b opened without node a's database: %v", err)
	}
	k, err := a.CreateContainer("db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), catalog.Throughput{Manual: 400})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "node b sees node a's container", func() bool {
		kb, err := b.Container("db", "c")
		return err == nil && kb.RID == k.RID
	})
	// After Sync, a change node a made before it is in node b's catalog at
	// once: no waiting.
	for i := range 20 {
		id := fmt.Sprintf("sync%d", i)
		if _, err := a.CreateDatabase(id, catalog.Throughput{}); err != nil {
			t.Fatal(err)
		}
		if err := b.Sync(opCtx(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Database(id); err != nil {
			t.Fatalf("node b, synced after node a created %s: %v", id, err)
		}
	}

	type block struct{ first, limit uint64 }
	var (
		mu     sync.Mutex
		blocks []block
		wg     sync.WaitGroup
	)
	for _, c := range []*catalog.Catalog{a, b} {
		for range 10 {
			wg.Go(func() {
				first, limit, err := c.ReserveRIDs("db", "c", k.Internal, 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				blocks = append(blocks, block{first, limit})
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	slices.SortFunc(blocks, func(x, y block) int { return int(x.first) - int(y.first) })
	for i := 1; i < len(blocks); i++ {
		if blocks[i].first < blocks[i-1].limit {
			t.Fatalf("reserved blocks overlap: %v and %v", blocks[i-1], blocks[i])
		}
	}
	if _, err := b.DeleteContainer("db", "c", ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node a sees node b's deletion", func() bool {
		_, err := a.Container("db", "c")
		return errors.Is(err, catalog.ErrNotFound)
	})

	// Node b's session ends (as when its lease expires): its lock is gone,
	// and a write it had under that lock is fenced off.
	unlock, err := sb.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.sess.Load().Close(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Apply(map[string][]byte{"cat/x": []byte("1")}, nil); !errors.Is(err, ErrFenced) {
		t.Fatalf("a write under an expired session's lock: %v, want ErrFenced", err)
	}
	unlock()
	if _, err := a.CreateDatabase("db2", catalog.Throughput{}); err != nil {
		t.Fatalf("node a after node b's session ended: %v", err)
	}
	// Node b writes again, on a new session (the kill loop's members
	// paused longer than the TTL could never write the catalog again).
	if _, err := b.CreateDatabase("db3", catalog.Throughput{}); err != nil {
		t.Fatalf("node b after its session ended: %v", err)
	}
	// Its lease revoked behind its session's back (expired before the
	// session noticed): etcd answers that the lease is gone, and b takes a
	// new one at once.
	if _, err := e.Client().Revoke(t.Context(), sb.sess.Load().Lease()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateDatabase("db4", catalog.Throughput{}); err != nil {
		t.Fatalf("node b after its lease was revoked: %v", err)
	}
	for _, id := range []string{"db3", "db4"} {
		eventually(t, "node a sees node b's "+id, func() bool {
			_, err := a.Database(id)
			return err == nil
		})
	}
	// Each new session was logged, naming the leases.
	if n := strings.Count(blog.String(), "etcd session had expired"); n != 2 {
		t.Errorf("node b logged %d renewed sessions, want 2:\n%s", n, blog.String())
	}
}

// logBuffer is a log's output, read while goroutines may write to it.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSharedCatalogCloseWithoutQuorum: a node whose etcd has lost its
// quorum (the last member of a cluster stopping) closes its shared catalog
// within about revokeTimeout, not the session's TTL (the Node tests'
// clusters took 10 s to stop).
func TestSharedCatalogCloseWithoutQuorum(t *testing.T) {
	ms := testMembers(t, 3)
	es := startMembers(t, ms, ms)
	s, err := NewSharedCatalog(t.Context(), es[0].Client(), SharedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es[1:] {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	err = s.Close()
	if d := time.Since(start); d > 3*revokeTimeout {
		t.Fatalf("Close took %v without a quorum; want about %v", d, revokeTimeout)
	}
	if err == nil {
		t.Fatal("Close without a quorum reported the lease revoked")
	}
}

// TestSharedCatalogStartBounded: following the catalog needs etcd's
// quorum, and NewSharedCatalog gives up when its context ends: its session's
// lease was granted under the client's own context, so a node whose etcd
// lost its quorum just after the member joined waited, silent, until it
// was stopped, whatever --cluster-start-timeout said.
func TestSharedCatalogStartBounded(t *testing.T) {
	cli := silentEtcd(t)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		s, err := NewSharedCatalog(ctx, cli, SharedConfig{})
		if err == nil {
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("NewSharedCatalog without an etcd that answers: no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("NewSharedCatalog still waiting 10 s after its context ended")
	}
}

// TestLockTimeout: a write that cannot have the catalog's lock in time —
// another node holds it, or another request of the same node — fails with
// catalog.ErrLockTimeout, a catalog.ErrUnavailable (503: nothing was
// written, retry), not the bare context error it was (a bug hunt: metadata
// writes behind a node killed holding the lock answered 500).
func TestLockTimeout(t *testing.T) {
	e := startSingle(t, t.TempDir())
	_, a := currentNode(t, e, 1, []uint64{1, 2}, time.Second, nil)
	_, b := currentNode(t, e, 2, []uint64{1, 2}, time.Second, nil)
	release, err := a.Lock(opCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    *SharedCatalog
	}{{"another node", b}, {"the same node", a}} {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		_, err := tc.s.Lock(ctx)
		cancel()
		if !errors.Is(err, catalog.ErrLockTimeout) || !errors.Is(err, catalog.ErrUnavailable) {
			t.Errorf("%s holding the lock: Lock = %v, want catalog.ErrLockTimeout", tc.name, err)
		}
	}
	release()
	release, err = b.Lock(opCtx(t))
	if err != nil {
		t.Fatalf("after the holder released it: %v", err)
	}
	release()
}

// TestLockCutShortLeavesNoKey: a Lock whose context ends at any point,
// even while its first request (a put into the lock's queue) is in flight,
// leaves no key of its session in the queue. One left behind, kept alive by
// the session, held every other node's Lock until that node stopped (a
// clean-clone CI run: TestStoppingEndsWrites waited out its 10 s for the
// lock behind a node told to stop just as it asked for it).
func TestLockCutShortLeavesNoKey(t *testing.T) {
	e := startSingle(t, t.TempDir())
	_, a := currentNode(t, e, 1, []uint64{1, 2}, time.Second, nil)
	_, b := currentNode(t, e, 2, []uint64{1, 2}, time.Second, nil)
	release, err := b.Lock(opCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	key := fmt.Sprintf("%s/%x", CatalogLockKey, a.sess.Load().Lease())
	// Deadlines from 0 to 4 ms in steps of 50 µs: some end before the put
	// is sent, some while it is in flight, some in the wait behind b.
	for i := range 80 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i)*50*time.Microsecond)
		_, err := a.Lock(ctx)
		cancel()
		if err == nil {
			t.Fatalf("deadline %d: Lock granted while b holds it", i)
		}
		resp, err := e.Client().Get(opCtx(t), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 0 {
			t.Fatalf("deadline %d: the cut-short Lock left its key %q in the queue", i, key)
		}
	}
}

// TestStoppingEndsWrites: once the node is stopping, a catalog write
// waiting on an etcd without a quorum, or for the lock, ends within a
// moment (catalog.ErrUnavailable), and later writes fail at once. Before
// Stopping, the last member of a stopping cluster had a split's catalog
// write wait out etcd's timeouts past the shutdown's bound, and exited 1
// (TestClusterKillLoop in a clean-clone CI run).
func TestStoppingEndsWrites(t *testing.T) {
	ms := testMembers(t, 3)
	es := startMembers(t, ms, ms)
	a, err := NewSharedCatalog(t.Context(), es[0].Client(), SharedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewSharedCatalog(t.Context(), es[1].Client(), SharedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// A Lock waiting behind another node's.
	releaseB, err := b.Lock(opCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err := a.Lock(ctx)
		ended <- err
	}()
	time.Sleep(200 * time.Millisecond)
	c, err := NewSharedCatalog(t.Context(), es[2].Client(), SharedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Stopping()
	if _, err := c.Lock(t.Context()); !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("Lock after Stopping = %v, want catalog.ErrUnavailable", err)
	}
	a.Stopping()
	select {
	case err := <-ended:
		if !errors.Is(err, catalog.ErrUnavailable) {
			t.Fatalf("a Lock waiting when the node stopped: %v, want catalog.ErrUnavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Lock waiting for another node's did not end when the node stopped")
	}
	releaseB()
	_ = b.Close()

	// An Apply waiting on an etcd without a quorum.
	d, err := NewSharedCatalog(t.Context(), es[0].Client(), SharedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	release, err := d.Lock(opCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, e := range es[1:] {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	applied := make(chan error, 1)
	go func() { applied <- d.Apply(map[string][]byte{"k": []byte("v")}, nil) }()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	d.Stopping()
	select {
	case err := <-applied:
		if !errors.Is(err, catalog.ErrUnavailable) {
			t.Fatalf("an Apply without a quorum when the node stopped: %v, want catalog.ErrUnavailable", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("the Apply ended %v after Stopping", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an Apply without a quorum did not end when the node stopped")
	}
}

// TestLockKeyOfUnknownFateExpires: a key in the lock's queue whose removal
// cannot be confirmed (a put of unknown outcome, or a delete that kept
// failing) is left to the session's lease, which stops being kept alive:
// the key goes within the TTL, and the node's next Lock takes a new
// session. Kept alive, such a key held every other node's Lock until the
// node stopped (a review by attack).
func TestLockKeyOfUnknownFateExpires(t *testing.T) {
	e := startSingle(t, t.TempDir())
	_, a := currentNode(t, e, 1, []uint64{1, 2}, time.Second, nil)
	_, b := currentNode(t, e, 2, []uint64{1, 2}, time.Second, nil)
	old := a.sess.Load()
	key := a.queue.key(old.Lease())
	// The put that a Lock cut short may have landed: as if it had.
	if _, err := a.queue.enqueue(opCtx(t), old.Lease()); err != nil {
		t.Fatal(err)
	}
	a.dropQueued(key, 0)
	select {
	case <-old.Done():
	default:
		t.Fatal("the session still kept alive after a key of unknown fate was left to it")
	}
	// b gets the lock once the lease has expired (TTL 5 s here).
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	release, err := b.Lock(ctx)
	if err != nil {
		t.Fatalf("another node's Lock behind the abandoned key: %v", err)
	}
	release()
	release, err = a.Lock(opCtx(t))
	if err != nil {
		t.Fatalf("the node's next Lock: %v", err)
	}
	release()
	if a.sess.Load() == old {
		t.Error("the next Lock kept the abandoned session")
	}
}
