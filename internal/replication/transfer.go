package replication

import (
	"errors"
	"fmt"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// ErrTransferRefused: a leadership transfer was not started, because this
// node does not lead the group, a transfer is under way, a proposal of
// this node waits, or the target is not a caught-up, recently active
// voter. Nothing changed.
var ErrTransferRefused = errors.New("replication: leadership transfer refused")

// TransferLeader asks group's Raft leader, this node, to hand leadership
// to node to (Raft's leadership transfer, thesis §3.10): it stops taking
// proposals and tells to to campaign at once, which it wins with a log as
// long as the leader's. The transfer is only started when it can end
// cleanly: this node is the settled leader, no proposal of its own is
// waiting (a leader that steps down could only tell its proposers that
// their outcome is unknown), and to is a voter that answered recently and
// has every entry. Meanwhile Leader reports this node as unsettled, so
// writes wait for the new leader (and are forwarded to it) instead of
// being refused; a transfer the target does not complete is abandoned by
// Raft after an election timeout.
func (h *Host) TransferLeader(group, to uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return ErrStopped
	}
	g, ok := h.groups[group]
	if !ok {
		return ErrNoGroup
	}
	if to == h.id {
		return fmt.Errorf("%w: node %x leads group %d already", ErrTransferRefused, to, group)
	}
	if !g.settled || g.soft.RaftState != raft.StateLeader {
		return fmt.Errorf("%w: not the settled leader of group %d", ErrTransferRefused, group)
	}
	if g.rn.BasicStatus().LeadTransferee != 0 {
		return fmt.Errorf("%w: group %d is transferring already", ErrTransferRefused, group)
	}
	if len(g.pending) > 0 {
		return fmt.Errorf("%w: group %d has %d proposals waiting", ErrTransferRefused, group, len(g.pending))
	}
	last, err := g.ls.LastIndex()
	if err != nil {
		return err
	}
	ready := false
	g.rn.WithProgress(func(id uint64, typ raft.ProgressType, pr tracker.Progress) {
		if id == to && typ == raft.ProgressTypePeer && pr.RecentActive && pr.Match == last {
			ready = true
		}
	})
	if !ready {
		return fmt.Errorf("%w: node %x is not a caught-up, active voter of group %d", ErrTransferRefused, to, group)
	}
	if !h.underRaft(func() { g.rn.TransferLeader(to) }) {
		return ErrStopped
	}
	h.nudge()
	return nil
}

// transferring reports whether g's leader (this node) is handing over its
// leadership. h.mu is held.
func (g *group) transferring() bool {
	return g.soft.RaftState == raft.StateLeader && g.rn.BasicStatus().LeadTransferee != 0
}
