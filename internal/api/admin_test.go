package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/replica"
)

// TestClusterStatusDigest: GET /_partita/cluster asks its ClusterStatus for
// digests only with x-partita-cluster-digest true and for every member's
// view only with x-partita-cluster-all true, and refuses a value that is
// not a boolean; a single node answers 404.
func TestClusterStatusDigest(t *testing.T) {
	if resp, body := do(t, newTestHandler(t, Config{}), http.MethodGet, "/_partita/cluster", nil, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a single node's cluster status: %d %s, want 404", resp.StatusCode, body)
	}
	asked := 0
	srv := newTestHandler(t, Config{ClusterStatus: func(_ context.Context, digest, all bool) (any, error) {
		asked++
		return map[string]bool{"digest": digest, "all": all}, nil
	}})
	tests := []struct {
		digest, all string // "" sends no header
		code        int
		want        string
	}{
		{"", "", http.StatusOK, `{"all":false,"digest":false}`},
		{"true", "", http.StatusOK, `{"all":false,"digest":true}`},
		{"1", "", http.StatusOK, `{"all":false,"digest":true}`},
		{"false", "", http.StatusOK, `{"all":false,"digest":false}`},
		{"", "true", http.StatusOK, `{"all":true,"digest":false}`},
		{"true", "1", http.StatusOK, `{"all":true,"digest":true}`},
		{"yes", "", http.StatusBadRequest, hdrClusterDigest + `: \"yes\": want true or false`},
		{"", "all", http.StatusBadRequest, hdrClusterAll + `: \"all\": want true or false`},
	}
	for _, tt := range tests {
		hdr := map[string]string{}
		if tt.digest != "" {
			hdr[hdrClusterDigest] = tt.digest
		}
		if tt.all != "" {
			hdr[hdrClusterAll] = tt.all
		}
		resp, body := do(t, srv, http.MethodGet, "/_partita/cluster", hdr, "")
		if resp.StatusCode != tt.code || !strings.Contains(string(body), tt.want) {
			t.Errorf("digest %q, all %q: %d %s, want %d with %s", tt.digest, tt.all, resp.StatusCode, body, tt.code, tt.want)
		}
	}
	if asked != 6 {
		t.Errorf("ClusterStatus called %d times, want 6 (not for the refused headers)", asked)
	}
}

// TestClusterStatusDigestNeedsMaster: a digest scans every keyspace of
// every member, uncharged, so only read-write access may ask for one; the
// read-only key still reads the status, every member's view included (a
// security review found the read-only key could have every member scan
// all its data, as often as it liked).
func TestClusterStatusDigestNeedsMaster(t *testing.T) {
	const readOnly = "cmVhZC1vbmx5LWtleS1mb3ItdGVzdHMtb25seS0xMjM0NTY3ODkwYWJjZGVm"
	master, _ := auth.DecodeKey(testKey)
	ro, _ := auth.DecodeKey(readOnly)
	asked := 0
	h := newTestAPIAuth(t, Config{ClusterStatus: func(_ context.Context, digest, all bool) (any, error) {
		asked++
		return map[string]bool{"digest": digest, "all": all}, nil
	}}, func(l *replica.Local) replica.Host { return l }, auth.Config{MasterKey: master, ReadOnlyKey: ro})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		signer string
		hdr    map[string]string
		code   int
	}{
		{readOnly, nil, http.StatusOK},
		{readOnly, map[string]string{hdrClusterAll: "true"}, http.StatusOK},
		{readOnly, map[string]string{hdrClusterDigest: "true"}, http.StatusForbidden},
		{readOnly, map[string]string{hdrClusterDigest: "true", hdrClusterAll: "true"}, http.StatusForbidden},
		{testKey, map[string]string{hdrClusterDigest: "true", hdrClusterAll: "true"}, http.StatusOK},
	} {
		resp, body := doAs(t, srv, tt.signer, http.MethodGet, "/_partita/cluster", tt.hdr, "")
		if resp.StatusCode != tt.code {
			t.Errorf("read-only %v, headers %v: %d %s, want %d", tt.signer == readOnly, tt.hdr, resp.StatusCode, body, tt.code)
		}
	}
	if asked != 3 {
		t.Errorf("ClusterStatus called %d times, want 3 (not for the refused digests)", asked)
	}
}
