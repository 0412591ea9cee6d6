package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
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
