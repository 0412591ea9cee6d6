package engine

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
)

// Time to live (docs/change-feed.md): an item of a container with a
// defaultTtl expires at its _ts plus its own ttl, or the default. Expiry is
// decided at read time by the engine's clock, so an expired item is
// invisible at once to point reads, queries, feeds and the change feed,
// and a write treats it as absent (purging it in the write's transaction).
// The purger deletes expired items in the background, in system
// transactions that are neither admitted nor charged against the
// container's throughput.

// expired reports whether an item of c with system properties props has
// passed its time to live.
func (e *Engine) expired(c *catalog.Container, props document.SystemProps) bool {
	def, on := c.DefaultTTL()
	if !on {
		return false
	}
	at, never := document.ExpiresAt(props.TS, props.TTL, props.HasTTL, def)
	return !never && e.now().Unix() >= at
}

// expiredFilter returns a function reporting whether a stored item of c has
// expired, or nil when c has no time to live (nothing expires). A document
// whose system properties cannot be read is not hidden.
func (e *Engine) expiredFilter(c *catalog.Container) func(doc []byte) bool {
	if _, on := c.DefaultTTL(); !on {
		return nil
	}
	return func(doc []byte) bool {
		props, err := document.Props(doc)
		return err == nil && e.expired(c, props)
	}
}

// purgeBatch bounds how many items one purge pass reads per container.
const purgeBatch = 10000

// purgeCursors remembers, per container, where the purger stopped.
type purgeCursors map[uint64][]byte

// purgeExpired deletes expired items of every container with a time to
// live, reading at most purgeBatch items of each from where the last pass
// stopped (wrapping around at the end). It returns how many it deleted.
func (e *Engine) purgeExpired(ctx context.Context, cursors purgeCursors) int {
	purged := 0
	live := map[uint64]bool{}
	for _, d := range e.cat.Databases() {
		colls, _ := e.cat.Containers(d.ID)
		for _, c := range colls {
			if _, on := c.DefaultTTL(); !on {
				continue
			}
			live[c.Internal] = true
			n, next, err := e.purgeContainer(ctx, c, cursors[c.Internal])
			purged += n
			if err != nil {
				if ctx.Err() == nil && !storeRefused(err) {
					e.log.Warn("purging expired items", "db", c.DB, "container", c.ID, "err", err)
				}
				continue
			}
			cursors[c.Internal] = next
		}
	}
	for k := range cursors {
		if !live[k] {
			delete(cursors, k)
		}
	}
	return purged
}

// purgeContainer reads up to purgeBatch items of c after cursor and
// deletes the expired ones; next is where to go on (nil: from the start).
func (e *Engine) purgeContainer(ctx context.Context, c *catalog.Container, cursor []byte) (purged int, next []byte, err error) {
	type victim struct {
		pk document.PartitionKey
		id string
	}
	var victims []victim
	read := 0
	v := e.newView(ctx, c)
	defer v.close()
	src := docSource{e: e, c: c, r: resolved{span: itemsSpan(), ranges: c.Map().Ranges()}, v: v, byID: true}
	var failed error
	loaded, entries := 0, 0
	var from []byte
	if cursor != nil {
		from = append(bytes.Clone(cursor), 0) // the first key after the cursor
	}
	err = src.read(ctx, queryToken{Key: from}, &loaded, &entries, func(_, _, k, v []byte) bool {
		read++
		next = append(next[:0], k...)
		props, err := document.Props(v)
		if err != nil || !e.expired(c, props) {
			return read < purgeBatch
		}
		it, err := document.ParseStoredItem(v, c.PK.Paths)
		if err != nil {
			failed = err
			return false
		}
		victims = append(victims, victim{it.PK, it.ID})
		return read < purgeBatch
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		return 0, cursor, err
	}
	if read < purgeBatch {
		next = nil // reached the end: start over next time
	}
	for _, v := range victims {
		ok, err := e.purgeItem(c, v.pk, v.id)
		if err != nil {
			return purged, cursor, err
		}
		if ok {
			purged++
		}
	}
	return purged, next, nil
}

// purgeItem deletes item id of logical partition pk if it is still expired
// when its partition is locked, in a system transaction.
func (e *Engine) purgeItem(c *catalog.Container, pk document.PartitionKey, id string) (bool, error) {
	t, err := e.beginSystem(c, pk)
	if err != nil {
		if errors.Is(err, errContainerGone) {
			return false, nil
		}
		return false, err
	}
	defer t.close()
	_, _, exists, err := t.load(id) // purges it if expired
	if err != nil {
		return false, err
	}
	purged := !exists && t.lsn != 0
	return purged, t.commit()
}

// runPurger purges expired items every interval until ctx ends.
func (e *Engine) runPurger(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	cursors := purgeCursors{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.purgeExpired(ctx, cursors)
		}
	}
}
