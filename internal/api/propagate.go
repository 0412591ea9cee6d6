package api

import (
	"net/http"
)

// propagated wraps fn, a handler that changes the catalog (a database,
// container, script, user, permission or offer; a partition key delete; a
// split), so that in a cluster it is answered only once what it changed
// can be missed by no node's current catalog (engine.CatalogPropagated): a
// write or a Strong read through any node that begins after the answer
// sees it (docs/cluster.md, "Catalog changes every node has seen"). The
// answer, small, is held meanwhile. A request that changed the catalog
// and then failed (a partition key delete recorded, then its first
// deletions refused) waits too; one that changed nothing is answered at
// once.
func (h *Handler) propagated(fn handlerFunc) handlerFunc {
	if !h.cfg.Replicated {
		return fn
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		mark := h.eng.CatalogMark()
		held := &heldWriter{header: http.Header{}}
		ferr := fn(held, r)
		if err := h.eng.CatalogPropagated(r.Context(), mark); err != nil {
			return err // the client has gone: writeError answers nothing
		}
		if ferr != nil {
			return ferr
		}
		if held.code == 0 {
			held.code = http.StatusOK
		}
		held.copyHeaders(w)
		w.WriteHeader(held.code)
		if held.body.Len() == 0 {
			return nil // HTTP/2 refuses even an empty write after a 204
		}
		if _, err := w.Write(held.body.Bytes()); err != nil {
			return &undelivered{err}
		}
		return nil
	}
}
