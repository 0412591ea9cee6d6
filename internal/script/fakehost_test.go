package script

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/partitadb/partita/internal/document"
)

// fakeHost is an in-memory Host: one logical partition of documents keyed by id. It supports
// the queries "SELECT * FROM c" and "SELECT * FROM c WHERE c.<field> = @<param>".
type fakeHost struct {
	docs  map[string]map[string]any
	etags int
	calls []string // operations performed, e.g. "create a"
	fail  error    // when set, every operation fails with it
	// blockQueries makes Query and ReadAll run until their context ends, as a query
	// calling slow UDFs would.
	blockQueries bool
}

func newFakeHost(docs ...string) *fakeHost {
	h := &fakeHost{docs: make(map[string]map[string]any)}
	for _, d := range docs {
		var m map[string]any
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			panic(err)
		}
		h.store(m)
	}
	return h
}

const testCollLink = "dbs/db1/colls/coll1"

func (h *fakeHost) CollectionLink() string { return testCollLink }

const testCollSelf = "dbs/AbC=/colls/AbCdE=/"

func (h *fakeHost) CollectionSelf() string { return testCollSelf }

func (h *fakeHost) store(m map[string]any) []byte {
	h.etags++
	id, _ := m["id"].(string)
	m["_rid"] = "rid-" + id
	m["_self"] = testCollLink + "/docs/rid-" + id + "/"
	m["_etag"] = fmt.Sprintf("\"etag-%d\"", h.etags)
	m["_ts"] = 1700000000
	h.docs[id] = m
	b, _ := json.Marshal(m)
	return b
}

func (h *fakeHost) decode(doc []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, &HostError{Status: http.StatusBadRequest, Msg: "invalid document"}
	}
	if id, ok := m["id"].(string); !ok || id == "" {
		return nil, &HostError{Status: http.StatusBadRequest, Msg: "The input content is invalid because the required properties - 'id; ' - are missing"}
	}
	return m, nil
}

// resolve turns a link (bare id, name-based link, or _self) into an id.
func (h *fakeHost) resolve(link string) string {
	link = strings.Trim(link, "/")
	if i := strings.LastIndex(link, "/docs/"); i >= 0 {
		link = link[i+len("/docs/"):]
	}
	if id, ok := strings.CutPrefix(link, "rid-"); ok {
		return id
	}
	return link
}

func notFound() error {
	return &HostError{Status: http.StatusNotFound, Msg: "Entity with the specified id does not exist in the system."}
}

func (h *fakeHost) checkETag(id, ifMatch string) error {
	if ifMatch != "" && h.docs[id]["_etag"] != ifMatch {
		return &HostError{Status: http.StatusPreconditionFailed, Msg: "Operation cannot be performed because one of the specified precondition is not met."}
	}
	return nil
}

func (h *fakeHost) Create(doc []byte) ([]byte, error) {
	if h.fail != nil {
		return nil, h.fail
	}
	m, err := h.decode(doc)
	if err != nil {
		return nil, err
	}
	h.calls = append(h.calls, "create "+m["id"].(string))
	if _, ok := h.docs[m["id"].(string)]; ok {
		return nil, &HostError{Status: http.StatusConflict, Msg: "Entity with the specified id already exists in the system."}
	}
	return h.store(m), nil
}

func (h *fakeHost) Upsert(doc []byte, ifMatch string) ([]byte, error) {
	if h.fail != nil {
		return nil, h.fail
	}
	m, err := h.decode(doc)
	if err != nil {
		return nil, err
	}
	id := m["id"].(string)
	h.calls = append(h.calls, "upsert "+id)
	if _, ok := h.docs[id]; ok {
		if err := h.checkETag(id, ifMatch); err != nil {
			return nil, err
		}
	}
	return h.store(m), nil
}

// Patch applies spec with the document package's patch, as the engine does.
func (h *fakeHost) Patch(link string, spec []byte, ifMatch string) ([]byte, error) {
	if h.fail != nil {
		return nil, h.fail
	}
	id := h.resolve(link)
	h.calls = append(h.calls, "patch "+id)
	m, ok := h.docs[id]
	if !ok {
		return nil, notFound()
	}
	if err := h.checkETag(id, ifMatch); err != nil {
		return nil, err
	}
	req, err := document.ParsePatchRequest(spec)
	if err != nil {
		return nil, &HostError{Status: http.StatusBadRequest, Msg: err.Error()}
	}
	old, _ := json.Marshal(m)
	patched, err := document.ApplyPatch(old, req.Operations)
	if err != nil {
		return nil, &HostError{Status: http.StatusBadRequest, Msg: err.Error()}
	}
	var n map[string]any
	if err := json.Unmarshal(patched, &n); err != nil {
		return nil, err
	}
	return h.store(n), nil
}

func (h *fakeHost) Replace(link string, doc []byte, ifMatch string) ([]byte, error) {
	if h.fail != nil {
		return nil, h.fail
	}
	id := h.resolve(link)
	h.calls = append(h.calls, "replace "+id)
	m, err := h.decode(doc)
	if err != nil {
		return nil, err
	}
	if _, ok := h.docs[id]; !ok {
		return nil, notFound()
	}
	if err := h.checkETag(id, ifMatch); err != nil {
		return nil, err
	}
	if m["id"] != id {
		delete(h.docs, id)
	}
	return h.store(m), nil
}

func (h *fakeHost) Read(link string) ([]byte, error) {
	if h.fail != nil {
		return nil, h.fail
	}
	id := h.resolve(link)
	h.calls = append(h.calls, "read "+id)
	m, ok := h.docs[id]
	if !ok {
		return nil, notFound()
	}
	return json.Marshal(m)
}

func (h *fakeHost) Delete(link string, ifMatch string) error {
	if h.fail != nil {
		return h.fail
	}
	id := h.resolve(link)
	h.calls = append(h.calls, "delete "+id)
	if _, ok := h.docs[id]; !ok {
		return notFound()
	}
	if err := h.checkETag(id, ifMatch); err != nil {
		return err
	}
	delete(h.docs, id)
	return nil
}

var whereRE = regexp.MustCompile(`(?i)^SELECT \* FROM c(?: WHERE c\.(\w+) = (@\w+))?$`)

// Query answers the queries whereRE matches, in pages of page.Size (the
// continuation is the offset of the next page).
func (h *fakeHost) Query(ctx context.Context, query string, params map[string][]byte, page Page) ([][]byte, string, error) {
	if h.blockQueries {
		<-ctx.Done()
		return nil, "", ctx.Err()
	}
	all, err := h.query(query, params)
	if err != nil || page.Size <= 0 && page.Continuation == "" {
		return all, "", err
	}
	from := 0
	if page.Continuation != "" {
		if from, err = strconv.Atoi(page.Continuation); err != nil || from > len(all) {
			return nil, "", &HostError{Status: http.StatusBadRequest, Msg: "invalid continuation"}
		}
	}
	end := len(all)
	if page.Size > 0 {
		end = min(end, from+page.Size)
	}
	next := ""
	if end < len(all) {
		next = strconv.Itoa(end)
	}
	return all[from:end], next, nil
}

func (h *fakeHost) query(query string, params map[string][]byte) ([][]byte, error) {
	if h.fail != nil {
		return nil, h.fail
	}
	h.calls = append(h.calls, "query")
	m := whereRE.FindStringSubmatch(strings.TrimSpace(query))
	if m == nil {
		return nil, &HostError{Status: http.StatusBadRequest, Msg: "Syntax error, incorrect syntax near '" + query + "'."}
	}
	var want any
	if m[1] != "" {
		p, ok := params[m[2]]
		if !ok {
			return nil, nil
		}
		if err := json.Unmarshal(p, &want); err != nil {
			return nil, err
		}
	}
	var out [][]byte
	for _, id := range h.sortedIDs() {
		d := h.docs[id]
		if m[1] != "" && fmt.Sprint(d[m[1]]) != fmt.Sprint(want) {
			continue
		}
		b, _ := json.Marshal(d)
		out = append(out, b)
	}
	return out, nil
}

func (h *fakeHost) ReadAll(ctx context.Context, page Page) ([][]byte, string, error) {
	return h.Query(ctx, "SELECT * FROM c", nil, page)
}

func (h *fakeHost) sortedIDs() []string {
	ids := make([]string, 0, len(h.docs))
	for id := range h.docs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
