package cluster

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/partitadb/partita/internal/replication"
)

// Status is a node's view of the cluster: its members and, for every group
// it has a replica of, who leads it and how far this replica has applied.
// `partita cluster status` prints it (GET /_partita/cluster).
type Status struct {
	Node string `json:"node"` // this node's id, 16 hex digits
	Addr string `json:"addr"` // its cluster address
	// Error, in a cluster-wide answer (ClusterStatus), says why the
	// member did not answer the node asked; its other fields are then
	// empty but Node and Addr.
	Error     string           `json:"error,omitempty"`
	Members   []MemberStatus   `json:"members"`
	Keyspaces []KeyspaceStatus `json:"keyspaces"`
}

// MemberStatus is one member of the join list.
type MemberStatus struct {
	Node string `json:"node"`
	Addr string `json:"addr"`
	// Live, in the asked node's view of a cluster-wide answer, is whether
	// the member answered it within statusWait (the node itself is live);
	// Error says why not. Unset in a node's own view.
	Live  *bool  `json:"live,omitempty"`
	Error string `json:"error,omitempty"`
}

// ReplicaProgress is one voter's replication of a keyspace as its leader
// tracks it (replication.Progress).
type ReplicaProgress struct {
	Node   string `json:"node"`
	Match  uint64 `json:"match"`  // the last log index the leader knows it has
	Lag    uint64 `json:"lag"`    // committed entries its log lacks, if Known
	Known  bool   `json:"known"`  // false: the leader has not learnt yet where its log stands
	State  string `json:"state"`  // probe, replicate or snapshot
	Active bool   `json:"active"` // heard from within an election timeout
}

// KeyspaceStatus is this node's replica of one keyspace's group.
type KeyspaceStatus struct {
	ID       uint64   `json:"id"`
	Replicas []string `json:"replicas"` // the group's voters, node ids in order ("Placement on a subset")
	Leader   string   `json:"leader"`   // the leader's node id as this node knows it; "" when none is known
	Leading  bool     `json:"leading"`  // this node is the settled leader
	Term     uint64   `json:"term"`
	Applied  uint64   `json:"applied"` // the last log index applied here
	LSN      uint64   `json:"lsn"`     // the largest LSN applied here
	Stable   uint64   `json:"stable"`  // the stable LSN applied here
	// Commit and Progress are reported by the group's Raft leader only:
	// its commit index and every voter's replication, in node order.
	Commit   uint64            `json:"commit,omitempty"`
	Progress []ReplicaProgress `json:"progress,omitempty"`
	// Digest is filled only when asked (`partita cluster status --digest`;
	// GET /_partita/cluster with x-partita-cluster-digest: true): it reads
	// the whole keyspace.
	Digest *DigestStatus `json:"digest,omitempty"`
}

// DigestStatus is a hash of this node's replica of a keyspace
// (replication.Host.Digest): replicas that report the same applied index
// must report the same hash and key count, or they have diverged.
type DigestStatus struct {
	Applied uint64 `json:"applied"` // the last log index applied to the state hashed
	SHA256  string `json:"sha256"`  // hex SHA-256 of the keyspace's keys and values
	Keys    uint64 `json:"keys"`    // how many keys the keyspace holds
}

func nodeHex(id uint64) string { return fmt.Sprintf("%016x", id) }

// Status returns the node's view of the cluster. With digest, each
// keyspace's status carries its digest, read from the store (a scan of
// every keyspace: for an operator's check, not for polling). Errors: only
// with digest, the store's refusal or ctx's error.
func (n *Node) Status(ctx context.Context, digest bool) (Status, error) {
	st := Status{Node: nodeHex(n.self.ID), Addr: n.self.Addr, Members: []MemberStatus{}, Keyspaces: []KeyspaceStatus{}}
	for _, m := range n.members {
		st.Members = append(st.Members, MemberStatus{Node: nodeHex(m.ID), Addr: m.Addr})
	}
	for _, g := range n.host.Groups() {
		l, err := n.host.Leader(g)
		if err != nil {
			continue // removed meanwhile
		}
		ks := KeyspaceStatus{ID: g, Leading: l.Settled, Term: l.Term, Applied: l.Applied, LSN: l.LSN, Stable: l.Stable}
		for _, v := range n.placement.Voters(g) {
			ks.Replicas = append(ks.Replicas, nodeHex(v))
		}
		if l.ID != 0 {
			ks.Leader = nodeHex(l.ID)
		}
		if commit, ps, ok, err := n.host.Progress(g); err == nil && ok {
			ks.Commit = commit
			for _, p := range ps {
				ks.Progress = append(ks.Progress, ReplicaProgress{Node: nodeHex(p.Node), Match: p.Match, Lag: p.Lag, Known: p.Known, State: p.State, Active: p.Active})
			}
		}
		if digest {
			d, err := n.host.Digest(ctx, g)
			switch {
			case errors.Is(err, replication.ErrNoGroup):
				continue // removed meanwhile
			case err != nil:
				return Status{}, fmt.Errorf("cluster: keyspace %d: %w", g, err)
			}
			ks.Digest = &DigestStatus{Applied: d.Applied, SHA256: hex.EncodeToString(d.Sum[:]), Keys: d.Keys}
		}
		st.Keyspaces = append(st.Keyspaces, ks)
	}
	return st, nil
}

// DigestMismatch is a keyspace whose replicas, at the same applied index,
// hold different data: they have diverged.
type DigestMismatch struct {
	Keyspace uint64
	Applied  uint64                  // the log index the replicas share
	Digests  map[string]DigestStatus // node id → its replica's digest
}

// String names the keyspace, the index and each node's digest, in node
// order.
func (m DigestMismatch) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "keyspace %d: replicas differ at applied index %d:", m.Keyspace, m.Applied)
	for _, node := range slices.Sorted(maps.Keys(m.Digests)) {
		d := m.Digests[node]
		fmt.Fprintf(&b, " node %s sha256 %s (%d keys);", node, d.SHA256, d.Keys)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// CompareDigests compares the digests in views (nodes' statuses asked
// with digest) and returns every keyspace whose replicas at the same
// applied index report different digests, in keyspace and index order.
// Replicas at different indexes are not compared (one has applied more);
// keyspaces without digests are skipped.
func CompareDigests(views []Status) []DigestMismatch {
	type at struct{ keyspace, applied uint64 }
	seen := map[at]map[string]DigestStatus{}
	for _, v := range views {
		for _, k := range v.Keyspaces {
			if k.Digest == nil {
				continue
			}
			a := at{k.ID, k.Digest.Applied}
			if seen[a] == nil {
				seen[a] = map[string]DigestStatus{}
			}
			seen[a][v.Node] = *k.Digest
		}
	}
	var out []DigestMismatch
	for a, ds := range seen {
		var first *DigestStatus
		for _, d := range ds {
			if first == nil {
				first = &d
			} else if d.SHA256 != first.SHA256 || d.Keys != first.Keys {
				out = append(out, DigestMismatch{Keyspace: a.keyspace, Applied: a.applied, Digests: ds})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b DigestMismatch) int {
		if c := cmp.Compare(a.Keyspace, b.Keyspace); c != 0 {
			return c
		}
		return cmp.Compare(a.Applied, b.Applied)
	})
	return out
}
