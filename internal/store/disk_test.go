package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partitadb/partita/internal/store/storetest"
)

const (
	testFloor   = 4 << 20
	testBallast = 8 << 20
)

// logBuf collects a store's log lines.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// loud returns the lines at warning level or above.
func (l *logBuf) loud() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			out = append(out, line)
		}
	}
	return out
}

// openFull opens a store with a floor on fs; ballast is its size (0: none).
// The monitor's ticker never fires during a test: tests call tick.
func openFull(t *testing.T, fs vfs.FS, ballast int64, log *logBuf) *Store {
	t.Helper()
	return openFullIn(t, "db", fs, ballast, log)
}

// openFullIn is openFull with the store in dir.
func openFullIn(t *testing.T, dir string, fs vfs.FS, ballast int64, log *logBuf) *Store {
	t.Helper()
	opts := Options{Dir: dir, FS: fs, Sync: true, MinFreeBytes: testFloor, BallastBytes: ballast,
		DiskCheckInterval: time.Hour, CloseTimeout: 5 * time.Second}
	if log != nil {
		opts.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.tick() // the ballast exists from here if it fits
	return s
}

func put(s *Store, key string, n int) error {
	b := s.NewBatch()
	defer b.Close()
	b.Set([]byte(key), bytes.Repeat([]byte{'v'}, n))
	return b.Commit()
}

func diskFull(err error) (*DiskFullError, bool) { return errors.AsType[*DiskFullError](err) }

// TestFloorRefusesWrites: writes that would leave less than the floor free
// are refused at once, write nothing and never show; reads go on; writes
// resume by themselves when space returns.
func TestFloorRefusesWrites(t *testing.T) {
	fs := storetest.NewFullFS(vfs.NewMem(), 64<<20)
	s := openFull(t, fs, 0, nil)
	defer s.Close()
	if err := put(s, "a", 1000); err != nil {
		t.Fatal(err)
	}
	fs.SetFree(testFloor + 200<<10)
	s.tick()
	var refused []string
	for i := range 10 {
		key := fmt.Sprint("k", i)
		before := fs.Free()
		err := put(s, key, 64<<10)
		if err == nil {
			continue
		}
		e, ok := diskFull(err)
		if !ok {
			t.Fatalf("put %s: %v, want a *DiskFullError", key, err)
		}
		if e.ResumeAt != testFloor || e.Free >= testFloor+64<<10 || errors.Is(err, ErrUnavailable) {
			t.Errorf("put %s: %+v, want free under floor+64 KiB, resume at %d, no failure", key, e, testFloor)
		}
		if fs.Free() != before {
			t.Errorf("refused put %s wrote %d bytes", key, before-fs.Free())
		}
		refused = append(refused, key)
	}
	if len(refused) < 5 {
		t.Fatalf("%d of 10 writes refused, want most of them", len(refused))
	}
	for _, k := range refused {
		if _, err := s.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Errorf("refused write %s: Get = %v, want ErrNotFound", k, err)
		}
	}
	if v, err := s.Get([]byte("a")); err != nil || len(v) != 1000 {
		t.Errorf("read on a full disk: %d bytes, %v", len(v), err)
	}
	fs.SetFree(32 << 20)
	s.tick()
	if err := put(s, refused[0], 64<<10); err != nil {
		t.Errorf("write after space returned: %v", err)
	}
}

// TestBallastSavesAWrite: another process fills the disk behind the
// store's back; the log write that meets ENOSPC releases the ballast and
// succeeds, and later writes are refused by the floor.
func TestBallastSavesAWrite(t *testing.T) {
	fs := storetest.NewFullFS(vfs.NewMem(), 64<<20)
	s := openFull(t, fs, testBallast, nil)
	defer s.Close()
	if !s.ballast.present() {
		t.Fatal("no ballast after a tick with room for it")
	}
	fs.SetFree(0) // the store's view is an hour stale
	if err := put(s, "saved", 1000); err != nil {
		t.Fatalf("write that met ENOSPC with a ballast: %v", err)
	}
	if s.ballast.present() {
		t.Error("the ballast is still there after ENOSPC")
	}
	if v, err := s.Get([]byte("saved")); err != nil || len(v) != 1000 {
		t.Errorf("the saved write reads %d bytes, %v", len(v), err)
	}
	// Writes wait for the ballast to be back (the floor plus the ballast).
	if err := put(s, "next", 1000); err == nil {
		t.Error("a write after the ballast was released was accepted")
	} else if e, ok := diskFull(err); !ok || errors.Is(err, ErrUnavailable) || e.ResumeAt != testFloor+testBallast {
		t.Errorf("write after the ballast was released: %v, want a plain *DiskFullError resuming at the floor plus the ballast", err)
	}
	// Space returns: writes resume, and the ballast is made again.
	fs.SetFree(40 << 20)
	s.tick()
	if err := put(s, "next", 1000); err != nil {
		t.Errorf("write after space returned: %v", err)
	}
	if !s.ballast.present() {
		t.Error("the ballast was not made again")
	}
	// Free space under half the floor releases it too.
	fs.SetFree(testFloor / 4)
	s.tick()
	if s.ballast.present() {
		t.Error("the ballast is still there with a quarter of the floor free")
	}
}

// TestBallastOwedAcrossRestart: a ballast released before a restart is
// still owed after it: writes wait for the floor plus the ballast, and it
// is made again once both fit. A store that never had room to make one
// owes none. Before, the restarted store forgot the debt and took writes
// down to the floor, with no reserve left for the next time.
func TestBallastOwedAcrossRestart(t *testing.T) {
	fs := storetest.NewFullFS(vfs.NewMem(), 64<<20)
	s := openFull(t, fs, testBallast, nil)
	if !s.ballast.present() {
		t.Fatal("no ballast after a tick with room for it")
	}
	fs.SetFree(0)
	if err := put(s, "saved", 1000); err != nil {
		t.Fatalf("write that met ENOSPC with a ballast: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Room for the floor and more, not for the ballast too.
	fs.SetFree(testFloor + testBallast/2)
	s = openFull(t, fs, testBallast, nil)
	if err := put(s, "next", 1000); err == nil {
		t.Fatal("after a restart, a write was accepted while the released ballast is not made again")
	} else if e, ok := diskFull(err); !ok || e.ResumeAt != testFloor+testBallast {
		t.Fatalf("after a restart: %v, want a *DiskFullError resuming at the floor plus the ballast", err)
	}
	fs.SetFree(40 << 20)
	s.tick()
	if !s.ballast.present() {
		t.Fatal("the ballast was not made again after the restart")
	}
	if err := put(s, "next", 1000); err != nil {
		t.Fatalf("write once the ballast is back: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Never made (no room for it): nothing owed at the next open.
	fs2 := storetest.NewFullFS(vfs.NewMem(), 64<<20)
	fs2.SetFree(testFloor + testBallast/2)
	s = openFull(t, fs2, testBallast, nil)
	if s.ballast.present() {
		t.Fatal("a ballast was made without room for it")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openFull(t, fs2, testBallast, nil)
	defer s.Close()
	if err := put(s, "k", 1000); err != nil {
		t.Fatalf("a store that never made its ballast refused a write above the floor: %v", err)
	}
}

// TestBallastRemovedByHand: an operator deletes the ballast file to free
// space on a full disk, and the disk fills again. The writes that meet
// ENOSPC then are refused as on a disk with no ballast, each without an
// error about the missing file, and writes resume once the floor and the
// ballast fit again, which is made again. Before, every attempt to release
// it failed on the missing file and logged it (a bug hunt: 175,553 errors
// in 90 s).
func TestBallastRemovedByHand(t *testing.T) {
	fs := storetest.NewFullFS(vfs.NewMem(), 64<<20)
	log := &logBuf{}
	s := openFull(t, fs, testBallast, log)
	defer s.Close()
	if !s.ballast.present() {
		t.Fatal("no ballast after a tick with room for it")
	}
	if err := fs.Remove(s.ballast.path); err != nil {
		t.Fatal(err)
	}
	fs.SetFree(0)
	for i := range 20 {
		err := put(s, fmt.Sprintf("k%d", i), 1000)
		if _, ok := diskFull(err); !ok {
			t.Fatalf("write %d on a full disk whose ballast was removed: %v, want a *DiskFullError", i, err)
		}
	}
	for _, l := range log.loud() {
		if strings.Contains(l, "cannot be released") || strings.Contains(l, "cannot release") {
			t.Errorf("logged: %s", l)
		}
	}
	fs.SetFree(40 << 20)
	s.tick()
	if err := put(s, "next", 1000); err != nil {
		t.Errorf("write after space returned: %v", err)
	}
	if !s.ballast.present() {
		t.Error("the ballast was not made again")
	}
}

// gateFS holds Pebble's open of a MANIFEST, once armed, until let go:
// a reopen waits there, inside its open of the next database.
type gateFS struct {
	vfs.FS
	armed   chan struct{} // closed to arm
	entered chan struct{} // closed when an open waits at the gate
	open    chan struct{} // closed to let it go
	once    sync.Once
}

func newGateFS(fs vfs.FS) *gateFS {
	return &gateFS{FS: fs, armed: make(chan struct{}), entered: make(chan struct{}), open: make(chan struct{})}
}

func (g *gateFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	select {
	case <-g.armed:
		if strings.HasPrefix(g.PathBase(name), "MANIFEST-") {
			g.once.Do(func() { close(g.entered) })
			<-g.open
		}
	default:
	}
	return g.FS.Open(name, opts...)
}

// TestDiskFullWhileReopening: a write that meets ENOSPC in the log fails
// the database, and the monitor reopens it. Writes that come while the
// reopen is under way are refused as the full disk's (*DiskFullError), as
// before and after it. Before, they got a bare ErrUnavailable while the
// next database opened (CI, TestBallastRemovedByHand on a loaded machine).
func TestDiskFullWhileReopening(t *testing.T) {
	full := storetest.NewFullFS(vfs.NewMem(), 64<<20)
	fs := newGateFS(full)
	s := openFull(t, fs, 0, nil)
	defer s.Close()
	letGo := sync.OnceFunc(func() { close(fs.open) })
	defer letGo()   // before Close, which waits for the reopen
	full.SetFree(0) // the store's estimate is not read again: the next write meets ENOSPC
	close(fs.armed)
	err := put(s, "a", 1000)
	if e, ok := diskFull(err); !ok || !errors.Is(err, ErrUnavailable) || !isENOSPC(e.Err) {
		t.Fatalf("write meeting ENOSPC: %v, want a *DiskFullError with the failed log write", err)
	}
	select {
	case <-fs.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the monitor did not reopen the database after the failed write")
	}
	for i := range 3 {
		if err := put(s, fmt.Sprint("b", i), 1000); err == nil {
			t.Fatal("a write was accepted while the database reopens")
		} else if _, ok := diskFull(err); !ok {
			t.Fatalf("write %d while the database reopens: %v, want a *DiskFullError", i, err)
		}
	}
	letGo()
	full.SetFree(40 << 20)
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := put(s, "c", 1000)
		if err == nil {
			break
		}
		if _, ok := diskFull(err); !ok || time.Now().After(deadline) {
			t.Fatalf("write after the reopen, with room: %v", err)
		}
		s.tick()
		time.Sleep(10 * time.Millisecond)
	}
	for _, k := range []string{"a", "b0"} {
		if _, err := s.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Errorf("refused write %s: Get = %v, want ErrNotFound", k, err)
		}
	}
}

// TestFailedLogWriteIsNeverVisible: with no ballast left, a log write meets
// ENOSPC (partly written) or a log sync fails. The commit is refused, every
// request is refused until the database is reopened, and the write never
// shows: not after the in-process reopen, not after a restart.
func TestFailedLogWriteIsNeverVisible(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  func(fs *storetest.FullFS)
		enospc bool
		os     bool // on the operating system's filesystem (the log is truncated, not zeroed)
	}{
		{"write ENOSPC", func(fs *storetest.FullFS) { fs.SetFree(100) }, true, false},
		{"sync ENOSPC", func(fs *storetest.FullFS) { fs.FailNextSync(".log", syscall.ENOSPC) }, true, false},
		{"sync EIO", func(fs *storetest.FullFS) { fs.FailNextSync(".log", syscall.EIO) }, false, false},
		{"sync EIO on disk", func(fs *storetest.FullFS) { fs.FailNextSync(".log", syscall.EIO) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inner vfs.FS = vfs.NewMem()
			dir := "db"
			if tc.os {
				inner, dir = vfs.Default, t.TempDir()
			}
			fs := storetest.NewFullFS(inner, 256<<20)
			s := openFullIn(t, dir, fs, 0, nil)
			if err := put(s, "acked", 1000); err != nil {
				t.Fatal(err)
			}
			tc.fault(fs)
			err := put(s, "lost", 1000)
			if err == nil || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("commit after a failed log write: %v, want ErrUnavailable", err)
			}
			if _, ok := diskFull(err); ok != tc.enospc {
				t.Errorf("commit after a failed log write: %v; a *DiskFullError: %v, want %v", err, ok, tc.enospc)
			}
			// The monitor, nudged by the failure, may have reopened the
			// database already (read-only when the disk is full): until
			// then every request is refused. Never is the failed write
			// read.
			if v, err := s.Get([]byte("acked")); !errors.Is(err, ErrUnavailable) && (err != nil || len(v) != 1000) {
				t.Errorf("Get(acked) after the failure: %d bytes, %v; want ErrUnavailable or the value", len(v), err)
			}
			if _, err := s.Get([]byte("lost")); !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrNotFound) {
				t.Errorf("Get(lost) after the failure: %v, want ErrUnavailable or ErrNotFound", err)
			}
			fs.SetFree(32 << 20)
			s.tick() // reopens (read-write) if the monitor has not
			check := func(when string) {
				t.Helper()
				if v, err := s.Get([]byte("acked")); err != nil || len(v) != 1000 {
					t.Errorf("%s: acknowledged write reads %d bytes, %v", when, len(v), err)
				}
				if _, err := s.Get([]byte("lost")); !errors.Is(err, ErrNotFound) {
					t.Errorf("%s: the failed write: Get = %v, want ErrNotFound", when, err)
				}
			}
			check("after the reopen")
			if err := put(s, "after", 10); err != nil {
				t.Errorf("write after the reopen: %v", err)
			}
			select {
			case <-s.Done():
				t.Errorf("the store gave up: %v", s.Err())
			default:
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openFullIn(t, dir, fs, 0, nil)
			defer s.Close()
			check("after a restart")
		})
	}
}

// TestCloseOnFullDisk: Close returns, within its bound, on a full disk and
// on a disk that stopped answering (the database is then left open).
func TestCloseOnFullDisk(t *testing.T) {
	t.Run("full", func(t *testing.T) {
		fs := storetest.NewFullFS(vfs.NewMem(), 64<<20)
		s := openFull(t, fs, 0, nil)
		for i := range 20 {
			if err := put(s, fmt.Sprint(i), 1000); err != nil {
				t.Fatal(err)
			}
		}
		fs.SetFree(0)
		if _, ok := diskFull(put(s, "x", 10)); !ok {
			t.Error("write on a full disk was not refused")
		}
		_ = s.Close() // may report the log's end that did not fit
		fs.SetFree(32 << 20)
		s = openFull(t, fs, 0, nil)
		defer s.Close()
		if _, err := s.Get([]byte("19")); err != nil {
			t.Errorf("after Close on a full disk: %v", err)
		}
	})
	t.Run("stuck", func(t *testing.T) {
		fs := storetest.NewFullFS(vfs.NewMem(), 64<<20)
		s, err := Open(Options{Dir: "db", FS: fs, Sync: true, CloseTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		release := fs.HoldSyncs(".log")
		defer release()
		committed := make(chan error, 1) // one send
		go func() { committed <- put(s, "held", 10) }()
		start := time.Now()
		err = s.Close()
		if err == nil {
			t.Error("Close with a commit stuck on the disk returned nil")
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Close took %s with a bound of 200ms", d)
		}
		release()
		if err := <-committed; err != nil {
			t.Logf("the held commit: %v", err)
		}
	})
}

// TestOpenOnFullDisk: a store opened on a full disk serves reads and
// refuses writes, with one log line, and takes writes again once space
// returns: with a ballast it opens read-write (releasing it), without one
// read-only.
func TestOpenOnFullDisk(t *testing.T) {
	for _, ballast := range []int64{testBallast, 0} {
		t.Run(fmt.Sprintf("ballast=%d", ballast), func(t *testing.T) {
			fs := storetest.NewFullFS(vfs.NewMem(), 64<<20)
			s := openFull(t, fs, ballast, nil)
			for i := range 50 {
				if err := put(s, fmt.Sprint(i), 1000); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			fs.SetFree(0)
			var log logBuf
			s = openFull(t, fs, ballast, &log)
			defer s.Close()
			s.mu.Lock()
			readOnly := s.mu.gen.readOnly
			s.mu.Unlock()
			if readOnly != (ballast == 0) {
				t.Errorf("opened read-only: %v, want %v", readOnly, ballast == 0)
			}
			for i := range 50 {
				if v, err := s.Get([]byte(fmt.Sprint(i))); err != nil || len(v) != 1000 {
					t.Fatalf("read %d on a full disk: %d bytes, %v", i, len(v), err)
				}
			}
			if _, ok := diskFull(put(s, "x", 10)); !ok {
				t.Error("write on a full disk was not refused with a *DiskFullError")
			}
			if lines := log.loud(); len(lines) != 1 || !strings.Contains(lines[0], "disk is full") {
				t.Errorf("open on a full disk logged %d warnings or errors, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
			}
			fs.SetFree(32 << 20)
			s.tick()
			if err := put(s, "x", 10); err != nil {
				t.Errorf("write after space returned: %v", err)
			}
			if _, err := s.Get([]byte("49")); err != nil {
				t.Errorf("read after space returned: %v", err)
			}
		})
	}
}

// TestRateLimit: one event per ten seconds goes through, with the count of
// those dropped before it.
func TestRateLimit(t *testing.T) {
	var r rateLimit
	t0 := time.Unix(1000, 0)
	for i, tt := range []struct {
		at      time.Duration
		ok      bool
		dropped int64
	}{{0, true, 0}, {time.Second, false, 0}, {2 * time.Second, false, 0}, {11 * time.Second, true, 2}, {12 * time.Second, false, 0}} {
		if ok, dropped := r.allow(t0.Add(tt.at)); ok != tt.ok || dropped != tt.dropped {
			t.Errorf("event %d at +%s: allow = %v, %d, want %v, %d", i, tt.at, ok, dropped, tt.ok, tt.dropped)
		}
	}
}

// TestBallastThatDoesNotFitIsLogged: a ballast larger than the free space
// above the floor is not made, and the store says so once, however many
// checks follow (nothing was logged: an operator hunt).
func TestBallastThatDoesNotFitIsLogged(t *testing.T) {
	fs := storetest.NewFullFS(vfs.NewMem(), testFloor+testBallast/2)
	var log logBuf
	s := openFull(t, fs, testBallast, &log)
	defer s.Close()
	s.tick()
	s.tick()
	log.mu.Lock()
	out := log.buf.String()
	log.mu.Unlock()
	if n := strings.Count(out, "the ballast is not made"); n != 1 {
		t.Errorf("logged %d times that the ballast is not made, want 1:\n%s", n, out)
	}
	if s.ballast.present() {
		t.Error("a ballast that does not fit was made")
	}
}
