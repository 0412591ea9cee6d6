package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestOpenRunsNoCompaction: a store that owes compactions and has a
// write-ahead log to replay (a crash) opens without running any, and runs
// them once open. Without the gate, Pebble's Open starts the compaction
// its replay's flush makes due and waits for it to finish.
func TestOpenRunsNoCompaction(t *testing.T) {
	fs := vfs.NewMem()
	// A database left as a crashed server leaves one: eight overlapping
	// tables in L0 (a compaction due: the L0 threshold is 4) and writes
	// only in the log.
	db, err := pebble.Open("db", &pebble.Options{FS: fs, DisableAutomaticCompactions: true, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	for table := range 9 {
		for i := range 200 {
			if err := db.Set(mk(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprint(table)), pebble.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if table < 8 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil { // Pebble's Close does not flush
		t.Fatal(err)
	}

	s := openMem(t, fs)
	defer s.Close()
	metrics := func() *pebble.Metrics {
		g, err := s.acquire(false)
		if err != nil {
			t.Fatal(err)
		}
		defer s.release(g)
		return g.db.Metrics()
	}
	m := metrics()
	if m.Levels[0].TablesFlushed == 0 {
		t.Fatal("Open flushed nothing: the test's log was not replayed")
	}
	if n := m.Compact.Count; n != 0 {
		t.Errorf("Open ran %d compactions before it returned; they should wait until it has", n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for metrics().Compact.Count == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no compaction ran within 30 s of Open: the gate did not open")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, err := s.Get(mk("k0000")); err != nil || string(got) != "8" {
		t.Errorf("Get(k0000) = %q, %v; want the last write, 8", got, err)
	}
}

// quietLogger drops Pebble's messages (the test's own raw Open).
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
