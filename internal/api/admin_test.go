package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestClusterStatusDigest: GET /_partita/cluster asks its ClusterStatus for
// digests only with x-partita-cluster-digest true, and refuses a value
// that is not a boolean; a single node answers 404.
func TestClusterStatusDigest(t *testing.T) {
	if resp, body := do(t, newTestHandler(t, Config{}), http.MethodGet, "/_partita/cluster", nil, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a single node's cluster status: %d %s, want 404", resp.StatusCode, body)
	}
	var asked []bool
	srv := newTestHandler(t, Config{ClusterStatus: func(_ context.Context, digest bool) (any, error) {
		asked = append(asked, digest)
		return map[string]bool{"digest": digest}, nil
	}})
	tests := []struct {
		value string // "" sends no header
		code  int
		want  string
	}{
		{"", http.StatusOK, `{"digest":false}`},
		{"true", http.StatusOK, `{"digest":true}`},
		{"1", http.StatusOK, `{"digest":true}`},
		{"false", http.StatusOK, `{"digest":false}`},
		{"yes", http.StatusBadRequest, "want true or false"},
	}
	for _, tt := range tests {
		var hdr map[string]string
		if tt.value != "" {
			hdr = map[string]string{hdrClusterDigest: tt.value}
		}
		resp, body := do(t, srv, http.MethodGet, "/_partita/cluster", hdr, "")
		if resp.StatusCode != tt.code || !strings.Contains(string(body), tt.want) {
			t.Errorf("%s: %q: %d %s, want %d with %s", hdrClusterDigest, tt.value, resp.StatusCode, body, tt.code, tt.want)
		}
	}
	if len(asked) != 4 {
		t.Errorf("ClusterStatus called %d times, want 4 (not for the refused header)", len(asked))
	}
}
