package floor

import (
	"net/http"
	"strings"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/status"
)

// partitionKey returns the request's partition key header, checked against
// the container's definition. A point operation needs one.
func partitionKey(r *http.Request, c *container) (document.PartitionKey, error) {
	v := r.Header.Values("x-ms-documentdb-partitionkey")
	if len(v) == 0 {
		return nil, badPK("PartitionKey value must be supplied for this operation.")
	}
	pk, err := document.ParsePKHeader(v[0])
	if err != nil {
		if pe, ok := err.(*document.PKError); ok {
			return nil, status.BadRequest("invalid x-ms-documentdb-partitionkey header: %s", pe.Msg)
		}
		return nil, status.BadRequest("invalid x-ms-documentdb-partitionkey header")
	}
	if len(pk) != len(c.pkPaths) {
		return nil, badPK("Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document.")
	}
	return pk, nil
}

// target returns the container and partition key of a point operation,
// refusing the headers the floor does not implement when write.
func (h *Handler) target(r *http.Request, write bool) (*container, document.PartitionKey, error) {
	if write {
		if err := refuseUnsupported(r); err != nil {
			return nil, nil, err
		}
	}
	c, err := h.acct.lookup(r.PathValue("db"), r.PathValue("coll"))
	if err != nil {
		return nil, nil, err
	}
	pk, err := partitionKey(r, c)
	if err != nil {
		return nil, nil, err
	}
	return c, pk, nil
}

// refuseUnsupported refuses the item-request headers the floor does not
// implement, rather than ignoring them.
func refuseUnsupported(r *http.Request) error {
	for _, h := range []string{"x-ms-cosmos-is-batch-request", "x-ms-documentdb-pre-trigger-include", "x-ms-documentdb-post-trigger-include"} {
		if r.Header.Get(h) != "" {
			return notSupported("the " + h + " header")
		}
	}
	return nil
}

// writeItem writes an item operation's result, as package api does.
func writeItem(w http.ResponseWriter, r *http.Request, c *container, code int, it item) error {
	if it.etag != "" {
		setHeader(w, "etag", it.etag)
	}
	setHeader(w, "x-ms-session-token", c.session())
	setHeader(w, "x-ms-content-path", c.rid)
	setHeader(w, "x-ms-alt-content-path", "dbs/"+c.db.id+"/colls/"+c.id)
	setHeader(w, "x-ms-request-charge", charge)
	body := it.body
	if code == http.StatusNoContent || code == http.StatusNotModified ||
		(r.Method != http.MethodGet && strings.Contains(strings.ToLower(r.Header.Get("Prefer")), "return=minimal")) {
		body = nil
	}
	if body == nil {
		return writeEmpty(w, code)
	}
	return writeJSON(w, code, body)
}

// postItems serves POST …/docs: a query, or an item create or upsert.
func (h *Handler) postItems(w http.ResponseWriter, r *http.Request) error {
	if isTrue(r, "x-ms-cosmos-is-query-plan-request") {
		return notSupported("a query plan request")
	}
	if isQuery(r) {
		return h.query(w, r)
	}
	kind := kindCreate
	if isTrue(r, "x-ms-documentdb-is-upsert") {
		kind = kindUpsert
	}
	return h.writeItemBody(w, r, kind, "")
}

func (h *Handler) replaceItem(w http.ResponseWriter, r *http.Request) error {
	return h.writeItemBody(w, r, kindReplace, r.PathValue("id"))
}

// writeItemBody parses the request's item as Partita does (package
// document) and stores it. For a replace, id is the URL's, which the
// body's must match.
func (h *Handler) writeItemBody(w http.ResponseWriter, r *http.Request, kind writeKind, id string) error {
	c, pk, err := h.target(r, true)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	it, err := document.ParseItem(body, c.pkPaths)
	if err != nil {
		if ie, ok := err.(*document.InvalidError); ok {
			return status.BadRequest("%s", ie.Error())
		}
		return status.BadRequest("invalid item")
	}
	if !it.PK.Equal(pk) {
		return status.BadRequest("Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document.").
			WithSub(status.SubBadRequestPKMismatch)
	}
	if kind == kindReplace && it.ID != id {
		return status.BadRequest("the id in the body (%q) differs from the id in the URL (%q)", it.ID, id)
	}
	stored, created, err := c.write(h.acct, kind, it, r.Header.Get("If-Match"), h.now().Unix())
	if err != nil {
		return err
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	return writeItem(w, r, c, code, stored)
}

func (h *Handler) readItem(w http.ResponseWriter, r *http.Request) error {
	c, pk, err := h.target(r, false)
	if err != nil {
		return err
	}
	it, ok := c.get(pk, r.PathValue("id"))
	if !ok {
		return status.NotFound()
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && (inm == it.etag || inm == "*") {
		return writeItem(w, r, c, http.StatusNotModified, it)
	}
	return writeItem(w, r, c, http.StatusOK, it)
}

func (h *Handler) deleteItem(w http.ResponseWriter, r *http.Request) error {
	c, pk, err := h.target(r, true)
	if err != nil {
		return err
	}
	if err := c.remove(h.acct, pk, r.PathValue("id"), r.Header.Get("If-Match")); err != nil {
		return err
	}
	return writeItem(w, r, c, http.StatusNoContent, item{})
}
