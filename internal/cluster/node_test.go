package cluster

import (
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"

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
