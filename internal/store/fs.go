package store

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// watchFS is the filesystem Pebble sees: the store's filesystem (wrapped by
// vfs.OnDiskFull, which releases the ballast and retries a write that hit
// ENOSPC once) with two duties added.
//
//   - It counts the bytes Pebble writes, so that the free-space estimate
//     between two statfs calls only errs on the low side (disk.go).
//   - It watches the write-ahead logs. Pebble applies a batch to its
//     memtable and makes it visible before the log write and sync that make
//     it durable have succeeded (commit.go: prepare, apply, publish, then
//     wait for the sync), and treats a failed log write or sync as fatal
//     (db.go applyInternal: Logger.Fatalf). So when a log write or sync
//     fails, the file reports the failure to the store before Pebble learns
//     of it (the store then refuses every request until it has reopened the
//     database, which drops the memtable), and cuts the log back to what
//     was synced, so that no replay (in this process or after a restart)
//     brings back a batch whose commit failed.
type watchFS struct {
	vfs.FS
	s *Store
}

// Unwrap returns the wrapped filesystem.
func (fs *watchFS) Unwrap() vfs.FS { return fs.FS }

func (fs *watchFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	w := &watchFile{File: f, s: fs.s, name: name, epoch: fs.s.epoch.Load()}
	w.log = strings.HasSuffix(name, ".log")
	return w, nil
}

// Create creates a file Pebble will write.
func (fs *watchFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.wrap(name, f, err)
}

// OpenReadWrite opens a file Pebble may write.
func (fs *watchFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	return fs.wrap(name, f, err)
}

// ReuseForWrite reuses (renames) an old write-ahead log for a new one.
func (fs *watchFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(newname, f, err)
}

// watchFile is a file Pebble writes (see watchFS).
type watchFile struct {
	vfs.File
	s     *Store
	name  string
	log   bool   // a write-ahead log
	epoch uint64 // the database generation that created it

	// Pebble writes and syncs a log from its flush goroutine, and syncs it
	// once more from Close: mu orders those with the cut.
	mu      sync.Mutex
	written int64 // bytes written (logs only)
	synced  int64 // bytes durably synced (logs only)
	cut     bool  // the unsynced tail was discarded: never sync it back
}

func (f *watchFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.s.disk.wrote(n)
	if f.log {
		f.mu.Lock()
		f.written += int64(n)
		f.mu.Unlock()
		if err != nil {
			f.fail("write", err)
		}
	}
	return n, err
}

func (f *watchFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.s.disk.wrote(n)
	if f.log && err != nil {
		f.fail("write", err)
	}
	return n, err
}

func (f *watchFile) Sync() error { return f.synced1(f.File.Sync()) }

func (f *watchFile) SyncData() error { return f.synced1(f.File.SyncData()) }

func (f *watchFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if err != nil || full {
		err = f.synced1(err)
	}
	return full, err
}

// synced1 records the outcome of a sync of the whole file.
func (f *watchFile) synced1(err error) error {
	if !f.log {
		return err
	}
	if err != nil {
		f.fail("sync", err)
		return err
	}
	f.mu.Lock()
	if !f.cut {
		f.synced = f.written
	}
	f.mu.Unlock()
	return nil
}

// fail handles a failed write or sync of a log: the store learns of it
// first, then the log loses everything that was not synced. A file of an
// older database generation (being closed after an earlier failure) is
// already discarded.
func (f *watchFile) fail(op string, err error) {
	if f.epoch != f.s.epoch.Load() {
		return
	}
	f.s.fail(fmt.Errorf("%s write-ahead log %s: %w", op, f.name, err))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut {
		return
	}
	f.cut = true
	// In relaxed durability a commit is acknowledged before its log write:
	// keep whatever reached the file. In sync durability a commit is
	// acknowledged only after a sync that covered it, so anything past the
	// last successful sync belongs to commits that are failing now.
	keep := f.synced
	if !f.s.opts.Sync {
		keep = f.written
	}
	if cerr := f.truncate(keep); cerr != nil {
		f.s.log.Error("cannot discard the unsynced tail of a failed write-ahead log: a restart may replay writes that were refused",
			"file", f.name, "keep", keep, "err", cerr)
	}
}

// truncate discards the file's contents from keep on: a truncation for an
// operating-system file (it needs no free space), else zeros over the tail
// (Pebble's log reader stops at a zeroed chunk at the end of the last log).
func (f *watchFile) truncate(keep int64) error {
	if f.File.Fd() != vfs.InvalidFd { // a file of the operating system's filesystem: name is its path
		if err := os.Truncate(f.name, keep); err != nil {
			return err
		}
		return f.File.Sync()
	}
	st, err := f.File.Stat()
	if err != nil {
		return err
	}
	if size := st.Size(); size > keep {
		zeros := make([]byte, min(size-keep, 1<<20))
		for off := keep; off < size; off += int64(len(zeros)) {
			n := min(int64(len(zeros)), size-off)
			if _, err := f.File.WriteAt(zeros[:n], off); err != nil {
				return err
			}
		}
	}
	return f.File.Sync()
}
