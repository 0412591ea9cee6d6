package api

import (
	"net/http"

	"github.com/partitadb/partita/internal/throughput"
)

// queryPlan serves a query plan request on POST …/docs
// (x-ms-cosmos-is-query-plan-request, protocol doc §6.3): the JSON of the
// query's partitioned execution info, which the JS SDK follows when the
// gateway refuses a cross-partition query with 400/1004.
func (h *Handler) queryPlan(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	db, coll := r.PathValue("db"), r.PathValue("coll")
	body, err := h.eng.QueryPlan(r.Context(), db, coll, q)
	if err != nil {
		return err
	}
	h.setContentPath(w, db, coll)
	setCharge(w, throughput.MinimumCost())
	return writeJSON(w, http.StatusOK, body)
}
