package api

import (
	"net/http"
	"strings"
	"sync"

	"github.com/partitadb/partita/internal/engine"
)

// The node's own session (docs/cluster.md, "Reads and consistency levels").
// A session read that carries no session token — @azure/cosmos sends one
// only when the client sets consistencyLevel "Session" itself, the Go SDK
// never — would read this node's applied state, which may lag a write the
// same client made through this node a moment before (a forwarded write is
// acknowledged once its leader has applied it). So each node remembers,
// per container, the session tokens of the writes it answered, and a
// session read waits for those, as for a token the client sent: read-your-
// writes for every client of one node. A read with a token waits for them
// too, since a client's token may miss its own writes (the Python SDK v3
// takes none from a delete's answer).

// nodeSessions holds, per container (by name, with the _rid it had, so a
// container created again under the name starts afresh), the largest LSN
// of each range among the session tokens of the writes this node
// answered.
type nodeSessions struct {
	mu sync.Mutex
	m  map[string]*containerSession // "db/coll"
	// pruneAt is the size of m at which the entries of containers that no
	// longer exist are dropped (prune): each container ever written
	// through the node stayed for good before (a soak hunt).
	pruneAt int
}

// minPruneAt is nodeSessions' smallest pruneAt.
const minPruneAt = 64

type containerSession struct {
	rid  string
	lsns map[string]uint64 // range id → LSN
}

// noteSession records the session token of the write r answered with (w's
// headers, whether the write ran here or was forwarded to its leader). It
// does nothing for a query (a POST too), whose token is only this node's
// position, or for a request another node forwarded here: that node keeps
// its clients' session.
func (h *Handler) noteSession(w http.ResponseWriter, r *http.Request) {
	db, coll := r.PathValue("db"), r.PathValue("coll")
	if db == "" || coll == "" || forwardedHere(r) || isQuery(r) || isTrue(r, hdrIsPlan) {
		return
	}
	v := strings.TrimSpace(responseHeader(w, "x-ms-session-token"))
	if v == "" {
		return
	}
	toks, err := sessionTokens(v)
	if err != nil {
		return
	}
	rid, err := h.eng.ContainerRID(db, coll)
	if err != nil {
		return
	}
	s := &h.sessions
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*containerSession{}
	}
	key := db + "/" + coll
	cs := s.m[key]
	if cs == nil || cs.rid != rid {
		cs = &containerSession{rid: rid, lsns: map[string]uint64{}}
		s.m[key] = cs
		if len(s.m) >= max(s.pruneAt, minPruneAt) {
			h.pruneSessionsLocked()
		}
	}
	for _, t := range toks {
		cs.lsns[t.RangeID] = max(cs.lsns[t.RangeID], t.LSN)
	}
}

// pruneSessionsLocked drops the entries of containers that no longer
// exist (or exist again under the name with another _rid), and sets the
// size at which to look again to twice what is left: amortised, a write
// pays nothing for it. The caller holds h.sessions.mu.
func (h *Handler) pruneSessionsLocked() {
	s := &h.sessions
	for key, cs := range s.m {
		db, coll, _ := strings.Cut(key, "/")
		if rid, err := h.eng.ContainerRID(db, coll); err != nil || rid != cs.rid {
			delete(s.m, key)
		}
	}
	s.pruneAt = 2 * len(s.m)
}

// nodeSession returns the session tokens of the writes this node answered
// for container db/coll (nil when none).
func (h *Handler) nodeSession(db, coll string) []engine.SessionToken {
	rid, err := h.eng.ContainerRID(db, coll)
	if err != nil {
		return nil
	}
	s := &h.sessions
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.m[db+"/"+coll]
	if cs == nil || cs.rid != rid {
		return nil
	}
	toks := make([]engine.SessionToken, 0, len(cs.lsns))
	for rng, lsn := range cs.lsns {
		toks = append(toks, engine.SessionToken{RangeID: rng, LSN: lsn})
	}
	return toks
}
