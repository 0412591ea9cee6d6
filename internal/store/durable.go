package store

import (
	"sync"
	"sync/atomic"
)

// Pebble publishes a commit's mutations to readers before it waits for the
// log sync that makes them durable (pebble commit.go: "Application code
// needs to protect against this if necessary"). A read in that window,
// answered to a client, could return a write that a crash before the sync
// then loses, one that was never acknowledged (a crash-consistency hunt saw
// it in 2 of 164 kill -9 cycles). inflight numbers the synced commits as
// they begin and notes their ends, so that a read can answer only once
// every commit it may have seen is durable (AwaitDurable). docs/design.md,
// "Residual gaps".
type inflight struct {
	issued atomic.Uint64 // numbers given to synced commits so far
	done   atomic.Uint64 // every number at or below has ended

	mu    sync.Mutex
	ended map[uint64]struct{} // numbers above done that have ended
	wake  chan struct{}       // closed when done advances; nil when no one waits
}

// begin numbers a synced commit about to be applied.
func (f *inflight) begin() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.issued.Add(1)
}

// end notes that commit n has returned: durable, or failed (the store
// then refuses every read until it has reopened).
func (f *inflight) end(n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
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

// AwaitDurable returns once everything a read begun before the call can
// see is durable: every synced commit under way when it was called has
// ended. A read answered to a client calls it after it has opened its
// view of the store (a Get, an iterator, a snapshot) and before it
// answers; a write's own reads need not, as its commit follows theirs in
// the log and so makes what they saw durable too.
func (s *Store) AwaitDurable() { s.inflight.await() }
