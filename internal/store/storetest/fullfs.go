// Package storetest holds test doubles for package store: FullFS, a
// filesystem of fixed capacity that runs out of space the way a real one
// does, for tests of a full disk at every layer (store, engine, server).
// Import it from tests only.
package storetest

import (
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FullFS wraps a filesystem with a capacity. GetDiskUsage reports the
// capacity less the bytes written through FullFS and the bytes "another
// process" holds (SetFree); a write that does not fit writes what fits and
// fails with ENOSPC, as write(2) does. It can also fail or hold the syncs
// of chosen files. The wrapped filesystem must start empty (its files are
// not counted). FullFS is safe for concurrent use.
type FullFS struct {
	vfs.FS
	mu struct {
		sync.Mutex
		capacity int64
		used     int64            // bytes in files written through FullFS
		other    int64            // bytes held by others
		failSync map[string]error // name suffix → the error of its next sync
		hold     map[string]chan struct{}
	}
}

// NewFullFS returns inner with capacity bytes of space.
func NewFullFS(inner vfs.FS, capacity int64) *FullFS {
	f := &FullFS{FS: inner}
	f.mu.capacity = capacity
	f.mu.failSync = map[string]error{}
	f.mu.hold = map[string]chan struct{}{}
	return f
}

// Unwrap returns the wrapped filesystem.
func (f *FullFS) Unwrap() vfs.FS { return f.FS }

// Free returns the bytes free.
func (f *FullFS) Free() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.freeLocked()
}

func (f *FullFS) freeLocked() int64 { return max(f.mu.capacity-f.mu.used-f.mu.other, 0) }

// SetFree makes another process take or give back space so that n bytes
// are free (as far as the files' own bytes allow).
func (f *FullFS) SetFree(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.other = max(f.mu.capacity-f.mu.used-n, 0)
}

// FailNextSync makes the next sync of a file whose name ends in suffix
// fail with err, without syncing anything.
func (f *FullFS) FailNextSync(suffix string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.failSync[suffix] = err
}

// HoldSyncs makes every sync of a file whose name ends in suffix wait until
// the returned function is called: a disk that stopped answering.
func (f *FullFS) HoldSyncs(suffix string) (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.mu.hold[suffix] = ch
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.mu.hold, suffix)
			f.mu.Unlock()
			close(ch)
		})
	}
}

// GetDiskUsage reports the capacity and what is free of it.
func (f *FullFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	free := f.freeLocked()
	return vfs.DiskUsage{AvailBytes: uint64(free), TotalBytes: uint64(f.mu.capacity), UsedBytes: uint64(f.mu.capacity - free)}, nil
}

func (f *FullFS) size(name string) int64 {
	if st, err := f.FS.Stat(name); err == nil && !st.IsDir() {
		return st.Size()
	}
	return 0
}

// Create creates name (replacing a file of that name, whose bytes are freed).
func (f *FullFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f.mu.Lock()
	f.mu.used -= f.size(name)
	f.mu.Unlock()
	file, err := f.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: file, fs: f, name: name}, nil
}

// OpenReadWrite opens name for writing.
func (f *FullFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: file, fs: f, name: name}, nil
}

// ReuseForWrite renames oldname to newname and opens it for writing.
func (f *FullFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f.mu.Lock()
	if oldname != newname {
		f.mu.used -= f.size(newname)
	}
	f.mu.Unlock()
	file, err := f.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: file, fs: f, name: newname}, nil
}

// Remove removes name and frees its bytes.
func (f *FullFS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.size(name)
	if err := f.FS.Remove(name); err != nil {
		return err
	}
	f.mu.used -= n
	return nil
}

// Rename renames oldname, freeing the bytes of a file it replaces.
func (f *FullFS) Rename(oldname, newname string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.size(newname)
	if err := f.FS.Rename(oldname, newname); err != nil {
		return err
	}
	if oldname != newname {
		f.mu.used -= n
	}
	return nil
}

// fullFile is a file of a FullFS.
type fullFile struct {
	vfs.File
	fs   *FullFS
	name string
	pos  int64 // where Write writes
}

func (w *fullFile) enospc(op string) error {
	return &os.PathError{Op: op, Path: w.name, Err: syscall.ENOSPC}
}

// fit returns how many of n bytes written at off fit, and by how much they
// grow the file. f.fs.mu must be held.
func (w *fullFile) fit(off int64, n int) (int, int64) {
	st, err := w.File.Stat()
	size := int64(0)
	if err == nil {
		size = st.Size()
	}
	room := w.fs.freeLocked()
	fits := int64(n)
	if off+fits-size > room {
		fits = max(size+room-off, 0)
	}
	return int(fits), max(off+fits-size, 0)
}

func (w *fullFile) Write(p []byte) (int, error) {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	fits, grow := w.fit(w.pos, len(p))
	n, err := w.File.Write(p[:fits])
	w.pos += int64(n)
	if n == fits {
		w.fs.mu.used += grow
	}
	if err == nil && fits < len(p) {
		err = w.enospc("write")
	}
	return n, err
}

func (w *fullFile) WriteAt(p []byte, off int64) (int, error) {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	fits, grow := w.fit(off, len(p))
	n, err := w.File.WriteAt(p[:fits], off)
	if n == fits {
		w.fs.mu.used += grow
	}
	if err == nil && fits < len(p) {
		err = w.enospc("write")
	}
	return n, err
}

// syncHook applies FailNextSync and HoldSyncs to a sync of w.
func (w *fullFile) syncHook() error {
	w.fs.mu.Lock()
	var hold chan struct{}
	for suffix, ch := range w.fs.mu.hold {
		if strings.HasSuffix(w.name, suffix) {
			hold = ch
		}
	}
	var err error
	for suffix, e := range w.fs.mu.failSync {
		if strings.HasSuffix(w.name, suffix) {
			err = &os.PathError{Op: "sync", Path: w.name, Err: e}
			delete(w.fs.mu.failSync, suffix)
		}
	}
	w.fs.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return err
}

func (w *fullFile) Sync() error {
	if err := w.syncHook(); err != nil {
		return err
	}
	return w.File.Sync()
}

func (w *fullFile) SyncData() error {
	if err := w.syncHook(); err != nil {
		return err
	}
	return w.File.SyncData()
}
