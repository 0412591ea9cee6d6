// Package api is the Cosmos DB NoSQL REST front end: routes, x-ms-* headers,
// request decoding, response encoding, the authentication check, and the one
// place that turns errors into Cosmos error responses ({"code","message"}
// bodies with x-ms-substatus). It knows HTTP and the wire format, and reaches
// data only through package engine.
package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// Config configures the API.
type Config struct {
	// AccountID is the database account's id (and _rid) in GET /. Default
	// "partita"; the Cosmos DB emulator's is "localhost" (which makes the JS
	// SDK ignore the advertised locations and use its configured endpoint).
	AccountID string
	// AdvertiseEndpoint is the URL the database account advertises as its
	// read and write location. Empty: the scheme and Host of each request,
	// so whatever address a client used keeps working.
	AdvertiseEndpoint string
	// Consistency is the account's default consistency level. Default "Session".
	Consistency string
	// EmulatorIDQuirks answers requests for item ids the emulator's gateway
	// cannot address (ids with '/', '\\', '#', percent-encoded sequences or
	// trailing whitespace) with 401, and ids with control characters with
	// 400, as the Cosmos DB emulator does. Default false.
	EmulatorIDQuirks bool
	// MaxBodyBytes bounds request bodies. Default 16 MiB.
	MaxBodyBytes int64
	// MaxInFlight bounds the requests the handler serves at once; past it
	// a request is answered 429 at once, before its body is read, with a
	// short retry-after (the SDKs retry a 429). Each costs a goroutine and
	// buffers: a bug hunt's signed client held 25,000 requests whose
	// bodies never came (250 streams on each of 100 HTTP/2 connections),
	// 640 MB, and other clients waited 2 s. Requests signed with an
	// account key have keyReserve more. Default 4096.
	MaxInFlight int64
	// MaxBodyBuffer bounds the bytes of request bodies the node holds at
	// once (read, and not yet released by their requests' end); a read past
	// it answers 429 with a short retry-after. Default 256 MiB.
	MaxBodyBuffer int64
	// Shared are the budgets of MaxInFlight and MaxBodyBuffer this handler
	// shares with the node's others (the API's and the compute gateway's
	// listeners): nil for budgets of its own. Each listener's own budgets
	// made the node's limits twice what they say (a security hunt).
	Shared *Budgets
	// BodyIdle bounds the wait for each read of a request body: a body
	// that stops arriving for longer answers 408. Default 10 s.
	BodyIdle time.Duration
	// TLS reports whether the server is served over TLS (for the advertised
	// endpoint's scheme).
	TLS bool
	// Forward, if set, sends the writes this node cannot evaluate (it does
	// not lead their partition's replicas) to the node that does
	// (forward.go). Nil on a single node.
	Forward Forwarder
	// ForwardRead, if set, sends a read of a single keyspace that this
	// node holds no replica of to a node that holds one (forward.go). Nil
	// on a single node.
	ForwardRead ReadForwarder
	// Unfit, if set, says why this node cannot take part in its
	// partitions' replication now ("" when it can): named in the 503 of a
	// request that found no leader, which such a node cannot see.
	Unfit func() string
	// Replicated: the engine's keyspaces are replicated (a cluster), so a
	// read this node serves may lag its partition's leader. Strong and
	// bounded-staleness reads are made linearizable (engine.Linearizable),
	// and a session read waits briefly for this node to reach its session
	// (the client's token, if any, and the writes this node answered).
	Replicated bool
	// ClusterStatus, if set, is this node's view of its cluster, or with
	// all (the x-partita-cluster-all header) every member's, served as
	// JSON at GET /_partita/cluster; digest (the x-partita-cluster-digest
	// header) asks for every keyspace's digest too, which reads all of
	// them. Nil on a single node.
	ClusterStatus func(ctx context.Context, digest, all bool) (any, error)
	// Gather, if set, sends a report's request to every other node of the
	// cluster, each to answer from what it counts itself, and returns
	// their answers (clusterwide.go). Nil on a single node.
	Gather func(r *http.Request) []PeerAnswer
}

// Handler serves the Cosmos DB REST API. It is safe for concurrent use.
type Handler struct {
	cfg    Config
	eng    *engine.Engine
	verify *auth.Verifier
	log    *slog.Logger
	now    func() time.Time
	mux    *http.ServeMux
	// queryRoutes are the patterns of the POST routes that serve queries
	// (handlePost), for readsOnly.
	queryRoutes map[string]bool

	sessions nodeSessions // in a cluster: the writes this node answered (nodesession.go)
	bodies   bodyPool     // feed and query response bodies (writeFeed)
	// waitSession bounds a session read's wait on a replicated node
	// (sessionWait; tests shorten it).
	waitSession time.Duration
	budgets     *Budgets // cfg.Shared, or the handler's own
}

// Budgets count what a node's requests hold at once, against the limits of
// Config.MaxInFlight and Config.MaxBodyBuffer, and the error responses they
// got: one value is shared by the handlers of a node's listeners
// (Config.Shared). The zero value is ready.
type Budgets struct {
	inFlight atomic.Int64 // requests being served (MaxInFlight)
	held     bodyBudget   // bytes of request bodies held (MaxBodyBuffer)
	// errors counts the error responses answered here, by status code
	// (400 to 599), for the node's metrics.
	errors [200]atomic.Int64
}

// ErrorResponses returns how many error responses the node's handlers
// answered, by status code (those answered at least once): what it
// forwarded to another node counts there.
func (b *Budgets) ErrorResponses() map[int]int64 {
	out := map[int]int64{}
	for i := range b.errors {
		if n := b.errors[i].Load(); n > 0 {
			out[400+i] = n
		}
	}
	return out
}

// New returns the API handler over eng, authenticating with v.
func New(cfg Config, eng *engine.Engine, v *auth.Verifier, now func() time.Time, log *slog.Logger) *Handler {
	if cfg.AccountID == "" {
		cfg.AccountID = "partita"
	}
	if cfg.Consistency == "" {
		cfg.Consistency = "Session"
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 16 << 20
	}
	if cfg.MaxBodyBuffer <= 0 {
		cfg.MaxBodyBuffer = 256 << 20
	}
	if cfg.BodyIdle <= 0 {
		cfg.BodyIdle = 10 * time.Second
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 4096
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{cfg: cfg, eng: eng, verify: v, log: log, now: now, mux: http.NewServeMux(), waitSession: sessionWait, budgets: cfg.Shared}
	if h.budgets == nil {
		h.budgets = new(Budgets)
	}
	h.routes()
	return h
}

// handlerFunc serves one request; a returned error becomes the response.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle registers fn for pattern. The access the operation needs follows
// from the route, never from a header the client chooses: a GET or HEAD
// reads, and every other method writes (so needs the master key or a
// read-write token), except the POST routes registered with handlePost,
// which decide per request.
func (h *Handler) handle(pattern string, fn handlerFunc) {
	if method, _, ok := strings.Cut(pattern, " "); ok && method != http.MethodGet && method != http.MethodHead {
		fn = writes(fn)
	}
	h.route(pattern, fn)
}

// handlePost registers a POST route that serves two operations: query, a
// read (the request is a query or a query-plan request: Content-Type
// application/query+json, x-ms-documentdb-isquery or
// x-ms-cosmos-is-query-plan-request), or otherwise write, which needs write
// access. The dispatch and the access check are one decision, so a query
// header can never make a write pass as a read.
func (h *Handler) handlePost(pattern string, query, write handlerFunc) {
	if h.queryRoutes == nil {
		h.queryRoutes = make(map[string]bool)
	}
	h.queryRoutes["POST "+pattern] = true
	write = writes(write)
	h.route("POST "+pattern, func(w http.ResponseWriter, r *http.Request) error {
		if queryPost(r) {
			return query(w, r)
		}
		return write(w, r)
	})
}

// catalogBound reports whether path addresses what the catalog describes:
// a database and what it holds, or an offer. Not the account, nor
// Partita's cluster status, which must answer whatever etcd's state.
func catalogBound(path string) bool {
	for _, p := range []string{"/dbs", "/offers", "/_partita/dbs/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// queryPost reports whether a POST is a query or a query-plan request,
// which reads (handlePost).
func queryPost(r *http.Request) bool { return isQuery(r) || isTrue(r, hdrIsPlan) }

// readsOnly reports whether r only reads: a GET or HEAD, or a query (or
// query-plan request) to a route that serves queries — decided as the
// route decides it (handlePost), so that a header cannot make a write, or
// a stored procedure's execution, pass as one.
func (h *Handler) readsOnly(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
		if !queryPost(r) {
			return false
		}
		_, pattern := h.mux.Handler(r)
		return h.queryRoutes[pattern]
	}
	return false
}

// route registers fn for pattern. A request authorised by a resource token
// reaches fn only when the token covers it (checkGrant: the routes of
// tokenRoutes, within the token's scope).
func (h *Handler) route(pattern string, fn handlerFunc) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		err := error(nil)
		if g := grantFrom(r.Context()); g != nil {
			err = h.checkGrant(g, pattern, r)
		}
		if err == nil {
			err = fn(w, r)
		}
		if err != nil {
			h.writeError(w, r, err)
		}
		if h.cfg.Replicated && r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.noteSession(w, r)
		}
	})
}

// writes wraps fn so that it runs only for a principal with write access:
// the master key, a read-write AAD identity, or a resource token of
// permissionMode All (whose scope route has checked).
func writes(fn handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		switch p := principalFrom(r.Context()); {
		case p.Access == auth.ReadWrite:
		case p.Access == auth.Scoped && p.Grant.Mode == auth.ModeAll:
		case p.Access == auth.Scoped:
			return insufficient("The resource token's permission (" + p.Grant.Permission + ") has permissionMode Read: it cannot modify " + grantScope(p.Grant) + ".")
		default:
			return status.New(http.StatusForbidden, "read-only access (the read-only key or a read-only AAD role) cannot modify resources")
		}
		return fn(w, r)
	}
}

// principalKey is the context key of the request's authenticated principal.
type principalKey struct{}

// principalFrom returns what the request authenticated as; the zero
// Principal (no access) when it did not authenticate.
func principalFrom(ctx context.Context) auth.Principal {
	p, _ := ctx.Value(principalKey{}).(auth.Principal)
	return p
}

// accessFrom returns the access the request authenticated with; zero (no
// access) when it did not authenticate.
func accessFrom(ctx context.Context) auth.Access { return principalFrom(ctx).Access }

// grantFrom returns the grant of the request's resource token; nil when it
// was not authorised by one.
func grantFrom(ctx context.Context) *auth.Grant { return principalFrom(ctx).Grant }

func (h *Handler) routes() {
	h.handle("GET /{$}", h.account)

	h.handlePost("/dbs", h.listDatabases, h.propagated(h.createDatabase))
	h.handle("GET /dbs", h.listDatabases)
	h.handle("GET /dbs/{db}", h.readDatabase)
	h.handle("DELETE /dbs/{db}", h.propagated(h.deleteDatabase))

	h.handlePost("/dbs/{db}/colls", h.listContainers, h.propagated(h.createContainer))
	h.handle("GET /dbs/{db}/colls", h.listContainers)
	h.handle("GET /dbs/{db}/colls/{coll}", h.readContainer)
	h.handle("PUT /dbs/{db}/colls/{coll}", h.propagated(h.replaceContainer))
	h.handle("DELETE /dbs/{db}/colls/{coll}", h.propagated(h.deleteContainer))
	h.handle("GET /dbs/{db}/colls/{coll}/pkranges", h.pkRanges)

	h.handlePost("/dbs/{db}/colls/{coll}/docs", h.queryItemsOrPlan, h.postItems)
	h.handle("GET /dbs/{db}/colls/{coll}/docs", h.readFeed)
	h.handle("GET /dbs/{db}/colls/{coll}/docs/{id}", h.readItem)
	h.handle("PUT /dbs/{db}/colls/{coll}/docs/{id}", h.replaceItem)
	h.handle("DELETE /dbs/{db}/colls/{coll}/docs/{id}", h.deleteItem)
	h.handle("PATCH /dbs/{db}/colls/{coll}/docs/{id}", h.patchItem)

	h.scriptRoutes()
	h.handle("POST /dbs/{db}/colls/{coll}/operations/partitionkeydelete", h.propagated(h.deletePartition))
	h.userRoutes()

	h.handlePost("/dbs/{db}/colls/{coll}/conflicts", h.listConflicts, h.createConflict)
	h.handle("GET /dbs/{db}/colls/{coll}/conflicts", h.listConflicts)
	h.handle("GET /dbs/{db}/colls/{coll}/conflicts/{id}", h.conflict)
	h.handle("DELETE /dbs/{db}/colls/{coll}/conflicts/{id}", h.conflict)

	h.handle("GET /offers", h.listOffers)
	h.handlePost("/offers", h.listOffers, h.postOffers)
	h.handle("GET /offers/{id}", h.readOffer)
	h.handle("PUT /offers/{id}", h.propagated(h.replaceOffer))

	h.handle("POST /_partita/dbs/{db}/colls/{coll}/pkranges/{id}/split", h.propagated(h.splitRange))
	h.handle("GET /_partita/dbs/{db}/colls/{coll}/partitions", h.partitions)
	h.handle("POST /_partita/dbs/{db}/colls/{coll}/explain", h.explainQuery)
	h.handle("GET /_partita/cluster", h.clusterStatus)
	h.handle("GET /_partita/dbs/{db}/colls/{coll}/advise", h.adviseContainer)

	// Everything else: a clear refusal rather than a bare 404.
	h.handle("/", h.unsupported)
}

// unsupported answers requests for resources Partita does not serve.
func (h *Handler) unsupported(_ http.ResponseWriter, r *http.Request) error {
	typ, _, err := auth.Resource(r.URL.EscapedPath())
	if err != nil || typ == "" {
		return status.Newf(http.StatusNotFound, "no resource at %s %s", r.Method, r.URL.Path)
	}
	switch typ {
	case "attachments", "clientencryptionkeys":
		return status.NotSupported("the " + typ + " resource")
	}
	return status.Newf(http.StatusMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path)
}

// ServeHTTP authenticates the request and dispatches it. It never lets a
// panic escape: a handler bug becomes a 500.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A small frame of its own, so that the goroutine's stack grows once,
	// in growStack, rather than here too.
	growStack(true)
	if n := h.budgets.inFlight.Add(1); n > h.cfg.MaxInFlight && (n > h.cfg.MaxInFlight+keyReserve || !signedWithKey(r)) {
		h.budgets.inFlight.Add(-1)
		h.writeError(w, r, &status.Error{Code: http.StatusTooManyRequests, RetryAfter: inFlightRetry,
			Message: fmt.Sprintf("Request rate is large: this node is serving %d requests already, its limit; no changes were made. Retry shortly.", h.cfg.MaxInFlight)})
		return
	}
	defer h.budgets.inFlight.Add(-1)
	if r.Body != nil && r.Body != http.NoBody {
		g := h.gateBody(w, r)
		defer g.release()
		// On a copy: net/http looks at its own request's Body, after the
		// handler, to decide whether to drain an unread body, and would
		// wait on a declared one it does not recognize.
		r = r.WithContext(r.Context())
		r.Body = g
	}
	h.serve(w, r)
}

// inFlightRetry is the retry-after of a request refused for MaxInFlight.
const inFlightRetry = 100 * time.Millisecond

// keyReserve is how many requests signed with an account key may be served
// past MaxInFlight, so that a holder of a resource token (or an AAD token)
// filling the node with requests cannot lock its administrator out (a
// security review held every slot with stalled bodies, the master key's
// requests answered 429). The claim is the header's, checked later as any
// signature: a forged one is answered 401 at once, before its body.
const keyReserve = 64

// signedWithKey reports whether r's Authorization header claims a key's
// signature (type=master, as auth parses it): the master or the read-only
// key. Asked only past MaxInFlight.
func signedWithKey(r *http.Request) bool {
	a, err := url.PathUnescape(r.Header.Get("Authorization"))
	if err != nil {
		return false
	}
	for part := range strings.SplitSeq(a, "&") {
		if k, v, _ := strings.Cut(part, "="); k == "type" {
			return strings.EqualFold(v, "master")
		}
	}
	return false
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	activity := headerValue(r.Header, "x-ms-activity-id")
	if activity == "" {
		activity = newUUID()
	}
	setHeader(w, "x-ms-activity-id", activity)
	setHeader(w, "x-ms-gatewayversion", "version=2.14.0")
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.log.Error("handler panic", "activity_id", activity, "panic", p)
			h.writeError(w, r, status.From(errors.New("panic")))
		}
	}()
	if r.ContentLength > h.cfg.MaxBodyBytes {
		// Refused before a byte of it is read: a body declared past the
		// limit would otherwise be waited on until the read timeout.
		h.writeError(w, r, status.Newf(http.StatusRequestEntityTooLarge, "Request size is too large: the body declares %d bytes, over the limit of %d", r.ContentLength, h.cfg.MaxBodyBytes))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes)
	r = h.forwardable(r)
	folded, err := foldQuery(leadingSlash(r))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	r = folded
	if p := strings.TrimLeft(r.URL.Path, "/"); p == "media" || strings.HasPrefix(p, "media/") {
		// An attachment's content: not supported, whoever asks. Answered
		// before authentication, since the SDKs sign these with an id
		// derived from the media id (the Python SDK v3's ReadMedia got
		// 401 "wrong key" rather than the refusal).
		h.writeError(w, r, status.NotSupported("attachment media ("+r.URL.Path+")"))
		return
	}
	if h.cfg.Replicated && h.linearizable(r) {
		r = r.WithContext(engine.Linearizable(r.Context()))
	}
	if v := headerValue(r.Header, "x-ms-cosmos-priority-level"); v != "" {
		switch {
		case strings.EqualFold(v, "Low"):
			r = r.WithContext(engine.LowPriority(r.Context()))
		case !strings.EqualFold(v, "High"):
			h.writeError(w, r, status.BadRequest("invalid x-ms-cosmos-priority-level %q: want High or Low", v))
			return
		}
	}
	// Authenticated first: the signature needs no catalog, and a request
	// without valid credentials is refused at once, never held waiting for
	// the catalog below (a security review: a node cut off from etcd held
	// forged type=master requests there, until they filled the slots kept
	// for the account's keys).
	link := ridLink(r)
	p, authed, byName, err := h.authenticate(r, link)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	r = authed
	if h.cfg.Replicated && (h.linearizable(r) || h.sessionBound(r) || !h.readsOnly(r)) && catalogBound(r.URL.Path) {
		// Before anything is looked up, the permission of a resource
		// token included: a change acknowledged through another node
		// (a container deleted) is in this node's catalog. Every request
		// but those that only read at a level weaker than Strong with no
		// session to honour: a query at Session or Eventual through a
		// node cut off from etcd reads its applied state, as its point
		// reads and feeds do (a bug hunt found queries answering 503
		// there). A session token names ranges and LSNs, which a
		// container created again under the name has too: read through a
		// node paused while the container was deleted and created again,
		// the old container's keyspace passed the new one's token and
		// served the deleted items (a cluster hunt).
		if err := h.eng.CatalogCurrent(r.Context()); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	if link != "" && !byName {
		// A path whose database segment has a _rid's shape, signed over
		// its last _rid (or by a token, which names no link): a path of
		// resource ids. Signed over the path of names, it is one: a
		// database named like another's _rid is that database, not the
		// other (a protocol hunt: DELETE /dbs/AAAAbg== signed as the Go
		// and JS SDKs sign it deleted the database whose _rid it was).
		r, err = h.ridAddressed(r, !p.Signed)
	}
	if err == nil {
		err = h.grantCurrent(p)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	r = h.keepBody(r)
	if err := checkPathIDs(r.URL.EscapedPath()); err != nil {
		h.writeError(w, r, err)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
	// Go's SDK addresses offers with a trailing slash; every resource
	// tolerates one.
	if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
		r2 := *r
		u := *r.URL
		u.Path = strings.TrimSuffix(p, "/")
		u.RawPath = strings.TrimSuffix(u.RawPath, "/")
		r2.URL = &u
		r = &r2
	}
	if !h.log.Enabled(r.Context(), slog.LevelDebug) {
		// The request log below is all that needs the status code and the
		// time: without it, no wrapper, clock reading or log arguments
		// (which would be made, and allocated, before Debug looked at the
		// level).
		h.mux.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	start := h.now()
	h.mux.ServeHTTP(sw, r)
	h.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", sw.code,
		"dur", time.Since(start), "activity_id", activity)
}

// statusWriter remembers the status code written, for the request log.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// authenticate verifies the request's signature or token and returns the
// principal it authenticates. What the request may do as that principal is
// decided by its route (handle, handlePost, route). A resource token must
// still be backed by its permission: one deleted (with its user or
// database) or replaced since revokes it.
//
// It returns the request to serve: r, or r addressing an id that ends in
// '?' (signedQuestionMark); and byName, whether a path of link's shape
// (ridLink) was signed over its own link, as a path of names, rather than
// over link.
func (h *Handler) authenticate(r *http.Request, link string) (p auth.Principal, authed *http.Request, byName bool, err error) {
	date := headerValue(r.Header, "x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	req := auth.Request{Method: r.Method, RawPath: r.URL.EscapedPath(), Authorization: r.Header.Get("Authorization"), Date: date, Link: link}
	now := h.now()
	p, err = h.verify.Authenticate(req, now)
	if ae, ok := errors.AsType[*auth.Error](err); ok && ae.Reason == auth.BadSignature && link != "" {
		// A path of resource ids signed as a path of names (a database
		// named like a _rid that names none): the path's own link.
		req.Link = ""
		p, err = h.verify.Authenticate(req, now)
	}
	if ae, ok := errors.AsType[*auth.Error](err); ok && ae.Reason == auth.BadSignature {
		if r2, ok := signedQuestionMark(r); ok {
			req.RawPath = r2.URL.EscapedPath()
			if p2, err2 := h.verify.Authenticate(req, now); err2 == nil {
				p, err, r = p2, nil, r2
			}
		}
	}
	if err != nil {
		var ae *auth.Error
		if errors.As(err, &ae) {
			switch ae.Reason {
			case auth.BadPath:
				return auth.Principal{}, nil, false, status.New(http.StatusBadRequest, ae.Msg).Wrap(err)
			case auth.NoRole, auth.ResourceExpired:
				// The token is authentic but grants nothing here (now): retrying with the
				// same one cannot help, so 403, as Cosmos DB answers RBAC denials and
				// expired resource tokens, not 401.
				return auth.Principal{}, nil, false, status.New(http.StatusForbidden, ae.Msg).Wrap(err)
			}
			return auth.Principal{}, nil, false, status.New(http.StatusUnauthorized, ae.Msg).Wrap(err)
		}
		return auth.Principal{}, nil, false, err
	}
	if h.cfg.EmulatorIDQuirks {
		if err := emulatorPathCheck(r.URL.EscapedPath()); err != nil {
			return auth.Principal{}, nil, false, err
		}
	}
	return p, r, link != "" && req.Link == "", nil
}

// grantCurrent refuses (401) a resource token whose permission was deleted
// or replaced after the token was issued: it asks the catalog, which the
// caller has made current when the request needs it.
func (h *Handler) grantCurrent(p auth.Principal) error {
	g := p.Grant
	if g == nil {
		return nil
	}
	ok, err := h.eng.PermissionCurrent(g.DB, g.User, g.Permission, g.RID, g.ETag)
	if err != nil {
		return err
	}
	if !ok {
		return status.New(http.StatusUnauthorized, "The resource token is no longer valid: its permission "+
			g.Permission+" was deleted or replaced after the token was issued. Read the permission again for a new token.")
	}
	return nil
}

// checkPathIDs refuses (400) a resource path naming an id longer than any
// resource can have, as a create of such an id is refused: a read, replace
// or delete of it would otherwise look for it (404) however long the URL.
// It refuses a path with a "." or ".." segment too: no id is "." or ".."
// (document.ValidateID), and the router would clean the segment away and
// answer with a redirect to another resource, which no Cosmos DB client
// expects.
func checkPathIDs(rawPath string) error {
	if hasDotSegment(rawPath) {
		return status.BadRequest("the request URL %q has a '.' or '..' segment: no resource has such an id, and URLs do not name resources relative to others", rawPath)
	}
	if strings.Contains(rawPath, "//") {
		// Go's mux would answer a redirect to the path without it, an
		// HTML page no SDK reads (a protocol hunt).
		return status.BadRequest("the request URL %q has an empty segment: no resource has an empty id", rawPath)
	}
	if !strings.HasPrefix(rawPath, "/dbs/") {
		return nil
	}
	// The segments in pairs, type then id, without splitting the path into
	// a slice: this runs on every request.
	rest := strings.Trim(rawPath, "/")
	for rest != "" {
		typ, after, _ := strings.Cut(rest, "/")
		seg, tail, _ := strings.Cut(after, "/")
		rest = tail
		if len(seg) <= document.MaxIDLength {
			continue // fewer bytes than the limit's characters: short enough
		}
		id, err := url.PathUnescape(seg)
		if err != nil {
			return nil // auth.Resource reports this
		}
		if n := utf8.RuneCountInString(id); n > document.MaxIDLength {
			return status.BadRequest("the %s id in the request URL is longer than %d characters (%d)", resourceName(typ), document.MaxIDLength, n)
		}
	}
	return nil
}

// hasDotSegment reports whether path has a segment "." or "..".
func hasDotSegment(path string) bool {
	for path != "" {
		var seg string
		seg, path, _ = strings.Cut(path, "/")
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// resourceName names the resource of a URL path segment in messages.
func resourceName(seg string) string {
	switch seg {
	case "dbs":
		return "database"
	case "colls":
		return "container"
	case "docs":
		return "item"
	case "sprocs":
		return "stored procedure"
	case "triggers":
		return "trigger"
	case "udfs":
		return "user-defined function"
	}
	return "resource"
}

// errorBody is the body of every error response; the JS SDK needs "message".
type errorBody struct {
	Code                string `json:"code"`
	Message             string `json:"message"`
	AdditionalErrorInfo string `json:"additionalErrorInfo,omitempty"`
}

// writeError writes err as a Cosmos error response and logs it once.
//
// A request its client gave up on (it closed the stream or the connection:
// the request's context is done) gets no response, which could not reach
// it, and its error is logged at debug level: a client's timeout or a
// cancelled query is not the server's failure. So is a response whose
// writing failed once its status was sent (undelivered): nothing more can
// reach the client, and the request was served.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if _, stalled := errors.AsType[*stalledBody](err); r.Context().Err() != nil && !stalled {
		h.log.Debug("request abandoned by its client", "method", r.Method, "path", r.URL.Path,
			"activity_id", responseHeader(w, "x-ms-activity-id"), "err", err)
		return
	}
	if u, ok := errors.AsType[*undelivered](err); ok {
		h.log.Debug("response not delivered", "method", r.Method, "path", r.URL.Path,
			"activity_id", responseHeader(w, "x-ms-activity-id"), "err", u.err)
		return
	}
	written, err := h.forward(w, r, err)
	if written {
		return
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = status.Newf(http.StatusRequestEntityTooLarge, "Request size is too large: the body exceeds %d bytes", mbe.Limit)
	}
	se := status.From(err)
	if se.Code >= 500 && forwardedHere(r) {
		// The client reads this through the node it asked, where "this
		// node" would name the wrong one.
		// (A copy: the error may be a shared value.)
		c := *se
		c.Message = "Answered by the node the request was forwarded to (the partition's leader, or a node holding its replicas): " + se.Message
		se = &c
	}
	setHeader(w, "Content-Type", "application/json")
	if se.Code == http.StatusTooManyRequests {
		setCharge(w, 0) // refused before any work: it costs nothing (docs/request-units.md)
	} else {
		setCharge(w, max(throughput.MinimumCost(), engine.Charge(err)))
	}
	if se.Sub != status.SubNone {
		setHeader(w, "x-ms-substatus", strconv.Itoa(se.Sub))
	}
	if tok := engine.ErrorSession(err); tok != "" {
		setHeader(w, "x-ms-session-token", tok)
	}
	if se.RetryAfter > 0 {
		setHeader(w, "x-ms-retry-after-ms", strconv.FormatInt(se.RetryAfter.Milliseconds(), 10))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // messages quote URLs and payloads; keep '&' and '<' readable
	_ = enc.Encode(errorBody{Code: status.CodeName(se.Code), Message: se.Message, AdditionalErrorInfo: se.Extra})
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	w.WriteHeader(se.Code)
	_, _ = w.Write(body)
	if se.Code >= 400 && se.Code < 600 && h.budgets != nil { // nil: a bare handler of a test
		h.budgets.errors[se.Code-400].Add(1)
	}
	switch {
	case se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden:
		// Refused before the request log (which wraps the routes) sees
		// them: at debug level an operator looking for a client's 401 found
		// nothing (an operator hunt). The message names the reason, never
		// the key or signature.
		h.log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "status", se.Code, "reason", se.Message,
			"activity_id", responseHeader(w, "x-ms-activity-id"))
	case se.Code == http.StatusInsufficientStorage:
		// The store logs a full disk once when it starts and once when it
		// ends: a line per refused write would flood the log.
		h.log.Debug("request refused: disk full", "method", r.Method, "path", r.URL.Path,
			"activity_id", responseHeader(w, "x-ms-activity-id"))
	case se.Code == http.StatusServiceUnavailable:
		// Transient, and retried by the SDKs: a partition between leaders
		// (a hand-off, an election), a catalog not yet confirmed current.
		// At error level a member's routine hand-off logged 151 lines (a
		// cluster hunt) among which real errors were hard to find.
		h.log.Warn("request refused: unavailable", "method", r.Method, "path", r.URL.Path, "sub", se.Sub,
			"activity_id", responseHeader(w, "x-ms-activity-id"), "err", errors.Unwrap(se))
	case se.Code >= 500:
		h.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", se.Code, "sub", se.Sub,
			"activity_id", responseHeader(w, "x-ms-activity-id"), "err", errors.Unwrap(se))
	}
}

func setCharge(w http.ResponseWriter, ru float64) {
	setHeader(w, "x-ms-request-charge", strconv.FormatFloat(roundCharge(ru), 'f', -1, 64))
}

// roundCharge rounds a charge to hundredths of a request unit, as Cosmos
// DB reports them: a sum of fractional charges carries float noise
// (5200.999999999903 RU for a stored procedure's 5201).
func roundCharge(ru float64) float64 { return math.Round(ru*100) / 100 }

// writeJSON writes a JSON body (or none when body is nil) with status code.
func writeJSON(w http.ResponseWriter, code int, body []byte) error {
	setHeader(w, "Content-Type", "application/json")
	return writeBody(w, code, body)
}

// writeBody writes body, whose Content-Type is set, with status code.
func writeBody(w http.ResponseWriter, code int, body []byte) error {
	setHeader(w, "Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	if _, err := w.Write(body); err != nil {
		return &undelivered{err}
	}
	return nil
}

// undelivered is the failure to write a response whose status line has
// gone out already: the connection or stream closed under it (a client
// gone, the server closing its connections as it stops). Nothing more can
// be sent on it.
type undelivered struct{ err error }

func (u *undelivered) Error() string { return "response not delivered: " + u.err.Error() }
func (u *undelivered) Unwrap() error { return u.err }

// readBody reads the whole request body.
func readBody(r *http.Request) ([]byte, error) {
	b, err := readAll(r.Body, r.ContentLength)
	if err != nil {
		return nil, bodyError(err)
	}
	// One decoding of a lone surrogate's escape for every reader of what
	// the body becomes (a query's parameters among them).
	return document.FixLoneSurrogates(b), nil
}

// readAll reads body to its end, its buffer grown by growBody for a body
// that declared n bytes (0 or less: unknown).
func readAll(body io.Reader, n int64) ([]byte, error) {
	var b []byte
	for {
		b = growBody(b, 1, n)
		m, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// growBody returns b with room for n more bytes of a request body that
// declared its size (declared > 0). Its capacity doubles from 64 KiB, as
// io.ReadAll's would, but never past the declared size and one byte (the
// room the read that finds the end needs): a body of its declared size
// ends in a buffer of that size rather than in one up to twice as large.
// It is never made larger than twice the bytes already read: a declared
// size alone, which costs a client nothing to send, allocates nothing.
func growBody(b []byte, n int, declared int64) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	c := max(2*cap(b), 64<<10, len(b)+n)
	if declared > 0 && int64(len(b)+n) <= declared+1 {
		c = min(c, int(declared)+1)
	}
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// bodyError is the answer to a failed read of a request body: the gate's
// refusal (429, 408) or the size limit's (413, from the error itself) as
// they are, anything else 400.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	var se *status.Error
	if errors.As(err, &mbe) || errors.As(err, &se) {
		return err // a stalledBody kept as it is, for writeError
	}
	return status.BadRequest("cannot read request body: %v", err)
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	s := hex.EncodeToString(b[:])
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}
