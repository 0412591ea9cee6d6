package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestClusterSnapshotCatchUp: a node down while its partition's log moves
// past what the others keep (--raft-log-keep 4) catches up, once
// restarted, from a snapshot streamed to it by the leader (docs/cluster.md,
// "Snapshots, streamed"), and then holds exactly what the others hold.
func TestClusterSnapshotCatchUp(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	bin := build(t)
	nodes := newCluster(t, 3)
	flags := []string{"--raft-log-keep", "4", "--log-level", "info"}
	startAll(t, bin, nodes, flags...)
	ctx := t.Context()
	createContainer(t, nodes[0], 0)
	cc := nodes[0].container(t, "db", "c")
	filler := strings.Repeat("s", 4000)
	upsert := func(ctx context.Context, i int) error {
		body := fmt.Appendf(nil, `{"id":"i%d","pk":"p%d","data":%q}`, i, i%7, filler)
		_, err := cc.UpsertItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", i%7)), body, nil)
		return err
	}
	if err := retry(ctx, 30*time.Second, func(ctx context.Context) error { return upsert(ctx, 0) }); err != nil {
		t.Fatal(err)
	}
	nodes[2].kill()
	const items = 120
	for i := 1; i < items; i++ {
		if err := retry(ctx, 30*time.Second, func(ctx context.Context) error { return upsert(ctx, i) }); err != nil {
			t.Fatalf("write %d with node 3 down: %v", i, err)
		}
	}
	if err := startNode(t, bin, nodes, 2, flags...); err != nil {
		t.Fatal(err)
	}
	checkReplicasIdentical(t, bin, nodes)
	sent := false
	for _, n := range nodes[:2] {
		sent = sent || strings.Contains(n.logs.String(), "raft snapshot sent")
	}
	if !sent {
		t.Error("node 3 caught up without a snapshot: the test no longer shows the streamed snapshot")
	}
	// Node 3 serves every item from its own replica (session reads are
	// served locally once it has applied what the token names; azcosmos
	// sends none, so it serves what it has).
	c3, err := sessionClient(t, nodes[2]).NewContainer("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if _, err := c3.ReadItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", i%7)), fmt.Sprintf("i%d", i), nil); err != nil {
			t.Errorf("item %d through node 3: %v", i, err)
		}
	}
}
