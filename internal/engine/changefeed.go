package engine

import (
	"context"
	"errors"

	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/store"
	"github.com/partitadb/partita/internal/throughput"
)

// ChangePage is one page of a change feed.
type ChangePage struct {
	// Items are the live items last written after the requested position,
	// in the order of those writes, at their latest version.
	Items [][]byte
	// LSN is the position to continue from: every later write in the span
	// has a greater sequence number.
	LSN uint64
	RU  float64
}

// ReadChanges reads the latest-version change feed of the EPK span
// [min, max) of db/coll (a physical partition's, or narrower; max nil: to
// the end) after sequence number after, at most maxItems items. Because the
// position is a sequence number, not a range, it stays valid across splits:
// a child range continues where its parent stopped. Deletes do not appear.
// Errors: 404.
func (e *Engine) ReadChanges(ctx context.Context, db, coll string, min, max partition.EPK, after uint64, maxItems int) (ChangePage, error) {
	c, err := e.container(db, coll)
	if err != nil {
		return ChangePage{}, err
	}
	span := store.EPKSpan(c.Internal, min, max)
	limit := e.pageLimit(maxItems)
	p := ChangePage{Items: [][]byte{}, LSN: after}
	size, entries := 0, 0
	var failed error
	err = e.data.Scan(ctx, store.ChangeSpan(c.Internal, after), nil, func(k, itemKey []byte) bool {
		entries++
		lsn, err := store.EntrySeq(k)
		if err != nil {
			failed = err
			return false
		}
		if !span.Contains(itemKey) {
			p.LSN = lsn // nothing of this span up to here
			return true
		}
		if len(p.Items) >= limit {
			return false
		}
		doc, err := e.data.Get(itemKey)
		if errors.Is(err, store.ErrNotFound) {
			p.LSN = lsn
			return true // deleted since the entry was read
		}
		if err != nil {
			failed = err
			return false
		}
		if len(p.Items) > 0 && size+len(doc) > e.cfg.MaxPageBytes {
			return false
		}
		p.Items = append(p.Items, doc)
		size += len(doc)
		p.LSN = lsn
		return true
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		return ChangePage{}, translate(err)
	}
	p.RU = throughput.QueryWorkCost(throughput.QueryWork{Entries: entries, Items: len(p.Items), InBytes: size, OutBytes: size, Partitions: 1})
	return p, nil
}
