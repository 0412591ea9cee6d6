package cluster

import "fmt"

// Status is a node's view of the cluster: its members and, for every group
// it has a replica of, who leads it and how far this replica has applied.
// `partita cluster status` prints it (GET /_partita/cluster).
type Status struct {
	Node      string           `json:"node"` // this node's id, 16 hex digits
	Addr      string           `json:"addr"` // its cluster address
	Members   []MemberStatus   `json:"members"`
	Keyspaces []KeyspaceStatus `json:"keyspaces"`
}

// MemberStatus is one member of the join list.
type MemberStatus struct {
	Node string `json:"node"`
	Addr string `json:"addr"`
}

// KeyspaceStatus is this node's replica of one keyspace's group.
type KeyspaceStatus struct {
	ID      uint64 `json:"id"`
	Leader  string `json:"leader"`  // the leader's node id as this node knows it; "" when none is known
	Leading bool   `json:"leading"` // this node is the settled leader
	Term    uint64 `json:"term"`
	Applied uint64 `json:"applied"` // the last log index applied here
	LSN     uint64 `json:"lsn"`     // the largest LSN applied here
	Stable  uint64 `json:"stable"`  // the stable LSN applied here
}

func nodeHex(id uint64) string { return fmt.Sprintf("%016x", id) }

// Status returns the node's view of the cluster.
func (n *Node) Status() Status {
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
		if l.ID != 0 {
			ks.Leader = nodeHex(l.ID)
		}
		st.Keyspaces = append(st.Keyspaces, ks)
	}
	return st
}
