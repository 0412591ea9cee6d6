package replica

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partitadb/partita/internal/store"
	"github.com/partitadb/partita/internal/store/storetest"
)

// TestReadsWaitForTheLogSync: a write is visible in Pebble before its log
// sync ends; a read of the keyspace (point, iterator, snapshot) must not
// answer with it until the sync has ended, or a crash in between would
// lose a write a client has read, one never acknowledged (a
// crash-consistency hunt saw it with kill -9). The stalled sync stands
// for a slow disk.
func TestReadsWaitForTheLogSync(t *testing.T) {
	fs := storetest.NewFullFS(vfs.NewMem(), 1<<40)
	st := openStore(t, fs)
	rep := replicaOf(t, openLocal(t, st), 1)
	key := []byte("k")
	put := func(v string) error {
		b := rep.NewBatch(false)
		defer b.Close()
		b.Set(key, []byte(v))
		return rep.Commit(b)
	}
	if err := put("acknowledged"); err != nil {
		t.Fatal(err)
	}

	release := fs.HoldSyncs(".log")
	defer release()
	committed := make(chan error, 1)
	go func() { committed <- put("in flight") }()
	// Pebble publishes the write before its sync: the store, read without
	// waiting, shows it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		found := false
		_ = st.Scan(context.Background(), store.Span{}, nil, func(_, v []byte) bool {
			found = found || bytes.Equal(v, []byte("in flight"))
			return !found
		})
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the write never became visible")
		}
	}

	reads := map[string]func() string{
		"Get": func() string { v, _ := rep.Get(key); return string(v) },
		"NewIter": func() string {
			it := rep.NewIter(Span{}, false)
			defer it.Close()
			v := ""
			for it.Next() {
				if bytes.Equal(it.Key(), key) {
					v = string(it.Value())
				}
			}
			return v
		},
		"Snapshot": func() string {
			sn, err := rep.Snapshot()
			if err != nil {
				return err.Error()
			}
			defer sn.Close()
			v, _ := sn.Get(key)
			return string(v)
		},
	}
	answers := make(map[string]chan string)
	for name, read := range reads {
		ch := make(chan string, 1)
		answers[name] = ch
		go func() { ch <- read() }()
	}
	// Not a speed: a read that does not wait answers within microseconds;
	// one that waits answers only after the release below.
	time.Sleep(200 * time.Millisecond)
	for name, ch := range answers {
		select {
		case v := <-ch:
			t.Errorf("%s answered %q while the write's log sync was under way", name, v)
			delete(answers, name)
		default:
		}
	}
	// A point read of a key no commit under way writes answers without
	// waiting for the held sync.
	other := make(chan error, 1)
	go func() { _, err := rep.Get([]byte("other")); other <- err }()
	select {
	case err := <-other:
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of another key: %v, want ErrNotFound", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("Get of a key no commit under way writes waited for the held sync")
	}
	release()
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	for name, ch := range answers {
		select {
		case v := <-ch:
			if v != "in flight" && v != "acknowledged" {
				t.Errorf("%s after the sync: %q", name, v)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s still waiting 30 s after the sync ended", name)
		}
	}
}
