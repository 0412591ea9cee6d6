package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	raftpb "go.etcd.io/raft/v3/raftpb"

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

// A node whose catalog cannot be confirmed current (its etcd traffic cut
// off while its Raft traffic flows: a firewall closing one port), or whose
// disk is full, takes no write (and in the first case no Strong read), so
// every partition it leads is unavailable through every node, though its
// peers could serve them. Such a node therefore hands its leaderships to
// the other voters (draining: once its catalog has been lapsed for
// drainAfter, at once when its store refuses writes), and refuses
// leaderships handed to it meanwhile (the MsgTimeoutNow of a transfer is
// dropped: refuses; its catalog once lapsed for refuseAfter, so that a
// node starting up, before its first confirmation, is not refused). A
// transfer that did not move the leadership (its target refused it, or
// was not reachable) makes this node leave that target out of its moves
// for a while, 5 s at first and twice as long each time again, up to a
// minute, until a transfer to it succeeds: leader balance on a healthy
// node then hands a group to a lapsed one seldom rather than every second,
// each attempt stalling the group's writes for the election timeout Raft
// takes to abandon it, and a target that refused once by a mishap gets
// its share again soon.
const (
	drainAfter   = 5 * time.Second
	refuseAfter  = time.Second
	refusedFirst = 5 * time.Second
	refusedMost  = time.Minute
)

// balancing is what leader balance remembers between rounds: the
// transfers it started last, and the targets it leaves out.
type balancing struct {
	mu      sync.Mutex
	started []leaderMove
	refused map[uint64]refusal
}

// refusal is a target left out of leader balance until until; wait is how
// long it was left out the last time.
type refusal struct {
	until time.Time
	wait  time.Duration
}

// again returns the refusal after another transfer was not taken at now:
// refusedFirst at first, twice the last wait after, at most refusedMost.
func (r refusal) again(now time.Time) refusal {
	r.wait = min(max(2*r.wait, refusedFirst), refusedMost)
	r.until = now.Add(r.wait)
	return r
}

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
	mine := tally(self, count, leaders)
	if _, ok := count[self]; !ok {
		return nil
	}
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

// tally adds to count, for each member it holds, the groups leaders says
// it leads, and returns the groups self leads, in order.
func tally(self uint64, count map[uint64]int, leaders map[uint64]uint64) []uint64 {
	var mine []uint64
	for g, l := range leaders {
		if _, ok := count[l]; ok {
			count[l]++
		}
		if l == self {
			mine = append(mine, g)
		}
	}
	slices.Sort(mine)
	return mine
}

// drainMoves returns the transfers a draining node (self) should start:
// for each group it leads, to the other voter that leads the fewest of
// them (ties by id), skipping the voters skip names.
func drainMoves(self uint64, voters []uint64, leaders map[uint64]uint64, skip func(uint64) bool) []leaderMove {
	count := make(map[uint64]int, len(voters))
	var to []uint64
	for _, v := range voters {
		if v != self && !skip(v) {
			count[v] = 0
			to = append(to, v)
		}
	}
	if len(to) == 0 {
		return nil
	}
	mine := tally(self, count, leaders)
	var moves []leaderMove
	for _, g := range mine {
		best := slices.MinFunc(to, func(a, b uint64) int { return cmp.Or(cmp.Compare(count[a], count[b]), cmp.Compare(a, b)) })
		count[best]++
		moves = append(moves, leaderMove{group: g, to: best})
	}
	return moves
}

// draining reports whether this node should hand its leaderships away: its
// catalog has been lapsed for drainAfter, or its store refuses writes for
// want of space (it cannot persist what it would lead: it answers 507,
// and stalls once its peers' writes reach it).
func (n *Node) draining() bool {
	return n.handingOff.Load() || n.shared != nil && n.shared.Lapsed() >= drainAfter || n.cfg.Store != nil && n.cfg.Store.Full()
}

// HandOff hands the leadership of every group this node leads that has
// another voter to the other voters, and refuses leaderships from now on,
// returning once it leads none of them or when ctx ends: a node asked to
// stop does so first, so that a rolling restart costs its writers nothing.
// Without it a stopping leader's writes in flight answered 408, outcome
// unknown, and the next writes waited out an election, as for a node
// killed (a bug hunt: 2 to 8 such 408s of 1 to 2 s each at every SIGTERM,
// and leader balance even moved a leadership to the stopping node).
func (n *Node) HandOff(ctx context.Context) {
	n.handingOff.Store(true)
	for {
		if n.tr != nil && n.tr.HeardSince(time.Now().Add(-time.Second)) == 0 {
			return // no other member to take them (the last one stopping)
		}
		n.balanceLeaders()
		if n.ledWithOthers() == 0 {
			return
		}
		select {
		case <-ctx.Done():
			n.log.Warn("stopping while still leading partitions: their writes in flight may answer 408", "groups", n.ledWithOthers())
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ledWithOthers counts the groups this node leads that have another voter.
func (n *Node) ledWithOthers() int {
	led := 0
	for _, g := range n.host.Groups() {
		l, err := n.host.Leader(g)
		if err != nil || l.ID != n.self.ID {
			continue
		}
		if slices.ContainsFunc(n.placement.Voters(g), func(v uint64) bool { return v != n.self.ID }) {
			led++
		}
	}
	return led
}

// Unfit reports why this node should not take a leadership, nor expect
// to know its partitions' leaders, now, if so: its catalog is not current
// (for refuseAfter), or its disk is full. "" when it is fit.
func (n *Node) Unfit() string {
	switch {
	case n.handingOff.Load():
		return "this node is stopping"
	case n.shared != nil && n.shared.Lapsed() >= refuseAfter:
		return "this node cannot confirm its catalog"
	case n.cfg.Store != nil && n.cfg.Store.Full():
		return "this node's disk is full"
	}
	return ""
}

// noteRefusals looks at the transfers the last round started: one whose
// group its target now leads clears the target's refusals; one whose
// group this node still leads, settled (Raft abandoned the transfer), had
// a target that did not take it, which is left out for a while. A
// transfer still under way is looked at again next round.
func (n *Node) noteRefusals(now time.Time) {
	keep := n.bal.started[:0]
	for _, mv := range n.bal.started {
		l, err := n.host.Leader(mv.group)
		switch {
		case err != nil:
		case l.ID == mv.to:
			delete(n.bal.refused, mv.to)
		case l.ID != n.self.ID:
		case !l.Settled:
			keep = append(keep, mv)
		default:
			if n.bal.refused == nil {
				n.bal.refused = map[uint64]refusal{}
			}
			r := n.bal.refused[mv.to].again(now)
			n.bal.refused[mv.to] = r
			n.log.Info("a leadership transfer was not taken: leaving its target out of leader balance for a while",
				"keyspace", mv.group, "to", nodeHex(mv.to), "for", r.wait)
		}
	}
	n.bal.started = keep
}

// balanceLeaders starts at most one leadership transfer that evens out
// the spread of leaders, as this node sees it, or, while this node is
// draining, one transfer of each group it leads. It returns the first
// move started, if any.
func (n *Node) balanceLeaders() (leaderMove, bool) {
	n.bal.mu.Lock()
	defer n.bal.mu.Unlock()
	now := time.Now()
	n.noteRefusals(now)
	skip := func(id uint64) bool { return n.bal.refused[id].until.After(now) }
	drain := n.draining()
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
		if drain {
			moves = append(moves, drainMoves(n.self.ID, sets[key].voters, sets[key].leaders, skip)...)
		} else {
			moves = append(moves, leaderMoves(n.self.ID, sets[key].voters, sets[key].leaders)...)
		}
	}
	var first leaderMove
	started := false
	for _, mv := range moves {
		if skip(mv.to) || (drain && slices.ContainsFunc(n.bal.started, func(s leaderMove) bool { return s.group == mv.group })) {
			continue
		}
		err := n.host.TransferLeader(mv.group, mv.to)
		if err == nil {
			switch {
			case n.handingOff.Load():
				n.log.Info("leadership transfer: this node is stopping", "keyspace", mv.group, "to", nodeHex(mv.to))
			case drain:
				n.log.Warn("leadership transfer: "+n.Unfit()+", so it cannot serve the partitions it leads",
					"keyspace", mv.group, "to", nodeHex(mv.to))
			default:
				n.log.Info("leadership transfer for leader balance", "keyspace", mv.group, "to", nodeHex(mv.to))
			}
			n.bal.started = append(n.bal.started, mv)
			if !started {
				first, started = mv, true
			}
			if !drain {
				return first, true
			}
			continue
		}
		if !errors.Is(err, replication.ErrTransferRefused) && !errors.Is(err, replication.ErrNoGroup) {
			n.log.Warn("leadership transfer", "keyspace", mv.group, "to", nodeHex(mv.to), "err", err)
		}
	}
	return first, started
}

// refuses reports whether this node drops message m, delivered to it: the
// order to campaign that ends a leadership transfer (MsgTimeoutNow) while
// this node's catalog is not current, since it could not serve what it
// would lead. An election it starts on its own is not refused: when the
// leader is gone, a lapsed leader is better than none (it drains once it
// has been lapsed for drainAfter).
func (n *Node) refuses(m replication.Message) bool {
	if m.Raft.GetType() != raftpb.MsgTimeoutNow {
		return false
	}
	why := n.Unfit()
	if why == "" {
		return false
	}
	n.log.Info("refused a leadership transfer: "+why, "keyspace", m.Group, "from", nodeHex(m.Raft.GetFrom()))
	return true
}
