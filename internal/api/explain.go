package api

import (
	"encoding/json"
	"net/http"

	"github.com/partitadb/partita/internal/engine"
)

// hdrQueryPlan carries, when the client asks for query metrics
// (x-ms-documentdb-populatequerymetrics), the physical plan the page ran
// (docs/query-plan.md): its JSON, URI-encoded like the index metrics. It is
// Partita's own; the SDKs ignore it.
const hdrQueryPlan = "x-partita-query-plan"

// setQueryPlan sets hdrQueryPlan for query page p.
func setQueryPlan(w http.ResponseWriter, p engine.Page) {
	// MarshalJSON directly: json.Marshal would only check and copy what it
	// returns (the Go SDK asks for query metrics on every page).
	if b, err := p.Metrics.Plan.MarshalJSON(); err == nil {
		setHeader(w, hdrQueryPlan, string(appendURIComponent(make([]byte, 0, len(b)*2), string(b))))
	}
}

// explainQuery serves POST /_partita/dbs/{db}/colls/{coll}/explain: the
// physical plan a page of the query in the body (a query specification, as
// for a query) would run, with the scope and continuation of the request's
// headers as for a query, without running it:
//
//	{"plan": {"access": "index-merge", "path": "/n", …}, "text": "access: index-merge on /n\n…"}
//
// Like the other administrative endpoints it needs the master key.
func (h *Handler) explainQuery(w http.ResponseWriter, r *http.Request) error {
	q, sc, err := queryRequest(r)
	if err != nil {
		return err
	}
	p, err := h.eng.ExplainQuery(r.Context(), r.PathValue("db"), r.PathValue("coll"), sc, q)
	if err != nil {
		return err
	}
	pj, err := json.Marshal(p)
	if err != nil {
		return err
	}
	body, err := json.Marshal(struct {
		Plan json.RawMessage `json:"plan"`
		Text string          `json:"text"`
	}{pj, p.String()})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, body)
}
