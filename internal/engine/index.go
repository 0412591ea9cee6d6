package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

// Secondary entries. Besides the item itself, every item has an order entry
// (store.OrderKey by the sequence number in its _rid: a container's items in
// creation order, the order Cosmos DB returns a partition's documents in).
// They are written in the same store batch as the item, so they are exactly
// as durable as it is (docs/query-engine.md).

// indexFormat is the version of the secondary entries' layout. A store
// written with another version has them rebuilt when the engine opens it.
const indexFormat = 1

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
func (t *lpTxn) indexItem(key []byte, seq uint64, old, new []byte) error {
	ok := store.OrderKey(t.c.Internal, seq)
	switch {
	case old == nil && new != nil:
		t.b.Set(ok, key)
	case old != nil && new == nil:
		t.b.Delete(ok)
	}
	return nil
}

// ensureIndexes rebuilds every container's secondary entries when the store
// holds them in another format (or, written before they existed, not at
// all), then records the current format. It runs before the engine serves.
func (e *Engine) ensureIndexes(ctx context.Context, st *store.Store) error {
	v, err := st.Get(formatKey)
	switch {
	case err == nil && string(v) == strconv.Itoa(indexFormat):
		return nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return err
	}
	for _, db := range e.cat.Databases() {
		colls, err := e.cat.Containers(db.ID)
		if err != nil {
			return err
		}
		for _, c := range colls {
			if err := e.rebuildOrder(ctx, st, c); err != nil {
				return fmt.Errorf("engine: rebuild the order entries of %s: %w", c.Link(), err)
			}
		}
	}
	b := st.NewBatch()
	defer b.Close()
	b.Set(formatKey, []byte(strconv.Itoa(indexFormat)))
	return b.Commit()
}

// rebuildOrder replaces container c's order entries with ones derived from
// its items, committing in batches of rebuildBatch items.
func (e *Engine) rebuildOrder(ctx context.Context, st *store.Store, c *catalog.Container) error {
	const rebuildBatch = 1024
	b := st.NewBatch()
	b.DeleteSpan(store.OrderSpan(c.Internal))
	n := 0
	var failed error
	err := st.Scan(ctx, store.ContainerSpan(c.Internal), nil, func(k, v []byte) bool {
		props, err := document.Props(v)
		if err != nil {
			failed = err
			return false
		}
		seq, err := ridSeq(props.RID)
		if err != nil {
			failed = err
			return false
		}
		b.Set(store.OrderKey(c.Internal, seq), k)
		if n++; n%rebuildBatch == 0 {
			if failed = b.Commit(); failed != nil {
				return false
			}
			b = st.NewBatch()
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
