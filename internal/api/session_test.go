package api

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/partitadb/partita/internal/replica"
)

// visibilityHost is a replica.Host whose replicas' Visible answers false
// on its fail-th call (counting from 1; 0: never), as a keyspace that has
// not reached a session, and true otherwise.
type visibilityHost struct {
	*replica.Local
	calls, fail atomic.Int32
}

func (h *visibilityHost) Replica(id uint64) (replica.Replica, error) {
	r, err := h.Local.Replica(id)
	if err != nil {
		return nil, err
	}
	return visibilityReplica{r, h}, nil
}

type visibilityReplica struct {
	replica.Replica
	h *visibilityHost
}

func (r visibilityReplica) Visible(uint64) bool {
	return r.h.calls.Add(1) != r.h.fail.Load()
}

// TestReadServedAgainBehindSession: in a cluster, a session read whose
// session the API found reached, but whose engine read found a keyspace
// behind it (engine.SessionBehind: the range moved in between), is served
// again, waiting for the session again, and the client gets the item, not
// the 404/1002 or, before the engine checked, a 404 from a keyspace not yet
// caught up.
func TestReadServedAgainBehindSession(t *testing.T) {
	var host *visibilityHost
	forward := func(http.ResponseWriter, *http.Request, []byte, uint64, uint64) ForwardResult {
		t.Error("a request was forwarded")
		return ForwardFailed
	}
	srv := newTestHandlerOn(t, Config{Replicated: true, Forward: forward}, func(l *replica.Local) replica.Host {
		host = &visibilityHost{Local: l}
		return host
	})
	mustDo(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`, http.StatusCreated)
	mustDo(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"c","partitionKey":{"paths":["/pk"]}}`, http.StatusCreated)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	resp, body := do(t, srv, http.MethodPost, "/dbs/db/colls/c/docs", pk, `{"id":"x","pk":"a","v":1}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	hdr := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`, "x-ms-session-token": resp.Header.Get("x-ms-session-token")}

	// A read once: the API's wait asks as often as the engine's check.
	host.calls.Store(0)
	mustDo(t, srv, http.MethodGet, "/dbs/db/colls/c/docs/x", hdr, "", http.StatusOK)
	n := host.calls.Load()
	if n == 0 || n%2 != 0 {
		t.Fatalf("a session read asked Visible %d times, want the API's and the engine's asking alike", n)
	}
	// The engine's first check fails: served again.
	host.calls.Store(0)
	host.fail.Store(n/2 + 1)
	resp, body = do(t, srv, http.MethodGet, "/dbs/db/colls/c/docs/x", hdr, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"v":1`) {
		t.Fatalf("a read whose keyspace fell behind its session once: %d %s, want the item", resp.StatusCode, body)
	}
	// The first time: the wait's calls and the engine's failing one.
	if got, want := host.calls.Load(), n+n/2+1; got != want {
		t.Errorf("Visible asked %d times, want %d (the read served twice)", got, want)
	}
}
