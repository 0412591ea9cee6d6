package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
)

// Separation (docs/storage-seams.md): a split leaves its children sharing
// their parent's keyspace; separation gives one of them a keyspace of its
// own, so that each physical partition is again one span and a range's
// reads do not pass over its siblings' entries.
//
//  1. Copy: the range's items are copied, with their derived entries, from
//     a snapshot of the shared keyspace into a new one, through the same
//     functions the write path uses (lpTxn.place, lpTxn.drop), no lock
//     held. A crash leaves a keyspace nothing refers to: dropped at start.
//  2. Catch up: the change entries written since (in the range's span) are
//     copied again at their latest version; logical partitions whose
//     statistics differ may have lost items, which are dropped (before the
//     copies, so a copy never meets a stale holder of its unique values,
//     and after them, when equal statistics mean equal items). Rounds
//     repeat while writes keep coming, up to maxCatchUpRounds. The first
//     round, from position 0, is the copy.
//  3. Cut over: with the container's writers and readers held off (colls
//     and maps exclusive) and no write of the old keyspace in doubt (a
//     Commit that gave up waiting, whose proposal may still apply), a last
//     round, the new keyspace's LSNs are advanced past the old one's, and
//     the catalog records the move.
//  4. Collect: what the range left in the old keyspace is deleted; the
//     catalog's RangeRecord.From remembers it until then, so a crash
//     resumes it (Run).
//
// Every item keeps its _rid, _etag and _ts, and its change entry its LSN,
// so continuations, change-feed positions and session tokens taken before
// stay valid.

// maxCatchUpRounds bounds the catch-up rounds before the cut-over, which
// then copies whatever the last round left under the lock.
const maxCatchUpRounds = 8

// SeparateRange gives range rangeID of db/coll a keyspace of its own if it
// shares one with a sibling (a no-op otherwise), and deletes what it left
// in the shared one. Errors: 404 for an unknown container or range.
func (e *Engine) SeparateRange(ctx context.Context, db, coll, rangeID string) error {
	c, err := e.container(db, coll)
	if err != nil {
		return err
	}
	r, ok := c.Map().ByID(rangeID)
	if !ok {
		return rangeGone(rangeID)
	}
	if err := e.separate(ctx, c, r); err != nil {
		return translate(err)
	}
	c, err = e.container(db, coll)
	if err != nil {
		return err
	}
	return translate(e.collect(ctx, c, rangeID))
}

// shared reports whether range r of c shares its keyspace with another
// range that stays there (one not being moved out): a keyspace keeps at
// least one range, so what separations leave in it is collected from a
// keyspace that exists.
func shared(c *catalog.Container, r partition.Range) bool {
	ks, _ := c.Keyspace(r.ID)
	for _, o := range c.Ranges {
		if o.ID != r.ID && o.Keyspace == ks && o.Moving == 0 {
			return true
		}
	}
	return false
}

// errMoved aborts a separation whose range changed under it (it split, its
// container went, or its indexing policy changed); the next check tries
// again.
var errMoved = errors.New("engine: the range changed during its separation")

// errLeadLost aborts a separation whose node does not lead both keyspaces
// (docs/cluster.md, "Separations in a cluster"): another node won the new
// group's election, or this node lost the source's leadership.
var errLeadLost = errors.New("engine: this node does not lead both keyspaces of a separation")

// leadWait bounds how long a separation waits to lead its new keyspace's
// group; leadSettle how long it waits for a leader it knows to be this
// node, settled (else another node won).
const (
	leadWait   = 10 * time.Second
	leadSettle = 2 * time.Second
)

// separate moves range r of c into a new keyspace (steps 1–3 above). In a
// cluster it runs on the source keyspace's settled leader only, and
// records the move's target before the copy (catalog.BeginMove); a range
// found with a target already is settled (settleMove). One separation runs
// on a node at a time.
func (e *Engine) separate(ctx context.Context, c *catalog.Container, r partition.Range) (err error) {
	e.separating.Lock()
	defer e.separating.Unlock()
	if cur, err := e.cat.Container(c.DB, c.ID); err != nil || cur.Internal != c.Internal {
		return nil
	} else {
		c = cur
	}
	rec, ok := c.Record(r.ID)
	if !ok {
		return nil
	}
	if rec.Moving != 0 {
		return e.settleMove(c, r, rec)
	}
	if !shared(c, r) {
		return nil
	}
	from := rec.Keyspace
	src, err := e.host.Replica(from)
	if err != nil {
		return err
	}
	if src.Lead() != nil {
		return nil // the source's leader separates it
	}
	c, to, err := e.cat.BeginMove(c.DB, c.ID, c.Internal, r.ID, from, e.host.Holds)
	if err != nil {
		return err
	}
	decided := false // a decision was proposed in src: only its settled leader may read it
	defer func() {
		if err != nil && !decided {
			// Nothing will refer to the new keyspace.
			if aerr := e.abandonMove(c, r, from, to); aerr != nil && !storeRefused(aerr) {
				e.log.Warn("abandon a separation", "container", c.Link(), "range", r.ID, "keyspace", to, "err", aerr)
			}
		}
	}()
	dst, err := e.host.Replica(to)
	if err != nil {
		return err
	}
	if err := e.takeLead(ctx, dst); err != nil {
		return err
	}
	e.log.Info("separating a partition", "container", c.Link(), "range", r.ID, "from", from, "to", to)
	cp := copier{e: e, c: c, dst: dst, span: epkSpan(r.Min, r.Max), stats: statsEPKSpan(r.Min, r.Max)}
	var after uint64
	for round := 0; round < maxCatchUpRounds; round++ {
		n, next, err := cp.round(ctx, src, after)
		if err != nil {
			return err
		}
		after = next
		if n < 64 {
			break
		}
	}
	// A write given up on (a Commit that answered 408) may still apply in
	// src: the last round must come after it has, or the fence would
	// leave it behind in src, where readers may have seen it. Held off,
	// the writers make no new one; wait for those before the hold, and
	// give up if one came meanwhile.
	if err := awaitDoubts(ctx, src, doubtWait); err != nil {
		return err
	}
	release := e.colls.exclusive(c.Internal)
	defer release()
	releaseMaps := e.maps.exclusive(c.Internal)
	defer releaseMaps()
	if err := awaitDoubts(ctx, src, doubtWaitHeld); err != nil {
		return err
	}
	cur, err := e.cat.Container(c.DB, c.ID)
	if err != nil || cur.Internal != c.Internal {
		return errMoved
	}
	if rec, ok := cur.Record(r.ID); !ok || rec.Keyspace != from || rec.Moving != to {
		return errMoved
	}
	if cur.PolicyJSON() != c.PolicyJSON() || cur.Indexed != c.Indexed {
		// The index was rebuilt for another policy during the copy: the
		// copied entries follow the old one.
		return errMoved
	}
	if src.Lead() != nil || dst.Lead() != nil {
		return errLeadLost
	}
	cp.c = cur
	if _, _, err := cp.round(ctx, src, after); err != nil {
		return err
	}
	cut := src.LastLSN()
	if err := dst.AdvanceLSN(cut); err != nil {
		return err
	}
	if err := e.setFormat(to); err != nil {
		return err
	}
	if e.cfg.Replicated {
		if err := e.setPolicy(dst, cur); err != nil {
			return err
		}
		// The fence: from its commit on, src serves nothing of the range,
		// and the move stands whatever happens to this node.
		decided = true
		d, err := e.decideMove(src, moveMoved, to, r, cut)
		if err != nil {
			return err
		}
		if d.state != moveMoved {
			return errMoved // abandoned by an earlier leader of src
		}
	}
	if _, err := e.cat.MoveRange(c.DB, c.ID, c.Internal, r.ID, from, to, cut); err != nil {
		return err
	}
	e.log.Info("separated a partition", "container", c.Link(), "range", r.ID, "keyspace", to)
	return nil
}

// doubtWait bounds a separation's wait for the source's writes in doubt
// before it holds the container's writers off, doubtWaitHeld while it
// holds them.
const (
	doubtWait     = 10 * time.Second
	doubtWaitHeld = time.Second
)

// awaitDoubts waits at most d for rep's writes in doubt to be settled.
func awaitDoubts(ctx context.Context, rep replica.Replica, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := rep.AwaitDoubts(ctx); err != nil {
		return fmt.Errorf("engine: separation: %w", err)
	}
	return nil
}

// takeLead makes this node the settled leader of dst, a keyspace created
// for a separation: it campaigns while the group knows no leader, and
// fails with errLeadLost when another node won (or after leadWait).
func (e *Engine) takeLead(ctx context.Context, dst replica.Replica) error {
	start := time.Now()
	var known time.Time // when a leader was first known
	for {
		err := dst.Lead()
		if err == nil {
			return nil
		}
		nl, ok := errors.AsType[*replica.NotLeaderError](err)
		if !ok {
			return err
		}
		switch {
		case nl.Leader == 0:
			known = time.Time{}
			if err := dst.Campaign(); err != nil {
				return err
			}
		case known.IsZero():
			known = time.Now()
		case time.Since(known) > leadSettle:
			return errLeadLost
		}
		if time.Since(start) > leadWait {
			return errLeadLost
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// abandonMove gives up the move of range r of c from keyspace from to
// keyspace to: in a cluster it records the decision in from first (which
// this node must lead; if the move was decided already, it is recorded in
// the catalog instead), then clears the catalog's target and drops this
// node's replica of it (the others drop theirs when they see the change).
func (e *Engine) abandonMove(c *catalog.Container, r partition.Range, from, to uint64) error {
	if e.cfg.Replicated {
		src, err := e.host.Replica(from)
		if err != nil {
			return err
		}
		release := e.colls.exclusive(c.Internal)
		defer release()
		if err := src.Lead(); err != nil {
			return err // the source's next leader settles the move
		}
		d, err := e.decideMove(src, moveAbandoned, to, r, 0)
		if err != nil {
			return err
		}
		if d.state == moveMoved {
			// The coordinator that advanced the target is gone; its
			// fence carries the cut (0 in a fence written before fences
			// did: no cut check for this range).
			_, err := e.cat.MoveRange(c.DB, c.ID, c.Internal, r.ID, from, to, d.cut)
			if err == nil {
				e.log.Info("recorded a partition's separation", "container", c.Link(), "range", r.ID, "keyspace", to)
			}
			return err
		}
	}
	if _, err := e.cat.AbandonMove(c.DB, c.ID, c.Internal, r.ID, to); err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return err
	}
	e.log.Info("abandoned a partition's separation", "container", c.Link(), "range", r.ID, "keyspace", to)
	if err := e.host.Drop(to); err != nil {
		e.log.Warn("drop an abandoned keyspace", "keyspace", to, "err", err)
	}
	return nil
}

// settleMove finishes a move this node did not start, or started before it
// restarted (the range's record names a target, rec.Moving, and no
// separation runs here): in a cluster, the source keyspace's settled
// leader records the decision its log holds in the catalog, or abandons
// the move if it holds none; on one node, the move is abandoned.
func (e *Engine) settleMove(c *catalog.Container, r partition.Range, rec catalog.RangeRecord) error {
	if e.cfg.Replicated {
		src, err := e.host.Replica(rec.Keyspace)
		if err != nil {
			return err
		}
		if src.Lead() != nil {
			return nil // the source's leader settles it
		}
	}
	return e.abandonMove(c, r, rec.Keyspace, rec.Moving)
}

// copier copies one range's items into a new keyspace in batches, each
// holding the items of many logical partitions.
type copier struct {
	e     *Engine
	c     *catalog.Container
	dst   replica.Replica
	span  replica.Span // the range's items
	stats replica.Span // the range's statistics
	b     replica.Batch
	lps   map[string]*lpTxn // by logical partition, for the open batch
	n     int
}

// round copies the range's items whose change entries in src lie after
// after, drops the items src no longer has, and returns how many items it
// copied or dropped and the position the next round starts after.
func (cp *copier) round(ctx context.Context, src replica.Replica, after uint64) (n int, next uint64, err error) {
	next = src.StableLSN() // every LSN up to it is in the snapshot
	snap, err := src.Snapshot()
	if err != nil {
		return 0, 0, err
	}
	defer snap.Close()
	defer cp.discard()
	// Items gone from src are dropped before the copies too, so that a
	// copied item never meets the stale holder of its unique values.
	dropped, err := cp.dropGone(ctx, snap)
	if err != nil {
		return 0, 0, err
	}
	var failed error
	err = replica.Scan(ctx, snap, changeSpan(after), func(_, v []byte) bool {
		itemKey, txnEnd, err := splitChangeValue(v)
		if err != nil {
			failed = err
			return false
		}
		if !cp.span.Contains(itemKey) {
			return true
		}
		doc, err := snap.Get(itemKey)
		if err == nil {
			err = cp.place(itemKey, doc, txnEnd)
		}
		if err != nil {
			failed = err
			return false
		}
		n++
		return true
	})
	if err == nil {
		err = failed
	}
	if err == nil {
		err = cp.flush()
	}
	if err != nil {
		return 0, 0, err
	}
	more, err := cp.dropGone(ctx, snap)
	if err != nil {
		return 0, 0, err
	}
	return n + dropped + more, next, nil
}

// dropGone drops the copied items src's snapshot no longer has: in the
// logical partitions whose statistics differ between src and the copy (the
// copy holds every item of src after a round's copies, so equal statistics
// mean equal items).
func (cp *copier) dropGone(ctx context.Context, snap replica.Snapshot) (int, error) {
	want := map[string][]byte{}
	if err := replica.Scan(ctx, snap, cp.stats, func(k, v []byte) bool {
		want[string(k)] = bytes.Clone(v)
		return true
	}); err != nil {
		return 0, err
	}
	var differ [][]byte
	if err := replica.Scan(ctx, cp.dst, cp.stats, func(k, v []byte) bool {
		if !bytes.Equal(want[string(k)], v) {
			differ = append(differ, bytes.Clone(k))
		}
		return true
	}); err != nil {
		return 0, err
	}
	n := 0
	for _, sk := range differ {
		epk, pk, err := decodeStatsKey(sk)
		if err != nil {
			return n, err
		}
		var gone [][]byte
		if err := replica.Scan(ctx, cp.dst, logicalSpan(epk, pk), func(k, _ []byte) bool {
			if _, err := snap.Get(k); errors.Is(err, replica.ErrNotFound) {
				gone = append(gone, bytes.Clone(k))
			}
			return true
		}); err != nil {
			return n, err
		}
		for _, k := range gone {
			if err := cp.drop(k); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, cp.flush()
}

// txn returns the transaction of the open batch on itemKey's logical
// partition, and the item's id.
func (cp *copier) txn(itemKey, doc []byte) (*lpTxn, string, error) {
	ik, err := decodeItemKey(itemKey)
	if err != nil {
		return nil, "", err
	}
	if cp.b == nil {
		cp.b, cp.lps = cp.dst.NewBatch(true), map[string]*lpTxn{}
	}
	lp := string(appendEscaped(appendEscaped(nil, ik.EPK), ik.PK))
	t := cp.lps[lp]
	if t == nil {
		pk, _, err := document.DecodePartitionKey(ik.PK)
		if err != nil {
			return nil, "", fmt.Errorf("item key %x: %w", itemKey, err)
		}
		t = &lpTxn{e: cp.e, c: cp.c, pk: pk, epk: ik.EPK, pkEnc: ik.PK, rep: cp.dst, b: cp.b, unlock: func() {}, system: true}
		cp.lps[lp] = t
	}
	return t, ik.ID, nil
}

// place copies doc, src's latest version of the item at itemKey.
func (cp *copier) place(itemKey, doc []byte, txnEnd uint64) error {
	t, id, err := cp.txn(itemKey, doc)
	if err != nil {
		return err
	}
	if err := t.place(id, doc, txnEnd); err != nil {
		return err
	}
	return cp.count()
}

// drop deletes the copy of the item at itemKey.
func (cp *copier) drop(itemKey []byte) error {
	t, id, err := cp.txn(itemKey, nil)
	if err != nil {
		return err
	}
	old, err := t.b.Get(itemKey)
	if err != nil {
		return err
	}
	props, err := document.Props(old)
	if err != nil {
		return err
	}
	if _, err := t.drop(id, old, props); err != nil {
		return err
	}
	return cp.count()
}

func (cp *copier) count() error {
	if cp.n++; cp.n%batchSize == 0 {
		return cp.flush()
	}
	return nil
}

// flush writes the open batch's statistics and commits it.
func (cp *copier) flush() error {
	if cp.b == nil {
		return nil
	}
	for _, t := range cp.lps {
		t.writeStats()
	}
	err := cp.dst.Commit(cp.b)
	cp.discard()
	return err
}

func (cp *copier) discard() {
	if cp.b != nil {
		cp.b.Close()
		cp.b, cp.lps = nil, nil
	}
}

// place stores doc, a stored version of item id copied from another
// keyspace, over the version the transaction sees (if any), with its
// derived entries and its share of the statistics; its change entry keeps
// txnEnd, the mark of the transaction that wrote it (changeValue).
func (t *lpTxn) place(id string, doc []byte, txnEnd uint64) error {
	props, err := document.Props(doc)
	if err != nil {
		return err
	}
	seq, err := ridSeq(props.RID)
	if err != nil {
		return err
	}
	lsn, err := document.ETagSeq(props.ETag)
	if err != nil {
		return err
	}
	key := t.key(id)
	old, err := t.b.Get(key)
	switch {
	case errors.Is(err, replica.ErrNotFound):
		old = nil
	case err != nil:
		return err
	}
	var oldETag string
	if old != nil {
		op, err := document.Props(old)
		if err != nil {
			return err
		}
		switch {
		case op.ETag == props.ETag:
			return nil // this version is here already
		case op.RID != props.RID:
			// Deleted and created again since: a new item.
			if _, err := t.drop(id, old, op); err != nil {
				return err
			}
			old = nil
		default:
			oldETag = op.ETag
		}
	}
	unique, err := t.checkUnique(id, old, doc)
	if err != nil {
		return err
	}
	created := int64(0)
	if old == nil {
		created = 1
	}
	if err := t.grow(int64(len(doc))-int64(len(old)), created); err != nil {
		return err
	}
	if err := t.applyUnique(id, unique); err != nil {
		return err
	}
	if _, err := t.indexItem(key, seq, old, doc); err != nil {
		return err
	}
	if err := t.moveChange(key, oldETag, lsn); err != nil {
		return err
	}
	if txnEnd != 0 {
		t.b.Set(changeKey(lsn), changeValue(key, txnEnd))
	}
	t.b.Set(key, doc)
	return nil
}

// collect deletes what range rangeID of c left in the keyspace it was
// separated from (RangeRecord.From), then clears the record. Readers of the
// old keyspace's other ranges filter the leftovers meanwhile.
func (e *Engine) collect(ctx context.Context, c *catalog.Container, rangeID string) error {
	var from uint64
	for _, rec := range c.Ranges {
		if rec.ID == rangeID {
			from = rec.From
		}
	}
	r, ok := c.Map().ByID(rangeID)
	if !ok || from == 0 {
		return nil
	}
	rep, err := e.host.Replica(from)
	if err != nil {
		return err
	}
	items := epkSpan(r.Min, r.Max)
	b := rep.NewBatch(false)
	defer b.Close()
	b.DeleteSpan(items)
	b.DeleteSpan(statsEPKSpan(r.Min, r.Max))
	for i := range c.UniqueKeys() {
		b.DeleteSpan(uniqueEPKSpan(uint16(i), r.Min, r.Max))
	}
	if err := rep.Commit(b); err != nil {
		return err
	}
	// Order, index and change entries are keyed by sequence numbers: find
	// the range's by the item keys they hold.
	snap, err := rep.Snapshot()
	if err != nil {
		return err
	}
	defer snap.Close()
	w := newBatcher(rep)
	defer w.close()
	for _, kind := range []byte{kindOrder, kindIndex, kindComposite, kindChange} {
		var failed error
		err := replica.Scan(ctx, snap, kindSpan(kind), func(k, v []byte) bool {
			if kind == kindChange {
				if ik, _, err := splitChangeValue(v); err == nil {
					v = ik
				}
			}
			if !items.Contains(v) {
				return true
			}
			w.b.Delete(k)
			failed = w.wrote()
			return failed == nil
		})
		if err == nil {
			err = failed
		}
		if err != nil {
			return err
		}
	}
	if err := w.flush(); err != nil {
		return err
	}
	// The range's entries were interleaved with its siblings', so they went
	// as point deletions: compact them away rather than leave the siblings'
	// reads to pass over them until Pebble's own compactions come by.
	if err := e.host.Compact(ctx, from); err != nil {
		return err
	}
	if _, err := e.cat.Collected(c.DB, c.ID, c.Internal, rangeID); err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return err
	}
	e.log.Info("collected a separated partition's leftovers", "container", c.Link(), "range", rangeID, "keyspace", from)
	return nil
}

// checkSeparations separates, once per call, a range sharing its keyspace
// with a sibling in each container, and collects what earlier separations
// left behind.
func (e *Engine) checkSeparations(ctx context.Context) {
	for _, d := range e.cat.Databases() {
		colls, err := e.cat.Containers(d.ID)
		if err != nil {
			continue
		}
		for _, c := range colls {
			for _, rec := range c.Ranges {
				if rec.From == 0 {
					continue
				}
				key := fmt.Sprintf("%d/%s", c.Internal, rec.ID)
				if !e.collectRetry.due(key, e.now()) {
					continue
				}
				err := e.collect(ctx, c, rec.ID)
				e.collectRetry.done(key, e.now(), err != nil)
				if err != nil && !storeRefused(err) {
					e.log.Warn("collect a separated partition's leftovers", "container", c.Link(), "range", rec.ID, "err", err)
				}
			}
			for _, r := range c.Map().Ranges() {
				rec, _ := c.Record(r.ID)
				if rec.Moving == 0 && !shared(c, r) {
					continue
				}
				if src, err := e.host.Replica(rec.Keyspace); err != nil || src.Lead() != nil {
					continue // the source's leader separates it, or settles its move
				}
				if err := e.separate(ctx, c, r); err != nil && !errors.Is(err, errMoved) && !errors.Is(err, errLeadLost) && !storeRefused(err) && ctx.Err() == nil {
					e.log.Warn("separate a partition", "container", c.Link(), "range", r.ID, "err", err)
				}
				break // one per container per check
			}
		}
	}
}

// backoffs spaces the retries of work that failed, by key: each attempt
// of a collection commits its deletions and compacts the source keyspace
// again before it records itself in the catalog, so while the catalog
// cannot be written (etcd without a quorum) retrying at every check would
// do that every second.
type backoffs struct {
	mu sync.Mutex
	at map[string]backoff
}

type backoff struct {
	next time.Time
	wait time.Duration
}

// The first retry of failed work waits backoffMin, each later one twice
// the last, up to backoffMax.
const (
	backoffMin = 2 * time.Second
	backoffMax = time.Minute
)

// due reports whether the work of key may run at now.
func (b *backoffs) due(key string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.at[key]
	return !ok || !now.Before(r.next)
}

// done records the outcome of key's attempt at now.
func (b *backoffs) done(key string, now time.Time, failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !failed {
		delete(b.at, key)
		return
	}
	if b.at == nil {
		b.at = map[string]backoff{}
	}
	r := b.at[key]
	r.wait = min(max(2*r.wait, backoffMin), backoffMax)
	r.next = now.Add(r.wait)
	b.at[key] = r
}

// Moving reports whether keyspace ks takes part in a separation under way
// (the source or the target of a range whose record names a target): in
// a cluster, leader balance leaves its group alone, since one node must
// lead both through the cut-over.
func (e *Engine) Moving(ks uint64) bool {
	for _, d := range e.cat.Databases() {
		colls, _ := e.cat.Containers(d.ID)
		for _, c := range colls {
			for _, rec := range c.Ranges {
				if rec.Moving != 0 && (rec.Moving == ks || rec.Keyspace == ks) {
					return true
				}
			}
		}
	}
	return false
}
