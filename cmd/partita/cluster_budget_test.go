package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestClusterSharedBudget: a budget of request units is kept by one node,
// however many nodes serve the requests drawing on it
// (docs/request-units.md, "In a cluster"). Clients read large items through
// all three nodes at session consistency, which each node serves from its
// own replica, for budgetWindow; the request units served in that time stay
// within the budget for it (plus its one-second bucket and what the
// reports' lag lets through), where three nodes metering alone served up
// to three budgets. Twice: one partition of a container with 400 RU/s of
// its own (its budget kept by its leader), and three containers sharing a
// 400 RU/s database (one budget of the database, drawn on by partitions of
// three keyspaces, whose leaders may be three nodes). A counted bound on
// what was served, not a speed: a slower machine only serves less.
func TestClusterSharedBudget(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	bin := build(t)
	nodes := newCluster(t, 3)
	startAll(t, bin, nodes, "--rate-limit", "on")
	ctx := t.Context()
	const rate = 400 // RU/s: one budget
	createContainer(t, nodes[0], rate)
	t.Run("container", func(t *testing.T) {
		budgetWindow(t, nodes, rate, "db", []string{"c"})
	})
	t.Run("priority", func(t *testing.T) {
		lowThroughFollower(t, bin, nodes)
	})

	c := client(t, nodes[0].endpoint, nodes[0].data)
	tp := azcosmos.NewManualThroughputProperties(rate)
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "sdb"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	db, _ := c.NewDatabase("sdb")
	colls := []string{"s0", "s1", "s2"}
	for _, id := range colls {
		if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: id,
			PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("database", func(t *testing.T) {
		budgetWindow(t, nodes, rate, "sdb", colls)
	})
}

// budgetWindow writes a 500 KB item to each of db's containers colls,
// then reads them through every node (two readers each, going round the
// containers) for a window, and checks that what was served stays within
// one budget of rate RU/s for it.
func budgetWindow(t *testing.T, nodes []*clusterNode, rate int, db string, colls []string) {
	ctx := t.Context()
	pk := azcosmos.NewPartitionKeyString("p")
	body := fmt.Appendf(nil, `{"id":"big","pk":"p","data":%q}`, strings.Repeat("b", 500_000))
	for _, coll := range colls {
		cc := nodes[0].container(t, db, coll)
		if err := retry(ctx, 60*time.Second, func(ctx context.Context) error {
			_, err := cc.UpsertItem(ctx, pk, body, nil)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	readers := make([][]*azcosmos.ContainerClient, len(nodes))
	for i, n := range nodes {
		for _, coll := range colls {
			c, err := sessionClient(t, n).NewContainer(db, coll)
			if err != nil {
				t.Fatal(err)
			}
			readers[i] = append(readers[i], c)
			// Every node has the item before the window starts.
			if err := retry(ctx, 30*time.Second, func(ctx context.Context) error {
				_, err := c.ReadItem(ctx, pk, "big", nil)
				return err
			}); err != nil {
				t.Fatalf("node %d, %s: %v", i+1, coll, err)
			}
		}
	}
	time.Sleep(2 * time.Second) // the buckets refill
	const window = 5 * time.Second
	var (
		mu     sync.Mutex
		served [3]float64
		reads  [3]int
	)
	start := time.Now()
	end := start.Add(window)
	wctx, cancel := context.WithTimeout(ctx, window+30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range nodes {
		for w := range 2 {
			wg.Go(func() {
				for k := w; time.Now().Before(end); k++ {
					resp, err := readers[i][k%len(colls)].ReadItem(wctx, pk, "big", nil)
					if err != nil {
						continue // a 429 past the SDK's retries, or the window's end
					}
					if time.Now().After(end) {
						return
					}
					mu.Lock()
					served[i] += float64(resp.RequestCharge)
					reads[i]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	total := served[0] + served[1] + served[2]
	// The budget for the window, the bucket's second, and as much again
	// for the reports' lag (each node's own bucket starts full, and a
	// node learns the budget is spent up to 100 ms late).
	limit := float64(rate) * (window.Seconds() + 1) * 1.6
	t.Logf("served %.0f RU in %v through the three nodes (%v reads: %.0f, %.0f, %.0f RU); the budget: %d RU/s, bound %.0f",
		total, window, reads, served[0], served[1], served[2], rate, limit)
	if total > limit {
		t.Errorf("the three nodes served %.0f RU of one budget in %v: over its %d RU/s (bound %.0f RU)", total, window, rate, limit)
	}
	for i, r := range reads {
		if r == 0 {
			t.Errorf("node %d served no read in %v", i+1, window)
		}
	}
}

// lowThroughFollower: a low-priority reader through a node that does not
// keep the budget is throttled first, as one through the keeper is, while
// two high-priority readers through the keeper spend the budget: it gets
// the smaller part. The keeper's answers to charge reports say how long
// its bucket stays below the low-priority reserve; without them the
// follower's own bucket, which only its own requests spend, let the Low
// reader take most of the budget (81% in a review's run).
func lowThroughFollower(t *testing.T, bin string, nodes []*clusterNode) {
	ctx := t.Context()
	lead := soleLeader(t, bin, nodes)
	var via *clusterNode
	for _, n := range nodes {
		if n != lead {
			via = n
		}
	}
	pk := azcosmos.NewPartitionKeyString("p")
	low, high := azcosmos.PriorityLevelLow, azcosmos.PriorityLevelHigh
	lowC, err := sessionClient(t, via).NewContainer("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	highC, err := sessionClient(t, lead).NewContainer("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the buckets refill
	const window = 5 * time.Second
	end := time.Now().Add(window)
	wctx, cancel := context.WithTimeout(ctx, window+30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var served [2]float64 // low, high
	var wg sync.WaitGroup
	reader := func(c *azcosmos.ContainerClient, level *azcosmos.PriorityLevel, i int) {
		for time.Now().Before(end) {
			resp, err := c.ReadItem(wctx, pk, "big", &azcosmos.ItemOptions{PriorityLevel: level})
			if err != nil || time.Now().After(end) {
				continue
			}
			mu.Lock()
			served[i] += float64(resp.RequestCharge)
			mu.Unlock()
		}
	}
	wg.Go(func() { reader(lowC, &low, 0) })
	wg.Go(func() { reader(highC, &high, 1) })
	wg.Go(func() { reader(highC, &high, 1) })
	wg.Wait()
	t.Logf("low priority through node %s served %.0f RU, high priority through the keeper %s %.0f RU, in %v", via.addr, served[0], lead.addr, served[1], window)
	if served[1] == 0 || served[0] >= served[1]/2 {
		t.Errorf("low priority through a follower served %.0f RU against high priority's %.0f RU through the keeper: not throttled first", served[0], served[1])
	}
}
