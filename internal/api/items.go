package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// preferMinimal reports whether the client asked for no body on writes.
func preferMinimal(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Prefer")), "return=minimal")
}

func itemRef(r *http.Request) engine.ItemRef {
	return engine.ItemRef{DB: r.PathValue("db"), Container: r.PathValue("coll"), ID: r.PathValue("id")}
}

// altContentPath is the x-ms-alt-content-path header of a container's
// item and query responses: its link by names, with the bytes a header
// should not carry (controls, and every byte of a non-ASCII character)
// percent-encoded, as .NET's SDK un-escapes the header before it keys
// session tokens by it. Raw UTF-8 is read as Latin-1 by the JavaScript
// and Python SDKs and by .NET's HTTP stack alike, so a non-ASCII name
// never matched the link an SDK keeps tokens by (a bug hunt with the
// Python SDK: no session token sent back); encoded, .NET's matches, and
// the others' matched no better before. ASCII names are left as they are:
// the JavaScript and Python SDKs compare the header unescaped.
func altContentPath(db, coll string) string {
	link := "dbs/" + db + "/colls/" + coll
	clean := true
	for i := 0; i < len(link); i++ {
		if c := link[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return link
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(link)+16)
	for i := 0; i < len(link); i++ {
		// '%' too: the encoded link is un-escaped whole, and "é%41"
		// left so read as "éA" (a protocol hunt).
		if c := link[i]; c < 0x20 || c >= 0x7f || c == '%' {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

// setContentPath sets the headers that name the container a response's
// session token belongs to: x-ms-content-path (its _rid) and
// x-ms-alt-content-path (its link by names). @azure/cosmos files a session
// token only under the container one of them names, and drops it without
// them (sessionContainer.set), so every response of a container's items
// that carries a token carries them: point operations, queries, batches,
// bulk, stored procedures.
func (h *Handler) setContentPath(w http.ResponseWriter, db, coll string) {
	if rid, err := h.eng.ContainerRID(db, coll); err == nil {
		setHeader(w, "x-ms-content-path", rid)
		setHeader(w, "x-ms-alt-content-path", altContentPath(db, coll))
	}
}

// writeItem writes an item operation's result.
func (h *Handler) writeItem(w http.ResponseWriter, r *http.Request, code int, res engine.Result) error {
	if res.ETag != "" {
		setHeader(w, "etag", res.ETag)
	}
	setHeader(w, "x-ms-session-token", res.Session)
	h.setContentPath(w, r.PathValue("db"), r.PathValue("coll"))
	setCharge(w, res.RU)
	body := res.Body
	if code == http.StatusNoContent || code == http.StatusNotModified || (r.Method != http.MethodGet && preferMinimal(r)) {
		body = nil
	}
	if body == nil {
		setHeader(w, "Content-Length", "0")
		w.WriteHeader(code)
		return nil
	}
	return writeJSON(w, code, body)
}

// indexingDirective checks a write's x-ms-indexing-directive. Default and
// Include index the item as the container's policy says, which is what
// every write does; Exclude, an item kept out of the index and so out of
// every query's results, is not supported: 400 rather than an item that
// queries find.
func indexingDirective(r *http.Request) error {
	v := strings.TrimSpace(headerValue(r.Header, hdrIndexingDirective))
	switch {
	case v == "", v == "0", strings.EqualFold(v, "Default"), strings.EqualFold(v, "Include"):
		// "0": Default as Python's 3.x SDK sends it, by number.
		return nil
	case strings.EqualFold(v, "Exclude"):
		return status.BadRequest("%s: Exclude is not supported: every item is indexed as the container's indexing policy says (Default or Include)", hdrIndexingDirective)
	case v == "1", v == "2":
		// Python's 3.x SDK numbers Exclude 1 and Include 2, .NET's enum the
		// other way round: a number other than Default's is not guessed at.
		return status.BadRequest("%s %q: a numbered directive other than 0 (Default) is ambiguous (SDKs number Include and Exclude differently); send Default, Include or Exclude", hdrIndexingDirective, v)
	}
	return status.BadRequest("%s %q is invalid: it must be Default, Include or Exclude", hdrIndexingDirective, v)
}

// queryItemsOrPlan serves the reads of POST …/docs: a query plan request or
// a query, in that order (protocol doc §6.1).
func (h *Handler) queryItemsOrPlan(w http.ResponseWriter, r *http.Request) error {
	if isTrue(r, hdrIsPlan) {
		return h.queryPlan(w, r)
	}
	return h.queryItems(w, r)
}

// postItems serves the writes of POST …/docs: a batch, or an item create or
// upsert.
func (h *Handler) postItems(w http.ResponseWriter, r *http.Request) error {
	if err := indexingDirective(r); err != nil {
		return err
	}
	if isTrue(r, hdrIsBatch) {
		if err := noTriggers(r, "a batch"); err != nil {
			return err
		}
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
	if err := indexingDirective(r); err != nil {
		return err
	}
	pk, err := partitionKey(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ref, err := h.itemRefOf(r, pk, true)
	if err != nil {
		return err
	}
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
	if err := noTriggers(r, "a patch"); err != nil {
		return err
	}
	pk, err := partitionKey(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ref, err := h.itemRefOf(r, pk, true)
	if err != nil {
		return err
	}
	res, err := h.eng.PatchItem(r.Context(), ref, pk, body, r.Header.Get("If-Match"))
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
	if h.forwardRead(w, r, engine.Scope{PK: pk}) {
		return nil
	}
	if r, err = h.checkRead(r); err != nil {
		return err
	}
	ref, err := h.itemRefOf(r, pk, false)
	if err != nil {
		return err
	}
	res, err := h.eng.ReadItem(r.Context(), ref, pk, r.Header.Get("If-None-Match"))
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
	ref, err := h.itemRefOf(r, pk, true)
	if err != nil {
		return err
	}
	res, err := h.eng.DeleteItem(r.Context(), ref, pk, r.Header.Get("If-Match"), triggerSet(r))
	if err != nil {
		return err
	}
	return h.writeItem(w, r, http.StatusNoContent, res)
}

// readFeed serves GET …/docs: all items of the scope, paged.
func (h *Handler) readFeed(w http.ResponseWriter, r *http.Request) error {
	sc, err := scope(r)
	if err != nil {
		return err
	}
	if h.forwardRead(w, r, sc) {
		return nil
	}
	if r, err = h.checkRead(r); err != nil {
		return err
	}
	if r.Header.Get(hdrAIM) != "" {
		return h.changeFeed(w, r)
	}
	n, err := maxItemCount(r)
	if err != nil {
		return err
	}
	p, err := h.eng.ReadFeed(r.Context(), r.PathValue("db"), r.PathValue("coll"), sc, n, r.Header.Get(hdrContinuation))
	if err != nil {
		return err
	}
	setHeader(w, "x-ms-content-path", p.ContainerRID)
	return h.writeFeed(w, p.ContainerRID, "Documents", p)
}

func (h *Handler) queryItems(w http.ResponseWriter, r *http.Request) error {
	q, sc, err := queryRequest(r)
	if err != nil {
		return err
	}
	if h.forwardRead(w, r, sc) {
		return nil
	}
	if r, err = h.checkRead(r); err != nil {
		return err
	}
	p, err := h.eng.QueryItems(r.Context(), r.PathValue("db"), r.PathValue("coll"), sc, q)
	if err != nil {
		return err
	}
	setHeader(w, "x-ms-content-path", p.ContainerRID)
	if isTrue(r, hdrQueryMetrics) {
		setHeader(w, "x-ms-documentdb-query-metrics", queryMetrics(p))
		setQueryPlan(w, p)
	}
	switch {
	case isTrue(r, hdrIndexMetricsV2):
		// Current SDKs (JS 4.x, .NET, Java, Python 4.x) ask with -V2 and
		// decode the JSON with decodeURIComponent; the Go SDK asks without
		// and decodes base64.
		setHeader(w, "x-ms-cosmos-index-utilization", uriComponentEscape(string(indexUtilization(p.Metrics.IndexPath))))
	case isTrue(r, hdrIndexMetrics):
		setHeader(w, "x-ms-cosmos-index-utilization", base64.StdEncoding.EncodeToString(indexUtilization(p.Metrics.IndexPath)))
	}
	return h.writeFeed(w, p.ContainerRID, "Documents", p)
}

// queryRequest reads a query request: the query in its body and the scope
// of its headers.
func queryRequest(r *http.Request) (engine.Query, engine.Scope, error) {
	q, err := parseQuery(r)
	if err != nil {
		return engine.Query{}, engine.Scope{}, err
	}
	sc, err := scope(r)
	return q, sc, err
}

// queryMetrics formats a query page's metrics as Cosmos DB's
// x-ms-documentdb-query-metrics header. Partita measures compile, load
// (index and documents together) and total time; evaluation is the rest.
// (Appended rather than formatted with fmt: the Go SDK asks for it on
// every page.)
func queryMetrics(p engine.Page) string {
	size := 0
	for _, it := range p.Items {
		size += len(it)
	}
	ms := func(b []byte, d time.Duration) []byte {
		return strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', 2, 64)
	}
	m := p.Metrics
	vm := max(0, p.Elapsed-m.Compile-m.Load)
	ratio := 0.0
	if p.Loaded > 0 {
		ratio = min(1, float64(len(p.Items))/float64(p.Loaded))
	}
	b := make([]byte, 0, 512)
	b = append(b, "totalExecutionTimeInMs="...)
	b = ms(b, p.Elapsed)
	b = append(b, ";queryCompileTimeInMs="...)
	b = ms(b, m.Compile)
	b = append(b, ";queryLogicalPlanBuildTimeInMs=0.00;queryPhysicalPlanBuildTimeInMs=0.00;queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs="...)
	b = ms(b, vm)
	b = append(b, ";indexLookupTimeInMs=0.00;documentLoadTimeInMs="...)
	b = ms(b, m.Load)
	b = append(b, ";systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount="...)
	b = strconv.AppendInt(b, int64(p.Loaded), 10)
	b = append(b, ";retrievedDocumentSize="...)
	b = strconv.AppendInt(b, int64(m.LoadedBytes), 10)
	b = append(b, ";outputDocumentCount="...)
	b = strconv.AppendInt(b, int64(len(p.Items)), 10)
	b = append(b, ";outputDocumentSize="...)
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, ";writeOutputTimeInMs=0.00;indexUtilizationRatio="...)
	b = strconv.AppendFloat(b, ratio, 'f', 2, 64)
	return string(b)
}

// indexUtilization is the JSON of Cosmos DB's index metrics: the single
// index a lookup used, if any.
func indexUtilization(path string) []byte {
	used := []any{}
	if path != "" {
		used = append(used, map[string]any{"FilterExpression": "", "IndexSpec": path, "FilterPreciseSet": true,
			"IndexPreciseSet": true, "IndexImpactScore": "High"})
	}
	b, _ := json.Marshal(map[string]any{"UtilizedSingleIndexes": used, "PotentialSingleIndexes": []any{},
		"UtilizedCompositeIndexes": []any{}, "PotentialCompositeIndexes": []any{}})
	return b
}

// deletePartition serves POST …/colls/{coll}/operations/partitionkeydelete:
// delete every item of the logical partition the partition key header
// names (the SDKs' deleteAllItemsForPartitionKey). It answers 200 when the
// request deleted them all, 202 when a large partition's rest is being
// deleted in the background; either way its items are gone from reads and
// queries when the response arrives (engine.DeletePartition).
func (h *Handler) deletePartition(w http.ResponseWriter, r *http.Request) error {
	pk, err := partitionKey(r)
	if err != nil {
		return err
	}
	res, err := h.eng.DeletePartition(r.Context(), r.PathValue("db"), r.PathValue("coll"), pk)
	if err != nil {
		return err
	}
	if res.Session != "" {
		setHeader(w, "x-ms-session-token", res.Session)
	}
	setCharge(w, max(res.RU, throughput.MinimumCost()))
	code := http.StatusOK
	if !res.Done {
		code = http.StatusAccepted
	}
	setHeader(w, "Content-Length", "0")
	w.WriteHeader(code)
	return nil
}
