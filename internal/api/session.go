package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
)

// consistencyStrength orders the Cosmos DB consistency levels, strongest
// first being the largest.
var consistencyStrength = map[string]int{
	"eventual": 1, "consistentprefix": 2, "session": 3, "boundedstaleness": 4, "strong": 5,
}

// checkRead applies a read's consistency headers. x-ms-consistency-level
// may relax the account's default level but not strengthen it (400, as
// Cosmos DB answers). On one node every level reads the latest committed
// data. x-ms-session-token lists the positions a session has seen, one per
// partition key range ("<range>:<version>#<lsn>[#<region>=<lsn>…]", comma
// separated); a read whose session has seen a position this node has not
// reached gets 404/1002 (ReadSessionNotAvailable), the answer a replica
// behind the session gives. On one node that only happens to a token from
// another server or an older data directory. In a cluster a session read
// also waits for the node's own session (checkNodeSession), and the
// request it returns carries the positions waited for to the engine's
// read, which checks them again in the keyspaces it reads
// (engine.WithSession; SessionBehind, served again in forward).
func (h *Handler) checkRead(r *http.Request) (*http.Request, error) {
	if v := strings.TrimSpace(r.Header.Get("x-ms-consistency-level")); v != "" {
		want, ok := consistencyStrength[strings.ToLower(v)]
		if !ok {
			return r, status.BadRequest("invalid x-ms-consistency-level %q: want Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual", v)
		}
		if want > consistencyStrength[strings.ToLower(h.cfg.Consistency)] {
			return r, status.BadRequest("the requested consistency level %s is stronger than the account's default consistency level %s", v, h.cfg.Consistency)
		}
	}
	var toks []engine.SessionToken
	if v := strings.TrimSpace(r.Header.Get("x-ms-session-token")); v != "" {
		var err error
		if toks, err = sessionTokens(v); err != nil {
			return r, err
		}
		if !h.sessionAvailable(r, toks) {
			return r, status.Newf(http.StatusNotFound, "The read session is not available for the input session token %.100q: this server has not reached it (the token comes from another server, an older data directory, or a container deleted and created again under the same name: drop the token)", v).
				WithSub(status.SubNotFoundReadSessionNotAvailable)
		}
	}
	// NB: a client's token may lag the writes it made through this node.
	// The Python SDK v3 takes no token from a delete's answer (it files a
	// token under the response body's _self, and a delete has no body), so
	// the read after a forwarded delete named the position before it and,
	// through a follower, found the item (the Python tests against a
	// cluster). The node's own session covers such writes too.
	own, err := h.checkNodeSession(r)
	if err != nil {
		return r, err
	}
	if !h.cfg.Replicated {
		// One node's keyspaces do not lag its catalog: what the wait
		// found reached stays reached wherever the read looks.
		return r, nil
	}
	toks = append(toks, own...)
	return r.WithContext(engine.WithSession(r.Context(), toks, h.feedSession(r))), nil
}

// checkNodeSession applies, in a cluster, the node's own session to a
// session read, with or without a session token (nodesession.go): it
// waits, as for a token, until this node has applied the writes it
// answered for the container, and answers 404/1002 (which the SDKs retry)
// if it does not within sessionWait. It returns the positions it waited
// for.
func (h *Handler) checkNodeSession(r *http.Request) ([]engine.SessionToken, error) {
	if !h.cfg.Replicated || h.readLevel(r) != consistencyStrength["session"] {
		return nil, nil
	}
	toks := h.nodeSession(r.PathValue("db"), r.PathValue("coll"))
	if len(toks) == 0 || h.sessionAvailable(r, toks) {
		return toks, nil
	}
	return nil, status.New(http.StatusNotFound, "The read session is not available: this node has not yet applied the writes it acknowledged; retry").
		WithSub(status.SubNotFoundReadSessionNotAvailable)
}

// feedSession reports whether r's session is a change feed's, reached when
// its keyspaces' stable LSNs reach it (engine.SessionOpts.Feed): on a
// replicated node only; on one node the stable LSN is the last.
func (h *Handler) feedSession(r *http.Request) bool {
	return h.cfg.Replicated && r.Header.Get(hdrAIM) != ""
}

// sessionWait bounds how long a session read on a replicated node waits
// for this node to apply what the session has seen (a follower is usually
// milliseconds behind its leader).
const sessionWait = 2 * time.Second

// sessionRecheck is how often a waiting session read checks again without
// being told that this node advanced (engine.Engine.Advanced): for what
// that does not signal, such as a range split since the token was issued.
const sessionRecheck = 10 * time.Millisecond

// sessionAvailable reports whether this node has reached every position of
// toks; on a replicated node it waits up to sessionWait for it, and for a
// change feed read until the positions are stable, which is as far as the
// feed shows. It checks again whenever the engine says this node's
// replicas advanced, rather than polling; only the first check syncs the
// catalog for a range it does not know (engine.SessionOpts).
func (h *Handler) sessionAvailable(r *http.Request, toks []engine.SessionToken) bool {
	db, coll := r.PathValue("db"), r.PathValue("coll")
	opts := engine.SessionOpts{Feed: h.feedSession(r)}
	ctx := r.Context()
	if h.eng.SessionAvailable(ctx, db, coll, toks, opts) {
		return true
	}
	opts.Synced = true
	if !h.cfg.Replicated {
		return false
	}
	deadline := time.NewTimer(h.waitSession)
	defer deadline.Stop()
	recheck := time.NewTimer(sessionRecheck)
	defer recheck.Stop()
	for {
		// Taken before the check, so an advance after it is not missed.
		advanced := h.eng.Advanced()
		if h.eng.SessionAvailable(ctx, db, coll, toks, opts) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-advanced:
		case <-recheck.C:
			recheck.Reset(sessionRecheck)
		}
	}
}

// sessionBound reports whether r is a session read carrying a session
// token: what it must see was written through a catalog current then, so
// it reads through a current one too.
func (h *Handler) sessionBound(r *http.Request) bool {
	return h.readLevel(r) == consistencyStrength["session"] && strings.TrimSpace(r.Header.Get("x-ms-session-token")) != ""
}

// linearizable reports whether r reads at a level that must see every
// write acknowledged before it (Strong, BoundedStaleness): the level it
// asks for, else the account's default.
func (h *Handler) linearizable(r *http.Request) bool {
	return h.readLevel(r) >= consistencyStrength["boundedstaleness"]
}

// readLevel returns the strength (consistencyStrength) of the level r reads
// at: the level it asks for, else the account's default.
func (h *Handler) readLevel(r *http.Request) int {
	v := strings.TrimSpace(r.Header.Get("x-ms-consistency-level"))
	if v == "" {
		v = h.cfg.Consistency
	}
	return consistencyStrength[strings.ToLower(v)]
}

// sessionTokens parses a session token list: each entry's range and global
// LSN.
func sessionTokens(v string) ([]engine.SessionToken, error) {
	var out []engine.SessionToken
	for _, tok := range strings.Split(v, ",") {
		tok = strings.TrimSpace(tok)
		rng, rest, ok := strings.Cut(tok, ":")
		if !ok || rng == "" {
			return nil, badSession(v)
		}
		parts := strings.Split(rest, "#")
		if len(parts) < 2 {
			return nil, badSession(v)
		}
		if _, err := strconv.ParseInt(parts[0], 10, 64); err != nil {
			return nil, badSession(v)
		}
		lsn, err := strconv.ParseUint(parts[1], 10, 64)
		if err != nil {
			return nil, badSession(v)
		}
		out = append(out, engine.SessionToken{RangeID: rng, LSN: lsn})
	}
	return out, nil
}

func badSession(v string) error {
	return status.BadRequest("The session token provided %.100q is invalid: want <range>:<version>#<lsn>, comma separated", v)
}
