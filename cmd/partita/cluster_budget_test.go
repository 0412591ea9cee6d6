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

// TestClusterSharedBudget: a physical partition's request-unit budget is
// its leader's, however many nodes serve its reads (docs/request-units.md,
// "In a cluster"). Clients read one large item through all three nodes at
// session consistency, which each node serves from its own replica, for
// budgetWindow; the request units served in that time stay within the
// partition's budget for it (plus its one-second bucket and what the
// reports' lag lets through), where three nodes metering alone served up
// to three budgets. A counted bound on what was served, not a speed: a
// slower machine only serves less.
func TestClusterSharedBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	bin := build(t)
	nodes := newCluster(t, 3)
	startAll(t, bin, nodes, "--rate-limit", "on")
	ctx := t.Context()
	const rate = 400 // RU/s: one physical partition
	createContainer(t, nodes[0], rate)
	pk := azcosmos.NewPartitionKeyString("p")
	body := fmt.Appendf(nil, `{"id":"big","pk":"p","data":%q}`, strings.Repeat("b", 500_000))
	cc := nodes[0].container(t, "db", "c")
	if err := retry(ctx, 60*time.Second, func(ctx context.Context) error {
		_, err := cc.UpsertItem(ctx, pk, body, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	readers := make([]*azcosmos.ContainerClient, len(nodes))
	for i, n := range nodes {
		c, err := sessionClient(t, n).NewContainer("db", "c")
		if err != nil {
			t.Fatal(err)
		}
		readers[i] = c
		// Every node has the item before the window starts.
		if err := retry(ctx, 30*time.Second, func(ctx context.Context) error {
			_, err := c.ReadItem(ctx, pk, "big", nil)
			return err
		}); err != nil {
			t.Fatalf("node %d: %v", i+1, err)
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
		for range 2 {
			wg.Go(func() {
				for time.Now().Before(end) {
					resp, err := readers[i].ReadItem(wctx, pk, "big", nil)
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
		t.Errorf("the three nodes served %.0f RU of one partition in %v: over its budget of %d RU/s (bound %.0f RU)", total, window, rate, limit)
	}
	for i, r := range reads {
		if r == 0 {
			t.Errorf("node %d served no read in %v", i+1, window)
		}
	}
}
