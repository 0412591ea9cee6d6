package api

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/partitadb/partita/internal/status"
)

// The Cosmos DB emulator serves a few web paths besides the API, without
// authentication, which scripts and people use: /_explorer/emulator.pem
// (its certificate, which setup scripts download to trust it) and
// /_explorer/index.html (the Data Explorer, which readiness checks poll).
// partita serve puts package explorer (the Data Explorer itself) in front
// of this handler for these paths (server.withExplorer); what follows is
// the fallback of a Handler served alone, which answers them the same way
// minus the page.
const explorerPrefix = "/_explorer/"

// explorer serves GET and HEAD under /_explorer/: the certificate, a page
// saying the Data Explorer is not available, and 404 for anything else. It
// needs no authentication and reads no data.
func (h *Handler) explorer(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return status.Newf(http.StatusMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path)
	}
	switch strings.TrimPrefix(r.URL.Path, explorerPrefix) {
	case "emulator.pem":
		if len(h.cfg.CertPEM) == 0 {
			return status.New(http.StatusNotFound, "this server does not serve TLS, so it has no certificate to download")
		}
		setHeader(w, "Content-Type", "application/x-pem-file")
		return writeBody(w, http.StatusOK, h.cfg.CertPEM)
	case "", "index.html":
		var b strings.Builder
		_ = explorerPage.Execute(&b, struct{ Host string }{r.Host})
		setHeader(w, "Content-Type", "text/html; charset=utf-8")
		return writeBody(w, http.StatusOK, []byte(b.String()))
	}
	return status.Newf(http.StatusNotFound, "no resource at %s %s: under %s this server serves only emulator.pem and index.html", r.Method, r.URL.Path, explorerPrefix)
}

var explorerPage = template.Must(template.New("explorer").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Partita</title></head>
<body>
<h1>Partita</h1>
<p>This is Partita, a Cosmos DB-compatible database, serving the Cosmos DB NoSQL API at
<code>https://{{.Host}}/</code>.</p>
<p>The Cosmos DB emulator's Data Explorer is not available here (yet). Use an SDK, or a tool that
speaks the Cosmos DB API, with this endpoint and the emulator's well-known key (or the key the server
was started with).</p>
<p>The server's TLS certificate, to trust it: <a href="/_explorer/emulator.pem">/_explorer/emulator.pem</a>.</p>
</body>
</html>
`))
