package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// TestPlacement: every keyspace has min(R, N) voters, sorted, the same
// however the members are listed; consecutive keyspaces go round the
// members evenly; Holds agrees with the voters.
func TestPlacement(t *testing.T) {
	members := []uint64{40, 10, 30, 20, 50}
	for _, r := range []int{0, 1, 2, 3, 5, 7} {
		p := NewPlacement(members, r)
		rev := slices.Clone(members)
		slices.Reverse(rev)
		q := NewPlacement(rev, r)
		want := r
		if r < 1 || r > len(members) {
			want = len(members)
		}
		held := map[uint64]int{}
		for ks := uint64(1); ks <= 100; ks++ {
			v := p.Voters(ks)
			if len(v) != want || !slices.IsSorted(v) || len(slices.Compact(slices.Clone(v))) != want {
				t.Fatalf("R=%d: Voters(%d) = %v, want %d distinct, sorted", r, ks, v, want)
			}
			if !slices.Equal(v, q.Voters(ks)) {
				t.Fatalf("R=%d: Voters(%d) = %v, %v with the members in another order", r, ks, v, q.Voters(ks))
			}
			for _, m := range v {
				held[m]++
				if !p.Holds(m, ks) {
					t.Fatalf("R=%d: Holds(%d, %d) = false, but it is a voter", r, m, ks)
				}
			}
		}
		for _, m := range members {
			if held[m] != 100*want/len(members) {
				t.Errorf("R=%d: member %d holds %d of 100 keyspaces, want %d", r, m, held[m], 100*want/len(members))
			}
		}
	}
}

// TestRecordPlacement: the first member to start records the cluster's
// placement; a member started with the same one starts, one started with
// another --replicas is refused with ErrPlacementChanged, naming the
// recorded number, and other members with ErrMembersChanged.
func TestRecordPlacement(t *testing.T) {
	e := startSingle(t, t.TempDir())
	cli := e.Client()
	ctx := opCtx(t)
	members := []uint64{1, 2, 3, 4, 5}
	if err := recordPlacement(ctx, cli, NewPlacement(members, 3), nil); err != nil {
		t.Fatalf("first record: %v", err)
	}
	if err := recordPlacement(ctx, cli, NewPlacement(members, 3), nil); err != nil {
		t.Fatalf("the same placement again: %v", err)
	}
	err := recordPlacement(ctx, cli, NewPlacement(members, 5), nil)
	if !errors.Is(err, ErrPlacementChanged) || !strings.Contains(err.Error(), "--replicas 3") {
		t.Fatalf("another --replicas: %v, want ErrPlacementChanged naming --replicas 3", err)
	}
	// Other members: the --join list is named, not --replicas (a bug hunt's
	// join list of two of the three members was told to use --replicas 3,
	// which it did already: clamped to its two members).
	for _, ms := range [][]uint64{members[:4], members[:2]} {
		err := recordPlacement(ctx, cli, NewPlacement(ms, 3), nil)
		if !errors.Is(err, ErrMembersChanged) || !strings.Contains(err.Error(), "--join") || strings.Contains(err.Error(), "--replicas") {
			t.Fatalf("members %v: %v, want ErrMembersChanged naming --join", ms, err)
		}
	}
}

// TestCheckKeys: a member whose account keys differ from the others' is
// told so at start, naming them; members with the same keys are not.
func TestCheckKeys(t *testing.T) {
	e := startSingle(t, t.TempDir())
	cli := e.Client()
	ctx := opCtx(t)
	var buf bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&buf, nil))
	secret := []byte("a-cluster-secret-of-some-length")
	same := KeysFingerprint(secret, "master", "")
	for _, id := range []uint64{1, 2} {
		if err := checkKeys(ctx, cli, id, same, lg); err != nil {
			t.Fatal(err)
		}
	}
	if buf.Len() != 0 {
		t.Fatalf("members with the same keys: %s", buf.String())
	}
	if err := checkKeys(ctx, cli, 3, KeysFingerprint(secret, "another", ""), lg); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "differ") || !strings.Contains(got, nodeHex(1)) || !strings.Contains(got, nodeHex(2)) {
		t.Fatalf("a member with another key: %q, want an error naming members 1 and 2", got)
	}
	if KeysFingerprint(secret, "master", "") == KeysFingerprint(secret, "master", "ro") {
		t.Error("the read-only key does not count")
	}
}

// TestRecordConsistency: the first member to start records the account's
// default consistency level; a member started with the same one (case
// aside) starts, one started with another is refused with
// ErrConsistencyChanged naming the recorded level (a cluster hunt: a member
// restarted without --consistency served the account at Session while the
// others served it at Strong).
func TestRecordConsistency(t *testing.T) {
	e := startSingle(t, t.TempDir())
	cli := e.Client()
	ctx := opCtx(t)
	if err := recordConsistency(ctx, cli, "Strong"); err != nil {
		t.Fatalf("first record: %v", err)
	}
	if err := recordConsistency(ctx, cli, "strong"); err != nil {
		t.Fatalf("the same level again: %v", err)
	}
	err := recordConsistency(ctx, cli, "Session")
	if !errors.Is(err, ErrConsistencyChanged) || !strings.Contains(err.Error(), "--consistency Strong") {
		t.Fatalf("another --consistency: %v, want ErrConsistencyChanged naming --consistency Strong", err)
	}
}
