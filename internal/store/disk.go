package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A full disk (docs/design.md, "When the disk fills up"). Pebble cannot
// survive running out of space on its own: a failed write or sync of the
// write-ahead log is fatal to it (Logger.Fatalf) after the batch was already
// applied and made visible, and a failed flush is retried at once, forever,
// including inside Open. So the store keeps it away from a full disk, in
// three layers:
//
//  1. A floor: Commit refuses a write with a *DiskFullError when the
//     filesystem would keep less than Options.MinFreeBytes free. The view
//     of free space is one statfs (vfs.FS.GetDiskUsage) less what the store
//     wrote since, read again every DiskCheckInterval, after every eighth of
//     the floor written, and before any refusal: a check costs a few atomic
//     loads. Reads go on; writes resume on their
//     own when space returns.
//  2. A ballast: a file of Options.BallastBytes that holds space for the
//     store. When a write meets ENOSPC anyway (another process filled the
//     disk) vfs.OnDiskFull releases it and retries the write once; the
//     monitor also releases it when free space falls under half the floor,
//     and at Open when Pebble needs it to open read-write. It is made again
//     once the floor and the ballast both fit.
//  3. Failing safely: if a log write fails all the same, the store refuses
//     every request, cuts the unsynced tail off the log (watchFS) and
//     reopens the database, which drops the memtable; if Pebble does not
//     let go, it gives up and the process must restart (Done).

// DiskFullError is returned by Batch.Commit when the store refuses a write
// for want of space: its filesystem has fewer than Options.MinFreeBytes
// free, or the database is open read-only because the disk was full at
// open. Nothing was written. Writes resume on their own once more than
// ResumeAt bytes are free.
type DiskFullError struct {
	Free     int64 // bytes free when the write was refused
	ResumeAt int64 // free bytes above which writes resume
	// Err is the failed write to the write-ahead log behind the refusal,
	// if any (it matches ErrUnavailable).
	Err error
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("store: disk full: %d bytes free, writes resume above %d", e.Free, e.ResumeAt)
}

// Unwrap returns the failed log write behind the refusal, if any.
func (e *DiskFullError) Unwrap() error { return e.Err }

// isENOSPC reports whether err says the filesystem is out of space.
func isENOSPC(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// disk is the store's view of its filesystem's free space: the last statfs
// less the bytes written since (an estimate that errs low, as deletions
// are not counted).
type disk struct {
	fs       vfs.FS
	dir      string
	interval time.Duration
	// every is how many bytes the store may write before it reads the free
	// space again: others' use of the disk is seen within that much of
	// the store's own writes, or within interval.
	every int64

	mu    sync.Mutex   // serializes refreshes
	avail atomic.Int64 // bytes available at the last refresh
	since atomic.Int64 // bytes written since the last refresh
	at    atomic.Int64 // unix nanoseconds of the last refresh
}

// wrote records n bytes written.
func (d *disk) wrote(n int) { d.since.Add(int64(n)) }

// free returns the estimate of free bytes.
func (d *disk) free() int64 { return d.avail.Load() - d.since.Load() }

// refresh reads the free space from the filesystem.
func (d *disk) refresh() (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	written := d.since.Load()
	u, err := d.fs.GetDiskUsage(d.dir)
	if err != nil {
		return d.free(), err
	}
	d.avail.Store(int64(min(u.AvailBytes, 1<<62)))
	d.since.Add(-written)
	d.at.Store(time.Now().UnixNano())
	return d.free(), nil
}

// freshFree returns the free bytes, read again from the filesystem when the
// last read is older than maxAge or the store wrote d.every bytes since.
func (d *disk) freshFree(maxAge time.Duration) int64 {
	if time.Now().UnixNano()-d.at.Load() < int64(maxAge) && d.since.Load() < d.every {
		return d.free()
	}
	free, _ := d.refresh()
	return free
}

// ballastName is the ballast's file name in the data directory (Pebble
// ignores files it does not name).
const ballastName = "EMERGENCY-BALLAST"

// ballast is a file of zeros that reserves space for the store (see the
// top of this file). Creation writes a temporary file, then renames it.
// Release truncates the file rather than removing it: the empty file says,
// after a restart, that the ballast is owed (writes wait until it is made
// again). Forgotten at every restart before, a node whose disk had filled
// took writes down to the floor again with no reserve for the next time.
type ballast struct {
	fs   vfs.FS // the store's own filesystem, not Pebble's: its writes are not Pebble's
	path string
	size int64
	// waitLogged: the warning that the ballast waits for room was logged
	// (tendBallast's, which the monitor alone calls).
	waitLogged bool

	mu struct {
		sync.Mutex
		present  bool
		owed     bool // released and not made again yet (an empty file marks it across restarts)
		creating bool // a temporary file is being written
		abort    bool // release asked the creation to stop
	}
}

func (b *ballast) tmp() string { return b.path + ".tmp" }

// load learns whether the ballast exists, and removes a temporary file left
// by a creation that did not finish.
func (b *ballast) load() error {
	if err := b.fs.Remove(b.tmp()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	st, err := b.fs.Stat(b.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	b.mu.Lock()
	b.mu.present = err == nil && st.Size() > 0
	b.mu.owed = err == nil && st.Size() == 0 && b.size > 0
	b.mu.Unlock()
	return nil
}

// present reports whether the ballast exists.
func (b *ballast) present() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.present
}

// release deletes the ballast (and stops a creation under way) and reports
// whether there was one.
func (b *ballast) release() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.creating {
		b.mu.abort = true
	}
	if !b.mu.present {
		return false, nil
	}
	// Truncated to the empty file that marks the debt (Create truncates,
	// freeing the blocks without a new allocation); removed if that fails.
	f, err := b.fs.Create(b.path, vfs.WriteCategoryUnspecified)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		if err := b.fs.Remove(b.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
	}
	// Gone already (an operator removed it to free space): released all
	// the same. Before, every later attempt failed on it, and each logged
	// an error with a stack: 175,553 lines in 90 s (a bug hunt).
	b.mu.present, b.mu.owed = false, true
	return true, nil
}

// owed reports whether the ballast was released and not made again: writes
// wait until it is back.
func (b *ballast) owed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.owed
}

// create writes the ballast.
func (b *ballast) create() error {
	b.mu.Lock()
	if b.mu.present || b.mu.creating {
		b.mu.Unlock()
		return nil
	}
	b.mu.creating, b.mu.abort = true, false
	b.mu.Unlock()
	err := b.write()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.creating = false
	if err == nil && b.mu.abort {
		err = errors.New("released while being made")
	}
	if err == nil {
		err = b.fs.Rename(b.tmp(), b.path)
	}
	if err != nil {
		_ = b.fs.Remove(b.tmp())
		return fmt.Errorf("make the ballast %s: %w", b.path, err)
	}
	b.mu.present, b.mu.owed = true, false
	return nil
}

// write writes the temporary file: zeros, which filesystems allocate (a
// preallocation would not show in every filesystem's free space).
func (b *ballast) write() error {
	f, err := b.fs.Create(b.tmp(), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	zeros := make([]byte, 1<<20)
	for left := b.size; left > 0; left -= int64(len(zeros)) {
		b.mu.Lock()
		abort := b.mu.abort
		b.mu.Unlock()
		if abort {
			break
		}
		if _, err := f.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return errors.Join(f.Sync(), f.Close())
}

// openNeeds estimates the free space Pebble needs to open read-write: it
// flushes the logs it replays to sstables and writes a new MANIFEST, so the
// size of the logs and manifests, with 4 MiB to spare.
func (s *Store) openNeeds() int64 {
	names, err := s.opts.FS.List(s.opts.Dir)
	if err != nil {
		return 4 << 20
	}
	need := int64(4 << 20)
	for _, n := range names {
		if strings.HasSuffix(n, ".log") || strings.HasPrefix(n, "MANIFEST-") {
			if st, err := s.opts.FS.Stat(s.opts.FS.PathJoin(s.opts.Dir, n)); err == nil {
				need += st.Size()
			}
		}
	}
	return need
}

// exists reports whether Dir holds a database (Pebble cannot open a new one
// read-only).
func (s *Store) exists() bool {
	names, _ := s.opts.FS.List(s.opts.Dir)
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") {
			return true
		}
	}
	return false
}

// planOpen decides how to open the database: read-write when the disk has
// room for Pebble to open (releasing the ballast if that makes room),
// read-only otherwise. note is non-nil when the disk is full: the
// attributes of the one line Open logs.
func (s *Store) planOpen() (readOnly bool, note []any) {
	if s.opts.ReadOnly {
		return true, nil
	}
	if !s.checks {
		return false, nil
	}
	free, need := s.disk.free(), s.openNeeds()
	released := false
	if free < need {
		if ok, err := s.ballast.release(); err != nil {
			s.log.Warn("cannot release the ballast", "err", err)
		} else if ok {
			released = true
			free, _ = s.disk.refresh()
		}
	}
	readOnly = free < need && s.exists()
	if readOnly || released || free < s.opts.MinFreeBytes {
		note = []any{"free", free, "resume_at", s.resumeAt(readOnly), "read_only", readOnly, "ballast_released", released}
	}
	return readOnly, note
}

// resumeAt is the free space above which writes resume: the floor, plus
// the ballast once it was released (writes wait until it is made again, so
// that the next time the disk fills up there is a reserve again), and at
// least what a read-write open needs after a read-only one.
func (s *Store) resumeAt(readOnly bool) int64 {
	at := s.opts.MinFreeBytes
	if s.ballast.owed() {
		at += s.ballast.size
	}
	if readOnly {
		at = max(at, s.openNeeds())
	}
	return at
}

// admit decides whether a write of n bytes to generation g may go ahead.
func (s *Store) admit(g *generation, n int64) error {
	if s.failure.Load() != nil {
		return s.unavailable(true)
	}
	if s.opts.ReadOnly {
		return ErrReadOnly
	}
	if g.readOnly {
		free, _ := s.disk.refresh()
		at := s.resumeAt(true)
		if free >= at {
			s.nudge() // the monitor reopens read-write now rather than at its next tick
		}
		return &DiskFullError{Free: free, ResumeAt: at}
	}
	if !s.checks {
		return nil
	}
	floor := s.resumeAt(false)
	if floor <= 0 {
		return nil
	}
	free := s.disk.freshFree(s.opts.DiskCheckInterval)
	if free-n < floor {
		// The estimate errs low (compactions delete files, space may have
		// been freed): read again before refusing. A statfs costs about a
		// microsecond, little next to the request refused.
		free, _ = s.disk.refresh()
	}
	if free-n < floor {
		s.noteFull(free, floor)
		return &DiskFullError{Free: free, ResumeAt: floor}
	}
	s.noteRoom(free)
	return nil
}

// Room returns the *DiskFullError a write of n bytes would meet now (the
// store refuses writes for want of space), or nil; other failures of the
// store are Commit's to report. Nothing is written.
func (s *Store) Room(n int64) error {
	g, err := s.acquire(true)
	if err != nil {
		return nil
	}
	defer s.release(g)
	if err := s.admit(g, n); err != nil {
		if _, ok := errors.AsType[*DiskFullError](err); ok {
			return err
		}
	}
	return nil
}

// Full reports whether the store refused a write for want of space since
// it last found room (a write refused, and no check since found enough).
func (s *Store) Full() bool { return s.full.Load() }

// Space reports the data directory's filesystem's free bytes (as last
// measured, an estimate between checks; read now from a store that checks
// no floor, -1 if the filesystem does not say) and the floor below which
// writes are refused (0 when the store checks none).
func (s *Store) Space() (free, floor int64) {
	if !s.checks {
		free, err := s.disk.refresh()
		if err != nil {
			return -1, 0
		}
		return free, 0
	}
	return s.disk.free(), s.resumeAt(false)
}

// noteFull logs, once, that writes are refused.
func (s *Store) noteFull(free, resumeAt int64) {
	if s.full.CompareAndSwap(false, true) {
		s.log.Error("the data directory's disk is full: refusing writes until space returns", "free", free, "resume_at", resumeAt)
	}
}

// noteRoom logs, once, that writes are accepted again.
func (s *Store) noteRoom(free int64) {
	if s.full.CompareAndSwap(true, false) {
		s.log.Info("disk space is back: accepting writes", "free", free)
	}
}

// onDiskFull is called by vfs.OnDiskFull when a write meets ENOSPC, with
// every new write held until it returns: it releases the ballast, and the
// write is retried once.
func (s *Store) onDiskFull() {
	ok, err := s.ballast.release()
	switch {
	case err != nil:
		s.log.Error("the disk is full and the ballast cannot be released", "err", err)
	case ok:
		s.log.Warn("the disk is full: released the ballast so that the store can go on flushing and compacting; refusing writes until space returns", "ballast", s.ballast.size)
	}
	// The floor check must see the loss now, not at the next tick.
	_, _ = s.disk.refresh()
	s.nudge()
}

// monitor runs tick every DiskCheckInterval, and when nudged, and, in a
// store without Sync, syncLog every RelaxedSyncInterval, until Close.
func (s *Store) monitor() {
	t := time.NewTicker(s.opts.DiskCheckInterval)
	defer t.Stop()
	var syncs <-chan time.Time // a store that syncs every commit needs none
	if !s.opts.Sync {
		st := time.NewTicker(s.opts.RelaxedSyncInterval)
		defer st.Stop()
		syncs = st.C
	}
	for {
		select {
		case <-s.stop:
			return
		case <-syncs:
			s.syncLog()
			continue
		case <-t.C:
		case <-s.wake:
		}
		s.tick()
	}
}

// tick reads the free space, tends the ballast, and reopens the database
// after a failure, or read-write after a read-only open once there is room.
func (s *Store) tick() {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	s.mu.Lock()
	g := s.mu.gen
	s.mu.Unlock()
	if g == nil {
		return // closed, or given up
	}
	free := int64(1 << 62)
	if s.checks {
		free, _ = s.disk.refresh()
		s.tendBallast(free)
	}
	switch {
	case s.failure.Load() != nil:
		s.reopen(g)
	case g.readOnly && !s.opts.ReadOnly && free >= s.resumeAt(true):
		s.reopen(g)
	case !g.readOnly && free >= s.resumeAt(false):
		s.noteRoom(free)
	}
}

// tendBallast releases the ballast when the disk is nearly full, and makes
// it again when the floor and the ballast both fit.
func (s *Store) tendBallast(free int64) {
	b := &s.ballast
	if b.size <= 0 {
		return
	}
	floor := s.opts.MinFreeBytes
	switch present := b.present(); {
	case present && free < floor/2:
		if ok, err := b.release(); err != nil {
			s.log.Error("cannot release the ballast", "err", err)
		} else if ok {
			s.log.Warn("free space fell under half the floor: released the ballast so that the store can go on flushing and compacting", "free", free, "ballast", b.size)
		}
	case !present && free >= floor+b.size:
		if err := b.create(); err != nil {
			if ok, dropped := s.ballastLog.allow(time.Now()); ok {
				s.log.Warn("cannot make the ballast; will try again", "err", err, "dropped", dropped)
			}
			return
		}
		s.log.Info("made the ballast", "path", b.path, "bytes", b.size)
		_, _ = s.disk.refresh()
	case !present && !b.waitLogged && !b.owed():
		// Said once: a ballast larger than the disk's free space was never
		// made, and nothing said so (an operator hunt). One released on a
		// full disk (owed) was logged then.
		b.waitLogged = true
		s.log.Warn("the ballast is not made: the disk's free space is below the floor plus the ballast; it is made once there is room",
			"free", free, "floor", floor, "ballast", b.size)
	}
}

// reopen closes generation g and opens the database again: after a failed
// log write, to drop the memtable that may hold unacknowledged batches (the
// log lost its unsynced tail when the write failed); after a read-only open
// on a full disk, read-write once there is room. New operations get
// ErrUnavailable meanwhile; running ones finish first. If they do not
// within CloseTimeout, a read-only database stays as it is (tried again
// later) and a failed one makes the store give up, as does a database that
// will not close or open.
func (s *Store) reopen(g *generation) {
	s.mu.Lock()
	if s.mu.gen != g || s.mu.closed {
		s.mu.Unlock()
		return
	}
	s.mu.gen = nil
	drained := g.retireLocked()
	s.mu.Unlock()
	failed := s.failure.Load() != nil

	timer := time.NewTimer(s.opts.CloseTimeout)
	defer timer.Stop()
	select {
	case <-drained:
	case <-s.stop:
		s.restore(g) // Close takes it from here
		return
	case <-timer.C:
		if failed {
			s.die(fmt.Errorf("reopen after a failed write: operations still running in the failed database after %s", s.opts.CloseTimeout))
			return
		}
		s.restore(g)
		return
	}
	if err := s.closeDB(g.db, s.opts.CloseTimeout, false); err != nil {
		if errors.Is(err, errCloseTimeout) {
			s.die(fmt.Errorf("reopen: %w", err))
			return
		}
		// A failed database's Close reports the failed log write again.
		s.log.Debug("closed the database to reopen it", "err", err)
	}
	readOnly, note := s.planOpen()
	s.reopening.Store(s.failure.Load()) // openDB clears the failure
	ng, err := s.openDB(readOnly)
	if err != nil {
		s.reopening.Store(nil) // the store gives up: no longer a full disk's refusal
		s.die(fmt.Errorf("reopen: %w", err))
		return
	}
	s.mu.Lock()
	s.mu.gen = ng
	s.reopening.Store(nil)
	s.mu.Unlock()
	s.log.Info("reopened the database", "after_failure", failed, "read_only", readOnly)
	if note != nil {
		s.full.Store(true)
		s.log.Error("the data directory's disk is full: serving reads, refusing writes until space returns", note...)
	}
}

// restore puts back a generation that reopen took out but did not close.
func (s *Store) restore(g *generation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g.drained = nil
	s.mu.gen = g
}

var _ io.Closer = (*Store)(nil)
