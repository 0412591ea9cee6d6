package store

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func openMem(t *testing.T, fs vfs.FS) *Store {
	t.Helper()
	s, err := Open(Options{Dir: "db", FS: fs, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBatchAtomicAndDurable(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	b := s.NewBatch()
	b.Set(mk("a"), []byte("1"))
	b.Set(mk("b"), []byte("2"))
	b.DeleteSpan(Span{Lower: []byte{0x02}, Upper: []byte{0x03}})
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	discarded := s.NewBatch()
	discarded.Set(mk("c"), []byte("3"))
	discarded.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMem(t, fs)
	defer s.Close()
	for k, want := range map[string]string{"a": "1", "b": "2"} {
		got, err := s.Get(mk(k))
		if err != nil || string(got) != want {
			t.Errorf("Get(%s) after reopen = %q, %v, want %q", k, got, err, want)
		}
	}
	if _, err := s.Get(mk("c")); err != ErrNotFound {
		t.Errorf("Get(c) of a discarded batch = %v, want ErrNotFound", err)
	}
}

// TestBatchCloseAfterCommit: Close after Commit must not hand Pebble's
// recycled batch back twice (that corrupted concurrent commits).
func TestBatchCloseAfterCommit(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				b := s.NewBatch()
				b.Set(mk((fmt.Sprint(g, "/", i))), []byte("v"))
				if err := b.Commit(); err != nil {
					t.Error(err)
				}
				b.Close()
			}
		})
	}
	wg.Wait()
	// Deterministically: a committed batch no longer holds Pebble's batch, so
	// Close cannot release it twice.
	b := s.NewBatch()
	b.Set(mk("x"), nil)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if b.b != nil {
		t.Fatal("a committed Batch still holds Pebble's batch; Close would release it twice")
	}
	b.Close()
	n := 0
	_ = s.Scan(t.Context(), Span{Lower: []byte{0x01}, Upper: []byte{0x02}}, nil, func(_, _ []byte) bool { n++; return true })
	if n != 16*200+1 {
		t.Errorf("found %d keys, want %d", n, 16*200+1)
	}
}

func TestIndexedBatchSeesOwnWrites(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	base := s.NewBatch()
	base.Set(mk("a"), []byte("1"))
	base.Set(mk("b"), []byte("2"))
	if err := base.Commit(); err != nil {
		t.Fatal(err)
	}
	b := s.NewIndexedBatch()
	b.Set(mk("c"), []byte("3"))
	b.Delete(mk("a"))
	if v, err := b.Get(mk("c")); err != nil || string(v) != "3" {
		t.Errorf("batch Get(c) = %q, %v, want its own write", v, err)
	}
	if _, err := b.Get(mk("a")); err != ErrNotFound {
		t.Errorf("batch Get(a) = %v, want ErrNotFound after its delete", err)
	}
	var keys []string
	_ = b.Scan(t.Context(), Span{Lower: []byte{0x01}, Upper: []byte{0x02}}, nil, func(k, _ []byte) bool { keys = append(keys, string(k[1:])); return true })
	if fmt.Sprint(keys) != "[b c]" {
		t.Errorf("batch Scan = %v, want [b c]", keys)
	}
	if _, err := s.Get(mk("c")); err != ErrNotFound {
		t.Errorf("uncommitted write visible outside the batch: %v", err)
	}
	b.Close()
	if v, err := s.Get(mk("a")); err != nil || string(v) != "1" {
		t.Errorf("discarded batch changed the store: %q, %v", v, err)
	}
}

// mk is a key in the 0x01 span the tests use.
func mk(k string) []byte { return append([]byte{0x01}, k...) }

// TestCloseFlushes: a graceful Close flushes the memtables, so the next
// Open has no write-ahead log to replay (and flush) before it is ready.
func TestCloseFlushes(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	for i := range 100 {
		b := s.NewBatch()
		b.Set(mk(fmt.Sprint(i)), []byte("v"))
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMem(t, fs)
	defer s.Close()
	g, err := s.acquire(false)
	if err != nil {
		t.Fatal(err)
	}
	m := g.db.Metrics()
	s.release(g)
	if n := m.Levels[0].TablesFlushed; n != 0 {
		t.Errorf("Open flushed %d tables replayed from the log; a graceful Close should have left none", n)
	}
	if got, err := s.Get(mk("99")); err != nil || string(got) != "v" {
		t.Errorf("Get(99) after reopen = %q, %v", got, err)
	}
}

// TestPointReadsUseFilters: a point read of a key a table does not hold
// is answered by the table's bloom filter, not by reading its data block.
func TestPointReadsUseFilters(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	b := s.NewBatch()
	for i := range 1000 {
		b.Set(mk(fmt.Sprintf("k%04d", 2*i)), []byte("v"))
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	g, err := s.acquire(false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.release(g)
	if err := g.db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if _, err := s.Get(mk(fmt.Sprintf("k%04d", 2*i+1))); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get of an absent key: %v, want ErrNotFound", err)
		}
	}
	if m := g.db.Metrics().Filter; m.Hits < 900 {
		t.Errorf("filter hits %d for 1,000 reads of absent keys (misses %d), want most", m.Hits, m.Misses)
	}
}

// TestRelaxedSyncsInBackground: a store without Sync syncs its log within
// RelaxedSyncInterval of a commit, so a crash keeps a write made before an
// idle moment. (Pebble keeps an unsynced batch in its log's block in
// memory until the block fills or a sync asks: without the background
// sync, a bug hunt's kill -9 lost a database, a container and ten items
// written a minute before.) The crash here is a power loss (only synced
// data survives), stricter than a process's.
func TestRelaxedSyncsInBackground(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open(Options{Dir: "db", FS: fs, RelaxedSyncInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	b.Set(mk("a"), []byte("1"))
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		crashed := openMem(t, fs.CrashClone(vfs.CrashCloneCfg{}))
		got, err := crashed.Get(mk("a"))
		crashed.Close()
		if err == nil && string(got) == "1" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a crash 10 s after the commit: Get(a) = %q, %v: the log was never synced", got, err)
		}
	}
}

// TestLockError: a lock another process holds (EAGAIN or EACCES from
// fcntl) is ErrInUse; a LOCK file the server cannot create (EACCES from
// open: the directory is not writable) is a permission error naming the
// directory, not ErrInUse (an operator hunt was told a root-owned directory
// was in use).
func TestLockError(t *testing.T) {
	for _, err := range []error{syscall.EAGAIN, syscall.EACCES} {
		if got := lockError("/d", err); !errors.Is(got, ErrInUse) {
			t.Errorf("lockError(%v) = %v, want ErrInUse", err, got)
		}
	}
	denied := &fs.PathError{Op: "open", Path: "/d/LOCK", Err: syscall.EACCES}
	got := lockError("/d", denied)
	if errors.Is(got, ErrInUse) || !errors.Is(got, fs.ErrPermission) || !strings.Contains(got.Error(), "cannot write the data directory") {
		t.Errorf("lockError(open: EACCES) = %v, want a permission error saying the directory is not writable", got)
	}
}

// TestOpenRefusesForeignDirectory: a directory holding other files and no
// store is refused, naming them (a store was made among them, with its
// ballast); an empty one, one with only Partita's own entries, and an
// existing store open.
func TestOpenRefusesForeignDirectory(t *testing.T) {
	fs := vfs.NewMem()
	for _, d := range []string{"foreign", "own"} {
		if err := fs.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"foreign/notes.txt", "foreign/photos", "own/LOCK"} {
		f, err := fs.Create(n, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := fs.MkdirAll("own/tls", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: "foreign", FS: fs}); err == nil || !strings.Contains(err.Error(), "notes.txt, photos") {
		t.Errorf("Open of a foreign directory: %v, want an error naming its files", err)
	}
	for _, d := range []string{"own", "new"} {
		s, err := Open(Options{Dir: d, FS: fs})
		if err != nil {
			t.Fatalf("Open(%s): %v", d, err)
		}
		s.Close()
	}
	s, err := Open(Options{Dir: "own", FS: fs}) // a store now
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s.Close()
}
