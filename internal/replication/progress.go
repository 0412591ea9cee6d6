package replication

import (
	"cmp"
	"slices"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// Progress is one voter's replication of a group, as the group's leader
// tracks it (Raft's progress tracker).
type Progress struct {
	Node uint64
	// Match is the last log index the leader knows to be in the voter's
	// log (durably, for a follower: it acknowledged it).
	Match uint64
	// Lag is how many committed entries the voter's log lacks (the
	// leader's commit index less Match, at least 0), when Known.
	Lag uint64
	// Known is false while the leader has not learnt where the voter's
	// log stands (a leader new in its term starts every follower at Match
	// 0, probing, until it answers): Match and Lag mean nothing then.
	Known bool
	// State is how the leader replicates to it: "probe" (finding where
	// its log matches), "replicate" (streaming appends) or "snapshot"
	// (sending it a snapshot).
	State string
	// Active is whether the leader heard from it within the last
	// election timeout (CheckQuorum's activity; the leader itself always).
	Active bool
}

// Progress returns the group's commit index and its voters' progress, in
// node order, when this node leads the group; ok is false when it does
// not (only a leader tracks its followers).
func (h *Host) Progress(group uint64) (commit uint64, ps []Progress, ok bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, found := h.groups[group]
	if !found {
		return 0, nil, false, ErrNoGroup
	}
	if g.soft.RaftState != raft.StateLeader {
		return 0, nil, false, nil
	}
	commit = g.rn.BasicStatus().HardState.GetCommit()
	g.rn.WithProgress(func(id uint64, typ raft.ProgressType, pr tracker.Progress) {
		if typ != raft.ProgressTypePeer {
			return // a learner: not a voter
		}
		// Raft's RecentActive is cleared at every election timeout
		// (CheckQuorum) until the peer's next answer, so it read "no"
		// for a moment now and then of live followers (a cluster
		// operations hunt: 1 sample of 40): a message of the group
		// from the peer within an election timeout counts too.
		heard, ok := g.heard[id]
		recent := ok && h.ticks-heard <= uint64(h.cfg.ElectionTicks)
		p := Progress{Node: id, Match: pr.Match, State: progressState(pr.State), Active: pr.RecentActive || recent || id == h.id,
			Known: pr.Match > 0 || pr.State != tracker.StateProbe}
		if p.Known && commit > pr.Match {
			p.Lag = commit - pr.Match
		}
		ps = append(ps, p)
	})
	slices.SortFunc(ps, func(a, b Progress) int { return cmp.Compare(a.Node, b.Node) })
	return commit, ps, true, nil
}

func progressState(s tracker.StateType) string {
	switch s {
	case tracker.StateProbe:
		return "probe"
	case tracker.StateReplicate:
		return "replicate"
	case tracker.StateSnapshot:
		return "snapshot"
	}
	return s.String()
}
