package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/throughput"
)

// ChangeFeed is a request for one page of a container's latest-version
// change feed.
type ChangeFeed struct {
	// Scope is the part of the container read: a physical partition, an
	// EPK sub-range of one, a logical partition, or the whole container.
	Scope Scope
	// Start says where a feed without a continuation begins.
	Start ChangeStart
	// After is the position to continue from, a previous page's Position;
	// it applies when HasAfter is set, and then Start does not.
	After    string
	HasAfter bool
	// MaxItems bounds the page: 0 is the default page size, -1 as many as
	// fit in the page byte limit.
	MaxItems int
}

// ChangeStart is where a change feed without a continuation begins.
type ChangeStart struct {
	// Now starts at the current position: no earlier change is read.
	Now bool
	// Since, unless zero, skips changes written before it (by _ts, in
	// seconds). With neither set the feed starts at the beginning.
	Since time.Time
}

// ChangePage is one page of a change feed.
type ChangePage struct {
	// Items are the live items of the scope last written after the
	// requested position, in the order of those writes, at their latest
	// version, each with its "_lsn". Empty: nothing new (HTTP 304).
	Items [][]byte
	// Position is where to continue from (the response's etag): the LSN of
	// the scope's keyspace, or for a scope over several keyspaces one
	// "<range>:<lsn>" per range, ";"-separated.
	Position string
	// Entries is how many change entries the page read.
	Entries      int
	RU           float64
	Session      string
	ContainerRID string
	// RangeID is the partition key range the scope lies in (the range the
	// request named, or the one holding its logical partition); empty when
	// the scope spans several ranges.
	RangeID string
}

// feedGroup is the part of a change feed's scope in one keyspace: its
// ranges there, and the item keys of the scope they hold.
type feedGroup struct {
	ks     uint64
	ranges []partition.Range
	spans  []replica.Span
	pos    uint64 // the LSN to continue after
	// since, when not 0, is the start time (Unix seconds) of a feed that
	// has not yet read this group: its changes older than it are skipped.
	// Once the group is read, pos is the cut and since is dropped.
	since int64
}

func (g feedGroup) holds(key []byte) bool {
	for _, s := range g.spans {
		if s.Contains(key) {
			return true
		}
	}
	return false
}

// maxTxnPageBytes bounds a change feed page that goes past its size to hold
// a transaction whole: a transaction larger than that (a stored procedure
// can write a thousand items of 2 MB) is delivered across pages.
const maxTxnPageBytes = 32 << 20

// ReadChanges reads one page of the latest-version change feed of db/coll:
// the live items of the scope last written after the position, in commit
// order, at their latest version. Deletes do not appear, and an item
// rewritten while the feed is read appears once per version a reader can
// see, never twice for one version.
//
// Positions are LSNs of the scope's keyspace, which split children share
// with their parent, so a position stays valid across splits: a child range
// continues where its parent stopped. A page never passes an LSN a
// transaction still holds, so a write that commits late is not skipped, and
// reads one snapshot of each keyspace. A page holds the writes of a
// transaction (a batch, a stored procedure) whole, past its item count and
// size if need be, as Cosmos DB's change feed does (maxTxnPageBytes). Errors: 404; 410/1002 for a range id
// that no longer exists; 400 for a bad sub-range or position.
func (e *Engine) ReadChanges(ctx context.Context, db, coll string, req ChangeFeed) (ChangePage, error) {
	c, release, err := e.readContainer(ctx, db, coll, req.Scope.RangeID)
	if err != nil {
		return ChangePage{}, err
	}
	defer release()
	req.Scope.PK = scopeKey(c, req.Scope.PK)
	r, err := resolveScope(c, req.Scope)
	if err != nil {
		return ChangePage{}, err
	}
	var groups []*feedGroup
	for _, rng := range r.ranges {
		sp := intersect(epkSpan(rng.Min, rng.Max), r.span)
		if sp.Empty() {
			continue
		}
		ks, _ := c.Keyspace(rng.ID)
		i := slices.IndexFunc(groups, func(g *feedGroup) bool { return g.ks == ks })
		if i < 0 {
			groups = append(groups, &feedGroup{ks: ks})
			i = len(groups) - 1
		}
		groups[i].ranges = append(groups[i].ranges, rng)
		groups[i].spans = append(groups[i].spans, sp)
	}
	if err := e.admit(ctx, c, r.ranges...); err != nil {
		return ChangePage{}, err
	}
	stables := make([]uint64, len(groups))
	for i, g := range groups {
		rep, err := e.readReplica(ctx, g.ks)
		if err != nil {
			return ChangePage{}, translate(err)
		}
		if linearizable(ctx) {
			awaitStable(ctx, rep)
		}
		stables[i] = rep.StableLSN()
		if err := e.checkFences(rep, c, g.ks); err != nil {
			return ChangePage{}, translate(err) // the stable mark may be the old keyspace's last
		}
	}
	switch {
	case req.HasAfter:
		if err := setPositions(groups, req.After); err != nil {
			return ChangePage{}, err
		}
	case req.Start.Now:
		for i, g := range groups {
			g.pos = stables[i]
		}
	case req.Start.Since.Unix() > 0:
		// A start at or before 1970 is the beginning: every item's _ts is
		// later (a position of a negative time could not be read back).
		for _, g := range groups {
			g.since = req.Start.Since.Unix()
		}
	}
	p := ChangePage{Items: [][]byte{}, Session: e.sessionFor(c, r.ranges), ContainerRID: c.RID}
	if len(r.ranges) == 1 {
		p.RangeID = r.ranges[0].ID
	}
	v := e.newView(ctx, c)
	defer v.close()
	limit := e.pageLimit(req.MaxItems)
	deadline := time.Now().Add(e.cfg.QueryPageTime)
	size, entries := 0, 0
	full := false
	for i, g := range groups {
		if full || g.pos >= stables[i] {
			continue
		}
		snap, err := v.reader(g.ks)
		if err != nil {
			return ChangePage{}, translate(err)
		}
		stable := stables[i]
		var failed error
		span := changeSpan(g.pos)
		span.Upper = changeKey(stable + 1)
		groupFull, held := false, false
		// through is the largest LSN of a transaction the page delivered
		// part of: the page goes on to it whatever its limits, so that it
		// holds the transaction whole (changeValue). The writes between
		// come along, and the transactions they belong to extend it in
		// turn: a group of overlapping transactions. back is where the
		// page stood before the group began: a group that meets a
		// transaction it cannot finish (its mark past the stable mark) is
		// taken back whole, as it would split one of them otherwise (a
		// review: T1's first write delivered, T2's within it held, T1's
		// second in a later page).
		var through uint64
		var back struct {
			items, size int
			pos         uint64
		}
		err = replica.Scan(ctx, snap, span, func(k, v []byte) bool {
			entries++
			lsn, err := entrySeq(k)
			if err != nil {
				failed = err
				return false
			}
			within := lsn <= through
			if !within && entries%256 == 0 && time.Now().After(deadline) {
				groupFull = true
				return false
			}
			itemKey, txnEnd, err := splitChangeValue(v)
			if err != nil {
				failed = err
				return false
			}
			if !g.holds(itemKey) {
				g.pos = lsn // nothing of this scope up to here
				return true
			}
			if !within && len(p.Items) >= limit {
				groupFull = true
				return false
			}
			if !within {
				back.items, back.size, back.pos = len(p.Items), size, g.pos
			}
			if txnEnd > stable {
				// A transaction whose later LSNs lie past the stable mark
				// (another transaction holds one between): it waits, with
				// its group, whole, for a page that can read to its end.
				// The other keyspaces are read meanwhile.
				if within {
					p.Items, size, g.pos = p.Items[:back.items], back.size, back.pos
				}
				held = true
				return false
			}
			doc, err := snap.Get(itemKey)
			if err != nil {
				// The entry and the item come from one snapshot: a missing
				// item is a damaged store (Check reports it).
				if errors.Is(err, replica.ErrNotFound) {
					g.pos = lsn
					return true
				}
				failed = err
				return false
			}
			props, err := document.Props(doc)
			if err != nil {
				failed = err
				return false
			}
			if props.TS < g.since || e.invisible(c, itemKey, props) {
				g.pos = lsn
				return true
			}
			if len(p.Items) > 0 && size+len(doc) > e.cfg.MaxPageBytes && (!within || size+len(doc) > maxTxnPageBytes) {
				groupFull = true
				return false
			}
			p.Items = append(p.Items, withLSN(doc, lsn))
			size += len(doc)
			g.pos = lsn
			through = max(through, txnEnd)
			return true
		})
		if err == nil {
			err = failed
		}
		if err != nil {
			e.chargeFailed(c, 0, r.ranges...)
			return ChangePage{}, translate(err)
		}
		if groupFull {
			full = true
			continue
		}
		if held {
			continue
		}
		// Read to the stable mark: nothing of the scope lies between.
		g.pos = stable
	}
	p.Position, p.Entries = positions(groups, e.now().Unix()), entries
	if len(p.Items) == 0 && entries == 0 {
		p.RU = throughput.MinimumCost()
	} else {
		p.RU = throughput.QueryWorkCost(throughput.QueryWork{Entries: entries, Items: len(p.Items), InBytes: size, OutBytes: size, Partitions: len(r.ranges)})
	}
	e.chargeScope(c, p.RU, req.Scope, r.ranges...)
	return p, nil
}

// positions encodes the groups' positions at time now (Unix seconds): one
// position for one keyspace, else "<range>:<position>" for every range,
// ";"-separated. A position is an LSN; or "t<unix seconds>" for a group a
// feed from a start time has not read yet: a page that fills before it
// reaches a group must not let the next page read that group from its
// beginning (a bug hunt found a container's feed from a start time, after a
// separation, delivering a third of its items from before it); or
// "t<unix seconds>_<LSN>" for a group read to that LSN while its start time
// is still ahead of now: a change written until then is older than the
// start, and the next page must skip it too (a change feed hunt: a feed
// started 5 s ahead and read at once delivered an item written before its
// start on its next page). Once now has passed the start time, every later
// change is newer and the LSN alone says where the feed stands.
func positions(groups []*feedGroup, now int64) string {
	if len(groups) == 0 {
		// A scope that reads nothing (a logical partition asked of a range
		// that does not own it, as the Go SDK asks every range of a feed
		// range): a position all the same, which resumes it. It was "", an
		// etag the next request could not send back (400).
		return "0"
	}
	pos := func(g *feedGroup) string {
		switch {
		case g.since != 0 && g.pos == 0:
			return "t" + strconv.FormatInt(g.since, 10)
		case g.since > now:
			return "t" + strconv.FormatInt(g.since, 10) + "_" + strconv.FormatUint(g.pos, 10)
		}
		return strconv.FormatUint(g.pos, 10)
	}
	if len(groups) == 1 {
		return pos(groups[0])
	}
	var b strings.Builder
	for _, g := range groups {
		for _, r := range g.ranges {
			if b.Len() > 0 {
				b.WriteByte(';')
			}
			b.WriteString(r.ID)
			b.WriteByte(':')
			b.WriteString(pos(g))
		}
	}
	return b.String()
}

// parsePosition parses one position of positions: an LSN, a start time
// ("t<unix seconds>", from LSN 0), or both ("t<unix seconds>_<LSN>").
func parsePosition(s string) (pos uint64, since int64, ok bool) {
	if t, found := strings.CutPrefix(s, "t"); found {
		t, l, both := strings.Cut(t, "_")
		since, err := strconv.ParseInt(t, 10, 64)
		if err != nil || since <= 0 {
			return 0, 0, false
		}
		if both {
			if pos, err = strconv.ParseUint(l, 10, 64); err != nil {
				return 0, 0, false
			}
		}
		return pos, since, true
	}
	pos, err := strconv.ParseUint(s, 10, 64)
	return pos, 0, err == nil
}

// setPositions sets each group's position from a previous page's Position.
// A single LSN applies to every group (it was made for one keyspace, which
// they all descend from). A per-range position applies to a range, or to
// the children of a range that split since: a group starts at the lowest
// position of its ranges.
func setPositions(groups []*feedGroup, pos string) error {
	bad := func() error {
		return invalidContinuation(fmt.Sprintf("the change feed position %q is not a position this server made", pos))
	}
	if n, since, ok := parsePosition(pos); ok {
		for _, g := range groups {
			g.pos, g.since = n, since
		}
		return nil
	}
	type at struct {
		pos   uint64
		since int64
	}
	m := map[string]at{}
	for _, part := range strings.Split(pos, ";") {
		id, p, ok := strings.Cut(part, ":")
		n, since, pok := parsePosition(p)
		if !ok || !pok || id == "" {
			return bad()
		}
		m[id] = at{n, since}
	}
	for _, g := range groups {
		first := true
		for _, r := range g.ranges {
			a, ok := m[r.ID]
			for i := len(r.Parents) - 1; !ok && i >= 0; i-- {
				a, ok = m[r.Parents[i]]
			}
			if !ok {
				return invalidContinuation(fmt.Sprintf("the change feed position %q has no position for partition key range %s", pos, r.ID))
			}
			if first || a.pos < g.pos {
				g.pos, first = a.pos, false
			}
			g.since = max(g.since, a.since)
		}
	}
	return nil
}

// withLSN returns doc, a stored JSON object, with "_lsn": lsn appended, as
// change feeds show it.
func withLSN(doc []byte, lsn uint64) []byte {
	if bytes.Contains(doc, []byte(`_lsn"`)) {
		// The item has an _lsn of its own: the feed's replaces its value
		// rather than stand beside it as a second member of the name (a
		// Python SDK hunt), which a reader keeping the first would take
		// for the feed's.
		if vs, ve, ok := document.StoredMember(doc, "_lsn"); ok {
			out := make([]byte, 0, len(doc)+20)
			out = append(out, doc[:vs]...)
			out = strconv.AppendUint(out, lsn, 10)
			return append(out, doc[ve:]...)
		}
	}
	end := len(doc) - 1
	for end > 0 && doc[end] != '}' {
		end--
	}
	if end <= 0 {
		return doc
	}
	out := make([]byte, 0, len(doc)+32)
	out = append(out, doc[:end]...)
	if !emptyObject(doc[:end]) {
		out = append(out, ',')
	}
	out = append(out, `"_lsn":`...)
	out = strconv.AppendUint(out, lsn, 10)
	return append(out, doc[end:]...)
}

// emptyObject reports whether b is "{" and white space.
func emptyObject(b []byte) bool {
	for _, c := range b[1:] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// stableWait bounds how long a linearizable change-feed read waits for its
// keyspace's stable mark to reach the last LSN it has applied.
const stableWait = time.Second

// awaitStable waits, at most stableWait, until rep's stable LSN reaches the
// last LSN it had applied when called. A linearizable read has synced rep
// with its group (every write acknowledged before it began is applied),
// but a follower's stable mark trails what it applied until the leader
// publishes the next one (within about 50 ms; docs/cluster.md), and the
// change feed shows only what is stable: without the wait a Strong read
// through a follower could miss a write acknowledged before it. On a
// leader the mark is current unless a transaction still holds an LSN
// below; the wait then ends with it, or after stableWait (the read shows
// what is stable, as on one node, where reads are never marked
// linearizable).
func awaitStable(ctx context.Context, rep replica.Replica) {
	want := rep.LastLSN()
	if rep.StableLSN() >= want {
		return
	}
	deadline := time.Now().Add(stableWait)
	for rep.StableLSN() < want && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}
