package api

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/throughput"
)

// Cluster-wide reports (docs/cluster.md, "Reports and metrics"). What a
// partition stores is replicated, so any node can report it; what it is
// charged is counted where it is charged — writes on the partition's
// leader, reads on whichever node serves them — and so are its 429s. In a
// cluster a partitions report therefore asks every other node for its
// counts (Config.Gather, the request sent with the client's own signature,
// re-authenticated there) and adds them to this node's.

// PeerAnswer is another node's answer to a gathered request.
type PeerAnswer struct {
	Node, Addr string
	Status     int // 0: not reached
	Body       []byte
	Err        error
}

// UnreachableNode names a node whose counts a cluster-wide report lacks.
type UnreachableNode struct {
	Node  string `json:"node"`
	Addr  string `json:"addr"`
	Error string `json:"error"`
}

// forwarded reports whether r came from another node of the cluster
// (which is gathering: it must be answered from this node alone).
func forwarded(r *http.Request) bool {
	st, _ := r.Context().Value(forwardKey{}).(*forwardState)
	return st != nil && st.forwarded
}

// gatherPartitions adds the other nodes' counts to reps (this node's
// partitions report), and returns how many nodes counted and the nodes
// that could not.
func (h *Handler) gatherPartitions(r *http.Request, reps []engine.PartitionReport) (nodes int, missing []UnreachableNode) {
	nodes = 1
	byID := map[string]*engine.PartitionReport{}
	for i := range reps {
		byID[reps[i].ID] = &reps[i]
	}
	for _, a := range h.cfg.Gather(r) {
		var body struct {
			Partitions []engine.PartitionReport `json:"partitions"`
		}
		err := a.Err
		if err == nil && a.Status != http.StatusOK {
			err = fmt.Errorf("status %d: %.200s", a.Status, a.Body)
		}
		if err == nil {
			err = json.Unmarshal(a.Body, &body)
		}
		if err != nil {
			missing = append(missing, UnreachableNode{Node: a.Node, Addr: a.Addr, Error: err.Error()})
			continue
		}
		nodes++
		for _, p := range body.Partitions {
			rep, ok := byID[p.ID]
			if !ok {
				continue // a range this node's catalog does not know yet (or any more)
			}
			rep.ChargedRU += p.ChargedRU
			rep.Throttled += p.Throttled
			rep.TopKeysByRU = mergeHeavy(rep.TopKeysByRU, p.TopKeysByRU)
			rep.TopKeysByRUNow = mergeShares(rep.TopKeysByRUNow, rep.RecentRU, p.TopKeysByRUNow, p.RecentRU)
			rep.RecentRU += p.RecentRU
			rep.TopKeysByThrottles = mergeHeavy(rep.TopKeysByThrottles, p.TopKeysByThrottles)
		}
	}
	return nodes, missing
}

// mergeHeavy adds two nodes' heaviest keys: a key's weight (and its
// possible overestimate) is the sum of what each node counted, a key one
// node did not list counting as 0 there (so the sum may underestimate it
// by at most that node's smallest listed weight). The longer list's length
// of heaviest keys is kept.
func mergeHeavy(a, b []throughput.Heavy) []throughput.Heavy {
	n := max(len(a), len(b))
	sum := map[string]throughput.Heavy{}
	for _, h := range slices.Concat(a, b) {
		s := sum[h.Key]
		s.Key, s.Weight, s.Err = h.Key, s.Weight+h.Weight, s.Err+h.Err
		sum[h.Key] = s
	}
	out := make([]throughput.Heavy, 0, len(sum))
	for _, h := range sum {
		out = append(out, h)
	}
	slices.SortFunc(out, func(x, y throughput.Heavy) int {
		return cmp.Or(cmp.Compare(y.Weight, x.Weight), cmp.Compare(x.Key, y.Key))
	})
	return out[:min(n, len(out))]
}

// mergeShares adds two nodes' shares of what their keys took lately, a of
// ra request units and b of rb (engine.PartitionReport.RecentRU): each
// share weighs by its node's units, and the sum is a share of ra+rb. (Each
// node's shares are of its own charges: listed as they came, the report
// named the hot key of whichever node answered.)
func mergeShares(a []throughput.Heavy, ra float64, b []throughput.Heavy, rb float64) []throughput.Heavy {
	scale := func(hs []throughput.Heavy, f float64) []throughput.Heavy {
		out := make([]throughput.Heavy, len(hs))
		for i, h := range hs {
			out[i] = throughput.Heavy{Key: h.Key, Weight: h.Weight * f, Err: h.Err * f}
		}
		return out
	}
	total := ra + rb
	if !(total > 0) {
		return scale(a, 0)[:0]
	}
	return scale(mergeHeavy(scale(a, ra), scale(b, rb)), 1/total)
}
