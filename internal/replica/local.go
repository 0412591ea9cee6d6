package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partitadb/partita/internal/store"
)

// Absolute key layout of the node's store (docs/storage-seams.md):
//
//	0x00 data-format              the data format (dataFormatKey)
//	0x01 key                      catalog records (Meta)
//	0x10 <keyspace id:8> <key>    keyspace id's relative key
const (
	kindMeta     byte = 0x01
	kindKeyspace byte = 0x10
)

// prefixLen is the length of a keyspace's prefix: its kind and its id.
const prefixLen = 9

// lsnKey is the relative key of a keyspace's LSN reservation: the 8-byte
// big-endian limit below which LSNs may have been issued.
var lsnKey = []byte{0x00, 'l', 's', 'n'}

// lsnBlock is how many LSNs one durable reservation covers: a restart skips
// at most this many, and a reservation costs one (synced) write.
const lsnBlock = 1 << 16

// Keys of releases before keyspaces (storage format 6).
var (
	// legacySeqKey held the node-wide LSN reservation. New code never
	// writes it; it is the floor of every keyspace's LSNs, and the catalog
	// reads it too.
	legacySeqKey = []byte("\x01eng/seq")
	// legacyFormatKey was the engine's node-wide entry format.
	legacyFormatKey = []byte("\x01engine/index-format")
)

// Old-layout kinds: kind <container:8> rest.
const (
	legacyItem    byte = 0x02 // items
	legacyDerived byte = 0x03 // first kind of derived entries: order, index, statistics, change, unique
	legacyEnd     byte = 0x08 // end of the old kinds
)

// convertBatch is how many items one batch of the format 6 conversion moves.
const convertBatch = 1024

// DataFormat is the version of what this release stores in a data
// directory, as a whole: the store's layout, the engine's derived entries
// and records, and what the replicas of a cluster send each other. A
// release that changes any of them in a way an earlier release would
// misread increments it. OpenLocal refuses a directory a release with a
// larger one has opened (ErrNewerRelease), and cluster members of
// different data formats do not talk (docs/cluster.md). 1: the first
// release that records it (entry format 9; items' etags name their
// container; move decisions carry their cut). 2: composite index entries
// (entry format 10: a release of 1 would leave them stale and report their
// kind as unknown).
const DataFormat = 2

// dataFormatKey, outside the catalog's records (0x01) and the keyspaces
// (0x10), holds the largest DataFormat of the releases that opened the
// store (decimal). Releases before it did not record one.
var dataFormatKey = []byte("\x00data-format")

// ErrNewerRelease refuses a data directory that a later release of
// Partita, with a larger DataFormat, has opened: this release would
// misread what that one wrote.
var ErrNewerRelease = errors.New("replica: the data directory was written by a newer release of Partita")

// errReservedKey is recorded by a Batch asked to write a relative key that
// is empty or starts with 0x00 (the replica's own keys).
var errReservedKey = errors.New("replica: write to a key reserved for the replica (empty or starting with 0x00)")

// errBatchDone is returned by Commit of a batch already committed or closed.
var errBatchDone = errors.New("replica: batch already committed or closed")

// keyspacePrefix returns keyspace id's prefix, 0x10 <id:8>.
func keyspacePrefix(id uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, prefixLen), kindKeyspace), id)
}

// keyspaceSpan returns the span of keyspace id's absolute keys.
func keyspaceSpan(id uint64) store.Span {
	if id == math.MaxUint64 {
		return store.Span{Lower: keyspacePrefix(id), Upper: []byte{kindKeyspace + 1}}
	}
	return store.Span{Lower: keyspacePrefix(id), Upper: keyspacePrefix(id + 1)}
}

// mapErr translates the store's errors into the seam's: ErrNotFound,
// ErrUnavailable (also matching the store's error), ErrCorrupt and
// *NoSpaceError.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if df, ok := errors.AsType[*store.DiskFullError](err); ok {
		return &NoSpaceError{Free: df.Free, ResumeAt: df.ResumeAt, Err: err}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ErrNotFound
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrClosed):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case store.IsCorruption(err):
		return fmt.Errorf("%w: %s", ErrCorrupt, corruptionText(err))
	}
	return err
}

// corruptionText is a corruption error's first line: Pebble joins a carrier
// of its details, whose text is a placeholder.
func corruptionText(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// Local is the Host of the keyspaces of the node's Pebble store: keyspace
// id occupies the store's keys 0x10 <id:8> …. It hands out one Replica per
// keyspace, so every caller shares its LSN sequence. Local does not own the
// store: the caller closes it after its last use. Local is safe for
// concurrent use.
type Local struct {
	st    *store.Store
	log   *slog.Logger
	floor uint64 // the first LSN of a keyspace without a reservation
	meta  *Meta
	fresh bool // no data format recorded at open (Fresh)
	mu    struct {
		sync.Mutex
		replicas map[uint64]*localReplica
	}
}

var _ Host = (*Local)(nil)

// OpenLocal returns the Host of st's keyspaces. A store written by a
// release before keyspaces (storage format 6) is converted first: each
// container's items move to the keyspace numbered by the container's
// internal id, and the old derived entries are deleted (the engine
// rebuilds them). The conversion commits in batches that each move items
// atomically, so after a crash or an error the next OpenLocal resumes it.
// A nil log discards messages. Errors: ErrUnavailable, *NoSpaceError,
// ctx's error, or a malformed store.
func OpenLocal(ctx context.Context, st *store.Store, log *slog.Logger) (*Local, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Local{st: st, log: log, meta: &Meta{st: st}}
	l.mu.replicas = map[uint64]*localReplica{}
	recorded, err := readDataFormat(st)
	if err != nil {
		return nil, err
	}
	l.fresh = recorded == 0
	if recorded > DataFormat {
		return nil, fmt.Errorf("%w (data format %d; this release reads up to %d): start that release, or restore the copy of the directory made before the upgrade",
			ErrNewerRelease, recorded, DataFormat)
	}
	if err := l.convert(ctx, recorded); err != nil {
		return nil, fmt.Errorf("replica: convert the store from format 6: %w", err)
	}
	if recorded < DataFormat {
		b := st.NewBatch()
		b.Set(dataFormatKey, []byte(strconv.Itoa(DataFormat)))
		err := b.Commit()
		b.Close()
		// partita check reads without writing; a full disk records it at
		// a later start.
		if _, full := errors.AsType[*store.DiskFullError](err); err != nil && !full && !errors.Is(err, store.ErrReadOnly) {
			return nil, fmt.Errorf("replica: record the data format: %w", mapErr(err))
		}
	}
	v, err := st.Get(legacySeqKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		l.floor = 1
	case err != nil:
		return nil, fmt.Errorf("replica: read the legacy LSN reservation: %w", mapErr(err))
	case len(v) != 8:
		return nil, fmt.Errorf("replica: malformed legacy LSN reservation (%d bytes)", len(v))
	default:
		// Every LSN below the old node-wide reservation may have been
		// handed out (in a session token, an etag, a feed position).
		l.floor = max(binary.BigEndian.Uint64(v), 1)
	}
	return l, nil
}

// Meta returns the catalog's backend on the same store.
func (l *Local) Meta() *Meta { return l.meta }

// Fresh reports whether the store recorded no data format when it was
// opened: a new store (or one of a release from before the record), not
// one any release of this kind has opened before.
func (l *Local) Fresh() bool { return l.fresh }

// Replica returns keyspace id's replica; every call for one id returns
// the same one. Errors: ErrUnavailable, or a malformed LSN reservation.
func (l *Local) Replica(id uint64) (Replica, error) {
	l.mu.Lock()
	r, ok := l.mu.replicas[id]
	l.mu.Unlock()
	if ok {
		return r, nil
	}
	// Read the reservation without the lock (STYLE §5: no lock across
	// I/O); a concurrent caller may do the same, and the first to store
	// its replica wins.
	r, err := l.newReplica(id)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.mu.replicas[id]; ok {
		return prev, nil
	}
	l.mu.replicas[id] = r
	return r, nil
}

// newReplica loads keyspace id's LSN reservation.
func (l *Local) newReplica(id uint64) (*localReplica, error) {
	prefix := keyspacePrefix(id)
	r := &localReplica{st: l.st, id: id, prefix: prefix, span: keyspaceSpan(id), epoch: epochs.Add(1)}
	r.seq.st = l.st
	r.seq.key = append(bytes.Clone(prefix), lsnKey...)
	v, err := l.st.Get(r.seq.key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		r.seq.mu.next = l.floor
	case err != nil:
		return nil, fmt.Errorf("replica: keyspace %d: read the LSN reservation: %w", id, mapErr(err))
	case len(v) != 8:
		return nil, fmt.Errorf("replica: keyspace %d: malformed LSN reservation (%d bytes)", id, len(v))
	default:
		// Everything below the reserved limit may have been issued.
		r.seq.mu.next = max(binary.BigEndian.Uint64(v), l.floor)
	}
	r.seq.mu.limit = r.seq.mu.next
	r.seq.mu.open = map[uint64]int{}
	return r, nil
}

// Compact rewrites keyspace id's storage (see Host).
// Holds is true: one node holds every keyspace.
func (l *Local) Holds(uint64) bool { return true }

// ReadsHere is true: one node reads every keyspace from its own store.
func (l *Local) ReadsHere(uint64) bool { return true }

func (l *Local) Compact(ctx context.Context, id uint64) error {
	if err := l.st.Compact(ctx, keyspaceSpan(id)); err != nil {
		return fmt.Errorf("replica: compact keyspace %d: %w", id, mapErr(err))
	}
	return nil
}

// Keyspaces returns the ids of the keyspaces that hold at least one key
// (data or an LSN reservation), in ascending order. It seeks from one
// keyspace to the next, reading one key of each. Errors: ErrUnavailable,
// ctx's error.
func (l *Local) Keyspaces(ctx context.Context) ([]uint64, error) {
	sn, err := l.st.NewSnapshot()
	if err != nil {
		return nil, fmt.Errorf("replica: list keyspaces: %w", mapErr(err))
	}
	defer sn.Close()
	var ids []uint64
	lower, upper := []byte{kindKeyspace}, []byte{kindKeyspace + 1}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		key, ok, err := first(sn.NewIter(store.Span{Lower: lower, Upper: upper}, false))
		switch {
		case err != nil:
			return nil, fmt.Errorf("replica: list keyspaces: %w", mapErr(err))
		case !ok:
			return ids, nil
		case len(key) < prefixLen:
			return nil, fmt.Errorf("replica: list keyspaces: malformed key of %d bytes", len(key))
		}
		id := binary.BigEndian.Uint64(key[1:prefixLen])
		ids = append(ids, id)
		if id == math.MaxUint64 {
			return ids, nil
		}
		lower = keyspacePrefix(id + 1)
	}
}

// first returns a copy of it's first key and whether there is one, and
// closes it.
func first(it *store.Iter) (key []byte, ok bool, err error) {
	if ok = it.Next(); ok {
		key = bytes.Clone(it.Key())
	}
	if err = errors.Join(it.Err(), it.Close()); err != nil {
		return nil, false, err
	}
	return key, ok, nil
}

// Drop deletes everything keyspace id holds, its LSN reservation too, with
// one range deletion, and forgets its replica: a later Replica(id) starts
// an empty keyspace. Callers must stop using the old replica first (its
// writes would land in the dropped keyspace). Errors: ErrUnavailable,
// *NoSpaceError.
func (l *Local) Drop(id uint64) error {
	b := l.st.NewBatch()
	defer b.Close()
	b.DeleteSpan(keyspaceSpan(id))
	if err := b.Commit(); err != nil {
		return fmt.Errorf("replica: drop keyspace %d: %w", id, mapErr(err))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.mu.replicas, id)
	return nil
}

// readDataFormat returns the data format recorded in st (dataFormatKey),
// 0 for none.
func readDataFormat(st *store.Store) (int, error) {
	v, err := st.Get(dataFormatKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("replica: read the data format: %w", mapErr(err))
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("replica: malformed data format record %q", v)
	}
	return n, nil
}

// convert moves a format 6 store's items into keyspaces and deletes its
// derived entries (see OpenLocal). Every batch is atomic and leaves the
// old layout's remains recognisable, so a rerun finishes the job. A store
// that records a data format (recorded) was converted, or created, by a
// release that records one: format 6 keys there were written since by a
// release from before keyspaces, whose items the conversion cannot place
// (it would move them into their container's first keyspace, where a
// range moved elsewhere no longer reads them: an upgrade hunt's start of
// such a release left `partita check` 7 problems and an acknowledged item
// unreadable), so it refuses.
func (l *Local) convert(ctx context.Context, recorded int) error {
	_, found, err := first(l.st.NewIter(store.Span{Lower: []byte{legacyItem}, Upper: []byte{legacyEnd}}, false))
	if err != nil {
		return mapErr(err)
	}
	if !found {
		return nil
	}
	if recorded > 0 {
		return errors.New("the data directory holds keys of storage format 6 beside data converted to keyspaces: a release from " +
			"before keyspaces has run on it since it was converted, and what it wrote cannot be placed; restore the copy of the " +
			"directory made before the upgrade (README, Upgrading a data directory)")
	}
	start := time.Now()
	l.log.Info("converting the store from storage format 6 to keyspaces")
	var (
		containers, items int
		last              uint64 // the container of the last item moved
		lower             = []byte{legacyItem}
	)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A fresh iterator per batch, from just after the last key moved:
		// it neither pins old memtables nor walks the tombstones of the
		// items already moved.
		it := l.st.NewIter(store.Span{Lower: lower, Upper: []byte{legacyItem + 1}}, false)
		b := l.st.NewBatch()
		n := 0
		var key []byte
		for n < convertBatch && it.Next() {
			key = it.Key()
			if len(key) < prefixLen {
				break
			}
			c := binary.BigEndian.Uint64(key[1:prefixLen])
			if items+n == 0 || c != last {
				containers++
				last = c
			}
			// The relative key keeps the rest as it was (escaped EPK,
			// pk and id): the engine reads it as before.
			nk := append(append(keyspacePrefix(c), legacyItem), key[prefixLen:]...)
			b.Set(nk, it.Value()) // Set copies key and value into the batch
			b.Delete(key)
			n++
		}
		if key != nil {
			lower = append(bytes.Clone(key), 0x00) // the key's successor
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			b.Close()
			return mapErr(err)
		}
		if len(key) > 0 && len(key) < prefixLen {
			b.Close()
			return fmt.Errorf("malformed item key of %d bytes", len(key))
		}
		if n == 0 {
			b.Close()
			break
		}
		if err := b.Commit(); err != nil {
			return mapErr(err)
		}
		items += n
	}
	b := l.st.NewBatch()
	defer b.Close()
	b.DeleteSpan(store.Span{Lower: []byte{legacyDerived}, Upper: []byte{legacyEnd}})
	b.Delete(legacyFormatKey)
	if err := b.Commit(); err != nil {
		return mapErr(err)
	}
	l.log.Info("converted the store from storage format 6 to keyspaces", "containers", containers, "items", items, "dur", time.Since(start))
	return nil
}

// localReplica is one keyspace of a Local.
type localReplica struct {
	st     *store.Store
	id     uint64
	prefix []byte     // 0x10 <id:8>; never modified
	span   store.Span // the keyspace's absolute span
	seq    sequencer
	// epoch is this replica's life (Version.Epoch), unique in the process.
	epoch uint64
	// started and done count the commits begun and ended: a snapshot
	// taken while they were equal holds the first done commits exactly
	// (Version.N).
	started, done atomic.Uint64
}

// epochs issues localReplica.epoch: 0 is a replicated keyspace's.
var epochs atomic.Uint64

var _ Replica = (*localReplica)(nil)

// ID returns the keyspace's id.
func (r *localReplica) ID() uint64 { return r.id }

// abs returns the absolute key of relative key k.
func (r *localReplica) abs(k []byte) []byte {
	return append(append(make([]byte, 0, prefixLen+len(k)), r.prefix...), k...)
}

// absSpan returns the absolute span of relative span s; a nil Upper is the
// end of the keyspace.
func (r *localReplica) absSpan(s Span) store.Span {
	as := store.Span{Lower: r.abs(s.Lower), Upper: r.span.Upper}
	if s.Upper != nil {
		as.Upper = r.abs(s.Upper)
	}
	return as
}

// Get returns a copy of key's latest applied value, or ErrNotFound;
// ErrUnavailable.
func (r *localReplica) Get(key []byte) ([]byte, error) {
	k := r.abs(key)
	v, err := r.st.Get(k)
	r.st.AwaitDurableKey(k) // what the read saw is durable before it answers
	return v, mapErr(err)
}

// NewIter returns an iterator over span of the latest applied state, keys
// relative; if the store refuses the read, the iterator is empty and its
// Err says why (ErrUnavailable).
func (r *localReplica) NewIter(span Span, reverse bool) Iter {
	it := r.st.NewIter(r.absSpan(span), reverse)
	r.st.AwaitDurable() // what the iterator can see is durable before it is read
	return &localIter{it: it}
}

// Snapshot returns a snapshot of the keyspace. Errors: ErrUnavailable.
//
// Its version is known when no commit was under way from just before the
// snapshot to just after: done read before it equals started read after
// it, so no commit had begun without ending before, nor began since, and
// the snapshot holds exactly the first done commits.
func (r *localReplica) Snapshot() (Snapshot, error) {
	done := r.done.Load()
	sn, err := r.st.NewSnapshot()
	if err != nil {
		return nil, fmt.Errorf("replica: keyspace %d: snapshot: %w", r.id, mapErr(err))
	}
	quiet := r.started.Load() == done
	r.st.AwaitDurable() // what the snapshot holds is durable before it is read
	return &localSnapshot{r: r, sn: sn, version: Version{Epoch: r.epoch, N: done}, known: quiet}, nil
}

// NewBatch returns a batch of writes to the keyspace; an indexed one reads
// too. If the store refuses writes, the batch's Commit reports why.
func (r *localReplica) NewBatch(indexed bool) Batch {
	if indexed {
		return &localBatch{r: r, b: r.st.NewIndexedBatch()}
	}
	return &localBatch{r: r, b: r.st.NewBatch()}
}

// Commit applies b, a batch of this keyspace, atomically. Errors: the
// batch's refused write, ErrUnavailable, *NoSpaceError, or an error for a
// batch of another keyspace or one already committed.
func (r *localReplica) Commit(b Batch) error {
	lb, ok := b.(*localBatch)
	switch {
	case !ok || lb.r.id != r.id:
		return fmt.Errorf("replica: keyspace %d: commit of another keyspace's batch", r.id)
	case lb.err != nil:
		return lb.err
	case lb.done:
		return errBatchDone
	}
	lb.done = true
	r.started.Add(1)
	err := lb.b.Commit()
	r.done.Add(1) // after the commit is visible (or failed: it may be)
	if err != nil {
		return fmt.Errorf("replica: keyspace %d: commit: %w", r.id, mapErr(err))
	}
	return nil
}

// NextLSN issues the next LSN (see Replica).
func (r *localReplica) NextLSN(_ Batch, first *uint64) (uint64, error) {
	n, err := r.seq.next(first)
	if err != nil {
		return 0, fmt.Errorf("replica: keyspace %d: %w", r.id, err)
	}
	return n, nil
}

// ReleaseLSN ends a transaction's hold on StableLSN (see Replica).
func (r *localReplica) ReleaseLSN(first uint64) { r.seq.release(first) }

// StableLSN returns the largest LSN at or below which every LSN issued is
// committed or abandoned.
func (r *localReplica) StableLSN() uint64 { return r.seq.stable() }

// AwaitDoubts returns at once: a local commit is never in doubt.
func (r *localReplica) AwaitDoubts(context.Context) error { return nil }

// Lead is nil: only this node holds a local keyspace.
func (r *localReplica) Lead() error { return nil }

// Campaign is nil: only this node holds the keyspace.
func (r *localReplica) Campaign() error { return nil }

// Sync returns at once: every acknowledged write is applied here.
func (r *localReplica) Sync(ctx context.Context) error { return ctx.Err() }

// LastLSN returns the most recently issued LSN; before the first, the one
// below where the keyspace's LSNs start.
func (r *localReplica) LastLSN() uint64 { return r.seq.last() }

// Visible: every LSN issued is committed before its write is acknowledged,
// and reads here see every commit.
func (r *localReplica) Visible(lsn uint64) bool { return lsn <= r.seq.last() }

// AdvanceLSN makes every later LSN greater than lsn (see Replica).
func (r *localReplica) AdvanceLSN(lsn uint64) error {
	if err := r.seq.advance(lsn); err != nil {
		return fmt.Errorf("replica: keyspace %d: %w", r.id, err)
	}
	return nil
}

// sequencer issues a keyspace's LSNs: strictly increasing, never reused
// across restarts. It reserves them durably in blocks of lsnBlock (the
// reservation's limit is stored at the keyspace's lsnKey), and starts
// after a restart at the stored limit.
//
// Transactions take numbers before they commit, and commit in any order,
// so the sequencer also tracks which numbers may still be committed: the
// stable LSN is the largest number at or below which every number issued
// to a transaction is committed or abandoned. A change-feed reader stops
// there, so a slow transaction cannot commit behind a position already
// handed out.
type sequencer struct {
	st  *store.Store
	key []byte // the reservation's absolute key
	mu  struct {
		sync.Mutex
		next, limit uint64
		// open counts the open transactions by the first number each took.
		open map[uint64]int
	}
}

// next returns a fresh number for the transaction that holds first: if
// *first is 0, the number becomes *first, and holds stable below it until
// release(*first).
func (s *sequencer) next(first *uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.next >= s.mu.limit {
		// NB: the reservation is written under the lock, once every
		// lsnBlock numbers: no number may be issued before it is durable.
		limit := s.mu.next + lsnBlock
		b := s.st.NewBatch()
		b.Set(s.key, binary.BigEndian.AppendUint64(nil, limit))
		err := b.Commit()
		b.Close()
		if err != nil {
			return 0, fmt.Errorf("reserve LSNs: %w", mapErr(err))
		}
		s.mu.limit = limit
	}
	n := s.mu.next
	s.mu.next++
	if *first == 0 {
		*first = n
		s.mu.open[n]++
	}
	return n, nil
}

// advance moves the next number past lsn, durably, if it is not already.
func (s *sequencer) advance(lsn uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.next > lsn {
		return nil
	}
	if limit := lsn + 1 + lsnBlock; s.mu.limit < limit {
		b := s.st.NewBatch()
		b.Set(s.key, binary.BigEndian.AppendUint64(nil, limit))
		err := b.Commit()
		b.Close()
		if err != nil {
			return fmt.Errorf("reserve LSNs: %w", mapErr(err))
		}
		s.mu.limit = limit
	}
	s.mu.next = lsn + 1
	return nil
}

// release ends the hold of a transaction whose first number was first;
// 0 is a no-op.
func (s *sequencer) release(first uint64) {
	if first == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.open[first]--; s.mu.open[first] <= 0 {
		delete(s.mu.open, first)
	}
}

// stable returns the largest number at or below which no number is held
// by an open transaction.
func (s *sequencer) stable() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.mu.next - 1
	for first := range s.mu.open {
		w = min(w, first-1)
	}
	return w
}

// last returns the most recently issued number.
func (s *sequencer) last() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.next - 1
}

// localSnapshot is a Snapshot of one keyspace.
type localSnapshot struct {
	r       *localReplica
	sn      *store.Snapshot
	version Version
	known   bool
}

// Version returns the state the snapshot holds, if no commit was under
// way as it was taken (see localReplica.Snapshot).
func (s *localSnapshot) Version() (Version, bool) { return s.version, s.known }

// Get returns a copy of key's value, or ErrNotFound; ErrUnavailable.
func (s *localSnapshot) Get(key []byte) ([]byte, error) {
	v, err := s.sn.Get(s.r.abs(key))
	return v, mapErr(err)
}

// NewIter returns an iterator over span of the snapshot, keys relative.
func (s *localSnapshot) NewIter(span Span, reverse bool) Iter {
	return &localIter{it: s.sn.NewIter(s.r.absSpan(span), reverse)}
}

// Close releases the snapshot; later calls do nothing.
func (s *localSnapshot) Close() { s.sn.Close() }

// localBatch is a Batch of one keyspace over a store batch.
type localBatch struct {
	r    *localReplica
	b    *store.Batch
	err  error // the first refused write: Commit returns it
	done bool  // committed (or tried to)
	key  []byte
}

// abs returns the absolute key of relative key k in b.key, which the next
// call overwrites: for the store batch's Set, Delete and Get, which copy
// the key or use it only during the call.
func (b *localBatch) abs(k []byte) []byte {
	b.key = append(append(b.key[:0], b.r.prefix...), k...)
	return b.key
}

// check reports whether relative key k may be written, recording the
// refusal otherwise.
func (b *localBatch) check(k []byte) bool {
	if len(k) > 0 && k[0] != 0x00 {
		return true
	}
	if b.err == nil {
		b.err = fmt.Errorf("keyspace %d: %w", b.r.id, errReservedKey)
	}
	return false
}

// Set writes value at key.
func (b *localBatch) Set(key, value []byte) {
	if b.check(key) {
		b.b.Set(b.abs(key), value)
	}
}

// Delete removes key.
func (b *localBatch) Delete(key []byte) {
	if b.check(key) {
		b.b.Delete(b.abs(key))
	}
}

// DeleteSpan removes every key of span; a nil Upper is the end of the
// keyspace. An empty span is a no-op.
func (b *localBatch) DeleteSpan(span Span) {
	if span.Empty() {
		return
	}
	if b.check(span.Lower) {
		b.b.DeleteSpan(b.r.absSpan(span))
	}
}

// Empty reports whether the batch holds no write; one with a refused
// write is not empty.
func (b *localBatch) Empty() bool { return b.err == nil && b.b.Empty() }

// Get returns a copy of key's value as the batch sees it, or ErrNotFound.
// Only for indexed batches.
func (b *localBatch) Get(key []byte) ([]byte, error) {
	v, err := b.b.Get(b.abs(key))
	return v, mapErr(err)
}

// NewIter returns an iterator over span as the batch sees it, keys
// relative. Only for indexed batches; it must be closed before the batch
// commits or closes.
func (b *localBatch) NewIter(span Span, reverse bool) Iter {
	return &localIter{it: b.b.NewIter(b.r.absSpan(span), reverse)}
}

// Close discards the batch if it was not committed.
func (b *localBatch) Close() { b.b.Close() }

// localIter is an Iter over a store iterator of one keyspace: it strips
// the keyspace's prefix from keys.
type localIter struct {
	it *store.Iter
}

// Next moves to the next key and reports whether there is one.
func (i *localIter) Next() bool { return i.it.Next() }

// Key returns the current key, relative to the keyspace.
func (i *localIter) Key() []byte {
	k := i.it.Key()
	if len(k) < prefixLen {
		return nil // not positioned, or closed
	}
	return k[prefixLen:]
}

// Value returns the current value.
func (i *localIter) Value() []byte { return i.it.Value() }

// Err returns the error that ended the walk, if any.
func (i *localIter) Err() error { return mapErr(i.it.Err()) }

// Close releases the iterator.
func (i *localIter) Close() error { return mapErr(i.it.Close()) }

// Meta is the catalog's backend (catalog.Backend) on the node's store: key
// k is stored at 0x01 k, outside every keyspace, as the catalog's records
// always were. Errors are ErrUnavailable and *NoSpaceError. Meta is safe
// for concurrent use.
type Meta struct {
	st *store.Store
}

// metaKey returns the absolute key of catalog key k.
func metaKey(k string) []byte {
	return append(append(make([]byte, 0, 1+len(k)), kindMeta), k...)
}

// Get returns a copy of key's value and whether it exists.
func (m *Meta) Get(key string) ([]byte, bool, error) {
	v, err := m.st.Get(metaKey(key))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("replica: meta get: %w", mapErr(err))
	}
	return v, true, nil
}

// Load calls fn with every key that starts with prefix and a copy of its
// value, in key order, from one consistent view. It stops at fn's first
// error and returns it as is; it checks ctx every 256 keys.
func (m *Meta) Load(ctx context.Context, prefix string, fn func(key string, value []byte) error) (err error) {
	lo := metaKey(prefix)
	ps := PrefixSpan(lo)
	span := store.Span{Lower: ps.Lower, Upper: ps.Upper}
	it := m.st.NewIter(span, false)
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("replica: meta load: %w", mapErr(cerr))
		}
	}()
	for n := 0; it.Next(); n++ {
		if n%256 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := fn(string(it.Key()[1:]), bytes.Clone(it.Value())); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("replica: meta load: %w", mapErr(err))
	}
	return nil
}

// Apply deletes the keys of del and sets the keys of set, atomically (a
// key in both is set).
func (m *Meta) Apply(set map[string][]byte, del []string) error {
	b := m.st.NewBatch()
	defer b.Close()
	for _, k := range del {
		b.Delete(metaKey(k))
	}
	for k, v := range set {
		b.Set(metaKey(k), v)
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("replica: meta apply: %w", mapErr(err))
	}
	return nil
}
