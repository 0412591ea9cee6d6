package catalog

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/partition"
)

// sharedMem is a shared backend of several nodes' catalogs, as etcd is in a
// cluster: one map, one cluster-wide lock, and every change passed to the
// other nodes' catalogs (Observe) before Apply returns, as a watch would
// have delivered it by the time the next writer holds the lock.
type sharedMem struct {
	*memBackend
	lock  sync.Mutex
	mu    sync.Mutex
	nodes []*Catalog
	locks int // how many times the lock was taken
}

// sharedNode is node i's view of a sharedMem.
type sharedNode struct {
	s    *sharedMem
	self int
}

func (n sharedNode) Get(key string) ([]byte, bool, error) { return n.s.memBackend.Get(key) }

func (n sharedNode) Load(ctx context.Context, prefix string, fn func(string, []byte) error) error {
	return n.s.memBackend.Load(ctx, prefix, fn)
}

func (n sharedNode) Lock(context.Context) (func(), error) {
	n.s.lock.Lock()
	n.s.mu.Lock()
	n.s.locks++
	n.s.mu.Unlock()
	return n.s.lock.Unlock, nil
}

// Sync returns at once: Apply passes every change on before it returns.
func (n sharedNode) Sync(context.Context) error { return nil }

// Current and Propagated: likewise.
func (n sharedNode) Current(context.Context) error           { return nil }
func (n sharedNode) Written() int64                          { return 0 }
func (n sharedNode) Propagated(context.Context, int64) error { return nil }

func (n sharedNode) Apply(set map[string][]byte, del []string) error {
	if err := n.s.memBackend.Apply(set, del); err != nil {
		return err
	}
	n.s.mu.Lock()
	nodes := slices.Clone(n.s.nodes)
	n.s.mu.Unlock()
	for i, c := range nodes {
		if i == n.self || c == nil {
			continue
		}
		for _, k := range del {
			if err := c.Observe(k, nil, true); err != nil {
				return err
			}
		}
		for _, k := range slices.Sorted(maps.Keys(set)) {
			if err := c.Observe(k, set[k], false); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestSharedCatalog: two nodes' catalogs on one shared backend. Each sees
// the other's databases, containers, splits, offers and deletions, and
// their writes are ordered by the shared lock: _rid blocks reserved from
// both at once never overlap.
func TestSharedCatalog(t *testing.T) {
	s := &sharedMem{memBackend: newMemBackend()}
	now := func() time.Time { return time.Unix(1700000000, 0) }
	var cats [2]*Catalog
	for i := range cats {
		c, err := Open(t.Context(), sharedNode{s, i}, now)
		if err != nil {
			t.Fatal(err)
		}
		cats[i] = c
		s.nodes = append(s.nodes, c)
	}
	a, b := cats[0], cats[1]
	if _, err := a.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	k, err := a.CreateContainer("db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400})
	if err != nil {
		t.Fatal(err)
	}
	kb, err := b.Container("db", "c")
	if err != nil {
		t.Fatalf("node b does not see the container node a created: %v", err)
	}
	if kb.RID != k.RID || kb.Internal != k.Internal || len(kb.Map().Ranges()) != 1 {
		t.Fatalf("node b sees %+v, want %+v", kb, k)
	}
	// A database node b creates takes the next sequence number, not one
	// node a used.
	d2, err := b.CreateDatabase("db2", Throughput{})
	if err != nil {
		t.Fatal(err)
	}
	if d1, _ := a.Database("db"); d1.RID == d2.RID {
		t.Fatalf("both databases got _rid %s", d2.RID)
	}

	// Reservations from both nodes at once are disjoint.
	type block struct{ first, limit uint64 }
	var (
		mu     sync.Mutex
		blocks []block
		wg     sync.WaitGroup
	)
	for _, c := range cats {
		for range 20 {
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

	// A split on b is a's map too; so is a throughput change.
	r := kb.Map().Ranges()[0]
	if _, err := b.SplitRange("db", "c", r.ID, partition.EPK{0x40}); err != nil {
		t.Fatal(err)
	}
	if ka, _ := a.Container("db", "c"); len(ka.Map().Ranges()) != 2 {
		t.Fatalf("node a sees %d ranges after node b's split, want 2", len(ka.Map().Ranges()))
	}
	if _, err := b.ReplaceOffer(k.OfferID, Throughput{Manual: 1000}, "", NoMigration); err != nil {
		t.Fatal(err)
	}
	if o, _ := a.Offer(k.OfferID); o.Manual != 1000 {
		t.Fatalf("node a sees offer %+v after node b's replace", o)
	}
	// A deletion on a is b's too.
	if _, err := a.DeleteDatabase("db", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Container("db", "c"); err == nil {
		t.Fatal("node b still has the container of the database node a deleted")
	}
	if _, err := b.Database("db"); err == nil {
		t.Fatal("node b still has the database node a deleted")
	}
	if s.locks < 40 {
		t.Fatalf("the shared lock was taken %d times for more than 40 writes", s.locks)
	}
}
