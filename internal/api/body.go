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
	rc   *http.ResponseController
	held int64 // bytes counted against the budget
	err  error // the first refusal, repeated
}

func (h *Handler) gateBody(w http.ResponseWriter, r *http.Request) *gatedBody {
	return &gatedBody{h: h, body: r.Body, rc: http.NewResponseController(w)}
}

func (g *gatedBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	// A deadline of the read's own: the server's ReadTimeout is for the
	// whole request. Not every ResponseWriter supports one (tests').
	_ = g.rc.SetReadDeadline(time.Now().Add(g.h.cfg.BodyIdle))
	n, err := g.body.Read(p)
	if n > 0 && !g.h.held.take(int64(n), g.h.cfg.MaxBodyBuffer) {
		g.err = &status.Error{Code: http.StatusTooManyRequests, RetryAfter: bodyBufferRetry,
			Message: fmt.Sprintf("Request rate is large: this node holds %d MiB of request bodies, its limit; no changes were made. Retry shortly.", g.h.cfg.MaxBodyBuffer>>20)}
		return 0, g.err
	}
	g.held += int64(n)
	if err == io.EOF {
		// No deadline once the body is in: on HTTP/1.1 the connection's
		// read deadline would otherwise end the request's context while its
		// handler runs (net/http's background read fails and cancels it).
		_ = g.rc.SetReadDeadline(time.Time{})
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		g.err = &stalledBody{status.Newf(http.StatusRequestTimeout, "the request body stopped arriving for %v; no changes were made", g.h.cfg.BodyIdle)}
		return n, g.err
	}
	return n, err
}

func (g *gatedBody) Close() error { return g.body.Close() }

// release returns the body's bytes to the budget: the request has ended.
func (g *gatedBody) release() {
	g.h.held.Add(-g.held)
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
