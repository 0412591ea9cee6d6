package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
)

// preferMinimal reports whether the client asked for no body on writes.
func preferMinimal(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Prefer")), "return=minimal")
}

func itemRef(r *http.Request) engine.ItemRef {
	return engine.ItemRef{DB: r.PathValue("db"), Container: r.PathValue("coll"), ID: r.PathValue("id")}
}

// writeItem writes an item operation's result.
func (h *Handler) writeItem(w http.ResponseWriter, r *http.Request, code int, res engine.Result) error {
	hd := w.Header()
	if res.ETag != "" {
		hd.Set("etag", res.ETag)
	}
	hd.Set("x-ms-session-token", res.Session)
	if rid, err := h.eng.ContainerRID(r.PathValue("db"), r.PathValue("coll")); err == nil {
		hd.Set("x-ms-content-path", rid)
		hd.Set("x-ms-alt-content-path", "dbs/"+r.PathValue("db")+"/colls/"+r.PathValue("coll"))
	}
	setCharge(w, res.RU)
	body := res.Body
	if code == http.StatusNoContent || code == http.StatusNotModified || (r.Method != http.MethodGet && preferMinimal(r)) {
		body = nil
	}
	if body == nil {
		hd.Set("Content-Length", "0")
		w.WriteHeader(code)
		return nil
	}
	return writeJSON(w, code, body)
}

// postItems serves POST …/docs: a query plan request, a query, a batch, or
// an item create/upsert, in that order (protocol doc §6.1).
func (h *Handler) postItems(w http.ResponseWriter, r *http.Request) error {
	switch {
	case isTrue(r, hdrIsPlan):
		return h.queryPlan(w, r)
	case isQuery(r):
		return h.queryItems(w, r)
	case isTrue(r, hdrIsBatch):
		return h.batch(w, r)
	}
	pk, err := partitionKey(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	kind := engine.Create
	if isTrue(r, hdrIsUpsert) {
		kind = engine.Upsert
	}
	res, err := h.eng.WriteItem(r.Context(), engine.Write{
		DB: r.PathValue("db"), Container: r.PathValue("coll"), Kind: kind, PK: pk, Body: body, IfMatch: r.Header.Get("If-Match"),
		Triggers: triggerSet(r),
	})
	if err != nil {
		return err
	}
	code := http.StatusOK
	if res.Created {
		code = http.StatusCreated
	}
	return h.writeItem(w, r, code, res)
}

func (h *Handler) replaceItem(w http.ResponseWriter, r *http.Request) error {
	pk, err := partitionKey(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ref := itemRef(r)
	res, err := h.eng.WriteItem(r.Context(), engine.Write{
		DB: ref.DB, Container: ref.Container, ID: ref.ID, Kind: engine.Replace, PK: pk, Body: body, IfMatch: r.Header.Get("If-Match"),
		Triggers: triggerSet(r),
	})
	if err != nil {
		return err
	}
	return h.writeItem(w, r, http.StatusOK, res)
}

func (h *Handler) patchItem(w http.ResponseWriter, r *http.Request) error {
	pk, err := partitionKey(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	res, err := h.eng.PatchItem(r.Context(), itemRef(r), pk, body, r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	return h.writeItem(w, r, http.StatusOK, res)
}

func (h *Handler) readItem(w http.ResponseWriter, r *http.Request) error {
	pk, err := partitionKey(r)
	if err != nil {
		return err
	}
	res, err := h.eng.ReadItem(r.Context(), itemRef(r), pk, r.Header.Get("If-None-Match"))
	if err != nil {
		return err
	}
	if res.Body == nil {
		return h.writeItem(w, r, http.StatusNotModified, res)
	}
	return h.writeItem(w, r, http.StatusOK, res)
}

func (h *Handler) deleteItem(w http.ResponseWriter, r *http.Request) error {
	pk, err := partitionKey(r)
	if err != nil {
		return err
	}
	res, err := h.eng.DeleteItem(r.Context(), itemRef(r), pk, r.Header.Get("If-Match"), triggerSet(r))
	if err != nil {
		return err
	}
	return h.writeItem(w, r, http.StatusNoContent, res)
}

// readFeed serves GET …/docs: all items of the scope, paged.
func (h *Handler) readFeed(w http.ResponseWriter, r *http.Request) error {
	if r.Header.Get(hdrAIM) != "" {
		return status.NotSupported("the change feed (A-IM: " + r.Header.Get(hdrAIM) + ")")
	}
	sc, err := scope(r)
	if err != nil {
		return err
	}
	n, err := maxItemCount(r)
	if err != nil {
		return err
	}
	p, err := h.eng.ReadFeed(r.Context(), r.PathValue("db"), r.PathValue("coll"), sc, n, r.Header.Get(hdrContinuation))
	if err != nil {
		return err
	}
	w.Header().Set("x-ms-content-path", p.ContainerRID)
	return writeFeed(w, p.ContainerRID, "Documents", p)
}

func (h *Handler) queryItems(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	sc, err := scope(r)
	if err != nil {
		return err
	}
	p, err := h.eng.QueryItems(r.Context(), r.PathValue("db"), r.PathValue("coll"), sc, q)
	if err != nil {
		return err
	}
	hd := w.Header()
	hd.Set("x-ms-content-path", p.ContainerRID)
	if isTrue(r, hdrQueryMetrics) {
		size := 0
		for _, it := range p.Items {
			size += len(it)
		}
		// Only the total is measured today; the phases are not timed separately.
		hd.Set("x-ms-documentdb-query-metrics", fmt.Sprintf(
			"totalExecutionTimeInMs=%.2f;queryCompileTimeInMs=0.00;queryLogicalPlanBuildTimeInMs=0.00;queryPhysicalPlanBuildTimeInMs=0.00;"+
				"queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs=0.00;indexLookupTimeInMs=0.00;documentLoadTimeInMs=0.00;"+
				"systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount=%d;retrievedDocumentSize=0;"+
				"outputDocumentCount=%d;outputDocumentSize=%d;writeOutputTimeInMs=0.00;indexUtilizationRatio=0.00",
			float64(p.Elapsed.Microseconds())/1000, p.Loaded, len(p.Items), size))
	}
	if isTrue(r, hdrIndexMetrics) || isTrue(r, hdrIndexMetricsV2) {
		hd.Set("x-ms-cosmos-index-utilization", base64.StdEncoding.EncodeToString(
			[]byte(`{"UtilizedSingleIndexes":[],"PotentialSingleIndexes":[],"UtilizedCompositeIndexes":[],"PotentialCompositeIndexes":[]}`)))
	}
	return writeFeed(w, p.ContainerRID, "Documents", p)
}
