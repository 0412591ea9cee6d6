package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// TestStartNodeFailsCleanly: a node that cannot start (its cluster port is
// taken) returns an error naming the cause, having released what it had
// started, rather than panicking.
func TestStartNodeFailsCleanly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	st, local := openLocal(t, dir)
	addr := ln.Addr().String()
	_, err = StartNode(t.Context(), NodeConfig{DataDir: dir, Addr: addr, Join: []string{addr},
		Secret: []byte("a-cluster-secret-of-some-length"), Store: st, Local: local})
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("StartNode on a taken port = %v, want an error naming the listen", err)
	}
	// Nothing of the cluster's was written: the directory is no member's.
	if _, err := os.Stat(filepath.Join(dir, clusterDir, identityName)); !os.IsNotExist(err) {
		t.Errorf("a failed first start left the member's identity claimed (%v)", err)
	}
}

// openLocal opens a store in dir, closed when the test ends, and its
// keyspaces.
func openLocal(t *testing.T, dir string) (*store.Store, *replica.Local) {
	t.Helper()
	st, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	local, err := replica.OpenLocal(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, local
}

// TestPeerClient: requests to other members (forwarded requests) go over
// HTTP/1.1, though the cluster listener also serves HTTP/2, and reuse one
// kept-alive connection one after another (newPeerClient).
func TestPeerClient(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	n := startNodes(t, cert)[0]
	c := newPeerClient(cert)
	defer c.CloseIdleConnections()
	for i := range 5 {
		var reused bool
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused }})
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+n.addr+pingPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Proto") != "HTTP/1.1" {
			t.Errorf("request %d: %s over %s, want 200 over HTTP/1.1", i, resp.Status, resp.Header.Get("X-Proto"))
		}
		if i > 0 && !reused {
			t.Errorf("request %d opened a new connection, want the first one reused", i)
		}
	}
}

// TestSendFailure: a forward whose connection fails after the request went
// out (the leader killed while serving it: EOF) has an unknown outcome, not
// a failure to retry; one whose connection is refused was not sent.
func TestSendFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // the request read, then the process gone
		}
	}))
	defer srv.Close()
	_, err := srv.Client().Post(srv.URL+"/dbs/db/colls/c/docs", "application/json", strings.NewReader(`{"id":"1"}`))
	if err == nil {
		t.Fatal("the post succeeded")
	}
	if pass, unknown := sendFailure(err, false, http.MethodPost); pass || !unknown {
		t.Errorf("POST cut after it was read (%v): pass over %v, unknown %v; want unknown", err, pass, unknown)
	}
	if pass, unknown := sendFailure(err, false, http.MethodGet); pass || unknown {
		t.Errorf("GET cut: pass over %v, unknown %v; want neither", pass, unknown)
	}
	if pass, unknown := sendFailure(err, true, http.MethodPatch); pass || !unknown {
		t.Errorf("given up: pass over %v, unknown %v; want unknown", pass, unknown)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = srv.Client().Post("http://"+addr+"/x", "application/json", strings.NewReader(`{}`))
	if pass, unknown := sendFailure(err, false, http.MethodPost); !pass || unknown {
		t.Errorf("refused (%v): pass over %v, unknown %v; want pass over", err, pass, unknown)
	}
}

// countConn counts the bytes a connection's reads and writes moved.
type countConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// TestPeerClientAbandons: a forward given up on (its context cancelled
// while the request is on its way) leaves nothing behind to be delivered
// later: what the kernel had not sent when the connection closed never
// reaches the peer (dialPeer). The peer reads nothing until the client has
// given up, as a leader cut off by the network would; then it must receive
// less than the client's kernel had accepted (an ordinary close delivers
// all of it, then the end of the stream).
func TestPeerClientAbandons(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	gaveUp := make(chan struct{})
	received := make(chan int64, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			received <- -1
			return
		}
		defer raw.Close()
		cc := &countConn{Conn: raw}
		tc := tls.Server(cc, cert.ServerTLS())
		if err := tc.Handshake(); err != nil {
			received <- -1
			return
		}
		<-gaveUp
		_, _ = io.Copy(io.Discard, tc)
		received <- cc.n.Load()
	}()
	c := newPeerClient(cert)
	tr := c.Transport.(releaseTransport).next.(*http.Transport)
	var sent *countConn
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sent = &countConn{Conn: conn}
		return sent, nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	body := io.LimitReader(zeros{}, 256<<20) // far more than the sockets' buffers hold
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+ln.Addr().String()+"/forward/x", body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(req); err == nil {
		t.Fatal("the request succeeded")
	}
	c.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond) // what an ordinary close would still deliver, it delivers now
	close(gaveUp)
	got := <-received
	if sent == nil || got < 0 {
		t.Fatalf("no connection (sent %v, received %d)", sent, got)
	}
	if want := sent.n.Load(); got >= want {
		t.Errorf("the peer received %d bytes of the %d the client's kernel accepted: an abandoned request went on being delivered", got, want)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestClaimDataDir: a data directory names the member it belongs to from
// its first start, and another node started on it is refused with a
// message naming both; its own member starts on it again.
func TestClaimDataDir(t *testing.T) {
	ms, err := Members([]string{"127.0.0.1:7001", "127.0.0.1:7003"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := claimDataDir(dir, ms[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := claimDataDir(dir, ms[0]); err != nil {
		t.Fatalf("its own member again: %v", err)
	}
	_, err = claimDataDir(dir, ms[1])
	if err == nil || !strings.Contains(err.Error(), ms[0].Addr) || !strings.Contains(err.Error(), ms[1].Addr) {
		t.Fatalf("another member on it: %v, want a refusal naming both", err)
	}
	// A start that failed before etcd held data gives the claim up (a
	// review: a member stopped while it waited for the others could not
	// be started again with a corrected --cluster-addr); once etcd holds
	// data the claim stands.
	unclaimDataDir(dir)
	if created, err := claimDataDir(dir, ms[1]); err != nil || !created {
		t.Fatalf("another member after the claim was given up: created %v, %v", created, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, etcdDir, "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	unclaimDataDir(dir)
	if _, err := claimDataDir(dir, ms[0]); err == nil {
		t.Fatal("a claim given up with etcd data in the directory: another member took it")
	}
}

// TestAfterNotLeader: a leader that answers it does not lead, naming
// another node, is passed over for that node; one naming none is passed
// over until this node learns of another; one naming itself (handing its
// leadership over, which may fail and leave it leading) is asked again
// after a pause, not passed over.
// TestPassing: a forward waits rather than send to the leader it passed
// over, for passAgain; then it sends to it again (it may have won the next
// election: a bug hunt's forwards waited their whole 5 s for another leader
// while this node acknowledged hundreds of writes to the same one).
func TestPassing(t *testing.T) {
	for _, tc := range []struct {
		leader, passed uint64
		since          time.Duration
		wait           bool
	}{
		{leader: 1, passed: 1, since: 0, wait: true},
		{leader: 1, passed: 1, since: passAgain - time.Millisecond, wait: true},
		{leader: 1, passed: 1, since: passAgain, wait: false},
		{leader: 2, passed: 1, since: 0, wait: false},
		{leader: 1, passed: 0, since: 0, wait: false},
		{leader: 0, passed: 0, since: 0, wait: false}, // no leader: the caller's own wait
	} {
		if got := passing(tc.leader, tc.passed, tc.since); got != tc.wait {
			t.Errorf("passing(%d, %d, %v) = %v, want %v", tc.leader, tc.passed, tc.since, got, tc.wait)
		}
	}
}

func TestAfterNotLeader(t *testing.T) {
	for _, tc := range []struct {
		leader, passed, named uint64
		next, nextPassed      uint64
		again                 bool
	}{
		{leader: 1, passed: 9, named: 2, next: 2, nextPassed: 1},
		{leader: 1, passed: 9, named: 0, next: 1, nextPassed: 1},
		{leader: 1, passed: 9, named: 1, next: 1, nextPassed: 9, again: true},
	} {
		next, passed, again := afterNotLeader(tc.leader, tc.passed, tc.named)
		if next != tc.next || passed != tc.nextPassed || again != tc.again {
			t.Errorf("afterNotLeader(%d, %d, %d) = %d, %d, %v; want %d, %d, %v", tc.leader, tc.passed, tc.named,
				next, passed, again, tc.next, tc.nextPassed, tc.again)
		}
	}
}

// TestCloseBounded: a node whose background work is stuck (its Raft driver
// inside a store that stalls writes: Pebble, its flushes failing on a full
// disk) still closes, within nodeStopWait, with an error saying so. It
// waited for ever before, and the process ignored SIGTERM (a bug hunt).
func TestCloseBounded(t *testing.T) {
	n := &Node{}
	stuck := make(chan struct{})
	defer close(stuck)
	n.wg.Go(func() { <-stuck })
	done := make(chan error, 1)
	go func() { done <- n.Close() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did not stop") {
			t.Errorf("Close with stuck background work: %v, want an error saying it did not stop", err)
		}
	case <-time.After(nodeStopWait + 20*time.Second):
		t.Fatal("Close waited for the stuck background work")
	}
}

// TestJoinedBounded: the start's steps after the etcd member joined end at
// --cluster-start-timeout with an error naming it, and wait until stopped
// without one.
func TestJoinedBounded(t *testing.T) {
	wait := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	err := joined(t.Context(), 50*time.Millisecond, wait)
	if err == nil || !strings.Contains(err.Error(), "--cluster-start-timeout 50ms") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("steps past the timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	if err := joined(ctx, 0, wait); !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "timeout") {
		t.Errorf("steps without a timeout, stopped: %v", err)
	}
	if err := joined(t.Context(), time.Minute, func(context.Context) error { return nil }); err != nil {
		t.Errorf("steps that succeed: %v", err)
	}
}
