package catalog

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
)

// Observe makes the catalog's memory follow a change another node made to
// a shared backend (Shared): key now holds value, or was deleted. Records
// the catalog keeps in memory (databases, containers, offers, its
// sequences) are replaced; containers are copy-on-write, so a reader keeps
// the one it holds. Records read through the backend (users, permissions,
// scripts, partition key deletes) need nothing. The backend's owner passes
// the changes in the order they were made, and never a change older than
// one this node made itself.
//
// A record this node cannot read is an error: its memory then lags the
// backend, and the caller must reload the catalog (Open).
func (c *Catalog) Observe(key string, value []byte, deleted bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case key == keySeq || key == keyKeyspace:
		to := &c.mu.seq
		if key == keyKeyspace {
			to = &c.mu.keyspace
		}
		if deleted {
			return nil // never deleted; a reset would reuse numbers
		}
		if len(value) != 8 {
			return fmt.Errorf("catalog: bad %s record", key)
		}
		*to = max(*to, binary.BigEndian.Uint64(value))
	case strings.HasPrefix(key, keyDB):
		id := key[len(keyDB):]
		if deleted {
			delete(c.mu.dbs, id)
			delete(c.mu.colls, id)
			return nil
		}
		var d Database
		if err := json.Unmarshal(value, &d); err != nil {
			return fmt.Errorf("catalog: database %s: %w", id, err)
		}
		c.mu.dbs[id] = &d
		if c.mu.colls[id] == nil {
			c.mu.colls[id] = map[string]*Container{}
		}
	case strings.HasPrefix(key, keyColl):
		db, id, ok := strings.Cut(key[len(keyColl):], "\x00")
		if !ok {
			return fmt.Errorf("catalog: bad container key %q", key)
		}
		if deleted {
			delete(c.mu.colls[db], id)
			return nil
		}
		var k Container
		if err := json.Unmarshal(value, &k); err != nil {
			return fmt.Errorf("catalog: container %s/%s: %w", db, id, err)
		}
		if err := k.derive(); err != nil {
			return fmt.Errorf("catalog: container %s/%s: %w", db, id, err)
		}
		if c.mu.colls[db] == nil {
			// The database's record comes in the same change; it may be
			// observed after its containers.
			c.mu.colls[db] = map[string]*Container{}
		}
		c.mu.colls[db][id] = &k
	case strings.HasPrefix(key, keyOffer):
		id := key[len(keyOffer):]
		if deleted {
			delete(c.mu.offers, id)
			return nil
		}
		var o Offer
		if err := json.Unmarshal(value, &o); err != nil {
			return fmt.Errorf("catalog: offer %s: %w", id, err)
		}
		c.mu.offers[id] = &o
	}
	return nil
}
