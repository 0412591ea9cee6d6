package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
)

// Paths of resource ids (docs/rid-links.md). Every resource's _self names
// it by the _rids of it and its parents (dbs/AAAAJw==/colls/AAAAJ+wAAAA=/),
// and SDKs pass such links back: Python's 3.x SDK addresses a container by
// the _self of its database (CreateContainer(db['_self'], …)), an item by
// its own, and signs such a request over the last _rid of the path, lower
// cased, rather than over the path. Cosmos DB serves both forms; so does
// Partita, by reading a path of resource ids as the path of names it stands
// for before authenticating and routing the request.

// ridItemKey marks a request whose item is named by its _rid (the path's
// other ids were resolved to names; the item's needs its partition key).
type ridItemKey struct{}

// ridLink returns the link a request's signature covers when its path may
// be one of resource ids: the lower-cased last id of a path whose database
// segment has a _rid's shape (eight characters of base64 decoding to four
// bytes, as the SDKs tell them apart); "" for any other path. It reads no
// catalog: the request is authenticated with it (and, failing that, with
// the path's own link) before anything is looked up.
func ridLink(r *http.Request) string {
	raw := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(raw, "/dbs/")
	if !ok {
		return ""
	}
	db, _, _ := strings.Cut(rest, "/")
	if len(db) != 8 || !strings.HasSuffix(db, "==") {
		return "" // every request naming its database: no decoding, no allocation
	}
	if b, err := document.DecodeRID(db); err != nil || len(b) != 4 {
		return ""
	}
	segs := strings.Split(strings.Trim(raw, "/"), "/")
	last := segs[len(segs)-1]
	switch {
	case len(segs) == 6 && segs[4] == "operations":
		// …/colls/{rid}/operations/partitionkeydelete is signed as its
		// container (auth's alternates): its last segment names no
		// resource, and signed as it, one signature served every
		// container (a security hunt).
		last = segs[3]
	case len(segs)%2 == 1:
		last = segs[len(segs)-2]
	}
	id, err := url.PathUnescape(last)
	if err != nil {
		return "" // authentication says what is wrong with the path
	}
	return strings.ToLower(id)
}

// ridAddressed returns r, whose path has a _rid's shape (ridLink) and was
// not signed as a path of names, with the path of resource ids replaced by
// the path of names it stands for. When its database segment is the _rid
// of no database, r is served as it is if names allows (a token, which
// names no link) and a database is named so. Errors: 404 for a resource id
// that names nothing (asked once the request is authenticated: before, it
// would tell anyone which ids exist), and for a path signed over its last
// _rid that is not one: that signature, over one lower-cased segment,
// would serve any path ending in it.
func (h *Handler) ridAddressed(r *http.Request, names bool) (*http.Request, error) {
	segs := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil {
			return r, nil
		}
		segs[i] = u
	}
	pairs := make([]engine.RIDPair, 0, len(segs)/2)
	for i := 0; i+1 < len(segs); i += 2 {
		pairs = append(pairs, engine.RIDPair{Type: segs[i], ID: segs[i+1]})
	}
	resolved, ok, err := h.eng.RIDNames(pairs)
	switch {
	case err != nil:
		return r, err
	case !ok:
		if _, err := h.eng.ReadDatabase(pairs[0].ID); err == nil && names {
			return r, nil // a database named so
		}
		return r, status.NotFound()
	}
	var path, escaped strings.Builder
	for _, p := range resolved {
		path.WriteString("/" + p.Type + "/" + p.ID)
		escaped.WriteString("/" + p.Type + "/" + url.PathEscape(p.ID))
	}
	if len(segs)%2 == 1 {
		path.WriteString("/" + segs[len(segs)-1])
		escaped.WriteString("/" + url.PathEscape(segs[len(segs)-1]))
	}
	r2 := r.Clone(r.Context())
	u := *r.URL
	u.Path, u.RawPath = path.String(), escaped.String()
	r2.URL = &u
	r2.RequestURI = u.RequestURI()
	if len(resolved) >= 3 && resolved[2].Type == "docs" {
		r2 = r2.WithContext(context.WithValue(r2.Context(), ridItemKey{}, true))
	}
	return r2, nil
}

// itemRefOf returns the item r addresses: by its id, or by its _rid
// (ridAddressed), resolved in logical partition pk where a read (write
// false) or a write of the item would look (engine.ItemIDByRID).
func (h *Handler) itemRefOf(r *http.Request, pk document.PartitionKey, write bool) (engine.ItemRef, error) {
	ref := itemRef(r)
	if byRID, _ := r.Context().Value(ridItemKey{}).(bool); !byRID {
		return ref, nil
	}
	id, err := h.eng.ItemIDByRID(r.Context(), ref.DB, ref.Container, pk, ref.ID, write)
	if err != nil {
		return engine.ItemRef{}, err
	}
	ref.ID = id
	return ref, nil
}
