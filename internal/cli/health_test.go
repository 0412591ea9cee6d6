package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHealth: partita health exits 0 when its URL answers 200 (over TLS
// with a certificate it does not know), 1 on another status or no answer,
// and 2 on bad flags.
func TestHealth(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_explorer/emulator.pem" {
			http.NotFound(w, r)
		}
	}))
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	defer srv.Close()
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"--url", srv.URL + "/_explorer/emulator.pem"}, 0},
		{[]string{"--url", srv.URL + "/other"}, 1},
		{[]string{"--url", deadURL}, 1},
		{[]string{"--bogus"}, 2},
		// An argument it would ignore, and a timeout that can never pass (an operator hunt).
		{[]string{"--url", srv.URL + "/_explorer/emulator.pem", "extra"}, 2},
		{[]string{"--url", srv.URL + "/_explorer/emulator.pem", "--timeout", "0"}, 2},
	}
	for _, tt := range tests {
		if got := healthCmd(t.Context(), tt.args, io.Discard, io.Discard); got != tt.want {
			t.Errorf("partita health %v = %d, want %d", tt.args, got, tt.want)
		}
	}
}
