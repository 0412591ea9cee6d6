package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// collect drains it and returns its keys and values as "k=v" strings.
func collect(t *testing.T, it *Iter) []string {
	t.Helper()
	var got []string
	for it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterator: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("iterator Close: %v", err)
	}
	return got
}

// putKV commits key=value pairs (raw keys).
func putKV(t *testing.T, s *Store, kv ...string) {
	t.Helper()
	b := s.NewBatch()
	for i := 0; i < len(kv); i += 2 {
		b.Set([]byte(kv[i]), []byte(kv[i+1]))
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestIterOrderAndBounds(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	putKV(t, s, "a", "1", "b", "2", "c", "3", "d", "4")
	tests := []struct {
		span    Span
		reverse bool
		want    []string
	}{
		{Span{}, false, []string{"a=1", "b=2", "c=3", "d=4"}},
		{Span{}, true, []string{"d=4", "c=3", "b=2", "a=1"}},
		{Span{Lower: []byte("b"), Upper: []byte("d")}, false, []string{"b=2", "c=3"}},
		{Span{Lower: []byte("b"), Upper: []byte("d")}, true, []string{"c=3", "b=2"}},
		{Span{Lower: []byte("b")}, true, []string{"d=4", "c=3", "b=2"}},
		{Span{Lower: []byte("bb"), Upper: []byte("c")}, false, nil},
		{Span{Lower: []byte("bb"), Upper: []byte("c")}, true, nil},
	}
	for _, tt := range tests {
		if got := collect(t, s.NewIter(tt.span, tt.reverse)); !slices.Equal(got, tt.want) {
			t.Errorf("NewIter([%q, %q), reverse=%v) = %q, want %q", tt.span.Lower, tt.span.Upper, tt.reverse, got, tt.want)
		}
	}
}

// TestIterBoundsCopied: the caller may reuse its bound slices while the
// iterator is open.
func TestIterBoundsCopied(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	putKV(t, s, "a", "1", "b", "2", "c", "3")
	lo, hi := []byte("b"), []byte("c")
	it := s.NewIter(Span{Lower: lo, Upper: hi}, false)
	lo[0], hi[0] = 'a', 'z'
	if got := collect(t, it); !slices.Equal(got, []string{"b=2"}) {
		t.Errorf("iterator after its bounds were overwritten = %q, want [b=2]", got)
	}
}

func TestSnapshotIsolation(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	putKV(t, s, "a", "1", "b", "2")
	sn, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	putKV(t, s, "a", "changed", "c", "3")
	del := s.NewBatch()
	del.Delete([]byte("b"))
	if err := del.Commit(); err != nil {
		t.Fatal(err)
	}

	if v, err := sn.Get([]byte("a")); err != nil || string(v) != "1" {
		t.Errorf("snapshot Get(a) = %q, %v, want 1", v, err)
	}
	if v, err := sn.Get([]byte("b")); err != nil || string(v) != "2" {
		t.Errorf("snapshot Get(b) = %q, %v, want 2 (deleted after the snapshot)", v, err)
	}
	if _, err := sn.Get([]byte("c")); !errors.Is(err, ErrNotFound) {
		t.Errorf("snapshot Get(c) = %v, want ErrNotFound (written after the snapshot)", err)
	}
	want := []string{"a=1", "b=2"}
	if got := collect(t, sn.NewIter(Span{}, false)); !slices.Equal(got, want) {
		t.Errorf("snapshot iterator = %q, want %q", got, want)
	}
	if got := collect(t, sn.NewIter(Span{}, true)); !slices.Equal(got, []string{"b=2", "a=1"}) {
		t.Errorf("snapshot reverse iterator = %q, want [b=2 a=1]", got)
	}
	if v, err := s.Get([]byte("c")); err != nil || string(v) != "3" {
		t.Errorf("store Get(c) = %q, %v, want 3", v, err)
	}
	if got := collect(t, s.NewIter(Span{}, false)); !slices.Equal(got, []string{"a=changed", "c=3"}) {
		t.Errorf("store iterator = %q, want [a=changed c=3]", got)
	}
}

// TestSnapshotIterOutlivesSnapshot: a snapshot's iterator holds the
// database on its own, and a closed snapshot refuses reads.
func TestSnapshotIterOutlivesSnapshot(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	putKV(t, s, "a", "1", "b", "2")
	sn, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	it := sn.NewIter(Span{}, false)
	sn.Close()
	sn.Close() // idempotent
	if got := collect(t, it); !slices.Equal(got, []string{"a=1", "b=2"}) {
		t.Errorf("iterator after its snapshot closed = %q, want [a=1 b=2]", got)
	}
	if _, err := sn.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get on a closed snapshot = %v, want ErrClosed", err)
	}
	it = sn.NewIter(Span{}, false)
	if it.Next() || !errors.Is(it.Err(), ErrClosed) {
		t.Errorf("iterator of a closed snapshot: Err = %v, want ErrClosed and no keys", it.Err())
	}
	if err := it.Close(); err != nil {
		t.Errorf("Close of a refused iterator = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("store Close after every iterator and snapshot closed: %v", err)
	}
}

func TestBatchIterSeesOwnWrites(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	putKV(t, s, "a", "1", "b", "2", "c", "3")
	b := s.NewIndexedBatch()
	defer b.Close()
	b.Set([]byte("bb"), []byte("new"))
	b.Set([]byte("c"), []byte("changed"))
	b.Delete([]byte("a"))
	want := []string{"b=2", "bb=new", "c=changed"}
	if got := collect(t, b.NewIter(Span{}, false)); !slices.Equal(got, want) {
		t.Errorf("batch iterator = %q, want %q", got, want)
	}
	slices.Reverse(want)
	if got := collect(t, b.NewIter(Span{}, true)); !slices.Equal(got, want) {
		t.Errorf("batch reverse iterator = %q, want %q", got, want)
	}
	if got := collect(t, b.NewIter(Span{Lower: []byte("b"), Upper: []byte("c")}, false)); !slices.Equal(got, []string{"b=2", "bb=new"}) {
		t.Errorf("batch iterator over [b, c) = %q, want [b=2 bb=new]", got)
	}
	if got := collect(t, s.NewIter(Span{}, false)); !slices.Equal(got, []string{"a=1", "b=2", "c=3"}) {
		t.Errorf("store iterator sees uncommitted writes: %q", got)
	}
	// The batch's iterators took no reference of their own: committing it
	// releases the database.
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, s.NewIter(Span{}, false)); !slices.Equal(got, []string{"b=2", "bb=new", "c=changed"}) {
		t.Errorf("store iterator after commit = %q", got)
	}
}

func TestBatchIterRefused(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	plain := s.NewBatch()
	defer plain.Close()
	it := plain.NewIter(Span{}, false)
	if it.Next() || it.Err() == nil {
		t.Errorf("iterator of a non-indexed batch: Err = %v, want an error", it.Err())
	}
	_ = it.Close()

	b := s.NewIndexedBatch()
	b.Set([]byte("a"), nil)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	it = b.NewIter(Span{}, false)
	if it.Next() || it.Err() == nil {
		t.Errorf("iterator of a committed batch: Err = %v, want an error", it.Err())
	}
	_ = it.Close()
}

func TestIterCloseTwice(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	putKV(t, s, "a", "1")
	it := s.NewIter(Span{}, false)
	if !it.Next() {
		t.Fatalf("Next = false, want a key (Err %v)", it.Err())
	}
	for n := range 2 {
		if err := it.Close(); err != nil {
			t.Errorf("Close #%d = %v", n+1, err)
		}
	}
	if it.Next() || it.Key() != nil || it.Value() != nil || it.Err() != nil {
		t.Errorf("a closed iterator still reads: Key %q, Err %v", it.Key(), it.Err())
	}
	if err := s.Close(); err != nil {
		t.Fatalf("store Close: %v", err)
	}
}

func TestIterOnClosedStore(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	it := s.NewIter(Span{}, false)
	if it.Next() || !errors.Is(it.Err(), ErrClosed) {
		t.Errorf("iterator of a closed store: Err = %v, want ErrClosed", it.Err())
	}
	if err := it.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if _, err := s.NewSnapshot(); !errors.Is(err, ErrClosed) {
		t.Errorf("NewSnapshot of a closed store = %v, want ErrClosed", err)
	}
}

// TestIterRefsBalanced checks the generation's reference count after
// iterators and snapshots of every kind are closed, twice.
func TestIterRefsBalanced(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	putKV(t, s, "a", "1")
	refs := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.mu.gen.refs
	}
	sn, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewIndexedBatch()
	var its []*Iter
	for i := range 3 {
		its = append(its, s.NewIter(Span{}, i%2 == 0), sn.NewIter(Span{}, i%2 == 1), b.NewIter(Span{}, false))
	}
	// One for the snapshot, one for the batch, one per store and snapshot
	// iterator.
	if got, want := refs(), 2+6; got != want {
		t.Errorf("references with everything open = %d, want %d", got, want)
	}
	for _, it := range its {
		_ = it.Close()
		_ = it.Close()
	}
	sn.Close()
	sn.Close()
	b.Close()
	b.Close()
	if got := refs(); got != 0 {
		t.Errorf("references after everything closed = %d, want 0", got)
	}
}

// TestIterStopsAfterFailure: once the store failed, an iterator stops at
// its next key and reports the refusal.
func TestIterStopsAfterFailure(t *testing.T) {
	// No tick during the test: the monitor would reopen the database.
	s, err := Open(Options{Dir: "db", FS: vfs.NewMem(), DiskCheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	putKV(t, s, "a", "1", "b", "2")
	it := s.NewIter(Span{}, false)
	sn, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !it.Next() {
		t.Fatalf("Next = false, want a key (Err %v)", it.Err())
	}
	// Fail the store as a failed log write does, without waking the
	// monitor.
	cause := fmt.Errorf("injected log write failure")
	s.failure.Store(&cause)
	if it.Next() {
		t.Error("Next after the store failed = true, want false")
	}
	if err := it.Err(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Err after the store failed = %v, want ErrUnavailable", err)
	}
	if _, err := sn.Get([]byte("a")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("snapshot Get after the store failed = %v, want ErrUnavailable", err)
	}
	_ = it.Close()
	sn.Close()
	s.failure.Store(nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
