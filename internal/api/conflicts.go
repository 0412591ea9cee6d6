package api

import (
	"net/http"

	"github.com/partitadb/partita/internal/status"
)

// listConflicts serves GET and query POST …/colls/{coll}/conflicts: the
// conflicts feed, empty on a single-region account (engine.Conflicts).
func (h *Handler) listConflicts(w http.ResponseWriter, r *http.Request) error {
	items, rid, err := h.eng.Conflicts(r.PathValue("db"), r.PathValue("coll"))
	if err != nil {
		return err
	}
	return h.listOrQuery(w, r, rid, "Conflicts", items)
}

// conflict serves GET and DELETE …/conflicts/{id}: 404, there being none.
func (h *Handler) conflict(_ http.ResponseWriter, r *http.Request) error {
	return h.eng.Conflict(r.PathValue("db"), r.PathValue("coll"), r.PathValue("id"))
}

// createConflict answers a POST to the conflicts feed that is not a query:
// conflicts are recorded by the service, never created by clients.
func (h *Handler) createConflict(http.ResponseWriter, *http.Request) error {
	return status.New(http.StatusMethodNotAllowed, "conflicts are recorded by the service; they cannot be created")
}
