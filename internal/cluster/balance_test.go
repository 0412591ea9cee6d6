package cluster

import (
	"math/rand/v2"
	"slices"
	"testing"
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
