package store

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// errBatchDone is reported by an iterator asked of a batch that was
// committed or closed.
var errBatchDone = errors.New("store: batch already committed or closed")

// Iter is a pull iterator over a span of the store, of a snapshot or of an
// indexed batch, in key order or in reverse. It starts before the first
// key: call Next first. Key and Value are valid until the next call of Next
// or Close.
//
// An iterator holds the database open until Close, which callers must
// call (Close is idempotent). Like Scan, it stops at the first entry after
// the store failed (entries from then on may come from batches whose log
// write failed), and Err then reports the refusal (ErrUnavailable). An
// Iter is not safe for concurrent use.
type Iter struct {
	s        *Store
	g        *generation // released by Close; nil when the iterator holds no reference
	it       *pebble.Iterator
	reverse  bool
	started  bool // Next has positioned the iterator once
	done     bool // Next returned false
	err      error
	closed   bool
	closeErr error
}

// NewIter returns an iterator over span of the store's latest state, in
// reverse key order when reverse is set. A nil span.Upper means no upper
// bound. If the store refuses the read (ErrUnavailable, ErrClosed), the
// iterator is empty and Err reports why. The caller must Close it.
func (s *Store) NewIter(span Span, reverse bool) *Iter {
	g, err := s.acquire(false)
	if err != nil {
		return &Iter{s: s, err: err, done: true}
	}
	return s.newIter(g, g.db, span, reverse, true)
}

// NewIter returns an iterator over span as the batch sees the data: its own
// writes, made before NewIter, over the store. Only for indexed batches;
// otherwise, or for a batch the store refused or that is committed or
// closed, the iterator is empty and Err reports why. The caller must Close
// it before it commits or closes the batch.
func (b *Batch) NewIter(span Span, reverse bool) *Iter {
	switch {
	case b.err != nil:
		return &Iter{s: b.s, err: b.err, done: true}
	case b.b == nil:
		return &Iter{s: b.s, err: errBatchDone, done: true}
	}
	// The batch holds the generation: the iterator takes no reference.
	return b.s.newIter(b.g, b.b, span, reverse, false)
}

// iterSource is what an Iter can read: a database, a snapshot or an
// indexed batch.
type iterSource interface {
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// newIter opens an iterator on src, which reads generation g. If owned,
// the iterator owns a reference to g (taken by the caller), released by
// Close, or here when the iterator cannot be made.
func (s *Store) newIter(g *generation, src iterSource, span Span, reverse, owned bool) *Iter {
	// NB: Pebble requires the bounds to stay unmodified until the
	// iterator closes; the caller's slices may be reused.
	it, err := src.NewIter(&pebble.IterOptions{LowerBound: bytes.Clone(span.Lower), UpperBound: bytes.Clone(span.Upper)})
	if err != nil {
		if owned {
			s.release(g)
		}
		return &Iter{s: s, err: fmt.Errorf("store: new iterator: %w", err), done: true}
	}
	i := &Iter{s: s, it: it, reverse: reverse}
	if owned {
		i.g = g
	}
	return i
}

// Next moves to the next key (the first one on the first call) and reports
// whether there is one. Once it returns false, Err says whether the walk
// ended early.
func (i *Iter) Next() bool {
	if i.done || i.closed {
		return false
	}
	var ok bool
	switch {
	case !i.started && i.reverse:
		ok = i.it.Last()
	case !i.started:
		ok = i.it.First()
	case i.reverse:
		ok = i.it.Prev()
	default:
		ok = i.it.Next()
	}
	i.started = true
	if ok && i.s.failure.Load() != nil {
		i.err = i.s.failed()
		ok = false
	}
	if !ok {
		i.done = true
	}
	return ok
}

// Key returns the current key. It is valid until the next call of Next or
// Close.
func (i *Iter) Key() []byte {
	if i.it == nil || i.closed {
		return nil
	}
	return i.it.Key()
}

// Value returns the current value. It is valid until the next call of Next
// or Close. If Pebble cannot read it, Value returns nil, Next returns false
// and Err reports the failure.
func (i *Iter) Value() []byte {
	if i.it == nil || i.closed {
		return nil
	}
	v, err := i.it.ValueAndErr()
	if err != nil {
		i.err = fmt.Errorf("store: read value: %w", err)
		i.done = true
		return nil
	}
	return v
}

// Err returns the error that ended the walk, or nil: the store's refusal
// when it failed during the walk (ErrUnavailable), ErrClosed or
// ErrUnavailable when the iterator could not be made, or Pebble's error.
func (i *Iter) Err() error {
	if i.err != nil {
		return i.err
	}
	if i.it != nil && !i.closed {
		if err := i.it.Error(); err != nil {
			return err
		}
	}
	if !i.closed {
		// What was read may come from a batch whose log write failed.
		return i.s.failed()
	}
	return nil
}

// Close releases the iterator and the database reference it holds. It
// returns Pebble's error, if any; later calls return the same.
func (i *Iter) Close() error {
	if i.closed {
		return i.closeErr
	}
	i.closed = true
	if i.it != nil {
		i.closeErr = i.it.Close()
		i.it = nil
	}
	if i.g != nil {
		i.s.release(i.g)
		i.g = nil
	}
	return i.closeErr
}

// Snapshot is a consistent view of the store at the time it was taken:
// every read sees the same writes. It holds the database open until Close,
// which callers must call. Get and NewIter are safe for concurrent use;
// Close must not race them.
type Snapshot struct {
	s    *Store
	g    *generation
	snap *pebble.Snapshot
	once sync.Once
}

// NewSnapshot returns a snapshot of the store's latest state. Errors:
// ErrUnavailable, ErrClosed.
func (s *Store) NewSnapshot() (*Snapshot, error) {
	g, err := s.acquire(false)
	if err != nil {
		return nil, err
	}
	return &Snapshot{s: s, g: g, snap: g.db.NewSnapshot()}, nil
}

// Get returns a copy of the value at key in the snapshot, or ErrNotFound;
// ErrUnavailable if the store failed since the snapshot was taken, and
// ErrClosed after Close.
func (sn *Snapshot) Get(key []byte) ([]byte, error) {
	if sn.snap == nil {
		return nil, ErrClosed
	}
	v, err := get(sn.snap, key)
	if ferr := sn.s.failed(); ferr != nil {
		return nil, ferr
	}
	return v, err
}

// NewIter returns an iterator over span in the snapshot, in reverse key
// order when reverse is set. The iterator holds the database open on its
// own, so it may outlive the snapshot; the caller must Close it. After
// Close the iterator is empty and its Err is ErrClosed.
func (sn *Snapshot) NewIter(span Span, reverse bool) *Iter {
	if sn.snap == nil {
		return &Iter{s: sn.s, err: ErrClosed, done: true}
	}
	sn.s.ref(sn.g)
	return sn.s.newIter(sn.g, sn.snap, span, reverse, true)
}

// Close releases the snapshot and its database reference. Later calls do
// nothing.
func (sn *Snapshot) Close() {
	sn.once.Do(func() {
		// Pebble's Snapshot.Close never fails.
		_ = sn.snap.Close()
		sn.snap = nil
		sn.s.release(sn.g)
	})
}

// ref takes one more reference to g, which the caller already holds one
// of (so g cannot have drained).
func (s *Store) ref(g *generation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g.refs++
}
