package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

// Secondary entries. Besides the item itself, every item has a change entry
// (store.ChangeKey by the sequence number of its last write: the change
// feed's order), an order entry
// (store.OrderKey by the sequence number in its _rid: a container's items in
// creation order, the order Cosmos DB returns a partition's documents in),
// and an index entry (store.IndexKey) for every term (path and scalar value)
// its container's indexing policy indexes, and a unique key entry
// (store.UniqueKey, unique.go) per unique key. They are written in the same
// store batch as the item, so they are exactly as durable as it is
// (docs/query-engine.md). Entries are not keyed by physical partition: a
// split moves no entry, and a partition's readers filter entries by the EPK
// in the item key they hold.

// indexFormat is the version of the secondary entries' layout. A store
// written with another version has them rebuilt when the engine opens it.
const indexFormat = 6 // 6: unique key entries

// formatKey is the meta key holding indexFormat of the stored entries.
var formatKey = store.MetaKey([]byte("engine/index-format"))

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
	c := t.c.Internal
	ok := store.OrderKey(c, seq)
	switch {
	case old == nil && new != nil:
		t.b.Set(ok, key)
	case old != nil && new == nil:
		t.b.Delete(ok)
	}
	pol := t.c.Policy()
	if pol.None() {
		return 0, nil
	}
	// Terms come sorted and without duplicates: one merge pass finds the
	// terms to remove and the ones to add; unchanged ones are not rewritten.
	var was [][]byte
	if old != nil {
		if err := pol.Terms(old, func(term []byte) { was = append(was, bytes.Clone(term)) }); err != nil {
			return 0, translate(fmt.Errorf("index the stored item: %w", err))
		}
	}
	i, n := 0, 0
	if new != nil {
		if err := pol.Terms(new, func(term []byte) {
			for i < len(was) && bytes.Compare(was[i], term) < 0 {
				t.b.Delete(store.IndexKey(c, was[i], seq))
				i, n = i+1, n+1
			}
			if i < len(was) && bytes.Equal(was[i], term) {
				i++
				return
			}
			t.b.Set(store.IndexKey(c, term, seq), key)
			n++
		}); err != nil {
			return 0, translate(fmt.Errorf("index the item: %w", err))
		}
	}
	for ; i < len(was); i++ {
		t.b.Delete(store.IndexKey(c, was[i], seq))
		n++
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
		t.b.Delete(store.ChangeKey(t.c.Internal, old))
	}
	if lsn != 0 {
		t.b.Set(store.ChangeKey(t.c.Internal, lsn), key)
	}
	return nil
}

// ensureIndexes rebuilds every container's secondary entries when the store
// holds them in another format (or, written before they existed, not at
// all), then records the current format. It runs before the engine serves.
//
// Containers whose index entries do not reflect their current indexing
// policy (a replace interrupted by a crash) have them rebuilt too.
func (e *Engine) ensureIndexes(ctx context.Context, st *store.Store) error {
	v, err := st.Get(formatKey)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	formatOK := err == nil && string(v) == strconv.Itoa(indexFormat)
	for _, db := range e.cat.Databases() {
		colls, err := e.cat.Containers(db.ID)
		if err != nil {
			return err
		}
		for _, c := range colls {
			if !formatOK {
				if err := e.rebuild(ctx, c, store.OrderSpan(c.Internal), e.orderEntries(c)); err != nil {
					return fmt.Errorf("engine: rebuild the order entries of %s: %w", c.Link(), err)
				}
				if err := e.rebuild(ctx, c, store.ChangeSpan(c.Internal, 0), e.changeEntries(c)); err != nil {
					return fmt.Errorf("engine: rebuild the change entries of %s: %w", c.Link(), err)
				}
				if err := e.rebuildStats(ctx, c); err != nil {
					return fmt.Errorf("engine: rebuild the logical partition statistics of %s: %w", c.Link(), err)
				}
				// Unique key policies were kept verbatim but not enforced
				// before format 6: their entries start here.
				if len(c.UniqueKeys()) > 0 {
					if err := e.rebuild(ctx, c, store.UniqueSpan(c.Internal), e.uniqueEntries(c)); err != nil {
						return fmt.Errorf("engine: rebuild the unique key entries of %s: %w", c.Link(), err)
					}
				}
			}
			if !formatOK || !c.IndexCurrent() {
				if err := e.rebuildTerms(ctx, c); err != nil {
					return fmt.Errorf("engine: rebuild the index of %s: %w", c.Link(), err)
				}
			}
		}
	}
	if formatOK {
		return nil
	}
	b := st.NewBatch()
	defer b.Close()
	b.Set(formatKey, []byte(strconv.Itoa(indexFormat)))
	return b.Commit()
}

// rebuildTerms replaces container c's index entries with ones for its
// current indexing policy and records that they reflect it. No item
// transaction may run on c meanwhile.
func (e *Engine) rebuildTerms(ctx context.Context, c *catalog.Container) error {
	if err := e.rebuild(ctx, c, store.IndexSpan(c.Internal, nil, nil), e.termEntries(c)); err != nil {
		return err
	}
	return e.cat.MarkIndexed(c.DB, c.ID, c.Internal, c.PolicyJSON())
}

// entryFunc sets the secondary entries of one stored item in b.
type entryFunc func(b *store.Batch, key []byte, seq uint64, item []byte) error

func (e *Engine) orderEntries(c *catalog.Container) entryFunc {
	return func(b *store.Batch, key []byte, seq uint64, _ []byte) error {
		b.Set(store.OrderKey(c.Internal, seq), key)
		return nil
	}
}

func (e *Engine) changeEntries(c *catalog.Container) entryFunc {
	return func(b *store.Batch, key []byte, _ uint64, item []byte) error {
		props, err := document.Props(item)
		if err != nil {
			return err
		}
		lsn, err := document.ETagSeq(props.ETag)
		if err != nil {
			return err
		}
		b.Set(store.ChangeKey(c.Internal, lsn), key)
		return nil
	}
}

func (e *Engine) termEntries(c *catalog.Container) entryFunc {
	pol := c.Policy()
	return func(b *store.Batch, key []byte, seq uint64, item []byte) error {
		if pol.None() {
			return nil
		}
		return pol.Terms(item, func(term []byte) { b.Set(store.IndexKey(c.Internal, term, seq), key) })
	}
}

// rebuild replaces the entries in span with the ones set derives from each
// of container c's items, committing every rebuildBatch items.
func (e *Engine) rebuild(ctx context.Context, c *catalog.Container, span store.Span, set entryFunc) error {
	const rebuildBatch = 1024
	b := e.data.NewBatch()
	b.DeleteSpan(span)
	n := 0
	var failed error
	err := e.data.Scan(ctx, store.ContainerSpan(c.Internal), nil, func(k, v []byte) bool {
		props, err := document.Props(v)
		if err == nil {
			var seq uint64
			if seq, err = ridSeq(props.RID); err == nil {
				err = set(b, k, seq, v)
			}
		}
		if err != nil {
			failed = err
			return false
		}
		if n++; n%rebuildBatch == 0 {
			if failed = b.Commit(); failed != nil {
				return false
			}
			b = e.data.NewBatch()
		}
		return true
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		b.Close()
		return err
	}
	return b.Commit()
}

// rebuildStats recomputes container c's logical partition statistics from
// its items (stored in key order, so each logical partition's are
// contiguous).
func (e *Engine) rebuildStats(ctx context.Context, c *catalog.Container) error {
	b := e.data.NewBatch()
	defer func() { b.Close() }()
	b.DeleteSpan(store.StatsSpan(c.Internal))
	var cur store.ItemKey
	var st lpStats
	n := 0
	flush := func() {
		if st.items > 0 {
			b.Set(store.StatsKey(c.Internal, cur.EPK, cur.PK), st.encode())
			n++
		}
	}
	var failed error
	err := e.data.Scan(ctx, store.ContainerSpan(c.Internal), nil, func(k, v []byte) bool {
		ik, err := store.DecodeItemKey(k)
		if err != nil {
			failed = err
			return false
		}
		if !bytes.Equal(ik.EPK, cur.EPK) || !bytes.Equal(ik.PK, cur.PK) {
			flush()
			cur, st = ik, lpStats{}
			if n >= 1024 {
				if failed = b.Commit(); failed != nil {
					return false
				}
				b, n = e.data.NewBatch(), 0
			}
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
	if err != nil {
		return err
	}
	flush()
	return b.Commit()
}
