// Package drain lets a stopping HTTP server's HTTP/1.1 clients close their
// connections before http.Server.Shutdown, which drops unanswered any
// request it reads once it has begun ("if c.server.shuttingDown()
// return"): a client on a kept-alive connection then had its request cut
// off unread ("socket hang up"), which @azure/cosmos takes for a write of
// unknown outcome and does not retry (a bug hunt: 6 of 6 writers at a
// SIGTERM, none applied), and a cluster node forwarding a write could only
// answer 408.
//
// The server's owner wraps its handler with Handler and installs Track
// before it serves; to stop, it closes its listener, calls Begin, and
// AwaitClosed before Shutdown. Each HTTP/1.1 client is then told
// Connection: close on its next answer, and its next connection is refused
// by the closed listener: a request never sent, which it may retry.
// HTTP/2 connections are not waited for (Shutdown's GOAWAY tells their
// clients which requests it took), nor connections of another protocol
// (a cluster node's Raft streams share its listener).
package drain

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Conns tracks a server's open connections and whether it is stopping.
type Conns struct {
	stopping atomic.Bool
	mu       sync.Mutex
	open     map[net.Conn]bool
}

// Track installs c's connection hook on srv, before it serves, keeping any
// hook srv had.
func Track(srv *http.Server) *Conns {
	c := &Conns{open: map[net.Conn]bool{}}
	prev := srv.ConnState
	srv.ConnState = func(nc net.Conn, st http.ConnState) {
		c.mu.Lock()
		switch st {
		case http.StateClosed, http.StateHijacked:
			delete(c.open, nc)
		default:
			c.open[nc] = true
		}
		c.mu.Unlock()
		if prev != nil {
			prev(nc, st)
		}
	}
	return c
}

// Handler wraps h: once Begin has been called, its HTTP/1.1 answers say
// Connection: close.
func (c *Conns) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.stopping.Load() && r.ProtoMajor == 1 {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// Begin starts the stop: answers from now on say Connection: close.
func (c *Conns) Begin() { c.stopping.Store(true) }

// AwaitClosed returns once no HTTP/1.1 connection (or one whose protocol
// is not known yet) is open, or after grace.
func (c *Conns) AwaitClosed(grace time.Duration) {
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c.http1() == 0 {
			return
		}
	}
}

// http1 counts the open connections that speak HTTP/1.1, or no protocol
// known yet.
func (c *Conns) http1() int {
	c.mu.Lock()
	conns := make([]net.Conn, 0, len(c.open))
	for nc := range c.open {
		conns = append(conns, nc)
	}
	c.mu.Unlock()
	n := 0
	for _, nc := range conns {
		if tc, ok := nc.(*tls.Conn); ok {
			if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
				continue
			}
		}
		n++
	}
	return n
}
