package engine

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
)

// Session reads (docs/cluster.md, "Reads"). A session token names, per
// range, the LSN of the last write the session saw; a read under it must
// see that write. The API waits until this node has reached the tokens
// (SessionAvailable), outside any hold, then reads with the tokens in its
// context (WithSession); the read checks them again against the mapping
// of ranges to keyspaces it holds (readContainer), because that mapping
// may have changed since the wait: a range separated into a keyspace of
// its own whose copy here has not caught up, or a split this node's
// catalog learned of meanwhile. A read whose check fails reads nothing and
// answers SessionBehind, which the API serves again (waiting again).

// SessionAvailable reports whether every position of tokens is readable
// here: the write that took the token's LSN is visible in the range's
// keyspace (replica.Replica.Visible: on a follower, applied, which the
// largest LSN applied does not tell). A split range's token applies to
// every range descended from it, each of which must have reached it: a
// descendant still in the split range's keyspace shares its LSNs, and one
// separated into a keyspace of its own continues them from its cut, so it
// has reached any LSN issued before (its move applied). One descendant's
// keyspace does not vouch for another's: the session's write may be in
// any of them (the kill loop read a value 90 writes old through a
// restarted node whose copy of the item's keyspace lagged, while a
// sibling's had passed the token).
//
// A range this node's catalog does not know is one of two things: a
// range split off since the catalog last heard from the others (its id is
// at or above the container's next range id), for which the catalog is
// synced first (unless opts.Synced: a read waiting for its session syncs
// once, on its first check), or a range the container never had (a token
// from another server), compared with the container's most advanced
// keyspace. Before that sync, a token of a new range was taken for a
// foreign one and passed on another partition's keyspace, while the
// range's own lagged.
//
// With opts.Feed it is the change feed's check, which shows changes up to
// its keyspace's stable LSN: the keyspace's stable LSN must reach the
// tokens. On a follower it trails the last LSN applied until the leader
// publishes it (docs/cluster.md, "The engine in a cluster").
func (e *Engine) SessionAvailable(ctx context.Context, db, coll string, tokens []SessionToken, opts SessionOpts) bool {
	sees := sessionVisible
	if opts.Feed {
		sees = sessionStable
	}
	c, err := e.container(db, coll)
	if err != nil {
		return true // the request itself gets the 404
	}
	if !opts.Synced && e.cat.Shared() && slices.ContainsFunc(tokens, func(t SessionToken) bool { return unseenRange(c, t.RangeID) }) {
		if e.cat.Sync(ctx) != nil {
			return false
		}
		if c, err = e.container(db, coll); err != nil {
			return true
		}
	}
	return e.sessionReached(c, tokens, sees)
}

// SessionOpts qualifies a session check (SessionAvailable).
type SessionOpts struct {
	// Feed: the positions are a change feed read's, reached when they are
	// stable.
	Feed bool
	// Synced: the read checked before and synced the catalog then if it
	// had to; a range it still does not know is another server's.
	Synced bool
}

// sessionSees reports whether a replica has reached an LSN of a session.
type sessionSees func(replica.Replica, uint64) bool

func sessionVisible(rep replica.Replica, lsn uint64) bool { return rep.Visible(lsn) }

func sessionStable(rep replica.Replica, lsn uint64) bool { return lsn <= rep.StableLSN() }

// unseenRange reports whether id may name a range of c that c does not
// know yet: an id at or above the next one c would give.
func unseenRange(c *catalog.Container, id string) bool {
	n, err := strconv.Atoi(id)
	if err != nil || n < 0 {
		return false
	}
	_, known := c.Record(id)
	return !known && n >= c.NextRangeID
}

// cutsReached reports whether every replica here of a keyspace a
// separation filled for c's ranges has reached the separation's cut
// (checkSession). Always on a single node, whose replicas are its store.
func (e *Engine) cutsReached(c *catalog.Container) bool {
	if !e.cfg.Replicated {
		return true
	}
	for _, rec := range c.Ranges {
		if rec.Cut == 0 {
			continue
		}
		rep, err := e.host.Replica(rec.Keyspace)
		if err == nil && !rep.Visible(rec.Cut) {
			return false
		}
	}
	return true
}

// sessionReached reports whether every position of tokens is reached here,
// the ranges resolved to keyspaces through c (SessionAvailable).
func (e *Engine) sessionReached(c *catalog.Container, tokens []SessionToken, sees sessionSees) bool {
	reached := func(ks, lsn uint64) bool {
		rep, err := e.host.Replica(ks)
		return err == nil && sees(rep, lsn)
	}
	for _, tok := range tokens {
		if ks, ok := c.Keyspace(tok.RangeID); ok {
			if !reached(ks, tok.LSN) {
				return false
			}
			continue
		}
		var kss []uint64 // the keyspaces of the ranges descended from it
		for _, r := range c.Map().Ranges() {
			if slices.Contains(r.Parents, tok.RangeID) {
				if ks, _ := c.Keyspace(r.ID); !slices.Contains(kss, ks) {
					kss = append(kss, ks)
				}
			}
		}
		if len(kss) == 0 {
			// Not a range of this container: a foreign token, compared
			// with the most advanced keyspace.
			if !slices.ContainsFunc(c.Keyspaces(), func(ks uint64) bool { return reached(ks, tok.LSN) }) {
				return false
			}
			continue
		}
		for _, ks := range kss {
			if !reached(ks, tok.LSN) {
				return false
			}
		}
	}
	return true
}

// sessionKey holds a read's session in its context (WithSession).
type sessionKey struct{}

type readSession struct {
	tokens []SessionToken
	sees   sessionSees
}

// WithSession returns ctx carrying the session tokens a read must see
// (the client's and, in a cluster, the node's own), which the API has
// waited for (SessionAvailable, with SessionOpts.Feed when feed is set):
// the engine's reads under it check them again against the mapping of
// ranges to keyspaces they hold, and fail with SessionBehind if the
// mapping moved a range to a keyspace that has not reached them.
func WithSession(ctx context.Context, tokens []SessionToken, feed bool) context.Context {
	if len(tokens) == 0 {
		return ctx
	}
	s := readSession{tokens: tokens, sees: sessionVisible}
	if feed {
		s.sees = sessionStable
	}
	return context.WithValue(ctx, sessionKey{}, s)
}

// errSessionBehind fails a read, before it read anything, whose session
// tokens the keyspaces it holds have not reached, though the API found
// them reached a moment before: the mapping changed in between.
var errSessionBehind = errors.New("engine: the partition's keyspace here has not reached the read's session")

// SessionBehind reports whether err (from an engine read) failed because
// the keyspace it would read has not reached the read's session
// (WithSession). Nothing was read: waiting for the session again and
// serving the read again reads where the session's writes are.
func SessionBehind(err error) bool { return errors.Is(err, errSessionBehind) }

// checkSession fails with SessionBehind when ctx carries a session that the
// keyspaces c maps ranges to have not reached.
//
// In a cluster it fails so too, with or without a session, when a range c
// maps to a keyspace a separation filled has a replica here that has not
// reached the separation's cut (RangeRecord.Cut): it may lack part of the
// copy. A node resumed after a pause read a split child, separated
// meanwhile, from its replica of the new group before that replica had
// applied the copy, and answered it empty, 200 (a cluster hunt: a query
// continued through that node ended with 309 of 600 items).
func (e *Engine) checkSession(ctx context.Context, c *catalog.Container) error {
	s, ok := ctx.Value(sessionKey{}).(readSession)
	if (!ok || e.sessionReached(c, s.tokens, s.sees)) && e.cutsReached(c) {
		return nil
	}
	return status.New(http.StatusNotFound, "The read session is not available: the partition moved to replicas on this node that have not yet applied the session's writes; retry").
		WithSub(status.SubNotFoundReadSessionNotAvailable).Wrap(errSessionBehind)
}
