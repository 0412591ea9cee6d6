package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestCosmosCaseWriter: a forwarded response's headers, which Go's HTTP
// client hands over canonicalised, go out with Cosmos DB's lowercase names
// as setHeader writes them (the Python SDK looks some up case-sensitively).
func TestCosmosCaseWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	w := cosmosCaseWriter{rec}
	h := w.Header()
	h.Set("X-Ms-Session-Token", "0:-1#5")
	h.Set("Etag", `"1"`)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	want := http.Header{"x-ms-session-token": {"0:-1#5"}, "etag": {`"1"`}, "Content-Type": {"application/json"}}
	got := rec.Result().Header
	if len(got) != len(want) {
		t.Fatalf("headers %v, want %v", got, want)
	}
	for k, v := range want {
		if len(got[k]) != 1 || got[k][0] != v[0] {
			t.Fatalf("headers %v, want %v", got, want)
		}
	}
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d", rec.Code)
	}
}
