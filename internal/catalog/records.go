package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/partitadb/partita/internal/document"
)

// Records kept under a parent record (users under their database,
// permissions under their user) share one mechanism: a recordKind says what
// differs between kinds, and its methods create, upsert, read, list,
// replace and delete the records of any kind. Each record is one JSON value
// at the key prefix + id, where its parent determines the prefix, so a
// prefix scan lists a parent's records.
//
// Locking: a write holds c.mu from finding the parent, through the checks
// of ids, to the write of the record, so that no other write slips in
// between; a read holds the read lock while it finds the parent and reads
// the record. getRecord, loadRecords and list read the backend only and
// take no lock themselves: their callers decide.
//
// Scripts (scripts.go) use getRecord, loadRecords, withSystem and validID,
// but not recordKind: their parent is a container and a script kind, they
// are listed in id order, their records carry no creation order, and their
// reads, replaces and deletes find the script before taking c.mu.

// record is a pointer to a record type R, with what the shared functions
// need of it.
type record[R any] interface {
	*R
	recordID() string   // its id: the last part of its key
	recordSeq() uint64  // its creation order
	recordETag() string // its _etag
}

// parentID names the parent of a record: database db, or user user of it.
type parentID struct{ db, user string }

// recordKind describes a kind of record kept under a parent: P is the
// parent, D a parsed definition, R the record type (and PR is *R). The
// zero value is not usable; every field but cascadeLocked is required.
type recordKind[P, D, R any, PR record[R]] struct {
	// what names the kind in errors: "user", "permission".
	what string
	// parentLocked returns the parent at names, or ErrNotFound; c.mu is
	// held (read or write).
	parentLocked func(c *Catalog, at parentID) (P, error)
	// prefix returns the key prefix of p's records.
	prefix func(p P) string
	// parse validates a definition; its errors are *InvalidError.
	parse func(body []byte) (D, error)
	// defID is the id a definition gives its record.
	defID func(def D) string
	// renames reports whether a replace may give a record the body's id as
	// its new id; otherwise the body's id must be the one replaced.
	renames bool
	// buildLocked returns the record def makes under p: a new one (old nil)
	// or old's replacement, with a new sequence number for its _etag. The
	// caller stores it.
	buildLocked func(c *Catalog, p P, def D, old *R) (*R, error)
	// cascadeLocked, if not nil, records in ch the deletion of what goes
	// with record r when it is deleted.
	cascadeLocked func(c *Catalog, ch *changes, p P, r *R) error
}

// withSystem returns definition def, a JSON object, with the system
// properties sys (comma-separated members) added at its end: a resource
// that echoes what the client sent, as Cosmos DB returns scripts and
// permissions.
func withSystem(def json.RawMessage, sys string) []byte {
	body := strings.TrimSpace(string(def))
	if body == "{}" {
		return []byte("{" + sys + "}")
	}
	return []byte(body[:len(body)-1] + "," + sys + "}")
}

// getRecord returns the record at prefix + id, or ErrNotFound; what names
// its kind in errors.
func getRecord[R any](be Backend, what, prefix, id string) (*R, error) {
	v, ok, err := be.Get(prefix + id)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if !ok {
		return nil, ErrNotFound
	}
	var r R
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("catalog: %s %s: %w", what, id, err)
	}
	return &r, nil
}

// loadRecords returns the records whose keys start with prefix, in key
// order.
func loadRecords[R any](ctx context.Context, be Backend, prefix string) ([]*R, error) {
	var out []*R
	if err := be.Load(ctx, prefix, func(_ string, v []byte) error {
		var r R
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		out = append(out, &r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return out, nil
}

// inCreationOrder returns the records with prefix in creation order.
func inCreationOrder[R any, PR record[R]](ctx context.Context, be Backend, prefix string) ([]*R, error) {
	rs, err := loadRecords[R](ctx, be, prefix)
	slices.SortFunc(rs, func(a, b *R) int { return cmp.Compare(PR(a).recordSeq(), PR(b).recordSeq()) })
	return rs, err
}

// getLocked returns p's record id, or ErrNotFound.
func (k *recordKind[P, D, R, PR]) getLocked(c *Catalog, p P, id string) (*R, error) {
	return getRecord[R](c.be, k.what, k.prefix(p), id)
}

// list returns p's records in creation order.
func (k *recordKind[P, D, R, PR]) list(ctx context.Context, c *Catalog, p P) ([]*R, error) {
	return inCreationOrder[R, PR](ctx, c.be, k.prefix(p))
}

// freeLocked returns ErrExists when p has a record id.
func (k *recordKind[P, D, R, PR]) freeLocked(c *Catalog, p P, id string) error {
	_, err := k.getLocked(c, p, id)
	switch {
	case err == nil:
		return ErrExists
	case errors.Is(err, ErrNotFound):
		return nil
	}
	return err
}

// writeLocked builds the record def makes under p (a new one when old is
// nil, else old's replacement) and stores it, under its new id when it has
// one.
func (k *recordKind[P, D, R, PR]) writeLocked(c *Catalog, p P, def D, old *R) (*R, error) {
	r, err := k.buildLocked(c, p, def, old)
	if err != nil {
		return nil, err
	}
	ch := newChanges()
	id := PR(r).recordID()
	if old != nil && PR(old).recordID() != id {
		ch.delete(k.prefix(p) + PR(old).recordID())
	}
	putJSON(ch, k.prefix(p)+id, r)
	c.putSeqLocked(ch)
	if err := ch.apply(c.be); err != nil {
		return nil, err
	}
	return r, nil
}

// create stores a new record under the parent at from its definition. It
// returns ErrNotFound (no parent), ErrExists (the id is taken), or the
// errors of parse and buildLocked.
func (k *recordKind[P, D, R, PR]) create(c *Catalog, at parentID, body []byte) (*R, error) {
	def, err := k.parse(body)
	if err != nil {
		return nil, err
	}
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	p, err := k.parentLocked(c, at)
	if err != nil {
		return nil, err
	}
	if err := k.freeLocked(c, p, k.defID(def)); err != nil {
		return nil, err
	}
	return k.writeLocked(c, p, def, nil)
}

// upsert creates the record body defines, or replaces it when it exists;
// created reports which. Errors as create, but for ErrExists.
func (k *recordKind[P, D, R, PR]) upsert(c *Catalog, at parentID, body []byte) (r *R, created bool, err error) {
	def, err := k.parse(body)
	if err != nil {
		return nil, false, err
	}
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	p, err := k.parentLocked(c, at)
	if err != nil {
		return nil, false, err
	}
	old, err := k.getLocked(c, p, k.defID(def))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, false, err
	}
	r, err = k.writeLocked(c, p, def, old)
	return r, old == nil, err
}

// read returns record id of the parent at, or ErrNotFound.
func (k *recordKind[P, D, R, PR]) read(c *Catalog, at parentID, id string) (*R, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, err := k.parentLocked(c, at)
	if err != nil {
		return nil, err
	}
	return k.getLocked(c, p, id)
}

// replace replaces record id of the parent at with the one body defines.
// When k renames, the body's id is the record's new id, and ErrExists when
// another record has it; otherwise a body's id other than id is an
// *InvalidError. It returns ErrNotFound (no parent or record), and the
// errors of parse and buildLocked; ErrPrecondition when ifMatch ("" for
// none) names another etag.
func (k *recordKind[P, D, R, PR]) replace(c *Catalog, at parentID, id string, body []byte, ifMatch string) (*R, error) {
	def, err := k.parse(body)
	if err != nil {
		return nil, err
	}
	newID := k.defID(def)
	if !k.renames && newID != id {
		return nil, invalid(fmt.Sprintf("the id %q in the body does not match %q in the URL", newID, id))
	}
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	p, err := k.parentLocked(c, at)
	if err != nil {
		return nil, err
	}
	old, err := k.getLocked(c, p, id)
	if err != nil {
		return nil, err
	}
	if document.IfMatchFails(ifMatch, PR(old).recordETag()) {
		return nil, ErrPrecondition
	}
	if newID != id {
		if err := k.freeLocked(c, p, newID); err != nil {
			return nil, err
		}
	}
	return k.writeLocked(c, p, def, old)
}

// delete deletes record id of the parent at, with what goes with it
// (cascadeLocked), or returns ErrNotFound, or ErrPrecondition when ifMatch
// ("" for none) names another etag.
func (k *recordKind[P, D, R, PR]) delete(c *Catalog, at parentID, id, ifMatch string) error {
	unlock, err := c.lockWrite()
	if err != nil {
		return err
	}
	defer unlock()
	p, err := k.parentLocked(c, at)
	if err != nil {
		return err
	}
	r, err := k.getLocked(c, p, id)
	if err != nil {
		return err
	}
	if document.IfMatchFails(ifMatch, PR(r).recordETag()) {
		return ErrPrecondition
	}
	ch := newChanges()
	if k.cascadeLocked != nil {
		if err := k.cascadeLocked(c, ch, p, r); err != nil {
			return err
		}
	}
	ch.delete(k.prefix(p) + id)
	return ch.apply(c.be)
}

// databaseLocked returns database db, or ErrNotFound.
func (c *Catalog) databaseLocked(db string) (*Database, error) {
	d, ok := c.mu.dbs[db]
	if !ok {
		return nil, ErrNotFound
	}
	return d, nil
}

// validID returns an *InvalidError for an id Cosmos DB refuses.
func validID(id string) error {
	if err := document.ValidateID(id); err != nil {
		if ie, ok := errors.AsType[*document.InvalidError](err); ok {
			return invalid(ie.Msg)
		}
		return err
	}
	return nil
}

// deletePrefixLocked records in ch the deletion of every key with prefix.
func (c *Catalog) deletePrefixLocked(ch *changes, prefix string) error {
	if err := c.be.Load(context.Background(), prefix, func(key string, _ []byte) error {
		ch.delete(key)
		return nil
	}); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}
