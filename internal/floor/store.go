package floor

import (
	"encoding/binary"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/status"
)

// account holds the floor's databases.
type account struct {
	seq     atomic.Uint64 // write sequence: etags and LSNs
	nextRID atomic.Uint32 // database and container RIDs

	mu  sync.RWMutex
	dbs map[string]*database // guarded by mu, as is every database's colls
}

func newAccount() *account { return &account{dbs: map[string]*database{}} }

// database is one database and its containers.
type database struct {
	id, rid, etag string
	ts            int64
	colls         map[string]*container // guarded by account.mu
}

// container is one container and its items, grouped by logical partition.
type container struct {
	id, rid, etag string
	db            *database
	body          []byte   // the definition as served, system properties included
	pkPaths       []string // partition key paths, e.g. ["/pk"]

	mu      sync.RWMutex
	parts   []*logical          // in creation order: the cross-partition scan order
	byPK    map[string]*logical // by canonical pk JSON
	nextDoc uint64              // item RID sequence
	lsn     uint64              // last write's sequence
}

// logical is one logical partition's items.
type logical struct {
	items []*item          // in creation order; deleted ones stay as tombstones, so positions (continuations) stay valid
	byID  map[string]*item // live items
}

// item is one stored item. Its fields change only under its container's
// write lock; body is replaced, never modified in place.
type item struct {
	id, rid string
	body    []byte // as served: with system properties
	etag    string
	deleted bool
}

// lookup returns the named database, or a 404.
func (a *account) lookupDB(db string) (*database, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	d := a.dbs[db]
	if d == nil {
		return nil, status.NotFound()
	}
	return d, nil
}

// lookup returns the named container, or a 404.
func (a *account) lookup(db, coll string) (*container, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	d := a.dbs[db]
	if d == nil {
		return nil, status.NotFound().WithSub(status.SubNotFoundOwnerResource)
	}
	c := d.colls[coll]
	if c == nil {
		return nil, status.NotFound()
	}
	return c, nil
}

// newRID returns a fresh 4-byte resource id, as text.
func (a *account) newRID(prefix []byte) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], a.nextRID.Add(1))
	return document.EncodeRID(append(prefix, b[:]...))
}

// pkKey is the map key of a logical partition.
func pkKey(pk document.PartitionKey) string { return pk.String() }

// partitionLocked returns pk's logical partition, creating it when create.
func (c *container) partitionLocked(pk document.PartitionKey, create bool) *logical {
	k := pkKey(pk)
	l := c.byPK[k]
	if l == nil && create {
		l = &logical{byID: map[string]*item{}}
		c.byPK[k] = l
		c.parts = append(c.parts, l)
	}
	return l
}

// get returns the live item id of logical partition pk.
func (c *container) get(pk document.PartitionKey, id string) (item, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	l := c.partitionLocked(pk, false)
	if l == nil {
		return item{}, false
	}
	it := l.byID[id]
	if it == nil {
		return item{}, false
	}
	return *it, true
}

// writeKind is what a write does when the item exists or not.
type writeKind int

const (
	kindCreate  writeKind = iota // 409 if it exists
	kindUpsert                   // create or replace
	kindReplace                  // 404 if it does not exist
)

// write stores the parsed item it under its partition key, as kind says,
// checking ifMatch ("" for none) against the existing item's etag; ts is
// its _ts (Unix seconds). It
// returns the stored item and whether it was created.
func (c *container) write(a *account, kind writeKind, it *document.Item, ifMatch string, ts int64) (item, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.partitionLocked(it.PK, true)
	old := l.byID[it.ID]
	switch {
	case old == nil && kind == kindReplace:
		return item{}, false, status.NotFound()
	case old != nil && kind == kindCreate:
		return item{}, false, status.Conflict()
	case ifMatch != "" && (old == nil || old.etag != ifMatch):
		return item{}, false, status.PreconditionFailed()
	}
	seq := a.seq.Add(1)
	c.lsn = seq
	etag := document.ETag(seq)
	if old != nil {
		old.body = it.Marshal(document.SystemProps{RID: old.rid, Self: document.ItemSelf(c.db.rid, c.rid, old.rid), ETag: etag, TS: ts})
		old.etag = etag
		return *old, false, nil
	}
	c.nextDoc++
	var b [16]byte
	copy(b[:], mustDecodeRID(c.rid))
	binary.BigEndian.PutUint64(b[8:], c.nextDoc)
	rid := document.EncodeRID(b[:])
	n := &item{id: it.ID, rid: rid, etag: etag,
		body: it.Marshal(document.SystemProps{RID: rid, Self: document.ItemSelf(c.db.rid, c.rid, rid), ETag: etag, TS: ts})}
	l.byID[it.ID] = n
	l.items = append(l.items, n)
	return *n, true, nil
}

// remove deletes item id of logical partition pk, checking ifMatch.
func (c *container) remove(a *account, pk document.PartitionKey, id, ifMatch string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.partitionLocked(pk, false)
	if l == nil || l.byID[id] == nil {
		return status.NotFound()
	}
	old := l.byID[id]
	if ifMatch != "" && old.etag != ifMatch {
		return status.PreconditionFailed()
	}
	c.lsn = a.seq.Add(1)
	// It stays in the order slice as a tombstone, so a query paging over
	// this partition keeps its positions.
	delete(l.byID, id)
	old.deleted = true
	old.body = nil
	return nil
}

// session returns the container's session token: one range, its last write.
func (c *container) session() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return "0:-1#" + utoa(c.lsn)
}

func mustDecodeRID(s string) []byte {
	b, err := document.DecodeRID(s)
	if err != nil {
		panic("floor: " + err.Error()) // the floor made it
	}
	return b
}

// badPK is the 400 of a partition key header that does not match the
// container's definition.
func badPK(msg string) error {
	return status.New(http.StatusBadRequest, msg)
}
