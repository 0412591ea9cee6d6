package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestClusterSeparation: in a three-node cluster whose partitions split at
// 64 KiB, azcosmos writers through every node make the container split,
// and each split's children get Raft groups of their own (separations,
// docs/cluster.md "Separations in a cluster") while the writes go on. In
// the end every range has a keyspace of its own; every acknowledged item
// is read through every node, and a count through each node finds exactly
// the items present; the change feed, read through one node from the
// beginning, delivers each item once; and the replicas are identical.
func TestClusterSeparation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	bin := build(t)
	nodes := newCluster(t, 3)
	flags := []string{"--consistency", "Strong", "--partition-max-bytes=65536"}
	startAll(t, bin, nodes, flags...)
	ctx := t.Context()
	createContainer(t, nodes[0], 0)
	ccs := make([]*azcosmos.ContainerClient, len(nodes))
	for i, n := range nodes {
		ccs[i] = loopContainer(t, n)
	}

	// Eight logical partitions: at most eight ranges (a range with one
	// logical partition does not split).
	const wantRanges, logical = 4, 8
	var (
		acked, unknown sync.Map // id → pk
		seq            atomic.Int64
		failures       atomic.Int64
	)
	pad := strings.Repeat("s", 700)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var readsOK, readsFailed atomic.Int64
	for w := range 4 {
		r := rand.New(rand.NewPCG(uint64(w), 7))
		var mine [][2]string // this worker's acknowledged items: id, pk
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if len(mine) > 0 && r.IntN(2) == 0 {
					// A Strong read of an acknowledged item through any
					// node must find it, whatever moves meanwhile.
					it := mine[r.IntN(len(mine))]
					octx, cancel := context.WithTimeout(ctx, 15*time.Second)
					_, err := ccs[r.IntN(len(ccs))].ReadItem(octx, azcosmos.NewPartitionKeyString(it[1]), it[0], nil)
					cancel()
					var re *azcore.ResponseError
					switch {
					case err == nil:
						readsOK.Add(1)
					case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
						t.Errorf("acknowledged item %s not found by a read during the separations", it[0])
					default:
						if readsFailed.Add(1) <= 5 {
							t.Logf("read %s: %v", it[0], err)
						}
					}
					continue
				}
				i := seq.Add(1)
				id, pk := fmt.Sprintf("i%d", i), fmt.Sprintf("p%d", i%logical)
				cc := ccs[r.IntN(len(ccs))]
				octx, cancel := context.WithTimeout(ctx, 15*time.Second)
				_, err := cc.CreateItem(octx, azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":%q,"pk":%q,"pad":%q}`, id, pk, pad), nil)
				cancel()
				if err == nil {
					acked.Store(id, pk)
					mine = append(mine, [2]string{id, pk})
				} else {
					unknown.Store(id, pk)
					if failures.Add(1) <= 5 {
						t.Logf("create %s: %v", id, err)
					}
				}
			}
		})
	}
	// Write until the container has split into wantRanges ranges (at most
	// 60 s), and for 3 s more while the separations run; then stop.
	hc := trustingClient(t, nodes[0].data)
	start := time.Now()
	var ranges int
	for {
		ranges = len(pkRangesOf(t, hc, nodes[0].endpoint, "c"))
		if ranges >= wantRanges {
			break
		}
		if time.Since(start) > time.Minute {
			close(stop)
			wg.Wait()
			t.Fatalf("after 60 s of writes: %d ranges, want %d", ranges, wantRanges)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d ranges after %v; %d keyspaces", ranges, time.Since(start).Round(time.Millisecond), keyspacesListed(t, bin, nodes))
	time.Sleep(3 * time.Second)
	t.Logf("%d keyspaces when the writers stop", keyspacesListed(t, bin, nodes))
	close(stop)
	wg.Wait()
	n, u := count(&acked), count(&unknown)
	t.Logf("%d items acknowledged, %d of unknown outcome (%d failures); %d ranges; %d reads, %d failed", n, u, failures.Load(), ranges, readsOK.Load(), readsFailed.Load())

	// Every range in its own keyspace, on every node, once the separations
	// under way have ended (the writers may have started more splits).
	settle := time.Now()
	waitFor(t, 60*time.Second, "every range in a keyspace of its own", func() string {
		r, k := len(pkRangesOf(t, hc, nodes[0].endpoint, "c")), keyspacesListed(t, bin, nodes)
		if k != r {
			return fmt.Sprintf("%d ranges, %d keyspaces", r, k)
		}
		return ""
	})
	t.Logf("every range in a keyspace of its own %v after the writers stopped", time.Since(settle).Round(time.Millisecond))

	// Every acknowledged item through every node.
	for i, cc := range ccs {
		missing := 0
		acked.Range(func(k, v any) bool {
			err := retry(ctx, 30*time.Second, func(ctx context.Context) error {
				_, err := cc.ReadItem(ctx, azcosmos.NewPartitionKeyString(v.(string)), k.(string), nil)
				var re *azcore.ResponseError
				if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
					missing++
					return nil
				}
				return err
			})
			if err != nil {
				t.Fatalf("read %s through node %d: %v", k, i+1, err)
			}
			return missing < 10
		})
		if missing > 0 {
			t.Errorf("node %d: %d acknowledged items not found", i+1, missing)
		}
	}
	// A cross-partition query through each node finds exactly the items
	// present: the acknowledged ones and some of the unknown.
	present := map[string]bool{}
	for i, cc := range ccs {
		ids := queryIDs(t, cc)
		if i == 0 {
			for _, id := range ids {
				present[id] = true
			}
		}
		if len(ids) != len(present) {
			t.Errorf("node %d: the query found %d items, node 1's %d", i+1, len(ids), len(present))
		}
		if d := duplicates(ids); len(d) > 0 {
			t.Errorf("node %d: the query returned %v more than once", i+1, d)
		}
	}
	acked.Range(func(k, _ any) bool {
		if !present[k.(string)] {
			t.Errorf("acknowledged item %s not found by the query", k)
		}
		return true
	})
	for id := range present {
		_, a := acked.Load(id)
		_, u := unknown.Load(id)
		if !a && !u {
			t.Errorf("item %s present but never written", id)
		}
	}
	// The change feed from the beginning, through node 2, in pages.
	seen := map[string]int{}
	var token *string
	wide := &azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}
	for deadline := time.Now().Add(60 * time.Second); len(seen) < len(present) && time.Now().Before(deadline); {
		resp, err := ccs[1].ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: wide, MaxItemCount: 200, Continuation: token})
		if err != nil {
			t.Fatalf("change feed: %v", err)
		}
		for _, raw := range resp.Items {
			var d struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(raw, &d)
			seen[d.ID]++
		}
		tok := resp.ContinuationToken
		token = &tok
		if len(resp.Items) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	for id := range present {
		if seen[id] != 1 {
			t.Errorf("the change feed delivered %s %d times, want once", id, seen[id])
		}
	}
	for id := range seen {
		if !present[id] {
			t.Errorf("the change feed delivered %s, which is not present", id)
		}
	}
	checkReplicasIdentical(t, bin, nodes)
}

// keyspacesListed returns how many keyspaces every node of the cluster
// lists (the least of their counts).
func keyspacesListed(t *testing.T, bin string, nodes []*clusterNode) int {
	t.Helper()
	least := -1
	for _, v := range clusterViews(t, bin, nodes, false) {
		if least < 0 || len(v.Keyspaces) < least {
			least = len(v.Keyspaces)
		}
	}
	return least
}

// queryIDs returns the ids of every item of cc, through a cross-partition
// query drained in pages.
func queryIDs(t *testing.T, cc *azcosmos.ContainerClient) []string {
	t.Helper()
	var ids []string
	err := retry(t.Context(), 30*time.Second, func(ctx context.Context) error {
		ids = ids[:0]
		pager := cc.NewQueryItemsPager("SELECT VALUE c.id FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 500})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return err
			}
			for _, raw := range page.Items {
				var id string
				if err := json.Unmarshal(raw, &id); err != nil {
					return err
				}
				ids = append(ids, id)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	return ids
}

// duplicates returns the ids that occur more than once in ids.
func duplicates(ids []string) []string {
	s := slices.Clone(ids)
	slices.Sort(s)
	var out []string
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] && (len(out) == 0 || out[len(out)-1] != s[i]) {
			out = append(out, s[i])
		}
	}
	return out
}

// count returns how many entries m holds.
func count(m *sync.Map) int {
	n := 0
	m.Range(func(_, _ any) bool { n++; return true })
	return n
}

// waitFor calls cond until it returns "" or limit passes (then fails with
// what it last returned).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(limit); ; time.Sleep(250 * time.Millisecond) {
		if last = cond(); last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, limit, last)
		}
	}
}
