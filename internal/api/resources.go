package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// queryEngineConfiguration is sent, JSON-encoded as a string, in the account
// document; .NET, Java and Python SDKs read their query limits from it. The
// limits are those the engine's parser enforces (engine.MaxJoins and the
// rest).
var queryEngineConfiguration = fmt.Sprintf(`{"maxSqlQueryInputLength":%d,"maxJoinsPerSqlQuery":%d,"maxLogicalAndPerSqlQuery":%d,`+
	`"maxLogicalOrPerSqlQuery":%d,"maxUdfRefPerSqlQuery":%d,"maxInExpressionItemsCount":%d,"queryMaxInMemorySortDocumentCount":500,`+
	`"maxQueryRequestTimeoutFraction":0.9,"sqlAllowNonFiniteNumbers":false,"sqlAllowAggregateFunctions":true,"sqlAllowSubQuery":true,`+
	`"sqlAllowScalarSubQuery":true,"allowNewKeywords":true,"sqlAllowLike":true,"sqlAllowGroupByClause":true,"maxSpatialQueryCells":12,`+
	`"spatialMaxGeometryPointCount":256,"sqlDisableQueryILOptimization":false,"sqlDisableFilterPlanOptimization":false}`,
	engine.MaxQueryLength, engine.MaxJoins, engine.MaxAnds, engine.MaxOrs, engine.MaxUDFRefs, engine.MaxInItems)

// account serves GET /: the database account, which tells the SDKs which
// endpoint to use for reads and writes.
func (h *Handler) account(w http.ResponseWriter, r *http.Request) error {
	endpoint := h.cfg.AdvertiseEndpoint
	if endpoint == "" {
		scheme := "http"
		if h.cfg.TLS {
			scheme = "https"
		}
		endpoint = scheme + "://" + r.Host + "/"
	}
	loc := []map[string]string{{"name": "South Central US", "databaseAccountEndpoint": endpoint}}
	body, _ := json.Marshal(map[string]any{
		"_self": "", "id": h.cfg.AccountID, "_rid": h.cfg.AccountID,
		"media": "//media/", "addresses": "//addresses/", "_dbs": "//dbs/",
		"writableLocations": loc, "readableLocations": loc,
		"enableMultipleWriteLocations": false,
		"userReplicationPolicy":        map[string]any{"asyncReplication": false, "minReplicaSetSize": 1, "maxReplicasetSize": 1},
		"userConsistencyPolicy":        map[string]any{"defaultConsistencyLevel": h.cfg.Consistency},
		"systemReplicationPolicy":      map[string]any{"minReplicaSetSize": 1, "maxReplicasetSize": 1},
		"readPolicy":                   map[string]any{"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
		"queryEngineConfiguration":     queryEngineConfiguration,
	})
	setCharge(w, throughput.MinimumCost())
	return writeJSON(w, http.StatusOK, body)
}

// writeResource writes a single metadata resource.
func writeResource(w http.ResponseWriter, code int, res engine.Resource) error {
	setHeader(w, "etag", res.ETag)
	setCharge(w, throughput.MinimumCost())
	return writeJSON(w, code, res.Body)
}

// readResource answers a read of res: 304 Not Modified, without a body,
// when If-None-Match names its etag (or is "*"), as for items.
func readResource(w http.ResponseWriter, r *http.Request, res engine.Resource) error {
	if inm := r.Header.Get("If-None-Match"); inm != "" && (inm == "*" || inm == res.ETag) {
		setHeader(w, "etag", res.ETag)
		setCharge(w, throughput.MinimumCost())
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	return writeResource(w, http.StatusOK, res)
}

// writeFeed writes a page in the feed envelope {"_rid", "<key>": [...], "_count"}.
//
// The body is made in one buffer of its final size, taken from h.bodies
// and given back once written: a page of 20 items of 1 KB grown by
// doubling allocated and copied three times its size, 15% of a
// single-partition query's CPU in the API, and the fresh buffer of its
// final size was still a quarter of the query's allocations (issue #15).
func (h *Handler) writeFeed(w http.ResponseWriter, rid, key string, p engine.Page) error {
	rb, _ := json.Marshal(rid)
	n := len(`{"_rid":,"":[],"_count":}`) + len(rb) + len(key) + 20
	for _, it := range p.Items {
		n += len(it) + 1
	}
	b := h.bodies.get(n)
	b = append(b, `{"_rid":`...)
	b = append(b, rb...)
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":[`...)
	for i, it := range p.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"_count":`...)
	b = strconv.AppendInt(b, int64(len(p.Items)), 10)
	b = append(b, '}')
	setHeader(w, "x-ms-item-count", strconv.Itoa(len(p.Items)))
	if p.Continuation != "" {
		setHeader(w, hdrContinuation, p.Continuation)
	}
	if p.Session != "" {
		setHeader(w, "x-ms-session-token", p.Session)
	}
	setCharge(w, p.RU)
	if err := writeJSON(w, http.StatusOK, b); err != nil {
		// NB: an HTTP/2 stream closed under a Write may still hold b.
		return err
	}
	h.bodies.put(b)
	return nil
}

// bodyPool recycles response bodies. A body given back must no longer be
// referenced: an io.Writer does not retain what it was given once Write
// returns, and net/http's HTTP/2 Write returns once the data is framed.
type bodyPool struct{ p sync.Pool }

// maxPooledBody is the largest body kept for reuse: a page of 1,000 items
// of 2 KB fits; larger ones (up to MaxPageBytes, 4 MiB, and one item) are
// left to the GC rather than held.
const maxPooledBody = 2 << 20

// get returns an empty buffer with room for n bytes.
func (bp *bodyPool) get(n int) []byte {
	if v, ok := bp.p.Get().(*[]byte); ok && cap(*v) >= n {
		return (*v)[:0]
	}
	return make([]byte, 0, n)
}

// put gives b back for reuse.
func (bp *bodyPool) put(b []byte) {
	if cap(b) <= maxPooledBody {
		bp.p.Put(&b)
	}
}

// listOrQuery serves a metadata feed: a query when the request is one,
// otherwise a plain paged listing.
func (h *Handler) listOrQuery(w http.ResponseWriter, r *http.Request, rid, key string, resources [][]byte) error {
	var (
		p   engine.Page
		err error
	)
	if r.Method == http.MethodPost {
		q, qerr := parseQuery(r)
		if qerr != nil {
			return qerr
		}
		p, err = h.eng.QueryResources(r.Context(), key+"/"+rid, resources, q)
	} else {
		n, nerr := maxItemCount(r)
		if nerr != nil {
			return nerr
		}
		p, err = h.eng.ListResources(key+"/"+rid, resources, n, r.Header.Get(hdrContinuation))
	}
	if err != nil {
		return err
	}
	return h.writeFeed(w, rid, key, p)
}

func (h *Handler) createDatabase(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var def struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal(body, &def); err != nil || def.ID == nil {
		if verr := document.Validate(body); verr != nil {
			return status.BadRequest("database definition is invalid: %s", invalidMsg(verr))
		}
		return status.BadRequest("database definition must be a JSON object with a string id")
	}
	tp, err := requestedThroughput(r)
	if err != nil {
		return err
	}
	res, err := h.eng.CreateDatabase(*def.ID, tp)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusCreated, res)
}

func (h *Handler) listDatabases(w http.ResponseWriter, r *http.Request) error {
	return h.listOrQuery(w, r, "", "Databases", h.eng.Databases())
}

func (h *Handler) readDatabase(w http.ResponseWriter, r *http.Request) error {
	res, err := h.eng.ReadDatabase(r.PathValue("db"))
	if err != nil {
		return err
	}
	return readResource(w, r, res)
}

func (h *Handler) deleteDatabase(w http.ResponseWriter, r *http.Request) error {
	if err := h.eng.DeleteDatabase(r.PathValue("db"), r.Header.Get("If-Match")); err != nil {
		return err
	}
	setCharge(w, throughput.MinimumCost())
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) createContainer(w http.ResponseWriter, r *http.Request) error {
	db := r.PathValue("db")
	body, err := readBody(r)
	if err != nil {
		return err
	}
	tp, err := requestedThroughput(r)
	if err != nil {
		return err
	}
	if nonPartitionedVersion(r) {
		body = withSystemKey(body)
	}
	res, err := h.eng.CreateContainer(db, body, tp)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusCreated, res)
}

func (h *Handler) listContainers(w http.ResponseWriter, r *http.Request) error {
	db := r.PathValue("db")
	rid, err := h.eng.DatabaseRID(db)
	if err != nil {
		return err
	}
	cs, err := h.eng.Containers(db)
	if err != nil {
		return err
	}
	return h.listOrQuery(w, r, rid, "DocumentCollections", cs)
}

func (h *Handler) readContainer(w http.ResponseWriter, r *http.Request) error {
	db, coll := r.PathValue("db"), r.PathValue("coll")
	res, err := h.eng.ReadContainer(db, coll)
	if err != nil {
		return err
	}
	// A resource token of one item or partition key reads the container's
	// definition, which holds no items; its quota and partition statistics
	// count every partition's items and name the largest partition keys (a
	// security hunt: a token of one tenant's item listed the others').
	if g := grantFrom(r.Context()); g != nil && (g.Item != "" || g.PK != "") && (isTrue(r, hdrPopulateQuota) || isTrue(r, hdrPartitionStats)) {
		return insufficient("A resource token of " + grantScope(g) + " may read the container's definition but not its quota or partition statistics, which describe every partition.")
	}
	if isTrue(r, hdrPopulateQuota) {
		u, err := h.eng.ContainerUsage(r.Context(), db, coll)
		if err != nil {
			return err
		}
		setQuotaHeaders(w, u)
	}
	if isTrue(r, hdrPartitionStats) {
		st, err := h.partitionStatistics(r, db, coll)
		if err != nil {
			return err
		}
		// The container's JSON object, with its statistics as a last
		// member (the body is an object: it ends in '}').
		body := make([]byte, 0, len(res.Body)+len(st)+16)
		body = append(append(append(body, res.Body[:len(res.Body)-1]...), `,"statistics":`...), st...)
		res.Body = append(body, '}')
	}
	return readResource(w, r, res)
}

// partitionStatistics is the "statistics" member of a container read with
// x-ms-documentdb-populatepartitionstatistics, as Cosmos DB writes it: per
// physical partition its id, size in KB (rounded up), item count and
// largest logical partitions (their key and size in KB), from the same
// statistics the partitions report reads (one entry per logical
// partition: an opt-in read, as in Cosmos DB).
func (h *Handler) partitionStatistics(r *http.Request, db, coll string) ([]byte, error) {
	reps, err := h.eng.Partitions(r.Context(), db, coll)
	if err != nil {
		return nil, err
	}
	type keyStats struct {
		PartitionKey json.RawMessage `json:"partitionKey"`
		SizeInKB     int64           `json:"sizeInKB"`
	}
	type rangeStats struct {
		ID            string     `json:"id"`
		SizeInKB      int64      `json:"sizeInKB"`
		DocumentCount int64      `json:"documentCount"`
		PartitionKeys []keyStats `json:"partitionKeys"`
	}
	kb := func(n int64) int64 { return (n + 1<<10 - 1) >> 10 }
	out := make([]rangeStats, 0, len(reps))
	for _, rep := range reps {
		rs := rangeStats{ID: rep.ID, SizeInKB: kb(rep.StorageBytes), DocumentCount: rep.Items, PartitionKeys: []keyStats{}}
		for _, k := range rep.TopKeysByStorage {
			if json.Valid([]byte(k.Key)) {
				rs.PartitionKeys = append(rs.PartitionKeys, keyStats{PartitionKey: json.RawMessage(k.Key), SizeInKB: kb(k.Bytes)})
			}
		}
		out = append(out, rs)
	}
	return json.Marshal(out)
}

// setQuotaHeaders writes a container's quota and usage in Cosmos DB's
// "name=value;" form (sizes: documentSize in MB, documentsSize and
// collectionSize in KB, rounded up) and its index transformation progress
// (percent). Partita sets no quota on scripts, sizes or item counts (a
// container grows by splitting its partitions), so every quota is -1, the
// service's value for "unlimited"; collectionSize counts item bytes, as
// Partita does not measure its index entries separately.
func setQuotaHeaders(w http.ResponseWriter, u engine.ContainerUsage) {
	kb := (u.ItemBytes + 1<<10 - 1) >> 10
	mb := (u.ItemBytes + 1<<20 - 1) >> 20
	setHeader(w, "x-ms-resource-quota", "functions=-1;storedProcedures=-1;triggers=-1;documentSize=-1;documentsSize=-1;documentsCount=-1;collectionSize=-1;")
	setHeader(w, "x-ms-resource-usage", fmt.Sprintf("functions=%d;storedProcedures=%d;triggers=%d;documentSize=%d;documentsSize=%d;documentsCount=%d;collectionSize=%d;",
		u.UDFs, u.StoredProcedures, u.Triggers, mb, kb, u.Items, kb))
	setHeader(w, "x-ms-documentdb-collection-index-transformation-progress", strconv.Itoa(u.IndexProgress))
}

func (h *Handler) replaceContainer(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if nonPartitionedVersion(r) {
		body = withSystemKey(body) // a client of this version knows no partition key to send
	}
	res, err := h.eng.ReplaceContainer(r.PathValue("db"), r.PathValue("coll"), body, r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, res)
}

// partitionedOnlyVersion is the first API version on which Cosmos DB requires
// a partition key in a container definition (400 "A Partition key
// definition is not specified in the request." otherwise). Earlier versions
// create non-partitioned containers, which Cosmos DB has since migrated to
// the system key /_partitionKey (docs: "Migrate non-partitioned containers
// to partitioned containers"); the .NET SDK's own tests create them with
// version 2018-08-31.
const partitionedOnlyVersion = "2018-12-31"

// nonPartitionedVersion reports whether the request's x-ms-version
// ("YYYY-MM-DD", perhaps with a suffix) predates partitionedOnlyVersion.
func nonPartitionedVersion(r *http.Request) bool {
	v := strings.TrimSpace(r.Header.Get(hdrVersion))
	return len(v) >= len(partitionedOnlyVersion) && v[:len(partitionedOnlyVersion)] < partitionedOnlyVersion
}

// systemKeyDefinition is the partition key Cosmos DB gives a container
// created without one by an old API version: Hash on /_partitionKey,
// version 1 (the catalog's default for a system key), systemKey true.
const systemKeyDefinition = `{"paths":["/_partitionKey"],"kind":"Hash","systemKey":true}`

// withSystemKey returns the container definition body with the system
// partition key when it has no partitionKey (or a null one), and body
// unchanged otherwise, or when it is not a JSON object (the catalog then
// reports what is wrong).
func withSystemKey(body []byte) []byte {
	var def map[string]json.RawMessage
	if err := json.Unmarshal(body, &def); err != nil || def == nil {
		return body
	}
	if pk, ok := def["partitionKey"]; ok && string(bytes.TrimSpace(pk)) != "null" {
		return body
	}
	def["partitionKey"] = json.RawMessage(systemKeyDefinition)
	out, err := json.Marshal(def)
	if err != nil {
		return body
	}
	return out
}

func (h *Handler) deleteContainer(w http.ResponseWriter, r *http.Request) error {
	if err := h.eng.DeleteContainer(r.PathValue("db"), r.PathValue("coll"), r.Header.Get("If-Match")); err != nil {
		return err
	}
	setCharge(w, throughput.MinimumCost())
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// pkRanges serves the partition key ranges feed, both the plain feed (JS)
// and the incremental one the Go SDK polls until it sees 304.
func (h *Handler) pkRanges(w http.ResponseWriter, r *http.Request) error {
	ranges, version, c, err := h.eng.PKRanges(r.PathValue("db"), r.PathValue("coll"))
	if err != nil {
		return err
	}
	etag := `"` + strconv.Itoa(version) + `"`
	setHeader(w, "etag", etag)
	setCharge(w, throughput.MinimumCost())
	if inm := r.Header.Get("If-None-Match"); inm != "" && inm == etag {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	type rangeJSON struct {
		RID                     string   `json:"_rid"`
		ID                      string   `json:"id"`
		ETag                    string   `json:"_etag"`
		MinInclusive            string   `json:"minInclusive"`
		MaxExclusive            string   `json:"maxExclusive"`
		RIDPrefix               int      `json:"ridPrefix"`
		Self                    string   `json:"_self"`
		ThroughputFraction      float64  `json:"throughputFraction"`
		Status                  string   `json:"status"`
		Parents                 []string `json:"parents"`
		OwnedArchivalPKRangeIDs []string `json:"ownedArchivalPKRangeIds"`
		TS                      int64    `json:"_ts"`
		LSN                     int      `json:"lsn"`
	}
	items := make([][]byte, 0, len(ranges))
	for _, rg := range ranges {
		n, _ := strconv.Atoi(rg.ID)
		parents := rg.Parents
		if parents == nil {
			parents = []string{}
		}
		b, _ := json.Marshal(rangeJSON{
			RID: rg.RID, ID: rg.ID, ETag: etag, MinInclusive: rg.Min, MaxExclusive: rg.Max, RIDPrefix: n,
			Self: c.Self() + "pkranges/" + rg.RID + "/", ThroughputFraction: rg.Fraction, Status: "online",
			Parents: parents, OwnedArchivalPKRangeIDs: []string{}, TS: c.TS, LSN: version,
		})
		items = append(items, b)
	}
	return h.writeFeed(w, c.RID, "PartitionKeyRanges", engine.Page{Items: items, RU: throughput.MinimumCost()})
}

func (h *Handler) listOffers(w http.ResponseWriter, r *http.Request) error {
	return h.listOrQuery(w, r, "", "Offers", h.eng.Offers())
}

// postOffers answers a POST /offers that is not a query.
func (h *Handler) postOffers(http.ResponseWriter, *http.Request) error {
	return status.BadRequest("offers are created with their database or container; POST /offers takes a query")
}

func (h *Handler) readOffer(w http.ResponseWriter, r *http.Request) error {
	res, err := h.eng.ReadOffer(r.PathValue("id"))
	if err != nil {
		return err
	}
	setHeader(w, hdrMinThroughput, strconv.Itoa(res.MinThroughput))
	return readResource(w, r, res.Resource)
}

// invalidMsg is err's message, without the package's prefix when it is a
// *document.InvalidError.
func invalidMsg(err error) string {
	if ie, ok := errors.AsType[*document.InvalidError](err); ok {
		return ie.Msg
	}
	return err.Error()
}

// replaceOffer serves PUT /offers/{id}: the body is the whole offer with a
// new content.offerThroughput or content.offerAutopilotSettings.
func (h *Handler) replaceOffer(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var offer struct {
		ID              *string `json:"id"`
		OfferResourceID *string `json:"offerResourceId"`
		Content         *struct {
			OfferThroughput *int               `json:"offerThroughput"`
			Autopilot       *autopilotSettings `json:"offerAutopilotSettings"`
		} `json:"content"`
	}
	if err := json.Unmarshal(body, &offer); err != nil || offer.Content == nil {
		if verr := document.Validate(body); verr != nil {
			return status.BadRequest("offer is invalid: %s", invalidMsg(verr))
		}
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			want := "an object"
			if te.Type.Kind() == reflect.Int {
				want = "an integer within range"
			}
			return status.BadRequest("offer's %s must be %s, not %s", te.Field, want, te.Value)
		}
		return status.BadRequest("offer must be a JSON object with a content object")
	}
	// The body names the offer it replaces, if it names one, as every
	// other resource's replace requires: another offer's body (its id and
	// resource) replaced this one (a protocol hunt).
	id := strings.ToLower(r.PathValue("id"))
	if offer.ID != nil && !strings.EqualFold(*offer.ID, id) {
		return status.BadRequest("the offer id %q in the body does not match the id %q in the URL", *offer.ID, id)
	}
	if offer.OfferResourceID != nil {
		cur, err := h.eng.ReadOffer(id)
		if err != nil {
			return err
		}
		var stored struct {
			OfferResourceID string `json:"offerResourceId"`
		}
		if json.Unmarshal(cur.Body, &stored) == nil && *offer.OfferResourceID != stored.OfferResourceID {
			return status.BadRequest("the offerResourceId %q in the body is not offer %s's resource (%s)", *offer.OfferResourceID, id, stored.OfferResourceID)
		}
	}
	migrate := engine.NoMigration
	switch {
	case isTrue(r, "x-ms-cosmos-migrate-offer-to-autopilot"):
		migrate = engine.ToAutoscale
	case isTrue(r, "x-ms-cosmos-migrate-offer-to-manual-throughput"):
		migrate = engine.ToManual
	}
	var tp engine.Throughput
	switch {
	case offer.Content.Autopilot != nil && (migrate != engine.ToManual || offer.Content.OfferThroughput == nil):
		if err := offer.Content.Autopilot.supported(); err != nil {
			return err
		}
		tp.AutoscaleMax = offer.Content.Autopilot.MaxThroughput
	case offer.Content.OfferThroughput != nil:
		// To manual, Data Explorer sends the throughput wanted beside
		// the autoscale settings it had read (catalog.ReplaceOffer).
		tp.Manual = *offer.Content.OfferThroughput
	}
	res, err := h.eng.ReplaceOffer(id, tp, r.Header.Get("If-Match"), migrate)
	if err != nil {
		return err
	}
	setHeader(w, hdrMinThroughput, strconv.Itoa(res.MinThroughput))
	return writeResource(w, http.StatusOK, res.Resource)
}
