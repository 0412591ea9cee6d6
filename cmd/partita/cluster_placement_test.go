package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestClusterPlacement runs four real processes with --replicas 3
// (docs/cluster.md, "Placement on a subset"): every keyspace has its
// replicas on three of the four nodes, the same on each, with leaders
// balanced among them; items written through every node are read through
// every node at once (Strong), including through the node that holds no
// replica of their partition (a remote read); cross-partition queries,
// an ORDER BY and the change feed through every node find every item;
// with a node killed, the others go on taking writes and serving reads;
// the killed node, restarted, serves them all; replicas are identical;
// and partita check finds each stopped member's directory sound.
func TestClusterPlacement(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four servers")
	}
	bin := build(t)
	nodes := newCluster(t, 4)
	flags := []string{"--replicas", "3", "--consistency", "Strong", "--gateway-query=full", "--partition-max-bytes=16384"}
	startAll(t, bin, nodes, flags...)
	ctx := t.Context()
	// 24,000 RU/s: four physical partitions, four consecutive keyspaces,
	// so that each node holds no replica of one of them.
	createContainer(t, nodes[0], 24000)
	checkClusterStatus(t, bin, nodes)
	views := clusterViews(t, bin, nodes, false)
	for _, v := range views {
		if len(v.Keyspaces) != 3 {
			t.Errorf("node %s holds replicas of %d keyspaces, want 3 of the 4", v.Node, len(v.Keyspaces))
		}
		for _, k := range v.Keyspaces {
			if len(k.Replicas) != 3 {
				t.Errorf("keyspace %d: replicas %v, want three", k.ID, k.Replicas)
			}
		}
	}

	ccs := make([]*azcosmos.ContainerClient, len(nodes))
	for i, n := range nodes {
		ccs[i] = n.container(t, "db", "c")
	}
	acked := map[string]string{} // id → pk
	write := func(via int, id, pk string) {
		t.Helper()
		if err := retry(ctx, 30*time.Second, func(ctx context.Context) error {
			_, err := ccs[via].UpsertItem(ctx, azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":%q,"pk":%q,"n":%d}`, id, pk, len(acked)), nil)
			return err
		}); err != nil {
			t.Fatalf("write %s via node %d: %v", id, via+1, err)
		}
		acked[id] = pk
	}
	readAll := func(alive []int) {
		t.Helper()
		for id, pk := range acked {
			for _, j := range alive {
				if _, err := ccs[j].ReadItem(ctx, azcosmos.NewPartitionKeyString(pk), id, nil); err != nil {
					t.Fatalf("read %s via node %d: %v", id, j+1, err)
				}
			}
		}
	}
	queryAll := func(alive []int) {
		t.Helper()
		for _, j := range alive {
			var got []string
			pager := ccs[j].NewQueryItemsPager("SELECT c.id FROM c ORDER BY c.id", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 7})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					t.Fatalf("query via node %d: %v", j+1, err)
				}
				for _, raw := range page.Items {
					var d struct{ ID string }
					if err := json.Unmarshal(raw, &d); err != nil {
						t.Fatal(err)
					}
					got = append(got, d.ID)
				}
			}
			if len(got) != len(acked) {
				t.Fatalf("a cross-partition query via node %d found %d items, want %d", j+1, len(got), len(acked))
			}
			for i := 1; i < len(got); i++ {
				if got[i-1] >= got[i] {
					t.Fatalf("ORDER BY c.id via node %d: %q before %q", j+1, got[i-1], got[i])
				}
			}
			// The change feed, drained (a page holds one range's changes:
			// until every range has answered an empty page in a row).
			seen := map[string]bool{}
			var token *string
			for iter, empty := 0, 0; iter < 100 && empty < 5; iter++ {
				feed, err := ccs[j].ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}, MaxItemCount: 9, Continuation: token})
				if err != nil {
					t.Fatalf("change feed via node %d: %v", j+1, err)
				}
				empty++
				for _, raw := range feed.Items {
					var d struct{ ID string }
					_ = json.Unmarshal(raw, &d)
					seen[d.ID], empty = true, 0
				}
				tok := feed.ContinuationToken
				token = &tok
			}
			if len(seen) != len(acked) {
				t.Fatalf("the change feed via node %d has %d items, want %d", j+1, len(seen), len(acked))
			}
		}
	}

	all := []int{0, 1, 2, 3}
	for i := range 40 {
		write(i%4, fmt.Sprintf("a%02d", i), fmt.Sprintf("p%d", i%13))
	}
	readAll(all)
	queryAll(all)

	// Larger items split the ranges; each split's child is separated into
	// a keyspace of its own, on its parent's nodes (its source's leader
	// copies it), which the others read remotely.
	pad := strings.Repeat("x", 1000)
	for i := range 100 {
		id, pk := fmt.Sprintf("s%03d", i), fmt.Sprintf("p%d", i%13)
		if err := retry(ctx, 30*time.Second, func(ctx context.Context) error {
			_, err := ccs[i%4].UpsertItem(ctx, azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":%q,"pk":%q,"pad":%q}`, id, pk, pad), nil)
			return err
		}); err != nil {
			t.Fatalf("write %s via node %d: %v", id, i%4+1, err)
		}
		acked[id] = pk
	}
	hc := trustingClient(t, nodes[0].data)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		ranges := len(pkRangesOf(t, hc, nodes[0].endpoint, "c"))
		keyspaces := map[uint64]bool{}
		for _, v := range clusterViews(t, bin, nodes, false) {
			for _, k := range v.Keyspaces {
				keyspaces[k.ID] = true
			}
		}
		if ranges > 4 && len(keyspaces) == ranges {
			t.Logf("%d ranges, each in a keyspace of its own", ranges)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %d ranges in %d keyspaces; want more than 4 ranges, each in a keyspace of its own", ranges, len(keyspaces))
		}
	}
	checkClusterStatus(t, bin, nodes)
	readAll(all)
	queryAll(all)

	// Node 4 dies: every keyspace keeps two of its three replicas.
	nodes[3].kill()
	alive := []int{0, 1, 2}
	for i := range 20 {
		write(i%3, fmt.Sprintf("b%02d", i), fmt.Sprintf("p%d", i%13))
	}
	readAll(alive)
	queryAll(alive)

	if err := startNode(t, bin, nodes, 3, flags...); err != nil {
		t.Fatal(err)
	}
	ccs[3] = nodes[3].container(t, "db", "c")
	for id, pk := range acked {
		if err := retry(ctx, 30*time.Second, func(ctx context.Context) error {
			_, err := ccs[3].ReadItem(ctx, azcosmos.NewPartitionKeyString(pk), id, nil)
			return err
		}); err != nil {
			t.Fatalf("read %s via the restarted node 4: %v", id, err)
		}
	}
	queryAll(all)
	checkReplicasIdentical(t, bin, nodes)
	checkClusterStatus(t, bin, nodes)
	checkMembers(t, bin, nodes)
}
