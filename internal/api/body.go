package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/partitadb/partita/internal/status"
)

// gatedBody is a request body as the handler reads it: each read must
// arrive within Config.BodyIdle of the last (else 408), and the bytes read
// count against the node's budget of buffered request bodies,
// Config.MaxBodyBuffer, until the request ends (release); a read past the
// budget answers 429. Without them, an authenticated client holding
// requests whose bodies stall kept a MaxInFlight slot each for the server's
// read timeout (2 min), so 4,200 such requests over 37 connections locked
// every client out (the master key's included), and 64 stalled bodies of
// 16 MiB took 2.4 GB (a security review).
type gatedBody struct {
	h    *Handler
	body io.ReadCloser
	w    http.ResponseWriter
	held int64 // bytes counted against the budget
	err  error // the first refusal, repeated
	// copies is how many copies of each byte read the request holds: 2
	// on a node that keeps what a handler reads for a forward (keptBody)
	// besides the handler's own, 1 elsewhere. Each counts against the
	// budget (a security review measured a cluster member at ~5x the
	// budget when only the bytes read were counted).
	copies int64

	// The idle bound is kept by one timer per body (watch) rather than a
	// read deadline set before each read: on HTTP/2 each SetReadDeadline is
	// a message to the connection's goroutine, three a request.
	timer   *time.Timer
	began   atomic.Int64 // when the read under way began (unix ns); 0: none under way
	stalled atomic.Bool  // watch ended the body
	ended   atomic.Bool  // released: watch does nothing more
}

func (h *Handler) gateBody(w http.ResponseWriter, r *http.Request) *gatedBody {
	copies := int64(1)
	if h.cfg.Forward != nil || h.cfg.ForwardRead != nil {
		copies = 2
	}
	return &gatedBody{h: h, body: r.Body, w: w, copies: copies}
}

func (g *gatedBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	g.began.Store(time.Now().UnixNano())
	if g.timer == nil {
		g.timer = time.AfterFunc(g.h.cfg.BodyIdle, g.watch)
	}
	n, err := g.body.Read(p)
	g.began.Store(0)
	if n > 0 && !g.h.budgets.held.take(int64(n)*g.copies, g.h.cfg.MaxBodyBuffer) {
		g.err = &status.Error{Code: http.StatusTooManyRequests, RetryAfter: bodyBufferRetry,
			Message: fmt.Sprintf("Request rate is large: this node holds %d MiB of request bodies, its limit; no changes were made. Retry shortly.", g.h.cfg.MaxBodyBuffer>>20)}
		return 0, g.err
	}
	g.held += int64(n) * g.copies
	if err != nil && (g.stalled.Load() || errors.Is(err, os.ErrDeadlineExceeded)) {
		g.err = &stalledBody{status.Newf(http.StatusRequestTimeout, "the request body stopped arriving for %v; no changes were made", g.h.cfg.BodyIdle)}
		return n, g.err
	}
	return n, err
}

// watch, on its timer, ends a read that has waited BodyIdle (a read
// deadline in the past makes it return at once, on HTTP/1.1 and HTTP/2
// alike), or sets the timer again for what is left.
func (g *gatedBody) watch() {
	if g.ended.Load() {
		return
	}
	wait := g.h.cfg.BodyIdle
	if began := g.began.Load(); began != 0 {
		waited := time.Duration(time.Now().UnixNano() - began)
		if waited >= wait {
			g.stalled.Store(true)
			_ = http.NewResponseController(g.w).SetReadDeadline(time.Now()) // not every ResponseWriter has one (tests')
			return
		}
		wait -= waited
	}
	g.timer.Reset(wait)
}

func (g *gatedBody) Close() error { return g.body.Close() }

// release returns the body's bytes to the budget and stops its watch: the
// request has ended.
func (g *gatedBody) release() {
	g.ended.Store(true)
	if g.timer != nil {
		g.timer.Stop()
	}
	g.h.budgets.held.Add(-g.held)
	g.held = 0
}

// stalledBody is the answer to a body that stopped arriving. It is written
// though the request's context has ended: on HTTP/1.1 net/http ends it when
// a read of the body fails, and the answer would go unwritten (writeError).
type stalledBody struct{ err *status.Error }

func (s *stalledBody) Error() string { return s.err.Error() }
func (s *stalledBody) Unwrap() error { return s.err }

// bodyBudget counts the bytes of request bodies read and not yet released.
type bodyBudget struct{ atomic.Int64 }

// take counts n more bytes if that keeps the total within limit.
func (b *bodyBudget) take(n, limit int64) bool {
	if b.Add(n) > limit {
		b.Add(-n)
		return false
	}
	return true
}

// bodyBufferRetry is the retry-after of a request refused for
// MaxBodyBuffer.
const bodyBufferRetry = 200 * time.Millisecond
