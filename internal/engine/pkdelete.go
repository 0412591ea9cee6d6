package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// Partition key delete: Cosmos DB's "delete all items by partition key
// value" (POST …/colls/{coll}/operations/partitionkeydelete). Cosmos DB
// documents it as a background operation whose effect is immediate: the
// items it deletes no longer appear in reads or queries, while their
// physical deletion uses at most 10% of the container's throughput. Here:
//
//   - Under the logical partition's lock, the operation takes an LSN of its
//     keyspace, the cut: the items whose last write has a smaller LSN are the
//     ones to delete; a write after the operation gets a larger one and
//     survives it. It records the delete in the catalog (durable: a restart
//     resumes it) and in memory, where every read path consults it
//     (invisible, goneFilter), so the items are hidden from then on.
//   - It deletes the items in transactions of at most pkDeleteBatchItems
//     items (pkDeleteBatchBytes bytes and one item), each an ordinary lpTxn under the
//     logical partition's lock that erases the items with their derived
//     entries, so the store stays consistent (Check) after every one. The
//     request itself goes on up to Config.PKDeleteSyncItems items; a larger
//     partition is finished by Run in the background, which paces itself to
//     10% of the partition's provisioned throughput.
//   - Every transaction is admitted and charged like any write (a delete's
//     request units per item): the request is refused with 429 before it
//     starts when its partition is out of budget, and the background work
//     waits for budget.
//   - A write that meets a hidden item (a create of its id, a unique key it
//     holds) erases it in the write's own transaction, as it does an expired
//     item.
//
// The record is removed once no item below the cut is left; a later delete
// of the same partition replaces it with a larger cut.

// The bounds of one transaction of a partition key delete.
const (
	pkDeleteBatchItems = 100
	pkDeleteBatchBytes = 4 << 20
	// pkDeleteShare is the share of a partition's provisioned throughput
	// the background deletion uses at most (Cosmos DB: 10%).
	pkDeleteShare = 0.1
	// pkDeleteRetry is how long the background deletion waits after a
	// failure before it tries again.
	pkDeleteRetry = time.Second
)

// lpDelete is a pending partition key delete, as the read paths see it.
type lpDelete struct {
	rec    catalog.PKDelete
	pk     document.PartitionKey
	prefix []byte // the logical partition's item keys start with it
}

// pkDeletes is the set of pending partition key deletes. Readers load it
// without a lock (it is replaced, never changed, on the rare add or
// removal); writers serialise on mu.
type pkDeletes struct {
	mu sync.Mutex
	m  atomic.Pointer[map[uint64][]*lpDelete] // container internal id → its pending deletes
	// wake tells the background deletion that there is work; one token is
	// enough however many deletes were added (buffer 1). Nil in an engine
	// opened for a check, which runs no background work.
	wake chan struct{}
}

// of returns container c's pending deletes; nil when it has none.
func (p *pkDeletes) of(c uint64) []*lpDelete {
	m := p.m.Load()
	if m == nil {
		return nil
	}
	return (*m)[c]
}

// all returns every pending delete.
func (p *pkDeletes) all() []*lpDelete {
	m := p.m.Load()
	if m == nil {
		return nil
	}
	var out []*lpDelete
	for _, ds := range *m {
		out = append(out, ds...)
	}
	return out
}

// update replaces container c's pending deletes by fn's result.
func (p *pkDeletes) update(c uint64, fn func([]*lpDelete) []*lpDelete) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := map[uint64][]*lpDelete{}
	if m := p.m.Load(); m != nil {
		for k, v := range *m {
			next[k] = v
		}
	}
	if ds := fn(slices.Clone(next[c])); len(ds) > 0 {
		next[c] = ds
	} else {
		delete(next, c)
	}
	p.m.Store(&next)
}

// add makes d pending, replacing a pending delete of its logical partition.
func (p *pkDeletes) add(d *lpDelete) {
	p.update(d.rec.Internal, func(ds []*lpDelete) []*lpDelete {
		ds = slices.DeleteFunc(ds, func(o *lpDelete) bool { return o.rec.PK == d.rec.PK })
		return append(ds, d)
	})
}

// remove ends d, unless a later delete of its logical partition replaced it.
func (p *pkDeletes) remove(d catalog.PKDelete) {
	p.update(d.Internal, func(ds []*lpDelete) []*lpDelete {
		return slices.DeleteFunc(ds, func(o *lpDelete) bool { return o.rec.PK == d.PK && o.rec.Cut == d.Cut })
	})
}

// forget drops container c's pending deletes (the container is gone).
func (p *pkDeletes) forget(c uint64) {
	p.update(c, func([]*lpDelete) []*lpDelete { return nil })
}

// signal wakes the background deletion.
func (p *pkDeletes) signal() {
	select {
	case p.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// hides reports whether ds hide the item stored under key with _etag etag:
// it lies in the logical partition of one of them and was last written
// before its cut.
func hides(ds []*lpDelete, key []byte, etag string) bool {
	for _, d := range ds {
		if bytes.HasPrefix(key, d.prefix) {
			lsn, err := document.ETagSeq(etag)
			return err == nil && lsn < d.rec.Cut
		}
	}
	return false
}

// invisible reports whether the item of c stored under key with system
// properties props must not be seen: it expired (time to live), or a
// pending partition key delete hides it.
func (e *Engine) invisible(c *catalog.Container, key []byte, props document.SystemProps) bool {
	return e.expired(c, props) || hides(e.pkdel.of(c.Internal), key, props.ETag)
}

// goneFilter returns a function reporting whether the stored item doc of c,
// under key, must not be seen (invisible), or nil when nothing of c can be
// (no time to live, no pending partition key delete).
func (e *Engine) goneFilter(c *catalog.Container) func(key, doc []byte) bool {
	expired := e.expiredFilter(c)
	ds := e.pkdel.of(c.Internal)
	switch {
	case expired == nil && ds == nil:
		return nil
	case ds == nil:
		return func(_, doc []byte) bool { return expired(doc) }
	}
	return func(key, doc []byte) bool {
		if expired != nil && expired(doc) {
			return true
		}
		for _, d := range ds {
			if bytes.HasPrefix(key, d.prefix) {
				props, err := document.Props(doc)
				return err == nil && hides(ds, key, props.ETag)
			}
		}
		return false
	}
}

// lpDeleteOf returns the pending delete of record rec of container c.
func lpDeleteOf(c *catalog.Container, rec catalog.PKDelete) (*lpDelete, error) {
	pk, err := document.ParsePKHeader(rec.PK)
	if err != nil {
		return nil, fmt.Errorf("partition key delete of %s: %w", rec.PK, err)
	}
	loc, err := locate(c, pk, "")
	if err != nil {
		return nil, err
	}
	return &lpDelete{rec: rec, pk: pk, prefix: logicalSpan(loc.epk, loc.pkEnc).Lower}, nil
}

// loadPKDeletes makes the partition key deletes the catalog records pending
// (at start), dropping those of containers that are gone.
func (e *Engine) loadPKDeletes(ctx context.Context) error {
	recs, err := e.cat.PKDeletes(ctx)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		c, err := e.cat.Container(rec.DB, rec.Container)
		if err != nil || c.Internal != rec.Internal {
			continue // the container's deletion removed the record, or will
		}
		d, err := lpDeleteOf(c, rec)
		if err != nil {
			return err
		}
		e.pkdel.add(d)
	}
	return nil
}

// PKDeleteResult is the outcome of DeletePartition.
type PKDeleteResult struct {
	RU      float64 // the request units of the work the request did
	Session string  // x-ms-session-token after the request's writes
	Deleted int     // items the request deleted
	// Done reports that no item of the logical partition written before the
	// request is left; false: the rest is hidden already and Run deletes it
	// in the background.
	Done bool
}

// DeletePartition deletes every item of logical partition pk of db/coll
// written before the call (see the comment at the top of this file): at
// once up to Config.PKDeleteSyncItems items, the rest in the background,
// hidden from reads and queries from the moment the call returns.
//
// Errors: 404 (no container), 400 (no or a malformed partition key), 429
// (the partition has no budget left: nothing was done), 507/503 from the
// store.
func (e *Engine) DeletePartition(ctx context.Context, db, coll string, pk document.PartitionKey) (PKDeleteResult, error) {
	c, err := e.owner(db, coll)
	if err != nil {
		return PKDeleteResult{}, err
	}
	if pk == nil {
		return PKDeleteResult{}, status.BadRequest("PartitionKey value must be supplied for this operation (x-ms-documentdb-partitionkey header)")
	}
	t, err := e.begin(ctx, c, pk)
	if err != nil {
		return PKDeleteResult{}, err
	}
	defer t.close()
	cut, err := t.rep.NextLSN(t.b, &t.first)
	if err != nil {
		return PKDeleteResult{}, translate(err)
	}
	t.lsn = cut
	rec := catalog.PKDelete{DB: c.DB, Container: c.ID, Internal: c.Internal, PK: pk.String(), Cut: cut}
	d, err := lpDeleteOf(t.c, rec)
	if err != nil {
		return PKDeleteResult{}, err
	}
	if err := e.cat.AddPKDelete(rec); err != nil {
		return PKDeleteResult{}, translate(err)
	}
	e.pkdel.add(d)
	e.log.Debug("partition key delete", "db", c.DB, "container", c.ID, "partition_key", rec.PK)

	var res PKDeleteResult
	n, more, err := t.deleteBefore(ctx, cut)
	if err == nil {
		res.RU, res.Session = t.ru, t.session()
		err = t.commit()
	}
	if err != nil {
		// The items are hidden already: the background deletion takes over.
		e.pkdel.signal()
		return PKDeleteResult{}, err
	}
	res.Deleted = n
	for more && res.Deleted < e.cfg.PKDeleteSyncItems {
		r, err := e.deleteBatch(ctx, c, d)
		if err != nil {
			// The request has done its part; what is left (also after a
			// 429) is the background's.
			break
		}
		res.RU += r.ru
		res.Session = r.session
		res.Deleted += r.n
		more = r.more
	}
	if more {
		e.pkdel.signal()
		return res, nil
	}
	res.Done = true
	return res, e.endPKDelete(d)
}

// testHookPKDeleteEnded, if set, is called when a pending partition key
// delete has ended (tests wait for the background deletion with it).
var testHookPKDeleteEnded func()

// endPKDelete removes pending delete d, whose work is done.
func (e *Engine) endPKDelete(d *lpDelete) error {
	if err := e.cat.RemovePKDelete(d.rec); err != nil {
		return translate(err)
	}
	e.pkdel.remove(d.rec)
	if testHookPKDeleteEnded != nil {
		testHookPKDeleteEnded()
	}
	return nil
}

// batchResult is what one transaction of a partition key delete did.
type batchResult struct {
	n       int
	more    bool // items below the cut are left
	ru      float64
	rate    float64 // RU/s of the budget the partition draws on (0: none)
	session string
}

// deleteBatch deletes one batch of d's items in a transaction of its own,
// admitted and charged as a write.
func (e *Engine) deleteBatch(ctx context.Context, c *catalog.Container, d *lpDelete) (batchResult, error) {
	t, err := e.begin(ctx, c, d.pk)
	if err != nil {
		return batchResult{}, err
	}
	defer t.close()
	n, more, err := t.deleteBefore(ctx, d.rec.Cut)
	if err != nil {
		return batchResult{}, err
	}
	r := batchResult{n: n, more: more, ru: t.ru, session: t.session()}
	if e.limit != nil {
		r.rate = e.budgetOf(c, t.rng).rate
	}
	return r, t.commit()
}

// deleteBefore erases up to one batch of the logical partition's items last
// written before LSN cut, and reports how many it erased and whether such
// items are left. Each costs what a delete of it costs.
func (t *lpTxn) deleteBefore(ctx context.Context, cut uint64) (n int, more bool, err error) {
	before := func(_ []byte, props document.SystemProps) (bool, error) {
		lsn, err := document.ETagSeq(props.ETag)
		return lsn < cut, err // written after the delete: it stays
	}
	return t.eraseWhere(ctx, before, pkDeleteBatchItems, pkDeleteBatchBytes, 0)
}

// eraseWhere erases, in key order, the items of the transaction's logical
// partition that gone reports (from their key and system properties): up
// to maxItems of them, until they reach maxBytes (the last may pass it),
// looking at up to maxScan items (0: all). It reports how many it erased and
// whether it stopped at a bound. Each erasure is charged as a delete of its
// item.
func (t *lpTxn) eraseWhere(ctx context.Context, gone func(key []byte, props document.SystemProps) (bool, error),
	maxItems int, maxBytes int64, maxScan int) (n int, more bool, err error) {
	type victim struct {
		id    string
		old   []byte
		props document.SystemProps
	}
	var (
		victims []victim
		size    int64
		seen    int
		failed  error
	)
	err = replica.Scan(ctx, t.b, logicalSpan(t.epk, t.pkEnc), func(k, v []byte) bool {
		if seen++; maxScan > 0 && seen > maxScan {
			more = true
			return false
		}
		props, err := document.Props(v)
		if err != nil {
			failed = err
			return false
		}
		ok, err := gone(k, props)
		if err != nil {
			failed = err
			return false
		}
		if !ok {
			return true
		}
		if len(victims) == maxItems || size >= maxBytes {
			more = true
			return false
		}
		ik, err := decodeItemKey(k)
		if err != nil {
			failed = err
			return false
		}
		victims = append(victims, victim{ik.ID, bytes.Clone(v), props})
		size += int64(len(v))
		return true
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		return 0, false, translate(err)
	}
	for _, v := range victims {
		terms, err := t.erase(v.id, v.old, v.props)
		if err != nil {
			return 0, false, err
		}
		if !t.system {
			t.ru += throughput.WriteCost(len(v.old), terms)
		}
	}
	return len(victims), more, nil
}

// runPKDeletes finishes pending partition key deletes in the background
// until ctx ends: woken when a request leaves work, and every
// pkDeleteRetry after a failure.
func (e *Engine) runPKDeletes(ctx context.Context) {
	retry := time.NewTimer(pkDeleteRetry)
	defer retry.Stop()
	for {
		failed := false
		for _, d := range e.pkdel.all() {
			if err := e.finishPKDelete(ctx, d); err != nil {
				if ctx.Err() != nil {
					return
				}
				failed = true
				if !storeRefused(err) {
					e.log.Warn("partition key delete", "db", d.rec.DB, "container", d.rec.Container, "err", err)
				}
			}
		}
		var again <-chan time.Time
		if failed {
			retry.Reset(pkDeleteRetry)
			again = retry.C
		}
		select {
		case <-ctx.Done():
			return
		case <-e.pkdel.wake:
		case <-again:
		}
	}
}

// finishPKDelete deletes what is left of d, in batches paced to
// pkDeleteShare of the partition's provisioned throughput when the engine
// rate-limits, waiting out 429s.
func (e *Engine) finishPKDelete(ctx context.Context, d *lpDelete) error {
	for {
		c, err := e.cat.Container(d.rec.DB, d.rec.Container)
		if errors.Is(err, catalog.ErrNotFound) || (err == nil && c.Internal != d.rec.Internal) {
			e.pkdel.forget(d.rec.Internal) // its deletion removed the records
			return nil
		}
		if err != nil {
			return err
		}
		r, err := e.deleteBatch(ctx, c, d)
		var wait time.Duration
		if se, ok := errors.AsType[*status.Error](err); ok && se.Code == http.StatusTooManyRequests {
			wait, err = se.RetryAfter, nil
		}
		if err != nil {
			return err
		}
		if wait == 0 && !r.more {
			return e.endPKDelete(d)
		}
		if wait == 0 && r.rate > 0 {
			wait = time.Duration(r.ru / (pkDeleteShare * r.rate) * float64(time.Second))
		}
		if wait > 0 {
			tm := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				tm.Stop()
				return ctx.Err()
			case <-tm.C:
			}
		} else if err := ctx.Err(); err != nil {
			return err
		}
	}
}
