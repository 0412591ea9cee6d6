package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/replica"
)

// Secondary entries. Besides the item itself, every item has a change entry
// (changeKey by the LSN of its last write: the change feed's order), an
// order entry (orderKey by the sequence number in its _rid: creation order,
// the order Cosmos DB returns a partition's documents in), an index entry
// (indexKey) for every term (path and scalar value) its container's
// indexing policy indexes, a composite index entry (compositeKey) per
// composite index of the policy, and a unique key entry (uniqueKey, unique.go)
// per unique key; its logical partition has statistics (statsKey). They
// live in the item's keyspace and are written in the same batch as the
// item, so they are exactly as durable as it is (docs/query-engine.md).
// Split siblings share a keyspace, so their readers filter entries by the
// EPK in the item key they hold.

// indexFormat is the version of the secondary entries' layout, recorded in
// each keyspace (formatKey). A keyspace holding another version, or none
// (converted from an older release), has them rebuilt when the engine
// opens.
const indexFormat = 10 // 7: keyspaces (docs/storage-seams.md); 8: bounded string terms (index.StringTermBytes), in 2ecc6cd only; 9: with their hash; 10: composite index entries

// ridSeq returns the sequence number in an item's _rid: its last 8 bytes.
func ridSeq(rid string) (uint64, error) {
	b, err := document.DecodeRID(rid)
	if err != nil {
		return 0, err
	}
	if len(b) < 8 {
		return 0, fmt.Errorf("item _rid %q has no sequence number", rid)
	}
	return binary.BigEndian.Uint64(b[len(b)-8:]), nil
}

// indexItem writes the secondary entries for an item changing from old to
// new (nil for none: a create or a delete). key is the item's key and seq
// the sequence number of its _rid, which does not change while it exists.
// It returns how many index entries it wrote or removed.
func (t *lpTxn) indexItem(key []byte, seq uint64, old, new []byte) (int, error) {
	ok := orderKey(seq)
	switch {
	case old == nil && new != nil:
		t.b.Set(ok, key)
	case old != nil && new == nil:
		t.b.Delete(ok)
	}
	// Diff reports only the terms that change, and does not even parse
	// the top-level members the two versions have alike: unchanged entries
	// are not rewritten.
	n, err := t.c.Policy().Diff(old, new, func(term []byte, add bool) {
		if add {
			t.b.Set(indexKey(term, seq), key)
		} else {
			t.b.Delete(indexKey(term, seq))
		}
	})
	if err != nil {
		return 0, translate(fmt.Errorf("index the item: %w", err))
	}
	nc, err := t.compositeItem(key, seq, old, new)
	if err != nil {
		return 0, translate(fmt.Errorf("index the item: %w", err))
	}
	return n + nc, nil
}

// compositeItem writes the composite index entries of an item changing
// from old to new (nil for none): one per composite index of the policy
// for each version, set or deleted where the two differ. It returns how
// many it wrote or removed.
func (t *lpTxn) compositeItem(key []byte, seq uint64, old, new []byte) (int, error) {
	pol := t.c.Policy()
	if pol.None() || pol.Composites() == 0 {
		return 0, nil
	}
	var olds [][]byte
	if old != nil {
		if err := pol.CompositeTerms(old, func(term []byte) { olds = append(olds, bytes.Clone(term)) }); err != nil {
			return 0, err
		}
	}
	n, i := 0, 0
	if new != nil {
		err := pol.CompositeTerms(new, func(term []byte) {
			if i < len(olds) && bytes.Equal(olds[i], term) {
				olds[i] = nil // unchanged
			} else {
				t.b.Set(compositeKey(term, seq), key)
				n++
			}
			i++
		})
		if err != nil {
			return 0, err
		}
	}
	for _, o := range olds {
		if o != nil {
			t.b.Delete(compositeKey(o, seq))
			n++
		}
	}
	return n, nil
}

// moveChange moves an item's change entry from the write that made etag
// (none when etag is empty: a create) to sequence number lsn (none when 0:
// a delete, which latest-version change feeds do not show).
func (t *lpTxn) moveChange(key []byte, etag string, lsn uint64) error {
	if etag != "" {
		old, err := document.ETagSeq(etag)
		if err != nil {
			return translate(fmt.Errorf("stored item: %w", err))
		}
		t.b.Delete(changeKey(old))
		t.changes = slices.DeleteFunc(t.changes, func(ch txnChange) bool { return ch.lsn == old })
	}
	if lsn != 0 {
		t.b.Set(changeKey(lsn), key)
		if t.changes == nil {
			t.changes = t.changeBuf[:0]
		}
		t.changes = append(t.changes, txnChange{lsn, key})
	}
	return nil
}

// ensureIndexes rebuilds the secondary entries of every keyspace that holds
// them in another format (or, converted from an older release, none), then
// records the current format. It runs before the engine serves.
//
// Containers whose index entries do not reflect their current indexing
// policy (a replace interrupted by a crash) have them rebuilt too.
//
// Every keyspace to rebuild is first marked as being rebuilt
// (formatRebuilding), all of them before the first rebuild starts, so that
// a crash during the rebuilds leaves keyspaces Check knows to be waiting
// for the next start's, rather than keyspaces holding items and no format
// record, which no start leaves (a crash hunt: `partita check` failed
// after a kill during the first start on a converted format 6 store).
func (e *Engine) ensureIndexes(ctx context.Context) error {
	type todo struct {
		c   *catalog.Container
		rep replica.Replica
	}
	var rebuild []todo
	for _, db := range e.cat.Databases() {
		colls, err := e.cat.Containers(db.ID)
		if err != nil {
			return err
		}
		for _, c := range colls {
			for _, ks := range c.Keyspaces() {
				rep, err := e.host.Replica(ks)
				if err != nil {
					return err
				}
				if rep.Lead() != nil {
					continue // its leader rebuilds it (reconcile)
				}
				v, err := rep.Get(formatKey)
				if err != nil && !errors.Is(err, replica.ErrNotFound) {
					return err
				}
				if err == nil && string(v) == formatString {
					continue
				}
				if string(v) != formatRebuilding {
					if err := e.markFormat(rep, formatRebuilding); err != nil {
						return err
					}
				}
				rebuild = append(rebuild, todo{c, rep})
			}
		}
	}
	for _, r := range rebuild {
		e.log.Info("rebuilding derived entries", "container", r.c.Link(), "keyspace", r.rep.ID())
		if err := e.rebuildKeyspace(ctx, r.c, r.rep); err != nil {
			return fmt.Errorf("engine: rebuild the entries of %s in keyspace %d: %w", r.c.Link(), r.rep.ID(), err)
		}
	}
	if e.cfg.Replicated {
		return nil
	}
	for _, db := range e.cat.Databases() {
		colls, err := e.cat.Containers(db.ID)
		if err != nil {
			return err
		}
		for _, c := range colls {
			if !c.IndexCurrent() {
				if err := e.rebuildTerms(ctx, c); err != nil {
					return fmt.Errorf("engine: rebuild the index of %s: %w", c.Link(), err)
				}
			}
		}
	}
	return nil
}

// rebuildKeyspace replaces every derived entry of keyspace rep (order,
// change, statistics, unique and index entries) with ones derived from its
// items, then records the current format.
func (e *Engine) rebuildKeyspace(ctx context.Context, c *catalog.Container, rep replica.Replica) error {
	steps := []struct {
		span replica.Span
		set  entryFunc
	}{
		{kindSpan(kindOrder), orderEntries},
		{kindSpan(kindChange), changeEntries},
		{kindSpan(kindUnique), e.uniqueEntries(c)},
		{kindSpan(kindIndex), termEntries(c)},
		{kindSpan(kindComposite), compositeEntries(c)},
	}
	for _, st := range steps {
		if err := e.rebuild(ctx, rep, st.set, st.span); err != nil {
			return err
		}
	}
	if err := e.rebuildStats(ctx, c, rep); err != nil {
		return err
	}
	return e.setFormat(rep.ID())
}

// rebuildTerms replaces container c's index entries with ones for its
// current indexing policy and records that they reflect it. No item
// transaction may run on c meanwhile.
func (e *Engine) rebuildTerms(ctx context.Context, c *catalog.Container) error {
	// The progress a container read reports meanwhile
	// (x-ms-documentdb-collection-index-transformation-progress): items
	// indexed out of the items the statistics count.
	p := &reindexProgress{}
	for _, r := range c.Map().Ranges() {
		if _, items, err := e.rangeTotals(ctx, c, r); err == nil {
			p.total += items
		}
	}
	e.reindex.Store(c.Internal, p)
	defer e.reindex.Delete(c.Internal)
	terms := indexEntries(c)
	counted := func(b replica.Batch, key []byte, seq uint64, item []byte) error {
		p.done.Add(1)
		return terms(b, key, seq, item)
	}
	for _, ks := range c.Keyspaces() {
		rep, err := e.host.Replica(ks)
		if err != nil {
			return err
		}
		if err := e.rebuild(ctx, rep, counted, indexSpans()...); err != nil {
			return err
		}
	}
	return e.cat.MarkIndexed(c.DB, c.ID, c.Internal, c.PolicyJSON())
}

// reindexProgress is how far a running rebuildTerms is: done of total
// items (total from the statistics when it started; they may change
// meanwhile only through writes, which the rebuild holds off).
type reindexProgress struct {
	total int64
	done  atomic.Int64
}

// indexProgress returns the percentage of container c's index built for
// its current indexing policy: 100 when current, else the running
// rebuild's progress (at most 99 until it is recorded as done), 0 when
// none runs yet.
func (e *Engine) indexProgress(c *catalog.Container) int {
	if c.IndexCurrent() {
		return 100
	}
	v, ok := e.reindex.Load(c.Internal)
	if !ok {
		return 0
	}
	p := v.(*reindexProgress)
	return progressPercent(p.done.Load(), p.total)
}

// progressPercent is done out of total as a whole percentage below 100:
// the last percent is the rebuild's being recorded.
func progressPercent(done, total int64) int {
	if total <= 0 || done <= 0 {
		return 0
	}
	return int(min(99, done*100/total))
}

// entryFunc sets the secondary entries of one stored item in b.
type entryFunc func(b replica.Batch, key []byte, seq uint64, item []byte) error

func orderEntries(b replica.Batch, key []byte, seq uint64, _ []byte) error {
	b.Set(orderKey(seq), key)
	return nil
}

func changeEntries(b replica.Batch, key []byte, _ uint64, item []byte) error {
	props, err := document.Props(item)
	if err != nil {
		return err
	}
	lsn, err := document.ETagSeq(props.ETag)
	if err != nil {
		return err
	}
	b.Set(changeKey(lsn), key)
	return nil
}

func termEntries(c *catalog.Container) entryFunc {
	pol := c.Policy()
	return func(b replica.Batch, key []byte, seq uint64, item []byte) error {
		if pol.None() {
			return nil
		}
		return pol.Terms(item, func(term []byte) { b.Set(indexKey(term, seq), key) })
	}
}

// compositeEntries sets an item's composite index entries.
func compositeEntries(c *catalog.Container) entryFunc {
	pol := c.Policy()
	return func(b replica.Batch, key []byte, seq uint64, item []byte) error {
		if pol.None() {
			return nil
		}
		return pol.CompositeTerms(item, func(term []byte) { b.Set(compositeKey(term, seq), key) })
	}
}

// indexEntries sets every entry an item's indexing policy derives: its
// range index and composite index entries (indexSpans).
func indexEntries(c *catalog.Container) entryFunc {
	terms, composites := termEntries(c), compositeEntries(c)
	return func(b replica.Batch, key []byte, seq uint64, item []byte) error {
		if err := terms(b, key, seq, item); err != nil {
			return err
		}
		return composites(b, key, seq, item)
	}
}

// batcher writes to a keyspace in batches of batchSize writes, so that
// work over a whole keyspace (rebuilds, collections) commits as it goes.
type batcher struct {
	rep replica.Replica
	b   replica.Batch // the open batch
	n   int
}

const batchSize = 1024

func newBatcher(rep replica.Replica) *batcher {
	return &batcher{rep: rep, b: rep.NewBatch(false)}
}

// wrote counts one write to the open batch, committing it at batchSize.
func (w *batcher) wrote() error {
	if w.n++; w.n%batchSize != 0 {
		return nil
	}
	return w.flush()
}

// flush commits the open batch and opens another.
func (w *batcher) flush() error {
	err := w.rep.Commit(w.b)
	w.b.Close()
	w.b = w.rep.NewBatch(false)
	return err
}

// close discards what was not flushed.
func (w *batcher) close() { w.b.Close() }

// rebuild replaces the entries in spans of keyspace rep with the ones set
// derives from each of its items.
func (e *Engine) rebuild(ctx context.Context, rep replica.Replica, set entryFunc, spans ...replica.Span) error {
	w := newBatcher(rep)
	defer w.close()
	for _, span := range spans {
		w.b.DeleteSpan(span)
	}
	var failed error
	err := replica.Scan(ctx, rep, itemsSpan(), func(k, v []byte) bool {
		props, err := document.Props(v)
		if err == nil {
			var seq uint64
			if seq, err = ridSeq(props.RID); err == nil {
				err = set(w.b, k, seq, v)
			}
		}
		if err == nil {
			err = w.wrote()
		}
		failed = err
		return err == nil
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		return err
	}
	return w.flush()
}

// rebuildStats recomputes the logical partition statistics of keyspace rep
// from its items (stored in key order, so each logical partition's are
// contiguous).
func (e *Engine) rebuildStats(ctx context.Context, c *catalog.Container, rep replica.Replica) error {
	w := newBatcher(rep)
	defer w.close()
	w.b.DeleteSpan(kindSpan(kindStats))
	var cur itemKey
	var st lpStats
	flush := func() error {
		if st.items == 0 {
			return nil
		}
		w.b.Set(statsKey(cur.EPK, cur.PK), st.encode())
		return w.wrote()
	}
	var failed error
	err := replica.Scan(ctx, rep, itemsSpan(), func(k, v []byte) bool {
		ik, err := decodeItemKey(k)
		if err != nil {
			failed = err
			return false
		}
		if !bytes.Equal(ik.EPK, cur.EPK) || !bytes.Equal(ik.PK, cur.PK) {
			if failed = flush(); failed != nil {
				return false
			}
			cur, st = ik, lpStats{}
		}
		if st.items == 0 {
			if item, err := document.ParseStoredItem(v, c.PK.Paths); err == nil {
				st.key = item.PK.String()
			}
		}
		st.bytes += int64(len(v))
		st.items++
		return true
	})
	if err == nil {
		err = failed
	}
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	return w.flush()
}
