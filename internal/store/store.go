package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrNotFound is returned by Get when a key has no value.
var ErrNotFound = errors.New("store: not found")

// ErrUnavailable is returned by every operation while the store recovers
// from a failed write to its write-ahead log (until the database is
// reopened), and for good once it has given up (see Done). Retrying later
// is safe: nothing the failed write carried was acknowledged.
var ErrUnavailable = errors.New("store: unavailable after a failed disk write")

// ErrClosed is returned by operations on a closed store.
var ErrClosed = errors.New("store: closed")

// ErrInUse is returned by Open when another process holds the data
// directory's lock: a server is already running on it.
var ErrInUse = errors.New("store: the data directory is already in use by another process")

// ErrReadOnly is the refusal of a write to a store opened with
// Options.ReadOnly.
var ErrReadOnly = errors.New("store: opened read-only")

// Options configure a Store.
type Options struct {
	// Dir is the data directory. Required.
	Dir string
	// ReadOnly opens the database without writing to the directory
	// (Pebble replays the write-ahead log into memory), for a check that
	// must leave the directory as it found it: every write is refused
	// with ErrReadOnly, and the store never reopens read-write.
	ReadOnly bool
	// FS is the filesystem; nil means the operating system's. Tests pass
	// vfs.NewMem() or an error-injecting FS.
	FS vfs.FS
	// Sync makes every Commit wait until the batch is in the synced
	// write-ahead log. Concurrent committers share syncs (group commit).
	// Without it, the log is synced in the background, every
	// RelaxedSyncInterval while writes are made.
	Sync bool
	// RelaxedSyncInterval is, for a store opened without Sync, how often
	// the write-ahead log is synced while writes are made: a crash, of the
	// process or of the machine, loses at most the writes of the last
	// interval (and of the sync under way). Zero means 100 ms, MongoDB's
	// journal commit interval. (Pebble writes an unsynced batch into its
	// log's 32 KiB block in memory and writes the block to the file only
	// once it fills or a sync asks: without these syncs, a kill -9 lost
	// the writes of an idle minute.)
	RelaxedSyncInterval time.Duration
	// Logger receives the store's and Pebble's messages; nil discards them.
	Logger *slog.Logger
	// CacheBytes is the size of the block cache (data and index blocks
	// kept decompressed in memory). Zero means 64 MiB.
	CacheBytes int64
	// MinFreeBytes is the free space of Dir's filesystem, in bytes, below
	// which Commit refuses writes with a *DiskFullError (reads go on), so
	// that Pebble keeps room to flush, compact and reopen. Writes resume
	// on their own once more is free. Zero: no floor.
	MinFreeBytes int64
	// BallastBytes is the size, in bytes, of the ballast file kept in Dir:
	// space released when the disk fills up anyway, so that Pebble can go
	// on flushing, compacting and opening (see ballast). Zero: none.
	BallastBytes int64
	// DiskCheckInterval is how often the store reads its filesystem's free
	// space (between reads it subtracts what it wrote), grows the ballast
	// back, and reopens a database that failed or opened read-only. Zero
	// means 1 s.
	DiskCheckInterval time.Duration
	// CloseTimeout bounds Close, and how long a failed database may take
	// to let go before it is reopened. Zero means 10 s.
	CloseTimeout time.Duration
}

// openTimeout bounds an open of the database: Pebble's Open flushes the
// logs it replays and retries a failed flush forever, so on a disk that
// filled up meanwhile it would never return.
const openTimeout = time.Minute

// Store is a Pebble database holding catalog entries and items. It is safe
// for concurrent use.
//
// The store outlives the Pebble database it wraps: after a failed write to
// the write-ahead log, or when it opened read-only on a full disk, its
// monitor closes the database and opens it again (a new generation).
// Operations hold a reference to the generation they use, so it closes only
// once they are done.
type Store struct {
	opts    Options
	log     *slog.Logger
	fs      *watchFS     // the filesystem Pebble sees
	lock    *pebble.Lock // the directory's lock, held across generations
	wo      *pebble.WriteOptions
	disk    disk
	ballast ballast
	// checks is whether free space is watched: a floor or a ballast is
	// configured and the filesystem reports its free space.
	checks     bool
	errLog     rateLimit // Pebble's error lines
	ballastLog rateLimit // failures to make the ballast

	epoch   atomic.Uint64         // incremented by every open of the database
	failure atomic.Pointer[error] // why the open generation failed, if it did
	// reopening is the failure a reopen is replacing the database after,
	// while it opens the next: refusals meanwhile say why (a write refused
	// for a full disk is a *DiskFullError until the reopen is done, not a
	// bare ErrUnavailable).
	reopening atomic.Pointer[error]
	closing   atomic.Bool // Close has begun
	// unsynced is set by a commit without a sync in a store without
	// Sync, cleared by syncLog.
	unsynced atomic.Bool
	full     atomic.Bool // writes are refused for space (for logging the changes)
	inflight inflight    // synced commits under way (AwaitDurable)

	mu struct {
		sync.Mutex
		gen    *generation // nil while reopening, after giving up, or once closed
		closed bool
	}

	tickMu      sync.Mutex    // one tick at a time
	wake        chan struct{} // buffer of 1: a nudge for the monitor
	stop        chan struct{} // closed by Close
	monitorDone chan struct{}
	dead        chan struct{} // closed by die
	deadOnce    sync.Once
	deadErr     error // set before dead is closed
	closeOnce   sync.Once
	closeErr    error
}

// generation is one open Pebble database.
type generation struct {
	db       *pebble.DB
	readOnly bool
	// Guarded by Store.mu: operations using db, and once retired (no new
	// operation may start) a channel closed when the last one ends.
	refs    int
	drained chan struct{}
}

// Open opens (creating if needed) the store in opts.Dir. On a disk without
// room for Pebble to open read-write it releases the ballast, and failing
// that opens read-only, logging one line: reads are served and writes get
// a *DiskFullError until there is room again.
func Open(opts Options) (*Store, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 64 << 20
	}
	if opts.DiskCheckInterval <= 0 {
		opts.DiskCheckInterval = time.Second
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = 10 * time.Second
	}
	if opts.RelaxedSyncInterval <= 0 {
		opts.RelaxedSyncInterval = 100 * time.Millisecond
	}
	s := &Store{
		opts: opts, log: log, wo: pebble.NoSync,
		disk:    disk{fs: opts.FS, dir: opts.Dir, interval: opts.DiskCheckInterval, every: max(opts.MinFreeBytes/8, 64<<10)},
		ballast: ballast{fs: opts.FS, path: opts.FS.PathJoin(opts.Dir, ballastName), size: opts.BallastBytes},
		wake:    make(chan struct{}, 1), stop: make(chan struct{}), monitorDone: make(chan struct{}), dead: make(chan struct{}),
	}
	if opts.Sync {
		s.wo = pebble.Sync
	}
	if err := foreignDir(opts.FS, opts.Dir); err != nil {
		return nil, err
	}
	if err := opts.FS.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("open store in %s: %w", opts.Dir, err)
	}
	lock, err := pebble.LockDirectory(opts.Dir, opts.FS)
	if err != nil {
		return nil, lockError(opts.Dir, err)
	}
	s.lock = lock
	s.fs = &watchFS{FS: vfs.OnDiskFull(opts.FS, s.onDiskFull), s: s}
	if opts.MinFreeBytes > 0 || opts.BallastBytes > 0 {
		s.checks = true
		if _, err := s.disk.refresh(); err != nil {
			s.checks = false
			log.Warn("the data directory's filesystem does not report its free space: no floor, no ballast", "err", err)
		}
	}
	if err := s.ballast.load(); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("open store in %s: %w", opts.Dir, err)
	}
	if !opts.ReadOnly { // a read-only store leaves leftover table files be: removing them is a write
		if err := s.clearTables(); err != nil {
			_ = lock.Close()
			return nil, fmt.Errorf("open store in %s: tables not ingested: %w", opts.Dir, err)
		}
	}
	readOnly, note := s.planOpen()
	g, err := s.openDB(readOnly)
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	s.mu.gen = g
	if note != nil {
		s.full.Store(true)
		log.Error("the data directory's disk is full: serving reads, refusing writes until space returns", note...)
	}
	go func() {
		defer close(s.monitorDone)
		s.monitor()
	}()
	return s, nil
}

// openDB opens a new generation of the database.
func (s *Store) openDB(readOnly bool) (*generation, error) {
	epoch := s.epoch.Add(1) // files of earlier generations no longer report failures
	s.failure.Store(nil)
	cache := pebble.NewCache(s.opts.CacheBytes)
	defer cache.Unref() // the database holds its own reference
	po := &pebble.Options{
		FS: s.fs, Logger: pebbleLogger{s, epoch}, Cache: cache, MemTableSize: 32 << 20,
		Lock: s.lock, ReadOnly: readOnly,
		EventListener: &pebble.EventListener{BackgroundError: s.backgroundError, DataCorruption: s.dataCorruption},
	}
	// Bloom filters (10 bits a key, about 1% false positives) on every
	// level: a point read skips each table whose filter says the key is
	// absent instead of reading one of its data blocks. A point read of an
	// item in a store much larger than memory read a data block of every
	// level above the item's, mostly from disk (docs/performance.md,
	// "Flat with size", round 5). Tables written without them (before)
	// are read as they were.
	po.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	sched := newScheduler() // compactions wait until Open has returned
	po.Experimental.CompactionScheduler = sched
	type result struct {
		db  *pebble.DB
		err error
	}
	// Buffer of 1: an open abandoned after openTimeout still delivers.
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			// Pebble reports an unrecoverable write (a new MANIFEST that
			// cannot be synced) through Logger.Fatalf, which panics here.
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("pebble: %v", p)}
			}
			done <- r
		}()
		r.db, r.err = pebble.Open(s.opts.Dir, po)
	}()
	timer := time.NewTimer(openTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			sched.abandon()
			return nil, fmt.Errorf("open store in %s: %w", s.opts.Dir, r.err)
		}
		sched.open()
		return &generation{db: r.db, readOnly: readOnly}, nil
	case <-timer.C:
		// NB: the open goroutine is abandoned with the directory lock; the
		// process must restart (the caller exits or the store gives up).
		return nil, fmt.Errorf("open store in %s: not open after %s (is the disk full?)", s.opts.Dir, openTimeout)
	}
}

// Done returns a channel that is closed when the store has given up: a
// write to the write-ahead log failed and the database could not be
// reopened in-process (an operation stuck inside Pebble, or an open that
// failed). Every operation then gets ErrUnavailable and the process must
// restart; the write-ahead log holds every acknowledged write. Err says why.
func (s *Store) Done() <-chan struct{} { return s.dead }

// Err returns why the store gave up, or nil while Done is open.
func (s *Store) Err() error {
	select {
	case <-s.dead:
		return s.deadErr
	default:
		return nil
	}
}

// die gives up (see Done).
func (s *Store) die(err error) {
	s.deadOnce.Do(func() {
		s.deadErr = err
		s.log.Error("the store cannot recover in-process: restart the server (every acknowledged write is in the write-ahead log)", "err", err)
		close(s.dead)
	})
}

// Close closes the database, within Options.CloseTimeout: running
// operations are waited for, then Pebble's Close. If either takes longer
// (Pebble wedged by a failed disk), Close gives up and returns an error,
// leaving the database open; committed batches are already in the
// write-ahead log. Later calls (and Shutdown) return the same result.
func (s *Store) Close() error {
	return s.closeBy(time.Now().Add(s.opts.CloseTimeout))
}

// Shutdown is Close within ctx's deadline rather than CloseTimeout (the
// server's shutdown budget). Without a deadline it is Close.
func (s *Store) Shutdown(ctx context.Context) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return s.Close()
	}
	return s.closeBy(deadline)
}

func (s *Store) closeBy(deadline time.Time) error {
	s.closeOnce.Do(func() { s.closeErr = s.close(deadline) })
	return s.closeErr
}

func (s *Store) close(deadline time.Time) error {
	timeout := time.Until(deadline).Round(time.Millisecond)
	s.closing.Store(true)
	close(s.stop)
	if !waitUntil(s.monitorDone, deadline) {
		return fmt.Errorf("store: close: still reopening the database after %s", timeout)
	}
	s.mu.Lock()
	s.mu.closed = true
	g := s.mu.gen
	s.mu.gen = nil
	var drained chan struct{}
	if g != nil {
		drained = g.retireLocked()
	}
	s.mu.Unlock()
	if g == nil { // the store gave up: its last database is abandoned
		return s.Err()
	}
	if !waitUntil(drained, deadline) {
		return fmt.Errorf("store: close: operations still running after %s; the database was left open", timeout)
	}
	// A graceful close flushes the memtables first: the next Open then has
	// no write-ahead log to replay and flush before it is ready
	// (docs/performance.md, "Start-up"). A read-only database has nothing
	// to flush, and a close with under 2 s left does not (a flush is not
	// worth turning a shutdown into a timeout). Neither does a store whose
	// log write failed, whose disk is full, or has less than MinFreeBytes
	// free (when it watches the disk): a flush starts a new log file, and Pebble panics when it cannot
	// (found by the engine's disk-full tests in CI); the log is replayed at
	// the next start instead.
	left := time.Until(deadline)
	flush := !g.readOnly && left >= 2*time.Second && s.failure.Load() == nil && !s.full.Load() &&
		(s.opts.MinFreeBytes == 0 || s.disk.freshFree(0) >= s.opts.MinFreeBytes)
	err := s.closeDB(g.db, left, flush)
	if errors.Is(err, errCloseTimeout) {
		return err // Pebble still holds the directory lock
	}
	return errors.Join(err, s.lock.Close())
}

var errCloseTimeout = errors.New("store: close timed out")

// closeDB closes db within timeout, flushing its memtables first if
// flush is set.
func (s *Store) closeDB(db *pebble.DB, timeout time.Duration, flush bool) error {
	// Buffer of 1: a close abandoned after timeout still delivers.
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("pebble: close: %v", p)
			}
		}()
		if flush {
			if err := db.Flush(); err != nil {
				s.log.Debug("flush before close", "err", err)
			}
		}
		done <- db.Close()
	}()
	timer := time.NewTimer(max(timeout, 0))
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		// NB: the closing goroutine is abandoned, stuck inside Pebble.
		return fmt.Errorf("%w after %s: Pebble is stuck, probably on the disk", errCloseTimeout, timeout)
	}
}

// waitUntil reports whether ch closed before deadline.
func waitUntil(ch <-chan struct{}, deadline time.Time) bool {
	timer := time.NewTimer(max(time.Until(deadline), 0))
	defer timer.Stop()
	select {
	case <-ch:
		return true
	case <-timer.C:
		return false
	}
}

// acquire returns the open generation with a reference the caller must
// release, or the error that refuses the operation: write selects the one
// a write gets.
func (s *Store) acquire(write bool) (*generation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.mu.gen
	switch {
	case s.mu.closed:
		return nil, ErrClosed
	case g == nil || s.failure.Load() != nil:
		return nil, s.unavailable(write)
	}
	g.refs++
	return g, nil
}

// release drops a reference taken by acquire.
func (s *Store) release(g *generation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.refs--; g.refs == 0 && g.drained != nil {
		close(g.drained)
	}
}

// retireLocked stops new operations on g (the caller has taken it out of
// s.mu.gen) and returns a channel closed once the running ones are done.
func (g *generation) retireLocked() chan struct{} {
	g.drained = make(chan struct{})
	if g.refs == 0 {
		close(g.drained)
	}
	return g.drained
}

// unavailable is the error that refuses an operation while the store has
// no healthy database. A write refused after a log write failed for want of
// space is a *DiskFullError as well.
func (s *Store) unavailable(write bool) error {
	err := ErrUnavailable
	p := s.failure.Load()
	if p == nil {
		p = s.reopening.Load()
	}
	if p != nil {
		err = fmt.Errorf("%w: %w", ErrUnavailable, *p)
		if write && isENOSPC(*p) {
			return &DiskFullError{Free: s.disk.free(), ResumeAt: s.opts.MinFreeBytes, Err: err}
		}
	}
	return err
}

// failed returns the refusal of an operation that read from a generation
// that failed meanwhile (what it read may come from a batch whose log write
// failed), or nil.
func (s *Store) failed() error {
	if s.failure.Load() == nil {
		return nil
	}
	return s.unavailable(false)
}

// fail records that the open generation may hold batches that were never
// acknowledged (see watchFS): every operation is refused from now on, and
// the monitor reopens the database, which drops them.
func (s *Store) fail(cause error) {
	if !s.failure.CompareAndSwap(nil, &cause) {
		return
	}
	if s.closing.Load() {
		// Closing on a full disk: the log's end marker did not fit. Every
		// acknowledged write is synced already.
		s.log.Debug("a write to the write-ahead log failed while closing", "err", cause)
		return
	}
	s.log.Error("a write to the write-ahead log failed: refusing every request until the database is reopened (acknowledged writes are safe in the log)", "err", cause)
	s.nudge()
}

// nudge wakes the monitor.
func (s *Store) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Get returns a copy of the value stored at key, or ErrNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	g, err := s.acquire(false)
	if err != nil {
		return nil, err
	}
	defer s.release(g)
	v, err := get(g.db, key)
	if ferr := s.failed(); ferr != nil {
		return nil, ferr
	}
	return v, err
}

// get reads a copy of key's value from a database or an indexed batch.
func get(r pebble.Reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, closer.Close()
}

// Scan calls fn with every key and value in span, in key order, starting
// strictly after the key after when it is non-nil. fn returns false to stop.
// key and value are valid only during the call. Scan checks ctx every 256
// entries.
func (s *Store) Scan(ctx context.Context, span Span, after []byte, fn func(key, value []byte) bool) error {
	g, err := s.acquire(false)
	if err != nil {
		return err
	}
	defer s.release(g)
	it, err := g.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: span.Lower, UpperBound: span.Upper})
	if err != nil {
		return err
	}
	return s.scanIter(ctx, it, after, fn)
}

// ScanReverse is Scan in descending key order, from the end of span.
func (s *Store) ScanReverse(ctx context.Context, span Span, fn func(key, value []byte) bool) error {
	g, err := s.acquire(false)
	if err != nil {
		return err
	}
	defer s.release(g)
	it, err := g.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: span.Lower, UpperBound: span.Upper})
	if err != nil {
		return err
	}
	for n, ok := 0, it.Last(); ok; n, ok = n+1, it.Prev() {
		if n%256 == 255 {
			if err := ctx.Err(); err != nil {
				_ = it.Close()
				return err
			}
		}
		if s.failure.Load() != nil {
			_ = it.Close()
			return s.failed()
		}
		if !fn(it.Key(), it.Value()) {
			break
		}
	}
	return errors.Join(it.Error(), it.Close(), s.failed())
}

// scanIter runs a forward scan. It stops, with the refusal, at the first
// entry after the store failed: entries from then on may come from batches
// whose log write failed.
func (s *Store) scanIter(ctx context.Context, it *pebble.Iterator, after []byte, fn func(key, value []byte) bool) error {
	var ok bool
	if after != nil {
		ok = it.SeekGE(after)
		if ok && string(it.Key()) == string(after) {
			ok = it.Next()
		}
	} else {
		ok = it.First()
	}
	for n := 0; ok; n++ {
		if n%256 == 255 {
			if err := ctx.Err(); err != nil {
				_ = it.Close()
				return err
			}
		}
		if s.failure.Load() != nil {
			_ = it.Close()
			return s.failed()
		}
		if !fn(it.Key(), it.Value()) {
			break
		}
		ok = it.Next()
	}
	return errors.Join(it.Error(), it.Close(), s.failed())
}

// Batch is a set of writes applied atomically by Commit. A Batch is not safe
// for concurrent use.
type Batch struct {
	s   *Store
	g   *generation   // the generation b belongs to; nil when err is set
	b   *pebble.Batch // nil once committed or closed: Pebble recycles batches
	err error         // why the store refused the batch: every use reports it
}

// NewBatch returns an empty batch. Callers must Commit or Close it: it
// holds the database open until then.
func (s *Store) NewBatch() *Batch { return s.newBatch(false) }

// NewIndexedBatch returns an empty batch whose Get and Scan see its own
// uncommitted writes on top of the store: the building block of a
// transaction. Callers must Commit or Close it.
func (s *Store) NewIndexedBatch() *Batch { return s.newBatch(true) }

func (s *Store) newBatch(indexed bool) *Batch {
	g, err := s.acquire(true)
	if err != nil {
		return &Batch{s: s, err: err}
	}
	if indexed {
		return &Batch{s: s, g: g, b: g.db.NewIndexedBatch()}
	}
	return &Batch{s: s, g: g, b: g.db.NewBatch()}
}

// Get returns a copy of the value at key as the batch sees it (its own
// writes over the store), or ErrNotFound. Only for indexed batches.
func (b *Batch) Get(key []byte) ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	v, err := get(b.b, key)
	if ferr := b.s.failed(); ferr != nil {
		return nil, ferr
	}
	return v, err
}

// Scan is Store.Scan as the batch sees the data. Only for indexed batches.
func (b *Batch) Scan(ctx context.Context, span Span, after []byte, fn func(key, value []byte) bool) error {
	if b.err != nil {
		return b.err
	}
	it, err := b.b.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: span.Lower, UpperBound: span.Upper})
	if err != nil {
		return err
	}
	return b.s.scanIter(ctx, it, after, fn)
}

// Set writes value at key.
func (b *Batch) Set(key, value []byte) {
	if b.b != nil {
		_ = b.b.Set(key, value, nil)
	}
}

// Delete removes key.
func (b *Batch) Delete(key []byte) {
	if b.b != nil {
		_ = b.b.Delete(key, nil)
	}
}

// DeleteSpan removes every key in span (a range tombstone: cheap for large spans).
func (b *Batch) DeleteSpan(span Span) {
	if b.b != nil {
		_ = b.b.DeleteRange(span.Lower, span.Upper, nil)
	}
}

// Empty reports whether the batch holds no writes. A batch the store
// refused is not empty: its Commit reports the refusal. A committed or
// closed batch is empty.
func (b *Batch) Empty() bool { return b.err == nil && (b.b == nil || b.b.Empty()) }

// Commit applies the batch atomically and, for a store opened with Sync,
// returns only once it is durable. The batch is closed afterwards.
//
// Errors: a *DiskFullError when the disk is short of space (nothing is
// written; Options.MinFreeBytes), ErrUnavailable after a failed write to
// the write-ahead log (this batch is not acknowledged and never becomes
// visible: the store refuses everything until it has reopened the
// database), ErrClosed; an error too if the batch was already committed or
// closed.
func (b *Batch) Commit() error { return b.commit(b.s.wo) }

// CommitNoSync is Commit without waiting for the batch to be durable, even
// for a store opened with Sync: it becomes durable with the next synced
// commit (the write-ahead log is written in order) or the next flush. For
// writes that can be redone after a crash (Raft's apply of entries whose
// log is synced).
func (b *Batch) CommitNoSync() error { return b.commit(pebble.NoSync) }

func (b *Batch) commit(wo *pebble.WriteOptions) error {
	switch {
	case b.err != nil:
		return b.err
	case b.b == nil:
		return errBatchDone
	}
	defer b.Close()
	if err := b.s.admit(b.g, int64(b.b.Len())); err != nil {
		return err
	}
	// Only a store without Sync syncs in the background (syncLog), and
	// the flag is written only when it changes: every commit of every
	// core would otherwise write one shared cache line.
	if !wo.GetSync() && !b.s.opts.Sync && !b.s.unsynced.Load() {
		b.s.unsynced.Store(true)
	}
	if wo.GetSync() && b.b.Empty() {
		// Pebble returns at once for an empty batch: a transaction that
		// only read (a stored procedure's) answers with what it saw, so
		// that must be durable as any read's is.
		b.s.AwaitDurable()
		return nil
	}
	return b.s.apply(b.b, wo)
}

// syncLog syncs the write-ahead log if a batch was committed without a sync
// since the last (Options.RelaxedSyncInterval).
func (s *Store) syncLog() {
	if !s.unsynced.Swap(false) {
		return
	}
	g, err := s.acquire(true)
	if err != nil {
		return // closed, failed or reopening: a reopen replays and syncs what the log holds
	}
	defer s.release(g)
	if g.readOnly {
		return
	}
	b := g.db.NewBatch()
	defer b.Close()
	_ = b.LogData(nil, nil)
	if err := s.apply(b, pebble.Sync); err != nil {
		s.unsynced.Store(true)
		s.log.Warn("sync the write-ahead log", "err", err)
	}
}

// apply commits b to its database.
func (s *Store) apply(b *pebble.Batch, wo *pebble.WriteOptions) (err error) {
	if wo.GetSync() {
		ck := batchKeys(b)
		n := s.inflight.begin(ck)
		defer s.inflight.end(n, ck) // after the recovery below: a failed commit has failed the store first
	}
	defer func() {
		// NB: Pebble reports a failed commit only through Logger.Fatalf
		// (db.go applyInternal), which must not return: pebbleLogger
		// panics, and this turns it back into an error. Pebble holds none
		// of its locks at that point. A panic out of the commit pipeline
		// itself (a log writer that already failed, commitWrite) is
		// caught too: either way the database may hold the batch without
		// its log record, so the store fails until it is reopened.
		if p := recover(); p != nil {
			s.fail(fmt.Errorf("pebble: commit: %v", p))
			err = s.unavailable(true)
		}
	}()
	return b.Commit(wo)
}

// Close discards an uncommitted batch; after Commit it does nothing, so
// `defer b.Close()` is always safe.
func (b *Batch) Close() {
	if b.b != nil {
		_ = b.b.Close()
		b.b = nil
		b.s.release(b.g)
	}
}

// CheckDir returns Open's error for a directory on disk that holds no store
// but other files, so that a caller can refuse it before it writes anything
// there itself (the server's TLS certificate).
func CheckDir(dir string) error { return foreignDir(vfs.Default, dir) }

// foreignDir refuses a directory that holds no store (no MANIFEST) but
// files a data directory would not: a store made there would mix its files
// with them and write a ballast of 128 MiB among them (an operator hunt
// pointed --data at another store's parent). Partita's own entries (the
// TLS and cluster directories, etcd's, the ballast) and Pebble's may be
// there, as a start that failed early leaves them.
func foreignDir(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if err != nil {
		return nil // absent (MkdirAll makes it) or unreadable (Open reports it)
	}
	var foreign []string
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "MANIFEST-"):
			return nil // a store
		case n == "LOCK", n == "CURRENT", n == ballastName, n == tablesDir, n == "tls", n == "cluster", n == "etcd", n == "archive",
			strings.HasPrefix(n, "OPTIONS-"), strings.HasPrefix(n, "marker."), strings.HasSuffix(n, ".log"),
			strings.HasSuffix(n, ".sst"), strings.HasSuffix(n, ".blob"), strings.HasSuffix(n, ".dbtmp"):
		default:
			foreign = append(foreign, n)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	slices.Sort(foreign)
	if len(foreign) > 3 {
		foreign = append(foreign[:3], "…")
	}
	return fmt.Errorf("open store in %s: the directory holds no Partita data but other files (%s): pass an empty or new directory as --data", dir, strings.Join(foreign, ", "))
}

// lockError describes a failure to lock the data directory dir. Pebble's
// lock is an fcntl write lock: another process holding it makes F_SETLK
// fail with EAGAIN or EACCES (ErrInUse). Creating the LOCK file fails with
// EACCES too, as an *fs.PathError, when the directory is not writable: that
// is not a lock held (an operator hunt, running as the image's user on a
// root-owned directory, was told the directory was in use).
func lockError(dir string, err error) error {
	_, created := errors.AsType[*fs.PathError](err)
	switch {
	case !created && (errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES)),
		strings.Contains(err.Error(), "lock held by current process"): // Pebble's, of a second Open in one process
		return fmt.Errorf("open store in %s: %w (%v)", dir, ErrInUse, err)
	case created && errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("open store in %s: %w (the server's user cannot write the data directory: give it the directory, or pass another --data)", dir, err)
	}
	return fmt.Errorf("open store in %s: %w", dir, err)
}

// pebbleLogger sends Pebble's log lines to slog.
type pebbleLogger struct {
	s     *Store
	epoch uint64 // the generation of the database that logs
}

func (p pebbleLogger) Infof(format string, args ...any) {
	p.s.log.Debug("pebble", "msg", fmt.Sprintf(format, args...))
}

// Errorf logs at most one line every ten seconds: on a full disk Pebble
// retries failed flushes and compactions at once, without backoff.
func (p pebbleLogger) Errorf(format string, args ...any) {
	if ok, dropped := p.s.errLog.allow(time.Now()); ok {
		p.s.log.Error("pebble", "msg", fmt.Sprintf(format, args...), "dropped", dropped)
	}
}

// Fatalf is called by Pebble on an error it cannot recover from (a failed
// commit, a MANIFEST it cannot write); it must not return. The store fails
// first, so that nothing more is served from this database. In a commit,
// Batch.Commit recovers the panic; in Pebble's background work it ends the
// process, and the restart replays the write-ahead log.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if p.epoch == p.s.epoch.Load() {
		p.s.fail(errors.New(msg))
	}
	panic("pebble: " + msg)
}

// dataCorruption is told of a file Pebble found damaged on disk (a block
// whose checksum does not match): the read that met it fails with Pebble's
// corruption error (ErrCorruption), which the caller reports, and the store
// goes on serving what is intact. Without it Pebble called Logger.Fatalf,
// which failed the whole store as if a log write had failed: every request
// got 503 "recovering from a failed disk write", the reopen timed out, and
// partita check panicked (an operator hunt flipped 3 bytes of an sstable).
func (s *Store) dataCorruption(info pebble.DataCorruptionInfo) {
	if ok, dropped := s.errLog.allow(time.Now()); ok {
		s.log.Error("on-disk corruption: a file of the data directory is damaged (a checksum does not match); "+
			"reads of the data in it fail: restore the directory from a backup, or in a cluster replace this member's copy",
			"path", info.Path, "details", info.Details, "dropped", dropped)
	}
}

// IsCorruption reports whether err is Pebble's report of on-disk corruption.
func IsCorruption(err error) bool { return pebble.IsCorruptionError(err) }

// backgroundError receives the errors of Pebble's flushes and compactions.
// They are retried, so they are logged at most every ten seconds.
func (s *Store) backgroundError(err error) {
	if ok, dropped := s.errLog.allow(time.Now()); ok {
		s.log.Error("pebble background error", "err", err, "dropped", dropped)
	}
	if isENOSPC(err) {
		s.nudge()
	}
}

// rateLimit lets one event through every ten seconds and counts the others.
type rateLimit struct {
	last    atomic.Int64 // unix nanoseconds of the last event let through
	dropped atomic.Int64
}

// allow reports whether the event at now goes through, and how many were
// dropped since the last one that did.
func (r *rateLimit) allow(now time.Time) (bool, int64) {
	last := r.last.Load()
	if last != 0 && now.UnixNano()-last < int64(10*time.Second) || !r.last.CompareAndSwap(last, now.UnixNano()) {
		r.dropped.Add(1)
		return false, 0
	}
	return true, r.dropped.Swap(0)
}

// Span is a half-open key span [Lower, Upper); a nil Upper means no upper
// bound.
type Span struct {
	Lower, Upper []byte
}

// Contains reports whether key lies in s.
func (s Span) Contains(key []byte) bool {
	return bytes.Compare(key, s.Lower) >= 0 && (s.Upper == nil || bytes.Compare(key, s.Upper) < 0)
}

// Compact rewrites the data of span, dropping what deletions left (after a
// large deletion whose tombstones would slow reads of the span until the
// background compactions reach it). It blocks until done or ctx ends.
func (s *Store) Compact(ctx context.Context, span Span) error {
	g, err := s.acquire(true)
	if err != nil {
		return err
	}
	defer s.release(g)
	upper := span.Upper
	if upper == nil {
		upper = []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	}
	if err := g.db.Compact(ctx, span.Lower, upper, true); err != nil {
		return errors.Join(err, s.failed())
	}
	return nil
}
