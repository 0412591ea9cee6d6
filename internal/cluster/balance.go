package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/partitadb/partita/internal/replication"
)

// Leader balance (docs/cluster.md, "Leader balance"): every write of a
// keyspace is evaluated and charged on its group's leader, so leaders
// spread evenly over the nodes spread the write load. Raft elects whoever
// times out first, so after a cluster starts, or a node dies and returns,
// one node may lead most groups. Each node therefore hands groups it leads
// to the nodes that lead the fewest, one at a time (Raft's leadership
// transfer), until no node leads two more than another: the count-based
// leader balance of TiKV's placement driver (its balance-leader scheduler)
// and CockroachDB's lease rebalancing, done here by each node for its own
// groups from its own view, with no coordinator. With replicas on a subset
// of the members, the groups of each set of voters are balanced among
// those voters: each of them sees all of those groups, where a node's view
// of the whole cluster would miss the groups it holds no replica of.

// balanceInterval is how often a node looks at the spread of leaders.
const balanceInterval = time.Second

// leaderMove is a transfer of one group's leadership from this node.
type leaderMove struct {
	group, to uint64
}

// leaderMoves returns the transfers this node (self) should try, best
// first, given each group's leader as this node sees it (0: none known)
// and the members: for the member that leads the fewest groups (ties by
// id), each group self leads, while self leads at least two more groups
// than that member; then for the next fewest, and so on. The caller starts
// the first that Raft accepts (the target must be caught up and alive), so
// one move per round brings the counts together and no two nodes trade a
// group back and forth: a move is only proposed across a difference of
// two or more, which it reduces.
func leaderMoves(self uint64, members []uint64, leaders map[uint64]uint64) []leaderMove {
	count := make(map[uint64]int, len(members))
	for _, m := range members {
		count[m] = 0
	}
	var mine []uint64
	for g, l := range leaders {
		if _, ok := count[l]; ok {
			count[l]++
		}
		if l == self {
			mine = append(mine, g)
		}
	}
	if _, ok := count[self]; !ok {
		return nil
	}
	slices.Sort(mine)
	others := make([]uint64, 0, len(members))
	for _, m := range members {
		if m != self {
			others = append(others, m)
		}
	}
	slices.SortFunc(others, func(a, b uint64) int {
		return cmp.Or(cmp.Compare(count[a], count[b]), cmp.Compare(a, b))
	})
	var moves []leaderMove
	for _, to := range others {
		if count[self]-count[to] < 2 {
			break
		}
		for _, g := range mine {
			moves = append(moves, leaderMove{group: g, to: to})
		}
	}
	return moves
}

// balanceLeaders starts at most one leadership transfer that evens out
// the spread of leaders, as this node sees it. It returns the move
// started, if any.
func (n *Node) balanceLeaders() (leaderMove, bool) {
	pinned := func(uint64) bool { return false }
	if f := n.pinned.Load(); f != nil {
		pinned = *f
	}
	// Groups with the same voters are balanced among those voters, each of
	// whom sees every one of them ("Placement on a subset").
	type set struct {
		voters  []uint64
		leaders map[uint64]uint64
	}
	sets := map[string]*set{}
	var keys []string
	for _, g := range n.host.Groups() {
		l, err := n.host.Leader(g)
		if err != nil || pinned(g) {
			continue
		}
		voters := n.placement.Voters(g)
		key := fmt.Sprint(voters)
		st, ok := sets[key]
		if !ok {
			st = &set{voters: voters, leaders: map[uint64]uint64{}}
			sets[key] = st
			keys = append(keys, key)
		}
		st.leaders[g] = l.ID
	}
	var moves []leaderMove
	for _, key := range keys {
		moves = append(moves, leaderMoves(n.self.ID, sets[key].voters, sets[key].leaders)...)
	}
	for _, mv := range moves {
		err := n.host.TransferLeader(mv.group, mv.to)
		if err == nil {
			n.log.Info("leadership transfer for leader balance", "keyspace", mv.group, "to", nodeHex(mv.to))
			return mv, true
		}
		if !errors.Is(err, replication.ErrTransferRefused) && !errors.Is(err, replication.ErrNoGroup) {
			n.log.Warn("leadership transfer", "keyspace", mv.group, "to", nodeHex(mv.to), "err", err)
		}
	}
	return leaderMove{}, false
}
