package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/partitadb/partita/internal/replica"
)

// droppingHost is a replica.Host whose replicas' Commit fails, while drops
// is positive, as a replicated keyspace's does when its proposal is
// dropped or refused (the leadership changing): replica.ErrNotApplied,
// nothing written.
type droppingHost struct {
	*replica.Local
	drops, dropped atomic.Int32
}

func (h *droppingHost) Replica(id uint64) (replica.Replica, error) {
	r, err := h.Local.Replica(id)
	if err != nil {
		return nil, err
	}
	return droppingReplica{r, h}, nil
}

type droppingReplica struct {
	replica.Replica
	h *droppingHost
}

func (r droppingReplica) Commit(b replica.Batch) error {
	if r.h.drops.Add(-1) >= 0 {
		r.h.dropped.Add(1)
		return fmt.Errorf("test: keyspace %d: %w: %w", r.ID(), replica.ErrNotApplied, replica.ErrUnavailable)
	}
	return r.Replica.Commit(b)
}

// TestWriteNotApplied: a write whose replicated batch was not applied
// (nothing written) is served again by the node for a while, so the client
// sees it succeed (@azure/cosmos retries no write's 503: a leadership
// transfer during the Node tests' splits reached one); past droppedWait it
// gets 503 saying what happened.
func TestWriteNotApplied(t *testing.T) {
	var host *droppingHost
	// A cluster's handler (Forward set: it keeps each request to serve it
	// again); nothing here is led elsewhere.
	forward := func(http.ResponseWriter, *http.Request, []byte, uint64, uint64) ForwardResult {
		t.Error("a request was forwarded")
		return ForwardFailed
	}
	srv := newTestHandlerOn(t, Config{Forward: forward}, func(l *replica.Local) replica.Host {
		host = &droppingHost{Local: l}
		return host
	})
	mustDo(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`, http.StatusCreated)
	mustDo(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"c","partitionKey":{"paths":["/pk"]}}`, http.StatusCreated)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}

	host.drops.Store(3)
	mustDo(t, srv, http.MethodPost, "/dbs/db/colls/c/docs", pk, `{"id":"x","pk":"a","v":1}`, http.StatusCreated)
	if n := host.dropped.Load(); n != 3 {
		t.Errorf("%d commits not applied, want 3 (served again until one applied)", n)
	}
	resp, body := do(t, srv, http.MethodGet, "/dbs/db/colls/c/docs/x", pk, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"v":1`) {
		t.Fatalf("read after the create: %d %s", resp.StatusCode, body)
	}

	host.drops.Store(1 << 30) // never applied
	resp, body = do(t, srv, http.MethodPost, "/dbs/db/colls/c/docs", pk, `{"id":"y","pk":"a"}`)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "was not applied") {
		t.Fatalf("a write never applied: %d %s, want 503 saying it was not applied", resp.StatusCode, body)
	}
	host.drops.Store(0)
	if resp, _ := do(t, srv, http.MethodGet, "/dbs/db/colls/c/docs/y", pk, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the write never applied is there: %d", resp.StatusCode)
	}
}

func mustDo(t *testing.T, srv *httptest.Server, method, path string, hdr map[string]string, body string, want int) {
	t.Helper()
	if resp, b := do(t, srv, method, path, hdr, body); resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
}
