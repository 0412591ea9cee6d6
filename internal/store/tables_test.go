package store

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partitadb/partita/internal/store/storetest"
)

// TestIngestReplacesSpans: tables that delete a span and set keys in it
// replace the span whole, in one step, leaving the rest of the database
// alone; across a crash, all of an ingestion or none of it survives; and a
// table never ingested is gone after a reopen.
func TestIngestReplacesSpans(t *testing.T) {
	mem := vfs.NewCrashableMem()
	s := openMem(t, mem)
	b := s.NewBatch()
	for _, k := range []string{"a1", "a2", "a9", "b1", "c1"} {
		b.Set(mk(k), []byte("old"))
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	table := func(name, prefix string, keys ...string) *Table {
		t.Helper()
		tb, err := s.NewTable(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := tb.DeleteSpan(Span{Lower: mk(prefix), Upper: mk(prefix + "\xff")}); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if err := tb.Set(mk(k), []byte("new")); err != nil {
				t.Fatal(err)
			}
		}
		if err := tb.Finish(); err != nil {
			t.Fatal(err)
		}
		return tb
	}
	ta := table("a.sst", "a", "a2", "a3")
	tb := table("b.sst", "b")
	// Out of order keys are refused.
	bad, err := s.NewTable("bad.sst")
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Set(mk("z"), nil); err != nil {
		t.Fatal(err)
	}
	if err := bad.Set(mk("y"), nil); err == nil {
		t.Error("a table took a key below the one before it")
	}
	bad.Abort()
	left := table("left.sst", "c", "c2") // never ingested
	before := mem.CrashClone(vfs.CrashCloneCfg{})
	if err := s.Ingest(context.Background(), []string{ta.Path(), tb.Path()}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a2": "new", "a3": "new", "c1": "old"}
	check := func(s *Store, want map[string]string) {
		t.Helper()
		got := map[string]string{}
		if err := s.Scan(context.Background(), Span{Lower: []byte{0x01}, Upper: []byte{0x02}}, nil, func(k, v []byte) bool {
			got[string(k[1:])] = string(v)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("keys = %v, want %v", got, want)
		}
	}
	check(s, want)
	for _, p := range []string{ta.Path(), tb.Path()} {
		if err := s.RemoveTable(p); err != nil {
			t.Fatal(err)
		}
	}
	after := mem.CrashClone(vfs.CrashCloneCfg{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fs   *vfs.MemFS
		want map[string]string
	}{
		{before, map[string]string{"a1": "old", "a2": "old", "a9": "old", "b1": "old", "c1": "old"}},
		{after, want},
	} {
		s := openMem(t, c.fs)
		check(s, c.want)
		if _, err := c.fs.Stat(left.Path()); err == nil {
			t.Errorf("a table never ingested is still there after a reopen")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTableRespectsFloor: a table stops taking keys, with a
// *DiskFullError, before it takes the disk's free space below the floor,
// as a batch's Commit does.
func TestTableRespectsFloor(t *testing.T) {
	fs := storetest.NewFullFS(vfs.NewMem(), 64<<20)
	s := openFull(t, fs, 0, nil)
	defer s.Close()
	fs.SetFree(testFloor + 6<<20)
	s.tick()
	tb, err := s.NewTable("big.sst")
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Abort()
	v := bytes.Repeat([]byte{'v'}, 64<<10)
	for i := range 1000 { // 64 MiB at most
		err := tb.Set(fmt.Appendf(nil, "k%04d", i), v)
		if err == nil {
			continue
		}
		if _, ok := diskFull(err); !ok {
			t.Fatalf("Set %d: %v, want a *DiskFullError", i, err)
		}
		if free := fs.Free(); free < testFloor-tableCheckBytes {
			t.Errorf("refused with %d bytes free, the floor %d", free, testFloor)
		}
		return
	}
	t.Fatal("a table took 64 MiB with 6 MiB free above the floor")
}
