package server

import (
	"net/http"
	"strings"

	"github.com/partitadb/partita/internal/explorer"
)

// withExplorer returns api with the Data Explorer (package explorer) in
// front of it: requests for paths under /_explorer/ go to the explorer,
// unauthenticated as the emulator serves them, and every other request to
// api. A plain prefix test rather than a ServeMux, which would clean and
// redirect the API's paths (ids may contain "..", "//" or trailing dots).
func withExplorer(api http.Handler, certPEM []byte) http.Handler {
	ex := explorer.New(explorer.Config{CertPEM: certPEM})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; strings.HasPrefix(p, explorer.Prefix) || p == strings.TrimSuffix(explorer.Prefix, "/") {
			ex.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
