package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
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
