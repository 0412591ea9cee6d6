package floor

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/status"
)

// account serves GET /: the database account, with the fields the SDKs
// read (package api's account has the same shape and more).
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
	})
	setHeader(w, "x-ms-request-charge", charge)
	return writeJSON(w, http.StatusOK, body)
}

// writeResource writes a metadata resource's body with its etag.
func writeResource(w http.ResponseWriter, code int, etag string, body []byte) error {
	setHeader(w, "etag", etag)
	setHeader(w, "x-ms-request-charge", charge)
	return writeJSON(w, code, body)
}

func (h *Handler) databaseBody(d *database) []byte {
	b, _ := json.Marshal(map[string]any{"id": d.id, "_rid": d.rid, "_self": "dbs/" + d.rid + "/", "_etag": d.etag,
		"_colls": "colls/", "_users": "users/", "_ts": d.ts})
	return b
}

func (h *Handler) createDatabase(w http.ResponseWriter, r *http.Request) error {
	if isQuery(r) {
		return notSupported("querying databases")
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var def struct {
		ID *string `json:"id"`
	}
	if err := json.Unmarshal(body, &def); err != nil || def.ID == nil {
		return status.BadRequest("database definition must be a JSON object with a string id")
	}
	if err := document.ValidateID(*def.ID); err != nil {
		return status.BadRequest("%s", err.Error())
	}
	a := h.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dbs[*def.ID] != nil {
		return status.Conflict()
	}
	d := &database{id: *def.ID, rid: a.newRID(nil), etag: document.ETag(a.seq.Add(1)), ts: h.now().Unix(), colls: map[string]*container{}}
	a.dbs[d.id] = d
	return writeResource(w, http.StatusCreated, d.etag, h.databaseBody(d))
}

func (h *Handler) readDatabase(w http.ResponseWriter, r *http.Request) error {
	d, err := h.acct.lookupDB(r.PathValue("db"))
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, d.etag, h.databaseBody(d))
}

func (h *Handler) deleteDatabase(w http.ResponseWriter, r *http.Request) error {
	return h.remove(w, func(a *account) error {
		if a.dbs[r.PathValue("db")] == nil {
			return status.NotFound()
		}
		delete(a.dbs, r.PathValue("db"))
		return nil
	})
}

// remove runs del under the account's write lock and answers 204 when it
// succeeds.
func (h *Handler) remove(w http.ResponseWriter, del func(a *account) error) error {
	h.acct.mu.Lock()
	err := del(h.acct)
	h.acct.mu.Unlock()
	if err != nil {
		return err
	}
	setHeader(w, "x-ms-request-charge", charge)
	return writeEmpty(w, http.StatusNoContent)
}

// createContainer serves POST /dbs/{db}/colls. The definition is kept as
// sent (an id and a partition key definition are required), with the
// system properties added; throughput headers are accepted and not
// enforced (the floor never throttles).
func (h *Handler) createContainer(w http.ResponseWriter, r *http.Request) error {
	if isQuery(r) {
		return notSupported("querying containers")
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var def map[string]json.RawMessage
	if err := json.Unmarshal(body, &def); err != nil || def == nil {
		return status.BadRequest("container definition must be a JSON object")
	}
	var id string
	if err := json.Unmarshal(def["id"], &id); err != nil || id == "" {
		return status.BadRequest("container definition must have a string id")
	}
	if err := document.ValidateID(id); err != nil {
		return status.BadRequest("%s", err.Error())
	}
	var pkDef struct {
		Paths []string `json:"paths"`
		Kind  string   `json:"kind"`
	}
	if err := json.Unmarshal(def["partitionKey"], &pkDef); err != nil || len(pkDef.Paths) == 0 {
		return status.BadRequest("A Partition key definition is not specified in the request.")
	}
	if len(pkDef.Paths) > 1 && pkDef.Kind != "MultiHash" || len(pkDef.Paths) > 3 {
		return status.BadRequest("a partition key definition has one path, or two or three with kind MultiHash")
	}
	for _, p := range pkDef.Paths {
		if err := document.ValidatePKPath(p); err != nil {
			return status.BadRequest("%s", err.Error())
		}
	}
	a := h.acct
	a.mu.Lock()
	defer a.mu.Unlock()
	d := a.dbs[r.PathValue("db")]
	if d == nil {
		return status.NotFound().WithSub(status.SubNotFoundOwnerResource)
	}
	if d.colls[id] != nil {
		return status.Conflict()
	}
	dbRID := mustDecodeRID(d.rid)
	c := &container{id: id, db: d, rid: a.newRID(dbRID), etag: document.ETag(a.seq.Add(1)), pkPaths: pkDef.Paths, byPK: map[string]*logical{}}
	for k, v := range map[string]any{"_rid": c.rid, "_self": "dbs/" + d.rid + "/colls/" + c.rid + "/", "_etag": c.etag,
		"_ts": h.now().Unix(), "_docs": "docs/", "_sprocs": "sprocs/", "_triggers": "triggers/", "_udfs": "udfs/", "_conflicts": "conflicts/"} {
		def[k], _ = json.Marshal(v)
	}
	if _, ok := def["indexingPolicy"]; !ok {
		def["indexingPolicy"] = json.RawMessage(`{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}`)
	}
	c.body, _ = json.Marshal(def)
	d.colls[id] = c
	return writeResource(w, http.StatusCreated, c.etag, c.body)
}

func (h *Handler) readContainer(w http.ResponseWriter, r *http.Request) error {
	c, err := h.acct.lookup(r.PathValue("db"), r.PathValue("coll"))
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, c.etag, c.body)
}

func (h *Handler) deleteContainer(w http.ResponseWriter, r *http.Request) error {
	return h.remove(w, func(a *account) error {
		d := a.dbs[r.PathValue("db")]
		if d == nil {
			return status.NotFound().WithSub(status.SubNotFoundOwnerResource)
		}
		if d.colls[r.PathValue("coll")] == nil {
			return status.NotFound()
		}
		delete(d.colls, r.PathValue("coll"))
		return nil
	})
}

// pkRanges serves the partition key ranges feed: one range over the whole
// key space, which never changes (etag "1"; the Go SDK polls the
// incremental feed until it sees 304).
func (h *Handler) pkRanges(w http.ResponseWriter, r *http.Request) error {
	c, err := h.acct.lookup(r.PathValue("db"), r.PathValue("coll"))
	if err != nil {
		return err
	}
	const etag = `"1"`
	setHeader(w, "etag", etag)
	setHeader(w, "x-ms-request-charge", charge)
	if r.Header.Get("If-None-Match") == etag {
		return writeEmpty(w, http.StatusNotModified)
	}
	rg, _ := json.Marshal(map[string]any{
		"_rid": c.rid, "id": "0", "_etag": etag, "minInclusive": "", "maxExclusive": "FF", "ridPrefix": 0,
		"_self": "dbs/" + c.db.rid + "/colls/" + c.rid + "/pkranges/" + c.rid + "/", "throughputFraction": 1,
		"status": "online", "parents": []string{}, "ownedArchivalPKRangeIds": []string{}, "_ts": 0, "lsn": 1,
	})
	return writeFeed(w, c.rid, "PartitionKeyRanges", [][]byte{rg}, "")
}

// writeFeed writes a page in the feed envelope {"_rid", "<key>": [...],
// "_count"}, with x-ms-item-count and the continuation, if any.
func writeFeed(w http.ResponseWriter, rid, key string, items [][]byte, continuation string) error {
	n := 0
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n+len(rid)+len(key)+40)
	b = append(b, `{"_rid":`...)
	b = strconv.AppendQuote(b, rid)
	b = append(b, `,"`+key+`":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"_count":`...)
	b = strconv.AppendInt(b, int64(len(items)), 10)
	b = append(b, '}')
	setHeader(w, "x-ms-item-count", itoa(len(items)))
	if continuation != "" {
		setHeader(w, "x-ms-continuation", continuation)
	}
	setHeader(w, "x-ms-request-charge", charge)
	return writeJSON(w, http.StatusOK, b)
}

// isQuery reports whether a POST carries a query rather than a resource.
func isQuery(r *http.Request) bool {
	return strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/query+json") ||
		isTrue(r, "x-ms-documentdb-isquery") || isTrue(r, "x-ms-documentdb-query")
}

func isTrue(r *http.Request, name string) bool {
	return strings.EqualFold(strings.TrimSpace(r.Header.Get(name)), "true")
}

func itoa(n int) string    { return strconv.Itoa(n) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }
