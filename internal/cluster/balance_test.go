package cluster

import (
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	raftpb "go.etcd.io/raft/v3/raftpb"

	"github.com/partitadb/partita/internal/replication"
)

func TestLeaderMoves(t *testing.T) {
	members := []uint64{1, 2, 3}
	for _, tc := range []struct {
		name    string
		self    uint64
		leaders map[uint64]uint64
		want    []leaderMove
	}{
		{"balanced", 1, map[uint64]uint64{10: 1, 11: 2, 12: 3, 13: 1}, nil},
		{"one ahead is balanced", 1, map[uint64]uint64{10: 1, 11: 1, 12: 2, 13: 3}, nil},
		{"all on self: the fewest first, ties by id", 1, map[uint64]uint64{10: 1, 11: 1, 12: 1},
			[]leaderMove{{10, 2}, {11, 2}, {12, 2}, {10, 3}, {11, 3}, {12, 3}}},
		{"only to members two behind", 1, map[uint64]uint64{10: 1, 11: 1, 12: 1, 13: 2, 14: 2},
			[]leaderMove{{10, 3}, {11, 3}, {12, 3}}},
		{"another node's excess is its own to shed", 2, map[uint64]uint64{10: 1, 11: 1, 12: 1, 13: 2}, nil},
		{"unknown leaders count for no one", 1, map[uint64]uint64{10: 1, 11: 0, 12: 0, 13: 9}, nil},
		{"not a member", 9, map[uint64]uint64{10: 9, 11: 9, 12: 9}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := leaderMoves(tc.self, members, tc.leaders); !slices.Equal(got, tc.want) {
				t.Errorf("leaderMoves = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLeaderMovesConverge applies the first proposed move of a random node
// until none is proposed, from random starting spreads: it must end with
// no node leading two more groups than another, in a bounded number of
// moves (each reduces the spread), never moving a group back and forth.
func TestLeaderMovesConverge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		members := []uint64{1, 2, 3, 4, 5}[:2+rng.IntN(4)]
		leaders := map[uint64]uint64{}
		for g := range uint64(1 + rng.IntN(40)) {
			leaders[g] = members[rng.IntN(len(members))]
		}
		moves := 0
		for {
			var mv []leaderMove
			for _, i := range rng.Perm(len(members)) {
				if mv = leaderMoves(members[i], members, leaders); len(mv) > 0 {
					break
				}
			}
			if len(mv) == 0 {
				break
			}
			leaders[mv[0].group] = mv[0].to
			if moves++; moves > len(leaders) {
				t.Fatalf("%d members, %d groups: still moving after %d moves", len(members), len(leaders), moves)
			}
		}
		count := map[uint64]int{}
		for _, l := range leaders {
			count[l]++
		}
		lo, hi := len(leaders), 0
		for _, m := range members {
			lo, hi = min(lo, count[m]), max(hi, count[m])
		}
		if hi-lo > 1 {
			t.Fatalf("%d members, %d groups: ends with %v", len(members), len(leaders), count)
		}
	}
}

func TestDrainMoves(t *testing.T) {
	none := func(uint64) bool { return false }
	for _, tc := range []struct {
		name    string
		voters  []uint64
		leaders map[uint64]uint64
		want    []leaderMove
		skip    func(uint64) bool
	}{
		{"each group to the voter leading fewest", []uint64{1, 2, 3}, map[uint64]uint64{10: 1, 11: 1, 12: 1, 13: 2},
			[]leaderMove{{10, 3}, {11, 2}, {12, 3}}, none},
		{"nothing led", []uint64{1, 2, 3}, map[uint64]uint64{10: 2, 11: 3}, nil, none},
		{"a refusing voter left out", []uint64{1, 2, 3}, map[uint64]uint64{10: 1, 11: 1},
			[]leaderMove{{10, 2}, {11, 2}}, func(id uint64) bool { return id == 3 }},
		{"no other voter", []uint64{1, 2}, map[uint64]uint64{10: 1},
			nil, func(id uint64) bool { return id == 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := drainMoves(1, tc.voters, tc.leaders, tc.skip); !slices.Equal(got, tc.want) {
				t.Errorf("drainMoves = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRefusesTransferWhileLapsed: a node whose catalog is not current drops
// the order to campaign that completes a leadership transfer to it, and
// nothing else; once current, it takes it.
func TestRefusesTransferWhileLapsed(t *testing.T) {
	s := &SharedCatalog{epoch: time.Now().Add(-time.Minute)}
	n := &Node{shared: s, log: slog.New(slog.DiscardHandler)}
	if l := s.Lapsed(); l < 59*time.Second {
		t.Fatalf("never confirmed: lapsed %v, want since the start", l)
	}
	msg := func(typ raftpb.MessageType) replication.Message {
		return replication.Message{Group: 5, Raft: &raftpb.Message{Type: &typ}}
	}
	if !n.refuses(msg(raftpb.MsgTimeoutNow)) {
		t.Error("a lapsed node took a leadership transfer")
	}
	for _, typ := range []raftpb.MessageType{raftpb.MsgApp, raftpb.MsgHeartbeat, raftpb.MsgVote, raftpb.MsgPreVote} {
		if n.refuses(msg(typ)) {
			t.Errorf("a lapsed node dropped %v", typ)
		}
	}
	s.current.Store(int64(s.since() + time.Second))
	if l := s.Lapsed(); l != 0 {
		t.Fatalf("current: lapsed %v", l)
	}
	if n.refuses(msg(raftpb.MsgTimeoutNow)) {
		t.Error("a node with a current catalog refused a leadership transfer")
	}
	s.current.Store(int64(s.since() - refuseAfter/2))
	if n.refuses(msg(raftpb.MsgTimeoutNow)) {
		t.Errorf("lapsed for %v only (a node starting up): refused a leadership transfer", s.Lapsed())
	}
	if n.draining() {
		t.Error("a node with a current catalog drains")
	}
	s.current.Store(int64(s.since() - drainAfter))
	if !n.draining() {
		t.Errorf("lapsed for %v: not draining", s.Lapsed())
	}
}

// TestRefusalBackoff: a target that did not take a transfer is left out
// for 5 s, then twice as long each time again, at most a minute.
func TestRefusalBackoff(t *testing.T) {
	now := time.Now()
	var r refusal
	var waits []time.Duration
	for range 7 {
		r = r.again(now)
		waits = append(waits, r.wait)
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute, time.Minute}
	if !slices.Equal(waits, want) || !r.until.Equal(now.Add(time.Minute)) {
		t.Errorf("waits %v until %v, want %v until a minute on", waits, r.until.Sub(now), want)
	}
}
