package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// newPeerClient returns the client that sends requests to other members
// (forwarded requests, remote reads, gathered reports): HTTP/1.1 over the
// cluster's mutual TLS, each connection kept for the next request (up to
// peerIdleMax idle per member, closed after peerIdleTimeout idle), written
// and read by the goroutine that sends the request (peerTransport).
//
// Why not HTTP/2, as it first was: a request then crossed more goroutines
// on the leader (the connection's frame reader, its serve loop, then a
// handler goroutine; HTTP/1.1 reads and serves a connection's requests
// on one), and on a loaded machine each handoff waits for a core.
// Measured from the forwarding node (a scratch build, ycsb-a through a
// follower of a loopback cluster, 4 workers): the time a forward took
// beyond the leader's handling of it was 0.63–0.72 ms p50 (1.4–1.6 ms
// p90) over HTTP/2, 0.43–0.47 ms (1.04–1.27 ms) over HTTP/1.1. What
// HTTP/2 offers here, multiplexing, buys nothing on a network between a
// few nodes; concurrent forwards take a connection each.
//
// Its connections are closed abortively (dialPeer).
func newPeerClient(cert *Cert) *http.Client {
	tc := cert.ClientTLS("")
	tc.NextProtos = []string{"http/1.1"}
	return &http.Client{Transport: &peerTransport{tls: tc, dial: dialPeer}}
}

// peerIdleMax bounds the idle connections the peer client keeps per
// member; peerIdleTimeout is how long one is kept idle. The cluster
// listener closes a connection idle for longer (it keeps net/http's
// default, the read timeout's, none: peers close first).
const (
	peerIdleMax     = 64
	peerIdleTimeout = time.Minute
)

// peerTransport is the peer client's round tripper: HTTP/1.1 (net/http's
// own encoding: Request.Write, ReadResponse) on a connection the calling
// goroutine holds for the whole exchange, writing the request and reading
// the answer itself. net/http's Transport hands each request to a
// connection's writer goroutine and its answer back from the connection's
// reader goroutine: two wake-ups on a forward's path, each a wait for a
// core on a loaded machine (BenchmarkPeerRoundTrip compares the two).
//
// What Transport's reader goroutine also did, noticing at once that an
// idle connection was closed by its peer (a member restarted), is done
// when the connection is taken again (peerConn.alive): a forward sent on a
// dead connection would have an unknown outcome (408) where one that is
// refused its connection is passed to the next leader.
type peerTransport struct {
	tls  *tls.Config
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	idle   map[string][]*peerConn // by address, the most recently used last
	closed bool
}

// peerConn is one connection of the peer client.
type peerConn struct {
	raw   net.Conn // under tc: closed to abort (SO_LINGER 0: a reset)
	tc    *tls.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	since time.Time // idle since
}

// RoundTrip sends req on a connection to its host and returns the answer;
// the connection goes back to the idle pool once the answer's body is read
// to its end and closed, and is closed otherwise. req's context ending
// closes the connection (a reset: what was not sent never arrives).
func (t *peerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" || req.URL.Host == "" {
		closeBody(req)
		return nil, fmt.Errorf("peer client: %q is not an https URL with a host", req.URL)
	}
	ctx := req.Context()
	addr := req.URL.Host
	pc, err := t.conn(ctx, addr)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { pc.raw.Close() })
	err = req.Write(pc.bw)
	if err == nil {
		err = pc.bw.Flush()
	}
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(pc.br, req)
	}
	if err != nil {
		stop()
		pc.raw.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	resp.Body = &peerBody{rc: resp.Body, t: t, pc: pc, addr: addr, stop: stop, keep: !resp.Close}
	return resp, nil
}

// closeBody closes req's body, as a round tripper must, also on failure.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// conn returns an idle connection to addr that is still open, or dials one.
func (t *peerTransport) conn(ctx context.Context, addr string) (*peerConn, error) {
	now := time.Now()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errors.New("peer client: closed")
	}
	var stale []*peerConn
	var pc *peerConn
	for list := t.idle[addr]; len(list) > 0; list = t.idle[addr] {
		c := list[len(list)-1]
		t.idle[addr] = list[:len(list)-1]
		if now.Sub(c.since) < peerIdleTimeout {
			pc = c
			break
		}
		stale = append(stale, c)
	}
	t.mu.Unlock()
	for _, c := range stale {
		c.raw.Close()
	}
	for pc != nil {
		if pc.alive() {
			return pc, nil
		}
		pc.raw.Close()
		t.mu.Lock()
		pc = nil
		if list := t.idle[addr]; len(list) > 0 {
			pc = list[len(list)-1]
			t.idle[addr] = list[:len(list)-1]
		}
		t.mu.Unlock()
	}
	raw, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	cfg := t.tls.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		cfg.ServerName = host
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return &peerConn{raw: raw, tc: tc, br: bufio.NewReader(tc), bw: bufio.NewWriter(tc)}, nil
}

// put returns pc, its exchange complete, to the idle pool.
func (t *peerTransport) put(addr string, pc *peerConn) {
	pc.since = time.Now()
	t.mu.Lock()
	if t.closed || len(t.idle[addr]) >= peerIdleMax || pc.br.Buffered() > 0 {
		t.mu.Unlock()
		pc.raw.Close()
		return
	}
	if t.idle == nil {
		t.idle = map[string][]*peerConn{}
	}
	t.idle[addr] = append(t.idle[addr], pc)
	t.mu.Unlock()
}

// CloseIdleConnections closes the idle connections (http.Client calls it).
func (t *peerTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, pc := range list {
			pc.raw.Close()
		}
	}
}

// peerBody is the body of a peer client's answer: read to its end and
// closed, it returns its connection to the pool.
type peerBody struct {
	rc   io.ReadCloser
	t    *peerTransport
	pc   *peerConn
	addr string
	stop func() bool // unregisters the context's closing of the connection
	keep bool        // the answer allows the connection's reuse
	eof  bool
	done bool
}

func (b *peerBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *peerBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	if !b.eof {
		// Not read to its end: the rest is unread on the connection,
		// which cannot carry another exchange.
		b.stop()
		b.pc.raw.Close()
		return b.rc.Close()
	}
	err := b.rc.Close()
	if b.stop() && b.keep && err == nil {
		b.t.put(b.addr, b.pc)
	} else {
		b.pc.raw.Close()
	}
	return err
}
