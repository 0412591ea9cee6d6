package replication

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partitadb/partita/internal/store"
)

// TestLogTerms checks the terms and the entries a log keeps in memory
// against its entries in the store, through random appends (overwriting
// suffixes, as a follower's conflicting log is), truncations, snapshots
// and reloads: Term and Entries must answer from the store's entries
// whatever it remembers.
func TestLogTerms(t *testing.T) {
	st, err := store.Open(store.Options{Dir: "data", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const group = 7
	b := st.NewBatch()
	if err := (&logStore{group: group}).setBounds(b, bounds{conf: &pb.ConfState{Voters: []uint64{1}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	ls, ok, err := loadLog(st, group)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	term := uint64(1)
	stored := func(i uint64) uint64 { // the entry's term, read from the store
		t.Helper()
		v, err := st.Get(entryKey(group, i))
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		e := &pb.Entry{}
		if err := proto.Unmarshal(v, e); err != nil {
			t.Fatal(err)
		}
		return e.GetTerm()
	}
	cached := 0 // steps after which the cache held entries
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 7: // append, maybe from an index the log holds already
			first := ls.last + 1
			if ls.last > ls.trunc.index && rng.IntN(3) == 0 {
				first -= uint64(rng.IntN(int(min(ls.last-ls.trunc.index, 5)))) + 1
			}
			if rng.IntN(4) == 0 {
				term++
			}
			var ents []*pb.Entry
			for i := range uint64(rng.IntN(4) + 1) {
				if rng.IntN(6) == 0 {
					term++
				}
				// Data tells entries of one index and term apart, and
				// makes some large enough to pass the cache's bound.
				data := make([]byte, rng.IntN(3)*rng.IntN(40<<10))
				for k := range data {
					data[k] = byte(rng.Uint32())
				}
				ents = append(ents, &pb.Entry{Index: new(first + i), Term: new(term), Data: data})
			}
			b := st.NewBatch()
			last, err := ls.appendFrom(b, ls.last, ents)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			ls.last = last
			ls.appended(ents)
		case op == 9 && rng.IntN(4) == 0: // a snapshot past the log: it starts over after it
			tb := bounds{index: ls.last + uint64(rng.IntN(3)), term: term, conf: ls.trunc.conf}
			b := st.NewBatch()
			b.DeleteSpan(entrySpan(group, ls.trunc.index+1, ls.last+1))
			if err := ls.setBounds(b, tb); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			ls.trunc, ls.last = tb, tb.index
			ls.reset()
		case op < 9: // truncate a prefix
			if ls.last <= ls.trunc.index+1 {
				continue
			}
			to := ls.trunc.index + uint64(rng.IntN(int(ls.last-ls.trunc.index)))
			tm, err := ls.Term(to)
			if err != nil {
				t.Fatal(err)
			}
			b := st.NewBatch()
			b.DeleteSpan(entrySpan(group, ls.trunc.index+1, to+1))
			tb := bounds{index: to, term: tm, conf: ls.trunc.conf}
			if err := ls.setBounds(b, tb); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			ls.trunc = tb
			ls.truncated(to)
		default: // a restart: nothing remembered
			if ls, ok, err = loadLog(st, group); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		for i := ls.trunc.index + 1; i <= ls.last; i++ {
			got, err := ls.Term(i)
			if err != nil {
				t.Fatalf("step %d: Term(%d): %v", step, i, err)
			}
			if want := stored(i); got != want {
				t.Fatalf("step %d: Term(%d) = %d, the store holds %d (runs %v)", step, i, got, want, ls.terms)
			}
		}
		fresh, ok, err := loadLog(st, group) // remembers nothing: reads the store
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		for range 4 {
			if ls.last == ls.trunc.index {
				break
			}
			lo := ls.trunc.index + 1 + uint64(rng.IntN(int(ls.last-ls.trunc.index)))
			hi := lo + 1 + uint64(rng.IntN(int(ls.last-lo+1)))
			maxSize := []uint64{0, 1 << 10, 64 << 10, 1 << 62}[rng.IntN(4)]
			got, err := ls.Entries(lo, hi, maxSize)
			if err != nil {
				t.Fatalf("step %d: Entries(%d, %d, %d): %v", step, lo, hi, maxSize, err)
			}
			want, err := fresh.Entries(lo, hi, maxSize)
			if err != nil {
				t.Fatalf("step %d: Entries(%d, %d, %d) from the store: %v", step, lo, hi, maxSize, err)
			}
			if len(got) != len(want) {
				t.Fatalf("step %d: Entries(%d, %d, %d): %d entries, the store's %d", step, lo, hi, maxSize, len(got), len(want))
			}
			for k := range got {
				if !proto.Equal(got[k], want[k]) {
					t.Fatalf("step %d: Entries(%d, %d, %d)[%d]: index %d term %d, the store's index %d term %d", step, lo, hi, maxSize, k, got[k].GetIndex(), got[k].GetTerm(), want[k].GetIndex(), want[k].GetTerm())
				}
			}
		}
		if ls.cacheBytes > entryCacheBytes {
			t.Fatalf("step %d: %d bytes of entries cached", step, ls.cacheBytes)
		}
		if len(ls.cache) > 0 {
			cached++
		}
		runs := 0 // the log's runs of entries of one term
		for i := ls.trunc.index + 1; i <= ls.last; i++ {
			if i == ls.trunc.index+1 || stored(i) != stored(i-1) {
				runs++
			}
		}
		if len(ls.terms) > runs+1 { // one run may end before the log's first entry
			t.Fatalf("step %d: %d runs remembered for a log of %d: %v", step, len(ls.terms), runs, ls.terms)
		}
	}
	if cached < 1000 {
		t.Errorf("the cache held entries after %d steps of 3000", cached)
	}
}

// TestStoreFailureUnderRaft: a store that fails while Raft reads its log
// (which makes Raft panic) stops the host instead of the process: the
// failing call returns, later calls answer ErrStopped, and Run returns the
// store's error.
func TestStoreFailureUnderRaft(t *testing.T) {
	st, err := store.Open(store.Options{Dir: "data", FS: vfs.NewMem(), Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Open(st, 1, nopTransport{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Create(1, []uint64{1, 2}); err != nil {
		t.Fatal(err)
	}
	app := func(index, logTerm uint64) Message { // node 2, leading term 1, appends entry index+1
		return Message{Group: 1, Raft: &pb.Message{Type: new(pb.MsgApp), From: new(uint64(2)), To: new(uint64(1)), Term: new(uint64(1)),
			Index: new(index), LogTerm: new(logTerm), Commit: new(index), Entries: []*pb.Entry{{Term: new(uint64(1)), Index: new(index + 1)}}}}
	}
	h.Step(app(0, 0))
	if err := h.Process(); err != nil {
		t.Fatal(err)
	}
	// A restarted host remembers no terms: Raft reads them from the store.
	h2, err := Open(st, 1, nopTransport{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	h2.Step(app(1, 1)) // Raft checks the term of entry 1 (matchTerm): a read of the failed store
	if _, err := h2.ReadIndex(1); !errors.Is(err, ErrStopped) {
		t.Fatalf("a call after the failure: %v, want ErrStopped", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := h2.Run(ctx, time.Millisecond, nil); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Run: %v, want the store's error", err)
	}
}

type nopTransport struct{}

func (nopTransport) Send(uint64, Message) {}
