package engine

import (
	"context"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/partitadb/partita/internal/status"
)

// gate bounds how many requests do heavy work at once: stored procedure
// executions hold a slot of one gate for their whole run, and query pages
// hold a slot of another while they read and evaluate documents, handing it
// on every turnLength (turn). Point operations never take a slot, so however
// many scripts loop or queries join, at most the slots' worth of goroutines
// burn CPU for them and the remaining cores serve reads and writes at once:
// Go's scheduler has no priorities, so bounding the runnable heavy
// goroutines is how latency-sensitive work keeps its share.
//
// Waiters are served in arrival order (a channel's blocked senders queue
// FIFO), so handing a slot on lets every waiting query take its turn.
type gate struct {
	slots chan struct{}
	// peak is the most slots ever held at once (for tests).
	inUse, peak atomic.Int64
}

func newGate(n int) *gate { return &gate{slots: make(chan struct{}, n)} }

// defaultSlots is half the processors, at least one.
func defaultSlots() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// acquire takes a slot, waiting until ctx is done (returning ctx.Err()).
func (g *gate) acquire(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
	default:
		select {
		case g.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	n := g.inUse.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	return nil
}

func (g *gate) release() {
	g.inUse.Add(-1)
	<-g.slots
}

// yield hands the caller's slot to a request waiting for one, when every
// slot is taken (only then can one be waiting), and takes a slot again,
// whatever ctx says: the caller holds a slot before and after, so a turn's
// end releases exactly what it took. A query page calls it while one
// document's JOINs expand (exec.WithPause), between the documents where its
// turn hands the slot on: one query joining 1,000³ rows of a document held
// the only slot of a 2-core server for 10 s, and every other query waited
// (a hostile-query hunt). Every holder hands its slot on within a turn, so
// taking it again waits a few milliseconds.
func (g *gate) yield() {
	if len(g.slots) < cap(g.slots) {
		return
	}
	g.release()
	runtime.Gosched()
	g.slots <- struct{}{}
	g.inUse.Add(1)
}

// acquireWithin is acquire bounded by wait: past it, a 429 asking the client
// to retry (the SDKs retry 429s by themselves).
func (g *gate) acquireWithin(ctx context.Context, wait time.Duration, what string) error {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err := g.acquire(wctx)
	if err != nil && ctx.Err() == nil {
		busy := status.Throttled(time.Second)
		busy.Message = "the server is busy running other " + what + "; retry later"
		return busy
	}
	if err != nil {
		return status.New(http.StatusRequestTimeout, "the request was cancelled while waiting to run").Wrap(err)
	}
	return nil
}

// turnLength is how long a query page evaluates before it hands its slot to
// the next waiting query (and lets the scheduler run others).
const turnLength = 2 * time.Millisecond

// turn is a query's use of a gate: take starts or continues its turn before
// each document and hands the slot on when the turn is over; end releases
// it. The zero turn with a nil gate does nothing.
type turn struct {
	g     *gate
	held  bool
	since time.Time
	n     int
}

func (t *turn) take(ctx context.Context) error {
	if t.g == nil {
		return nil
	}
	if t.held {
		if t.n++; t.n%32 != 0 || time.Since(t.since) < turnLength {
			return nil
		}
		t.g.release()
		t.held = false
		runtime.Gosched()
	}
	if err := t.g.acquire(ctx); err != nil {
		return err
	}
	t.held, t.since = true, time.Now()
	return nil
}

func (t *turn) end() {
	if t.held {
		t.g.release()
		t.held = false
	}
}
