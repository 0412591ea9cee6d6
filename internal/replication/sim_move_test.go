package replication

import (
	"fmt"
	"math"
	"slices"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// Moves in the simulation: the protocol by which the engine gives a split
// child a keyspace, hence a Raft group, of its own (docs/cluster.md,
// "Separations in a cluster"), played by the simulator over real hosts
// among the same faults as the writes and reads:
//
//   - the catalog records the target (sim.moving, catalog.BeginMove) and
//     every node creates its replica of the new group when it observes it;
//   - the coordinator, the source group's settled leader, campaigns for the
//     new group and copies the logical partition into it in rounds while
//     writes go on, then holds the source group's writers off on its node
//     (the engine holds its container's),
//     waits for its writes in flight and those given up on that may still
//     apply (in doubt), copies a last round, makes the new
//     group's LSNs continue above the source's last (a mark proposed to it:
//     engine's dst.AdvanceLSN(src.LastLSN())), and commits the fence, its
//     decision "moved", to the source group's log;
//   - once the fence has applied there, the catalog routes the partition
//     to the new group (catalog.MoveRange) and the coordinator deletes the
//     leftovers from the source;
//   - a move whose coordinator failed (it crashed, lost a leadership, a
//     proposal failed, the campaign timed out) is settled by whichever node
//     is the source's settled leader: completed if the fence is in its
//     applied state, otherwise abandoned — an "abandoned" decision
//     committed to the source first, and the first decision stands.
//
// Writes check the fence when evaluated (engine.beginTxn) and reads after
// they read (the engine's readers); nodes route by their own, lagging copy
// of the catalog (simNode.view). Porcupine checks each logical partition's
// history across its moves. What this proves is the protocol over the
// replication layer; the engine's implementation of it runs in real
// processes (TestClusterSeparation, the kill loop).

// simMove is a move under way, or the settling of one whose coordinator is
// gone.
type simMove struct {
	lp       int
	from, to uint64
	settle   bool     // settling a move found without its coordinator
	node     *simNode // the coordinator (or the settling node)
	term     uint64   // its term in from
	toTerm   uint64   // its term in to
	phase    movePhase
	deadline int64
	rounds   int
	w        *Waiter
}

type movePhase int

const (
	moveCampaign movePhase = iota // the coordinator campaigns for the new group
	moveCopy                      // a copy round proposed to the new group
	moveHold                      // writers held off; waiting for the node's writes in flight
	moveLast                      // the last copy round proposed, writers held off
	moveAdvance                   // the new group's LSNs advanced past the source's, writers held off
	moveFence                     // the fence proposed to the source, writers held off
	moveDecide                    // settling: an abandonment proposed to the source
	moveCollect                   // the leftovers' deletion proposed to the source
)

// decisionKey is where the source group keeps its decision on a move of lp
// to group to: "m" moved (a fence), "a" abandoned.
func decisionKey(g uint64, lp int, to uint64) []byte {
	return append(replica.KeyspacePrefix(g), fmt.Sprintf("\x03move/lp%d/to%d", lp, to)...)
}

// decision returns the decision st's replica of g holds on the move of lp
// to group to: 'm', 'a', or 0 for none.
func decision(st *store.Store, g uint64, lp int, to uint64) (byte, error) {
	v, err := st.Get(decisionKey(g, lp, to))
	switch {
	case err == store.ErrNotFound:
		return 0, nil
	case err != nil:
		return 0, err
	}
	return v[0], nil
}

// fenced reports whether st's replica of g holds a fence of lp: lp was moved
// out of g.
func fenced(st *store.Store, g uint64, lp int) bool {
	p := append(replica.KeyspacePrefix(g), fmt.Sprintf("\x03move/lp%d/", lp)...)
	upper := slices.Clone(p)
	upper[len(upper)-1]++
	it := st.NewIter(store.Span{Lower: p, Upper: upper}, false)
	defer it.Close()
	for it.Next() {
		if it.Value()[0] == 'm' {
			return true
		}
	}
	return false
}

// holds reports whether a move's cut-over holds lp's writers off on n: the
// writers of every partition in the source group, as the engine's holds
// its container's (colls exclusive), so that the source issues no LSN
// between the new group's advance and the fence (one past the new group's
// first would carry a change feed position over the moved partition's
// next versions).
func (s *sim) holds(n *simNode, lp int) bool {
	m := s.move
	return m != nil && !m.settle && m.node == n && n.view[lp] == m.from && m.phase >= moveHold && m.phase <= moveFence
}

// observe is a node's catalog sync: replicas of the groups it names, and
// its routes.
func (s *sim) observe(n *simNode) error {
	for _, g := range s.groups {
		if err := n.h.Create(g, []uint64{1, 2, 3}); err != nil {
			return err
		}
	}
	n.view = s.route
	return nil
}

// settledLeader returns an up node that believes it is g's settled leader
// (nil if none), and its term.
func (s *sim) settledLeader(g uint64) (*simNode, uint64) {
	for _, n := range s.nodes {
		if !n.running() {
			continue
		}
		if l, err := n.h.Leader(g); err == nil && l.Settled && l.ID == n.id {
			return n, l.Term
		}
	}
	return nil, 0
}

// leads reports whether n is still g's settled leader in term.
func leads(n *simNode, g, term uint64) bool {
	if !n.running() {
		return false
	}
	l, err := n.h.Leader(g)
	return err == nil && l.Settled && l.ID == n.id && l.Term == term
}

// advanceMove starts a move now and then (when start), settles a move
// found without its coordinator, and takes the one under way a step.
func (s *sim) advanceMove(start bool) error {
	if s.move == nil {
		for lp := range simLPs {
			if s.moving[lp] != 0 {
				s.move = &simMove{lp: lp, from: s.route[lp], to: s.moving[lp], settle: true}
				break
			}
		}
	}
	if s.move == nil {
		if start && s.movesOn && s.rng.IntN(1000) < 6 {
			return s.beginMove()
		}
		return nil
	}
	if s.move.settle {
		return s.settleStep()
	}
	return s.moveStep()
}

// beginMove records a move of a random logical partition to a new group
// and starts its coordinator on the source's settled leader.
func (s *sim) beginMove() error {
	lp := s.rng.IntN(simLPs)
	from := s.route[lp]
	n, term := s.settledLeader(from)
	if n == nil {
		return nil
	}
	to := slices.Max(s.groups) + 1
	s.groups = append(s.groups, to)
	s.moving[lp] = to
	if err := s.observe(n); err != nil {
		return err
	}
	s.move = &simMove{lp: lp, from: from, to: to, node: n, term: term, phase: moveCampaign, deadline: s.now + 150}
	_ = n.h.Campaign(to)
	return nil
}

// moveStep takes the coordinator a step.
func (s *sim) moveStep() error {
	m := s.move
	n := m.node
	if !leads(n, m.from, m.term) {
		s.move = nil // the coordinator is gone: settled later
		return nil
	}
	if m.w != nil {
		select {
		case err := <-m.w.Done():
			m.w = nil
			if err != nil {
				s.move = nil
				return nil
			}
		default:
			return nil
		}
		switch m.phase {
		case moveCopy:
			m.rounds++
			if m.rounds < 2 {
				return s.copyRound(moveCopy)
			}
			m.phase = moveHold
		case moveLast:
			return s.advanceLSN()
		case moveAdvance:
			return s.decide('m')
		case moveFence:
			return s.concluded()
		case moveCollect:
			s.move = nil
			return nil
		}
	}
	switch m.phase {
	case moveCampaign:
		if l, err := n.h.Leader(m.to); err == nil && l.Settled && l.ID == n.id {
			m.toTerm = l.Term
			return s.copyRound(moveCopy)
		}
		if s.now > m.deadline {
			s.move = nil
		}
	case moveHold:
		for _, o := range s.ops {
			if o.write && o.node == n && o.group == m.from {
				return nil
			}
		}
		// And for its writes given up on, which may still apply
		// (engine.separate's awaitDoubts).
		if r := n.reps[m.from]; r != nil && r.inDoubt() {
			return nil
		}
		return s.copyRound(moveLast)
	}
	return nil
}

// copyRound proposes to the new group the logical partition's keys as the
// coordinator's replica of the source holds them.
func (s *sim) copyRound(phase movePhase) error {
	m := s.move
	b := m.node.st.NewBatch()
	defer b.Close()
	for k := range simKeys {
		v, err := m.node.st.Get(lpKey(m.from, m.lp, k))
		switch {
		case err == store.ErrNotFound:
			b.Delete(lpKey(m.to, m.lp, k))
		case err != nil:
			return err
		default:
			b.Set(lpKey(m.to, m.lp, k), v)
		}
	}
	// The partition's change entries, with their LSNs.
	if err := feedEntries(m.node.st, m.from, m.lp, 0, math.MaxUint64-1, func(lsn uint64, num int) {
		b.Set(feedKey(m.to, lsn), feedValue(m.lp, num))
	}); err != nil {
		return err
	}
	return s.propose(b, m.to, m.toTerm, phase)
}

// advanceLSN proposes to the new group a mark above the last LSN the
// source issued or applied on the coordinator, so that the LSNs of the
// new group continue those of the source: a session token issued by the
// source is reached in the new group once the mark (which follows the
// copy in its log) applies there.
func (s *sim) advanceLSN() error {
	m := s.move
	src, err := m.node.rep(m.from)
	if err != nil {
		return err
	}
	dst, err := m.node.rep(m.to)
	if err != nil {
		return err
	}
	w, err := dst.proposeAdvance(src.LastLSN())
	if err != nil {
		s.move = nil // the coordinator lost the new group: settled later
		return nil
	}
	m.w, m.phase = w, moveAdvance
	return nil
}

// propose proposes b to group g in term as the move's node; a refused
// proposal ends the coordinator (or this settling attempt).
func (s *sim) propose(b *store.Batch, g, term uint64, phase movePhase) error {
	m := s.move
	repr, err := b.Repr()
	if err != nil {
		return err
	}
	w, err := m.node.h.Propose(g, Proposal{Kind: KindBatch, Term: term, Repr: repr})
	if err != nil {
		if m.settle {
			m.node, m.phase = nil, 0
		} else {
			s.move = nil
		}
		return nil
	}
	m.w, m.phase = w, phase
	return nil
}

// decide commits a decision on the move to the source, unless one is
// there: the first decision stands.
func (s *sim) decide(d byte) error {
	m := s.move
	got, err := decision(m.node.st, m.from, m.lp, m.to)
	if err != nil || got != 0 {
		if err == nil {
			return s.concluded()
		}
		return err
	}
	b := m.node.st.NewBatch()
	defer b.Close()
	b.Set(decisionKey(m.from, m.lp, m.to), []byte{d})
	phase := moveFence
	if m.settle {
		phase = moveDecide
	}
	return s.propose(b, m.from, m.term, phase)
}

// concluded acts on the decision the move's node has applied: the catalog
// records the move and the leftovers are deleted, or the move is
// abandoned.
func (s *sim) concluded() error {
	m := s.move
	d, err := decision(m.node.st, m.from, m.lp, m.to)
	if err != nil {
		return err
	}
	switch d {
	case 'm':
		s.route[m.lp], s.moving[m.lp] = m.to, 0
		s.lastMoved = m.lp
		s.stats.moves++
		b := m.node.st.NewBatch()
		defer b.Close()
		for k := range simKeys {
			b.Delete(lpKey(m.from, m.lp, k))
		}
		if err := feedEntries(m.node.st, m.from, m.lp, 0, math.MaxUint64-1, func(lsn uint64, _ int) {
			b.Delete(feedKey(m.from, lsn))
		}); err != nil {
			return err
		}
		m.settle = false // the collection is the last step either way
		return s.propose(b, m.from, m.term, moveCollect)
	case 'a':
		s.moving[m.lp] = 0
		s.stats.abandoned++
		s.move = nil
		return nil
	}
	return fmt.Errorf("move of lp%d to group %d: no decision applied on node %d after its proposal", m.lp, m.to, m.node.id)
}

// settleStep takes a settling a step: the source's settled leader
// completes the move if it finds the fence applied, and otherwise commits
// its abandonment first.
func (s *sim) settleStep() error {
	m := s.move
	if m.node != nil && !leads(m.node, m.from, m.term) {
		m.node, m.w, m.phase = nil, nil, 0
	}
	if m.node == nil {
		n, term := s.settledLeader(m.from)
		if n == nil {
			return nil
		}
		m.node, m.term = n, term
	}
	if m.w != nil {
		select {
		case err := <-m.w.Done():
			m.w = nil
			if err != nil {
				m.node, m.phase = nil, 0
				return nil
			}
		default:
			return nil
		}
	}
	d, err := decision(m.node.st, m.from, m.lp, m.to)
	if err != nil {
		return err
	}
	if d != 0 {
		return s.concluded()
	}
	return s.decide('a')
}
