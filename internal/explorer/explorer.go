// Package explorer owns Partita's Data Explorer: the web page served at
// /_explorer/ (as the Cosmos DB emulator serves its own there), its
// embedded static assets, and the emulator's unauthenticated certificate
// download, /_explorer/emulator.pem.
//
// It has no data access of its own. The page is plain HTML, CSS and ES
// modules (assets/, embedded with go:embed, no build step and no network
// at run time); it signs every call to the Cosmos DB API in the browser
// with the account key the user typed (HMAC-SHA256 through WebCrypto), so
// it can do exactly what that key can do through any SDK, and nothing
// else. docs/explorer.md describes the page and why it is built this way.
package explorer

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Prefix is the URL path under which Handler serves.
const Prefix = "/_explorer/"

//go:embed assets
var assets embed.FS

// Config configures Handler.
type Config struct {
	// CertPEM is the server's TLS certificate, served at
	// /_explorer/emulator.pem; nil without TLS (that path is then 404).
	CertPEM []byte
}

// Handler serves GET and HEAD under Prefix: the page (index.html, also
// for Prefix itself), its assets and emulator.pem. Other methods get 405
// and unknown paths 404, with a Cosmos-style JSON error body. It needs no
// authentication and reads no data. It is safe for concurrent use.
type Handler struct {
	cfg   Config
	files http.Handler
}

// New returns the explorer's handler.
func New(cfg Config) *Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	return &Handler{cfg: cfg, files: http.FileServerFS(sub)}
}

// contentSecurityPolicy lets the page load only its own scripts, styles
// and images and talk only to its own origin: a key typed into it can go
// nowhere else, and injected markup cannot run script.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP serves one request under Prefix (see Handler).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" is not allowed on "+r.URL.Path)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, Prefix)
	switch {
	case r.URL.Path == strings.TrimSuffix(Prefix, "/"):
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	case name == "emulator.pem":
		if len(h.cfg.CertPEM) == 0 {
			writeError(w, http.StatusNotFound, "NotFound", "this server does not serve TLS, so it has no certificate to download")
			return
		}
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Header().Set("Content-Disposition", `attachment; filename="emulator.pem"`)
		_, _ = w.Write(h.cfg.CertPEM)
		return
	case name == "":
		name = "index.html"
	}
	if path.Clean("/"+name) != "/"+name || !exists(name) {
		writeError(w, http.StatusNotFound, "NotFound", "no resource at "+r.URL.Path+": the Data Explorer is at "+Prefix)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache") // assets change with the binary; revalidation is cheap on loopback
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + name
	if name == "index.html" {
		// FileServer redirects /index.html to ./; serve the file itself.
		r2.URL.Path = "/"
	}
	h.files.ServeHTTP(w, r2)
}

// exists reports whether name is a regular file among the assets.
func exists(name string) bool {
	st, err := fs.Stat(assets, "assets/"+name)
	return err == nil && !st.IsDir()
}

// writeError writes a Cosmos-style error body ({"code","message"}), as the
// API does, so that scripts polling these paths read errors one way.
func writeError(w http.ResponseWriter, code int, name, msg string) {
	b, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{name, msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
