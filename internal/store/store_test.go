package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

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

// TestEscapeOrder checks that escaped strings, followed by anything, sort as
// the raw strings do, and decode back.
func TestEscapeOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0x00, 0x01, 0x02, 0xFE, 0xFF}
	gen := func() []byte {
		b := make([]byte, r.IntN(5))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}
	for range 5000 {
		a, b := gen(), gen()
		ea := append(appendEscaped(nil, a), 0x00, 0x00) // trailing data must not change order
		eb := append(appendEscaped(nil, b), 0xFF)
		want := bytes.Compare(a, b)
		got := bytes.Compare(ea, eb)
		if want != 0 && got != want {
			t.Fatalf("order(%x, %x) = %d, want %d", a, b, got, want)
		}
		dec, rest, err := readEscaped(ea)
		if err != nil || !bytes.Equal(dec, a) || !bytes.Equal(rest, []byte{0, 0}) {
			t.Fatalf("readEscaped(%x) = %x, %x, %v, want %x", ea, dec, rest, err, a)
		}
	}
}

func TestItemKeyRoundTrip(t *testing.T) {
	k := ItemKey{Container: 7, EPK: []byte{0x05, 0x00, 0xC1}, PK: []byte{0x08, 'a', 0x00}, ID: "x\x00y"}
	got, err := DecodeItemKey(k.Encode())
	if err != nil || got.Container != 7 || !bytes.Equal(got.EPK, k.EPK) || !bytes.Equal(got.PK, k.PK) || got.ID != k.ID {
		t.Fatalf("DecodeItemKey(Encode(%+v)) = %+v, %v", k, got, err)
	}
	if _, err := DecodeItemKey([]byte{kindItem, 1}); err == nil {
		t.Errorf("DecodeItemKey(short) succeeded")
	}
}

// TestSpans checks that EPK spans select exactly the items whose EPK is in
// range, and that containers and logical partitions do not bleed into each other.
func TestSpans(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	b := s.NewBatch()
	epks := [][]byte{{0x00}, {0x10}, {0x10, 0x00}, {0x1F, 0xFF}, {0x20}, {0x3F, 0xFF}}
	for c := uint64(1); c <= 2; c++ {
		for i, e := range epks {
			for j := range 2 {
				k := ItemKey{Container: c, EPK: e, PK: []byte{byte(i)}, ID: fmt.Sprint(j)}
				b.Set(k.Encode(), []byte(fmt.Sprint(c, i, j)))
			}
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	count := func(span Span) (n int) {
		err := s.Scan(t.Context(), span, nil, func(k, v []byte) bool {
			if _, err := DecodeItemKey(k); err != nil {
				t.Errorf("scan returned undecodable key %x", k)
			}
			n++
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	tests := []struct {
		name string
		span Span
		want int
	}{
		{"container", ContainerSpan(1), 12},
		{"all epks", EPKSpan(1, nil, []byte{0xFF}), 12},
		{"[10, 20)", EPKSpan(1, []byte{0x10}, []byte{0x20}), 6},
		{"[, 10)", EPKSpan(1, nil, []byte{0x10}), 2},
		{"[1000, 1FFF)", EPKSpan(1, []byte{0x10, 0x00}, []byte{0x1F, 0xFF}), 2},
		{"logical", LogicalSpan(2, []byte{0x10, 0x00}, []byte{2}), 2},
	}
	for _, tt := range tests {
		if got := count(tt.span); got != tt.want {
			t.Errorf("%s: scan found %d items, want %d", tt.name, got, tt.want)
		}
	}
	// Resuming after a key skips exactly it and what precedes it.
	var keys [][]byte
	_ = s.Scan(t.Context(), ContainerSpan(1), nil, func(k, _ []byte) bool { keys = append(keys, slices.Clone(k)); return true })
	n := 0
	_ = s.Scan(t.Context(), ContainerSpan(1), keys[4], func(k, _ []byte) bool { n++; return true })
	if n != len(keys)-5 {
		t.Errorf("scan after key #4 found %d, want %d", n, len(keys)-5)
	}
}

func TestBatchAtomicAndDurable(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	b := s.NewBatch()
	b.Set(MetaKey([]byte("a")), []byte("1"))
	b.Set(MetaKey([]byte("b")), []byte("2"))
	b.DeleteSpan(ContainerSpan(3))
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	discarded := s.NewBatch()
	discarded.Set(MetaKey([]byte("c")), []byte("3"))
	discarded.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMem(t, fs)
	defer s.Close()
	for k, want := range map[string]string{"a": "1", "b": "2"} {
		got, err := s.Get(MetaKey([]byte(k)))
		if err != nil || string(got) != want {
			t.Errorf("Get(%s) after reopen = %q, %v, want %q", k, got, err, want)
		}
	}
	if _, err := s.Get(MetaKey([]byte("c"))); err != ErrNotFound {
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
				b.Set(MetaKey([]byte(fmt.Sprint(g, "/", i))), []byte("v"))
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
	b.Set(MetaKey([]byte("x")), nil)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if b.b != nil {
		t.Fatal("a committed Batch still holds Pebble's batch; Close would release it twice")
	}
	b.Close()
	n := 0
	_ = s.Scan(t.Context(), MetaSpan(nil), nil, func(_, _ []byte) bool { n++; return true })
	if n != 16*200+1 {
		t.Errorf("found %d keys, want %d", n, 16*200+1)
	}
}

func TestIndexedBatchSeesOwnWrites(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	base := s.NewBatch()
	base.Set(MetaKey([]byte("a")), []byte("1"))
	base.Set(MetaKey([]byte("b")), []byte("2"))
	if err := base.Commit(); err != nil {
		t.Fatal(err)
	}
	b := s.NewIndexedBatch()
	b.Set(MetaKey([]byte("c")), []byte("3"))
	b.Delete(MetaKey([]byte("a")))
	if v, err := b.Get(MetaKey([]byte("c"))); err != nil || string(v) != "3" {
		t.Errorf("batch Get(c) = %q, %v, want its own write", v, err)
	}
	if _, err := b.Get(MetaKey([]byte("a"))); err != ErrNotFound {
		t.Errorf("batch Get(a) = %v, want ErrNotFound after its delete", err)
	}
	var keys []string
	_ = b.Scan(t.Context(), MetaSpan(nil), nil, func(k, _ []byte) bool { keys = append(keys, string(k[1:])); return true })
	if fmt.Sprint(keys) != "[b c]" {
		t.Errorf("batch Scan = %v, want [b c]", keys)
	}
	if _, err := s.Get(MetaKey([]byte("c"))); err != ErrNotFound {
		t.Errorf("uncommitted write visible outside the batch: %v", err)
	}
	b.Close()
	if v, err := s.Get(MetaKey([]byte("a"))); err != nil || string(v) != "1" {
		t.Errorf("discarded batch changed the store: %q, %v", v, err)
	}
}
