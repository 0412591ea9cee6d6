package cluster

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/partitadb/partita/internal/catalog"
)

// currentNode opens node self's catalog among members with lease
// (openShared).
func currentNode(t *testing.T, e *Etcd, self uint64, members []uint64, lease time.Duration, observe func()) (*catalog.Catalog, *SharedCatalog) {
	t.Helper()
	return openShared(t, e, SharedConfig{TTL: 5, Self: self, Members: members, Lease: lease}, observe)
}

// reported returns the catalog revision member id reported it applied.
func reported(t *testing.T, e *Etcd, id uint64) int64 {
	t.Helper()
	resp, err := e.Client().Get(opCtx(t), seenPrefix(CatalogPrefix)+memberKey(id))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	v, _ := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	return v
}

// TestCatalogCurrent: the two rules of "Catalog changes every node has
// seen" (docs/cluster.md). A change is acknowledged (Propagated) only once
// every member reported it or a lease has passed since; and a member whose
// catalog is stuck behind it cannot confirm its copy current once that
// lease has passed (Current fails with catalog.ErrStale), so no write or
// Strong read runs on a copy that misses an acknowledged change. A third
// member that never runs (down) only delays acknowledgements to the lease.
func TestCatalogCurrent(t *testing.T) {
	const lease = 600 * time.Millisecond
	e := startSingle(t, t.TempDir())
	members := []uint64{1, 2}
	var stall atomic.Pointer[chan struct{}]
	open := make(chan struct{})
	close(open)
	stall.Store(&open) // not stalled
	a, sa := currentNode(t, e, 1, members, lease, nil)
	b, _ := currentNode(t, e, 2, members, lease, func() { <-*stall.Load() })

	// Both members up: a change is acknowledged when node b reports it,
	// and node b's catalog has it then.
	if _, err := a.CreateDatabase("db", catalog.Throughput{}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := a.CreateContainer("db", []byte(`{"id":"c`+strconv.Itoa(i)+`","partitionKey":{"paths":["/pk"]}}`), catalog.Throughput{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := a.Propagated(opCtx(t)); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) < lease {
			// Returned before the lease: node b must have it.
			if _, err := b.Container("db", "c"+strconv.Itoa(i)); err != nil {
				t.Fatalf("acknowledged after %v (under the lease) but node b's catalog lacks the container: %v", time.Since(start), err)
			}
		}
		if err := b.Current(opCtx(t)); err != nil {
			t.Fatalf("node b, up to date: %v", err)
		}
	}
	if got := reported(t, e, 2); got == 0 {
		t.Fatal("node b never reported its catalog's revision")
	}

	// Node b's catalog stalls (its watch cannot pass changes on). A change
	// through node a is acknowledged only after a lease, and node b then
	// cannot confirm its copy: Current fails rather than let a write or a
	// Strong read act on the deleted container.
	stalled := make(chan struct{})
	stall.Store(&stalled)
	unstall := sync.OnceFunc(func() { close(stalled) })
	t.Cleanup(unstall) // before the nodes close: a stalled watch would not end
	if _, err := a.DeleteContainer("db", "c0", ""); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := a.Propagated(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < lease {
		t.Fatalf("a change node b did not report was acknowledged after %v, within the lease (%v)", took, lease)
	}
	ctx, cancel := context.WithTimeout(t.Context(), lease)
	err := b.Current(ctx)
	cancel()
	if !errors.Is(err, catalog.ErrStale) {
		t.Fatalf("node b, stalled behind an acknowledged delete, Current: %v; want ErrStale", err)
	}
	unstall()
	if err := b.Current(opCtx(t)); err != nil {
		t.Fatalf("node b, no longer stalled: %v", err)
	}
	if _, err := b.Container("db", "c0"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("node b, current, still has the deleted container: %v", err)
	}

	// A member that never runs: node a's changes wait out the lease, and
	// are acknowledged.
	sa.members = []uint64{1, 2, 3}
	if _, err := a.DeleteContainer("db", "c1", ""); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := a.Propagated(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < lease {
		t.Fatalf("with member 3 down, a change was acknowledged after %v, within the lease (%v)", took, lease)
	}

	// Every catalog write notes its revision, which confirmations read.
	resp, err := e.Client().Get(opCtx(t), revisionKey(CatalogPrefix))
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("revision key: %v %v", resp, err)
	}
	last, err := e.Client().Get(opCtx(t), CatalogPrefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend), clientv3.WithLimit(1))
	if err != nil {
		t.Fatal(err)
	}
	if rk := resp.Kvs[0].ModRevision; rk < last.Kvs[0].ModRevision {
		t.Fatalf("revision key at %d, older than the catalog's last write (%d)", rk, last.Kvs[0].ModRevision)
	}
}
