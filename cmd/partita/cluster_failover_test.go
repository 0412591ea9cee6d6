package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestClusterLeaderDeath kills (SIGKILL) the leader of a container's only
// partition and at once writes through a surviving node, with nothing
// retrying but azcosmos itself: every write succeeds. The survivor still
// names the dead leader for an election timeout; its forward is refused
// (the request was never sent), so it waits for the new leader rather
// than answering 503, which azcosmos does not retry on a one-region
// account.
func TestClusterLeaderDeath(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	bin := build(t)
	nodes := newCluster(t, 3)
	startAll(t, bin, nodes, "--consistency", "Strong")
	ctx := t.Context()
	createContainer(t, nodes[0], 0)
	pk := azcosmos.NewPartitionKeyString("p")
	upsert := func(ctx context.Context, cc *azcosmos.ContainerClient, id string) error {
		_, err := cc.UpsertItem(ctx, pk, fmt.Appendf(nil, `{"id":%q,"pk":"p"}`, id), nil)
		return err
	}
	if err := retry(ctx, 30*time.Second, func(ctx context.Context) error { return upsert(ctx, nodes[0].container(t, "db", "c"), "first") }); err != nil {
		t.Fatal(err)
	}
	var lead *clusterNode
	for deadline := time.Now().Add(20 * time.Second); lead == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no node leads the container's partition")
		}
		for _, v := range clusterViews(t, bin, nodes, false) {
			for _, k := range v.Keyspaces {
				for _, n := range nodes {
					if k.Leading && n.clusterAddr == v.Addr {
						lead = n
					}
				}
			}
		}
	}
	var via *clusterNode
	for _, n := range nodes {
		if n != lead {
			via = n
		}
	}
	cc := via.container(t, "db", "c")
	lead.kill()
	start := time.Now()
	for i := range 5 {
		if err := upsert(ctx, cc, fmt.Sprint("after", i)); err != nil {
			t.Fatalf("write %d through a survivor, %v after its partition's leader was killed: %v\nthe survivor's log:\n%s",
				i, time.Since(start).Round(time.Millisecond), err, lastLines(via.logs.String(), 30))
		}
	}
	t.Logf("5 writes through a survivor in %v after the leader was killed", time.Since(start).Round(time.Millisecond))
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
