package floor

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/status"
)

// Config configures a Handler. The zero value is usable.
type Config struct {
	// AccountID is the database account's id in GET /. Default "partita-floor".
	AccountID string
	// AdvertiseEndpoint is the URL the account advertises as its read and
	// write location. Empty: the scheme and Host of each request.
	AdvertiseEndpoint string
	// Consistency is the account's default consistency level. Default "Session".
	Consistency string
	// TLS reports whether the handler is served over TLS (for the
	// advertised endpoint's scheme).
	TLS bool
	// MaxBodyBytes bounds request bodies. Default 16 MiB, as package api.
	MaxBodyBytes int64
}

// Handler serves the floor's subset of the Cosmos DB REST API from memory.
// It is safe for concurrent use.
type Handler struct {
	cfg    Config
	verify *auth.Verifier
	now    func() time.Time
	log    *slog.Logger
	mux    *http.ServeMux
	acct   *account
}

// New returns a floor handler authenticating with v. now is the clock
// (nil: time.Now); log may be nil.
func New(cfg Config, v *auth.Verifier, now func() time.Time, log *slog.Logger) *Handler {
	if cfg.AccountID == "" {
		cfg.AccountID = "partita-floor"
	}
	if cfg.Consistency == "" {
		cfg.Consistency = "Session"
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 16 << 20
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{cfg: cfg, verify: v, now: now, log: log, mux: http.NewServeMux(), acct: newAccount()}
	h.routes()
	return h
}

// handlerFunc serves one request; a returned error becomes the response.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (h *Handler) routes() {
	h.handle("GET /{$}", h.account)
	h.handle("POST /dbs", h.createDatabase)
	h.handle("GET /dbs/{db}", h.readDatabase)
	h.handle("DELETE /dbs/{db}", h.deleteDatabase)
	h.handle("POST /dbs/{db}/colls", h.createContainer)
	h.handle("GET /dbs/{db}/colls/{coll}", h.readContainer)
	h.handle("DELETE /dbs/{db}/colls/{coll}", h.deleteContainer)
	h.handle("GET /dbs/{db}/colls/{coll}/pkranges", h.pkRanges)
	h.handle("POST /dbs/{db}/colls/{coll}/docs", h.postItems)
	h.handle("GET /dbs/{db}/colls/{coll}/docs/{id}", h.readItem)
	h.handle("PUT /dbs/{db}/colls/{coll}/docs/{id}", h.replaceItem)
	h.handle("DELETE /dbs/{db}/colls/{coll}/docs/{id}", h.deleteItem)
	h.handle("/", h.unsupported)
}

func (h *Handler) handle(pattern string, fn handlerFunc) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			h.writeError(w, r, err)
		}
	})
}

// unsupported answers every request outside the floor's subset.
func (h *Handler) unsupported(_ http.ResponseWriter, r *http.Request) error {
	return notSupported(r.Method + " " + r.URL.Path)
}

// notSupported is the 400 of a request the floor does not serve.
func notSupported(what string) error {
	return status.Newf(http.StatusBadRequest, "%s is not supported by the floor server (partita floor serves only what the benchmarks use)", what)
}

// ServeHTTP authenticates the request as package api does (master-key
// signatures; the floor has no users, so no resource tokens, and no AAD)
// and dispatches it. A handler panic becomes a 500.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	activity := r.Header.Get("x-ms-activity-id")
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
	r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes)
	if err := h.authenticate(r); err != nil {
		h.writeError(w, r, err)
		return
	}
	// Go's SDK addresses some resources with a trailing slash.
	if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
		r2 := *r
		u := *r.URL
		u.Path = strings.TrimSuffix(p, "/")
		u.RawPath = strings.TrimSuffix(u.RawPath, "/")
		r2.URL = &u
		r = &r2
	}
	h.mux.ServeHTTP(w, r)
}

// authenticate verifies the request's master-key signature, with the
// status codes package api answers: 400 for a malformed path, 403 for an
// authentic token that grants nothing, 401 otherwise.
func (h *Handler) authenticate(r *http.Request) error {
	date := r.Header.Get("x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	p, err := h.verify.Authenticate(auth.Request{Method: r.Method, RawPath: r.URL.EscapedPath(),
		Authorization: r.Header.Get("Authorization"), Date: date}, h.now())
	if ae, ok := errors.AsType[*auth.Error](err); ok {
		switch ae.Reason {
		case auth.BadPath:
			return status.New(http.StatusBadRequest, ae.Msg).Wrap(err)
		case auth.NoRole, auth.ResourceExpired:
			return status.New(http.StatusForbidden, ae.Msg).Wrap(err)
		}
		return status.New(http.StatusUnauthorized, ae.Msg).Wrap(err)
	}
	if err != nil {
		return err
	}
	if p.Access != auth.ReadWrite {
		return status.New(http.StatusUnauthorized, "the floor server accepts only master-key signatures")
	}
	return nil
}

// errorBody is the body of every error response, as package api writes it.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeError writes err as a Cosmos error response; a request its client
// gave up on (its context is done) gets none, as in package api.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		err = status.Newf(http.StatusRequestEntityTooLarge, "Request size is too large: the body exceeds %d bytes", mbe.Limit)
	}
	se := status.From(err)
	setHeader(w, "Content-Type", "application/json")
	setHeader(w, "x-ms-request-charge", charge)
	if se.Sub != status.SubNone {
		setHeader(w, "x-ms-substatus", itoa(se.Sub))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(errorBody{Code: status.CodeName(se.Code), Message: se.Message})
	w.WriteHeader(se.Code)
	_, _ = w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	if se.Code >= 500 {
		h.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", se.Code,
			"err", errors.Unwrap(se))
	}
}

// charge is every response's x-ms-request-charge: the floor has no cost
// model.
const charge = "1"

// setHeader sets response header name to v, Cosmos DB's own headers
// (x-ms-*, etag) in lowercase as package api sends them (some clients
// read them case-sensitively), standard ones canonically.
func setHeader(w http.ResponseWriter, name, v string) {
	key := strings.ToLower(name)
	if strings.HasPrefix(key, "x-ms-") || key == "etag" {
		w.Header()[key] = []string{v}
		return
	}
	w.Header().Set(name, v)
}

// writeJSON writes body with status code.
func writeJSON(w http.ResponseWriter, code int, body []byte) error {
	setHeader(w, "Content-Type", "application/json")
	setHeader(w, "Content-Length", itoa(len(body)))
	w.WriteHeader(code)
	_, err := w.Write(body)
	return err
}

// writeEmpty writes a response with no body.
func writeEmpty(w http.ResponseWriter, code int) error {
	setHeader(w, "Content-Length", "0")
	w.WriteHeader(code)
	return nil
}

// readBody reads the whole request body.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, err
		}
		return nil, status.BadRequest("cannot read request body: %v", err)
	}
	return b, nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	s := hex.EncodeToString(b[:])
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}
