package engine

import (
	"fmt"
	"testing"

	"github.com/partitadb/partita/internal/replica"
)

// lagHost is a replica.Host whose keyspaces in upTo have made visible only
// the LSNs up to the value, as a follower's copies behind their leaders.
type lagHost struct {
	*replica.Local
	upTo map[uint64]uint64
}

func (h *lagHost) Replica(id uint64) (replica.Replica, error) {
	r, err := h.Local.Replica(id)
	if n, ok := h.upTo[id]; ok && err == nil {
		return lagReplica{r, n}, nil
	}
	return r, err
}

type lagReplica struct {
	replica.Replica
	upTo uint64
}

func (r lagReplica) Visible(lsn uint64) bool { return lsn <= r.upTo }

// TestSessionAfterSplit: a session token naming a range since split is
// reached only when every range descended from it has reached it, each in
// its keyspace. One descendant's keyspace past the token does not vouch
// for another's behind it: the kill loop read through a restarted node a
// value 90 writes old, with the token of the write, from a separated
// child's keyspace still catching up, while its sibling's keyspace had
// passed the token.
func TestSessionAfterSplit(t *testing.T) {
	var host *lagHost
	e := engineOnHost(t, func(local *replica.Local) replica.Host {
		host = &lagHost{Local: local, upTo: map[uint64]uint64{}}
		return host
	}, Throughput{Manual: 400})
	c, err := e.cat.Container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	if rs := c.Map().Ranges(); len(rs) != 1 || rs[0].ID != "0" {
		t.Fatalf("ranges %v, want range 0 alone", rs)
	}
	for i := range 40 {
		if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Upsert, PK: pkN(i), Body: fmt.Appendf(nil, `{"id":"a","pk":"p%d"}`, i)}); err != nil {
			t.Fatal(err)
		}
	}
	children, err := e.SplitRange(t.Context(), "db", "k", "0")
	if err != nil {
		t.Fatal(err)
	}
	if len(children) != 2 {
		t.Fatalf("split into %v", children)
	}
	c, err = e.cat.Container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	// Give the second child a keyspace of its own, as a separation does.
	moved := children[1].ID
	from, _ := c.Keyspace(moved)
	if other, _ := c.Keyspace(children[0].ID); other == from {
		_, to, err := e.cat.BeginMove("db", "k", c.Internal, moved, from, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c, err = e.cat.MoveRange("db", "k", c.Internal, moved, from, to); err != nil {
			t.Fatal(err)
		}
	}
	ks0, _ := c.Keyspace(children[0].ID)
	ks1, _ := c.Keyspace(moved)
	if ks0 == ks1 {
		t.Fatalf("the children share keyspace %d", ks0)
	}
	tok := []SessionToken{{RangeID: "0", LSN: 500}}
	for _, c := range []struct {
		upTo0, upTo1 uint64
		want         bool
	}{
		{1000, 10, false}, // the moved child's keyspace is behind
		{10, 1000, false}, // the other child's is
		{499, 499, false},
		{500, 500, true},
		{1000, 600, true},
	} {
		host.upTo[ks0], host.upTo[ks1] = c.upTo0, c.upTo1
		if got := e.SessionAvailable("db", "k", tok); got != c.want {
			t.Errorf("keyspaces %d and %d visible up to %d and %d: token 0#500 available = %v, want %v", ks0, ks1, c.upTo0, c.upTo1, got, c.want)
		}
		// A child's own token asks its keyspace alone.
		own := []SessionToken{{RangeID: moved, LSN: 500}}
		if got := e.SessionAvailable("db", "k", own); got != (c.upTo1 >= 500) {
			t.Errorf("keyspace %d visible up to %d: token %s#500 available = %v", ks1, c.upTo1, moved, got)
		}
	}
}
