package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// StatusPath is the cluster listener's route of a node's own view (GET;
// with the header x-partita-cluster-digest: true, its digests too).
const StatusPath = "/_partita/cluster/status"

// hdrDigest asks StatusPath for digests, as the API's header of the same
// name asks GET /_partita/cluster.
const hdrDigest = "x-partita-cluster-digest"

// How long the asked node waits for a member's view: a member that does
// not answer within statusWait is reported not live. With digests, each
// member scans all its data first.
const (
	statusWait = 3 * time.Second
	digestWait = 5 * time.Minute
)

// maxStatusBody bounds a member's view (a few hundred bytes a keyspace).
const maxStatusBody = 16 << 20

// ClusterStatus gathers every member's view (Status), asking the others
// over the cluster listener at once: this node's first, then the others
// in member order. A member that does not answer within statusWait
// (digestWait with digest) is reported by its id, address and Error; in
// this node's view every member is marked Live or not, with the error.
// Liveness is therefore as this node sees it: a member cut off from this
// node alone shows as not live here.
//
// Error: only this node's own view failing (its digests; ctx).
func (n *Node) ClusterStatus(ctx context.Context, digest bool) ([]Status, error) {
	views := make([]Status, len(n.members))
	var (
		wg     sync.WaitGroup
		ownErr error
	)
	for i, m := range n.members {
		wg.Go(func() {
			if m.ID == n.self.ID {
				views[i], ownErr = n.Status(ctx, digest)
				return
			}
			st, err := n.memberStatus(ctx, m, digest)
			if err != nil {
				st = Status{Node: nodeHex(m.ID), Addr: m.Addr, Error: err.Error(), Members: []MemberStatus{}, Keyspaces: []KeyspaceStatus{}}
			}
			views[i] = st
		})
	}
	wg.Wait()
	if ownErr != nil {
		return nil, ownErr
	}
	out := make([]Status, 0, len(views))
	for i, m := range n.members {
		if m.ID == n.self.ID {
			out = append(out, views[i])
		}
	}
	own := &out[0]
	for i, m := range n.members {
		if m.ID != n.self.ID {
			out = append(out, views[i])
		}
		for j := range own.Members {
			if own.Members[j].Node == nodeHex(m.ID) {
				live := views[i].Error == ""
				own.Members[j].Live = &live
				own.Members[j].Error = views[i].Error
			}
		}
	}
	return out, nil
}

// memberStatus asks member m for its own view.
func (n *Node) memberStatus(ctx context.Context, m Member, digest bool) (Status, error) {
	var st Status
	wait := statusWait
	if digest {
		wait = digestWait
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+m.Addr+StatusPath, nil)
	if err != nil {
		return st, err
	}
	if digest {
		req.Header.Set(hdrDigest, "true")
	}
	_, data, err := peerCall(n.client, req, maxStatusBody)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("a malformed view: %w", err)
	}
	if st.Node != nodeHex(m.ID) {
		return st, fmt.Errorf("answered as node %s", st.Node)
	}
	return st, nil
}

// serveStatus serves this node's own view to another member (the cluster
// listener's mutual TLS authenticated it).
func (n *Node) serveStatus(w http.ResponseWriter, r *http.Request) {
	digest := false
	if v := r.Header.Get(hdrDigest); v != "" {
		var err error
		if digest, err = strconv.ParseBool(v); err != nil {
			http.Error(w, fmt.Sprintf("%s: %q: want true or false", hdrDigest, v), http.StatusBadRequest)
			return
		}
	}
	st, err := n.Status(r.Context(), digest)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	data, err := json.Marshal(st)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}
