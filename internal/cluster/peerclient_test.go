package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// peerServer serves the cluster listener's TLS on a loopback port with an
// echo handler: it answers a request's body, its protocol in X-Proto, and
// to /big a body of 1 MiB. It counts the connections it accepted, and
// close closes every connection it holds (a member restarting).
type peerServer struct {
	addr     string
	accepted atomic.Int64
	mu       sync.Mutex
	conns    map[net.Conn]bool
}

func startPeerServer(t testing.TB, cert *Cert) *peerServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ps := &peerServer{addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Proto", r.Proto)
			if r.URL.Path == "/big" {
				_, _ = w.Write(bytes.Repeat([]byte("x"), 1<<20))
				return
			}
			_, _ = io.Copy(w, r.Body)
		}),
		TLSConfig:         cert.ServerTLS(),
		ReadHeaderTimeout: 5 * time.Second,
		ConnState: func(c net.Conn, s http.ConnState) {
			ps.mu.Lock()
			defer ps.mu.Unlock()
			switch s {
			case http.StateNew:
				ps.accepted.Add(1)
				ps.conns[c] = true
			case http.StateClosed, http.StateHijacked:
				delete(ps.conns, c)
			}
		},
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close() })
	return ps
}

func (ps *peerServer) close() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for c := range ps.conns {
		c.Close()
	}
}

// post sends body to path on ps with c and returns the answer's body.
func post(ctx context.Context, c *http.Client, ps *peerServer, path, body string) (string, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+ps.addr+path, strings.NewReader(body))
	if err != nil {
		return "", nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp, err
}

// TestPeerClient: requests to other members (forwarded requests) go over
// HTTP/1.1, though the cluster listener also serves HTTP/2, and reuse one
// kept-alive connection one after another (newPeerClient).
func TestPeerClient(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	ps := startPeerServer(t, cert)
	c := newPeerClient(cert)
	defer c.CloseIdleConnections()
	for i := range 5 {
		want := fmt.Sprintf(`{"id":"%d"}`, i)
		got, resp, err := post(t.Context(), c, ps, "/forward/api/x", want)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Proto") != "HTTP/1.1" {
			t.Errorf("request %d: %s over %s answering %q, want 200 over HTTP/1.1 answering %q", i, resp.Status, resp.Header.Get("X-Proto"), got, want)
		}
	}
	if n := ps.accepted.Load(); n != 1 {
		t.Errorf("5 requests one after another took %d connections, want 1", n)
	}
}

// TestPeerClientPeerClosed: a connection its peer closed while it was idle
// (the member restarted) is not used again: the next request goes on a
// new connection and succeeds, where sent on the dead one its outcome
// would be unknown.
func TestPeerClientPeerClosed(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	ps := startPeerServer(t, cert)
	c := newPeerClient(cert)
	defer c.CloseIdleConnections()
	for i := range 3 {
		if _, _, err := post(t.Context(), c, ps, "/x", "a"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		ps.close()
		time.Sleep(50 * time.Millisecond) // the close reaches the client's socket
	}
	if _, _, err := post(t.Context(), c, ps, "/x", "a"); err != nil {
		t.Fatalf("after the peer closed: %v", err)
	}
	if n := ps.accepted.Load(); n != 4 {
		t.Errorf("4 requests, each after the peer closed the last one's connection, took %d connections, want 4", n)
	}
}

// TestPeerClientUnreadBody: an answer whose body was not read to its end
// leaves its connection unusable (the rest is on it): it is closed, and
// the next request takes another.
func TestPeerClientUnreadBody(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	ps := startPeerServer(t, cert)
	c := newPeerClient(cert)
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+ps.addr+"/big", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Body.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, _, err := post(t.Context(), c, ps, "/x", "after"); err != nil || got != "after" {
		t.Fatalf("the next request: %q, %v", got, err)
	}
	if n := ps.accepted.Load(); n != 2 {
		t.Errorf("took %d connections, want 2 (the half-read one not reused)", n)
	}
}

// TestPeerClientConcurrent: concurrent requests each get their own answer,
// on at most as many connections as were in use at once.
func TestPeerClientConcurrent(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	ps := startPeerServer(t, cert)
	c := newPeerClient(cert)
	defer c.CloseIdleConnections()
	const workers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				want := fmt.Sprintf("%d/%d %s", w, i, strings.Repeat("y", i*100))
				got, _, err := post(t.Context(), c, ps, "/x", want)
				if err == nil && got != want {
					err = fmt.Errorf("sent %.20q, answered %.20q", want, got)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := ps.accepted.Load(); n > workers {
		t.Errorf("%d workers took %d connections", workers, n)
	}
}

// TestPeerClientCancelled: a request whose context ends while it waits
// for its answer fails with the context's error, and the client goes on
// to serve the next on a new connection.
func TestPeerClientCancelled(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		_, _ = w.Write([]byte("ok"))
	}), TLSConfig: cert.ServerTLS(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	defer srv.Close()
	defer close(release)
	ps := &peerServer{addr: ln.Addr().String()}
	c := newPeerClient(cert)
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := post(ctx, c, ps, "/slow", "a"); err != context.DeadlineExceeded && !strings.Contains(fmt.Sprint(err), context.DeadlineExceeded.Error()) {
		t.Fatalf("cancelled: %v, want the context's error", err)
	}
	if got, _, err := post(t.Context(), c, ps, "/x", "a"); err != nil || got != "ok" {
		t.Fatalf("the next request: %q, %v", got, err)
	}
}

// BenchmarkPeerRoundTrip compares a forward's exchange (a 1 KiB request,
// its echo) over net/http's Transport (HTTP/1.1, the same TLS and dialer)
// with the peer client's transport, one request at a time.
func BenchmarkPeerRoundTrip(b *testing.B) {
	cert := mustCert(b, mustCA(b, secretA), "a")
	ps := startPeerServer(b, cert)
	body := strings.Repeat("z", 1024)
	tc := cert.ClientTLS("")
	tc.NextProtos = []string{"http/1.1"}
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	clients := map[string]*http.Client{
		"net-http": {Transport: &http.Transport{TLSClientConfig: tc, Protocols: protos, DialContext: dialPeer, MaxIdleConnsPerHost: 64}},
		"peer":     newPeerClient(cert),
	}
	for _, name := range []string{"net-http", "peer"} {
		c := clients[name]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if got, _, err := post(context.Background(), c, ps, "/forward/api/x", body); err != nil || len(got) != len(body) {
					b.Fatal(got, err)
				}
			}
		})
		c.CloseIdleConnections()
	}
}
