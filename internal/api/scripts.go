package api

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

const (
	hdrPreTriggers  = "x-ms-documentdb-pre-trigger-include"
	hdrPostTriggers = "x-ms-documentdb-post-trigger-include"
	hdrScriptLog    = "x-ms-documentdb-script-enable-logging"
	hdrScriptResult = "x-ms-documentdb-script-log-results"
)

// scriptKinds maps URL segments to script kinds and their feed envelope keys.
var scriptKinds = []struct {
	kind engine.ScriptKind
	feed string
}{
	{engine.StoredProcedures, "StoredProcedures"},
	{engine.Triggers, "Triggers"},
	{engine.UDFs, "UserDefinedFunctions"},
}

func (h *Handler) scriptRoutes() {
	for _, k := range scriptKinds {
		kind, feed := k.kind, k.feed
		base := "/dbs/{db}/colls/{coll}/" + string(kind)
		list := func(w http.ResponseWriter, r *http.Request) error { return h.listScripts(w, r, kind, feed) }
		h.handlePost(base, list, h.propagated(func(w http.ResponseWriter, r *http.Request) error {
			body, err := readBody(r)
			if err != nil {
				return err
			}
			if isTrue(r, hdrIsUpsert) {
				res, created, err := h.eng.UpsertScript(r.PathValue("db"), r.PathValue("coll"), kind, body)
				if err != nil {
					return err
				}
				return writeResource(w, createdOr200(created), res)
			}
			res, err := h.eng.CreateScript(r.PathValue("db"), r.PathValue("coll"), kind, body)
			if err != nil {
				return err
			}
			return writeResource(w, http.StatusCreated, res)
		}))
		h.handle("GET "+base, list)
		h.handle("GET "+base+"/{id}", func(w http.ResponseWriter, r *http.Request) error {
			res, err := h.eng.ReadScript(r.PathValue("db"), r.PathValue("coll"), kind, r.PathValue("id"))
			if err != nil {
				return err
			}
			return readResource(w, r, res)
		})
		h.handle("PUT "+base+"/{id}", h.propagated(func(w http.ResponseWriter, r *http.Request) error {
			body, err := readBody(r)
			if err != nil {
				return err
			}
			res, err := h.eng.ReplaceScript(r.PathValue("db"), r.PathValue("coll"), kind, r.PathValue("id"), body, r.Header.Get("If-Match"))
			if err != nil {
				return err
			}
			return writeResource(w, http.StatusOK, res)
		}))
		h.handle("DELETE "+base+"/{id}", h.propagated(func(w http.ResponseWriter, r *http.Request) error {
			if err := h.eng.DeleteScript(r.PathValue("db"), r.PathValue("coll"), kind, r.PathValue("id"), r.Header.Get("If-Match")); err != nil {
				return err
			}
			setCharge(w, throughput.MinimumCost())
			w.WriteHeader(http.StatusNoContent)
			return nil
		}))
	}
	h.handle("POST /dbs/{db}/colls/{coll}/sprocs/{id}", h.executeSproc)
}

func (h *Handler) listScripts(w http.ResponseWriter, r *http.Request, kind engine.ScriptKind, feed string) error {
	items, rid, err := h.eng.Scripts(r.Context(), r.PathValue("db"), r.PathValue("coll"), kind)
	if err != nil {
		return err
	}
	return h.listOrQuery(w, r, rid, feed, items)
}

// executeSproc serves POST …/sprocs/{id}: run the stored procedure on the
// request's logical partition with the body's arguments.
func (h *Handler) executeSproc(w http.ResponseWriter, r *http.Request) error {
	pk, err := partitionKey(r)
	if err != nil {
		return err
	}
	args, err := readBody(r)
	if err != nil {
		return err
	}
	if len(args) > maxBatchBytes {
		// Cosmos DB's 2 MB request limit, which a batch is held to too.
		return status.Newf(http.StatusRequestEntityTooLarge, "Request size is too large: the stored procedure's arguments are %d bytes, the limit is %d", len(args), maxBatchBytes)
	}
	if len(strings.TrimSpace(string(args))) == 0 {
		args = []byte("[]")
	}
	res, err := h.eng.ExecuteStoredProcedure(r.Context(), r.PathValue("db"), r.PathValue("coll"), r.PathValue("id"), pk, args, isTrue(r, hdrScriptLog))
	if isTrue(r, hdrScriptLog) && (err == nil || res.Log != "") {
		// Percent-encoded (the SDKs decode with decodeURIComponent /
		// Uri.UnescapeDataString), without the last line's newline; on
		// a failed run too, as Cosmos DB does (what it logged before
		// failing is how its author finds why).
		setHeader(w, hdrScriptResult, scriptLogHeader(strings.TrimSuffix(res.Log, "\n")))
	}
	if err != nil {
		return err
	}
	setHeader(w, "x-ms-session-token", res.Session)
	h.setContentPath(w, r.PathValue("db"), r.PathValue("coll"))
	setCharge(w, res.RU)
	body := res.Body
	if len(body) == 0 {
		body = nil
	}
	return writeJSON(w, http.StatusOK, body)
}

// noTriggers refuses a request naming triggers to run where Partita runs
// none (a patch, a batch): 400 rather than a write that silently skips
// them.
func noTriggers(r *http.Request, what string) error {
	for _, h := range []string{hdrPreTriggers, hdrPostTriggers} {
		if strings.TrimSpace(r.Header.Get(h)) != "" {
			return status.BadRequest("%s is not supported on %s: triggers run on creates, replaces, upserts and deletes of single items", h, what)
		}
	}
	return nil
}

// triggerSet reads the trigger include headers.
func triggerSet(r *http.Request) engine.TriggerSet {
	split := func(v string) []string {
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return engine.TriggerSet{Pre: split(r.Header.Get(hdrPreTriggers)), Post: split(r.Header.Get(hdrPostTriggers))}
}

// maxScriptLogHeader bounds the percent-encoded script log header: Node's
// HTTP parser refuses a response whose headers pass 16 KiB, so
// @azure/cosmos failed a stored procedure whose log passed about 15,000
// ASCII characters (1,700 of "€", nine bytes each encoded) — after its
// writes had committed, which a retry then repeated (a scripts hunt).
const maxScriptLogHeader = 8 << 10

// scriptLogHeader is the script log header's value: log percent-encoded,
// cut at a character so that it stays within maxScriptLogHeader.
func scriptLogHeader(log string) string {
	b := make([]byte, 0, min(len(log)+len(log)/2, maxScriptLogHeader))
	for len(log) > 0 {
		_, n := utf8.DecodeRuneInString(log)
		next := appendURIComponent(b, log[:n])
		if len(next) > maxScriptLogHeader {
			break
		}
		b, log = next, log[n:]
	}
	return string(b)
}
