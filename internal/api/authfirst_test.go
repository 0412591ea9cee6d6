package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/replica"
)

// stuckCatalog is a shared catalog backend that can never confirm it is
// current, as a node cut off from etcd's majority cannot.
type stuckCatalog struct{ catalog.Backend }

func (stuckCatalog) Lock(context.Context) (func(), error) { return func() {}, nil }
func (stuckCatalog) Sync(context.Context) error           { return nil }
func (stuckCatalog) Current(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}
func (stuckCatalog) Written() int64                          { return 0 }
func (stuckCatalog) Propagated(context.Context, int64) error { return nil }

// TestAuthenticatedBeforeCatalog: a request without valid credentials is
// refused (401) at once on a node whose catalog cannot be confirmed
// current, never held waiting for it (a security review: forged type=master
// requests held there filled the slots kept for the account's keys).
func TestAuthenticatedBeforeCatalog(t *testing.T) {
	key, _ := auth.DecodeKey(testKey)
	srv := httptest.NewServer(newTestAPIMeta(t, Config{Replicated: true}, func(l *replica.Local) replica.Host { return l },
		auth.Config{MasterKey: key}, func(b catalog.Backend) catalog.Backend { return stuckCatalog{b} }))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/dbs", "/dbs/AAAAAA==/colls"} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a bound, far past a loaded machine's 401
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, strings.NewReader(`{"id":"x"}`))
		req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
		req.Header.Set("Authorization", "type%3Dmaster%26ver%3D1.0%26sig%3DAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA%3D")
		resp, err := srv.Client().Do(req)
		cancel()
		if err != nil {
			t.Fatalf("POST %s with a forged signature: %v (held, not refused)", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s with a forged signature: %d, want 401", path, resp.StatusCode)
		}
	}
}

// lapsingCatalog is a shared catalog backend that confirms it is current
// until stale is set, and then fails at once, as a node's copy that lapsed
// behind changes it cannot confirm.
type lapsingCatalog struct {
	catalog.Backend
	stale *atomic.Bool
}

func (lapsingCatalog) Lock(context.Context) (func(), error) { return func() {}, nil }
func (lapsingCatalog) Sync(context.Context) error           { return nil }
func (c lapsingCatalog) Current(context.Context) error {
	if c.stale.Load() {
		return catalog.ErrStale
	}
	return nil
}
func (lapsingCatalog) Written() int64                          { return 0 }
func (lapsingCatalog) Propagated(context.Context, int64) error { return nil }

// TestSessionReadNeedsCurrentCatalog: on a cluster node, a session read
// carrying a session token is served only through a catalog confirmed
// current, as writes and Strong reads are: a node paused while a container
// was deleted and created again served the deleted container's items to
// a token of the new one (a cluster hunt: tokens name ranges and LSNs,
// which both containers have). A session read without a token, and an
// Eventual read with one, read the copy the node has.
func TestSessionReadNeedsCurrentCatalog(t *testing.T) {
	key, _ := auth.DecodeKey(testKey)
	var stale atomic.Bool
	srv := httptest.NewServer(newTestAPIMeta(t, Config{Replicated: true, Consistency: "Session"}, func(l *replica.Local) replica.Host { return l },
		auth.Config{MasterKey: key}, func(b catalog.Backend) catalog.Backend { return lapsingCatalog{b, &stale} }))
	t.Cleanup(srv.Close)
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	do(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"k","partitionKey":{"paths":["/pk"]}}`)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	resp, body := do(t, srv, http.MethodPost, "/dbs/db/colls/k/docs", pk, `{"id":"x","pk":"a"}`)
	token := resp.Header.Get("x-ms-session-token")
	if resp.StatusCode != http.StatusCreated || token == "" {
		t.Fatalf("create: %d %s, session token %q", resp.StatusCode, body, token)
	}
	stale.Store(true)
	for _, tc := range []struct {
		level, token string
		want         int
	}{
		{"Session", token, http.StatusServiceUnavailable},
		{"Session", "", http.StatusOK},
		{"Eventual", token, http.StatusOK},
	} {
		hdr := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`, "x-ms-consistency-level": tc.level}
		if tc.token != "" {
			hdr["x-ms-session-token"] = tc.token
		}
		if resp, body := do(t, srv, http.MethodGet, "/dbs/db/colls/k/docs/x", hdr, ""); resp.StatusCode != tc.want {
			t.Errorf("read at %s with token %q through a lapsed catalog: %d %s, want %d", tc.level, tc.token, resp.StatusCode, body, tc.want)
		}
	}
}
