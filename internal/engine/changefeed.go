package engine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
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
	// After is the position to continue from, the LSN of a previous page;
	// it applies when HasAfter is set, and then Start does not.
	After    uint64
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
	// LSN is the position to continue from: every later write in the scope
	// has a greater sequence number.
	LSN          uint64
	RU           float64
	Session      string
	ContainerRID string
}

// ReadChanges reads one page of the latest-version change feed of db/coll:
// the live items of the scope last written after the position, in commit
// order, at their latest version. Deletes do not appear, and an item
// rewritten while the feed is read appears once per version a reader can
// see, never twice for one version.
//
// Positions are sequence numbers, not ranges, so a position stays valid
// across splits: a child range continues where its parent stopped. A page
// never passes a sequence number a transaction still holds, so a write that
// commits late is not skipped. Errors: 404; 410/1002 for a range id that no
// longer exists; 400 for a bad sub-range.
func (e *Engine) ReadChanges(ctx context.Context, db, coll string, req ChangeFeed) (ChangePage, error) {
	c, err := e.container(db, coll)
	if err != nil {
		return ChangePage{}, err
	}
	r, err := resolveScope(c, req.Scope)
	if err != nil {
		return ChangePage{}, err
	}
	if err := e.admit(c, r.ranges...); err != nil {
		return ChangePage{}, err
	}
	stable := e.seq.stable()
	p := ChangePage{Items: [][]byte{}, Session: e.sessionFor(r.ranges), ContainerRID: c.RID}
	var since int64
	switch {
	case req.HasAfter:
		p.LSN = req.After
	case req.Start.Now:
		p.LSN = stable
	case !req.Start.Since.IsZero():
		since = req.Start.Since.Unix()
	}
	if p.LSN >= stable {
		p.RU = throughput.MinimumCost()
		e.charge(c, p.RU, r.ranges...)
		return p, nil
	}
	limit := e.pageLimit(req.MaxItems)
	deadline := time.Now().Add(e.cfg.QueryPageTime)
	size, entries := 0, 0
	full := false
	var failed error
	span := store.ChangeSpan(c.Internal, p.LSN)
	span.Upper = store.ChangeKey(c.Internal, stable+1)
	err = e.data.Scan(ctx, span, nil, func(k, itemKey []byte) bool {
		entries++
		if entries%256 == 0 && time.Now().After(deadline) {
			full = true
			return false
		}
		lsn, err := store.EntrySeq(k)
		if err != nil {
			failed = err
			return false
		}
		if !r.span.Contains(itemKey) {
			p.LSN = lsn // nothing of this scope up to here
			return true
		}
		if len(p.Items) >= limit {
			full = true
			return false
		}
		doc, err := e.data.Get(itemKey)
		if errors.Is(err, store.ErrNotFound) {
			p.LSN = lsn // deleted since the entry was read
			return true
		}
		if err != nil {
			failed = err
			return false
		}
		props, err := document.Props(doc)
		if err != nil {
			failed = err
			return false
		}
		if v, err := document.ETagSeq(props.ETag); err != nil || v != lsn {
			// Rewritten since the entry was read: the newer version has a
			// later entry, and is read there.
			p.LSN = lsn
			return true
		}
		if props.TS < since || e.expired(c, props) {
			p.LSN = lsn
			return true
		}
		if len(p.Items) > 0 && size+len(doc) > e.cfg.MaxPageBytes {
			full = true
			return false
		}
		p.Items = append(p.Items, withLSN(doc, lsn))
		size += len(doc)
		p.LSN = lsn
		return true
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		e.chargeFailed(c, 0, r.ranges...)
		return ChangePage{}, translate(err)
	}
	if !full {
		// Read to the stable mark: nothing of the scope lies between.
		p.LSN = stable
	}
	p.RU = throughput.QueryWorkCost(throughput.QueryWork{Entries: entries, Items: len(p.Items), InBytes: size, OutBytes: size, Partitions: len(r.ranges)})
	e.charge(c, p.RU, r.ranges...)
	return p, nil
}

// withLSN returns doc, a stored JSON object, with "_lsn": lsn appended, as
// change feeds show it.
func withLSN(doc []byte, lsn uint64) []byte {
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
