package api

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResponseHeadersOneWriter: response headers are written only through
// setHeader (headers.go), which sends Cosmos DB's own in lowercase; a
// handler touching the header map directly would send them canonicalised
// on HTTP/1.1.
func TestResponseHeadersOneWriter(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "headers.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "Header()") {
				t.Errorf("%s:%d: %s: write response headers with setHeader", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

func TestSetHeader(t *testing.T) {
	w := httptest.NewRecorder()
	w.Header().Set("X-Ms-Continuation", "stale") // as http.Header.Set would have stored it
	setHeader(w, "x-ms-continuation", "tok")
	setHeader(w, "ETag", `"1"`)
	setHeader(w, "content-type", "application/json")
	want := http.Header{"x-ms-continuation": {"tok"}, "etag": {`"1"`}, "Content-Type": {"application/json"}}
	if len(w.Header()) != len(want) {
		t.Fatalf("header map %v, want %v", w.Header(), want)
	}
	for k, v := range want {
		if got := w.Header()[k]; len(got) != 1 || got[0] != v[0] {
			t.Errorf("header %q = %q, want %q (map %v)", k, got, v, w.Header())
		}
	}
	if got := responseHeader(w, "X-MS-CONTINUATION"); got != "tok" {
		t.Errorf("responseHeader = %q, want tok", got)
	}
}

func TestURIComponentEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":"b c"}`, "%7B%22a%22%3A%22b%20c%22%7D"},
		{"/x/?", "%2Fx%2F%3F"},
		{"a-b_c.d~e", "a-b_c.d~e"},
		{"é+", "%C3%A9%2B"},
	}
	for _, tt := range tests {
		if got := uriComponentEscape(tt.in); got != tt.want {
			t.Errorf("uriComponentEscape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
