package api

import (
	"net/http"
)

// propagated wraps fn, a handler that changes the catalog (a database,
// container, script, user, permission or offer; a partition key delete; a
// split), so that in a cluster its success is answered only once the
// change can be missed by no node's current catalog
// (engine.CatalogPropagated): a write or a Strong read through any node
// that begins after the answer sees it (docs/cluster.md, "Catalog changes
// every node has seen"). The answer, small, is held meanwhile. A failure is
// answered at once: nothing changed.
func (h *Handler) propagated(fn handlerFunc) handlerFunc {
	if !h.cfg.Replicated {
		return fn
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		held := &heldWriter{header: http.Header{}}
		if err := fn(held, r); err != nil {
			return err
		}
		if held.code == 0 {
			held.code = http.StatusOK
		}
		if held.code < http.StatusMultipleChoices {
			if err := h.eng.CatalogPropagated(r.Context()); err != nil {
				return err // the client has gone: writeError answers nothing
			}
		}
		held.copyHeaders(w)
		w.WriteHeader(held.code)
		if _, err := w.Write(held.body.Bytes()); err != nil {
			return &undelivered{err}
		}
		return nil
	}
}
