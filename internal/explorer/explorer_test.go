package explorer_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/explorer"
)

// TestHandler: what the explorer serves without a browser. The page and
// its assets with their types and a strict Content-Security-Policy; the
// certificate when there is one; JSON errors for other methods, unknown
// paths and path tricks; /_explorer redirected to /_explorer/.
func TestHandler(t *testing.T) {
	withCert := explorer.New(explorer.Config{CertPEM: []byte("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")})
	noCert := explorer.New(explorer.Config{})
	tests := []struct {
		name        string
		h           http.Handler
		method      string
		path        string
		code        int
		contentType string // prefix
		body        string // substring
	}{
		{"page", withCert, "GET", "/_explorer/", 200, "text/html", "Partita Data Explorer"},
		{"index.html", withCert, "GET", "/_explorer/index.html", 200, "text/html", `<script type="module" src="js/app.js">`},
		{"head", withCert, "HEAD", "/_explorer/index.html", 200, "text/html", ""},
		{"script", withCert, "GET", "/_explorer/js/cosmos.js", 200, "text/javascript", "HMAC"},
		{"style", withCert, "GET", "/_explorer/app.css", 200, "text/css", ".epk-bar"},
		{"certificate", withCert, "GET", "/_explorer/emulator.pem", 200, "application/x-pem-file", "BEGIN CERTIFICATE"},
		{"no certificate without TLS", noCert, "GET", "/_explorer/emulator.pem", 404, "application/json", `"message"`},
		{"unknown file", withCert, "GET", "/_explorer/other.js", 404, "application/json", `"code":"NotFound"`},
		{"directory", withCert, "GET", "/_explorer/js/", 404, "application/json", `"message"`},
		{"dot-dot", withCert, "GET", "/_explorer/js/../../go.mod", 404, "application/json", `"message"`},
		{"post", withCert, "POST", "/_explorer/index.html", 405, "application/json", `"code":"MethodNotAllowed"`},
		{"no slash", withCert, "GET", "/_explorer", 301, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "https://localhost:8081"+tt.path, nil)
			req.URL.Path = tt.path // as sent, uncleaned
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			resp := rec.Result()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.code || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.contentType) || !strings.Contains(string(body), tt.body) {
				t.Fatalf("%s %s = %d %q %.200q, want %d %q containing %q", tt.method, tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), body, tt.code, tt.contentType, tt.body)
			}
			if tt.code == 200 && strings.HasPrefix(tt.contentType, "text/") {
				if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
					t.Errorf("Content-Security-Policy = %q, want the page confined to its origin", csp)
				}
			}
			if tt.code == 301 && resp.Header.Get("Location") != explorer.Prefix {
				t.Errorf("Location = %q, want %q", resp.Header.Get("Location"), explorer.Prefix)
			}
		})
	}
}
