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
	h.handlePost("/dbs/{db}/users", h.listUsers, h.postUser)
	h.handle("GET /dbs/{db}/users", h.listUsers)
	h.handle("GET /dbs/{db}/users/{user}", h.readUser)
	h.handle("PUT /dbs/{db}/users/{user}", h.replaceUser)
	h.handle("DELETE /dbs/{db}/users/{user}", h.deleteUser)

	// Reading a permission issues a token for it, a credential: permissions
	// are read with write access only (issues).
	h.handlePost("/dbs/{db}/users/{user}/permissions", issues(h.listPermissions), h.postPermission)
	h.handle("GET /dbs/{db}/users/{user}/permissions", issues(h.listPermissions))
	h.handle("GET /dbs/{db}/users/{user}/permissions/{perm}", issues(h.readPermission))
	h.handle("PUT /dbs/{db}/users/{user}/permissions/{perm}", h.replacePermission)
	h.handle("DELETE /dbs/{db}/users/{user}/permissions/{perm}", h.deletePermission)
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

// postUser serves the writes of POST /dbs/{db}/users: create, or upsert
// with x-ms-documentdb-is-upsert.
func (h *Handler) postUser(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if isTrue(r, hdrIsUpsert) {
		res, created, err := h.eng.UpsertUser(r.PathValue("db"), body)
		if err != nil {
			return err
		}
		return writeResource(w, createdOr200(created), res)
	}
	res, err := h.eng.CreateUser(r.PathValue("db"), body)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusCreated, res)
}

func createdOr200(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

func (h *Handler) listUsers(w http.ResponseWriter, r *http.Request) error {
	users, rid, err := h.eng.Users(r.Context(), r.PathValue("db"))
	if err != nil {
		return err
	}
	return h.listOrQuery(w, r, rid, "Users", users)
}

func (h *Handler) readUser(w http.ResponseWriter, r *http.Request) error {
	res, err := h.eng.ReadUser(r.PathValue("db"), r.PathValue("user"))
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, res)
}

func (h *Handler) replaceUser(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	res, err := h.eng.ReplaceUser(r.PathValue("db"), r.PathValue("user"), body)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, res)
}

func (h *Handler) deleteUser(w http.ResponseWriter, r *http.Request) error {
	if err := h.eng.DeleteUser(r.PathValue("db"), r.PathValue("user")); err != nil {
		return err
	}
	setCharge(w, throughput.MinimumCost())
	w.WriteHeader(http.StatusNoContent)
	return nil
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
		Container: p.Container, ContainerRID: p.ContainerRID, Item: p.Item, PK: p.PK,
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

// writePermission writes one permission resource with a fresh token.
func (h *Handler) writePermission(w http.ResponseWriter, code int, p engine.Permission, ttl time.Duration) error {
	return writeResource(w, code, engine.Resource{Body: h.withToken(p, ttl), ETag: p.ETag})
}

// postPermission serves the writes of POST …/permissions: create, or upsert
// with x-ms-documentdb-is-upsert.
func (h *Handler) postPermission(w http.ResponseWriter, r *http.Request) error {
	ttl, err := tokenTTL(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	db, user := r.PathValue("db"), r.PathValue("user")
	if isTrue(r, hdrIsUpsert) {
		p, created, err := h.eng.UpsertPermission(db, user, body)
		if err != nil {
			return err
		}
		return h.writePermission(w, createdOr200(created), p, ttl)
	}
	p, err := h.eng.CreatePermission(db, user, body)
	if err != nil {
		return err
	}
	return h.writePermission(w, http.StatusCreated, p, ttl)
}

func (h *Handler) listPermissions(w http.ResponseWriter, r *http.Request) error {
	ttl, err := tokenTTL(r)
	if err != nil {
		return err
	}
	ps, rid, err := h.eng.Permissions(r.Context(), r.PathValue("db"), r.PathValue("user"))
	if err != nil {
		return err
	}
	items := make([][]byte, len(ps))
	for i, p := range ps {
		items[i] = h.withToken(p, ttl)
	}
	return h.listOrQuery(w, r, rid, "Permissions", items)
}

func (h *Handler) readPermission(w http.ResponseWriter, r *http.Request) error {
	ttl, err := tokenTTL(r)
	if err != nil {
		return err
	}
	p, err := h.eng.ReadPermission(r.PathValue("db"), r.PathValue("user"), r.PathValue("perm"))
	if err != nil {
		return err
	}
	return h.writePermission(w, http.StatusOK, p, ttl)
}

func (h *Handler) replacePermission(w http.ResponseWriter, r *http.Request) error {
	ttl, err := tokenTTL(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	p, err := h.eng.ReplacePermission(r.PathValue("db"), r.PathValue("user"), r.PathValue("perm"), body)
	if err != nil {
		return err
	}
	return h.writePermission(w, http.StatusOK, p, ttl)
}

func (h *Handler) deletePermission(w http.ResponseWriter, r *http.Request) error {
	if err := h.eng.DeletePermission(r.PathValue("db"), r.PathValue("user"), r.PathValue("perm")); err != nil {
		return err
	}
	setCharge(w, throughput.MinimumCost())
	w.WriteHeader(http.StatusNoContent)
	return nil
}
