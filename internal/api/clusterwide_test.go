package api

import (
	"math"
	"testing"

	"github.com/partitadb/partita/internal/throughput"
)

// TestMergeShares: two nodes' shares of what keys took lately merge
// weighted by each node's charges: a key with all of a busy node's load
// and none of an idle node's keeps most of the cluster's, not the mean of
// the two shares; nothing charged anywhere lists nothing.
func TestMergeShares(t *testing.T) {
	busy := []throughput.Heavy{{Key: `["hot"]`, Weight: 0.8}, {Key: `["cold"]`, Weight: 0.2}}
	idle := []throughput.Heavy{{Key: `["cold"]`, Weight: 1}}
	got := mergeShares(busy, 900, idle, 100)
	if len(got) != 2 || got[0].Key != `["hot"]` || math.Abs(got[0].Weight-0.72) > 1e-12 || math.Abs(got[1].Weight-0.28) > 1e-12 {
		t.Errorf("mergeShares = %+v, want hot 0.72, cold 0.28 (the mean of the shares would give cold 0.6)", got)
	}
	if got := mergeShares(busy, 0, nil, 0); len(got) != 0 {
		t.Errorf("nothing charged: %+v", got)
	}
}
