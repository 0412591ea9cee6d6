package store

import (
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
)

// Pebble publishes a commit's mutations to readers before it waits for the
// log sync that makes them durable (pebble commit.go: "Application code
// needs to protect against this if necessary"). A read in that window,
// answered to a client, could return a write that a crash before the sync
// then loses, one that was never acknowledged (a crash-consistency hunt saw
// it in 2 of 164 kill -9 cycles). inflight numbers the synced commits as
// they begin and notes their ends, so that a read can answer only once
// every commit it may have seen is durable (AwaitDurable, AwaitDurableKey).
// docs/design.md, "Reads answer only with what is durable".
type inflight struct {
	issued atomic.Uint64 // numbers given to synced commits so far
	done   atomic.Uint64 // every number at or below has ended

	mu    sync.Mutex
	ended map[uint64]struct{} // numbers above done that have ended
	wake  chan struct{}       // closed when done advances; nil when no one waits
	// keys counts the hashes of the keys the commits under way write
	// (awaitKey), and wide the commits under way that write spans (a
	// range deletion): a point read of a key none of them writes need
	// not wait.
	keys map[uint64]int32
	wide int
}

// commitKeys is what begin noted of a commit's keys, for end.
type commitKeys struct {
	hashes []uint64
	wide   bool
}

// batchKeys hashes the keys b writes; wide when it writes a span.
func batchKeys(b *pebble.Batch) commitKeys {
	var ck commitKeys
	r := b.Reader()
	for {
		kind, key, _, ok, err := r.Next()
		if !ok || err != nil {
			ck.wide = ck.wide || err != nil
			return ck
		}
		switch kind {
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete,
			pebble.InternalKeyKindSetWithDelete, pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindMerge:
			ck.hashes = append(ck.hashes, xxhash.Sum64(key))
		case pebble.InternalKeyKindLogData:
		default:
			ck.wide = true // a range deletion, a range key: any key may be in it
		}
	}
}

// begin numbers a synced commit about to be applied, writing ck.
func (f *inflight) begin(ck commitKeys) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil {
		f.keys = make(map[uint64]int32)
	}
	for _, h := range ck.hashes {
		f.keys[h]++
	}
	if ck.wide {
		f.wide++
	}
	return f.issued.Add(1)
}

// end notes that commit n, which wrote ck, has returned: durable, or
// failed (the store then refuses every read until it has reopened).
func (f *inflight) end(n uint64, ck commitKeys) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range ck.hashes {
		if f.keys[h]--; f.keys[h] <= 0 {
			delete(f.keys, h)
		}
	}
	if ck.wide {
		f.wide--
	}
	done := f.done.Load()
	if n != done+1 {
		if f.ended == nil {
			f.ended = make(map[uint64]struct{})
		}
		f.ended[n] = struct{}{}
		return
	}
	for done++; ; done++ {
		if _, ok := f.ended[done+1]; !ok {
			break
		}
		delete(f.ended, done+1)
	}
	f.done.Store(done)
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
}

// await returns once every synced commit begun before the call has ended.
// A commit always ends (Pebble's sync returns or fails), so the wait is at
// most one log sync, and none while no synced commit is under way.
func (f *inflight) await() {
	n := f.issued.Load()
	if f.done.Load() >= n {
		return
	}
	f.mu.Lock()
	for f.done.Load() < n {
		if f.wake == nil {
			f.wake = make(chan struct{})
		}
		w := f.wake
		f.mu.Unlock()
		<-w
		f.mu.Lock()
	}
	f.mu.Unlock()
}

// awaitKey is await for a point read of key, made before the call: it
// waits only when a commit under way writes key (or a span), as no other
// commit can have changed what the read saw.
func (f *inflight) awaitKey(key []byte) {
	if f.done.Load() >= f.issued.Load() {
		return
	}
	h := xxhash.Sum64(key)
	f.mu.Lock()
	_, writing := f.keys[h]
	wide := f.wide > 0
	f.mu.Unlock()
	if writing || wide {
		f.await()
	}
}

// AwaitDurableKey is AwaitDurable for a point read of key (the key as
// the store holds it): it waits only while a synced commit under way
// writes key or a span.
func (s *Store) AwaitDurableKey(key []byte) { s.inflight.awaitKey(key) }

// AwaitDurable returns once everything a read begun before the call can
// see is durable: every synced commit under way when it was called has
// ended. A read answered to a client calls it after it has opened its
// view of the store (a Get, an iterator, a snapshot) and before it
// answers; a write's own reads need not, as its commit follows theirs in
// the log and so makes what they saw durable too.
func (s *Store) AwaitDurable() { s.inflight.await() }
