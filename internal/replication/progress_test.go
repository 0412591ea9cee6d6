package replication

import (
	"fmt"
	"testing"
	"time"
)

// TestProgress: the leader reports every voter's progress — caught up and
// active while all run; a follower stopped falls behind by the entries
// committed since (Lag) and is no longer active once an election timeout
// passes without word from it. A follower reports none.
func TestProgress(t *testing.T) {
	net := &chanNet{inboxes: map[uint64]chan Message{}}
	nodes := startLiveNodes(t, net)
	defer func() {
		for _, n := range nodes {
			if n.h != nil {
				n.stop(t)
			}
		}
	}()
	leader := awaitLeader(t, nodes)
	write := func(i int) {
		t.Helper()
		var first uint64
		b := leader.r.NewBatch(false)
		defer b.Close()
		defer func() { leader.r.ReleaseLSN(first) }()
		if _, err := leader.r.NextLSN(b, &first); err != nil {
			t.Fatal(err)
		}
		b.Set(fmt.Appendf(nil, "\x02k%d", i), []byte("v"))
		if err := leader.r.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		write(i)
	}
	// poll waits until cond holds of the leader's report, 20 s at most.
	poll := func(what string, cond func(commit uint64, ps []Progress) bool) (uint64, []Progress) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			commit, ps, ok, err := leader.h.Progress(1)
			if err != nil || !ok {
				t.Fatalf("the leader's Progress: ok %v, err %v", ok, err)
			}
			if cond(commit, ps) {
				return commit, ps
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20 s; last report: commit %d, %+v", what, commit, ps)
			}
		}
	}
	_, ps := poll("every voter caught up and active", func(_ uint64, ps []Progress) bool {
		for _, p := range ps {
			if p.Lag != 0 || !p.Active || p.State != "replicate" || !p.Known {
				return false
			}
		}
		return len(ps) == 3
	})
	// Active stays set for live followers at every moment: Raft clears
	// RecentActive at each election timeout until the next answer.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		_, ps, ok, err := leader.h.Progress(1)
		if err != nil || !ok {
			t.Fatalf("the leader's Progress: ok %v, err %v", ok, err)
		}
		for _, p := range ps {
			if !p.Active {
				t.Fatalf("node %d, live, reported not active: %+v", p.Node, ps)
			}
		}
	}
	for i, p := range ps {
		if p.Node != uint64(i+1) {
			t.Errorf("progress %d is node %d's; want the voters in node order", i, p.Node)
		}
	}
	var follower *liveNode
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	if _, _, ok, err := follower.h.Progress(1); ok || err != nil {
		t.Errorf("a follower's Progress: ok %v, err %v; want no report", ok, err)
	}
	if _, _, _, err := leader.h.Progress(99); err == nil {
		t.Error("Progress of a group the host does not have: no error")
	}

	follower.crash(t, net)
	follower.h = nil
	before, _ := poll("the commit index read", func(uint64, []Progress) bool { return true })
	for i := 5; i < 12; i++ {
		write(i)
	}
	poll("the stopped follower behind and inactive", func(commit uint64, ps []Progress) bool {
		for _, p := range ps {
			switch {
			case p.Node == follower.id:
				if !p.Known || p.Lag < commit-before || p.Lag < 7 || p.Active {
					return false
				}
			case p.Lag != 0 || !p.Active:
				return false
			}
		}
		return true
	})
}
