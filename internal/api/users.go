package api

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// Users and permissions (REST: /dbs/{db}/users[/{user}[/permissions[/{perm}]]]).
// Every response that carries a permission carries a resource token issued
// for it just then (its _token), valid for an hour or for
// x-ms-documentdb-expiry-seconds, as Cosmos DB does on a GET, PUT or POST of
// a permission.

const (
	hdrTokenExpiry = "x-ms-documentdb-expiry-seconds"
	// defaultTokenTTL and maxTokenTTL are a resource token's validity by
	// default and at most (Cosmos DB REST reference, Create a Permission:
	// one hour; "The max override value is 18000, which is five hours").
	defaultTokenTTL = time.Hour
	maxTokenTTL     = 5 * time.Hour
)

func (h *Handler) userRoutes() {
	db := func(r *http.Request) string { return r.PathValue("db") }
	subresource[engine.Resource]{
		base: "/dbs/{db}/users", name: "user", feed: "Users",
		encoder: asIs,
		create:  func(r *http.Request, body []byte) (engine.Resource, error) { return h.eng.CreateUser(db(r), body) },
		upsert: func(r *http.Request, body []byte) (engine.Resource, bool, error) {
			return h.eng.UpsertUser(db(r), body)
		},
		read: func(r *http.Request, id string) (engine.Resource, error) { return h.eng.ReadUser(db(r), id) },
		list: func(r *http.Request) ([]engine.Resource, string, error) { return h.eng.Users(r.Context(), db(r)) },
		replace: func(r *http.Request, id string, body []byte) (engine.Resource, error) {
			return h.eng.ReplaceUser(db(r), id, body, r.Header.Get("If-Match"))
		},
		delete: func(r *http.Request, id string) error { return h.eng.DeleteUser(db(r), id, r.Header.Get("If-Match")) },
	}.routes(h)

	user := func(r *http.Request) string { return r.PathValue("user") }
	subresource[engine.Permission]{
		base: "/dbs/{db}/users/{user}/permissions", name: "perm", feed: "Permissions",
		// Reading a permission issues a token for it, a credential:
		// permissions are read with write access only (issues).
		guardReads: issues,
		encoder:    h.tokens,
		create: func(r *http.Request, body []byte) (engine.Permission, error) {
			return h.eng.CreatePermission(db(r), user(r), body)
		},
		upsert: func(r *http.Request, body []byte) (engine.Permission, bool, error) {
			return h.eng.UpsertPermission(db(r), user(r), body)
		},
		read: func(r *http.Request, id string) (engine.Permission, error) {
			return h.eng.ReadPermission(db(r), user(r), id)
		},
		list: func(r *http.Request) ([]engine.Permission, string, error) {
			return h.eng.Permissions(r.Context(), db(r), user(r))
		},
		replace: func(r *http.Request, id string, body []byte) (engine.Permission, error) {
			return h.eng.ReplacePermission(db(r), user(r), id, body, r.Header.Get("If-Match"))
		},
		delete: func(r *http.Request, id string) error {
			return h.eng.DeletePermission(db(r), user(r), id, r.Header.Get("If-Match"))
		},
	}.routes(h)
}

// subresource is a kind of resource under a database (users) or under one
// of its resources (permissions), served as a feed at base and one by one
// at base/{name}. Its handlers are shared; the kind says which engine calls
// serve them and how a response encodes a resource (R, as the engine
// returns it). The engine calls find the parent in the request's path.
type subresource[R any] struct {
	base string // the feed's path pattern
	name string // the path wildcard that names one resource
	feed string // the feed envelope's key
	// guardReads, if not nil, wraps the handlers of reads and queries.
	guardReads func(handlerFunc) handlerFunc
	// encoder returns how the responses to r encode a resource; its error,
	// for a malformed request, is the response.
	encoder func(r *http.Request) (func(R) engine.Resource, error)
	create  func(r *http.Request, body []byte) (R, error)
	upsert  func(r *http.Request, body []byte) (res R, created bool, err error)
	read    func(r *http.Request, id string) (R, error)
	list    func(r *http.Request) (all []R, parentRID string, err error)
	replace func(r *http.Request, id string, body []byte) (R, error)
	delete  func(r *http.Request, id string) error
}

// routes registers k's routes with h.
func (k subresource[R]) routes(h *Handler) {
	reads := k.guardReads
	if reads == nil {
		reads = func(fn handlerFunc) handlerFunc { return fn }
	}
	one := k.base + "/{" + k.name + "}"
	feed := reads(func(w http.ResponseWriter, r *http.Request) error { return k.serveFeed(h, w, r) })
	h.handlePost(k.base, feed, h.propagated(k.servePost))
	h.handle("GET "+k.base, feed)
	h.handle("GET "+one, reads(k.serveRead))
	h.handle("PUT "+one, h.propagated(k.serveReplace))
	h.handle("DELETE "+one, h.propagated(k.serveDelete))
}

// servePost serves the writes of a POST to the feed: create, or upsert
// with x-ms-documentdb-is-upsert.
func (k subresource[R]) servePost(w http.ResponseWriter, r *http.Request) error {
	return k.write(w, r, func(body []byte) (R, int, error) {
		if isTrue(r, hdrIsUpsert) {
			res, created, err := k.upsert(r, body)
			return res, createdOr200(created), err
		}
		res, err := k.create(r, body)
		return res, http.StatusCreated, err
	})
}

func (k subresource[R]) serveReplace(w http.ResponseWriter, r *http.Request) error {
	return k.write(w, r, func(body []byte) (R, int, error) {
		res, err := k.replace(r, r.PathValue(k.name), body)
		return res, http.StatusOK, err
	})
}

// write serves a write: op, given the request's body, returns the resource
// written and the response's status code.
func (k subresource[R]) write(w http.ResponseWriter, r *http.Request, op func(body []byte) (R, int, error)) error {
	enc, err := k.encoder(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	res, code, err := op(body)
	if err != nil {
		return err
	}
	return writeResource(w, code, enc(res))
}

func createdOr200(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

// serveFeed serves a GET of the feed, or a query of it.
func (k subresource[R]) serveFeed(h *Handler, w http.ResponseWriter, r *http.Request) error {
	enc, err := k.encoder(r)
	if err != nil {
		return err
	}
	all, rid, err := k.list(r)
	if err != nil {
		return err
	}
	bodies := make([][]byte, len(all))
	for i, res := range all {
		bodies[i] = enc(res).Body
	}
	return h.listOrQuery(w, r, rid, k.feed, bodies)
}

func (k subresource[R]) serveRead(w http.ResponseWriter, r *http.Request) error {
	enc, err := k.encoder(r)
	if err != nil {
		return err
	}
	res, err := k.read(r, r.PathValue(k.name))
	if err != nil {
		return err
	}
	return readResource(w, r, enc(res))
}

func (k subresource[R]) serveDelete(w http.ResponseWriter, r *http.Request) error {
	if err := k.delete(r, r.PathValue(k.name)); err != nil {
		return err
	}
	setCharge(w, throughput.MinimumCost())
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// asIs is the encoder of resources the engine returns ready to send.
func asIs(*http.Request) (func(engine.Resource) engine.Resource, error) {
	return func(res engine.Resource) engine.Resource { return res }, nil
}

// issues wraps fn, which reads permissions and so issues resource tokens,
// so that it runs only for a principal with write access: a token grants
// what the permission says, so issuing one needs the master key (or a
// read-write identity), not the read-only key.
func issues(fn handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if accessFrom(r.Context()) != auth.ReadWrite {
			return status.New(http.StatusForbidden, "reading permissions issues resource tokens, which needs the master key "+
				"(or a read-write AAD identity): read-only access and resource tokens cannot")
		}
		return fn(w, r)
	}
}

// tokens is the encoder of permissions: each response carries a _token
// issued as it is written, valid for what the request's
// x-ms-documentdb-expiry-seconds asks (tokenTTL).
func (h *Handler) tokens(r *http.Request) (func(engine.Permission) engine.Resource, error) {
	ttl, err := tokenTTL(r)
	if err != nil {
		return nil, err
	}
	return func(p engine.Permission) engine.Resource {
		return engine.Resource{Body: h.withToken(p, ttl), ETag: p.ETag}
	}, nil
}

// tokenTTL reads x-ms-documentdb-expiry-seconds: the validity of the tokens
// the response issues; defaultTokenTTL when absent.
func tokenTTL(r *http.Request) (time.Duration, error) {
	v := strings.TrimSpace(r.Header.Get(hdrTokenExpiry))
	if v == "" {
		return defaultTokenTTL, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || time.Duration(n)*time.Second > maxTokenTTL {
		return 0, status.BadRequest("invalid %s header %q: the validity of a resource token is a number of seconds from 1 to %d (five hours)",
			hdrTokenExpiry, v, int(maxTokenTTL/time.Second))
	}
	return time.Duration(n) * time.Second, nil
}

// withToken returns p's JSON with a _token issued now, valid for ttl.
func (h *Handler) withToken(p engine.Permission, ttl time.Duration) []byte {
	mode := auth.ModeRead
	if p.All {
		mode = auth.ModeAll
	}
	now := h.now()
	tok := h.verify.ResourceToken(auth.Grant{
		DB: p.DB, User: p.UserRID, Permission: p.ID, RID: p.RID, ETag: p.ETag, Mode: mode,
		Container: p.Container, ContainerRID: p.ContainerRID, Item: p.Item, ItemRID: p.ItemRID, PK: p.PK,
		Issued: now, Expires: now.Add(ttl),
	})
	// NB: a token is ASCII letters, digits and "=&._-" only, so it needs no JSON
	// escaping (json.Marshal would write '&' as \u0026).
	body := bytes.TrimRight(p.Body, " \t\r\n")
	out := make([]byte, 0, len(body)+len(tok)+16)
	out = append(out, body[:len(body)-1]...)
	out = append(out, `,"_token":"`...)
	out = append(out, tok...)
	return append(out, '"', '}')
}
